"""The static HTML of a Comparison: did the change help, by how much, and where.

It is what a notebook saved with a comparison shows without a kernel (and, in
the payload ``bundle.COMPARISON_MIME``, what the labextension shows), and what
``comparison.to_html(path)`` writes: inline styles, the side-by-side chart as
inline vector SVG, no script and no network, like the report's own HTML.

Operator and kernel names come from traces: every one goes through ``esc``
(``html_table`` escapes each cell).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..format import fmt_before_after, fmt_bytes, fmt_calls, fmt_delta_ms, fmt_factor, fmt_interval, fmt_ms, fmt_pct
from . import view_model
from .style import STYLE
from .html import Col, esc, how, html_table

if TYPE_CHECKING:
    from ..report.comparison import Comparison

TOP_ROWS = 20

# Shared with the widget, which adds its own grid rules to STYLE.
COMPARE_STYLE = """
.nbp .verdict{font-size:15px;font-weight:600;margin:4px 0;color:var(--nbp-fg);border-left:4px solid var(--nbp-low);
  padding-left:6px}.nbp .verdict.faster{border-left-color:var(--nbp-ok)}
.nbp .verdict.slower{border-left-color:var(--nbp-error)}
.nbp .why td:last-child,.nbp .why th:last-child{text-align:left;white-space:normal;min-width:260px}
"""

HOW = {
    "Summary": "Speed-up is the mean step before over the mean step after, the throughput's ratio (above 1: "
               "faster), over every step the sampler timed when both runs are live, else the profiled steps; the "
               "interval says how far it could be from noise alone.",
    "Breakdown": "Where each step's time went, before and after, on the same time scale; below, the change per part "
                 "with its interval and what explains it.",
    "Operators": "Operators of both runs, per step, largest change first. New: only in the run after; vanished: only "
                 "in the run before.",
    "Kernels": "GPU kernels of both runs, per step, largest change first. New: only in the run after; vanished: only "
               "in the run before.",
    "Memory": "Memory peaks and growth of each run, and the change.",
}


# -- numbers ---------------------------------------------------------------------------------
def signed(fmt: Callable[[Any], str]) -> Callable[[Any], str]:
    """``fmt`` (of counts, of bytes) for a change: "+12", "−1.5 MiB", "0"."""
    def fmt_delta(v: Any) -> str:
        if v is None or pd.isna(v):
            return "–"
        text = fmt(abs(v))
        return ("+" if v > 0 else "−" if v < 0 else "") + text
    return fmt_delta


signed_calls = signed(fmt_calls)


def verdict_class(comparison: "Comparison") -> str:
    """``faster``, ``slower`` or ``same``: the colour of the verdict's mark (its text keeps the theme's)."""
    if not comparison.changed or comparison.speedup is None:
        return "same"
    return "faster" if comparison.speedup > 1 else "slower"


def title(comparison: "Comparison") -> str:
    return f"{comparison.before_label} → {comparison.after_label}: {comparison.verdict}"


# -- sections --------------------------------------------------------------------------------
def summary_html(comparison: "Comparison") -> str:
    """Verdict, speed-up and interval, step times and samples/s, changes, stated vs measured."""
    c = comparison
    out = [f'<div class="verdict {verdict_class(c)}">{esc(c.verdict)}</div>']
    boxes = []
    if c.speedup is not None:
        ci = fmt_interval(*c.speedup_ci) if c.speedup_ci is not None else "no interval"
        boxes.append(("speed-up", fmt_factor(c.speedup), ci))
    boxes.append(("mean step", fmt_before_after(c.mean_step_ms, fmt_ms), "of the steps compared"))
    boxes.append(("average step", fmt_before_after(c.step_ms, fmt_ms), "each report's headline"))
    if any(v is not None for v in c.samples_per_s):
        boxes.append(("samples / s", fmt_before_after(c.samples_per_s, lambda v: f"{v:,.0f}"), "before → after"))
    out.append('<div class="metrics">' + "".join(
        f'<div class="metric"><span>{esc(a)}</span><b>{esc(b)}</b><span>{esc(d)}</span></div>' for a, b, d in boxes
    ) + "</div>")
    out.append(f'<div class="how">Interval: {esc(c.method)}</div>')
    if c.stated_vs_measured:
        out.append(f"<div>Tried {esc(c.tried or 'a suggestion')}: {esc(c.stated_vs_measured)}</div>")
    if c.changes:
        out.append("<div>What differs in the set-up:</div><ul>"
                   + "".join(f"<li>{esc(change)}</li>" for change in c.changes) + "</ul>")
    if not c.ranks.empty:
        out.append("<div>Per rank:</div>" + html_table(c.ranks, [
            Col("rank", "rank"), Col("before_ms", "before", fmt_ms), Col("after_ms", "after", fmt_ms),
            Col("speedup", "speed-up", fmt_factor)]))
    return "".join(out)


BREAKDOWN_COLS = [Col("label", "part"), Col("before_ms", "before", fmt_ms), Col("after_ms", "after", fmt_ms),
                  Col("delta_ms", "change", fmt_delta_ms), Col("interval", "95% interval"),
                  Col("before_share", "share before", fmt_pct), Col("after_share", "share after", fmt_pct),
                  Col("explanation", "what explains it")]


def breakdown_rows(comparison: "Comparison") -> pd.DataFrame:
    """The parts with time in either run (as the chart draws them), each change's interval in words."""
    table = comparison.breakdown
    table = table[(table["before_ms"].fillna(0) > 0) | (table["after_ms"].fillna(0) > 0)]
    interval = [f"{fmt_delta_ms(low)} to {fmt_delta_ms(high)}" if pd.notna(low) else "–"
                for low, high in zip(table["delta_low_ms"], table["delta_high_ms"])]
    return table.assign(interval=interval)


def breakdown_html(comparison: "Comparison") -> str:
    """The delta table, one row per part, each with what explains its change."""
    rows = breakdown_rows(comparison)
    if rows.empty:
        return '<div class="how">Neither run has a complete profiled step, so there is no breakdown.</div>'
    return f'<div class="why">{html_table(rows, BREAKDOWN_COLS)}</div>'


def main_time(comparison: "Comparison") -> str:
    """The operator time that counts: device time on GPU runs, host time otherwise."""
    return "device" if comparison.breakdown_kind == "device" else "host"


def operator_columns(comparison: "Comparison") -> list[Col]:
    cols = [Col("name", "operator", name=True, width="4fr"), status_col(),
            Col("calls_before", "calls before", fmt_calls, width="90px"),
            Col("calls_after", "calls after", fmt_calls, width="90px"),
            Col("calls_delta", "calls change", signed_calls, width="90px")]
    sides = ("device", "host") if main_time(comparison) == "device" else ("host",)
    for side in sides:
        cols += [Col(f"{side}_self_ms_before", f"{side} self before", fmt_ms),
                 Col(f"{side}_self_ms_after", f"{side} self after", fmt_ms),
                 Col(f"{side}_self_ms_delta", f"{side} self change", fmt_delta_ms)]
    return cols


def kernel_columns() -> list[Col]:
    return [Col("name", "kernel", name=True, width="4fr"), status_col(),
            Col("calls_before", "calls before", fmt_calls, width="90px"),
            Col("calls_after", "calls after", fmt_calls, width="90px"),
            Col("calls_delta", "calls change", signed_calls, width="90px"),
            Col("total_ms_before", "before", fmt_ms), Col("total_ms_after", "after", fmt_ms),
            Col("total_ms_delta", "change", fmt_delta_ms)]


def status_col() -> Col:
    """"new" and "vanished" shown; a name in both runs leaves the cell empty."""
    return Col("status", "new / vanished", lambda v: "" if v == "both" else str(v), width="110px")


def names_section(heading: str, frame: pd.DataFrame, cols: list[Col], noun: str) -> str:
    """The ``TOP_ROWS`` largest changes of an operator or kernel table, new and vanished ones counted."""
    if frame.empty:
        return ""
    counts = frame["status"].value_counts()
    shown = frame.head(TOP_ROWS)
    return (f"<h4>{esc(heading)} ({len(shown)} of {len(frame)})</h4>"
            + how(HOW[heading] + f" {counts.get('new', 0)} new, {counts.get('vanished', 0)} vanished {noun}.")
            + html_table(shown, cols, 70))


MEMORY_COLS = [Col("measure", "measure"), Col("device", "device"), Col("before_bytes", "before", fmt_bytes),
               Col("after_bytes", "after", fmt_bytes), Col("delta_bytes", "change", signed(fmt_bytes))]


def memory_html(comparison: "Comparison") -> str:
    if comparison.memory.empty:
        return '<div class="how">Neither run recorded memory.</div>'
    return html_table(comparison.memory, MEMORY_COLS)


def chart_slot(c: "Comparison") -> str:
    """The side-by-side chart as SVG, in the slot where the JupyterLab extension draws the
    interactive chart from the payload's spec instead (the sanitizer of an untrusted
    notebook drops inline SVG)."""
    svg = view_model.of_comparison(c).chart_svg()
    return f'<div class="nbp-compare-chart">{svg}</div>' if svg else ""


def render_compare_html(comparison: "Comparison", standalone: bool = False) -> str:
    """The whole comparison as an HTML fragment, or a complete page with ``standalone``."""
    c = comparison
    parts = [f"<style>{STYLE}{COMPARE_STYLE}</style>", '<div class="nbp">',
             f"<h3>nbprofiler comparison — {esc(title(c))}</h3>"]
    parts += [f'<div class="note">{esc(note)}</div>' for note in c.notes]
    parts += ["<h4>Summary</h4>", how(HOW["Summary"]), summary_html(c),
              "<h4>Breakdown</h4>", how(HOW["Breakdown"]), chart_slot(c), breakdown_html(c),
              names_section("Operators", c.operators, operator_columns(c), "operators"),
              names_section("Kernels", c.kernels, kernel_columns(), "kernels"),
              "<h4>Memory</h4>", how(HOW["Memory"]), memory_html(c), "</div>"]
    body = "".join(parts)
    if standalone:
        return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>nbprofiler comparison</title></head>'
                f"<body>{body}</body></html>")
    return body
