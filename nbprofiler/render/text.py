"""The text report: what terminal IPython and ``print(report.to_text())`` show.

The same sections as the HTML report, in the same order, cut to what reads in
a terminal: the breakdown as averages, the top rows of each table, and the
suggestions in full, largest expected gain first.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..format import fmt_bytes, fmt_pct, fmt_us, shorten
from . import view_model
from .views import LABELS

if TYPE_CHECKING:
    from ..report import Report

TOP_KERNELS = 10
TOP_LINES = 10
TOP_MODULES = 15


def render_summary_line(report: "Report") -> str:
    """The report's one-line title. Its average step is the overview's (``headline``), so a
    GPU trace's title and overview agree on steps stretched to cover their device work."""
    steps = report.steps
    active = steps[steps["phase"] == "active"] if len(steps) else steps
    parts = [report.device.name]
    if report.ran_live:
        parts.append(f"{len(steps)} steps run, {len(active)} profiled")
    else:
        parts.append(f"{len(steps)} profiled steps")
    avg = view_model.of(report).headline["avg_step_us"]
    if avg is not None:
        parts.append(f"avg step {fmt_us(avg)}")
    if report.partial:
        parts.append("PARTIAL")
    return " · ".join(parts)


def table_text(df: pd.DataFrame, formats: Mapping[str, Callable[[Any], str]]) -> str:
    """``df`` as a plain-text table, each column in ``formats`` written by its function."""
    shown = df.copy()
    for col, fmt in formats.items():
        if col in shown:
            shown[col] = [fmt(v) for v in shown[col]]
    return shown.to_string(index=False)


def _ms(v: float) -> str:
    return fmt_us(v * 1e3)


def _breakdown_lines(report: "Report") -> list[str]:
    model = view_model.of(report)
    h = model.headline
    kind, parts = model.breakdown
    if parts.empty:
        return []
    means = parts.drop(columns="step").mean()
    total = float(means.sum())
    figures = [f"avg step {fmt_us(h['avg_step_us'])} over {h['step_label']}"]
    detail = model.throughput_detail
    if detail is not None:
        figures.append(f"{h['samples_per_s']:,.0f} samples/s ({detail})")
    if h["gpu_utilization"] is not None:
        figures.append(f"GPU utilization {fmt_pct(h['gpu_utilization'])}")
    mfu = model.mfu_detail
    if mfu is not None:
        figures.append(f"MFU {fmt_pct(h['mfu'])} ({mfu})")
    title = "Step time by device activity" if kind == "device" else "Step time by phase (host)"
    out = ["", "Overview: " + ", ".join(figures), title]
    width = max(len(LABELS.get(c, c)) for c in means.index)
    for col, us in means.items():
        if us > 0:
            share = us / total if total > 0 else 0.0
            bar = "█" * round(share * 30)
            out.append(f"  {LABELS.get(col, col):<{width}}  {fmt_us(us):>9}  {fmt_pct(share):>6}  {bar}")
    return out


def _steps_lines(report: "Report") -> list[str]:
    steps = report.steps
    if steps.empty:
        return []
    return ["", "Steps (by schedule phase)",
            table_text(view_model.of(report).phase_summary, {"mean_wall_ms": _ms, "mean_dataloader_ms": _ms})]


def _operator_lines(report: "Report") -> list[str]:
    ops = view_model.of(report).operators()
    if ops.empty:
        return []
    if not report.has_device_activity:
        ops = ops.drop(columns=["device_self_us", "device_total_us", "device_self_alloc_bytes"], errors="ignore")
    shown = ops.assign(name=[shorten(n, 50) for n in ops["name"]])
    formats = {c: fmt_us for c in shown.columns if c.endswith("_us")}
    formats.update({c: fmt_bytes for c in shown.columns if c.endswith("_bytes")})
    return ["", f"Top operators ({len(ops)} of {len(report.operators)})", table_text(shown, formats)]


def _kernel_lines(report: "Report") -> list[str]:
    k = report.kernels
    if k.empty:
        return []
    shown = view_model.of(report).kernels.head(TOP_KERNELS)[["short_name", "calls", "total_us", "mean_us", "operator"]]
    shown = shown.rename(columns={"short_name": "name"})
    shown = shown.assign(name=[shorten(n, 50) for n in shown["name"]],
                         operator=[shorten(str(n), 30) for n in shown["operator"]])
    return ["", f"Top kernels ({len(shown)} of {len(k)})", table_text(shown, {"total_us": fmt_us, "mean_us": fmt_us})]


def _memory_lines(report: "Report") -> list[str]:
    model = view_model.of(report)
    device = model.memory_device
    if device is None:
        return []
    figures = model.memory_figures
    out = ["", f"Memory on {device}: " + (", ".join(figures) if figures else "no samples")]
    out += [f"  WARNING: {w}" for w in report.memory_warnings]
    return out


def _line_lines(report: "Report") -> list[str]:
    lines = report.lines
    if lines.empty:
        return []
    shown = lines.head(TOP_LINES).assign(source=[shorten(s.strip(), 60) for s in lines.head(TOP_LINES)["source"]])
    if not report.has_device_activity:
        shown = shown.drop(columns="device_us")
    return ["", "Cell lines by time", table_text(shown, {"host_us": fmt_us, "device_us": fmt_us})]


def _module_lines(report: "Report") -> list[str]:
    mods = report.modules
    if mods.empty:
        return []
    shown = mods.head(TOP_MODULES)
    names = ["  " * int(d) + str(m).rsplit(".", 1)[-1] for d, m in zip(shown["depth"], shown["module"])]
    shown = shown.assign(module=names)[["module", "calls", "forward_host_us", "backward_host_us",
                                        "forward_device_us", "backward_device_us"]]
    if not report.has_device_activity:
        shown = shown.drop(columns=["forward_device_us", "backward_device_us"])
    more = f" (first {len(shown)} of {len(mods)})" if len(mods) > len(shown) else ""
    return ["", f"Modules{more}", table_text(shown, {c: fmt_us for c in shown.columns if c.endswith("_us")})]


def _suggestion_lines(report: "Report") -> list[str]:
    ranked = view_model.of(report).suggestions
    if not ranked:
        return []
    out = ["", "Suggestions (largest expected gain first)"]
    for i, s in enumerate(ranked, 1):
        out.append(f"{i}. " + s.to_text())
    return out


def render_text(report: "Report") -> str:
    lines = [f"nbprofiler report — {render_summary_line(report)}"]
    for note in report.notes:
        lines.append(f"  note: {note}")
    for section in (_breakdown_lines, _suggestion_lines, _steps_lines, _operator_lines, _kernel_lines,
                    _line_lines, _module_lines, _memory_lines):
        lines += section(report)
    return "\n".join(lines)
