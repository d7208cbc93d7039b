"""The compare view: an ipywidgets view of a Comparison, built like the report's explorer.

Tabs: Summary (the verdict, the speed-up and its interval, samples/s, step
times, what differs in the set-up, stated vs measured, notes), Breakdown (both
runs' charts side by side on one time scale, and the change per part with what
explains it), Operators and Kernels (the explorer's paged tables: sort,
filter, top N, and a switch for the new or vanished names), Memory.

The figures and words are those of the static HTML (``compare_html``), so the
view and a notebook reopened without a kernel say the same. Names from traces
reach the page only through ``esc``, as in the explorer.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from ..format import fmt_ms
from . import view_model
from .compare_html import (COMPARE_STYLE, HOW, breakdown_html, kernel_columns, main_time, memory_html,
                           operator_columns, summary_html, title)
from .frontend import comparison_bundle
from .html import Col, esc
from .output_widget import bundle_output
from .style import WIDGET_STYLE
from .paged_table import PagedTable
from .widget import TabbedView, view_header

if TYPE_CHECKING:
    from ..report.comparison import Comparison

# The status switch above a name table: which names it lists.
STATUS_OPTIONS = [("all", "all"), ("new", "new"), ("vanished", "vanished"), ("in both", "both")]


def how_html(tab: str) -> widgets.HTML:
    return widgets.HTML(f'<div class="nbp"><div class="how">{esc(HOW[tab])}</div></div>')


def page(tab: str, body: str) -> widgets.Widget:
    """A tab of static content: its how-to-read line, then ``body``."""
    return widgets.VBox([how_html(tab), widgets.HTML(f'<div class="nbp">{body}</div>')])


class NamesTab:
    """A table of operators or kernels of both runs, largest change first, with a switch
    between all names and the new, vanished or shared ones."""

    def __init__(self, tab: str, frame: pd.DataFrame, columns: Sequence[Col], delta: str, noun: str) -> None:
        # |change| orders the table as the comparison does: a fall as large as a rise ranks as high.
        self.frame = frame.assign(size_ms=frame[delta].abs())
        self.status = widgets.ToggleButtons(options=STATUS_OPTIONS, value="all", description="show",
                                            style={"button_width": "90px"})
        columns = [*columns, Col("size_ms", "|change|", fmt_ms)]
        self.table = PagedTable(self.frame, columns, sort="size_ms", noun=noun)
        self.status.observe(self._switch, "value")
        self.box = widgets.VBox([how_html(tab), self.status, self.table.box])

    def _switch(self, *_: Any) -> None:
        which = self.status.value
        self.table.set_frame(self.frame if which == "all" else self.frame[self.frame["status"] == which])


class CompareView(TabbedView):
    """The comparison's view. Displayed, it carries the whole comparison bundle
    (``frontend.comparison_bundle``), as the explorer carries the report's."""

    noun = "comparison"

    def __init__(self, comparison: "Comparison") -> None:
        self.comparison = comparison
        self.operators: NamesTab | None = None
        self.kernels: NamesTab | None = None
        builders: list[tuple[str, Callable[[], widgets.Widget]]] = [
            ("Summary", self._summary), ("Breakdown", self._breakdown), ("Operators", self._operators)]
        if not comparison.kernels.empty:
            builders.append(("Kernels", self._kernels))
        builders.append(("Memory", self._memory))
        header = view_header("comparison", title(comparison), comparison.notes, WIDGET_STYLE + COMPARE_STYLE)
        super().__init__(header, builders)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        return comparison_bundle(self.comparison, include, exclude, self.displayed)

    # -- tab builders ---------------------------------------------------------------------
    def _summary(self) -> widgets.Widget:
        return page("Summary", summary_html(self.comparison))

    def _breakdown(self) -> widgets.Widget:
        chart = bundle_output(view_model.of_comparison(self.comparison).chart_bundle())
        table = widgets.HTML(f'<div class="nbp">{breakdown_html(self.comparison)}</div>')
        return widgets.VBox([how_html("Breakdown"), *([chart] if chart else []), table])

    def _operators(self) -> widgets.Widget:
        c = self.comparison
        self.operators = NamesTab("Operators", c.operators, operator_columns(c), f"{main_time(c)}_self_ms_delta",
                                  "operators")
        return self.operators.box

    def _kernels(self) -> widgets.Widget:
        self.kernels = NamesTab("Kernels", self.comparison.kernels, kernel_columns(), "total_ms_delta", "kernels")
        return self.kernels.box

    def _memory(self) -> widgets.Widget:
        return page("Memory", memory_html(self.comparison))
