"""The static HTML report: every section, self-contained, for saved notebooks and files.

It is what nbconvert, GitHub and VS Code show without a kernel, and what
``report.to_html(path)`` writes: inline styles, charts as inline vector SVG
(``view_model``'s ``chart_svg``: a hover title on every mark, theme colours), no script
and no network. A standalone file adds Copy buttons to the
suggestions' code (an inline click handler).

Every name that comes from a trace (operators, kernels, annotations, modules,
the cell's source) is untrusted text and goes through ``esc``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import pandas as pd

from . import charts, origin, view_model
from .cycles import CyclesView
from .distributed import DistributedView
from .escape import esc
from .flame import flame_section
from .hardware import KERNEL_ROOFLINE_HELP, HardwareView, Section, cell_text
from .style import STYLE
from ..format import fmt_bytes, fmt_pct, fmt_us, shorten
from .tabs import more_views, shown_names
from .text import render_summary_line
from .views import LABELS

if TYPE_CHECKING:
    from ..advice.suggestion import Suggestion
    from ..report import Report

MAX_STEP_ROWS = 50
TOP_KERNELS = 15
TOP_MEMORY_OPS = 15
MAX_MODULE_ROWS = 200


# The Copy button's handler, inline so that it also works where a page's scripts do not run
# (an ipywidgets HTML value). It falls back to selecting the code where the clipboard API is off.
_COPY_ONCLICK = (
    "var p=this.parentNode.querySelector('pre'),b=this,t=p.innerText;"
    "(navigator.clipboard?navigator.clipboard.writeText(t):Promise.reject()).then("
    "function(){b.textContent='Copied'},"
    "function(){var r=document.createRange();r.selectNodeContents(p);var s=getSelection();"
    "s.removeAllRanges();s.addRange(r);b.textContent='Press Ctrl+C'})"
)


@dataclass(frozen=True)
class Col:
    """How a table shows one column: its header, cell text, whether it holds a name,
    (in the explorer's grid) its width, what the figure is where its label cannot say
    (``help``: the header's hover text), and for a name shown shortened, the column holding
    the whole name (``hover``: the cell's hover text, and what a filter by name searches)."""

    key: str
    label: str
    fmt: Callable[[Any], str] = str
    name: bool = False
    width: str = "110px"
    help: str = ""
    hover: str = ""


def us_col(key: str, label: str) -> Col:
    return Col(key, label, fmt_us)


def html_table(df: pd.DataFrame, cols: Sequence[Col], name_width: int = 80) -> str:
    """A table of ``df``'s rows; name cells are cut to ``name_width`` with the full text as title."""
    present = [c for c in cols if c.key in df.columns]
    head = "".join(f'<th class="{"n" if c.name else ""}"{header_title(c.help)}>{esc(c.label)}</th>' for c in present)
    body = []
    keys = list(dict.fromkeys([c.key for c in present] + [c.hover for c in present if c.hover in df.columns]))
    for values in df[keys].itertuples(index=False, name=None):
        row = dict(zip(keys, values))
        cells = []
        for col in present:
            value = row[col.key]
            if col.name:
                whole = row[col.hover] if col.hover in row else value
                cells.append(f'<td class="n" title="{esc(whole)}">{esc(shorten(col.fmt(value), name_width))}</td>')
            else:
                cells.append(f"<td>{esc(col.fmt(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="nbp-scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def header_title(help_text: str) -> str:
    """A header's ``title`` attribute holding its column's help, or nothing without one."""
    return f' title="{esc(help_text)}"' if help_text else ""


def how(text: str) -> str:
    """The one line under a section heading that says how to read it."""
    return f'<div class="how">{esc(text)}</div>'


def count(v: Any) -> str:
    return f"{int(v):,}"


def _ms(v: Any) -> str:
    return fmt_us(float(v) * 1e3)


# -- sections ---------------------------------------------------------------------------------
def metrics_html(report: "Report") -> str:
    model = view_model.of(report)
    h = model.headline
    boxes = [("average step", fmt_us(h["avg_step_us"]), h["step_label"])]
    detail = model.throughput_detail
    if detail is not None:
        boxes.append(("samples / s", f"{h['samples_per_s']:,.0f}", detail))
    if h["gpu_utilization"] is not None:
        boxes.append(("GPU utilization", fmt_pct(h["gpu_utilization"]), "kernel time / step time"))
        boxes.append(("SM efficiency", fmt_pct(h["sm_efficiency"]), "estimated"))
        boxes.append(("occupancy", fmt_pct(h["achieved_occupancy"]), "estimated, achieved"))
        boxes.append(("tensor cores", fmt_pct(h["tensor_core_share"]), "share of kernel time"))
    mfu = model.mfu_detail
    if mfu is not None:
        boxes.append(("MFU", fmt_pct(h["mfu"]), mfu))
    return '<div class="metrics">' + "".join(
        f'<div class="metric"><span>{esc(a)}</span><b>{esc(b)}</b><span>{esc(c)}</span></div>' for a, b, c in boxes
    ) + "</div>"


def breakdown_table(report: "Report") -> pd.DataFrame:
    """Per part: mean µs per step and share of the step, as the chart's legend reads."""
    _, parts = view_model.of(report).breakdown
    means = parts.drop(columns="step").mean()
    total = float(means.sum())
    return pd.DataFrame({
        "part": [LABELS.get(c, c) for c in means.index],
        "per_step_us": means.to_numpy(),
        "share": means.to_numpy() / total if total > 0 else float("nan"),
    })


def device_html(report: "Report") -> str:
    d = report.device
    facts = [f"<b>{esc(d.name)}</b> ({esc(d.kind)})"]
    if d.total_memory_bytes:
        facts.append(f"{esc(fmt_bytes(d.total_memory_bytes))} memory")
    if d.compute_capability:
        facts.append(f"compute capability {d.compute_capability[0]}.{d.compute_capability[1]}")
    if d.sm_count:
        facts.append(f"{d.sm_count} SMs")
    return "<div>Device: " + " · ".join(facts) + "</div>"


def suggestion_card(s: "Suggestion", copy_button: bool, report: "Report") -> str:
    label = f"{s.severity}, guidance" if s.code and s.guidance else s.severity
    parts = [f'<div class="card {esc(s.severity)}"><b>{esc(s.title)}</b> <span class="how">[{esc(label)}]</span>']
    if s.detail:
        parts.append(f"<div>{esc(s.detail)}</div>")
    if s.facts:
        items = "".join(f"<li>{esc(fact)}</li>" for fact in s.facts)
        parts.append(f'<div>Evidence:<ul class="evidence">{items}</ul></div>')
    if s.expected_gain:
        parts.append(f"<div>Expected gain: {esc(s.expected_gain)}</div>")
    if s.code:
        button = (f'<button class="nbp-copy-code" type="button" onclick="{esc(_COPY_ONCLICK)}">Copy</button>'
                  if copy_button else "")
        if s.guidance:  # only comments: nothing to paste that would change the run, so nothing to try
            parts.append(f"<div>{button}<pre>{esc(s.code)}</pre></div>{GUIDANCE_LINE}")
        else:
            parts.append(f"<div>{button}{try_button(s.kind, report)}<pre>{esc(s.code)}</pre></div>{TRY_LINE}")
    parts.append("</div>")
    return "".join(parts)


# "Try it" re-profiles a suggestion: in JupyterLab the labextension (which puts ``nbp-lab`` on
# the page's body) shows the button and handles its click; everywhere else STYLE hides the button
# and shows the line, which says how to do the same by hand. The button of a report made by this
# kernel carries its token, which the extension checks with the kernel before it runs the code;
# any other says where its report came from, and its code is inserted without running (``origin``).
# A guidance card's code is comments only: the change is in the user's own loop, in words.
GUIDANCE_LINE = ('<div class="nbp-guidance">Guidance: make this change in your own code; there is no code to paste '
                 "or try.</div>")
TRY_LINE = ('<div class="nbp-try-line">To try it: paste the code in a new cell above this one, run it, then '
            "re-run this cell with <code>%%torchprofile --compare</code>.</div>")


def try_button(kind: str, report: "Report") -> str:
    """The "Try it" button of a card of ``report`` whose suggestion is ``kind``; the code it tries is the
    card's ``<pre>``."""
    token = view_model.of(report).token
    made = f' data-nbp-report="{token}"' if token else f' data-nbp-origin="{esc(origin.words(report) or "")}"'
    return f'<button class="nbp-try" type="button" data-nbp-kind="{esc(kind)}"{made}>Try it</button>'


def overview_section(report: "Report") -> str:
    kind, _ = view_model.of(report).breakdown
    out = ["<h4>Overview</h4>", how("The average step, and where its time goes: one bar per profiled step. "
                                    + ("Each instant goes to one device category, by priority."
                                       if kind == "device" else "Host time by training phase (no device activity)."))]
    out.append(metrics_html(report))
    out.append(device_html(report))
    svg = view_model.of(report).chart_svg("breakdown")
    if svg:
        out.append(svg)
        out.append(html_table(breakdown_table(report), [Col("part", "part"), us_col("per_step_us", "per step"),
                                                         Col("share", "share", fmt_pct)]))
    return "".join(out)


def steps_section(report: "Report") -> str:
    steps = report.steps
    if steps.empty:
        return ""
    fmts = [Col("step", "step"), Col("phase", "phase"), Col("wall_ms", "wall", _ms),
            Col("dataloader_ms", "data wait", _ms)]
    fmts += [Col(c, c.removesuffix("_bytes").replace("_", " "), fmt_bytes)
             for c in steps.columns if c.endswith("_bytes")]
    out = ["<h4>Steps</h4>", how("Every step the cell ran, by schedule phase; only the active steps are traced.")]
    out.append(html_table(view_model.of(report).phase_summary, [Col("phase", "phase"), Col("steps", "steps", count),
                                                 Col("mean_wall_ms", "mean wall", _ms),
                                                 Col("mean_dataloader_ms", "mean data wait", _ms)]))
    active = steps[steps["phase"] == "active"]
    shown = active.head(MAX_STEP_ROWS)
    if len(shown):
        more = f" (first {len(shown)} of {len(active)})" if len(active) > len(shown) else ""
        out.append(f"<div>Profiled steps{more}:</div>" + html_table(shown, fmts))
    return "".join(out)


def operators_section(report: "Report") -> str:
    ops = view_model.of(report).operators()  # --top and --sort, as in the text report
    if ops.empty:
        return ""
    cols = [Col("name", "operator", name=True), Col("calls", "calls", count),
            Col("input_shapes", "input shapes", name=True),
            us_col("host_self_us", "host self"), us_col("host_total_us", "host total")]
    if report.has_device_activity:
        cols += [us_col("device_self_us", "device self"), us_col("device_total_us", "device total")]
    memory = [Col(f"{side}_self_alloc_bytes", f"{side} allocated", fmt_bytes) for side in ("host", "device")
              if f"{side}_self_alloc_bytes" in ops and (side == "host" or report.has_device_activity)]
    return (f"<h4>Top operators ({len(ops)} of {len(report.operators)})</h4>"
            + how("Self time excludes the ops an operator calls; total includes them. Device time is the work an "
                  "operator launched. Allocated: bytes its calls allocated themselves.")
            + html_table(ops, cols + memory))


def kernels_section(report: "Report") -> str:
    k = report.kernels
    if k.empty:
        return ""
    cols = [Col("short_name", "kernel", name=True, hover="name"), Col("calls", "calls", count),
            us_col("total_us", "total"), us_col("mean_us", "mean"), us_col("max_us", "max"),
            Col("mean_occupancy", "occupancy", fmt_pct),
            Col("tensor_cores", "tensor cores", lambda v: "yes" if v else "no"),
            us_col("mean_launch_delay_us", "launch delay"), *kernel_roofline_cols(),
            Col("operator", "launched by", name=True)]
    return ("<h4>Kernels</h4>" + how("GPU kernels by total time, with the operator that launched them, how long "
                                      "they waited on their stream after the launch call (mean), and that "
                                      "operator's achieved FLOP/s and what bounds it; the bars group them by what "
                                      "they compute.")
            + (view_model.of(report).chart_svg("kernels") or "")
            + html_table(view_model.of(report).kernels.head(TOP_KERNELS), cols, 60))


def kernel_roofline_cols() -> list[Col]:
    """The Kernels tables' achieved FLOP/s and bound columns (the launching operator's: their ``help`` says so)."""
    return [Col("achieved_flops_per_s", "achieved FLOP/s", partial(cell_text, "flops_per_s"),
                help=KERNEL_ROOFLINE_HELP["achieved_flops_per_s"]),
            Col("bound", "bound", help=KERNEL_ROOFLINE_HELP["bound"])]


def hardware_pieces(view: HardwareView) -> list[tuple[str, str | None]]:
    """The Hardware view's body (``view_model.of(report).hardware``) as (HTML, chart) pieces: each piece's
    HTML, then the chart it names (a section's chart, under the section's heading and above its
    table) or None. The static report draws a chart as SVG, the explorer as an interactive output."""
    if view.absent is not None:
        return [(how(view.absent), None)]

    def facts(pairs: list[tuple[str, str]], cls: str) -> str:
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs)
        return f'<table class="{cls}"><tbody>{rows}</tbody></table>'

    pieces: list[tuple[str, str | None]] = []
    out = [f"<div>Device: <b>{esc(view.device)}</b></div>", facts(view.device_facts, "nbp-hw-device")]
    if view.launch_facts:
        out += ["<h4>Launches</h4>", facts(view.launch_facts, "nbp-hw-launches")]
    for section in view.sections:
        cols = [Col(c, label, partial(cell_text, unit), name=unit == "text") for c, label, unit
                in zip(section.table.columns, section.labels(), section.units())]
        out += [f"<h4>{esc(section.title)}</h4>", how(section.how)]
        if section.chart is not None:
            pieces.append(("".join(out), section.chart))
            out = []
        out.append(html_table(section.table, cols))
    return [*pieces, ("".join(out), None)]


def hardware_section(report: "Report") -> str:
    pieces = hardware_pieces(view_model.of(report).hardware)
    return "<h4>Hardware</h4>" + "".join(body + ((view_model.of(report).chart_svg(chart) or "") if chart else "")
                                         for body, chart in pieces)


def distributed_html(view: DistributedView) -> str:
    """The Distributed view's verdict and tables (its chart is drawn apart, above them): the straggler's
    line and rows marked, as the saved view marks them."""
    return verdict_html(view.verdict, "note nbp-straggler" if view.straggler else "how", view.sections)


def cycles_html(view: CyclesView) -> str:
    """The Cycles view's verdict (the drift, marked as the saved view marks it) and table; its charts are
    drawn apart, above them."""
    return verdict_html(view.verdict, "note nbp-drift" if view.drifted else "how", view.sections)


def verdict_html(verdict: str, verdict_class: str, sections: Sequence[Section]) -> str:
    """A view's one-line verdict, then each of its tables with its title and how to read it."""
    out = [f'<div class="{verdict_class}">{esc(verdict)}</div>']
    for section in sections:
        cols = [Col(c, label, partial(cell_text, unit), name=unit == "text") for c, label, unit
                in zip(section.table.columns, section.labels(), section.units())]
        out += [f"<h4>{esc(section.title)}</h4>", how(section.how), html_table(section.table, cols)]
    return "".join(out)


def distributed_section(report: "Report") -> str:
    view = view_model.of(report).distributed
    return "" if view is None else f"<h4>Distributed</h4>{charts.svg(view.chart) or ''}{distributed_html(view)}"


def cycles_section(report: "Report") -> str:
    view = view_model.of(report).cycles
    if view is None:
        return ""
    return "<h4>Cycles</h4>" + "".join(charts.svg(c) or "" for c in view.charts) + cycles_html(view)


def memory_section(report: "Report") -> str:
    model = view_model.of(report)
    device = model.memory_device
    if device is None:
        return ""
    out = ["<h4>Memory</h4>", how("Memory at the end of every step (wait, warmup and active shaded), then through the "
                                  "profiled steps, then which operators allocated it.")]
    figures = model.memory_figures
    if figures:
        out.append(f"<div>Memory on {esc(device)}: {esc(', '.join(figures))}</div>")
    out += [f'<div class="warn">{esc(w)}</div>' for w in report.memory_warnings]
    out += [svg for svg in (model.chart_svg(n) for n in ("memory", "memory_timeline")) if svg]
    ops = report.memory_by_operator
    ops = ops[ops["device"] == device].head(TOP_MEMORY_OPS)
    if len(ops):
        out.append(f"<div>Allocations on {esc(device)} by operator (held = still allocated at the step's end):</div>")
        out.append(html_table(ops, [Col("name", "operator", name=True), Col("allocations", "allocations", count),
                                    Col("allocated_bytes", "allocated", fmt_bytes),
                                    Col("held_bytes", "held", fmt_bytes)]))
    return "".join(out)


def heat_bar(share: float, width_px: int = 120) -> str:
    """A bar filled to ``share``: its colours come from the theme (style.py's ``.bar.heat``, ``.bar.track``)."""
    w = max(0, min(width_px, round(share * width_px)))
    return (f'<span class="bar heat" style="width:{w}px"></span>'
            f'<span class="bar track" style="width:{width_px - w}px"></span>')


def lines_table(report: "Report") -> str:
    """The cell's source, a heat bar and the host (and device) time on every line."""
    rows = view_model.of(report).lines
    device = report.has_device_activity
    key = "device_us" if device and rows["device_us"].sum() > 0 else "host_us"
    top = float(rows[key].max()) or 1.0
    body = []
    for r in rows.itertuples(index=False):
        figures = f"<td>{esc(fmt_us(r.host_us) if r.host_us else '')}</td>"
        if device:
            figures += f"<td>{esc(fmt_us(r.device_us) if r.device_us else '')}</td>"
        bar = heat_bar(getattr(r, key) / top)
        source = f'<td class="n src"><code>{esc(r.source)}</code></td>'
        body.append(f"<tr><td>{r.line}</td><td>{bar}</td>{figures}{source}</tr>")
    head = ("<th>line</th><th>share</th><th>host</th>" + ("<th>device</th>" if device else "")
            + '<th class="n">source</th>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


LINES_HOW = ("Your cell, each line with the time of the torch ops it ran (calls into functions and modules count "
             "for the calling line); the bar is relative to the costliest line.")
MODULES_HOW = ("Each nn.Module with its submodules folded under it, in call order; every figure includes the "
               "submodules. Click a module to fold or unfold it. Modules run inside torch.compile'd code are not "
               "recorded: torch.compile(model) is one row, the wrapper.")


def lines_section(report: "Report") -> str:
    return "<h4>Cell lines</h4>" + how(LINES_HOW) + lines_table(report)


def modules_tree(report: "Report") -> str:
    """The module tree as nested ``<details>``: folds open and shut in any browser, without script."""
    mods = report.modules.head(MAX_MODULE_ROWS)
    device = report.has_device_activity
    labels = ["module", "calls", "fwd host", "bwd host"] + (["fwd device", "bwd device"] if device else [])
    grid = "m5" if device else "m3"
    head = f'<div class="mrow {grid} mhead">' + "".join(f"<span>{esc(x)}</span>" for x in labels) + "</div>"
    children: dict[str, list[Any]] = {}
    for r in mods.itertuples(index=False):
        children.setdefault(str(r.parent), []).append(r)

    def row(r: Any) -> str:
        figures = [f"{int(r.calls):,}", fmt_us(r.forward_host_us), fmt_us(r.backward_host_us)]
        if device:
            figures += [fmt_us(r.forward_device_us), fmt_us(r.backward_device_us)]
        leaf = str(r.module).rsplit(".", 1)[-1]
        # A qualified name's last part is an attribute ("fc", "0"): the class says what it is.
        # An instance path's ("Linear_1", traces from elsewhere) already starts with it.
        kind = "" if leaf.startswith(str(r.type)) else f'<span class="mt"> {esc(r.type)}</span>'
        indent = f'<span style="padding-left:{16 * int(r.depth)}px"><span class="tw"></span>{esc(leaf)}{kind}</span>'
        return (f'<span class="mrow {grid}" title="{esc(r.module)}">{indent}'
                + "".join(f"<span>{esc(x)}</span>" for x in figures) + "</span>")

    def node(r: Any) -> str:
        kids = children.get(str(r.module), [])
        if not kids:
            return row(r)
        opened = " open" if int(r.depth) < 2 else ""
        return f"<details{opened}><summary>{row(r)}</summary>{''.join(node(k) for k in kids)}</details>"

    more = (f'<div class="how">First {len(mods)} of {len(report.modules)} modules.</div>'
            if len(report.modules) > len(mods) else "")
    return f'<div class="mtree">{head}{"".join(node(r) for r in children.get("", []))}</div>{more}'


def modules_section(report: "Report") -> str:
    return "<h4>Modules</h4>" + how(MODULES_HOW) + modules_tree(report)


def suggestions_section(report: "Report", copy_button: bool) -> str:
    ranked = view_model.of(report).suggestions
    if not ranked:
        return ""
    cards = "".join(suggestion_card(s, copy_button, report) for s in ranked)
    return ("<h4>Suggestions</h4>" + how("Largest expected gain first; each with the measurements behind it and code "
                                          "to paste.") + cards)


def communication_section(report: "Report") -> str:
    comm = report.communication
    if comm.empty or not (comm["communication_us"] > 0).any():
        return ""
    cols = [Col("step", "step"), Col("kernels", "kernels", count), Col("host_ops", "host ops", count),
            us_col("communication_us", "communication"), Col("share", "share of step", fmt_pct),
            Col("overlap_share", "overlapped with compute", fmt_pct)]
    return "<h4>Communication</h4>" + how("Collectives (NCCL, gloo) per step, and how much of them ran under "
                                          "computation.") + html_table(comm, cols)


def gpu_wait_section(report: "Report") -> str:
    idle = report.idle
    if idle.empty:
        return ""
    syncs = report.syncs.groupby("name", as_index=False)[["calls", "total_us"]].sum() if len(report.syncs) else None
    out = ["<h4>GPU idle time and synchronisation</h4>",
           how("Device idle time within each step, split into waiting for the host to launch work and other gaps; "
               "then the calls that made the host wait for the device."),
           html_table(idle, [Col("step", "step"), us_col("busy_us", "busy"), us_col("idle_us", "idle"),
                             us_col("host_wait_us", "waiting for host"), us_col("other_idle_us", "other idle")])]
    if syncs is not None:
        out.append(html_table(syncs, [Col("name", "call", name=True), Col("calls", "calls", count),
                                      us_col("total_us", "total")]))
    return "".join(out)


def more_views_html(report: "Report") -> str:
    """The one line saying which flags would add which views (``tabs.more_views``), or ""."""
    line = more_views(view_model.of(report).tabs)
    return f'<div class="how nbp-more-views">{esc(line)}</div>' if line else ""


def render_html(report: "Report", standalone: bool = False) -> str:
    """The whole static report as an HTML fragment, or a complete page with ``standalone``; a view's
    section only where its tab shows (``tabs.report_tabs``)."""
    views = shown_names(view_model.of(report).tabs)
    parts = [f"<style>{STYLE}</style>", '<div class="nbp">',
             f"<h3>nbprofiler report — {esc(render_summary_line(report))}</h3>"]
    parts += [f'<div class="note">{esc(note)}</div>' for note in report.notes]
    for section in (overview_section(report), more_views_html(report),
                    suggestions_section(report, copy_button=standalone), cycles_section(report),
                    steps_section(report), operators_section(report), kernels_section(report),
                    lines_section(report) if "Cell lines" in views else "",
                    modules_section(report) if "Modules" in views else "",
                    flame_section(view_model.of(report)) if "Flame graph" in views else "",
                    memory_section(report) if "Memory" in views else "",
                    gpu_wait_section(report), communication_section(report), distributed_section(report),
                    hardware_section(report)):
        parts.append(section)
    parts.append("</div>")
    body = "".join(parts)
    if standalone:
        return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>nbprofiler report</title></head>'
                f"<body>{body}</body></html>")
    return body
