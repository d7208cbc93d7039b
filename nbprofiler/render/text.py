"""The text report: what terminal IPython and ``print(report.to_text())`` show."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from .format import fmt_bytes, fmt_us, shorten

if TYPE_CHECKING:
    from ..report import Report


def operator_view(report: "Report") -> pd.DataFrame:
    """The operator rows a renderer shows: sorted by ``--sort`` and cut to ``--top``."""
    ops = report.operators
    top = 15
    if report.run is not None:
        top = report.run.options.top
        if report.run.options.sort:
            ops = ops.sort_values(report.run.options.sort, ascending=report.run.options.sort == "name", kind="stable")
    return ops.head(top)


def render_summary_line(report: "Report") -> str:
    steps = report.steps
    active = steps[steps["phase"] == "active"] if len(steps) else steps
    parts = [report.device.name]
    if report.run is not None:
        parts.append(f"{len(steps)} steps run, {len(active)} profiled")
    else:
        parts.append(f"{len(steps)} profiled steps")
    if len(active):
        parts.append(f"avg step {fmt_us(float(active['wall_ms'].mean()) * 1e3)}")
    if report.partial:
        parts.append("PARTIAL")
    return " · ".join(parts)


def _table(df: pd.DataFrame, formats: dict[str, object]) -> str:
    shown = df.copy()
    for col, fmt in formats.items():
        if col in shown:
            shown[col] = [fmt(v) for v in shown[col]]  # type: ignore[operator]
    return shown.to_string(index=False)


def render_text(report: "Report") -> str:
    lines = [f"nbprofiler report — {render_summary_line(report)}"]
    for note in report.notes:
        lines.append(f"  note: {note}")
    steps = report.steps
    if len(steps):
        lines += ["", "Steps"]
        fmts = {"wall_ms": lambda v: fmt_us(v * 1e3), "dataloader_ms": lambda v: fmt_us(v * 1e3)}
        fmts.update({c: fmt_bytes for c in steps.columns if c.endswith("_bytes")})
        lines.append(_table(steps, fmts))
    ops = operator_view(report)
    if len(ops):
        lines += ["", f"Top operators ({len(ops)} of {len(report.operators)})"]
        shown = ops.assign(name=[shorten(n, 50) for n in ops["name"]])
        fmts = {c: fmt_us for c in shown.columns if c.endswith("_us")}
        lines.append(_table(shown, fmts))
    return "\n".join(lines)
