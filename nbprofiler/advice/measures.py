"""The measured figures the suggestion rules read.

Most come from the Report's own analyses (the step breakdown, the GPU summary,
the kernel table, memory), so a suggestion quotes the same numbers the report
shows. The rest comes from ``report.table``, here or through the analyses
(``analysis.sync.sync_points``, ``analysis.cpu_overhead``), given what the
Report holds: the matmul/conv share of kernel time, the host-to-device
copies, where each host-device sync happens and how long the GPU then sat
idle, and the fixed per-operator cost on CPU.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..analysis import sync as analysis_sync
from ..analysis.cpu_overhead import CpuOverhead, cpu_overhead as analysis_cpu_overhead
from ..analysis.gpu import half_precision_kernel
from ..analysis.memory import sampler_device
from ..analysis.steps import DATALOADER_PREFIX
from ..analysis.sync import SYNC_POINT_COLUMNS, SyncLocator, sync_idle_us  # noqa: F401 - the rules read it here
from ..records import LoaderRecord
from ..trace.table import Kind

if TYPE_CHECKING:
    from ..report import Report

# Innermost launching operators whose kernels can run on tensor cores.
ELIGIBLE_OP = re.compile(
    r"conv|(^|::)(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|einsum|_scaled_mm|_scaled_dot_product\w*|"
    r"_flash_attention\w*|_efficient_attention\w*)$"
)
CONV_OP = re.compile(r"conv", re.IGNORECASE)
LAYOUT_TRANSPOSE_KERNEL = re.compile(r"nchwToNhwc|nhwcToNchw", re.IGNORECASE)
# Helper kernels a matmul or convolution launches around its arithmetic: split-K reductions,
# epilogues, offset tables, FFT passes' set-up. Precision advice leaves them out.
_NOT_ARITHMETIC_KERNEL = re.compile(r"splitKreduce|epilogue|computeOffsets|elementwise|copy", re.IGNORECASE)


# -- steps and data waiting -------------------------------------------------------------------
@dataclass(frozen=True)
class DataWait:
    """Mean time per step (``report.step_window``'s), and the part of it spent waiting
    for batches; ``batches`` per step where a live run counted them."""

    steps: int
    step_ms: float
    wait_ms: float
    batches: float | None = None

    @property
    def share(self) -> float:
        return self.wait_ms / self.step_ms if self.step_ms > 0 else 0.0

    @property
    def compute_ms(self) -> float:
        return max(self.step_ms - self.wait_ms, 0.0)


def data_wait(report: "Report") -> DataWait | None:
    """Data waiting over the report's steps (``step_window``): the live sampler's, else
    the trace breakdown's, as a share of the step time the overview shows.

    The breakdown counts only DataLoader time when no device work ran, so on a
    trace the share is time really lost to loading, not time the GPU overlapped.
    """
    window = report.step_window
    if window.avg_step_us is None:
        return None
    sampled = report.sampled_steps
    if sampled is not None:
        rows = window.of(sampled)
        if rows.empty:
            return None
        batches = float(rows["batches"].mean()) if "batches" in rows else None
        return DataWait(len(rows), window.avg_step_us / 1e3, float(rows["dataloader_ms"].mean()), batches)
    bd = window.of(report.breakdown)
    return DataWait(len(bd), window.avg_step_us / 1e3, float(bd["dataloader"].mean()) / 1e3) if len(bd) else None


def loader_wait(report: "Report", record: LoaderRecord) -> DataWait | None:
    """One loader's share of the run's data waiting (live runs with several loaders)."""
    total = data_wait(report)
    if not report.ran_live or total is None:
        return None
    steps = report.step_window.steps
    waited = sum(record.wait_ms_by_step.get(step, 0.0) for step in steps)
    return DataWait(total.steps, total.step_ms, waited / total.steps, total.batches)


def wait_per_step(report: "Report", record: LoaderRecord | None) -> np.ndarray:
    """Milliseconds waited in each of the report's steps (for start-up spikes and burstiness)."""
    window = report.step_window
    sampled = report.sampled_steps
    if sampled is not None:
        if record is None:
            return window.of(sampled)["dataloader_ms"].to_numpy(dtype=np.float64)
        return np.array([record.wait_ms_by_step.get(i, 0.0) for i in window.steps], dtype=np.float64)
    bd = window.of(report.breakdown)
    return bd["dataloader"].to_numpy(dtype=np.float64) / 1e3


def trace_loader_workers(report: "Report") -> str | None:
    """What the trace's DataLoader iterator says about workers: "none", "some" or None (no loader seen)."""
    names = [str(n) for n in report.table.names if str(n).startswith(DATALOADER_PREFIX)]
    if any("_MultiProcessingDataLoaderIter" in n for n in names):
        return "some"
    if any("_SingleProcessDataLoaderIter" in n for n in names):
        return "none"
    return None


def saw_dataloader(report: "Report") -> bool:
    """Whether the profiled run iterated a DataLoader: only then can one be said to keep up."""
    loaders = report.loaders
    return bool(loaders) if loaders is not None else trace_loader_workers(report) is not None


# -- device time ------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeviceTime:
    """The profiled steps on the report's device, in µs summed over the steps."""

    steps: int
    span_us: float  # total step time (stretched steps)
    busy_us: float  # kernels, copies and fills
    host_wait_us: float  # device idle because the next work had not been launched yet
    dataloader_us: float  # the breakdown's DataLoader time: idle that data waiting explains
    synthetic: bool  # the trace had no ProfilerStep ranges: one step covers everything

    @property
    def utilization(self) -> float:
        return self.busy_us / self.span_us if self.span_us > 0 else 0.0

    @property
    def utilization_without_data_wait(self) -> float:
        """Busy share of the time the step was not waiting for data."""
        rest = self.span_us - self.dataloader_us
        return self.busy_us / rest if rest > 0 else 0.0


def device_time(report: "Report") -> DeviceTime | None:
    """None without device activity in the profiled steps."""
    if not report.has_device_activity:
        return None
    idle = report.idle
    bd = report.breakdown
    if idle.empty or bd.empty:
        return None
    steps = report.trace_steps
    return DeviceTime(
        steps=len(idle),
        span_us=float(bd["total"].sum()),
        busy_us=float(idle["busy_us"].sum()),
        host_wait_us=float(idle["host_wait_us"].sum()),
        dataloader_us=float(bd["dataloader"].sum()),
        synthetic=bool(len(steps) and steps["synthetic"].iloc[0]),
    )


@dataclass(frozen=True)
class KernelMix:
    """Which operators the kernel time belongs to, as shares of all kernel time.

    The matmul/conv kernels (``eligible_share``) split by their data type and units, read
    from their names: fp32 on the FMA units (``fp32_simt_share``; of it, ``fp32_matmul_simt_share``
    launched by matmuls rather than convolutions), fp32 on tensor cores (TF32:
    ``fp32_tensor_core_share``), and 16- or 8-bit floats (``half_share``).
    """

    eligible_share: float  # launched by matmul / conv / attention operators
    conv_share: float
    layout_transpose_share: float  # NCHW <-> NHWC conversion kernels
    tensor_core_share: float
    tiny_share: float  # share of kernel launches shorter than TINY_KERNEL_US
    kernels: int
    fp32_simt_share: float = 0.0
    fp32_matmul_simt_share: float = 0.0
    fp32_tensor_core_share: float = 0.0
    half_share: float = 0.0
    fp32_matmul_simt_kernels: tuple[str, ...] = ()  # the longest, most time first

    def fp32_share(self, tf32: bool) -> float:
        """Matmul/conv kernel time on fp32 data that 16-bit autocast would change: on the FMA
        units, and with ``tf32`` (compute capability 8.0 and later) on TF32 tensor cores too."""
        return self.fp32_simt_share + (self.fp32_tensor_core_share if tf32 else 0.0)


def kernel_mix(report: "Report", tiny_us: float) -> KernelMix | None:
    kernels = report.kernels
    if kernels.empty:
        return None
    total = float(kernels["total_us"].sum())
    if total <= 0:
        return None
    # Plain arrays and one regex pass per name: the kernel table has tens of rows, where
    # pandas' per-call overhead on a dozen masked Series cost more than the work (7 ms).
    op = kernels["operator"].astype(object).fillna("").astype(str).tolist()
    names = kernels["name"].astype(str).tolist()
    eligible = _matches(ELIGIBLE_OP, op)
    conv = _matches(CONV_OP, op)
    transpose = _matches(LAYOUT_TRANSPOSE_KERNEL, names)
    tc = kernels["tensor_cores"].to_numpy(dtype=bool)
    half = np.array([half_precision_kernel(n) for n in names], dtype=bool)
    # Layout conversions and split-K reductions launched by a matmul/conv are not its arithmetic.
    arithmetic = eligible & ~transpose & ~_matches(_NOT_ARITHMETIC_KERNEL, names)
    simt = arithmetic & ~tc & ~half
    matmul_simt = simt & ~conv
    t = report.table
    on = (t.kind == Kind.KERNEL) & (t["device"] == report.device.index)
    if not on.any():
        on = t.kind == Kind.KERNEL
    dur = t["dur"][on]
    time = kernels["total_us"].to_numpy(dtype=np.float64)

    def share(mask: np.ndarray) -> float:
        return float(np.nansum(time[mask])) / total  # NaN skipped, as Series.sum does

    longest = np.flatnonzero(matmul_simt)[np.argsort(-time[matmul_simt], kind="stable")[:3]]
    return KernelMix(
        eligible_share=share(eligible),
        conv_share=share(conv),
        layout_transpose_share=share(transpose),
        tensor_core_share=share(tc),
        tiny_share=float((dur < tiny_us).mean()) if len(dur) else 0.0,
        kernels=int(on.sum()),
        fp32_simt_share=share(simt),
        fp32_matmul_simt_share=share(matmul_simt),
        fp32_tensor_core_share=share(arithmetic & tc & ~half),
        half_share=share(arithmetic & half),
        fp32_matmul_simt_kernels=tuple(names[i] for i in longest),
    )


def _matches(pattern: re.Pattern[str], texts: list[str]) -> np.ndarray:
    """Whether ``pattern`` occurs in each text."""
    return np.array([pattern.search(x) is not None for x in texts], dtype=bool)


@dataclass(frozen=True)
class H2DCopies:
    """Host-to-device copies in the trace (``report.copies``): what ``pin_memory`` advice rests on."""

    count: int
    bytes: float
    pageable: int  # copies from pageable (not pinned) host memory, which block the host
    pageable_us: float  # their device time
    pageable_gb_per_s: float  # their rate; NaN where the trace records no sizes
    link_gb_per_s: float  # the host link's, one way; NaN for a device the spec table lacks


def h2d_copies(report: "Report") -> H2DCopies | None:
    if not report.has_device_activity:
        return None
    copies = report.copies
    htod = copies[copies["direction"] == "HtoD"]
    if htod.empty:
        return None
    pageable = htod[htod["host_memory"] == "pageable"]  # one row at most: the table groups by both
    return H2DCopies(int(htod["copies"].sum()), float(np.nansum(htod["bytes"])), int(pageable["copies"].sum()),
                     float(pageable["time_us"].sum()), float(pageable["gb_per_s"].iloc[0]) if len(pageable) else np.nan,
                     float(htod["link_gb_per_s"].iloc[0]))


# -- host-device syncs ------------------------------------------------------------------------
def sync_points(report: "Report") -> pd.DataFrame:
    """``analysis.sync.sync_points`` for the report's trace and device, located with what the
    run recorded (see ``sync_locator``); empty without device activity."""
    if not report.has_device_activity:
        return pd.DataFrame(columns=SYNC_POINT_COLUMNS)
    return analysis_sync.sync_points(report.table, report.operator_tree, report.trace_steps, report.device.index,
                                     sync_locator(report))


def sync_locator(report: "Report") -> SyncLocator:
    """A locator for the report's syncs: with the cell's line marks when the live run
    recorded them alongside its trace, else from the trace alone."""
    marks = report.line_marks if report.raw_trace is not None else None
    return SyncLocator(report.table, report.operator_tree, marks, report.cell_source or "")


# -- CPU fixed cost per operator --------------------------------------------------------------
def cpu_overhead(report: "Report", quantile: float) -> CpuOverhead | None:
    """``analysis.cpu_overhead`` for a CPU run's profiled steps; None on a device run."""
    if report.has_device_activity:
        return None
    return analysis_cpu_overhead(report.table, report.operator_tree, report.trace_steps, quantile)


# -- memory for batch-size advice -------------------------------------------------------------
@dataclass(frozen=True)
class DeviceMemory:
    """Device memory across the steps, in bytes: what stays, and the per-step peak."""

    total: float
    static: float  # allocated between steps: parameters, gradients, optimizer state
    peak: float  # the highest per-step peak
    reserved_peak: float | None

    @property
    def activations(self) -> float:
        """What one step adds on top of static memory: activations and temporaries."""
        return max(self.peak - self.static, 0.0)

    @property
    def peak_share(self) -> float:
        return self.peak / self.total if self.total > 0 else 0.0


def device_memory(report: "Report") -> DeviceMemory | None:
    """None where absolute device memory is unknown: CPU runs, and traces whose
    allocator totals had to be rebuilt (2021 traces start from an unknown level)."""
    total = report.device.total_memory_bytes
    if report.device.kind == "cpu" or not total:
        return None
    sampled = report.sampled_steps
    if sampled is not None and "mem_peak_bytes" in sampled:
        steps = sampled.iloc[1:] if len(sampled) > 1 else sampled  # step 0 creates optimizer state
        reserved = float(steps["mem_reserved_bytes"].max()) if "mem_reserved_bytes" in steps else None
        return DeviceMemory(float(total), float(steps["mem_allocated_bytes"].median()),
                            float(steps["mem_peak_bytes"].max()), reserved)
    label = sampler_device(report.device)
    timeline = report.memory
    timeline = timeline[timeline["device"] == label]
    if timeline.empty or bool(timeline["reconstructed"].any()):
        return None
    per_step = report.memory_steps
    per_step = per_step[(per_step["device"] == label) & per_step["peak_allocated_bytes"].notna()]
    if per_step.empty:
        return None
    reserved = per_step["peak_reserved_bytes"].max()
    return DeviceMemory(float(total), float(per_step["end_allocated_bytes"].median()),
                        float(per_step["peak_allocated_bytes"].max()),
                        None if pd.isna(reserved) else float(reserved))


def largest_power_of_two(limit: float) -> int:
    """The largest power of two <= ``limit`` (0 when ``limit`` < 1)."""
    return 0 if limit < 1 else 1 << int(math.floor(math.log2(limit)))
