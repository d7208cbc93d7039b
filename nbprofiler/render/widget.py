"""The interactive explorer: an ipywidgets view of a Report, one tab per question.

Tabs: Overview, Operators, Kernels (only with device kernels), Hardware, Memory,
Cell lines, Modules, Suggestions, Export. Each opens with one line on how to read
it. A tab is built the first time it is opened, so the explorer appears at
once even for large traces.

Why it stays fast with thousands of operators: tables are pandas frames that
are filtered, sorted and cut in pandas, and each page (``PAGE_ROWS`` rows) is
drawn as one HTML widget. Only the controls and the header cells are widgets,
a few dozen whatever the table's length.

Lifetime: ipywidgets keeps every widget, and through its callbacks the whole
Report, until the widget is closed; a front end that clears an output does not
close it. So the explorers a cell showed are closed when the output they were
shown in is gone: the cell ran again, or was deleted (``shown``). A Report kept
in a variable is untouched: ``report.show()`` builds a new explorer.

Escaping: text that comes from a trace (operator, kernel, annotation and
module names, the cell's source) reaches the page in two ways. In HTML widget
values it always goes through ``html.escape``. In widget labels (dropdown
options) ipywidgets 8 writes it as a text node (``textContent``), never as
HTML, so it is shown as it is, and no label here sets ``description_allow_html``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from .bundle import WIDGET_MIME, mimebundle
from .charts import chart_bundle
from ..format import fmt_bytes, fmt_pct, fmt_us, shorten
from .export_tab import ExportTab
from .output_widget import bundle_output
from .tab_help import how_html
from .timeline_data import timeline_bundle
from .hardware import HOW as HARDWARE_HOW, cell_text, hardware_view, with_kernel_figures
from .html import (Col, breakdown_table, count, device_html, esc, hardware_pieces, how, html_table,
                   kernel_roofline_cols, lines_table, metrics_html, modules_tree, suggestion_card, us_col)
from .text import render_summary_line
from .style import WIDGET_STYLE
from .views import growth_warnings, lines_absent, modules_absent, memory_device, memory_figures, ranked_suggestions

if TYPE_CHECKING:
    from ..analysis.callsites import CallSites
    from ..report import Report

PAGE_ROWS = 50
DEFAULT_TOP = 100
OVERVIEW_SUGGESTIONS = 3
# Why a control is disabled: its tooltip, and a line under it.
NO_DEVICE_TIME = "Device time: this run recorded no device activity (a CPU run), so only host time is shown."
NO_SHAPES = ("Grouping by input shape: this run recorded no input shapes; run the cell with "
             "%%torchprofile --shapes to group by them.")
# Cells whose explorers stay live. Past it, the oldest cell's explorers are closed (its
# output goes blank): each keeps its Report, traces of several MB, for the kernel's life.
MAX_LIVE_CELLS = 10


def frame_label(frame: str) -> str:
    """A call site as the user knows it: an earlier cell by its ``In [n]`` number, not its temp file."""
    if not frame:
        return "the cell itself"
    head, _, func = frame.partition("): ")
    file, _, line = head.rpartition("(")
    try:
        from IPython import get_ipython

        count = getattr(getattr(get_ipython(), "compile", None), "_filename_map", {}).get(file)
    except ImportError:
        count = None
    return f"In [{count}], def at line {line}: {func}" if count is not None else frame


def copy_cards(report: "Report", limit: int | None = None) -> str:
    """Suggestion cards, largest gain first, with Copy buttons on their code."""
    return "".join(suggestion_card(s, True, report) for s in ranked_suggestions(report)[:limit])


# -- a paged, sortable, filterable table ---------------------------------------------------------
class PagedTable:
    """A DataFrame shown a page at a time: filter, sort (header click or control), top-N, pages.

    ``view`` is the filtered, sorted, top-N frame; ``page_frame`` the rows on
    screen. ``on_change`` runs after every redraw (the operator picker uses it);
    ``on_pick``, when given, runs with a row's index label when the row is clicked.

    The header is drawn in the same CSS grid as the rows, so its cells sit exactly
    over their columns. Header and row clicks reach the kernel through ``clicks``,
    a hidden Text in the same view: the grid's ``onclick`` writes the clicked cell's
    ``data-pick`` ("sort:KEY" or "row:INDEX", then a counter so a repeated click is a
    change) into it and fires the ``input`` event ipywidgets listens to.
    """

    def __init__(self, frame: pd.DataFrame, columns: Sequence[Col], sort: str, noun: str,
                 filter_column: str = "name", top: int = DEFAULT_TOP,
                 on_pick: Callable[[Any], None] | None = None) -> None:
        self.noun = noun
        self.filter_column = filter_column
        self.on_change: Callable[[], None] | None = None
        self.on_pick = on_pick
        self.picked: Any = None
        self._frame = frame
        self._columns: list[Col] = list(columns)
        self._quiet = False
        self._wanted_top = top  # what the user asked for; the slider shows it clipped to the rows there are
        self._matched = len(frame)
        self.page = 0
        self.filter = widgets.Text(placeholder=f"filter {noun} by name (substring)", continuous_update=True,
                                   layout=widgets.Layout(width="260px"))
        self.sort = widgets.Dropdown(description="sort by", options=self._sort_options(), value=sort,
                                     layout=widgets.Layout(width="230px"))
        self.descending = widgets.ToggleButton(value=True, description="descending", icon="sort-amount-desc",
                                               tooltip="pressed: largest first; released: smallest first",
                                               layout=widgets.Layout(width="130px"))
        self.top = widgets.IntSlider(description="top N", min=1, max=max(len(frame), 1),
                                     value=max(min(top, len(frame)), 1), continuous_update=False,
                                     layout=widgets.Layout(width="330px"))
        self.show_all = widgets.Button(layout=widgets.Layout(width="auto"))
        self.prev = widgets.Button(description="◀ previous", layout=widgets.Layout(width="110px"))
        self.next = widgets.Button(description="next ▶", layout=widgets.Layout(width="110px"))
        self.status = widgets.HTML()
        self.clicks = widgets.Text(layout=widgets.Layout(display="none"))
        self.clicks.add_class("nbp-clicks")
        self.body = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.filter.observe(self._restart, "value")
        self.sort.observe(self._restart, "value")
        self.descending.observe(self._restart, "value")
        self.top.observe(self._top_moved, "value")
        self.clicks.observe(self._clicked, "value")
        self.show_all.on_click(lambda _: self._show_all())
        self.prev.on_click(lambda _: self._turn(-1))
        self.next.on_click(lambda _: self._turn(1))
        self.box = widgets.VBox([
            widgets.HBox([self.filter, self.sort, self.descending, self.top],
                         layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self.prev, self.next, self.status, self.show_all]),
            self.clicks, self.body,
        ])
        self.box.add_class("nbp-table")
        self._view = frame
        self.refresh()

    # -- state ----------------------------------------------------------------------------
    @property
    def frame(self) -> pd.DataFrame:
        return self._frame

    def set_frame(self, frame: pd.DataFrame, columns: Sequence[Col] | None = None, sort: str | None = None) -> None:
        """Show another frame (another grouping, another time basis), keeping the filter and the
        top N the user asked for (so a grouping with more rows shows more of them)."""
        self._quiet = True
        try:
            self._frame = frame
            self.picked = None
            if columns is not None:
                self._columns = list(columns)
                self.sort.options = self._sort_options()
            if sort is not None:
                self.sort.value = sort
            self.top.max = max(len(frame), 1)
            self.top.value = max(min(self._wanted_top, len(frame)), 1)
        finally:
            self._quiet = False
        self._restart()

    @property
    def view(self) -> pd.DataFrame:
        """The rows the controls select, as of the last redraw."""
        return self._view

    @property
    def hidden_by_top(self) -> int:
        """Rows that match the filter but lie past the top N."""
        return self._matched - len(self._view)

    def _select(self) -> pd.DataFrame:
        df = self._frame
        query = self.filter.value.strip()
        if query and self.filter_column in df:
            df = df[df[self.filter_column].astype(str).str.contains(query, case=False, regex=False)]
        key = self.sort.value
        if key in df:
            df = df.sort_values(key, ascending=not self.descending.value, kind="stable", na_position="last")
        self._matched = len(df)
        return df.head(self.top.value)

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.view) // PAGE_ROWS))

    @property
    def page_frame(self) -> pd.DataFrame:
        return self.view.iloc[self.page * PAGE_ROWS:(self.page + 1) * PAGE_ROWS]

    def sort_by(self, key: str) -> None:
        """What a header click does: sort by ``key``, or flip the order if already sorted by it."""
        if self.sort.value == key:
            self.descending.value = not self.descending.value
        else:
            self._quiet = True
            self.sort.value = key
            self.descending.value = key != self.filter_column  # names A→Z, figures largest first
            self._quiet = False
            self._restart()

    def pick(self, label: Any) -> None:
        """What a row click does: mark the row and hand its index label to ``on_pick``."""
        if self.on_pick is None or label not in self._frame.index:
            return
        self.picked = label
        self.refresh()
        self.on_pick(label)

    def _clicked(self, change: dict[str, Any]) -> None:
        """A click in the grid, as the front end reports it: "sort:KEY n" or "row:INDEX n"."""
        what, _, target = str(change["new"]).split(" ")[0].partition(":")
        if what == "sort" and target in {c.key for c in self._columns}:
            self.sort_by(target)
        elif what == "row":
            try:
                label: Any = int(target)
            except ValueError:
                return
            self.pick(label)

    def _top_moved(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self._wanted_top = int(change["new"])
        self._restart()

    def _show_all(self) -> None:
        self._wanted_top = len(self._frame)
        self.top.value = self.top.max

    # -- drawing --------------------------------------------------------------------------
    def _sort_options(self) -> list[tuple[str, str]]:
        return [(c.label, c.key) for c in self._columns]

    def _template(self) -> str:
        return " ".join(c.width if not c.name else f"minmax(160px,{c.width})" for c in self._columns)

    def _header_cells(self) -> list[str]:
        cells = []
        for col in self._columns:
            sorted_here = col.key == self.sort.value
            arrow = (" ▼" if self.descending.value else " ▲") if sorted_here else ""
            cls = "h n" if col.name else "h"
            cls += " sorted" if sorted_here else ""
            hint = f"sort by {col.label}" + (f": {col.help}" if col.help else "")
            cells.append(f'<div class="{cls}" data-pick="sort:{esc(col.key)}" title="{esc(hint)}">'
                         f"{esc(col.label + arrow)}</div>")
        return cells

    def _restart(self, *_: Any) -> None:
        if self._quiet:
            return
        self.page = 0
        self.refresh()

    def _turn(self, step: int) -> None:
        self.page = min(max(self.page + step, 0), self.pages - 1)
        self.refresh()

    def refresh(self) -> None:
        self._view = view = self._select()
        self.page = min(self.page, self.pages - 1)
        rows = self.page_frame
        cells = self._header_cells()
        for i, (label, rec) in enumerate(zip(rows.index, rows.itertuples(index=False))):
            classes = " c" + (" odd" if i % 2 else "") + (" picked" if label == self.picked else "")
            values = dict(zip(rows.columns, rec))
            for col in self._columns:
                value = values.get(col.key)
                text = "–" if value is None or pd.isna(value) else col.fmt(value)
                title = f' title="{esc(value)}"' if col.name else ""
                cells.append(f'<div class="{"n" if col.name else ""}{classes}"{title} data-pick="row:{label}">'
                             f"{esc(text)}</div>")
        empty = "" if len(rows) else f'<div class="how">No {esc(self.noun)} match.</div>'
        pick = " pick" if self.on_pick is not None else ""
        self.body.value = (f'<div class="nbp"><div class="nbp-grid{pick}" style="grid-template-columns:'
                           f'{self._template()}" onclick="{_CLICK_JS}">{"".join(cells)}</div>{empty}</div>')
        first = self.page * PAGE_ROWS + 1 if len(rows) else 0
        last = first + len(rows) - 1 if len(rows) else 0
        hidden = self.hidden_by_top
        more = f" · {hidden:,} more hidden by top N" if hidden else ""
        self.status.value = (f'<div class="nbp" style="padding:4px 8px">rows {first:,}–{last:,} '
                             f"of {len(view):,} shown{more} · {len(self._frame):,} {esc(self.noun)} · "
                             f"page {self.page + 1} of {self.pages}</div>")
        self.show_all.description = f"show all {self._matched:,}"
        self.show_all.tooltip = f"show the {hidden:,} rows past the top N"
        self.show_all.layout.display = "" if hidden else "none"
        self.prev.disabled = self.page == 0
        self.next.disabled = self.page >= self.pages - 1
        self.prev.tooltip = "already on the first page" if self.prev.disabled else "the previous page"
        self.next.tooltip = "already on the last page" if self.next.disabled else "the next page"
        if self.on_change is not None:
            self.on_change()


# A click anywhere in a table's grid: the cell's data-pick goes to the table's hidden Text (see PagedTable).
_CLICK_JS = ("var c=event.target.closest('[data-pick]'),t=this.closest('.nbp-table'),"
             "i=t&&t.querySelector('.nbp-clicks input');if(c&&i){i.value=c.dataset.pick+' '+Date.now();"
             "i.dispatchEvent(new Event('input',{bubbles:true}))}")


# -- the tabs -----------------------------------------------------------------------------------
class OperatorsTab:
    """The operator table with its host/device and grouping switches, and the drill-down."""

    def __init__(self, report: "Report") -> None:
        self.report = report
        self.time = widgets.ToggleButtons(options=[("host time", "host"), ("device time", "device")],
                                          value="device" if report.has_device_activity else "host",
                                          description="show", style={"button_width": "110px"})
        self.time.disabled = not report.has_device_activity
        has_shapes = report.table.input_dims is not None
        self.group = widgets.ToggleButtons(options=[("name", "name"), ("name + input shape", "shape")],
                                           value="name", description="group by", style={"button_width": "150px"})
        self.group.disabled = not has_shapes
        why_disabled = []
        if self.time.disabled:
            self.time.tooltip = NO_DEVICE_TIME
            self.time.tooltips = [NO_DEVICE_TIME] * 2
            why_disabled.append(NO_DEVICE_TIME)
        if self.group.disabled:
            self.group.tooltip = NO_SHAPES
            self.group.tooltips = [NO_SHAPES] * 2
            why_disabled.append(NO_SHAPES)
        self.why_disabled = widgets.HTML("".join(f'<div class="nbp how">{esc(w)}</div>' for w in why_disabled))
        self.table = PagedTable(self._frame(), self._columns(), sort=f"{self.time.value}_self_us", noun="operators",
                                on_pick=self._pick_row)
        self.pick = widgets.Dropdown(description="details for", layout=widgets.Layout(width="640px"))
        self.details = widgets.HTML()
        self.time.observe(self._switch, "value")
        self.group.observe(self._switch, "value")
        self.pick.observe(self._show_details, "value")
        self.table.on_change = self._fill_pick
        self._fill_pick()
        self.box = widgets.VBox([how_html("Operators"), widgets.HBox([self.time, self.group]), self.why_disabled,
                                 self.table.box, self.pick, self.details])

    @cached_property
    def _by_name(self) -> pd.DataFrame:
        return self.report.operator_table(by_shape=False)

    def _frame(self) -> pd.DataFrame:
        return self.report.operators_by_shape() if self.group.value == "shape" else self._by_name

    def _columns(self) -> list[Col]:
        t = self.time.value
        cols = [Col("name", "operator", width="4fr", name=True), Col("calls", "calls", count, width="80px")]
        if self.group.value == "shape":
            cols.append(Col("input_shapes", "input shapes", width="2fr", name=True))
        cols += [us_col(f"{t}_self_us", f"{t} self"), us_col(f"{t}_total_us", f"{t} total")]
        if f"{t}_self_alloc_bytes" in self._by_name:
            cols.append(Col(f"{t}_self_alloc_bytes", "allocated", fmt_bytes))
        return cols

    def _switch(self, *_: Any) -> None:
        self.table.set_frame(self._frame(), self._columns(), sort=f"{self.time.value}_self_us")

    def _fill_pick(self) -> None:
        rows = self.table.page_frame
        start = self.table.page * PAGE_ROWS
        options: list[tuple[str, int]] = [("(pick an operator on this page)", -1)]
        for i, (idx, rec) in enumerate(zip(rows.index, rows.itertuples(index=False)), start + 1):
            label = f"{i}. {shorten(str(rec.name), 90)}"
            if "input_shapes" in rows.columns:
                label += f"  {shorten(str(rec.input_shapes), 40)}"
            options.append((label, int(idx)))
        self.pick.options = options
        self.pick.value = -1

    def _pick_row(self, label: Any) -> None:
        """A clicked row: the picker selects it, which shows its details."""
        if any(value == label for _, value in self.pick.options):
            self.pick.value = label

    def _show_details(self, *_: Any) -> None:
        idx = self.pick.value
        if idx is None or idx < 0:
            self.details.value = ""
            return
        row = self.table.frame.loc[idx]
        self.details.value = self.details_html(str(row["name"]), row.get("input_shapes"))

    def details_html(self, name: str, input_shapes: str | None = None) -> str:
        """Kernels and call sites of one operator (its shape group, when grouped by shape)."""
        from ..analysis.callsites import operator_kernels, operator_mask

        tree = self.report.operator_tree
        mask = operator_mask(tree, name, input_shapes)
        parts = [f'<div class="nbp"><h4>{esc(name)}</h4>']
        kernels = operator_kernels(tree, mask)
        if len(kernels):
            parts.append(f"<div>Device work it launched ({len(kernels)} kinds):</div>")
            parts.append(html_table(kernels.head(20), [Col("kernel", "kernel", name=True), Col("calls", "calls", count),
                                                        us_col("total_us", "total")], 90))
        elif self.report.has_device_activity:
            parts.append("<div>It launched no device work.</div>")
        sites = self._call_sites
        if sites.has_frames:
            base = self.report.table.meta.base_time_ns
            table = sites.call_sites(mask, self.report.line_marks, base, self.report.cell_source or "")
            cols = [Col("called_from", "called from (your code outside torch)", frame_label, name=True),
                    Col("calls", "calls", count), us_col("host_us", "host")]
            if self.report.has_device_activity:
                cols.append(us_col("device_us", "device"))
            if self.report.line_marks is not None:
                cols = [Col("line", "cell line", lambda v: str(v) if v > 0 else "–"),
                        Col("source", "source", name=True), *cols]
            parts.append("<div>Where it was called from: the cell line running, and the innermost function of your "
                         "own code around the call (<code>In [n]</code> is an earlier cell; the line is that of the "
                         "<code>def</code>):</div>")
            parts.append(html_table(table.head(20), cols, 70))
        else:
            parts.append('<div class="how">Run with <code>--stack</code> to see where it was called from.</div>')
        parts.append("</div>")
        return "".join(parts)

    @cached_property
    def _call_sites(self) -> "CallSites":
        from ..analysis.callsites import CallSites

        run = self.report.run
        return CallSites(self.report.operator_tree, run.cell_filename if run is not None else None)


def kernels_tab(report: "Report") -> tuple[widgets.Widget, PagedTable]:
    from ..analysis.kernel_kinds import kernel_kinds

    k = with_kernel_figures(report.kernels.assign(category=kernel_kinds(report.kernels["name"])), report)
    cols = [Col("name", "kernel", width="4fr", name=True), Col("category", "category", width="110px"),
            Col("calls", "calls", count, width="80px"), us_col("total_us", "total"), us_col("mean_us", "mean"),
            us_col("max_us", "max"), Col("mean_occupancy", "occupancy", fmt_pct, width="90px"),
            Col("mean_blocks_per_sm", "blocks per SM", _blocks, width="100px"),
            Col("tensor_cores", "tensor cores", _yes_no, width="100px"),
            us_col("mean_launch_delay_us", "launch delay"),
            *(replace(c, width="120px") for c in kernel_roofline_cols()),
            Col("operator", "launched by", width="2fr", name=True)]
    details = widgets.HTML()
    table = PagedTable(k, cols, sort="total_us", noun="kernels",
                       on_pick=lambda label: setattr(details, "value", kernel_details_html(k.loc[label])))
    by_kind = bundle_output(chart_bundle(report, "kernels"))
    return widgets.VBox([how_html("Kernels"), *([by_kind] if by_kind else []), table.box, details]), table


def _blocks(value: float) -> str:
    return f"{value:.1f}"


def _yes_no(value: object) -> str:
    return "yes" if value else "no"


def kernel_details_html(row: pd.Series) -> str:
    """One kernel, as a click on its row shows it: the whole name and every figure of its row."""
    def figure(key: str, fmt: Callable[[Any], str]) -> str:
        value = row.get(key)
        return "–" if value is None or pd.isna(value) else fmt(value)

    facts = [("kind", str(row.get("category", "–"))), ("calls", figure("calls", count)),
             ("total", figure("total_us", fmt_us)), ("mean", figure("mean_us", fmt_us)),
             ("min", figure("min_us", fmt_us)), ("max", figure("max_us", fmt_us)),
             ("achieved occupancy (est.)", figure("mean_occupancy", fmt_pct)),
             ("blocks per SM", figure("mean_blocks_per_sm", _blocks)),
             ("uses tensor cores", figure("tensor_cores", _yes_no)),
             ("mean launch delay", figure("mean_launch_delay_us", fmt_us)),
             ("launched mostly by", str(row.get("operator") or "–")),
             ("its FLOP operator's achieved FLOP/s", figure("achieved_flops_per_s", partial(cell_text, "flops_per_s"))),
             ("what bounds that operator", str(row.get("bound") or "–"))]
    rows = "".join(f'<tr><th>{esc(k)}</th><td class="n">{esc(v)}</td></tr>' for k, v in facts)
    return (f'<div class="nbp"><h4>Kernel</h4><div><code style="overflow-wrap:anywhere">{esc(row["name"])}</code>'
            f"</div><table>{rows}</table></div>")


def hardware_tab(report: "Report") -> widgets.Widget:
    """The device, its launches, streams and copies (``hardware.hardware_view``), as the static report shows them,
    with each section's chart (the roofline) drawn by the front end as the other tabs' charts are."""
    parts: list[widgets.Widget] = []
    for i, (body, chart) in enumerate(hardware_pieces(hardware_view(report))):
        parts.append(widgets.HTML(f'<div class="nbp">{how(HARDWARE_HOW) if i == 0 else ""}{body}</div>'))
        drawn = bundle_output(chart_bundle(report, chart)) if chart else None
        if drawn is not None:
            parts.append(drawn)
    return widgets.VBox(parts)


def memory_tab(report: "Report") -> tuple[widgets.Widget, PagedTable | None]:
    device = memory_device(report)
    if device is None:
        nothing = widgets.HTML('<div class="nbp how">No memory was recorded (the run used --no-memory, '
                               'or no step was profiled).</div>')
        return widgets.VBox([how_html("Memory"), nothing]), None
    warnings = "".join(f'<div class="warn">⚠ {esc(w)}</div>' for w in growth_warnings(report))
    figures = memory_figures(report, device)
    headline = f"<div>Memory on {esc(device)}: {esc(', '.join(figures))}</div>" if figures else ""
    charts = [c for c in (bundle_output(chart_bundle(report, name)) for name in ("memory", "memory_timeline")) if c]
    above = widgets.HTML(f'<div class="nbp">{headline}{warnings}</div>')
    below = widgets.HTML(f'<div class="nbp"><div>Allocations on {esc(device)} by operator during the profiled steps '
                         "(held = still allocated when its step ended):</div></div>")
    ops = report.memory_by_operator
    ops = ops[ops["device"] == device].reset_index(drop=True)
    cols = [Col("name", "operator", width="4fr", name=True), Col("allocations", "allocations", count, width="100px"),
            Col("allocated_bytes", "allocated", fmt_bytes), Col("held_bytes", "held", fmt_bytes)]
    table = PagedTable(ops, cols, sort="allocated_bytes", noun="operators", top=50)
    return widgets.VBox([how_html("Memory"), above, *charts, below, table.box]), table


def lines_html(report: "Report") -> str:
    """The annotated cell, or why there is none."""
    return lines_table(report) if not report.lines.empty else f'<div class="how">{esc(lines_absent(report))}</div>'


def modules_html(report: "Report") -> str:
    """The module tree, or how to get one."""
    return modules_tree(report) if not report.modules.empty else f'<div class="how">{esc(modules_absent(report))}</div>'


# -- the explorer -------------------------------------------------------------------------------
def widget_view(widget: widgets.DOMWidget) -> dict[str, Any]:
    """The ``application/vnd.jupyter.widget-view+json`` data that displays ``widget``."""
    return widgets.DOMWidget._repr_mimebundle_(widget)[WIDGET_MIME]


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

    Displayed, it carries the whole report bundle (``bundle.mimebundle``): the
    explorer where a widget front end runs the cell, the static report everywhere.
    """

    noun = "report"

    def __init__(self, report: "Report") -> None:
        self.report = report
        self.operators: OperatorsTab | None = None
        self.kernels: PagedTable | None = None
        self.memory: PagedTable | None = None
        self.export: ExportTab | None = None
        builders: list[tuple[str, Callable[[], widgets.Widget]]] = [
            ("Overview", self._overview), ("Operators", self._operators)]
        if not report.kernels.empty:
            builders.append(("Kernels", self._kernels))
        builders += [("Hardware", lambda: hardware_tab(report)), ("Memory", self._memory), ("Cell lines", self._lines),
                     ("Modules", self._modules), ("Timeline", self._timeline), ("Suggestions", self._suggestions),
                     ("Export", self._export)]
        super().__init__(view_header("report", render_summary_line(report), report.notes), builders)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        return mimebundle(self.report, include, exclude, explorer=self)

    # -- tab builders ---------------------------------------------------------------------
    def _overview(self) -> widgets.Widget:
        r = self.report
        breakdown = bundle_output(chart_bundle(r, "breakdown"))
        figures = widgets.HTML(f'<div class="nbp">{metrics_html(r)}{device_html(r)}</div>')
        parts = []
        if breakdown:
            parts.append(html_table(breakdown_table(r), [Col("part", "part"), us_col("per_step_us", "per step"),
                                                         Col("share", "share", fmt_pct)]))
        else:
            parts.append('<div class="how">No complete step was profiled, so there is no breakdown.</div>')
        ranked = ranked_suggestions(r)
        if ranked:
            more = len(ranked) - OVERVIEW_SUGGESTIONS
            parts.append("<h4>Top suggestions</h4>" + copy_cards(r, OVERVIEW_SUGGESTIONS))
            if more > 0:
                parts.append(f'<div class="how">{more} more in the Suggestions tab.</div>')
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
        timeline = bundle_output(timeline_bundle(self.report))
        if timeline is None:
            return widgets.VBox([how_html("Timeline"), widgets.HTML(
                '<div class="nbp"><div class="how">This run recorded no events to draw on a timeline.</div></div>')])
        return widgets.VBox([how_html("Timeline"), timeline])

    def _lines(self) -> widgets.Widget:
        return widgets.VBox([how_html("Cell lines"), widgets.HTML(f'<div class="nbp">{lines_html(self.report)}</div>')])

    def _modules(self) -> widgets.Widget:
        return widgets.VBox([how_html("Modules"), widgets.HTML(f'<div class="nbp">{modules_html(self.report)}</div>')])

    def _suggestions(self) -> widgets.Widget:
        cards = copy_cards(self.report) or '<div class="how">No suggestions for this run.</div>'
        return widgets.VBox([how_html("Suggestions"), widgets.HTML(f'<div class="nbp">{cards}</div>')])

    def _export(self) -> widgets.Widget:
        self.export = ExportTab(self.report)
        return self.export.box
