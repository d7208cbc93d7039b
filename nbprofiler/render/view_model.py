"""What one report shows, made once and read by every view: its headline, its breakdown, its
operator rows, its suggestions in order, its memory figures, its cell lines, its Hardware view, its
kernel table, which tabs it shows, its charts, its timeline, its "Try it" token and when it was first written out.

The text, the HTML, the explorer and the saved payload each show these; the view model makes each
of them once per report (``views``, ``hardware``, ``charts`` and ``timeline_data`` are its
builders), so that every view shows the same one and none pays for it twice. What it made is
render's only memory of a report: kept per Report (and per Comparison) in one
``WeakKeyDictionary``, so it goes with the report. ``of(report)`` is a light handle on the report
and that memory; the memory holds nothing of the report itself, since a reference from a value to
its key would keep the report alive for good (so it keeps what a builder returned, never a
builder bound to the handle).

What a view model holds is a view of the report, not analysis of its trace: what the
report computes from the trace are its tables, which the builders here only read.
What it hands out is shared by every view: a view reads it and makes its own from it, never
changes it (lists are kept as tuples, the headline as a read-only mapping).

Threads: each part is made once even when two threads ask at once (a report may be shown from
two threads), the second waiting for the first on a lock of that report and part. The timeline
may be built on a second thread (``background``): ``expect_timeline`` hands over its future, and
``timeline_payload`` waits for it and raises what it raised. A part asks only for parts it is made
from (the memory figures for the memory device), never in a circle, and that second thread asks the
view model for nothing: no two threads ever wait on each other.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import charts, cycles, distributed, flame, hardware, origin, timeline_data, views
from .tabs import Tab, report_tabs

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pandas as pd

    from ..advice.suggestion import Suggestion
    from ..report import Report
    from ..report.comparison import Comparison

T = TypeVar("T")
Payload = dict[str, Any]

# Per Report or Comparison, what its view model made so far, by name.
_made: "weakref.WeakKeyDictionary[object, dict[str, Any]]" = weakref.WeakKeyDictionary()


class _ViewModel:
    """What is made once for one owner (a Report or a Comparison), by name."""

    def __init__(self, owner: object) -> None:
        made = _made.get(owner)
        # setdefault is one dict operation: two threads asking at once share one memory.
        self._made = made if made is not None else _made.setdefault(owner, {})

    def _once(self, key: str, make: Callable[[], T]) -> T:
        """What ``make()`` returned the first time ``key`` was asked for, by any thread."""
        if key not in self._made:
            with self._lock(key):
                if key not in self._made:  # not made by another thread meanwhile
                    self._made[key] = make()
        return cast(T, self._made[key])

    def _lock(self, key: str) -> threading.RLock:
        """The lock of one part: ``dict.setdefault`` is atomic, so two threads asking at once get the
        same one, and no owner ever waits on another's. Re-entrant: a part's builder may ask for
        other parts (the memory figures for the memory device), never for itself."""
        locks: dict[str, threading.RLock] = self._made.setdefault("locks", {})
        return locks.setdefault(key, threading.RLock())


class ReportViewModel(_ViewModel):
    """What one report shows (see the module docstring)."""

    def __init__(self, report: "Report") -> None:
        super().__init__(report)
        self.report = report

    @property
    def headline(self) -> Mapping[str, Any]:
        """The overview's numbers (``views.headline``)."""
        return self._once("headline", lambda: MappingProxyType(views.headline(self.report)))

    @property
    def throughput_detail(self) -> str | None:
        """What the headline's samples/s counts (``views.throughput_detail``)."""
        return self._once("throughput_detail", lambda: views.throughput_detail(self.headline))

    @property
    def mfu_detail(self) -> str | None:
        """What the headline's MFU is over (``views.mfu_detail``)."""
        return self._once("mfu_detail", lambda: views.mfu_detail(self.headline))

    @property
    def breakdown(self) -> "tuple[str, pd.DataFrame]":
        """The breakdown the run gets, device categories or host phases (``views.breakdown_parts``)."""
        return self._once("breakdown", lambda: views.breakdown_parts(self.report))

    def operators(self, top: int | None = None) -> "pd.DataFrame":
        """The operator rows shown, by ``--sort``, cut to ``--top`` or ``top`` (``views.operator_view``)."""
        return self._once(f"operators.{top}", lambda: views.operator_view(self.report, top))

    @property
    def suggestions(self) -> "tuple[Suggestion, ...]":
        """The suggestions, largest expected gain first (``views.ranked_suggestions``)."""
        return self._once("suggestions", lambda: tuple(views.ranked_suggestions(self.report)))

    @property
    def memory_device(self) -> str | None:
        """The device the memory views describe (``views.memory_device``)."""
        return self._once("memory_device", lambda: views.memory_device(self.report))

    @property
    def memory_figures(self) -> tuple[str, ...]:
        """The memory device's headline figures (``views.memory_figures``); none without a device."""
        device = self.memory_device
        return self._once("memory_figures",
                          lambda: () if device is None else tuple(views.memory_figures(self.report, device)))

    @property
    def phase_summary(self) -> "pd.DataFrame":
        """The steps per schedule phase (``views.phase_summary``)."""
        return self._once("phase_summary", lambda: views.phase_summary(self.report.steps))

    @property
    def lines(self) -> "pd.DataFrame":
        """Every line of the cell with its time (``views.line_rows``)."""
        return self._once("lines", lambda: views.line_rows(self.report))

    @property
    def lines_absent(self) -> str:
        """Why the report has no cell lines (``views.lines_absent``)."""
        return self._once("lines_absent", lambda: views.lines_absent(self.report))

    @property
    def modules_absent(self) -> str:
        """Why the report has no module tree (``views.modules_absent``)."""
        return self._once("modules_absent", lambda: views.modules_absent(self.report))

    @property
    def tabs(self) -> tuple[Tab, ...]:
        """Every view with whether it has content and how a re-run would add it (``tabs.report_tabs``)."""
        device = self.memory_device
        return self._once("tabs", lambda: report_tabs(self.report, device))

    @property
    def hardware(self) -> hardware.HardwareView:
        """The Hardware view (``hardware.hardware_view``)."""
        return self._once("hardware", lambda: hardware.hardware_view(self.report))

    @property
    def distributed(self) -> distributed.DistributedView | None:
        """The Distributed view, None without distributed data (``distributed.distributed_view``)."""
        return self._once("distributed", lambda: distributed.distributed_view(self.report))

    @property
    def cycles(self) -> cycles.CyclesView | None:
        """The Cycles view, None for a run without cycles (``cycles.cycles_view``)."""
        return self._once("cycles", lambda: cycles.cycles_view(self.report))

    @property
    def kernels(self) -> "pd.DataFrame":
        """Every kernel as the Kernels tables show it (``hardware.kernel_rows``)."""
        return self._once("kernels", lambda: hardware.kernel_rows(self.report))

    def chart_spec(self, name: str) -> charts.Spec | None:
        """The named chart as a JSON-safe spec (``charts.build``), or None when it has no data."""
        return self._once(f"chart.{name}", lambda: charts.build(self, name))

    def chart_svg(self, name: str) -> str | None:
        """The named chart as static inline SVG markup (no script, no network), or None without data."""
        return self._once(f"chart.{name}.svg", lambda: charts.svg(self.chart_spec(name)))

    def chart_bundle(self, name: str) -> Payload | None:
        """``{CHART_MIME: spec, "text/html": svg}``: what a front end shows, the SVG where it lacks the extension."""
        return charts.display_bundle(self.chart_spec(name), self.chart_svg(name))

    @property
    def flame(self) -> flame.FlameView | None:
        """The flame graph's boxes, capped (``flame.flame_view``); None without operator time."""
        return self._once("flame", lambda: flame.flame_view(self.report))

    def flame_svg(self, metric: str) -> str:
        """The flame graph by ``metric`` (``host_us`` or ``device_us``) as static SVG (``flame.flame_svg``)."""
        view = self.flame
        return self._once(f"flame.{metric}.svg", lambda: "" if view is None else flame.flame_svg(view, metric))

    def flame_payload(self) -> Payload | None:
        """The flame graph as the extension draws it (``flame.flame_payload``)."""
        return self._once("flame.payload", lambda: flame.flame_payload(self.flame))

    def flame_bundle(self) -> Payload | None:
        """The flame graph as a display bundle, its static section the fallback (``flame.display_bundle``)."""
        return flame.display_bundle(self.flame_payload(), flame.flame_section(self))

    def timeline_payload(self) -> Payload | None:
        """The Timeline payload the live explorer draws (``timeline_data``, at most
        ``MAX_TIMELINE_EVENTS`` blocks), None when the report has no trace events. When the saved
        one merged nothing, it is the same payload, and is reused."""
        def made() -> Payload | None:
            saved = self._made.get("timeline.saved") if "timeline.saved.pending" not in self._made else None
            if saved is not None and saved["aggregated"] is None:
                return saved
            return timeline_data.build(self.report)

        return self._once("timeline", made)

    def saved_timeline_payload(self) -> Payload | None:
        """The Timeline the saved report keeps (its payload, in the notebook file): at most
        ``SAVED_TIMELINE_EVENTS`` blocks, so that a notebook holding a million-event trace's report
        stays a few MB; the live payload itself when it is built and small enough. Where it is being
        built on another thread (``expect_timeline``), this waits for that build, and raises what it
        raised."""
        def made() -> Payload | None:
            pending = self._made.get("timeline.saved.pending")
            if pending is not None:
                return pending.result()
            live = self._made.get("timeline")
            small = live is None or live["events"]["n"] <= timeline_data.SAVED_TIMELINE_EVENTS
            if "timeline" in self._made and small:
                return live
            return timeline_data.build(self.report, saved=True)

        payload = self._once("timeline.saved", made)
        self._made.pop("timeline.saved.pending", None)  # after the result: a Ctrl-C in the wait leaves the build
        return payload

    def timeline_bundle(self) -> Payload | None:
        """The Timeline as a display bundle (``timeline_data.display_bundle``)."""
        return timeline_data.display_bundle(self.timeline_payload())

    @property
    def timeline_started(self) -> bool:
        """Whether the saved timeline is built, or being built."""
        return "timeline.saved" in self._made or "timeline.saved.pending" in self._made

    def expect_timeline(self, pending: "Future[Payload | None]") -> None:
        """The saved timeline is the result of ``pending`` (``timeline_data.build(report, saved=True)``
        run on another thread)."""
        self._made["timeline.saved.pending"] = pending

    @property
    def token(self) -> str | None:
        """The "Try it" token of a report made by this kernel (``origin``), the same for each
        rendering; None for any other report."""
        return self._once("token", lambda: origin.issue() if self.report.made_here else None)

    @property
    def first_written(self) -> str:
        """When the report was first written out, as ISO time: a live run's first payload is
        written as its loop ends, and a later display keeps that time."""
        return self._once("first_written", lambda: datetime.now().astimezone().isoformat(timespec="seconds"))


class ComparisonViewModel(_ViewModel):
    """What one comparison shows: its side-by-side breakdown chart."""

    def __init__(self, comparison: "Comparison") -> None:
        super().__init__(comparison)
        self.comparison = comparison

    def chart_spec(self) -> charts.Spec | None:
        return self._once("compare_breakdown", lambda: charts.comparison_spec(self.comparison))

    def chart_svg(self) -> str | None:
        return self._once("compare_breakdown.svg", lambda: charts.svg(self.chart_spec()))

    def chart_bundle(self) -> Payload | None:
        return charts.display_bundle(self.chart_spec(), self.chart_svg())


def of(report: "Report") -> ReportViewModel:
    """``report``'s view model."""
    return ReportViewModel(report)


def of_comparison(comparison: "Comparison") -> ComparisonViewModel:
    """``comparison``'s view model."""
    return ComparisonViewModel(comparison)
