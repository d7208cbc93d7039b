"""Which views (tabs) a report shows: only those with content, and, said once, the flags that would add others.

A tab that could only say "re-run with a flag" would stand beside real ones; instead each view has one rule
here, and every renderer follows it: the explorer's tabs (``widget.py``), the static HTML's sections
(``html.py``) and the saved view's tabs (the payload's ``tabs`` and ``more_views``, which the extension
follows rather than deciding again). The view model keeps the result once per report
(``view_model.of(report).tabs``). A new view adds its line to ``report_tabs``, in the order it is shown.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..report import Report


@dataclass(frozen=True)
class Tab:
    """A view of the report: whether it has content, and, where it has none, how a re-run of the cell
    would fill it (``rerun``, e.g. "with --stack"; "" when none would: a trace file, or nothing to show)."""

    name: str
    shown: bool
    rerun: str = ""
    adds: str = ""  # what the view shows, for the "More views" line

    def wanted(self) -> bool:
        """Whether the "More views" line names this view: it has no content, and a re-run would give it some."""
        return not self.shown and bool(self.rerun)


def report_tabs(report: "Report", memory_device: str | None) -> tuple[Tab, ...]:
    """Every view in the order the tabs stand, shown or not (``memory_device``: the view model's)."""
    o = report.run_options
    return (
        Tab("Overview", True),
        Tab("Operators", True),
        Tab("Cycles", not report.cycles.empty, "with --every N" if o else "",
            "the trend of a whole run, cycle by cycle"),
        Tab("Kernels", not report.kernels.empty),
        Tab("Distributed", not report.rank_steps.empty),  # a folder of ranks, or a trace that ran collectives
        Tab("Hardware", True),
        Tab("Memory", memory_device is not None, "without --no-memory" if o and not o.memory else "",
            "memory at every step and the operators that allocated it"),
        Tab("Cell lines", not report.lines.empty, "with --stack" if o and not o.stack else "",
            "the time per line of this cell"),
        Tab("Modules", not report.modules.empty, "with --modules" if o and not (o.modules or o.stack) else "",
            "the time per nn.Module"),
        Tab("Flame graph", len(report.flame) > 1),  # the root and at least one operator
        Tab("Timeline", True),
        Tab("Suggestions", True),
        Tab("Export", True),
    )


def shown_names(tabs: Sequence[Tab]) -> tuple[str, ...]:
    """The names of the tabs with content, in order."""
    return tuple(t.name for t in tabs if t.shown)


def more_views(tabs: Sequence[Tab]) -> str:
    """The one line (plain text) naming how a re-run would add views, or "" when none would."""
    wanted = [t for t in tabs if t.wanted()]
    if not wanted:
        return ""
    return "More views: re-run the cell " + "; ".join(f"{t.rerun} for {t.name} ({t.adds})" for t in wanted) + "."
