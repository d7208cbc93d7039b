"""Per collective: how many calls, how many bytes, how long, what bandwidth, how much was exposed.

The rows come from each collective's ``record_param_comms`` operator, the one
op that records what a collective moved: its name (``allreduce``,
``broadcast``...), element type, element counts in and out and the size of its
group. Its time is the device time of the NCCL (RCCL) kernels it launched: the
kernels whose launching operator (``OperatorTree.launcher``) is the op or one
nested in it. That is the collective's latency as the device ran it; the host
op itself only enqueues the work.

Bandwidths follow nccl-tests (``doc/PERFORMANCE.md``), so a figure can be held
against ``all_reduce_perf`` and friends on the same machine:

* ``bytes``: the larger of the message's input and output, times the element
  size. That is the size nccl-tests divides by: the whole buffer for
  all-reduce, broadcast and reduce (in = out), the gathered output for
  all-gather (out = n x in), the scattered input for reduce-scatter
  (in = n x out), the whole send buffer for all-to-all;
* ``algbw = bytes / time``;
* ``busbw = algbw x factor``, the factor by collective and group size n:
  all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all, gather and
  scatter (n-1)/n; broadcast, reduce, send and recv 1. With n = 1 nothing
  crosses a link and busbw is 0.

Per row, ``time_us`` and ``bytes`` add up over the calls that ran kernels, so
``algbw`` is the rows' total bytes over their total kernel time (a
time-weighted mean over calls of different sizes).

``exposed_us`` is the part of the kernels' time during which no compute
kernel ran on the same device: what the step waited for, the rest being
hidden behind computation (``streams.kernel_overlap`` measures the same
overlap per device; here it is per kernel, with ``covered_in_windows``).

Not data collectives: ``wait`` (the op recorded where the host waits for a
work handle, with 0 elements) and ``barrier`` (a synchronisation; on NCCL a
one-element all-reduce whose bandwidth means nothing) are left out, as are
their kernels. gloo (CPU) runs record no ``record_param_comms`` op, only
``gloo:<op>`` host ranges on gloo's threads with no sizes, so their table is
empty: the communication table (``communication.step_communication``) has
their time. Traces of torch before 2.0 record the op without its arguments
(a100_train): there NCCL's own range around each collective (``nccl:all_reduce``,
``nccl:all_to_all``) names the row, with its kernels' time and exposed time but
no bytes, dtype, group size or bandwidth.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.table import Kind
from .breakdown import part_masks
from .dtypes import item_bytes
from .intervals import climb, covered_in_windows
from .operators import OperatorTree

COLLECTIVE_COLUMNS = ["collective", "dtype", "group_size", "calls", "bytes", "time_us", "latency_us",
                      "algbw_gb_per_s", "busbw_gb_per_s", "exposed_us", "exposed_share"]
CALL_COLUMNS = ["collective", "dtype", "group_size", "ts", "bytes", "kernels", "time_us", "exposed_us"]
NOT_DATA = frozenset({"wait", "barrier"})
DEVICE_BACKEND_PREFIXES = ("nccl:", "rccl:")

def bus_factor(collective: str, n: float) -> float:
    """nccl-tests' busbw / algbw ratio for ``collective`` among ``n`` ranks (NaN: unknown name).

    Names are torch's (``allreduce``, ``_allgather_base``, ``reduce_scatter_tensor_coalesced``...):
    the base name is read past its leading underscores and its ``_base`` / ``_coalesced`` /
    ``_into_tensor`` / ``_tensor`` suffixes."""
    base = collective.lower().lstrip("_")
    for suffix in ("_coalesced", "_base", "_into_tensor", "_tensor"):
        base = base.replace(suffix, "")
    base = base.replace("_", "")
    if n <= 0 or not np.isfinite(n):
        return np.nan
    if base == "allreduce":
        return 2 * (n - 1) / n
    if base in ("allgather", "reducescatter", "alltoall", "gather", "scatter"):
        return (n - 1) / n
    if base in ("broadcast", "reduce", "send", "recv"):
        return 1.0
    return np.nan


def collective_calls(tree: OperatorTree) -> pd.DataFrame:
    """``CALL_COLUMNS``: one row per data collective's ``record_param_comms`` op (or NCCL range,
    see the module docstring), in time order:
    its bytes (nccl-tests' size, see the module docstring; NaN for an unknown dtype), how many
    kernels it launched, their device time and the part of it no compute kernel overlapped
    (µs; NaN without kernels)."""
    table = tree.table
    if len(tree.index) == 0:
        return pd.DataFrame(columns=CALL_COLUMNS)
    name, is_op = _collective_ops(tree)
    data = is_op & ~pd.Series(name, dtype=object).isin(NOT_DATA).to_numpy()
    ops = np.flatnonzero(data)  # positions in tree.index
    if len(ops) == 0:
        return pd.DataFrame(columns=CALL_COLUMNS)
    kernel_us, exposed_us, kernels = _kernel_time(tree, is_op)
    events = tree.index[ops]
    dtype = table.comm_dtype[events] if table.comm_dtype is not None else np.full(len(events), None, dtype=object)
    size = np.array([item_bytes(d) for d in dtype], dtype=np.float64)
    elements = np.fmax(table["msg_in_nelems"][events], table["msg_out_nelems"][events])
    ran = kernels[ops] > 0
    frame = pd.DataFrame({
        "collective": name[ops].astype(str),
        "dtype": pd.Series(dtype, dtype=object).fillna("").astype(str).to_numpy(),
        "group_size": table["group_size"][events],
        "ts": table["ts"][events],
        "bytes": elements * size,
        "kernels": kernels[ops],
        "time_us": np.where(ran, kernel_us[ops], np.nan),
        "exposed_us": np.where(ran, exposed_us[ops], np.nan),
    })
    return frame.sort_values("ts", kind="stable").reset_index(drop=True)[CALL_COLUMNS]


def _collective_ops(tree: OperatorTree) -> tuple[np.ndarray, np.ndarray]:
    """Each operator's collective name (None for other operators) and which are collectives:
    the ``record_param_comms`` ops with their arguments, or where no op has them (torch before
    2.0), NCCL's own range of each collective, named as written after ``nccl:``."""
    table = tree.table
    kinds = table.kind[tree.index]
    if table.collective is not None:
        name = table.collective[tree.index]
        is_op = (kinds == Kind.CPU_OP) & pd.notna(name)
        if is_op.any():
            return name, is_op
    # Judged once per distinct name, then looked up by each operator's name code.
    names = [str(n) for n in table.names]
    backend_name = np.array([n.lower().startswith(DEVICE_BACKEND_PREFIXES) for n in names], dtype=bool)
    code = table.name_code[tree.index]
    device_backend = backend_name[code]
    name = np.full(len(code), None, dtype=object)
    if device_backend.any():
        after_prefix = np.array([n.split(":", 1)[-1] for n in names], dtype=object)
        name[device_backend] = after_prefix[code[device_backend]]
    return name, device_backend


def _kernel_time(tree: OperatorTree, is_collective: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per operator (aligned with ``tree.index``): device µs of the kernels launched inside the
    nearest collective op around their launching operator, the part of it no compute kernel
    on the same device overlapped, and how many kernels."""
    table = tree.table
    n = len(tree.index)
    dev = tree.device_events
    kernel = table.kind[dev] == Kind.KERNEL
    op = climb(tree.parent, np.where(kernel, tree.launcher, -1), lambda _, nodes: ~is_collective[nodes])[0]
    mine = op >= 0
    k, owner = dev[mine], op[mine]
    start, end = table["ts"][k], table["ts"][k] + table["dur"][k]
    overlapped = np.zeros(len(k))
    compute = np.flatnonzero(part_masks(table)["kernel"])  # in table order, as a mask would take them
    compute_device = table["device"][compute]
    for device in np.unique(table["device"][k]):
        on = table["device"][k] == device
        busy = compute[compute_device == device]
        overlapped[on] = covered_in_windows(table["ts"][busy], table["ts"][busy] + table["dur"][busy],
                                            start[on], end[on])
    dur = table["dur"][k]
    return (np.bincount(owner, weights=dur, minlength=n),
            np.bincount(owner, weights=np.maximum(dur - overlapped, 0.0), minlength=n),
            np.bincount(owner, minlength=n))


def collective_table(calls: pd.DataFrame) -> pd.DataFrame:
    """``COLLECTIVE_COLUMNS``: ``collective_calls`` grouped by (collective, dtype, group size).

    ``calls`` counts every call; ``bytes``, ``time_us`` and ``exposed_us`` add up over the
    calls that ran kernels (NaN when none did; ``bytes`` NaN when a call's size is unknown);
    ``latency_us`` is their mean kernel time per call; bandwidths in GB/s (1e9 bytes), as
    nccl-tests prints them; ``exposed_share`` is ``exposed_us / time_us``. Most kernel time first.
    """
    if calls.empty:
        return pd.DataFrame(columns=COLLECTIVE_COLUMNS)
    timed = calls["kernels"].to_numpy() > 0
    frame = calls.assign(
        timed=timed.astype(np.int64),
        timed_bytes=np.where(timed, calls["bytes"].to_numpy(dtype=np.float64), 0.0),
        time=calls["time_us"].fillna(0.0), exposed=calls["exposed_us"].fillna(0.0),
        group=calls["group_size"].fillna(-1.0))
    out = frame.groupby(["collective", "dtype", "group"], sort=True).agg(
        calls=("ts", "size"), timed=("timed", "sum"), bytes=("timed_bytes", "sum"), time_us=("time", "sum"),
        exposed_us=("exposed", "sum"), all_bytes=("bytes", "sum"), sized=("bytes", "count")).reset_index()
    some = out["timed"].to_numpy() > 0
    unsized = out["sized"].to_numpy() < out["calls"].to_numpy()  # a call of unknown size: no total to divide
    group = out["group"].to_numpy(dtype=np.float64)
    time_us = np.where(some, out["time_us"], np.nan)
    data = np.where(unsized, np.nan, np.where(some, out["bytes"], out["all_bytes"]))
    with np.errstate(invalid="ignore", divide="ignore"):
        algbw = np.where(time_us > 0, data / time_us / 1e3, np.nan)  # bytes per µs / 1e3 = GB/s
        factor = np.array([bus_factor(c, g) for c, g in zip(out["collective"], group)])
        table = pd.DataFrame({
            "collective": out["collective"], "dtype": out["dtype"],
            "group_size": np.where(group < 0, np.nan, group),
            "calls": out["calls"].astype(np.int64), "bytes": data, "time_us": time_us,
            "latency_us": time_us / out["timed"].to_numpy(),
            "algbw_gb_per_s": algbw, "busbw_gb_per_s": algbw * factor,
            "exposed_us": np.where(some, out["exposed_us"], np.nan),
            "exposed_share": np.where(time_us > 0, out["exposed_us"] / time_us, np.nan)})
    return table.sort_values(["time_us", "calls"], ascending=False, kind="stable",
                             na_position="last").reset_index(drop=True)[COLLECTIVE_COLUMNS]
