"""The comparison as text: what ``print(comparison.to_text())`` and a terminal show.

The verdict first, then what changed in set-up, the breakdown with each part's
explanation, and the operators, kernels and memory that moved most.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from ..format import (fmt_before_after, fmt_bytes, fmt_calls, fmt_delta_bytes, fmt_delta_ms, fmt_factor, fmt_ms,
                      fmt_pct, shorten)
from .text import table_text

if TYPE_CHECKING:
    from ..report.comparison import Comparison

TOP_ROWS = 10


def _header(c: "Comparison") -> list[str]:
    figures = [f"avg step {fmt_before_after(c.step_ms, fmt_ms)}",
               f"mean of the steps compared {fmt_before_after(c.mean_step_ms, fmt_ms)}"]
    if any(v is not None for v in c.samples_per_s):
        figures.append(f"samples/s {fmt_before_after(c.samples_per_s, lambda v: f'{v:,.0f}')}")
    b, a = c.step_samples
    figures.append(f"{len(b)} → {len(a)} steps")
    lines = [f"nbprofiler comparison — {c.before_label} → {c.after_label}: {c.verdict}",
             "  " + " · ".join(figures)]
    if c.speedup is not None:
        lines.append(f"  speed-up {fmt_factor(c.speedup)}: {c.method}")
    if c.stated_vs_measured:
        lines.append(f"  {c.stated_vs_measured}")
    lines += [f"  note: {n}" for n in c.notes]
    return lines


def _changes(c: "Comparison") -> list[str]:
    return ["", "Set-up changes", *(f"  - {t}" for t in c.changes or ("none recorded",))]


def _breakdown(c: "Comparison") -> list[str]:
    bd = c.breakdown
    if bd.empty:
        return []
    moved = bd[(bd["before_ms"] > 0) | (bd["after_ms"] > 0)]
    shown = pd.DataFrame({
        "part": moved["label"], "before": [fmt_ms(v) for v in moved["before_ms"]],
        "after": [fmt_ms(v) for v in moved["after_ms"]], "delta": [fmt_delta_ms(v) for v in moved["delta_ms"]],
        "95% interval": [f"{fmt_delta_ms(lo)} … {fmt_delta_ms(hi)}" if not pd.isna(lo) else "–"
                         for lo, hi in zip(moved["delta_low_ms"], moved["delta_high_ms"])],
        "share": [f"{fmt_pct(b)} → {fmt_pct(a)}" for b, a in zip(moved["before_share"], moved["after_share"])],
        "explanation": moved["explanation"],
    })
    title = "Step time by device activity" if c.breakdown_kind == "device" else "Step time by phase (host)"
    return ["", f"{title}, ms per step", shown.to_string(index=False)]


def _difftable_text(title: str, table: pd.DataFrame, columns: list[str]) -> list[str]:
    if table.empty:
        return []
    shown = table.head(TOP_ROWS)[["name", "status", *columns]]
    shown = shown.assign(name=[shorten(n, 50) for n in shown["name"]])
    formats: dict[str, Callable[[Any], str]] = {
        col: (fmt_delta_ms if col.endswith("_delta") else fmt_ms) for col in columns if "_ms" in col}
    formats.update({col: fmt_calls for col in columns if col.startswith("calls")})
    return ["", f"{title} (per step, largest change first; {len(shown)} of {len(table)})", table_text(shown, formats)]


def _operators(c: "Comparison") -> list[str]:
    main = c.operator_time
    cols = ["calls_before", "calls_after", f"{main}_self_ms_before", f"{main}_self_ms_after", f"{main}_self_ms_delta"]
    return _difftable_text("Operators", c.operators, cols)


def _kernels(c: "Comparison") -> list[str]:
    return _difftable_text("Kernels", c.kernels, ["calls_before", "calls_after", "total_ms_before", "total_ms_after",
                                              "total_ms_delta"])


def _memory(c: "Comparison") -> list[str]:
    mem = c.memory
    if mem.empty:
        return []
    return ["", "Memory", table_text(mem, {"before_bytes": fmt_bytes, "after_bytes": fmt_bytes,
                                       "delta_bytes": fmt_delta_bytes})]


def _ranks(c: "Comparison") -> list[str]:
    ranks = c.ranks
    if ranks.empty:
        return []
    return ["", "Ranks (mean step)",
            table_text(ranks, {"before_ms": fmt_ms, "after_ms": fmt_ms, "speedup": fmt_factor})]


def render_compare_text(c: "Comparison") -> str:
    lines = _header(c)
    for section in (_changes, _breakdown, _operators, _kernels, _memory, _ranks):
        lines += section(c)
    return "\n".join(lines)
