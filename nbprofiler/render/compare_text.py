"""The comparison as text: what ``print(comparison.to_text())`` and a terminal show.

The verdict first, then what changed in set-up, the breakdown with each part's
explanation, and the operators, kernels and memory that moved most.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import pandas as pd

from ..format import fmt_bytes, fmt_delta_bytes, fmt_delta_us, fmt_factor, fmt_pct, fmt_us, shorten

if TYPE_CHECKING:
    from ..report.comparison import Comparison

TOP_ROWS = 10


def _ms(v: Any) -> str:
    return fmt_us(None if v is None or pd.isna(v) else float(v) * 1e3)


def _signed_ms(v: Any) -> str:
    return fmt_delta_us(None if v is None or pd.isna(v) else float(v) * 1e3)


def _calls(v: Any) -> str:
    return "–" if pd.isna(v) else f"{float(v):,.4g}"


def _table(df: pd.DataFrame, formats: Mapping[str, Callable[[Any], str]]) -> str:
    shown = df.copy()
    for col, fmt in formats.items():
        if col in shown:
            shown[col] = [fmt(v) for v in shown[col]]
    return shown.to_string(index=False)


def _pair(values: tuple[Any, Any], fmt: Callable[[Any], str]) -> str:
    return f"{fmt(values[0])} → {fmt(values[1])}"


def _header(c: "Comparison") -> list[str]:
    figures = [f"avg step {_pair(c.step_ms, _ms)}", f"median {_pair(c.median_step_ms, _ms)}"]
    if any(v is not None for v in c.samples_per_s):
        figures.append(f"samples/s {_pair(c.samples_per_s, lambda v: '–' if v is None else f'{v:,.0f}')}")
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
        "part": moved["label"], "before": [_ms(v) for v in moved["before_ms"]],
        "after": [_ms(v) for v in moved["after_ms"]], "delta": [_signed_ms(v) for v in moved["delta_ms"]],
        "95% interval": [f"{_signed_ms(lo)} … {_signed_ms(hi)}" if not pd.isna(lo) else "–"
                         for lo, hi in zip(moved["delta_low_ms"], moved["delta_high_ms"])],
        "share": [f"{fmt_pct(b)} → {fmt_pct(a)}" for b, a in zip(moved["before_share"], moved["after_share"])],
        "explanation": moved["explanation"],
    })
    title = "Step time by device activity" if c.breakdown_kind == "device" else "Step time by phase (host)"
    return ["", f"{title}, ms per step", shown.to_string(index=False)]


def _diff_table(title: str, table: pd.DataFrame, columns: list[str]) -> list[str]:
    if table.empty:
        return []
    shown = table.head(TOP_ROWS)[["name", "status", *columns]]
    shown = shown.assign(name=[shorten(n, 50) for n in shown["name"]])
    formats: dict[str, Callable[[Any], str]] = {
        col: (_signed_ms if col.endswith("_delta") else _ms) for col in columns if "_ms" in col}
    formats.update({col: _calls for col in columns if col.startswith("calls")})
    return ["", f"{title} (per step, largest change first; {len(shown)} of {len(table)})", _table(shown, formats)]


def _operators(c: "Comparison") -> list[str]:
    main = c.operator_time
    cols = ["calls_before", "calls_after", f"{main}_self_ms_before", f"{main}_self_ms_after", f"{main}_self_ms_delta"]
    return _diff_table("Operators", c.operators, cols)


def _kernels(c: "Comparison") -> list[str]:
    return _diff_table("Kernels", c.kernels, ["calls_before", "calls_after", "total_ms_before", "total_ms_after",
                                              "total_ms_delta"])


def _memory(c: "Comparison") -> list[str]:
    mem = c.memory
    if mem.empty:
        return []
    return ["", "Memory", _table(mem, {"before_bytes": fmt_bytes, "after_bytes": fmt_bytes,
                                       "delta_bytes": fmt_delta_bytes})]


def _ranks(c: "Comparison") -> list[str]:
    ranks = c.ranks
    if ranks.empty:
        return []
    return ["", "Ranks (mean step)", _table(ranks, {"before_ms": _ms, "after_ms": _ms, "speedup": fmt_factor})]


def render_compare_text(c: "Comparison") -> str:
    lines = _header(c)
    for section in (_changes, _breakdown, _operators, _kernels, _memory, _ranks):
        lines += section(c)
    return "\n".join(lines)
