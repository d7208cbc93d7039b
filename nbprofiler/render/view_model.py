"""What one report shows, made once and read by every view: its charts, its timeline, its
Hardware view, its "Try it" token and when it was first written out.

The text, the HTML, the explorer and the saved payload each show a report's charts,
timeline and Hardware view; the view model makes each of them once per report, so that every view shows the
same one and none pays for it twice. What it made is render's only memory of a report: kept
per Report (and per Comparison) in one ``WeakKeyDictionary``, so it goes with the report.
``of(report)`` is a light handle on the report and that memory; the memory holds nothing of
the report itself, since a reference from a value to its key would keep the report alive for
good.

What a view model holds is a view of the report, not analysis of its trace: what the
report computes from the trace are its tables, which the builders here only read
(``charts``, ``timeline_data``, ``hardware``).

Threads: the timeline may be built on a second thread (``background``): ``expect_timeline``
hands over its future, and ``timeline_payload`` waits for it and raises what it raised.
Everything else is made on the thread that renders.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import charts, hardware, origin, timeline_data

if TYPE_CHECKING:
    from concurrent.futures import Future

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
        if key not in self._made:
            self._made[key] = make()
        return cast(T, self._made[key])


class ReportViewModel(_ViewModel):
    """What one report shows (see the module docstring)."""

    def __init__(self, report: "Report") -> None:
        super().__init__(report)
        self.report = report

    def chart_spec(self, name: str) -> charts.Spec | None:
        """The named chart as a JSON-safe spec (``charts.build``), or None when it has no data."""
        return self._once(f"chart.{name}", lambda: charts.build(self.report, name))

    def chart_svg(self, name: str) -> str | None:
        """The named chart as static inline SVG markup (no script, no network), or None without data."""
        return self._once(f"chart.{name}.svg", lambda: charts.svg(self.chart_spec(name)))

    def chart_bundle(self, name: str) -> Payload | None:
        """``{CHART_MIME: spec, "text/html": svg}``: what a front end shows, the SVG where it lacks the extension."""
        return charts.display_bundle(self.chart_spec(name), self.chart_svg(name))

    def timeline_payload(self) -> Payload | None:
        """The Timeline payload (``timeline_data``), None when the report has no trace events.
        Where it is being built on another thread (``expect_timeline``), this waits for that
        build, and raises what it raised."""
        if "timeline" not in self._made:
            pending = self._made.get("timeline.pending")
            self._made["timeline"] = pending.result() if pending is not None else timeline_data.build(self.report)
            self._made.pop("timeline.pending", None)  # after the result: a Ctrl-C in the wait leaves the build
        return cast("Payload | None", self._made["timeline"])

    def timeline_bundle(self) -> Payload | None:
        """The Timeline as a display bundle (``timeline_data.display_bundle``)."""
        return timeline_data.display_bundle(self.timeline_payload())

    @property
    def timeline_started(self) -> bool:
        """Whether the timeline is built, or being built."""
        return "timeline" in self._made or "timeline.pending" in self._made

    def expect_timeline(self, pending: "Future[Payload | None]") -> None:
        """The timeline is the result of ``pending`` (``timeline_data.build`` run on another thread)."""
        self._made["timeline.pending"] = pending

    @property
    def hardware(self) -> hardware.HardwareView:
        """Everything the Hardware view shows (``hardware.hardware_view``): its facts, sections
        and charts, read by the static HTML, the explorer's tab and the saved payload alike."""
        return self._once("hardware", lambda: hardware.hardware_view(self.report))

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
