"""``Report``: what one profiled run (or trace file) says, as pandas tables.

A Report never changes after it is built. Each table is computed on first
access by a pure analysis function and cached; renderers only read them.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..analysis.event_kinds import of_kind
from ..analysis.launches import DELAY_THRESHOLD_US
from ..analysis.operators import OperatorTree, operator_table
from ..analysis.steps import dataloader_names, profiler_steps
from ..errors import TraceError
from ..trace.parser import parse_trace
from ..trace.sources import read_trace_file
from ..trace.table import DeviceInfo, EventTable, Kind, TraceMeta
from .rank_summary import RankSummary, RankTraces

if TYPE_CHECKING:
    from ..advice.suggestion import Suggestion
    from ..analysis.device_specs import DeviceSpec
    from ..analysis.launches import LaunchPairs, LaunchSummary
    from ..analysis.memory import Allocations
    from ..analysis.step_window import StepWindow
    from ..records import RunRecord
    from .export_names import ExportPaths



def _copy_on_write() -> bool:
    """Whether pandas copies a frame's data before a shallow copy of it is written (pandas 3, or
    2.x with the option on): then handing out a shallow copy costs nothing and protects the data."""
    return int(pd.__version__.split(".")[0]) >= 3 or pd.get_option("mode.copy_on_write") is True


def _table_lock(cache: dict[str, Any], slot: str) -> threading.RLock:
    """The lock of one table of one report, kept in the report's own cache: a report's table is
    built once, and no report ever waits on another's. ``dict.setdefault`` is atomic (one call
    into C, under the GIL, or the dict's own lock in a free-threaded build), so two threads asking
    at once get the same lock, with no lock shared between reports to make it. Re-entrant: a
    table's build may ask for another table, never for itself, so one thread never waits on itself."""
    locks: dict[str, threading.RLock] = cache.setdefault("_table_locks", {})
    return locks.setdefault(slot, threading.RLock())


class read_only_table:  # noqa: N801 - used as a decorator, like cached_property
    """A table computed once, on first access, and handed out as a copy of its own each time.

    ``report.operators.drop(columns=..., inplace=True)`` or a ``.loc`` assignment changes
    the user's copy, never the Report: every renderer, rule and later access sees the
    table as the analysis made it. Under pandas' copy-on-write the copy is shallow (no data
    is copied until someone writes); without it, a deep copy.

    A run reloaded from the history has no trace to compute from: the tables it kept are in
    ``report.stored`` and served from there instead.

    Each table is computed once even when two threads ask at once (a large report's bundle
    builds some tables on a second thread, ``render.background``): the second waits for the
    first's result on a lock of that report and table.
    """

    def __init__(self, build: Callable[[Any], Any]) -> None:
        self.build = build
        self.__doc__ = build.__doc__
        self.slot = ""
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_table_{name}"
        self.name = name

    def __get__(self, report: Any, owner: type | None = None) -> Any:
        if report is None:
            return self
        cache = report.__dict__  # a frozen dataclass: the cache bypasses __setattr__, as cached_property does
        if self.slot not in cache:
            with _table_lock(cache, self.slot):
                if self.slot not in cache:  # not made by another thread meanwhile
                    stored = getattr(report, "stored", None) or {}  # a Comparison keeps none
                    cache[self.slot] = stored[self.name] if self.name in stored else self.build(report)
        return handed_out(cache[self.slot])


def handed_out(value: Any) -> Any:
    """A table as handed to the user: a copy of its own (see ``read_only_table``)."""
    if isinstance(value, pd.DataFrame):
        return value.copy(deep=not _copy_on_write())
    return dict(value)


@dataclass(frozen=True, eq=False)
class Report:
    """A profile's tables and renderings.

    ``table`` is the recorded trace (None when the run ended before any active
    step); ``run`` holds what a live run measured on every step (None for
    trace files); ``ranks`` maps rank to its ``RankSummary`` when a directory held several
    (``rank(n)`` gives rank n's whole Report, read from where ``rank_traces`` says).
    ``stored`` holds what the run history kept of a run (``nbprofiler.stored_run``): its
    tables, suggestions and notes, served as they were since there is no trace to recompute
    them from; ``lacks`` names the tables it cannot give. ``made_here`` is True only for a
    live run captured by this process (``from_live``): the only report whose names and cell
    are the user's own, which suggestion code may copy unchecked and "Try it" may run.
    """

    parsed: EventTable | None = None  # the trace when it came parsed (files); else see ``table``
    run: "RunRecord | None" = None
    raw_trace: bytes | None = field(default=None, repr=False)
    # The trace file the report was loaded from, or (a saved report) the one it was once: a label.
    source_path: str | None = None
    ranks: Mapping[int, RankSummary] = field(default_factory=dict)
    load_notes: tuple[str, ...] = ()  # what ``load`` chose in a directory (the latest cycle), for ``notes``
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False)  # see nbprofiler.history.stored
    rank_traces: RankTraces = field(default_factory=RankTraces, repr=False)
    made_here: bool = False
    # Whether ``source_path`` is a trace file of this machine, read again for the trace's bytes
    # when it is saved or exported (a report of ``load``ed trace files). A saved report's is the
    # path on the machine that saved it: a label, never read, since a received file could name
    # any file of the recipient's.
    source_is_local: bool = False

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_live(cls, table: EventTable | None, run: "RunRecord", raw_trace: bytes | None) -> "Report":
        """A live run's report; with ``table`` None, ``raw_trace`` is parsed on first use."""
        return cls(parsed=table, run=run, raw_trace=raw_trace, made_here=True)

    @classmethod
    def from_trace(cls, table: EventTable, source_path: str,
                   ranks: Mapping[int, "RankSummary | Report"] | None = None) -> "Report":
        """A trace file's report; ``ranks`` given as Reports are kept as their summaries."""
        summaries = {n: r if isinstance(r, RankSummary) else RankSummary.of(n, r) for n, r in (ranks or {}).items()}
        return cls(parsed=table, source_path=source_path, ranks=summaries, source_is_local=True)

    def rank(self, number: int) -> "Report":
        """Rank ``number``'s complete Report: this report for its own rank (the lowest), any other
        parsed from its trace on first call and kept, so that only the ranks asked for hold events."""
        if number not in self.ranks:
            held = f"ranks {', '.join(map(str, sorted(self.ranks)))}" if self.ranks else "one trace, not several ranks"
            raise ValueError(f"no rank {number} in this report: it holds {held}")
        if number == min(self.ranks):
            return self
        cache = self.__dict__  # frozen: kept as cached_property keeps its values
        with _table_lock(cache, "_rank_reports"):
            reports = cache.setdefault("_rank_reports", {})
            if number not in reports:
                reports[number] = self.rank_traces.report(self.ranks[number])
            return reports[number]

    # -- the trace -----------------------------------------------------------------------
    @cached_property
    def _live_trace(self) -> tuple[EventTable | None, str | None]:
        """The live trace parsed, or the reason it could not be. Parsing waits until a
        table is asked for, so a run whose report nobody reads (``-q``) costs no parse,
        and a trace torch wrote badly costs its tables, never the run's per-step figures."""
        if self.parsed is not None or self.raw_trace is None:
            return self.parsed, None
        try:
            return parse_trace(self.raw_trace, source="live"), None
        except TraceError as exc:
            return None, str(exc)

    @cached_property
    def table(self) -> EventTable:
        """The recorded trace as an event table: an empty one when nothing was recorded
        (a run that ended before its first active step, or a trace torch wrote badly),
        so that every table of the report is there, empty, with its columns."""
        table = self._live_trace[0]
        if table is not None:
            return table
        return EventTable.empty(TraceMeta(source=self.source_path or "live", schema="current"))

    @property
    def has_trace(self) -> bool:
        """Whether there are trace events to analyse (the per-step figures of a live run
        are there without them)."""
        return len(self.table) > 0

    @property
    def trace_problem(self) -> str | None:
        """Why a live run's trace could not be read, when it could not."""
        return self._live_trace[1]

    # -- facts ---------------------------------------------------------------------------
    @cached_property
    def device(self) -> DeviceInfo:
        """The device the work ran on: the live device, or the trace's busiest GPU."""
        if self.run is not None:
            return self.run.device
        t = self.table
        if t.meta.devices:
            kernels = t.kind == Kind.KERNEL
            used = t["device"][kernels]
            by_index = {d.index: d for d in t.meta.devices}
            if len(used):
                values, counts = np.unique(used, return_counts=True)
                busiest = int(values[np.argmax(counts)])
                if busiest in by_index:
                    return by_index[busiest]
            if t.has_device:
                return t.meta.devices[0]
        return DeviceInfo(index=-1, name="CPU", kind="cpu")

    @property
    def has_device_activity(self) -> bool:
        return bool(self.stored.get("has_device_activity", self.table.has_device))

    @property
    def lacks(self) -> tuple[str, ...]:
        """The tables this report cannot give, empty here: a stored run's, which need the raw trace."""
        return tuple(self.stored.get("lacks", ()))

    @read_only_table
    def trace_steps(self) -> pd.DataFrame:
        """The profiled steps as the trace records them (host ranges)."""
        steps = profiler_steps(self.table)
        if self.run is not None:
            # A step the run never completed (the cell raised, broke out, or ended
            # mid-step) is in the trace but is no whole step: leave it out.
            steps = steps[steps["step"] < len(self.run.steps)].reset_index(drop=True)
        return steps

    @cached_property
    def operator_tree(self) -> OperatorTree:
        return OperatorTree(self.table)

    @read_only_table
    def operators(self) -> pd.DataFrame:
        """Per operator: ``name, calls, host_self_us, host_total_us, device_self_us, device_total_us``,
        with ``input_shapes`` after ``calls`` under ``--shapes``, and ``host_self_alloc_bytes,
        device_self_alloc_bytes`` (what its calls allocated themselves) when memory was recorded."""
        by_shape = self.run.options.shapes if self.run is not None else False
        return self.operator_table(by_shape)

    def operators_by_shape(self) -> pd.DataFrame:
        """The operator table grouped by name and input shapes (needs shapes in the trace)."""
        return self.operator_table(by_shape=True)

    def operator_table(self, by_shape: bool) -> pd.DataFrame:
        """``operators`` grouped by name, or by name and input shapes."""
        from ..analysis.memory import self_allocated_bytes

        return operator_table(self.operator_tree, by_shape=by_shape,
                              memory=self_allocated_bytes(self.operator_tree, self._allocation_owners))

    @cached_property
    def _allocation_owners(self) -> "Allocations":
        from ..analysis.memory import allocation_owners

        return allocation_owners(self.operator_tree)

    # -- attribution to the user's code (nbprofiler.analysis.lines / modules) --------------
    @read_only_table
    def lines(self) -> pd.DataFrame:
        """Per line of the profiled cell (``--stack``): ``line, source, host_us, device_us``.

        One row per line whose torch ops took time, largest first. Empty for trace
        files and runs without ``--stack``: only a live run knows the cell's lines.
        """
        from ..analysis.lines import LINE_COLUMNS, cell_lines

        run = self.run
        if run is None or run.line_marks is None:
            return pd.DataFrame(columns=LINE_COLUMNS)
        return cell_lines(self.operator_tree, run.line_marks, run.cell_source or "", self.table.meta.base_time_ns)

    @read_only_table
    def modules(self) -> pd.DataFrame:
        """Per ``nn.Module`` (``--modules`` or ``--stack``), a tree in call order:
        ``module, parent, type, depth, calls, forward_host_us, forward_device_us,
        backward_host_us, backward_device_us`` (each including its submodules)."""
        from ..analysis.modules import module_table

        return module_table(self.table, self.operator_tree)

    @read_only_table
    def steps(self) -> pd.DataFrame:
        """One row per step: ``step, phase, wall_ms, dataloader_ms`` and memory columns.

        Live runs list every step the cell ran (all phases); trace files list the
        profiled steps, all ``active``.
        """
        if self.run is not None:
            return self.run.steps
        steps = self.trace_steps
        dl = self._dataloader_ms_by_step(steps)
        return pd.DataFrame(
            {
                "step": steps["step"].to_numpy(),
                "phase": "active",
                "wall_ms": (steps["end_us"] - steps["start_us"]).to_numpy() / 1e3,
                "dataloader_ms": dl,
            }
        )

    def _dataloader_ms_by_step(self, steps: pd.DataFrame) -> np.ndarray:
        from ..analysis.steps import step_of

        t = self.table
        if steps.empty:
            return np.zeros(len(steps))
        is_dl = dataloader_names(t)[t.name_code]
        is_dl &= of_kind(t.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION))
        which = step_of(t["ts"][is_dl], steps)
        sums = pd.Series(t["dur"][is_dl]).groupby(which).sum()
        return np.array([sums.get(s, 0.0) / 1e3 for s in steps["step"]])

    # -- host phases, memory, communication, ranks (analysis.phases / memory / communication / ranks)
    @read_only_table
    def phases(self) -> pd.DataFrame:
        """Per step, host µs in ``dataloader, forward, backward, optimizer, other`` and
        ``total`` (the breakdown that means something on CPU-only runs). Shares: ``phase_shares``."""
        from ..analysis.phases import step_phases

        return step_phases(self.operator_tree, self.trace_steps)

    @read_only_table
    def memory(self) -> pd.DataFrame:
        """The ``[memory]`` timeline: ``ts, device, allocated_bytes, reserved_bytes, delta_bytes, reconstructed``."""
        from ..analysis.memory import memory_timeline

        return memory_timeline(self.table)

    @read_only_table
    def memory_steps(self) -> pd.DataFrame:
        """Per step and device: allocated at start and end, peaks; with the live sampler's
        per-step memory columns joined (every step the cell ran) on a live run."""
        from ..analysis.memory import memory_steps, sampler_device

        if self.run is None:
            return memory_steps(self.memory, self.trace_steps)
        return memory_steps(self.memory, self.trace_steps, self.run.steps, sampler_device(self.run.device))

    @read_only_table
    def memory_by_operator(self) -> pd.DataFrame:
        """Per operator and device: ``allocations, allocated_bytes, held_bytes`` (held at the step's end)."""
        from ..analysis.memory import memory_by_operator

        return memory_by_operator(self.operator_tree, self.trace_steps, self._allocation_owners)

    @read_only_table
    def memory_growth(self) -> pd.DataFrame:
        """Memory that rises step after step (a leak): slope in bytes/step and ``flagged``, per series."""
        from ..analysis.memory import growth_series, memory_growth, sampler_device

        device = None if self.run is None else sampler_device(self.run.device)
        return memory_growth(growth_series(self.memory_steps, device))

    @read_only_table
    def communication(self) -> pd.DataFrame:
        """Per step: NCCL/gloo collectives' count, µs, share of the step, overlap with compute."""
        from ..analysis.communication import step_communication

        return step_communication(self.table, self.stretched_steps)

    @read_only_table
    def rank_comparison(self) -> pd.DataFrame:
        """One row per rank of ``ranks``: mean breakdown, communication and compute per step,
        and straggler flags with a reason (from each rank's summary: no rank's events are read).
        Empty for a single-rank report."""
        from ..analysis.ranks import rank_comparison

        return rank_comparison({r: rep.breakdown for r, rep in self.ranks.items()},
                               {r: rep.communication for r, rep in self.ranks.items()})

    # -- GPU-aware analysis (nbprofiler.analysis.breakdown / gpu / sync) ------------------
    @read_only_table
    def stretched_steps(self) -> pd.DataFrame:
        """The steps the breakdown, summary and idle tables use: host ranges stretched
        to cover the device work they launched, trailing incomplete steps dropped."""
        from ..analysis.breakdown import stretched_steps

        return stretched_steps(self.table, self.trace_steps)

    @read_only_table
    def breakdown(self) -> pd.DataFrame:
        """Per step, µs by category: ``step, kernel, memcpy, memset, communication,
        runtime, dataloader, cpu_exec, other, total``. Shares: ``breakdown_shares()``."""
        from ..analysis.breakdown import step_breakdown

        return step_breakdown(self.table, self.stretched_steps)

    def breakdown_shares(self, per_step: bool = False) -> pd.Series | pd.DataFrame:
        """The breakdown as fractions of the step (adding up to 1): averaged over the
        steps as the plugin's overview gives them, or each step's own with ``per_step``."""
        from ..analysis.breakdown import breakdown_shares

        return breakdown_shares(self.breakdown, per_step=per_step)

    @cached_property
    def step_window(self) -> "StepWindow":
        """The steps every mean of the report is over, and their average time: the one
        definition of "the step" that the title, overview and suggestions share."""
        from ..analysis.step_window import step_window

        return step_window(self.stretched_steps, None if self.run is None else self.run.steps)

    @read_only_table
    def summary(self) -> dict[str, Any]:
        """``avg_step_us, steps, gpu_utilization, sm_efficiency, achieved_occupancy,
        tensor_core_share, batches_per_step, samples_per_step, samples_per_s``; device
        metrics are None without device activity, throughput None where no DataLoader
        batch was seen (trace files). ``avg_step_us`` is ``step_window``'s. FLOPs and MFU:
        ``flops_per_step, achieved_flops_per_s, mfu, mfu_dtype, mfu_peak_is_estimate,
        flops_unknown_calls`` (``_flop_summary``)."""
        from ..analysis.gpu import gpu_summary
        from ..analysis.step_window import throughput

        summary = gpu_summary(self.table, self.stretched_steps, self.device.index)
        window = self.step_window
        summary["avg_step_us"] = window.avg_step_us
        summary["steps"] = len(window.steps)
        rate = throughput(window, None if self.run is None else self.run.steps)
        summary.update(batches_per_step=rate.batches_per_step, samples_per_step=rate.samples_per_step,
                       samples_per_s=rate.samples_per_s)
        summary.update(self._flop_summary(window))
        return summary

    def _flop_summary(self, window: "StepWindow") -> dict[str, Any]:
        """``flops_per_step, achieved_flops_per_s, mfu, mfu_dtype, mfu_peak_is_estimate,
        flops_unknown_calls`` (``analysis.flops.flop_summary``). The peak is the spec sheet's
        for the device's dtype; on a live CPU run (the CPU that ran it is this one) an
        estimate from ``/proc/cpuinfo``; None for a trace file's CPU or an unknown device."""
        from ..analysis.device_specs import DTYPES
        from ..analysis.flops import cpu_peak_flops, flop_summary
        from ..machine import process_cpus

        spec, device = self.device_spec, self.device
        peaks: dict[str, float | None] = {} if spec is None else {d: spec.peak_flops(d) for d in DTYPES}
        if device.kind == "cpu" and self.run is not None:
            try:
                peaks = cpu_peak_flops(Path("/proc/cpuinfo").read_text(), process_cpus()) or {}
            except OSError:
                pass
        cc = device.compute_capability if device.kind == "cuda" else None
        return flop_summary(self.flops, window.of(self.stretched_steps), peaks, spec is None and bool(peaks), cc)

    @read_only_table
    def kernels(self) -> pd.DataFrame:
        """Per kernel name: calls, times, blocks per SM, occupancy, tensor cores, launching operator."""
        from ..analysis.gpu import kernel_table

        return kernel_table(self.operator_tree)

    @read_only_table
    def syncs(self) -> pd.DataFrame:
        """Per step and synchronising call (``cudaStreamSynchronize``, ``aten::item``, ...): calls and µs."""
        from ..analysis.sync import sync_calls

        return sync_calls(self.table, self.trace_steps)

    @read_only_table
    def idle(self) -> pd.DataFrame:
        """Per step, device idle µs split into waiting for the host and other idle time."""
        from ..analysis.sync import idle_time

        return idle_time(self.table, self.stretched_steps, self.device.index)

    @read_only_table
    def launches(self) -> pd.DataFrame:
        """One row per kernel, copy and memset a runtime call launched, over the whole trace:
        ``kind, name, stream, runtime_us, kernel_us, launch_delay_us, device, start_us, runtime``,
        as Holistic Trace Analysis counts them (``analysis.launches``)."""
        from ..analysis.launches import launch_table

        return launch_table(self.table, self._launch_pairs)

    def launch_summary(self, delay_threshold_us: float = DELAY_THRESHOLD_US) -> "LaunchSummary":
        """How many launches, how many waited over ``delay_threshold_us`` (HTA's default) to
        start, how many ran shorter than their launch call, and the delay's mean, median and p95."""
        from ..analysis.launches import launch_summary

        return launch_summary(self.launches, delay_threshold_us)

    @read_only_table
    def queue_length(self) -> pd.DataFrame:
        """Per device and stream, the launches not yet started (HTA's queue length):
        ``device, stream, mean, max, p25, p50, p75`` over the queue's changes."""
        from ..analysis.launches import queue_length

        return queue_length(self.table, self._launch_pairs)

    @cached_property
    def _launch_pairs(self) -> "LaunchPairs":
        """``analysis.launches.launch_pairs``: the launches and the queue lengths share it."""
        from ..analysis.launches import launch_pairs

        return launch_pairs(self.table)

    @cached_property
    def device_spec(self) -> "DeviceSpec | None":
        """The device's spec-sheet figures (memory and host-link bandwidth, dense peaks per dtype),
        None for a CPU or a device the table does not know (``analysis.device_specs``)."""
        from ..analysis.device_specs import device_spec

        return None if self.device.kind == "cpu" else device_spec(self.device.name)

    @read_only_table
    def flops(self) -> pd.DataFrame:
        """One row per counted matmul, convolution and attention call (forward and backward):
        ``name, input_shapes, dtype, flops, bytes, source, tensor_cores, start_us, device_us,
        host_us``; FLOPs from ``with_flops`` or the shapes (``--shapes``), NaN where unknown
        (``analysis.flops``)."""
        from ..analysis.flops import flop_calls

        return flop_calls(self.operator_tree)

    @read_only_table
    def roofline(self) -> pd.DataFrame:
        """The hot FLOP operators against the device's ridge point: ``operator, dtype, calls, flops,
        bytes, intensity, ridge, time_us, achieved_flops_per_s, bound`` ("compute-bound",
        "memory-bound", "unknown"; ``analysis.roofline.WHAT_FOLLOWS`` says what each means)."""
        from ..analysis.roofline import roofline

        device = self.device
        return roofline(self.flops, self.device_spec, device.compute_capability if device.kind == "cuda" else None)

    @read_only_table
    def copies(self) -> pd.DataFrame:
        """Copies per direction and host memory kind over the whole trace: ``direction, host_memory,
        copies, bytes, time_us, gb_per_s, link_gb_per_s, share_of_link`` (``analysis.copies``)."""
        from ..analysis.copies import copy_table

        return copy_table(self.table, self.device_spec)

    @read_only_table
    def stream_idle(self) -> pd.DataFrame:
        """Per device and stream over the profiled steps: busy and idle µs, the idle split into
        kernel wait, host wait and other as HTA splits it (``analysis.streams``)."""
        from ..analysis.streams import stream_idle

        return stream_idle(self.table, self.stretched_steps)

    @read_only_table
    def kernel_overlap(self) -> pd.DataFrame:
        """Per device, the µs each pair of compute, communication and memory work ran at once
        in the profiled steps; the diagonal is each one's busy time (``analysis.streams``)."""
        from ..analysis.streams import kernel_overlap

        return kernel_overlap(self.table, self.stretched_steps)

    @read_only_table
    def collectives(self) -> pd.DataFrame:
        """Per collective, dtype and group size: calls, bytes, kernel time, latency, nccl-tests'
        algorithm and bus bandwidth, and the time no compute hid (``analysis.collectives``)."""
        from ..analysis.collectives import collective_calls, collective_table

        return collective_table(collective_calls(self.operator_tree))

    @read_only_table
    def allocations(self) -> pd.DataFrame:
        """Every allocation: size, when made and freed (NaN: still held), live at the device's
        peak, step, operator, and cell line under ``--stack`` (``analysis.allocations``)."""
        from ..analysis.allocations import allocation_table

        marks = None if self.run is None else self.run.line_marks
        return allocation_table(self.operator_tree, self._allocation_owners, self.memory, self.trace_steps,
                                marks, self.table.meta.base_time_ns)

    @read_only_table
    def kernel_launch_delay(self) -> pd.DataFrame:
        """Per kernel name, the mean launch delay of the kernels a launch call put on a stream:
        ``name, mean_launch_delay_us`` (``analysis.launches``); the Kernels views join it by name."""
        from ..analysis.launches import kernel_launch_delay

        return kernel_launch_delay(self.launches)

    @read_only_table
    def kernel_roofline(self) -> pd.DataFrame:
        """Per kernel name, the roofline figures of the FLOP call that launched it:
        ``name, achieved_flops_per_s, bound`` (``analysis.roofline``): a trace gives a kernel no
        FLOP count of its own; the Kernels views join it by name."""
        from ..analysis.flops import kernel_flop_calls
        from ..analysis.roofline import kernel_roofline

        return kernel_roofline(self.roofline, kernel_flop_calls(self.operator_tree))

    @cached_property
    def memory_warnings(self) -> tuple[str, ...]:
        """One sentence per memory series that rises step after step, worded as the memory-growth
        suggestion's evidence (``advice.memory_warnings``)."""
        from ..advice.memory_warnings import memory_warnings

        return memory_warnings(self)

    @property
    def export_paths(self) -> "ExportPaths":
        """Where this report's exports go when no path is named: its own folder under
        ``nbprofiler_exports/`` (``export_names``), fixed the first time it is asked for."""
        from .export_names import default_paths

        return default_paths(self)

    @cached_property
    def suggestions(self) -> tuple["Suggestion", ...]:
        """What to change, largest expected gain first, each with its evidence and code
        (``nbprofiler.advice``); one ``nothing_to_improve`` entry when no rule fires."""
        if "suggestions" in self.stored:  # as they were made when the run was kept
            return tuple(self.stored["suggestions"])
        from ..advice.rules import suggest

        return tuple(suggest(self))

    @cached_property
    def notes(self) -> tuple[str, ...]:
        """Plain-language remarks about what the report does and does not cover."""
        if "notes" in self.stored:
            return tuple(self.stored["notes"])
        from .notes import report_notes

        return tuple(report_notes(self))

    @property
    def partial(self) -> bool:
        """True when the run raised, was interrupted, or ended before its schedule finished."""
        from .notes import is_partial

        return is_partial(self)

    # -- output --------------------------------------------------------------------------
    def export_chrome_trace(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the recorded trace (opens in Perfetto or chrome://tracing); ``.gz`` compresses.

        Without ``path`` it goes to this report's own export folder
        (``nbprofiler_exports/<notebook>_cell<key>_<time>/<same>.json.gz``) under a name no
        file has yet; a ``path`` you name is written as given, replacing a file already there.
        Returns the path written.
        """
        from ..trace.writers import free_path, write_trace
        from .export_names import default_paths

        return write_trace(self._trace_bytes(), free_path(default_paths(self).trace) if path is None else path)

    def _trace_bytes(self, action: str = "export") -> bytes:
        """The trace's JSON: the live run's or the saved report's, or the trace file's read again
        (uncompressed); a ``TraceError`` that says why when there is none to ``action``."""
        if self.raw_trace is not None:
            return self.raw_trace
        reason = self.no_trace_reason
        if reason is not None:
            raise TraceError(None, f"this report has no trace to {action}: {reason}")
        return read_trace_file(Path(str(self.source_path))).data

    @property
    def no_trace_reason(self) -> str | None:
        """Why there is no trace to export (None when there is one), for the export's error
        and the Export tab's disabled buttons."""
        if self.raw_trace is not None:
            return None
        if self.source_path is not None and self.source_is_local:
            if Path(self.source_path).is_file():
                return None
            return f"its trace file is gone ({self.source_path} was moved or deleted); load it from where it is now"
        if self.stored:
            return "the run history keeps a run's tables, not its trace"
        return "the run ended before any active step, so no trace was recorded"

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the whole report to one ``.nbprof`` file: the trace as recorded and what the
        run measured (steps, loaders, cell lines, notes), which a trace file alone cannot
        give back. ``nbprofiler.load(path)`` reads it into an equal Report (format:
        ``nbprofiler.report.saved``). Without ``path`` it goes to this report's export folder
        under a name no file has yet; a ``path`` you name replaces a file already there."""
        from ..trace.writers import free_path
        from .export_names import default_paths
        from .saved import save_report

        return save_report(self, free_path(default_paths(self).saved) if path is None else path)

    def to_text(self) -> str:
        from ..render.text import render_text

        return render_text(self)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The standalone static HTML report; written to ``path`` when given (its folder made
        if needed, a file already there replaced)."""
        from ..render.html import render_html

        html = render_html(self, standalone=path is not None)
        if path is not None:
            target = Path(path).expanduser()
            target.parent.mkdir(parents=True, exist_ok=True)  # as the other exports do
            target.write_text(html, encoding="utf-8")
        return html

    def export_tensorboard(self, directory: str | os.PathLike[str] | None = None) -> Path:
        """Write the trace into ``directory`` the way ``torch.profiler.tensorboard_trace_handler``
        does (``<host>_<pid>.<ns>.pt.trace.json``), so TensorBoard and ``nbprofiler.load`` read it.
        Returns the file written.

        Without ``directory`` it goes to this report's export folder, or to ``<folder>-2`` ...
        when that already holds a trace, so ``nbprofiler.load(folder)`` reads back this run
        alone. A ``directory`` you name gets one more file beside any traces already there, as
        the handler does (``load`` then reads the latest one of this process and says so).
        """
        from ..trace.writers import free_path, holds_traces, write_tensorboard
        from .export_names import default_paths

        if directory is None:
            directory = free_path(default_paths(self).folder, holds_traces, folder=True)
        return write_tensorboard(self._trace_bytes(), directory)

    def explorer(self, tab: str = "Overview") -> Any:
        """The interactive explorer (an ipywidgets widget) for this report, opened on ``tab``."""
        from ..render.widget import Explorer

        explorer = Explorer(self)
        explorer.show_tab(tab)
        return explorer

    def show(self) -> None:
        """Display the report again: the explorer in a widget front end, else the static report."""
        from IPython.display import display

        display(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..render.bundle import mimebundle

        return mimebundle(self, include, exclude)

    def __repr__(self) -> str:
        from ..render.text import render_summary_line

        return f"<nbprofiler.Report {render_summary_line(self)}>"
