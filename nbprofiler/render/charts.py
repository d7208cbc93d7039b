"""The report's charts as data: a JSON spec each, drawn by the front end or as static SVG.

A chart is decided once, here, from the Report's tables: which series, which
steps, which phases are shaded. Two drawings read the same spec: the
JupyterLab extension's interactive one (``labextension/src/report/charts.ts``:
hover values, zoom on a range of steps), under ``CHART_MIME``, and the static,
script-free SVG of ``chart_svg.py`` that the HTML report inlines for
nbconvert and GitHub. No image is rendered per report, and nothing here
imports a plotting library: building a small report's charts takes a few ms.
Each spec and its SVG are made once per report by the report's view model
(``view_model``), which every view reads.

The spec (version 2)::

    {"version": 1 | 2, "name": str, "kind": "bars" | "lines" | "timeline" | "hbars" | "scatter", "title": str,
     "x": {"label": str, "unit": "step" | "us" | "category" | "flop_per_byte", "scale"?: "log", "domain"?: [lo, hi]},
     "y": {"label": str, "unit": "us" | "bytes" | "flops_per_s", "scale"?: "log", "domain"?: [lo, hi]},
     "layout": "rows" | "columns", "shared_y": bool, "marker_label"?: str (the legend's name for the markers),
     "panels": [{"title": str | None, "x": [number | str, ...], "from_zero": bool,
                 "series": [{"key": str, "label": str, "color": str, "dash": "solid" | "dashed" | "dotted",
                             "values": [number | None, ...]}],
                 "phases": [{"phase": "wait" | "warmup" | "active", "start": x, "end": x}],
                 "markers": [{"at": x, "label": str}],  -- at a time (timeline), else at the point whose x is ``at``
                 "points"?: [{"label": str, "dtype": str | None, "bound": str}],
                 "roofs"?: [{"dtype": str, "peak_flops_per_s": number, "bytes_per_s": number, "ridge": number}]}]}

Each spec carries the version of its kind (``KIND_VERSIONS``): the oldest spec version that
has the kind, so an extension that draws version 1 still draws every chart but the scatter,
and refuses (with its upgrade message) the scatter it would draw wrong.

``bars`` stack their series per step; ``lines`` draw one point per step;
``timeline`` is a step-wise level over continuous µs; ``hbars`` one bar per
category; ``scatter`` one point per x value on log-log axes over ``domain`` (powers of ten),
each series holding the points of one class (None elsewhere), ``points`` each point's name
and what it is, and ``roofs`` the device's roof per dtype: the memory-bandwidth slope
(``bytes_per_s``) up to the ``ridge`` (FLOPs per byte), then the flat peak. Values are in
the y unit (µs, bytes or FLOP/s), missing ones None. ``color``
names a colour of the theme palette (``chart_svg.COLOR_VARS``). Names of
kernel categories and operators come from traces: untrusted text.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis.device_specs import DTYPES
from ..analysis.kernel_kinds import OTHER, time_by_kind
from ..analysis.roofline import ROOFLINE_COLUMNS, ridge_point
from ..format import fmt_us
from .chart_svg import svg_from_spec
from .hardware import optional_table
from .views import LABELS, breakdown_parts

if TYPE_CHECKING:
    from ..report.comparison import Comparison
    from .view_model import ReportViewModel

CHART_MIME = "application/vnd.nbprofiler.chart+json"
# The spec version that introduced each kind; a spec carries its kind's (module doc).
KIND_VERSIONS = {"bars": 1, "lines": 1, "timeline": 1, "hbars": 1, "scatter": 2}
CHART_NAMES = ("breakdown", "memory", "memory_timeline", "kernels", "roofline")
# The roofline's point colours (``chart_svg.COLOR_VARS``) per class, in the legend's order.
BOUND_COLORS = {"compute-bound": "kernel", "memory-bound": "memcpy", "unknown": "other"}
MAX_TIMELINE_POINTS = 4000
MAX_STEP_MARKERS = 30
# A kernel category under this share of the kernel time is folded into "other".
MIN_CATEGORY_SHARE = 0.02
SHADED_PHASES = ("wait", "warmup", "active")
BREAKDOWN_TITLES = {"device": "Step time by device activity", "phases": "Step time by phase (host)"}

Spec = dict[str, Any]


def build(model: "ReportViewModel", name: str) -> Spec | None:
    """The named chart of ``model``'s report as a JSON-safe spec, or None when it has no data;
    made once per report by its view model (``view_model.of(report).chart_spec``). A chart reads
    the report and what its view model chose for every view (the breakdown, the memory device).

    Names: ``breakdown``, ``memory``, ``memory_timeline``, ``kernels``, ``roofline``.
    """
    if name not in _BUILD:
        raise ValueError(f"unknown chart {name!r}: one of {', '.join(CHART_NAMES)}")
    return _BUILD[name](model)


def svg(spec: Spec | None) -> str | None:
    """A spec drawn as static inline SVG markup (no script, no network), None for no spec."""
    return None if spec is None else svg_from_spec(spec)


def display_bundle(spec: Spec | None, markup: str | None) -> dict[str, Any] | None:
    """``{CHART_MIME: spec, "text/html": markup}``: what a front end shows, the SVG where it lacks the extension."""
    return None if spec is None or markup is None else {CHART_MIME: spec, "text/html": markup}


def json_values(column: pd.Series | np.ndarray) -> list[float | None]:
    """A column as JSON numbers, NaN as None."""
    return [None if math.isnan(v) else v for v in np.asarray(column, dtype=np.float64).tolist()]


def chart_spec(name: str, kind: str, title: str, x: tuple[str, str], y: tuple[str, str],
               panels: list[dict[str, Any]], layout: str = "rows", shared_y: bool = False,
               marker_label: str | None = None) -> Spec:
    """A chart of the spec above; ``marker_label`` names its markers in the legend ("step start" without)."""
    spec: Spec = {"version": KIND_VERSIONS[kind], "name": name, "kind": kind, "title": title,
                  "x": {"label": x[0], "unit": x[1]}, "y": {"label": y[0], "unit": y[1]},
                  "layout": layout, "shared_y": shared_y, "panels": panels}
    if marker_label is not None:
        spec["marker_label"] = marker_label
    return spec


def chart_panel(x: list[Any], series: list[dict[str, Any]], title: str | None = None, from_zero: bool = True,
                phases: list[dict[str, Any]] | None = None,
                markers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"title": title, "x": x, "from_zero": from_zero, "series": series,
            "phases": phases or [], "markers": markers or []}


def chart_series(key: str, label: str, values: list[float | None], color: str, dash: str = "solid") -> dict[str, Any]:
    return {"key": key, "label": label, "color": color, "dash": dash, "values": values}


def _step_series(parts: pd.DataFrame, drawn: set[str]) -> list[dict[str, Any]]:
    """One series per breakdown part in ``drawn``, in the parts' order, µs per step."""
    return [chart_series(col, LABELS.get(col, col), json_values(parts[col]), col)
            for col in parts.columns[1:] if col in drawn]


def _parts_with_time(*frames: pd.DataFrame) -> set[str]:
    return {c for parts in frames for c in parts.columns[1:] if np.nansum(parts[c].to_numpy(np.float64)) > 0}


def breakdown_spec(model: "ReportViewModel") -> Spec | None:
    """Stacked bars, one per profiled step, of the breakdown parts (µs); parts with no time are left out."""
    kind, parts = model.breakdown
    if parts.empty:
        return None
    steps = [int(s) for s in parts["step"]]
    panel = chart_panel(steps, _step_series(parts, _parts_with_time(parts)))
    return chart_spec("breakdown", "bars", BREAKDOWN_TITLES[kind], ("profiled step", "step"), ("time per step", "us"),
                 [panel])


def comparison_spec(comparison: "Comparison") -> Spec | None:
    """The two runs' per-step breakdowns side by side, on one time scale, with the same parts
    in the same colours, so that bars of equal height are equal times."""
    kind = comparison.breakdown_kind
    sides = [(breakdown_parts(run, kind)[1], f"{label} ({when})")
             for run, label, when in ((comparison.before, comparison.before_label, "before"),
                                      (comparison.after, comparison.after_label, "after"))]
    sides = [(parts, title) for parts, title in sides if not parts.empty]
    if not sides:
        return None
    drawn = _parts_with_time(*(parts for parts, _ in sides))
    panels = [chart_panel([int(s) for s in parts["step"]], _step_series(parts, drawn), title) for parts, title in sides]
    return chart_spec("compare_breakdown", "bars", BREAKDOWN_TITLES[kind], ("profiled step", "step"),
                 ("time per step", "us"), panels, layout="columns", shared_y=True)


# (title, [(label, column, colour, dash)]) of the memory chart's panels; tensor memory from the
# sampler when the live run had one, else from the trace.
_RSS = ("process RSS, every step", [("RSS at step end", "rss_bytes", "rss", "solid")])
_SAMPLED = ("device memory, every step", [("allocated at step end", "mem_allocated_bytes", "allocated", "solid"),
                                          ("reserved", "mem_reserved_bytes", "reserved", "dashed"),
                                          ("peak in step", "mem_peak_bytes", "peak", "dotted")])
_TRACED = ("tensor memory, profiled steps", [("allocated at step end", "end_allocated_bytes", "allocated", "solid"),
                                             ("reserved (peak)", "peak_reserved_bytes", "reserved", "dashed"),
                                             ("peak in step", "peak_allocated_bytes", "peak", "dotted")])


def _has(table: pd.DataFrame, column: str) -> bool:
    """A series with data; an all-zero reserved series is the CPU's, which caches nothing."""
    if column not in table or not table[column].notna().any():
        return False
    return "reserved" not in column or bool((table[column] > 0).any())


def phase_runs(steps: list[int], phases: list[Any]) -> list[dict[str, Any]]:
    """Runs of consecutive steps in one schedule phase (wait, warmup, active): the shaded bands."""
    runs: list[dict[str, Any]] = []
    previous = None
    for step, phase in zip(steps, phases):
        if phase in SHADED_PHASES:
            if runs and runs[-1]["phase"] == phase and runs[-1]["end"] == previous:
                runs[-1]["end"] = step
            else:
                runs.append({"phase": phase, "start": step, "end": step})
        previous = step
    return runs


def memory_spec(model: "ReportViewModel") -> Spec | None:
    """Memory at the end of every step of the cell, the schedule's phases shaded: process RSS in a
    panel of its own (its scale and baseline differ), tensor memory from zero."""
    device = model.memory_device
    if device is None:
        return None
    table = model.report.memory_steps
    table = table[table["device"] == device].sort_values("step")
    steps = [int(s) for s in table["step"]]
    phases = phase_runs(steps, table["phase"].tolist()) if "phase" in table else []
    tensor = _SAMPLED if _has(table, "mem_allocated_bytes") else _TRACED
    if tensor is _TRACED and bool(table["reconstructed"].any()):
        tensor = (tensor[0] + ", counted from the start of recording", tensor[1])
    panels = []
    for (title, columns), from_zero in ((_RSS, False), (tensor, True)):
        series = [chart_series(col, label, json_values(table[col]), color, dash)
                  for label, col, color, dash in columns if _has(table, col)]
        if series:
            panels.append(chart_panel(steps, series, f"{device}: {title}", from_zero, phases))
    if not panels:
        return None
    return chart_spec("memory", "lines", f"Memory on {device}", ("step", "step"), ("memory", "bytes"), panels)


def _thin(rows: pd.DataFrame) -> pd.DataFrame:
    """At most ``MAX_TIMELINE_POINTS`` events, keeping each time bin's highest level (the peaks)."""
    if len(rows) <= MAX_TIMELINE_POINTS:
        return rows
    ts = rows["ts"].to_numpy(dtype=np.float64)
    bins = np.minimum(((ts - ts[0]) / max(ts[-1] - ts[0], 1e-9) * MAX_TIMELINE_POINTS).astype(np.int64),
                      MAX_TIMELINE_POINTS - 1)
    keep = rows.assign(_bin=bins).groupby("_bin")["allocated_bytes"].idxmax()
    return rows.loc[np.sort(keep.to_numpy())]


def memory_timeline_spec(model: "ReportViewModel") -> Spec | None:
    """Allocated and reserved memory through the profiled steps, from the trace's events (µs
    since the first profiled step), with a marker where each step starts."""
    device = model.memory_device
    timeline = model.report.memory
    steps = model.report.trace_steps
    if device is None or timeline.empty or steps.empty:
        return None
    t0, t1 = float(steps["start_us"].min()), float(steps["end_us"].max())
    rows = timeline[(timeline["device"] == device) & (timeline["ts"] >= t0) & (timeline["ts"] <= t1)]
    if rows.empty:
        return None
    rows = _thin(rows)
    since = " since recording began" if bool(rows["reconstructed"].any()) else ""
    series = [chart_series("allocated", f"allocated{since}", json_values(rows["allocated_bytes"]), "allocated")]
    if np.nansum(rows["reserved_bytes"].to_numpy(np.float64)) > 0:
        series.append(chart_series("reserved", "reserved", json_values(rows["reserved_bytes"]), "reserved", "dashed"))
    markers = ([{"at": float(r.start_us) - t0, "label": f"step {int(r.step)}"} for r in steps.itertuples(index=False)]
               if len(steps) <= MAX_STEP_MARKERS else [])
    x = (rows["ts"].to_numpy(dtype=np.float64) - t0).tolist()
    panel = chart_panel(x, series, markers=markers)
    return chart_spec("memory_timeline", "timeline", f"{device}: memory during the profiled steps",
                 ("time since the first profiled step", "us"), ("memory", "bytes"), [panel])


def kernels_spec(model: "ReportViewModel") -> Spec | None:
    """Kernel time by category, largest first, one horizontal bar each; categories under
    ``MIN_CATEGORY_SHARE`` are folded into "other"."""
    by_kind = time_by_kind(model.report.kernels)
    total = float(by_kind.sum()) if len(by_kind) else 0.0
    if total <= 0:
        return None
    small = by_kind / total < MIN_CATEGORY_SHARE
    if small.any():
        folded = float(by_kind[small].sum())
        by_kind = by_kind[~small]
        by_kind[OTHER] = by_kind.get(OTHER, 0.0) + folded
    series = [chart_series("kernel_time", "kernel time", json_values(by_kind.to_numpy()), "kernel")]
    title = f"Kernel time by category (total {fmt_us(total)})"
    return chart_spec("kernels", "hbars", title, ("category", "category"), ("kernel time", "us"),
                 [chart_panel([str(k) for k in by_kind.index], series)])


def _log_domain(values: list[float]) -> list[float]:
    """The powers of ten around ``values`` (all > 0): a log axis's ends, at least a decade apart."""
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    return [10.0 ** low, 10.0 ** max(high, low + 1)]


def roofline_spec(model: "ReportViewModel") -> Spec | None:
    """Achieved FLOP/s against arithmetic intensity (FLOPs per byte), log-log: one point per roofline
    row (``report.roofline``) with a known intensity, coloured by what bounds it, under the device's
    roof for each dtype the points ran at (``report.device_spec``: memory bandwidth up to the ridge,
    ``roofline.ridge_point``, then that dtype's peak). None where no row has a known intensity and a
    rate, or the device's bandwidth or the peak of every such row's dtype is unknown: no chart then."""
    report = model.report
    table = optional_table(report, "roofline")
    spec = report.device_spec
    if table is None or spec is None:
        return None
    rows = table.reindex(columns=ROOFLINE_COLUMNS)
    x = rows["intensity"].to_numpy(dtype=np.float64)
    y = rows["achieved_flops_per_s"].to_numpy(dtype=np.float64)
    rows = rows[np.isfinite(x) & (x > 0) & np.isfinite(y) & (y > 0)]
    bandwidth = spec.memory_gb_per_s * 1e9
    roofs = [{"dtype": d, "peak_flops_per_s": spec.peak_flops(d), "bytes_per_s": bandwidth,
              "ridge": ridge_point(spec, d)} for d in DTYPES if d in set(rows["dtype"]) and spec.peak_flops(d)]
    if rows.empty or not roofs:
        return None
    bound = rows["bound"].fillna("unknown").to_numpy(dtype=object)
    series = [chart_series(b, b, [float(v) if c == b else None for v, c in zip(rows["achieved_flops_per_s"], bound)],
                      color) for b, color in BOUND_COLORS.items() if (bound == b).any()]
    points = [{"label": str(op), "dtype": d if isinstance(d, str) else None, "bound": str(b)}
              for op, d, b in zip(rows["operator"], rows["dtype"], bound)]
    xs = rows["intensity"].astype(float).tolist()
    panel = {**chart_panel(xs, series, from_zero=False), "points": points, "roofs": roofs}
    out = chart_spec("roofline", "scatter", f"Roofline on {report.device.name}",
                ("arithmetic intensity", "flop_per_byte"), ("achieved", "flops_per_s"), [panel])
    out["x"]["scale"] = out["y"]["scale"] = "log"
    out["y"]["domain"] = _log_domain(rows["achieved_flops_per_s"].astype(float).tolist()
                                     + [r["peak_flops_per_s"] for r in roofs])
    # Wide enough for the roof's slope to rise from the bottom of the chart to every ridge.
    out["x"]["domain"] = _log_domain(xs + [r["ridge"] for r in roofs] + [out["y"]["domain"][0] / bandwidth])
    return out


_BUILD: dict[str, Callable[["ReportViewModel"], Spec | None]] = {
    "breakdown": breakdown_spec,
    "memory": memory_spec,
    "memory_timeline": memory_timeline_spec,
    "kernels": kernels_spec,
    "roofline": roofline_spec,
}
