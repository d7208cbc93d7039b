"""The explorer's tabs: what each tab of a report's explorer holds, built when it is first opened.

Operators (host or device time, by name or input shape, with a drill-down into the kernels and
call sites of one operator), Kernels, Hardware, Memory, Cell lines, Modules and the suggestion
cards; ``widget.Explorer`` arranges them. Each reads the view model (``views``, ``hardware``,
``charts``) and draws with the static report's pieces (``html``), so a tab shows what the
static report shows.

Escaping: text that comes from a trace (operator, kernel, annotation and module names, the
cell's source) reaches the page in two ways. In HTML widget values it always goes through
``html.escape``. In widget labels (dropdown options) ipywidgets 8 writes it as a text node
(``textContent``), never as HTML, so it is shown as it is, and no label here sets
``description_allow_html``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from ..analysis.callsites import CallSites, operator_kernels, operator_mask
from ..format import fmt_bytes, fmt_pct, fmt_us, shorten
from . import charts, view_model
from .hardware import HOW as HARDWARE_HOW, cell_text
from .html import (Col, count, cycles_html, distributed_html, esc, hardware_pieces, how, html_table,
                   kernel_roofline_cols, suggestion_card, us_col)
from .output_widget import bundle_output
from .paged_table import PAGE_ROWS, PagedTable
from .tab_help import how_html

if TYPE_CHECKING:
    from ..report import Report

# Why a control is disabled: its tooltip, and a line under it.
NO_DEVICE_TIME = "Device time: this run recorded no device activity (a CPU run), so only host time is shown."
NO_SHAPES = ("Grouping by input shape: this run recorded no input shapes; run the cell with "
             "%%torchprofile --shapes to group by them.")


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
    return "".join(suggestion_card(s, True, report) for s in view_model.of(report).suggestions[:limit])



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
    def _call_sites(self) -> CallSites:
        return CallSites(self.report.operator_tree, self.report.cell_filename)


def kernels_tab(report: "Report") -> tuple[widgets.Widget, PagedTable]:
    k = view_model.of(report).kernels
    cols = [Col("short_name", "kernel", name=True, hover="name"), Col("category", "category", width="110px"),
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
    by_kind = bundle_output(view_model.of(report).chart_bundle("kernels"))
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


def distributed_tab(report: "Report") -> widgets.Widget:
    """Each rank's step split, the straggler and what each rank waited on (``view_model.of(report).distributed``),
    as the static report shows them, the stacked bar per rank drawn by the front end."""
    view = view_model.of(report).distributed
    assert view is not None, "the explorer shows the Distributed tab only for a report with distributed data"
    chart = bundle_output(charts.display_bundle(view.chart, charts.svg(view.chart)))
    return widgets.VBox([w for w in (chart, widgets.HTML(f'<div class="nbp">{distributed_html(view)}</div>'))
                         if w is not None])


def cycles_tab(report: "Report") -> widgets.Widget:
    """A ``--every`` run's trend, cycle by cycle, with its drift (``view_model.of(report).cycles``), as the
    static report shows it, the charts drawn by the front end."""
    view = view_model.of(report).cycles
    assert view is not None, "the explorer shows the Cycles tab only for a run with cycles"
    drawn = [bundle_output(charts.display_bundle(c, charts.svg(c))) for c in view.charts]
    return widgets.VBox([w for w in (*drawn, widgets.HTML(f'<div class="nbp">{cycles_html(view)}</div>'))
                         if w is not None])


def hardware_tab(report: "Report") -> widgets.Widget:
    """The device, its launches, streams and copies (``view_model.of(report).hardware``), as the static report
    shows them, with each section's chart (the roofline) drawn by the front end as the other tabs' charts are."""
    parts: list[widgets.Widget] = []
    model = view_model.of(report)
    for i, (body, chart) in enumerate(hardware_pieces(model.hardware)):
        parts.append(widgets.HTML(f'<div class="nbp">{how(HARDWARE_HOW) if i == 0 else ""}{body}</div>'))
        drawn = bundle_output(model.chart_bundle(chart)) if chart else None
        if drawn is not None:
            parts.append(drawn)
    return widgets.VBox(parts)


def memory_tab(report: "Report") -> tuple[widgets.Widget, PagedTable]:
    """The Memory tab, shown only for a report with a memory device (``tabs.report_tabs``)."""
    model = view_model.of(report)
    device = model.memory_device
    assert device is not None, "the Memory tab shows only where memory was recorded"
    warnings = "".join(f'<div class="warn">⚠ {esc(w)}</div>' for w in report.memory_warnings)
    figures = model.memory_figures
    headline = f"<div>Memory on {esc(device)}: {esc(', '.join(figures))}</div>" if figures else ""
    charts = [c for c in (bundle_output(model.chart_bundle(name)) for name in ("memory", "memory_timeline")) if c]
    above = widgets.HTML(f'<div class="nbp">{headline}{warnings}</div>')
    below = widgets.HTML(f'<div class="nbp"><div>Allocations on {esc(device)} by operator during the profiled steps '
                         "(held = still allocated when its step ended):</div></div>")
    ops = report.memory_by_operator
    ops = ops[ops["device"] == device].reset_index(drop=True)
    cols = [Col("name", "operator", width="4fr", name=True), Col("allocations", "allocations", count, width="100px"),
            Col("allocated_bytes", "allocated", fmt_bytes), Col("held_bytes", "held", fmt_bytes)]
    table = PagedTable(ops, cols, sort="allocated_bytes", noun="operators", top=50)
    return widgets.VBox([how_html("Memory"), above, *charts, below, table.box]), table


def flame_tab(report: "Report") -> widgets.Widget:
    """The flame graph, drawn live by the front end (zoom, search, host/device), its SVG the fallback."""
    drawn = bundle_output(view_model.of(report).flame_bundle())
    if drawn is None:
        return widgets.VBox([how_html("Flame graph"), widgets.HTML(
            '<div class="nbp"><div class="how">This run recorded no operator time to draw.</div></div>')])
    return widgets.VBox([how_html("Flame graph"), drawn])
