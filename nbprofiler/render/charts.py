"""The report's charts, drawn with matplotlib into inline PNG images.

Figures are built as bare ``matplotlib.figure.Figure`` objects on the Agg
canvas, never through ``pyplot``: no global figure state, no backend switch in
the user's session, nothing left open. Each chart comes back as a ``data:``
URI, so static HTML needs no network and the widget shows it in an HTML
widget. A chart is drawn once per report and reused by every renderer.

Sizes: 7.5 × 3 inches at 100 dpi, 10 pt text, so they read at notebook width.

matplotlib is imported all or nothing (``import_matplotlib``): a first chart
is often drawn in a fresh kernel, where a Ctrl-C during the import would
otherwise break matplotlib for the kernel's life.
"""
from __future__ import annotations

import base64
import importlib
import io
import sys
import weakref
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..format import byte_axis_unit, shorten
from .views import COLORS, LABELS, PHASE_SHADES, breakdown_parts, memory_device

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..report import Report
    from ..report.comparison import Comparison

WIDTH_IN, HEIGHT_IN, DPI = 7.5, 3.0, 100
MAX_TIMELINE_POINTS = 4000
MAX_STEP_LABELS = 30
MAX_BARS = 120
# Per Report (or Comparison), each chart drawn so far by name.
_cache: "weakref.WeakKeyDictionary[object, dict[str, str | None]]" = weakref.WeakKeyDictionary()
# What drawing imports: the figure, the Agg canvas savefig switches to, and the helpers.
MATPLOTLIB_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_agg", "matplotlib.patches",
                      "matplotlib.ticker")


def chart(report: "Report", name: str) -> str | None:
    """The named chart of ``report`` as a PNG data URI, or None when it has no data.

    Names: ``breakdown``, ``memory``, ``memory_timeline``, ``kernels``.
    """
    return _cached(report, name, lambda: _DRAW[name](report))


def comparison_chart(comparison: "Comparison") -> str | None:
    """The comparison's two breakdowns side by side (``compare_breakdown_figure``) as a PNG data URI."""
    def draw() -> "Figure | None":
        kind = comparison.breakdown_kind
        titles = (f"{comparison.before_label} (before)", f"{comparison.after_label} (after)")
        return compare_breakdown_figure(breakdown_parts(comparison.before, kind)[1],
                                        breakdown_parts(comparison.after, kind)[1], kind, titles)

    return _cached(comparison, "compare_breakdown", draw)


def _cached(owner: object, name: str, draw: "Callable[[], Figure | None]") -> str | None:
    """``owner``'s chart ``name``, drawn by ``draw`` the first time it is asked for."""
    charts = _cache.setdefault(owner, {})
    if name not in charts:
        import_matplotlib()
        fig = draw()
        charts[name] = None if fig is None else png_data_uri(fig)
    return charts[name]


def import_matplotlib() -> None:
    """Import ``MATPLOTLIB_MODULES``, or leave no package this import started behind.

    An import stopped half-way (Ctrl-C) drops the interrupted module from
    ``sys.modules``, but the submodules it had finished stay there, bound to the
    half-run package; every later import, the user's ``import matplotlib.pyplot``
    too, then fails (``module 'matplotlib' has no attribute 'get_data_path'``).
    So on any exception every package this import loaded first is removed, and
    the next import starts over.
    """
    if all(name in sys.modules for name in MATPLOTLIB_MODULES):
        return
    before = {name.partition(".")[0] for name in list(sys.modules)}
    try:
        for name in MATPLOTLIB_MODULES:
            importlib.import_module(name)
    except BaseException:
        for name in [n for n in list(sys.modules) if n.partition(".")[0] not in before]:
            sys.modules.pop(name, None)
        raise


def png_data_uri(fig: "Figure") -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(rows: int = 1, height: float = HEIGHT_IN) -> tuple["Figure", list["Axes"]]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0].tolist()
    for ax in axes:
        _style(ax)
    return fig, axes


def _style(ax: "Axes") -> None:
    """The look every chart's axes share: small ticks, light horizontal grid, no top or right frame."""
    ax.tick_params(labelsize=9)
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def breakdown_figure(report: "Report") -> "Figure | None":
    """Stacked bars, one per profiled step, of the breakdown parts in ms."""
    kind, parts = breakdown_parts(report)
    if parts.empty:
        return None
    fig, (ax,) = _figure()
    _stacked_steps(ax, parts)
    ax.set_ylabel("time (ms)", fontsize=10)
    ax.set_title(BREAKDOWN_TITLES[kind], fontsize=11)
    if ax.get_legend_handles_labels()[0]:  # all parts zero (an empty step): no legend to draw
        ax.legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


BREAKDOWN_TITLES = {"device": "Step time by device activity", "phases": "Step time by phase (host)"}


def _stacked_steps(ax: "Axes", parts: pd.DataFrame, drawn: Collection[str] | None = None) -> None:
    """One stacked bar per step of ``parts`` (``step`` plus a µs column per part) in ms, each part
    in its own colour; the parts in ``drawn`` (by default those with any time). Past ``MAX_BARS``
    steps, one stacked band per part (a step-wise area): thousands of separate bars would be
    slivers, and each is an object matplotlib draws on its own."""
    x = np.arange(len(parts))
    bottom = np.zeros(len(parts))
    for col in parts.columns[1:]:
        ms = np.nan_to_num(parts[col].to_numpy(dtype=np.float64) / 1e3)
        if not (col in drawn if drawn is not None else ms.sum()):
            continue
        style = {"label": LABELS.get(col, col), "color": COLORS.get(col)}
        if len(x) <= MAX_BARS:
            ax.bar(x, ms, bottom=bottom, width=0.7, **style)
        else:
            ax.fill_between(x, bottom, bottom + ms, step="mid", linewidth=0, **style)
        bottom += ms
    steps = parts["step"].to_numpy()
    if len(steps) <= MAX_STEP_LABELS:
        ax.set_xticks(x, [str(s) for s in steps])
    else:  # hundreds of labels would be unreadable, and slow to draw: a few, at whole positions
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(nbins=12, integer=True))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: str(steps[int(v)]) if 0 <= v < len(steps) else ""))
    ax.set_xlabel("profiled step", fontsize=10)


def compare_breakdown_figure(before: pd.DataFrame, after: pd.DataFrame, kind: str,
                             titles: tuple[str, str]) -> "Figure | None":
    """The two runs' per-step breakdowns (``breakdown_parts`` frames) side by side, on one
    time axis and with the report chart's colours, so bars of equal height are equal times.
    Both panels stack the same parts in the same order: those with time on either side."""
    sides = [(parts, title) for parts, title in zip((before, after), titles) if not parts.empty]
    if not sides:
        return None
    drawn = {c for parts, _ in sides for c in parts.columns[1:] if np.nansum(parts[c].to_numpy(np.float64)) > 0}
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2 * WIDTH_IN * 0.75, HEIGHT_IN), dpi=DPI)
    axes = fig.subplots(1, len(sides), sharey=True, squeeze=False)[0]
    for ax, (parts, title) in zip(axes, sides):
        _style(ax)
        _stacked_steps(ax, parts, drawn)
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("time (ms)", fontsize=10)
    fig.suptitle(BREAKDOWN_TITLES[kind], fontsize=11)
    if axes[-1].get_legend_handles_labels()[0]:
        axes[-1].legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def _memory_series(table: pd.DataFrame) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Panels of (label, column, style): process RSS apart from tensor memory, whose scale differs."""
    panels = []
    if "rss_bytes" in table and table["rss_bytes"].notna().any():
        panels.append(("process RSS, every step", [("RSS at step end", "rss_bytes", "-")]))
    if "mem_allocated_bytes" in table and table["mem_allocated_bytes"].notna().any():
        panels.append(("device memory, every step", [
            ("allocated at step end", "mem_allocated_bytes", "-"),
            ("reserved", "mem_reserved_bytes", "--"),
            ("peak in step", "mem_peak_bytes", ":"),
        ]))
    elif table["end_allocated_bytes"].notna().any():
        since = ", counted from the start of recording" if table["reconstructed"].any() else ""
        panels.append((f"tensor memory, profiled steps{since}", [
            ("allocated at step end", "end_allocated_bytes", "-"),
            ("reserved (peak)", "peak_reserved_bytes", "--"),
            ("peak in step", "peak_allocated_bytes", ":"),
        ]))
    return panels


def memory_figure(report: "Report") -> "Figure | None":
    """Memory at every step of the cell, with the schedule's phases shaded."""
    device = memory_device(report)
    if device is None:
        return None
    table = report.memory_steps
    table = table[table["device"] == device].sort_values("step")
    panels = _memory_series(table)
    if not panels:
        return None
    fig, axes = _figure(len(panels), height=HEIGHT_IN if len(panels) == 1 else 4.6)
    steps = table["step"].to_numpy()
    for ax, (title, series) in zip(axes, panels):
        cols = [c for _, c, _ in series if _drawn(table, c)]
        unit, size = byte_axis_unit(float(np.nanmax(table[cols].to_numpy(dtype=np.float64))) if cols else 1.0)
        for label, col, style in series:
            if col not in cols:
                continue
            values = table[col].to_numpy(dtype=np.float64) / size
            ax.plot(steps, values, style, marker="o", markersize=3, linewidth=1.5, label=label)
        if "rss" not in cols[0]:
            ax.set_ylim(bottom=0)  # tensor memory from 0; RSS carries the interpreter's baseline
        if "phase" in table:
            _shade_phases(ax, steps, table["phase"].to_numpy())
        ax.set_ylabel(f"memory ({unit})", fontsize=10)
        ax.set_title(f"{device}: {title}", fontsize=10, loc="left")
        ax.legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    axes[-1].set_xlabel("step", fontsize=10)
    return fig


def _drawn(table: pd.DataFrame, column: str) -> bool:
    """A series with data; an all-zero reserved series is the CPU's, which caches nothing."""
    if column not in table or not table[column].notna().any():
        return False
    return "reserved" not in column or bool((table[column] > 0).any())


def _shade_phases(ax: "Axes", steps: np.ndarray, phases: np.ndarray) -> None:
    """Background bands for runs of wait / warmup / active steps, each labelled once."""
    from matplotlib.patches import Patch

    shown: set[str] = set()
    start = 0
    for i in range(1, len(steps) + 1):
        if i < len(steps) and phases[i] == phases[start]:
            continue
        color = PHASE_SHADES.get(str(phases[start]))
        if color is not None:
            ax.axvspan(steps[start] - 0.5, steps[i - 1] + 0.5, color=color, zorder=0, linewidth=0)
            shown.add(str(phases[start]))
        start = i
    handles, labels = ax.get_legend_handles_labels()
    for phase in ("wait", "warmup", "active"):
        if phase in shown:
            handles.append(Patch(color=PHASE_SHADES[phase]))
            labels.append(f"{phase} steps")
    ax.legend(handles, labels, fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))


def memory_timeline_figure(report: "Report") -> "Figure | None":
    """Allocated and reserved memory through the profiled steps, from the trace's events."""
    device = memory_device(report)
    timeline = report.memory
    steps = report.trace_steps
    if device is None or timeline.empty or steps.empty:
        return None
    t0, t1 = float(steps["start_us"].min()), float(steps["end_us"].max())
    rows = timeline[(timeline["device"] == device) & (timeline["ts"] >= t0) & (timeline["ts"] <= t1)]
    if rows.empty:
        return None
    rows = _thin(rows)
    fig, (ax,) = _figure()
    ms = (rows["ts"].to_numpy(dtype=np.float64) - t0) / 1e3
    alloc = rows["allocated_bytes"].to_numpy(dtype=np.float64)
    reserved = rows["reserved_bytes"].to_numpy(dtype=np.float64)
    has_reserved = bool(np.nansum(reserved) > 0)
    unit, size = byte_axis_unit(float(np.nanmax(np.concatenate([alloc, reserved]) if has_reserved else alloc)))
    since = " since recording began" if bool(rows["reconstructed"].any()) else ""
    ax.step(ms, alloc / size, where="post", linewidth=1.2, label=f"allocated{since}")
    if has_reserved:
        ax.step(ms, reserved / size, where="post", linewidth=1.2, linestyle="--", label="reserved")
    if len(steps) <= MAX_STEP_LABELS:  # beyond that, step lines and names would cover the curve
        for row in steps.itertuples(index=False):
            x = (float(row.start_us) - t0) / 1e3
            ax.axvline(x, color="#999999", linewidth=0.8, linestyle=":")
            ax.annotate(f"step {row.step}", (x, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                        color="#666666", xytext=(2, -10), textcoords="offset points")
    ax.set_xlabel("time since the first profiled step (ms)", fontsize=10)
    ax.set_ylabel(f"memory ({unit})", fontsize=10)
    ax.set_title(f"{device}: memory during the profiled steps", fontsize=10, loc="left")
    ax.legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def _thin(rows: pd.DataFrame) -> pd.DataFrame:
    """At most ``MAX_TIMELINE_POINTS`` events, keeping each time bin's highest level (the peaks)."""
    if len(rows) <= MAX_TIMELINE_POINTS:
        return rows
    ts = rows["ts"].to_numpy(dtype=np.float64)
    bins = np.minimum(((ts - ts[0]) / max(ts[-1] - ts[0], 1e-9) * MAX_TIMELINE_POINTS).astype(np.int64),
                      MAX_TIMELINE_POINTS - 1)
    keep = rows.assign(_bin=bins).groupby("_bin")["allocated_bytes"].idxmax()
    return rows.loc[np.sort(keep.to_numpy())]


def kernel_pie_figure(report: "Report") -> "Figure | None":
    """Kernel time by category; slices under 2% are folded into "other"."""
    from ..analysis.kernel_kinds import OTHER, time_by_kind

    by_kind = time_by_kind(report.kernels)
    total = float(by_kind.sum()) if len(by_kind) else 0.0
    if total <= 0:
        return None
    small = by_kind / total < 0.02
    if small.any():
        folded = float(by_kind[small].sum())
        by_kind = by_kind[~small]
        by_kind[OTHER] = by_kind.get(OTHER, 0.0) + folded
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.2), dpi=DPI)
    ax = fig.subplots()
    ax.pie(by_kind.to_numpy(), labels=[shorten(str(k), 20) for k in by_kind.index], autopct="%1.0f%%",
           startangle=90, counterclock=False, textprops={"fontsize": 9},
           wedgeprops={"linewidth": 1, "edgecolor": "white"})
    ax.set_aspect("equal")
    ax.set_title(f"Kernel time by category (total {total / 1e3:.1f} ms)", fontsize=10)
    return fig


_DRAW: dict[str, Callable[["Report"], "Figure | None"]] = {
    "breakdown": breakdown_figure,
    "memory": memory_figure,
    "memory_timeline": memory_timeline_figure,
    "kernels": kernel_pie_figure,
}
