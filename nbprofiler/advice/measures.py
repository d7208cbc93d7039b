"""The measured figures the suggestion rules read.

Most come from the Report's own analyses (the step breakdown, the GPU summary,
the kernel table, memory), so a suggestion quotes the same numbers the report
shows. What only advice needs is computed here from ``report.table``: where
each host-device sync happens and how long the GPU then sat idle, the
matmul/conv share of kernel time, and the fixed per-operator cost on CPU.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..analysis.intervals import covered_in_windows, has_ancestor, parent_index, union
from ..analysis.steps import DATALOADER_PREFIX, step_of
from ..capture.loaders import LoaderRecord
from ..trace.table import DEVICE_WORK_KINDS, Kind

if TYPE_CHECKING:
    from ..report import Report

# Innermost launching operators whose kernels can run on tensor cores.
ELIGIBLE_OP = re.compile(
    r"conv|(^|::)(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|einsum|_scaled_mm|_scaled_dot_product\w*|"
    r"_flash_attention\w*|_efficient_attention\w*)$"
)
CONV_OP = re.compile(r"conv", re.IGNORECASE)
LAYOUT_TRANSPOSE_KERNEL = re.compile(r"nchwToNhwc|nhwcToNchw", re.IGNORECASE)
SYNC_RUNTIME = re.compile(r"^(cuda|hip)(Device|Stream|Event)Synchronize$")
# Operators that copy a device value to the host, by what the user wrote to cause them.
SYNC_OPS = {
    "aten::item": "item",
    "aten::_local_scalar_dense": "item",
    "aten::is_nonzero": "bool",
    "aten::nonzero": "shape",
    "aten::masked_select": "shape",
    "aten::_unique2": "shape",
    "aten::unique_consecutive": "shape",
    "aten::unique_dim": "shape",
}
# Frames of library code: a sync's location is the first frame outside these.
_LIBRARY_FRAME = re.compile(r"site-packages|dist-packages|/lib/python\d|^torch/|^IPython/|^ipykernel/|^<built-in|^<frozen")
_FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")


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
    if report.run is not None:
        rows = window.of(report.run.steps)
        if rows.empty:
            return None
        batches = float(rows["batches"].mean()) if "batches" in rows else None
        return DataWait(len(rows), window.avg_step_us / 1e3, float(rows["dataloader_ms"].mean()), batches)
    bd = window.of(report.breakdown)
    return DataWait(len(bd), window.avg_step_us / 1e3, float(bd["dataloader"].mean()) / 1e3) if len(bd) else None


def loader_wait(report: "Report", record: LoaderRecord) -> DataWait | None:
    """One loader's share of the run's data waiting (live runs with several loaders)."""
    total = data_wait(report)
    if report.run is None or total is None:
        return None
    steps = report.step_window.steps
    waited = sum(record.wait_ms_by_step.get(step, 0.0) for step in steps)
    return DataWait(total.steps, total.step_ms, waited / total.steps, total.batches)


def wait_per_step(report: "Report", record: LoaderRecord | None) -> np.ndarray:
    """Milliseconds waited in each of the report's steps (for start-up spikes and burstiness)."""
    window = report.step_window
    if report.run is not None:
        if record is None:
            return window.of(report.run.steps)["dataloader_ms"].to_numpy(dtype=np.float64)
        return np.array([record.wait_ms_by_step.get(i, 0.0) for i in window.steps], dtype=np.float64)
    bd = window.of(report.breakdown)
    return bd["dataloader"].to_numpy(dtype=np.float64) / 1e3


def trace_loader_workers(report: "Report") -> str | None:
    """What the trace's DataLoader iterator says about workers: "none", "some" or None (no loader seen)."""
    t = report.table
    if t is None:
        return None
    names = [str(n) for n in t.names if str(n).startswith(DATALOADER_PREFIX)]
    if any("_MultiProcessingDataLoaderIter" in n for n in names):
        return "some"
    if any("_SingleProcessDataLoaderIter" in n for n in names):
        return "none"
    return None


def saw_dataloader(report: "Report") -> bool:
    """Whether the profiled run iterated a DataLoader: only then can one be said to keep up."""
    if report.run is not None:
        return bool(report.run.loaders)
    return trace_loader_workers(report) is not None


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
    """Which operators the kernel time belongs to, as shares of all kernel time."""

    eligible_share: float  # launched by matmul / conv / attention operators
    conv_share: float
    layout_transpose_share: float  # NCHW <-> NHWC conversion kernels
    tensor_core_share: float
    tiny_share: float  # share of kernel launches shorter than TINY_KERNEL_US
    kernels: int


def kernel_mix(report: "Report", tiny_us: float) -> KernelMix | None:
    kernels = report.kernels
    if kernels.empty or report.table is None:
        return None
    total = float(kernels["total_us"].sum())
    if total <= 0:
        return None
    op = kernels["operator"].astype(object).fillna("").astype(str)
    eligible = op.map(lambda name: ELIGIBLE_OP.search(name) is not None).astype(bool)
    conv = op.str.contains(CONV_OP)
    transpose = kernels["name"].astype(str).str.contains(LAYOUT_TRANSPOSE_KERNEL)
    tc = kernels["tensor_cores"].astype(bool)
    t = report.table
    on = (t.kind == Kind.KERNEL) & (t["device"] == report.device.index)
    if not on.any():
        on = t.kind == Kind.KERNEL
    dur = t["dur"][on]
    return KernelMix(
        eligible_share=float(kernels["total_us"][eligible].sum()) / total,
        conv_share=float(kernels["total_us"][conv].sum()) / total,
        layout_transpose_share=float(kernels["total_us"][transpose].sum()) / total,
        tensor_core_share=float(kernels["total_us"][tc].sum()) / total,
        tiny_share=float((dur < tiny_us).mean()) if len(dur) else 0.0,
        kernels=int(on.sum()),
    )


@dataclass(frozen=True)
class H2DCopies:
    """Host-to-device copies in the profiled steps."""

    count: int
    bytes: float
    pageable: int  # copies from pageable (not pinned) host memory, which block the host


def h2d_copies(report: "Report") -> H2DCopies | None:
    t = report.table
    if t is None or not report.has_device_activity:
        return None
    names = pd.Series(t.names, dtype=object).astype(str)
    is_h2d = names.str.contains("HtoD", regex=False).to_numpy()[t.name_code] & (t.kind == Kind.MEMCPY)
    if not is_h2d.any():
        return None
    pageable = names.str.contains("Pageable", regex=False).to_numpy()[t.name_code] & is_h2d
    return H2DCopies(int(is_h2d.sum()), float(np.nansum(t["bytes"][is_h2d])), int(pageable.sum()))


# -- host-device syncs ------------------------------------------------------------------------
SYNC_COLUMNS = ["step", "ts", "operator", "cause", "where", "host_us", "idle_after_us"]


def sync_points(report: "Report") -> pd.DataFrame:
    """Each point in a profiled step where the host waited for the device.

    A sync point is the outermost of: an operator that copies a device value to
    the host (``aten::item``, ``aten::is_nonzero``, data-dependent shapes such as
    ``aten::nonzero``), an operator whose launched copy goes device-to-host, or
    from pageable host memory to the device, and a bare ``cuda*Synchronize``
    call. ``idle_after_us`` is how long the device then sat idle before the
    host queued work again, clipped to the step: the time the sync cost.
    ``where`` is the cell line (or user frame) when the trace has stacks, else
    the operator chain around it.
    """
    empty = pd.DataFrame(columns=SYNC_COLUMNS)
    t, tree = report.table, report.operator_tree
    if t is None or tree is None or not report.has_device_activity:
        return empty
    steps = report.trace_steps
    if steps.empty or bool(steps["synthetic"].iloc[0]):
        return empty
    # Names are judged once per distinct name, then looked up by each event's name code.
    names = [str(n) for n in t.names]
    dev = tree.device_events
    memcpy = t.kind[dev] == Kind.MEMCPY
    launcher = tree.launcher
    dtoh_name = np.array(["DtoH" in n for n in names], dtype=bool)
    pageable_htod_name = np.array(["HtoD" in n and "Pageable" in n for n in names], dtype=bool)
    dtoh = memcpy & dtoh_name[t.name_code[dev]]
    pageable_htod = memcpy & pageable_htod_name[t.name_code[dev]]
    cause = np.full(len(tree.index), "", dtype=object)
    cause[launcher[dtoh & (launcher >= 0)]] = "cpu"
    cause[launcher[pageable_htod & (launcher >= 0)]] = "h2d"
    sync_cause = np.array([SYNC_OPS.get(n, "") for n in names], dtype=object)[t.name_code[tree.index]]
    cause = np.where(sync_cause != "", sync_cause, cause)
    is_candidate = cause != ""
    covered = is_candidate | has_ancestor(tree.parent, is_candidate)
    outermost = np.flatnonzero(is_candidate & ~has_ancestor(tree.parent, is_candidate)).tolist()
    points: list[tuple[float, float, int, int, str]] = []  # ts, end, event index, op position, cause
    for pos in outermost:
        ev = int(tree.index[pos])
        points.append((float(t["ts"][ev]), float(t["ts"][ev] + t["dur"][ev]), ev, pos, str(cause[pos])))
    runtime = np.flatnonzero((t.kind == Kind.RUNTIME) & _name_matches(t.names, SYNC_RUNTIME)[t.name_code])
    if len(runtime):
        around = tree.enclosing(t.thread[runtime], t["ts"][runtime])
        for ev, pos in zip(runtime.tolist(), around.tolist()):
            if pos >= 0 and covered[pos]:
                continue  # already counted as the operator that caused it
            points.append((float(t["ts"][ev]), float(t["ts"][ev] + t["dur"][ev]), ev, pos, "explicit"))
    if not points:
        return empty
    ts = np.array([p[0] for p in points])
    step = step_of(ts, steps)
    busy_s, busy_e = _device_busy(report)
    step_end = dict(zip(steps["step"].tolist(), steps["end_us"].tolist()))
    locator = _Locator(report)
    rows = []
    for (start, end, ev, pos, why), s in zip(points, step.tolist()):
        if s < 0:
            continue
        rows.append(
            {
                "step": s,
                "ts": start,
                "operator": str(t.names[t.name_code[ev]]),
                "cause": why,
                "where": locator.where(ev, pos),
                "host_us": end - start,
                "idle_after_us": _idle_after(end, busy_s, busy_e, float(step_end[s])),
            }
        )
    if not rows:
        return empty
    return pd.DataFrame(rows, columns=SYNC_COLUMNS).sort_values("ts", kind="stable").reset_index(drop=True)


def sync_idle_us(points: pd.DataFrame) -> float:
    """Device idle after syncs, each instant counted once when syncs follow each other."""
    if points.empty:
        return 0.0
    s, e = union(points["ts"].to_numpy() + points["host_us"].to_numpy(),
                 points["ts"].to_numpy() + points["host_us"].to_numpy() + points["idle_after_us"].to_numpy())
    return float((e - s).sum())


def _name_matches(names: np.ndarray, pattern: re.Pattern[str]) -> np.ndarray:
    return np.fromiter((pattern.search(str(n)) is not None for n in names), dtype=bool, count=len(names))


def _device_busy(report: "Report") -> tuple[np.ndarray, np.ndarray]:
    t = report.table
    work = np.isin(t.kind, DEVICE_WORK_KINDS) & (t["device"] == report.device.index)
    return union(t["ts"][work], t["ts"][work] + t["dur"][work])


def _idle_after(end: float, busy_s: np.ndarray, busy_e: np.ndarray, limit: float) -> float:
    j = int(np.searchsorted(busy_s, end, side="right"))
    if j > 0 and busy_e[j - 1] > end:
        return 0.0  # the device was still busy (another stream): nothing was lost here
    resume = float(busy_s[j]) if j < len(busy_s) else limit
    return max(min(resume, limit) - end, 0.0)


class _Locator:
    """Where a sync happened, from the best the trace offers.

    A cell profiled with ``--stack`` records which cell line ran when
    (``run.line_marks``): that gives the exact line. 2021 traces keep a ``Call
    stack`` per operator with true line numbers. A live trace with stacks has
    Python function ranges, whose line numbers are not the calling line, so
    they give the first frame of user code by file and function. Without any
    of these, the enclosing operator chain (``## forward ## > aten::item``).
    """

    def __init__(self, report: "Report") -> None:
        self.report = report
        t = report.table
        run = report.run
        self.cell_lines = run.cell_source.splitlines() if run is not None and run.cell_source else []
        self.marks = run.line_marks if run is not None and report.raw_trace is not None else None
        self.base_ns = t.meta.base_time_ns
        # Python frames sorted by (thread, start), with their nesting, so the frames around
        # a sync are found by one binary search and a walk up, not a scan of every frame.
        py = np.flatnonzero(t.kind == Kind.PYTHON_FUNCTION)
        thread = t.thread[py]
        order = np.lexsort((t["ts"][py], thread))
        self.py = py[order]
        self.py_thread = thread[order]
        self.py_start = t["ts"][self.py]
        self.py_end = self.py_start + t["dur"][self.py]
        self.py_parent = parent_index(self.py_start, self.py_end, self.py_thread)

    def where(self, ev: int, pos: int) -> str:
        t = self.report.table
        ts = float(t["ts"][ev])
        if self.marks is not None:
            from ..analysis.lines import line_at
            from ..capture.lines import NOT_IN_CELL

            line = int(line_at(self.marks, np.array([ts]), self.base_ns)[0])
            if line != NOT_IN_CELL and 0 < line <= len(self.cell_lines):
                return f"cell line {line}: {self.cell_lines[line - 1].strip()}"
        stack = self._call_stack(pos)
        if stack is not None:
            user = _first_user_frame(stack.split(";"))
            if user is not None:
                return user
        m = _first_user_match(self._python_frames(int(t.thread[ev]), ts))
        if m is not None:
            return f"{m['file']}, in {m['func']}"
        return self._chain(pos, ev)

    def _python_frames(self, thread: int, ts: float) -> list[str]:
        """Names of the Python frames running on ``thread`` at ``ts``, innermost first."""
        lo = int(np.searchsorted(self.py_thread, thread, side="left"))
        hi = int(np.searchsorted(self.py_thread, thread, side="right"))
        k = lo + int(np.searchsorted(self.py_start[lo:hi], ts, side="right")) - 1
        while k >= lo and self.py_end[k] < ts:  # the last frame to start may have ended: go up
            k = int(self.py_parent[k])
        t = self.report.table
        frames = []
        while k >= 0:
            frames.append(str(t.names[t.name_code[self.py[k]]]))
            k = int(self.py_parent[k])
        return frames

    def _call_stack(self, pos: int) -> str | None:
        t, tree = self.report.table, self.report.operator_tree
        if t.call_stack is None or pos < 0:
            return None
        p = pos
        while p >= 0:
            stack = t.call_stack[tree.index[p]]
            if stack:
                return str(stack)
            p = int(tree.parent[p])
        return None

    def _chain(self, pos: int, ev: int) -> str:
        t, tree = self.report.table, self.report.operator_tree
        chain: list[str] = []
        p = pos
        while p >= 0 and len(chain) < 4:
            chain.append(str(t.names[t.name_code[tree.index[p]]]))
            p = int(tree.parent[p])
        if not chain:
            chain.append(str(t.names[t.name_code[ev]]))
        return " > ".join(reversed(chain))


def _first_user_match(frames: list[str]) -> re.Match[str] | None:
    """The innermost frame (``frames`` innermost first) outside library code."""
    for frame in frames:
        m = _FRAME.match(frame.strip())
        if m is not None and not _LIBRARY_FRAME.search(m["file"]):
            return m
    return None


def _first_user_frame(frames: list[str]) -> str | None:
    m = _first_user_match(frames)
    return None if m is None else m.group(0)


# -- CPU fixed cost per operator --------------------------------------------------------------
@dataclass(frozen=True)
class CpuOverhead:
    """On CPU: how much of a step is fixed cost that a larger batch would share out.

    The figures are those of one representative step: the first quartile by
    step time. A busy machine only ever adds time to a step (to its operators
    or to the gaps between them, at random), so the quieter steps show the
    costs best, while the very fastest may be a short last batch.
    """

    steps: int
    step_us: float  # step time without data waiting
    op_calls: float  # outermost operator calls per step, outside the optimizer
    op_us: float  # time inside those operators per step
    fixed_cost_us: float  # estimated fixed cost of one operator call
    optimizer_us: float  # optimizer step and zero_grad: the same for any batch size
    python_us: float  # step time outside any operator (Python, the framework)
    share: float  # median over steps of (fixed cost) / (step time without data waiting)


def cpu_overhead(report: "Report", quantile: float) -> CpuOverhead | None:
    """Fixed cost per step on a CPU run, from the profiled steps' operators.

    The outermost operators of the training thread (``aten::linear``, not the
    ``aten::addmm`` inside it) are the calls Python makes. The fast end of
    their durations (``quantile``) is what a call costs when it does almost no
    work, so ``calls x that``, plus the optimizer (its cost depends on the
    parameters, not the batch) and the time outside any operator, is the part
    of the step that does not grow with the batch.
    """
    t, tree = report.table, report.operator_tree
    if t is None or tree is None or report.has_device_activity:
        return None
    steps = report.trace_steps
    if steps.empty or bool(steps["synthetic"].iloc[0]):
        return None
    kinds = t.kind[tree.index]
    names = t.names[t.name_code[tree.index]].astype(str)
    is_loader = np.char.startswith(names, DATALOADER_PREFIX)
    is_op = (kinds == Kind.CPU_OP) & ~is_loader
    in_optimizer = has_ancestor(tree.parent, (kinds == Kind.USER_ANNOTATION) & np.char.startswith(names, "Optimizer."))
    loop_thread = int(steps["tid"].iloc[0])
    step = step_of(tree.start, steps)
    mine = (t["tid"][tree.index] == loop_thread) & (step >= 0)
    outer = is_op & ~has_ancestor(tree.parent, is_op | is_loader) & mine
    model = outer & ~in_optimizer
    if not model.any():
        return None
    lo = steps["start_us"].to_numpy(dtype=np.float64)
    hi = steps["end_us"].to_numpy(dtype=np.float64)

    def per_step(mask: np.ndarray) -> np.ndarray:
        return covered_in_windows(tree.start[mask], tree.end[mask], lo, hi)

    wait = per_step(is_loader & mine)
    ops = per_step(outer)
    optimizer = per_step(outer & in_optimizer)
    calls = np.bincount(np.searchsorted(steps["step"].to_numpy(), step[model]), minlength=len(steps)).astype(float)
    fixed_cost = float(np.quantile(tree.dur[model], quantile))
    compute = np.maximum(hi - lo - wait, 1e-9)
    python = np.maximum(compute - ops, 0.0)
    k = int(np.argsort(compute, kind="stable")[(len(compute) - 1) // 4])
    return CpuOverhead(
        steps=len(steps),
        step_us=float(compute[k]),
        op_calls=float(calls[k]),
        op_us=float(ops[k] - optimizer[k]),
        fixed_cost_us=fixed_cost,
        optimizer_us=float(optimizer[k]),
        python_us=float(python[k]),
        share=float(min((python[k] + optimizer[k] + calls[k] * fixed_cost) / compute[k], 1.0)),
    )


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
    run = report.run
    if run is not None and "mem_peak_bytes" in run.steps:
        steps = run.steps.iloc[1:] if len(run.steps) > 1 else run.steps  # step 0 creates optimizer state
        reserved = float(steps["mem_reserved_bytes"].max()) if "mem_reserved_bytes" in steps else None
        return DeviceMemory(float(total), float(steps["mem_allocated_bytes"].median()),
                            float(steps["mem_peak_bytes"].max()), reserved)
    if report.table is None:
        return None
    from ..analysis.memory import sampler_device

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
