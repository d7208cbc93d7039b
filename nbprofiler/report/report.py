"""``Report``: what one profiled run (or trace file) says, as pandas tables.

A Report never changes after it is built. Each table is computed on first
access by a pure analysis function and cached; renderers only read them.
The tables' functions live in one module per topic (``host_tables``,
``memory_tables``, ``device_tables``), which the Report declares in one place.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import numpy as np
import pandas as pd

from ..advice.memory_warnings import memory_warnings
from ..advice.rules import suggest
from ..analysis.breakdown import breakdown_shares
from ..analysis.launches import DELAY_THRESHOLD_US, launch_summary
from ..analysis.memory import sampler_device
from ..errors import TraceError
from ..render import bundle
from ..trace.parser import parse_trace
from ..trace.sources import read_trace_file
from ..trace.table import DeviceInfo, EventTable, Kind, TraceMeta
from ..trace.writers import free_path, holds_traces, write_tensorboard, write_trace
from . import device_tables
from . import distributed_tables
from . import host_tables
from . import memory_tables
from .export_names import default_paths
from .notes import is_partial, report_notes
from .origin import Kind as Source
from .origin import Origin
from .rank_summary import RankSummary, parse_file
from .read_only import read_only_table, table_lock
from .saved import save_report

if TYPE_CHECKING:
    from ..advice.suggestion import Suggestion
    from ..analysis.launches import LaunchSummary
    from ..options import ProfileOptions
    from ..records import LineMarks, LoaderRecord, RunRecord
    from .export_names import ExportPaths

_T = TypeVar("_T")


@dataclass(frozen=True)
class RankTraces:
    """Where each rank's whole trace is read from when ``Report.rank(n)`` or ``Report.save`` wants
    it: its trace file. A saved report reads its ranks' traces from its archive instead
    (``saved_reader.py``)."""

    def data(self, rank: RankSummary) -> bytes:
        """The rank's trace as recorded (JSON, decompressed)."""
        return read_trace_file(Path(rank.source_path)).data

    def report(self, rank: RankSummary) -> "Report":
        """The rank's complete Report, the same as loading its trace file alone."""
        return Report(parsed=parse_file(Path(rank.source_path)), load_notes=rank.load_notes,
                      origin=Origin(Source.TRACE_FILE, source_path=rank.source_path))


@dataclass(frozen=True, eq=False)
class Report:
    """A profile's tables and renderings.

    ``origin`` says where it came from (``report.origin``): a live run, a trace file, a folder
    of ranks, a saved report or the run history; ``run``, ``raw_trace``, ``source_path``,
    ``stored``, ``made_here`` and ``source_is_local`` read it. ``table`` is the recorded trace
    (empty when the run ended before any active step); ``run`` holds what a live run measured
    on every step (None for trace files); ``ranks`` maps rank to its ``RankSummary`` when a
    directory held several (``rank(n)`` gives rank n's whole Report, read from where
    ``rank_traces`` says). ``stored`` holds what the run history kept of a run
    (``nbprofiler.stored_run``): its tables, suggestions and notes, served as they were since
    there is no trace to recompute them from; ``lacks`` names the tables it cannot give.
    """

    origin: Origin = field(default_factory=lambda: Origin(Source.TRACE_FILE))
    parsed: EventTable | None = None  # the trace when it came parsed (files); else see ``table``
    ranks: Mapping[int, RankSummary] = field(default_factory=dict)
    load_notes: tuple[str, ...] = ()  # what ``load`` chose in a directory (the latest cycle), for ``notes``
    rank_traces: RankTraces = field(default_factory=RankTraces, repr=False)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_live(cls, table: EventTable | None, run: "RunRecord", raw_trace: bytes | None) -> "Report":
        """A live run's report; with ``table`` None, ``raw_trace`` is parsed on first use."""
        return cls(parsed=table, origin=Origin(Source.LIVE, run=run, raw_trace=raw_trace))

    @classmethod
    def from_trace(cls, table: EventTable, source_path: str,
                   ranks: Mapping[int, "RankSummary | Report"] | None = None) -> "Report":
        """A trace file's report; ``ranks`` given as Reports are kept as their summaries."""
        summaries = {n: r if isinstance(r, RankSummary) else RankSummary.of(n, r) for n, r in (ranks or {}).items()}
        kind = Source.RANKS if summaries else Source.TRACE_FILE
        return cls(parsed=table, origin=Origin(kind, source_path=source_path), ranks=summaries)

    def rank(self, number: int) -> "Report":
        """Rank ``number``'s complete Report: this report for its own rank (the lowest), any other
        parsed from its trace on first call and kept, so that only the ranks asked for hold events."""
        if number not in self.ranks:
            held = f"ranks {', '.join(map(str, sorted(self.ranks)))}" if self.ranks else "one trace, not several ranks"
            raise ValueError(f"no rank {number} in this report: it holds {held}")
        if number == min(self.ranks):
            return self
        cache = self.__dict__  # frozen: kept as cached_property keeps its values
        with table_lock(cache, "_rank_reports"):
            reports = cache.setdefault("_rank_reports", {})
            if number not in reports:
                reports[number] = self.rank_traces.report(self.ranks[number])
            return reports[number]

    # -- where it came from (``origin``), read here so that nothing else works it out ----
    @property
    def run(self) -> "RunRecord | None":
        """What a live run measured besides the trace; None for a trace file's report."""
        return self.origin.run

    @property
    def raw_trace(self) -> bytes | None:
        """The trace as recorded: a live run's, or a saved report's; None for a trace file's."""
        return self.origin.raw_trace

    @property
    def source_path(self) -> str | None:
        """The trace file the report was loaded from, or (a saved report) the one it was once: a label."""
        return self.origin.source_path

    @property
    def stored(self) -> Mapping[str, Any]:
        """What the run history kept of a stored run (``nbprofiler.history.stored``); else empty."""
        return self.origin.stored

    @property
    def made_here(self) -> bool:
        return self.origin.made_here

    @property
    def source_is_local(self) -> bool:
        return self.origin.source_is_local

    @property
    def ran_live(self) -> bool:
        """Whether this is a live run's report, made here or reopened (a saved file, the history):
        then the sampler's every step, the cell and its options are known."""
        return self.origin.run is not None

    def _recorded(self, read: Callable[["RunRecord"], _T]) -> _T | None:
        """What ``read`` takes from the live run's record; None for a trace file, which has none."""
        run = self.origin.run
        return None if run is None else read(run)

    @property
    def sampled_steps(self) -> pd.DataFrame | None:
        """Every step the cell ran, as the live sampler timed it (``RunRecord.steps``); None for a trace file."""
        return self._recorded(lambda run: run.steps)

    @property
    def loaders(self) -> "tuple[LoaderRecord, ...] | None":
        """The DataLoaders the live run iterated, each with its settings and waiting; None for a
        trace file, which only names a loader's iterator (``advice.measures.trace_loader_workers``)."""
        return self._recorded(lambda run: run.loaders)

    @property
    def cell_source(self) -> str | None:
        """The profiled cell's source, when a live run knows it."""
        return self._recorded(lambda run: run.cell_source)

    @property
    def cell_modules(self) -> tuple[str, ...] | None:
        """The names the cell calls that were nn.Modules when the live run ended (the names code may compile)."""
        return self._recorded(lambda run: run.cell_modules)

    @property
    def cell_filename(self) -> str | None:
        """The file name Python gave the cell's code, which the trace's call stacks name it by."""
        return self._recorded(lambda run: run.cell_filename)

    @property
    def cell_key(self) -> str | None:
        """Which cell ran, across runs (``notebook.cell_identity``): how the history and ``--compare``
        find the cell's runs."""
        return self._recorded(lambda run: run.cell_key)

    @property
    def notebook(self) -> str | None:
        """The notebook's path, when the front end named it to the live run."""
        return self._recorded(lambda run: run.notebook)

    @property
    def line_marks(self) -> "LineMarks | None":
        """The cell line each op ran from (``--stack``), when the live run recorded them."""
        return self._recorded(lambda run: run.line_marks)

    @property
    def run_options(self) -> "ProfileOptions | None":
        """The options the live run was profiled with; None for a trace file."""
        return self._recorded(lambda run: run.options)

    @property
    def sampler_device(self) -> str | None:
        """The device the live sampler measured memory on (``analysis.memory.sampler_device``)."""
        return self._recorded(lambda run: sampler_device(run.device))

    def add_run_note(self, note: str) -> None:
        """Add ``note`` to a live run's own notes after its report was made (the history could
        not keep the run), so that ``notes``, made again, say it; a trace file's report has none."""
        run = self.origin.run
        if run is not None:
            run.notes.append(note)
            self.__dict__.pop("notes", None)  # ``notes`` is a cached_property: made again with this note

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
        run = self.origin.run
        if run is not None:
            return run.device
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

    # -- the tables ------------------------------------------------------------------------
    # Each is one line here, its function in the module of its topic: ``host_tables`` (steps,
    # operators, the user's code), ``memory_tables``, ``device_tables`` (the device's work,
    # launches, FLOPs and roofline, copies, streams, collectives, ranks). A new table is a
    # function there and a line here: ``read_only_table`` for a table handed to the user,
    # ``cached_property`` for what the tables share. The order is the order ``lacks`` lists.
    trace_steps = read_only_table(host_tables.trace_steps)
    operator_tree = cached_property(host_tables.operator_tree)
    operators = read_only_table(host_tables.operators)
    lines = read_only_table(host_tables.lines)
    modules = read_only_table(host_tables.modules)
    flame = read_only_table(host_tables.flame)
    steps = read_only_table(host_tables.steps)
    cycles = read_only_table(host_tables.cycles)
    drift = read_only_table(host_tables.drift)
    phases = read_only_table(host_tables.phases)
    memory = read_only_table(memory_tables.memory)
    memory_steps = read_only_table(memory_tables.memory_steps)
    memory_by_operator = read_only_table(memory_tables.memory_by_operator)
    memory_growth = read_only_table(memory_tables.memory_growth)
    _allocation_owners = cached_property(memory_tables.allocation_owners)
    communication = read_only_table(device_tables.communication)
    rank_comparison = read_only_table(device_tables.rank_comparison)
    rank_steps = read_only_table(distributed_tables.rank_steps)
    stretched_steps = read_only_table(device_tables.stretched_steps)
    breakdown = read_only_table(device_tables.breakdown)
    step_window = cached_property(device_tables.step_window)
    summary = read_only_table(device_tables.summary)
    kernels = read_only_table(device_tables.kernels)
    syncs = read_only_table(device_tables.syncs)
    idle = read_only_table(device_tables.idle)
    launches = read_only_table(device_tables.launches)
    queue_length = read_only_table(device_tables.queue_length)
    _launch_pairs = cached_property(device_tables.launch_pairs)
    device_spec = cached_property(device_tables.device_spec)
    flops = read_only_table(device_tables.flops)
    roofline = read_only_table(device_tables.roofline)
    copies = read_only_table(device_tables.copies)
    stream_idle = read_only_table(device_tables.stream_idle)
    kernel_overlap = read_only_table(device_tables.kernel_overlap)
    collectives = read_only_table(device_tables.collectives)
    allocations = read_only_table(memory_tables.allocations)
    kernel_launch_delay = read_only_table(device_tables.kernel_launch_delay)
    kernel_roofline = read_only_table(device_tables.kernel_roofline)

    def operators_by_shape(self) -> pd.DataFrame:
        """The operator table grouped by name and input shapes (needs shapes in the trace)."""
        return self.operator_table(by_shape=True)

    def operator_table(self, by_shape: bool) -> pd.DataFrame:
        """``operators`` grouped by name, or by name and input shapes."""
        return host_tables.operator_table(self, by_shape)

    def breakdown_shares(self, per_step: bool = False) -> pd.Series | pd.DataFrame:
        """The breakdown as fractions of the step (adding up to 1): averaged over the
        steps as the plugin's overview gives them, or each step's own with ``per_step``."""
        return breakdown_shares(self.breakdown, per_step=per_step)

    def launch_summary(self, delay_threshold_us: float = DELAY_THRESHOLD_US) -> "LaunchSummary":
        """How many launches, how many waited over ``delay_threshold_us`` (HTA's default) to
        start, how many ran shorter than their launch call, and the delay's mean, median and p95."""
        return launch_summary(self.launches, delay_threshold_us)

    @cached_property
    def suggestions(self) -> tuple["Suggestion", ...]:
        """What to change, largest expected gain first, each with its evidence and code
        (``nbprofiler.advice``); one ``nothing_to_improve`` entry when no rule fires."""
        if "suggestions" in self.stored:  # as they were made when the run was kept
            return tuple(self.stored["suggestions"])
        return tuple(suggest(self))

    @cached_property
    def memory_warnings(self) -> tuple[str, ...]:
        """One sentence per memory series that rises step after step, worded as the memory-growth
        suggestion's evidence (``advice.memory_warnings``)."""
        return memory_warnings(self)

    @property
    def export_paths(self) -> "ExportPaths":
        """Where this report's exports go when no path is named: its own folder under
        ``nbprofiler_exports/`` (``export_names``), fixed the first time it is asked for."""
        return default_paths(self)

    @cached_property
    def notes(self) -> tuple[str, ...]:
        """Plain-language remarks about what the report does and does not cover."""
        if "notes" in self.stored:
            return tuple(self.stored["notes"])
        return tuple(report_notes(self))

    @property
    def partial(self) -> bool:
        """True when the run raised, was interrupted, or ended before its schedule finished."""
        return is_partial(self)

    # -- output --------------------------------------------------------------------------
    def export_chrome_trace(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the recorded trace (opens in Perfetto or chrome://tracing); ``.gz`` compresses.

        Without ``path`` it goes to this report's own export folder
        (``nbprofiler_exports/<notebook>_cell<key>_<time>/<same>.json.gz``) under a name no
        file has yet; a ``path`` you name is written as given, replacing a file already there.
        Returns the path written.
        """
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
        return save_report(self, free_path(default_paths(self).saved) if path is None else path)

    def to_text(self) -> str:
        return bundle.text(self)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The standalone static HTML report; written to ``path`` when given (its folder made
        if needed, a file already there replaced)."""
        html = bundle.html(self, standalone=path is not None)
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
        if directory is None:
            directory = free_path(default_paths(self).folder, holds_traces, folder=True)
        return write_tensorboard(self._trace_bytes(), directory)

    def explorer(self, tab: str = "Overview") -> Any:
        """The interactive explorer (an ipywidgets widget) for this report, opened on ``tab``."""
        return bundle.explorer(self, tab)

    def show(self) -> None:
        """Display the report again: the explorer in a widget front end, else the static report."""
        from IPython.display import display  # IPython: only where a report is shown

        display(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle.mimebundle(self, include, exclude)

    def __repr__(self) -> str:
        return f"<nbprofiler.Report {bundle.summary_line(self)}>"
