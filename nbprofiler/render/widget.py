"""The interactive explorer: an ipywidgets view of a Report, one tab per question.

Tabs: Overview, Operators, Cycles, Kernels, Distributed, Hardware, Memory, Cell lines, Modules, Flame graph,
Timeline, Suggestions, Export, each only where it has content (``tabs.py`` decides; the
Overview says which flags would add the others). Each opens with one line on how to read it.
A tab is built the first time it is opened, so the explorer appears at once even
for large traces.

The tabs' contents are ``explorer_tabs``'; their tables are ``paged_table``'s,
which stay fast with thousands of rows. Here is the shell around them: the
header, the tabs built on first opening, and the explorers' lifetime.

Lifetime: ipywidgets keeps every widget, and through its callbacks the whole
Report, until the widget is closed; a front end that clears an output does not
close it. So the explorers a cell showed are closed when the output they were
shown in is gone: the cell ran again, or was deleted (``shown``). A Report kept
in a variable is untouched: ``report.show()`` builds a new explorer.

Escaping: text from a trace goes through ``html.escape`` in HTML values and is
set as text in widget labels (``explorer_tabs``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..format import fmt_pct
from . import view_model
from .explorer_tabs import (OperatorsTab, copy_cards, cycles_tab, distributed_tab, flame_tab, hardware_tab, kernels_tab,
                            memory_tab)
from .export_tab import ExportTab
from .frontend import WIDGET_MIME, report_bundle
from .html import Col, breakdown_table, device_html, esc, html_table, lines_table, metrics_html, modules_tree, us_col
from .output_widget import bundle_output
from .paged_table import PagedTable
from .style import WIDGET_STYLE
from .tab_help import how_html
from .tabs import more_views, shown_names
from .text import render_summary_line

if TYPE_CHECKING:
    from ..report import Report

OVERVIEW_SUGGESTIONS = 3
# Cells whose explorers stay live. Past it, the oldest cell's explorers are closed (its
# output goes blank): each keeps its Report, traces of several MB, for the kernel's life.
MAX_LIVE_CELLS = 10


def close_tree(widget: widgets.Widget) -> None:
    """Close ``widget`` and every widget its state holds (children, layout, style), which
    ipywidgets would otherwise keep for the kernel's life."""
    for name in widget.keys:
        value = getattr(widget, name, None)
        for part in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(part, widgets.Widget) and part.comm is not None:
                close_tree(part)
    widget.close()


@dataclass(eq=False)
class _Shown:
    """An explorer displayed by one execution of one cell."""

    explorer: widgets.Widget
    cell: str
    execution: str


_shown: list[_Shown] = []  # oldest first


def _execution() -> tuple[str, str, list[str]]:
    """(cell, execution, deleted cells) of the request the kernel is running.

    The cell is the ``cellId`` that JupyterLab and Notebook 7 put in the
    request's metadata; without one, each execution is a cell of its own. The
    deleted cells are those JupyterLab lists as deleted since its last request.
    """
    from IPython import get_ipython

    get_parent = getattr(getattr(get_ipython(), "kernel", None), "get_parent", None)  # ipykernel >= 6
    parent = (get_parent() if get_parent is not None else None) or {}
    execution = str(parent.get("header", {}).get("msg_id", ""))
    metadata = parent.get("metadata") or {}
    return str(metadata.get("cellId") or execution), execution, [str(c) for c in metadata.get("deletedCells") or ()]


def shown(explorer: widgets.Widget) -> None:
    """Record that ``explorer`` is being displayed, and close the explorers no output shows
    any more: those of this cell's earlier runs, of deleted cells, and of all but the
    ``MAX_LIVE_CELLS`` cells that displayed one most recently."""
    cell, execution, deleted = _execution()
    stale = [s for s in _shown if s.explorer is explorer or s.cell in deleted
             or (s.cell == cell and s.execution != execution)]
    _shown[:] = [s for s in _shown if s not in stale]
    _shown.append(_Shown(explorer, cell, execution))
    cells = list(dict.fromkeys(s.cell for s in reversed(_shown)))  # most recent first
    old = set(cells[MAX_LIVE_CELLS:])
    stale += [s for s in _shown if s.cell in old]
    _shown[:] = [s for s in _shown if s.cell not in old]
    for s in stale:
        if s.explorer is not explorer:
            close_tree(s.explorer)


def view_header(what: str, title: str, notes: Sequence[str], style: str = WIDGET_STYLE) -> widgets.HTML:
    """The header above a view's tabs: "nbprofiler ``what`` — ``title``" and the notes."""
    shown = "".join(f'<div class="note">{esc(n)}</div>' for n in notes)
    return widgets.HTML(f'<style>{style}</style><div class="nbp"><h3>nbprofiler {esc(what)} — {esc(title)}</h3>'
                        f"{shown}</div>")


class TabbedView(widgets.VBox):
    """A header above tabs, each tab built the first time it is opened. ``tab_titles``
    lists the tabs; ``show_tab(title)`` shows one. ``noun`` names what the view shows."""

    noun = "view"

    def __init__(self, header: widgets.Widget, builders: Sequence[tuple[str, Callable[[], widgets.Widget]]]) -> None:
        self._builders = dict(builders)
        self.tab_titles = tuple(self._builders)
        self._built: set[int] = set()
        # Every widget is a comm the kernel opens at display: the empty tabs share one Layout model.
        placeholder = widgets.Layout()
        self.tabs = widgets.Tab(children=[widgets.VBox(layout=placeholder) for _ in builders], titles=self.tab_titles)
        self.tabs.observe(self._on_select, "selected_index")
        super().__init__([header, self.tabs])
        self._build(0)

    def displayed(self) -> dict[str, Any]:
        """Record that this view is being displayed (``shown``), and give the
        ``application/vnd.jupyter.widget-view+json`` data that displays it."""
        shown(self)
        return widgets.DOMWidget._repr_mimebundle_(self)[WIDGET_MIME]

    def show_tab(self, title: str) -> widgets.Widget:
        """Select the tab called ``title`` (building it if needed) and return its content."""
        if title not in self.tab_titles:
            raise ValueError(f"this {self.noun} has no tab {title!r}; its tabs are {', '.join(self.tab_titles)}")
        index = self.tab_titles.index(title)
        self.tabs.selected_index = index
        self._build(index)
        return self.tabs.children[index]

    def _on_select(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self._build(int(change["new"]))

    def _build(self, index: int) -> None:
        if index in self._built:
            return
        self._built.add(index)
        self.tabs.children[index].children = [self._builders[self.tab_titles[index]]()]


class Explorer(TabbedView):
    """The report's explorer widget.

    Displayed, it carries the whole report bundle (``frontend.report_bundle``): the
    explorer where a widget front end runs the cell, the static report everywhere.
    """

    noun = "report"

    def __init__(self, report: "Report") -> None:
        self.report = report
        self.operators: OperatorsTab | None = None
        self.kernels: PagedTable | None = None
        self.memory: PagedTable | None = None
        self.export: ExportTab | None = None
        every: dict[str, Callable[[], widgets.Widget]] = {
            "Overview": self._overview, "Operators": self._operators, "Kernels": self._kernels,
            "Cycles": lambda: cycles_tab(report), "Distributed": lambda: distributed_tab(report),
            "Hardware": lambda: hardware_tab(report), "Memory": self._memory, "Cell lines": self._lines,
            "Modules": self._modules, "Flame graph": lambda: flame_tab(report), "Timeline": self._timeline,
            "Suggestions": self._suggestions, "Export": self._export}
        # Only the tabs with content (tabs.py decides, for every renderer).
        builders = [(name, every[name]) for name in shown_names(view_model.of(report).tabs)]
        super().__init__(view_header("report", render_summary_line(report), report.notes), builders)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        return report_bundle(self.report, include, exclude, self.displayed)

    # -- tab builders ---------------------------------------------------------------------
    def _overview(self) -> widgets.Widget:
        r = self.report
        breakdown = bundle_output(view_model.of(r).chart_bundle("breakdown"))
        figures = widgets.HTML(f'<div class="nbp">{metrics_html(r)}{device_html(r)}</div>')
        parts = []
        if breakdown:
            parts.append(html_table(breakdown_table(r), [Col("part", "part"), us_col("per_step_us", "per step"),
                                                         Col("share", "share", fmt_pct)]))
        else:
            parts.append('<div class="how">No complete step was profiled, so there is no breakdown.</div>')
        ranked = view_model.of(r).suggestions
        if ranked:
            more = len(ranked) - OVERVIEW_SUGGESTIONS
            parts.append("<h4>Top suggestions</h4>" + copy_cards(r, OVERVIEW_SUGGESTIONS))
            if more > 0:
                parts.append(f'<div class="how">{more} more in the Suggestions tab.</div>')
        views_line = more_views(view_model.of(r).tabs)
        if views_line:
            parts.append(f'<div class="how nbp-more-views">{esc(views_line)}</div>')
        return widgets.VBox([how_html("Overview"), figures, *([breakdown] if breakdown else []),
                             widgets.HTML(f'<div class="nbp">{"".join(parts)}</div>')])

    def _operators(self) -> widgets.Widget:
        self.operators = OperatorsTab(self.report)
        return self.operators.box

    def _kernels(self) -> widgets.Widget:
        box, self.kernels = kernels_tab(self.report)
        return box

    def _memory(self) -> widgets.Widget:
        box, self.memory = memory_tab(self.report)
        return box

    def _timeline(self) -> widgets.Widget:
        timeline = bundle_output(view_model.of(self.report).timeline_bundle())
        if timeline is None:
            return widgets.VBox([how_html("Timeline"), widgets.HTML(
                '<div class="nbp"><div class="how">This run recorded no events to draw on a timeline.</div></div>')])
        return widgets.VBox([how_html("Timeline"), timeline])

    def _lines(self) -> widgets.Widget:
        table = lines_table(self.report)
        return widgets.VBox([how_html("Cell lines"), widgets.HTML(f'<div class="nbp">{table}</div>')])

    def _modules(self) -> widgets.Widget:
        return widgets.VBox([how_html("Modules"), widgets.HTML(f'<div class="nbp">{modules_tree(self.report)}</div>')])

    def _suggestions(self) -> widgets.Widget:
        cards = copy_cards(self.report) or '<div class="how">No suggestions for this run.</div>'
        return widgets.VBox([how_html("Suggestions"), widgets.HTML(f'<div class="nbp">{cards}</div>')])

    def _export(self) -> widgets.Widget:
        self.export = ExportTab(self.report)
        return self.export.box
