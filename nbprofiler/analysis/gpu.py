"""GPU summary metrics and the kernel table.

The metrics follow the TensorBoard profiler plugin's definitions, per device,
over the span from the first (stretched) step's start to the last one's end:

* ``gpu_utilization``: the union of kernel time in the span, over the span.
* ``sm_efficiency`` (estimated): each kernel counts ``min(1, blocks per SM)``;
  overlapping kernels add up, capped at 1; the result is integrated over the
  span and divided by it. Kernels without the ``blocks per SM`` argument (ROCm
  traces, or a kernel with a zero or negative value) count 0.
* ``achieved_occupancy`` (estimated): the ``est. achieved occupancy %``
  argument, averaged with the kernels' durations inside the span as weights,
  as a fraction (the trace holds percent).
* ``tensor_core_share``: the duration of kernels whose names mark tensor-core
  use over the duration of all kernels on the device. It uses the plugin's own
  list of name markers, so a user moving from the plugin sees the same figure;
  the kernel table's ``tensor_cores`` column uses the fuller detection
  (``uses_tensor_cores``), which also knows TF32 convolutions, cuBLASLt and
  ROCm matrix-core kernels, and is what the AMP advice reads.

Every fraction is ``None`` where it cannot be measured (no device, or no
kernel carrying the argument), never a 0 that would read as a measurement.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..trace.table import EventTable, Kind
from .intervals import union
from .operators import OperatorTree

# Substrings of kernel names that mark tensor-core (matrix-core) instructions.
# The first group is the plugin's list (from NVIDIA PyProf), kept so its figures
# carry over. The plugin matched it case-sensitively and missed current kernels,
# hence the second group, matched case-insensitively:
# - "tensorop": CUTLASS tensor-op kernels, also inside cuDNN's mangled names
#   (cutlass_80_tensorop_*, ...MmaTensorOp...).
# - "tensor<M>x<N>x<K>": the MMA shape that cuDNN/XMMA kernels name
#   (sm80_xmma_fprop_implicit_gemm_..._tensor16x8x8_...), TF32 convolutions.
# - "wmma", "imma", "gmma": the WMMA API and integer / Hopper warpgroup MMA.
# - "nvjet": cuBLASLt's Hopper/Blackwell GEMMs, which all run on tensor cores.
# - "flash_fwd", "flash_bwd": FlashAttention-2, fp16/bf16 MMA only.
# - "_MI<M>x<N>x<K>": ROCm Tensile GEMMs built on MFMA matrix cores (Cijk_..._MI16x16x1_...).
_PLUGIN_TENSOR_CORE_PATTERNS = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816",
    "dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel", "conv1x1",
    "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm", "xmma_sparse_gemm", "c1688",
)
_EXTRA_TENSOR_CORE = re.compile(
    r"tensorop|tensor\d+x\d+x\d+|wmma|imma|gmma|nvjet|flash_fwd|flash_bwd|_MI\d+x\d+x\d+", re.IGNORECASE
)
# cuBLAS names its fp32 SIMT fallbacks "sm80_xmma_gemm_..._ffma_..." and CUTLASS its
# "cutlass_*_simt_*": the first match "xmma_gemm" but both run on the FMA units.
_NOT_TENSOR_CORE = re.compile(r"ffma|simt", re.IGNORECASE)
# Kernels on 16- or 8-bit floats: cuBLAS, cuDNN and CUTLASS spell the data type in the name
# ("ampere_bf16_s16816gemm_bf16...", "volta_h884gemm...", "sm80_xmma_gemm_f16f16_f16f32...",
# "<c10::Half, ...>", "..._e4m3..."); a matmul or convolution kernel without one of these runs on
# fp32 data ("ampere_sgemm...", "cutlass_80_tensorop_s1688gemm..." on TF32, "..._tf32f32_...").
_HALF_PRECISION = re.compile(r"bf16|f16|float16|half|h884|h1688|h16816|hgemm|hmma|e4m3|e5m2|fp8", re.IGNORECASE)

METRIC_COLUMNS = ["device", "kernel_us", "gpu_utilization", "sm_efficiency", "achieved_occupancy", "tensor_core_share"]
KERNEL_COLUMNS = [
    "name", "calls", "total_us", "mean_us", "max_us", "min_us",
    "mean_blocks_per_sm", "mean_occupancy", "tensor_cores", "operator",
]
SUMMARY_KEYS = ("avg_step_us", "steps", "gpu_utilization", "sm_efficiency", "achieved_occupancy", "tensor_core_share")


def plugin_tensor_core_kernel(name: str) -> bool:
    """Whether the TensorBoard plugin counted a kernel as using tensor cores."""
    return any(p in name for p in _PLUGIN_TENSOR_CORE_PATTERNS)


def uses_tensor_cores(name: str) -> bool:
    """Whether a kernel name marks tensor-core (or ROCm matrix-core) instructions."""
    if _NOT_TENSOR_CORE.search(name):
        return False
    return plugin_tensor_core_kernel(name) or _EXTRA_TENSOR_CORE.search(name) is not None


def half_precision_kernel(name: str) -> bool:
    """Whether a kernel name marks 16- or 8-bit floating-point data (fp16, bf16, fp8)."""
    return _HALF_PRECISION.search(name) is not None


def _tensor_core_names(table: EventTable, test: Callable[[str], bool] = uses_tensor_cores) -> np.ndarray:
    """``test`` per name code, run once per distinct kernel name."""
    out = np.zeros(len(table.names), dtype=bool)
    codes = np.unique(table.name_code[table.kind == Kind.KERNEL])
    out[codes] = [test(str(table.names[c])) for c in codes.tolist()]
    return out


def gpu_metrics(table: EventTable, spans: pd.DataFrame) -> pd.DataFrame:
    """One row per device that ran kernels: ``METRIC_COLUMNS`` (see the module docstring).

    ``spans`` is ``stretched_steps``; without steps the span-based metrics are None.
    """
    kernels = np.flatnonzero(table.kind == Kind.KERNEL)
    if len(kernels) == 0:
        return pd.DataFrame(columns=METRIC_COLUMNS)
    lo = float(spans["start_us"].iloc[0]) if len(spans) else np.nan
    hi = float(spans["end_us"].iloc[-1]) if len(spans) else np.nan
    span = hi - lo
    tensor_core = _tensor_core_names(table, plugin_tensor_core_kernel)[table.name_code[kernels]]
    device = table["device"][kernels]
    rows = []
    for d in np.unique(device):
        k = kernels[device == d]
        start, dur = table["ts"][k], table["dur"][k]
        end = start + dur
        rows.append(
            {
                "device": int(d),
                "kernel_us": float(dur.sum()),
                "gpu_utilization": _utilization(start, end, lo, hi) if span > 0 else None,
                "sm_efficiency": _sm_efficiency(start, end, table["blocks_per_sm"][k], lo, hi) if span > 0 else None,
                "achieved_occupancy": _occupancy(start, end, table["occupancy"][k], lo, hi),
                "tensor_core_share": float(dur[tensor_core[device == d]].sum() / dur.sum()) if dur.sum() > 0 else None,
            }
        )
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def _utilization(start: np.ndarray, end: np.ndarray, lo: float, hi: float) -> float:
    s, e = union(start, end)
    return float((np.clip(e, lo, hi) - np.clip(s, lo, hi)).sum() / (hi - lo))


def _sm_efficiency(start: np.ndarray, end: np.ndarray, blocks_per_sm: np.ndarray, lo: float, hi: float) -> float | None:
    """A sweep over kernel starts and ends: the summed per-kernel value between two
    consecutive time points, capped at 1, times the time between them."""
    has = blocks_per_sm > 0  # NaN compares False: kernels without the argument drop out
    if not has.any():
        return None
    value = np.minimum(blocks_per_sm[has], 1.0)
    times = np.concatenate((start[has], end[has]))
    steps = np.concatenate((value, -value))
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(steps[order])
    level = np.clip(level[:-1], 0.0, 1.0)  # clip also removes rounding residue around 0
    width = np.clip(times[1:], lo, hi) - np.clip(times[:-1], lo, hi)
    if not (width > 0).any() or not (level[width > 0] > 0).any():
        return None
    return float((level * width).sum() / (hi - lo))


def _occupancy(start: np.ndarray, end: np.ndarray, occupancy: np.ndarray, lo: float, hi: float) -> float | None:
    has = occupancy >= 0
    if np.isnan(lo) or not has.any():
        return None
    weight = np.clip(end[has], lo, hi) - np.clip(start[has], lo, hi)
    if weight.sum() <= 0:
        return None
    return float((occupancy[has] * weight).sum() / weight.sum() / 100.0)


def gpu_summary(table: EventTable, spans: pd.DataFrame, device: int | None = None) -> dict[str, Any]:
    """``SUMMARY_KEYS`` as a plain dict: the mean step time, the number of steps it
    averages, and the metrics of ``device`` (the one with the most kernel time when
    ``device`` ran no kernels). Device metrics are None without device activity."""
    summary: dict[str, Any] = dict.fromkeys(SUMMARY_KEYS)
    summary["steps"] = len(spans)
    if len(spans):
        summary["avg_step_us"] = float((spans["end_us"] - spans["start_us"]).mean())
    metrics = gpu_metrics(table, spans)
    if metrics.empty:
        return summary
    row = metrics[metrics["device"] == device]
    if row.empty:
        row = metrics.loc[[metrics["kernel_us"].idxmax()]]
    for key in METRIC_COLUMNS[2:]:
        value = row[key].iloc[0]
        summary[key] = None if value is None or pd.isna(value) else float(value)
    return summary


def kernel_table(tree: OperatorTree) -> pd.DataFrame:
    """Per kernel name: ``KERNEL_COLUMNS``, sorted by total time.

    ``mean_blocks_per_sm`` and ``mean_occupancy`` (a fraction) are weighted by
    duration over the calls that carry the argument, NaN where none does.
    ``operator`` is the innermost host operator that launched the kernel (through
    its External id or correlation id); when several did, the one whose launches
    took the most kernel time; None when no launch was recorded.
    """
    table = tree.table
    kernels = np.flatnonzero(table.kind == Kind.KERNEL)
    if len(kernels) == 0:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    dur = table["dur"][kernels]
    bps = table["blocks_per_sm"][kernels]
    occ = table["occupancy"][kernels] / 100.0
    code = table.name_code[kernels]
    frame = pd.DataFrame(
        {
            "code": code,
            "dur": dur,
            "bps_w": np.where(np.isnan(bps), 0.0, bps * dur),
            "bps_d": np.where(np.isnan(bps), 0.0, dur),
            "occ_w": np.where(np.isnan(occ), 0.0, occ * dur),
            "occ_d": np.where(np.isnan(occ), 0.0, dur),
        }
    )
    g = frame.groupby("code", sort=False)
    stats = g["dur"].agg(["count", "sum", "mean", "max", "min"])
    weights = g[["bps_w", "bps_d", "occ_w", "occ_d"]].sum()
    codes = stats.index.to_numpy()
    out = pd.DataFrame(
        {
            "name": table.names[codes].astype(object),
            "calls": stats["count"].to_numpy(dtype=np.int64),
            "total_us": stats["sum"].to_numpy(),
            "mean_us": stats["mean"].to_numpy(),
            "max_us": stats["max"].to_numpy(),
            "min_us": stats["min"].to_numpy(),
            "mean_blocks_per_sm": (weights["bps_w"] / weights["bps_d"].where(weights["bps_d"] > 0)).to_numpy(),
            "mean_occupancy": (weights["occ_w"] / weights["occ_d"].where(weights["occ_d"] > 0)).to_numpy(),
            "tensor_cores": _tensor_core_names(table)[codes],
            "operator": _launching_operator(tree, kernels, codes),
        },
        columns=KERNEL_COLUMNS,
    )
    return out.sort_values("total_us", ascending=False, kind="stable").reset_index(drop=True)


def dominant_by_time(kernel: np.ndarray, op: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel code, the op code (``op``: per kernel event) whose events took the most of its time
    (ties: the first met): the distinct kernel codes and their op codes."""
    by_pair = (
        pd.DataFrame({"kernel": kernel, "op": op, "dur": dur})
        .groupby(["kernel", "op"], sort=False)["dur"]
        .sum()
        .sort_values(ascending=False, kind="stable")
        .reset_index()
        .drop_duplicates("kernel")
    )
    return by_pair["kernel"].to_numpy(), by_pair["op"].to_numpy()


def _launching_operator(tree: OperatorTree, kernels: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """For each kernel name code in ``codes``, the name of its dominant launching operator."""
    table = tree.table
    position = np.searchsorted(tree.device_events, kernels)  # kernels are a subset of device_events
    launcher = tree.launcher[position]
    known = launcher >= 0
    op_code = table.name_code[tree.index[launcher[known]]]
    op_of = dict(zip(*(a.tolist() for a in dominant_by_time(table.name_code[kernels][known], op_code,
                                                            table["dur"][kernels][known]))))
    out = np.empty(len(codes), dtype=object)
    out[:] = [table.names[op_of[c]] if c in op_of else None for c in codes.tolist()]
    return out
