"""The static HTML report: self-contained (inline styles and images, no network).

Every name from a trace is untrusted text and goes through ``esc``.
"""
from __future__ import annotations

import html
from typing import TYPE_CHECKING

import pandas as pd

from .format import fmt_bytes, fmt_us, shorten
from .text import operator_view, render_summary_line

if TYPE_CHECKING:
    from ..report import Report

_STYLE = """
.nbp{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;line-height:1.4;max-width:1100px}
.nbp h3{font-size:15px;margin:6px 0}.nbp h4{font-size:13px;margin:12px 0 4px}
.nbp table{border-collapse:collapse;margin:4px 0}.nbp td,.nbp th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}
.nbp td.n,.nbp th.n{text-align:left;font-family:ui-monospace,monospace;max-width:520px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.nbp .note{color:#8a5a00;margin:2px 0}.nbp .partial{color:#b00020;font-weight:600}
"""


def esc(value: object) -> str:
    """Escape untrusted text for HTML text and attribute contexts."""
    return html.escape(str(value), quote=True)


def html_table(df: pd.DataFrame, formats: dict[str, object], name_cols: tuple[str, ...] = ("name",)) -> str:
    head = "".join(f'<th class="{"n" if c in name_cols else ""}">{esc(c)}</th>' for c in df.columns)
    rows = []
    for rec in df.itertuples(index=False):
        cells = []
        for col, value in zip(df.columns, rec):
            fmt = formats.get(col)
            text = fmt(value) if fmt else value  # type: ignore[operator]
            if col in name_cols:
                cells.append(f'<td class="n" title="{esc(value)}">{esc(shorten(str(value), 80))}</td>')
            else:
                cells.append(f"<td>{esc(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(report: "Report", standalone: bool = False) -> str:
    parts = [f"<style>{_STYLE}</style>", '<div class="nbp">', f"<h3>nbprofiler report — {esc(render_summary_line(report))}</h3>"]
    for note in report.notes:
        parts.append(f'<div class="note">{esc(note)}</div>')
    steps = report.steps
    if len(steps):
        fmts: dict[str, object] = {"wall_ms": lambda v: fmt_us(v * 1e3), "dataloader_ms": lambda v: fmt_us(v * 1e3)}
        fmts.update({c: fmt_bytes for c in steps.columns if c.endswith("_bytes")})
        parts += ["<h4>Steps</h4>", html_table(steps, fmts, name_cols=())]
    ops = operator_view(report)
    if len(ops):
        parts += [f"<h4>Top operators ({len(ops)} of {len(report.operators)})</h4>",
                  html_table(ops, {c: fmt_us for c in ops.columns if c.endswith("_us")})]
    parts.append("</div>")
    body = "".join(parts)
    if standalone:
        return f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>nbprofiler report</title></head><body>{body}</body></html>'
    return body
