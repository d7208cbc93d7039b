"""FLOPs per operator call, and the model FLOPs utilisation (MFU) they give.

Which calls count. A matmul, convolution or attention call is counted once, at the
outermost op of its chain: ``aten::conv2d > aten::convolution > aten::_convolution >
aten::cudnn_convolution`` is one convolution, ``aten::linear > aten::addmm`` one matmul,
so a FLOP op nested inside another is never counted. Backward ops are counted as the
trace records them (``aten::convolution_backward``, the ``aten::mm`` calls under
``AddmmBackward0``, ``..._attention_backward``): training comes to about 3x the forward.
An op that carries ``with_flops``' own count (``table["flops"]``) counts too, with that
figure; a shape estimate fills in the others. Conventions follow
``torch.utils.flop_counter`` (a multiply-add is 2 FLOPs, bias adds are not counted), so
the figures can be checked against it.

Shapes. Each call's input shapes and dtypes are the raw JSON of ``--shapes``
(``table.input_dims`` / ``input_types``), parsed once per distinct (name, shapes, dtypes).
A convolution's output size is not among its inputs. It is read from the autograd node
its forward created: the node (``ConvolutionBackward0``, ``CudnnConvolutionBackward``...)
has the forward's ``Sequence number`` and its one input is ``grad_output`` [N, K, Ho, Wo].
Without such a node (inference, ``no_grad``) it is computed from the input and weight
shapes and the stride, padding and dilation that newer traces record as ``Concrete
Inputs`` (torch 2.1 and later), taken from whichever op of the convolution's chain has
them all (``padding="same"`` is written as text at ``aten::conv2d`` but as numbers at
the ``aten::convolution`` inside it). Where neither exists the FLOPs are unknown: no
stride is assumed. A convolution's backward computes the input and the weight
gradient, each the forward's FLOPs; which ones ran comes from its ``output_mask``
(``Concrete Inputs``) or from ``..._backward_input`` / ``..._backward_weight`` children
(old cuDNN traces); where neither shows, both count, and the first layer of a network,
whose input needs no gradient, is over-counted by one forward of that layer.
Transposed convolutions are not counted.

Bytes: the tensor inputs' and the output's sizes from shapes and dtypes, what the
roofline divides by (``analysis.roofline``).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..trace.table import MISSING, EventTable, Kind, thread_key
from .dtypes import item_bytes, type_name
from .gpu import _tensor_core_names, dominant_by_time
from .intervals import climb, has_ancestor
from .links import lookup
from .operators import OperatorTree
from .steps import step_of

FLOP_COLUMNS = ["name", "input_shapes", "dtype", "flops", "bytes", "source", "tensor_cores",
                "start_us", "device_us", "host_us"]

# Operator families. Positions are those of the op's schema: (a, b) operands of a matmul,
# (input, weight) of a convolution, (grad_output, input, weight) of its backward,
# (query, key, value) of attention.
_MM = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2),
       "aten::matmul": (0, 1)}
_CONV = re.compile(r"^aten::(conv[123]d|_?convolution|cudnn_convolution|miopen_convolution|mkldnn_convolution"
                   r"|miopen_depthwise_convolution|_slow_conv2d_forward|thnn_conv2d|slow_conv3d|_conv_depthwise2d"
                   r"|conv_depthwise3d|_nnpack_spatial_convolution)$")
_CONV_BACKWARD = {"aten::convolution_backward": (0, 1, 2), "aten::cudnn_convolution_backward": (1, 0, 2),
                  "aten::miopen_convolution_backward": (1, 0, 2), "aten::mkldnn_convolution_backward": (1, 0, 2),
                  "aten::_slow_conv2d_backward": (0, 1, 2)}
_TRANSPOSED = re.compile(r"^aten::\w*conv\w*transpose", re.IGNORECASE)
_SDPA = re.compile(r"^aten::(scaled_dot_product_attention|_scaled_dot_product_(flash|efficient|cudnn)_attention"
                   r"|_scaled_dot_product_flash_attention_for_cpu|_scaled_dot_product_attention_math)$")
_SDPA_BACKWARD = re.compile(r"^aten::_scaled_dot_product_\w*attention\w*_backward$")
# The autograd node a forward convolution creates; its one input is grad_output.
_CONV_NODE = re.compile(r"^\w*Conv\w*Backward\d*$")
# Booleans as torch writes them inside ``Concrete Inputs`` ("[False, True, True]").
_PYTHON_BOOL = re.compile(r"\b(True|False)\b")
# Positions in a forward convolution's ``Concrete Inputs`` of (stride, padding, dilation,
# transposed flag or None), as each op's schema orders its arguments.
_CONV_ARGS = {"aten::conv1d": (3, 4, 5, None), "aten::conv2d": (3, 4, 5, None), "aten::conv3d": (3, 4, 5, None),
              "aten::convolution": (3, 4, 5, 6), "aten::_convolution": (3, 4, 5, 6),
              "aten::cudnn_convolution": (3, 2, 4, None), "aten::mkldnn_convolution": (4, 3, 5, None),
              "aten::miopen_convolution": (4, 3, 5, None)}
_GRAD_CHILD = re.compile(r"_backward_(input|weight)$")

# Input type names (``dtypes.type_name``: "float", "half"...) of the dtypes a device has a peak for.
_DTYPES = {"float": "fp32", "half": "fp16", "bfloat16": "bf16", "double": "fp64"}


@dataclass(frozen=True)
class _Shapes:
    """One distinct call's parse: its FLOPs, bytes moved and dtype."""

    flops: float
    bytes: float
    dtype: str | None


def _prod(dims: Sequence[int]) -> float:
    return float(math.prod(dims))


def _matmul(a: list[int], b: list[int]) -> tuple[float, float]:
    """FLOPs and output elements of ``a @ b`` with numpy's broadcasting (1-D operands as vectors)."""
    a2 = [1, *a] if len(a) == 1 else a
    b2 = [*b, 1] if len(b) == 1 else b
    batch = np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2]))
    m, k, n = a2[-2], a2[-1], b2[-1]
    return 2.0 * _prod(list(batch)) * m * k * n, _prod(list(batch)) * m * n


def _estimate(name: str, dims: list[Any], grad_out: Sequence[int] | None,
              grads: tuple[bool, bool]) -> tuple[float, float]:
    """FLOPs and output elements of one call from its input shapes (NaN: not known)."""
    if name in _MM:
        i, j = _MM[name]
        return _matmul(dims[i], dims[j])
    if name == "aten::linear":  # input [..., K], weight [N, K]
        rows, (n, k) = _prod(dims[0][:-1]), dims[1]
        return 2.0 * rows * k * n, rows * n
    if _CONV.match(name):  # weight [K, C/groups, R, S]: FLOPs = 2 N Ho Wo K C/g R S
        if grad_out is None:
            return math.nan, math.nan
        return 2.0 * grad_out[0] * _prod(grad_out[2:]) * _prod(dims[1]), _prod(grad_out)
    if name in _CONV_BACKWARD:
        g, x, w = (dims[p] for p in _CONV_BACKWARD[name])
        per_grad = 2.0 * g[0] * _prod(g[2:]) * _prod(w)
        d_input, d_weight = grads
        return per_grad * (d_input + d_weight), d_input * _prod(x) + d_weight * _prod(w)
    if _SDPA.match(name) or _SDPA_BACKWARD.match(name):
        backward = _SDPA_BACKWARD.match(name) is not None
        q, k, v = dims[1:4] if backward else dims[0:3]
        bh, length, source, e, ev = _prod(q[:-2]), q[-2], k[-2], q[-1], v[-1]
        if backward:  # torch's sdpa_backward_flop_count: five matmuls
            return 2.0 * bh * length * source * (3 * e + 2 * ev), _prod(q) + _prod(k) + _prod(v)
        return 2.0 * bh * length * source * (e + ev), bh * length * ev
    return math.nan, math.nan


def _parse(name: str, dims_raw: bytes | None, types_raw: bytes | None, grad_out: tuple[int, ...] | None,
           grads: tuple[bool, bool], concrete_raw: bytes | None) -> _Shapes:
    """Parse one distinct call; malformed or missing shapes give NaN, never an exception."""
    try:
        dims = json.loads(dims_raw) if dims_raw else []
        types = [type_name(str(t)) for t in json.loads(types_raw)] if types_raw else [""] * len(dims)
    except (ValueError, IndexError, TypeError):
        return _Shapes(math.nan, math.nan, None)
    if name in _CONV_BACKWARD:
        grads = _output_mask(concrete_raw) or grads
    tensors = [i for i, d in enumerate(dims) if isinstance(d, list) and d and i < len(types)]
    dtype = _DTYPES.get(types[tensors[0]]) if tensors else None
    try:
        flops, out_elems = _estimate(name, dims, grad_out, grads)
    except (ValueError, IndexError, TypeError):
        flops, out_elems = math.nan, math.nan
    item = [item_bytes(types[i]) for i in tensors]
    moved = sum(_prod(dims[i]) * b for i, b in zip(tensors, item))
    moved += out_elems * (item[0] if item else math.nan)
    return _Shapes(flops, moved, dtype)


def _concrete(raw: bytes | None) -> list[Any]:
    """A call's ``Concrete Inputs``, each argument's value parsed ("[2, 2]" -> [2, 2], "1" -> 1,
    "[False, True, True]" -> [False, True, True]); None for what is not JSON (tensors' "",
    strings like "same")."""
    out: list[Any] = []
    for text in json.loads(raw) if raw else []:
        text = _PYTHON_BOOL.sub(lambda m: m.group(0).lower(), text) if isinstance(text, str) else text
        try:
            out.append(json.loads(text))
        except (ValueError, TypeError):
            out.append(None)
    return out


def _output_mask(raw: bytes | None) -> tuple[bool, bool] | None:
    """Which gradients a convolution's backward computed (input, weight), from the
    ``output_mask`` its ``Concrete Inputs`` end with; None where it is not recorded."""
    try:
        mask = _concrete(raw)[-1]
    except (ValueError, IndexError, TypeError):
        return None
    if isinstance(mask, list) and len(mask) == 3 and all(isinstance(m, bool) for m in mask):
        return bool(mask[0]), bool(mask[1])
    return None


def _conv_output(name: str, dims_raw: bytes | None, concrete_raw: bytes | None) -> tuple[int, ...] | None:
    """A forward convolution's output shape [N, K, *spatial], from its input and weight shapes
    and its stride, padding and dilation (``Concrete Inputs``); None where any is missing,
    or for a transposed convolution."""
    positions = _CONV_ARGS.get(name)
    if positions is None or not dims_raw or not concrete_raw:
        return None
    try:
        dims, args = json.loads(dims_raw), _concrete(concrete_raw)
        stride, padding, dilation = (args[i] for i in positions[:3])
        if positions[3] is not None and args[positions[3]] is not False:
            return None
        x, w = dims[0], dims[1]
        spatial = len(w) - 2
        batch = x[0] if len(x) == len(w) else 1  # an unbatched input has no N
        size = [(x[-spatial + i] + 2 * _at(padding, i) - _at(dilation, i) * (w[2 + i] - 1) - 1) // _at(stride, i) + 1
                for i in range(spatial)]
    except (ValueError, TypeError, IndexError, KeyError):
        return None
    return (int(batch), int(w[0]), *size) if spatial > 0 and min(size) > 0 else None


def _at(values: Any, i: int) -> int:
    """The ``i``-th of a per-dimension argument, given as a list or as one int for all."""
    value = values[i] if isinstance(values, list) and len(values) > 1 else (
        values[0] if isinstance(values, list) else values)
    if type(value) is not int:
        raise TypeError(f"not an int: {value!r}")
    return value


def _names_matching(names: np.ndarray, test: Any) -> np.ndarray:
    return np.fromiter((bool(test(str(n))) for n in names), dtype=bool, count=len(names))


def _is_flop_name(name: str) -> bool:
    return (name in _MM or name == "aten::linear" or name in _CONV_BACKWARD or bool(_CONV.match(name))
            or bool(_SDPA.match(name)) or bool(_SDPA_BACKWARD.match(name)) or bool(_TRANSPOSED.match(name)))


def flop_calls(tree: OperatorTree) -> pd.DataFrame:
    """One row per counted call (``FLOP_COLUMNS``), in trace order.

    ``flops`` is ``with_flops``' figure where recorded (``source`` "recorded"), else the
    shape estimate ("shapes"), NaN where neither is known ("unknown"); ``bytes`` the
    tensors read and written; ``dtype`` the first tensor input's ("fp32", "fp16",
    "bf16", "fp64", None for others); ``tensor_cores`` whether a kernel it launched ran
    on tensor cores; ``device_us``/``host_us`` its device time (with nested ops') and
    duration.
    """
    t = tree.table
    ops, parent = tree.index, tree.parent
    codes = t.name_code[ops]
    recorded = t["flops"][ops]
    flop_op, counted = _flop_ops(tree)
    # Each FLOP op's counted call: itself, or the outermost FLOP op around it.
    top = climb(parent, np.where(flop_op, np.arange(len(ops)), -1), lambda _, nodes: ~counted[nodes])[0]
    calls = np.flatnonzero(counted)
    if len(calls) == 0 or t.input_dims is None:
        return _frame(t, tree, calls, np.full(len(calls), np.nan), np.full(len(calls), np.nan),
                      np.full(len(calls), None, dtype=object), recorded[calls])

    grad_out = _conv_grad_output(t, tree, flop_op, top, len(ops))[calls]
    grads = _gradients_computed(t, tree, len(ops))[calls]
    dims = t.input_dims[ops[calls]]
    types = t.input_types[ops[calls]] if t.input_types is not None else np.full(len(calls), None, dtype=object)
    concrete = (t.concrete_inputs[ops[calls]] if t.concrete_inputs is not None
                else np.full(len(calls), None, dtype=object))
    # The output shape: the autograd node's grad_output, else the chain's own arguments.
    gout = _conv_outputs_from_args(t, tree, flop_op, top)[calls]
    node = grad_out >= 0
    node_dims = t.input_dims[grad_out[node]]
    codes_of, distinct_dims = pd.factorize(node_dims)
    shapes = [_first_shape(raw) for raw in distinct_dims]
    gout[node] = np.array(shapes + [None], dtype=object)[codes_of]
    key = np.stack([codes[calls], pd.factorize(dims)[0], pd.factorize(types)[0], pd.factorize(gout)[0], grads,
                    pd.factorize(concrete)[0]], 1)
    distinct, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    parsed = [_parse(str(t.names[row[0]]), dims[i], types[i], gout[i], (bool(row[4] & 1), bool(row[4] & 2)),
                     concrete[i])
              for row, i in zip(distinct.tolist(), first.tolist())]
    inverse = inverse.reshape(-1)
    flops = np.array([p.flops for p in parsed])[inverse]
    moved = np.array([p.bytes for p in parsed])[inverse]
    dtype = np.array([p.dtype for p in parsed], dtype=object)[inverse]
    return _frame(t, tree, calls, flops, moved, dtype, recorded[calls])


def _flop_ops(tree: OperatorTree) -> tuple[np.ndarray, np.ndarray]:
    """Per op of ``tree``: whether it is a FLOP op (a matmul, convolution or attention by name,
    or an op with ``with_flops``' count), and whether it is a counted call (one no FLOP op encloses)."""
    t = tree.table
    flop_op = _names_matching(t.names, _is_flop_name)[t.name_code[tree.index]] | np.isfinite(t["flops"][tree.index])
    return flop_op, flop_op & ~has_ancestor(tree.parent, flop_op)


def kernel_flop_calls(tree: OperatorTree) -> pd.Series:
    """Per kernel name, the name of the counted FLOP call that launched most of its time (the
    kernel's launcher is that call or nested in it: ``aten::conv2d`` for the kernels its
    ``aten::cudnn_convolution`` launched), or None where most of its time was launched outside
    every counted call, or by no recorded launch. A trace gives a kernel no FLOP count of its
    own: this says whose FLOPs its time belongs to (a call's device time includes its nested
    ops' kernels, ``flop_calls``)."""
    t = tree.table
    kernels = np.flatnonzero(t.kind == Kind.KERNEL)
    if len(kernels) == 0:
        return pd.Series([], index=pd.Index([], dtype=object, name="name"), dtype=object, name="flop_call")
    counted = _flop_ops(tree)[1]
    launcher = tree.launcher[np.searchsorted(tree.device_events, kernels)]
    call = climb(tree.parent, launcher, lambda _, nodes: ~counted[nodes])[0]
    op = np.where(call >= 0, t.name_code[tree.index[np.maximum(call, 0)]], -1)
    kernel_codes, op_codes = dominant_by_time(t.name_code[kernels], op, t["dur"][kernels])
    names = np.empty(len(op_codes), dtype=object)
    names[:] = [t.names[c] if c >= 0 else None for c in op_codes.tolist()]
    return pd.Series(names, index=pd.Index(t.names[kernel_codes].astype(object), name="name"), name="flop_call")


def _conv_grad_output(t: EventTable, tree: OperatorTree, flop_op: np.ndarray, top: np.ndarray, n: int) -> np.ndarray:
    """Per op position, the event of the autograd node its convolution created (-1: none).

    Any op of a convolution chain may carry the sequence number; the node found for one
    goes to the chain's counted call. Sequence numbers count per process here (pid, seq).
    """
    ops = tree.index
    is_node = _names_matching(t.names, _CONV_NODE.match)[t.name_code] & (t.kind == Kind.CPU_OP)
    nodes = np.flatnonzero(is_node & (t["seq"] >= 0))
    node_key = thread_key(t["pid"][nodes], t["seq"][nodes])
    conv = flop_op & _names_matching(t.names, _CONV.match)[t.name_code[ops]]
    seq = t["seq"][ops]
    query = np.where(conv & (seq >= 0), thread_key(t["pid"][ops], np.maximum(seq, 0)), MISSING)
    found = lookup(node_key, nodes, query)
    out = np.full(n, -1, dtype=np.int64)
    hit = (found >= 0) & (top >= 0)
    np.maximum.at(out, top[hit], found[hit])
    return out


def _first_shape(raw: object) -> tuple[int, ...] | None:
    """The first input's shape of an autograd node's ``Input Dims`` (its grad_output)."""
    try:
        shape = json.loads(raw)[0] if isinstance(raw, (bytes, str)) else None
    except (ValueError, IndexError, TypeError):
        return None
    return tuple(shape) if isinstance(shape, list) and shape else None


def _conv_outputs_from_args(t: EventTable, tree: OperatorTree, flop_op: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Per op position, the output shape of the convolution counted there, computed from the
    arguments of any op of its chain that records them all (``_conv_output``); None elsewhere."""
    out = np.full(len(tree.index), None, dtype=object)
    if t.concrete_inputs is None or t.input_dims is None:
        return out
    ops = tree.index
    conv = np.flatnonzero(flop_op & (top >= 0) & np.isin(t.names, list(_CONV_ARGS))[t.name_code[ops]]
                          & (t.concrete_inputs[ops] != None))  # noqa: E711 - elementwise on an object array
    if len(conv) == 0:
        return out
    events = ops[conv]
    key = np.stack([t.name_code[events], pd.factorize(t.input_dims[events])[0],
                    pd.factorize(t.concrete_inputs[events])[0]], 1)
    distinct, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    shapes = [_conv_output(str(t.names[row[0]]), t.input_dims[events[i]], t.concrete_inputs[events[i]])
              for row, i in zip(distinct.tolist(), first.tolist())]
    found = np.array(shapes + [None], dtype=object)[inverse.reshape(-1)]
    known = np.array([s is not None for s in found], dtype=bool)
    out[top[conv[known]]] = found[known]
    return out


def _gradients_computed(t: EventTable, tree: OperatorTree, n: int) -> np.ndarray:
    """Per op position, which convolution gradients it computed as a bit mask (1: input,
    2: weight), from ``..._backward_input``/``_weight`` children; 3 (both) where none shows."""
    kind = np.zeros(len(t.names), dtype=np.int64)
    for code, name in enumerate(t.names.tolist()):
        match = _GRAD_CHILD.search(str(name))
        if match:
            kind[code] = 1 if match.group(1) == "input" else 2
    child_kind = kind[t.name_code[tree.index]]
    has = (tree.parent >= 0) & (child_kind > 0)
    mask = np.zeros(n, dtype=np.int64)
    np.bitwise_or.at(mask, tree.parent[has], child_kind[has])
    return np.where(mask == 0, 3, mask)


def _frame(t: EventTable, tree: OperatorTree, calls: np.ndarray, flops: np.ndarray, moved: np.ndarray,
           dtype: np.ndarray, recorded: np.ndarray) -> pd.DataFrame:
    events = tree.index[calls]
    has_recorded = np.isfinite(recorded)
    total = np.where(has_recorded, recorded, flops)
    source = np.where(has_recorded, "recorded", np.where(np.isfinite(flops), "shapes", "unknown"))
    # Tensor cores: a tensor-core kernel launched by the call or an op inside it.
    launcher = tree.launcher
    on_tc = _tensor_core_names(t)[t.name_code[tree.device_events]] & (launcher >= 0)
    call_of_op = np.full(len(tree.index), -1, dtype=np.int64)
    call_of_op[calls] = np.arange(len(calls))
    counted = np.zeros(len(tree.index), dtype=bool)
    counted[calls] = True
    holder = climb(tree.parent, np.where(on_tc, launcher, -1), lambda _, nodes: ~counted[nodes])[0]
    tensor_cores = np.zeros(len(calls), dtype=bool)
    tensor_cores[call_of_op[holder[holder >= 0]]] = True
    dims = t.input_dims[events] if t.input_dims is not None else np.full(len(events), None, dtype=object)
    shape_codes, distinct = pd.factorize(dims)  # decoded once per distinct shape list; None: code -1
    shapes = np.array([d.decode("utf-8", "replace") for d in distinct] + [""], dtype=object)[shape_codes]
    return pd.DataFrame({
        "name": t.names[t.name_code[events]].astype(object),
        "input_shapes": shapes,
        "dtype": dtype,
        "flops": total,
        "bytes": moved,
        "source": source,
        "tensor_cores": tensor_cores,
        "start_us": t["ts"][events],
        "device_us": tree.device_total_us[calls],
        "host_us": tree.dur[calls],
    }, columns=FLOP_COLUMNS)


def effective_dtype(calls: pd.DataFrame, compute_capability: tuple[int, int] | None) -> np.ndarray:
    """The dtype each call's FLOPs ran at, for choosing its peak: its input dtype, except that
    fp32 matmuls and convolutions that launched tensor-core kernels on an Ampere or newer
    GPU (compute capability 8.0+) ran as TF32 and count against the tf32 peak."""
    dtype = calls["dtype"].to_numpy(dtype=object).copy()
    if compute_capability is not None and compute_capability >= (8, 0):
        dtype[(dtype == "fp32") & calls["tensor_cores"].to_numpy(dtype=bool)] = "tf32"
    return dtype


def flop_summary(calls: pd.DataFrame, spans: pd.DataFrame, peaks: Mapping[str, float | None],
                 peak_is_estimate: bool = False,
                 compute_capability: tuple[int, int] | None = None) -> dict[str, Any]:
    """``flops_per_step, achieved_flops_per_s, mfu, mfu_dtype, mfu_peak_is_estimate,
    flops_unknown_calls`` over the steps of ``spans`` (the report's step window).

    ``peaks`` maps dtype ("fp32", "tf32"...) to peak FLOP/s (the spec sheet's, or the CPU
    estimate); empty where none is known. With several dtypes, MFU is the time the counted FLOPs would
    take at each dtype's peak over the step's time (one dtype: achieved / peak); None
    where the peak of a dtype in use is unknown or there is no step. ``mfu_dtype`` is
    the dtype with the most FLOPs. FLOPs whose count is unknown (``flops_unknown_calls``
    calls per step) are left out, so the figures are then a lower bound.
    """
    out: dict[str, Any] = dict.fromkeys(("flops_per_step", "achieved_flops_per_s", "mfu", "mfu_dtype"))
    out["mfu_peak_is_estimate"] = False  # True only beside an MFU measured against an estimated peak
    out["flops_unknown_calls"] = None
    if spans.empty or calls.empty:
        return out
    steps = len(spans)
    step_s = float((spans["end_us"] - spans["start_us"]).mean()) / 1e6
    inside = calls_in_steps(calls, spans)
    known = inside[np.isfinite(inside["flops"].to_numpy())]
    out["flops_unknown_calls"] = (len(inside) - len(known)) / steps
    if known.empty or step_s <= 0:
        return out
    per_step = float(known["flops"].sum()) / steps
    out["flops_per_step"] = per_step
    out["achieved_flops_per_s"] = per_step / step_s
    # The Series' groupby: a frame's would first look the array up as a column label, and
    # pandas formats the whole array into the KeyError it catches (3 ms on the V100 trace).
    by_dtype = known["flops"].groupby(effective_dtype(known, compute_capability), dropna=False).sum() / steps
    out["mfu_dtype"] = str(by_dtype.idxmax())
    peak = [peaks.get(d) if isinstance(d, str) else None for d in by_dtype.index]
    if any(p is None for p in peak):
        return out
    out["mfu"] = float(sum(f / p for f, p in zip(by_dtype.to_numpy(), peak) if p is not None)) / step_s
    out["mfu_peak_is_estimate"] = peak_is_estimate
    return out


def calls_in_steps(calls: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``calls`` (``flop_calls``' table) that start inside one of ``spans`` (the steps)."""
    return calls[step_of(calls["start_us"].to_numpy(), spans.sort_values("start_us")) >= 0]


def cpu_peak_flops(cpuinfo: str, cores: int) -> dict[str, float | None] | None:
    """An estimate of a CPU's peak FLOP/s per dtype (fp32, fp64) from ``/proc/cpuinfo``'s text.

    cores x SIMD lanes (avx512f: 16 fp32, avx/avx2: 8, else 4) x 2 for fused multiply-add
    (``fma``) x 2 FMA pipes per core (what server x86 cores have) x the highest ``cpu MHz``
    listed. Clock and pipes vary (turbo, AVX-512 down-clocking, one-pipe parts), so it is an
    estimate, labelled so; None where the flags or clock cannot be read (e.g. ARM).
    """
    found = re.search(r"^flags\s*:(.*)$", cpuinfo, re.M)
    flags = set(found.group(1).split()) if found else set()
    mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([0-9.]+)", cpuinfo, re.M)]
    if not flags or not mhz:
        return None
    lanes = 16 if "avx512f" in flags else 8 if "avx" in flags else 4
    fp32 = cores * lanes * (2 if "fma" in flags else 1) * 2 * max(mhz) * 1e6
    return {"fp32": fp32, "fp64": fp32 / 2}
