"""A chart spec (``charts.py``) drawn as static SVG markup, for the HTML report.

What nbconvert, GitHub and VS Code show without the JupyterLab extension: vector
graphics with no script and no network. Every mark carries a ``<title>`` (the
browser's hover text) with its value and unit, and a legend names every kind of
mark, the shaded schedule phases and the step markers included.

Colours are CSS classes whose rules read the theme's variables, JupyterLab's
first, then VS Code's, then a literal, so one SVG reads in light, dark and
high-contrast themes; each mark also carries the literal as an attribute for
viewers that drop the style sheet. ``labextension/style/charts.css`` holds the
same rules for the interactive charts (a test keeps the two in step).
Text from traces (kernel categories, device names) is escaped.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..format import byte_axis_unit, fmt_bytes, fmt_rate, fmt_si, fmt_us, shorten
from .escape import esc

# Each colour the specs name: the theme variable chain, and the literal for viewers without CSS.
COLOR_VARS: dict[str, tuple[str, str]] = {
    "kernel": ("var(--jp-brand-color1, var(--vscode-charts-blue, #4C72B0))", "#4C72B0"),
    "memcpy": ("var(--jp-warn-color1, var(--vscode-charts-orange, #DD8452))", "#DD8452"),
    "memset": ("var(--jp-info-color1, var(--vscode-terminal-ansiCyan, #1B8A9E))", "#1B8A9E"),
    "communication": ("var(--vscode-charts-purple, #8172B3)", "#8172B3"),
    "runtime": ("var(--jp-error-color1, var(--vscode-charts-red, #C44E52))", "#C44E52"),
    "dataloader": ("var(--vscode-charts-yellow, #C9971C)", "#C9971C"),
    "cpu_exec": ("var(--jp-success-color1, var(--vscode-charts-green, #55A868))", "#55A868"),
    "other": ("var(--jp-ui-font-color3, var(--vscode-disabledForeground, #8C8C8C))", "#8C8C8C"),
}
COLOR_VARS |= {"forward": COLOR_VARS["kernel"], "backward": COLOR_VARS["communication"],
               "optimizer": COLOR_VARS["cpu_exec"], "allocated": COLOR_VARS["kernel"],
               "reserved": COLOR_VARS["memcpy"], "peak": COLOR_VARS["runtime"], "rss": COLOR_VARS["cpu_exec"]}
PHASE_COLORS = {"wait": "other", "warmup": "dataloader", "active": "cpu_exec"}
PHASE_OPACITY = 0.18
DASHES = {"solid": None, "dashed": "6 4", "dotted": "2 3"}
FG = "var(--jp-ui-font-color1, var(--vscode-foreground, #222))"
MUTED = "var(--jp-ui-font-color2, var(--vscode-descriptionForeground, #555))"
GRID = "var(--jp-border-color2, var(--vscode-editorWidget-border, #ddd))"

CHART_CSS = (
    ".nbp-chart{font:11px system-ui,-apple-system,'Segoe UI',sans-serif;width:100%;height:auto}"
    f".nbp-chart text{{fill:{FG}}}.nbp-chart .nbp-chart-title{{font-size:13px;font-weight:600}}"
    f".nbp-chart text.nbp-muted{{fill:{MUTED}}}.nbp-chart .nbp-grid{{stroke:{GRID}}}"
    f".nbp-chart .nbp-axis,.nbp-chart .nbp-marker{{stroke:{MUTED}}}"
    + "".join(f".nbp-chart .nbp-f-{k}{{fill:{v}}}.nbp-chart .nbp-s-{k}{{stroke:{v}}}"
              for k, (v, _) in COLOR_VARS.items())
    + "".join(f".nbp-chart .nbp-phase-{p}{{fill:{COLOR_VARS[c][0]};fill-opacity:{PHASE_OPACITY}}}"
              for p, c in PHASE_COLORS.items())
)

WIDTH = 720
MARGIN_LEFT, MARGIN_RIGHT, PANEL_TOP, PANEL_BOTTOM = 64, 16, 22, 38
PLOT_HEIGHT = 170
HBAR_ROW, HBAR_LEFT = 22, 150
SCATTER_HEIGHT, SCATTER_RIGHT, POINT_LABEL_CHARS = 260, 150, 24
TITLE_HEIGHT, LEGEND_ROW = 24, 18
MAX_BARS = 120  # past this many steps, each part is one stacked band: separate bars would be slivers
MAX_POINTS = 80  # past this many steps, a line has no point marks
MAX_X_LABELS = 16


# A coordinate: one number, or a numpy array of them (a long series is placed in one go).
Num = TypeVar("Num", float, np.ndarray)


def _n(v: float) -> str:
    return f"{v:.1f}"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Axis ticks from 0 to at least ``top``: multiples of 1, 2, 2.5 or 5 times a power of ten
    (``niceTicks`` in ``labextension/src/report/format.ts``)."""
    if not (top > 0) or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next((m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw), 10 * power)
    ticks = [round(i * step, 12) for i in range(int(top / step + 0.999) + 1)]
    return ticks if len(ticks) > 1 else [0.0, step]


def tick_label(v: float) -> str:
    """A tick value as plain decimals: 500, 0.25, never an exponent."""
    return f"{v:.6f}".rstrip("0").rstrip(".")


def time_axis_unit(max_us: float) -> tuple[str, float]:
    """The unit of a µs axis (``timeAxisUnit`` in format.ts)."""
    if max_us >= 2e6:
        return "s", 1e6
    if max_us >= 2e3:
        return "ms", 1e3
    return "µs", 1.0


class Axis:
    """A value axis: its unit, ticks (in that unit) and the mapping of a value to a fraction of its length."""

    def __init__(self, unit: str, low: float, high: float, from_zero: bool) -> None:
        self.label, self.scale = byte_axis_unit(high) if unit == "bytes" else time_axis_unit(high)
        top, bottom = high / self.scale, low / self.scale
        if not from_zero and top > 0 and bottom > 0.5 * top:  # a level far above zero: show its changes
            span = top - bottom or top * 0.05
            step = nice_ticks(span * 1.25, 4)[1]
            start = max(0.0, math.floor((bottom - span * 0.1) / step) * step)
            self.ticks = [round(start + i * step, 12) for i in range(int((top - start) / step + 0.999) + 1)]
            if len(self.ticks) < 2:
                self.ticks.append(round(start + step, 12))
        else:
            self.ticks = nice_ticks(top)
        self.low, self.high = self.ticks[0] * self.scale, self.ticks[-1] * self.scale

    def frac(self, v: Num) -> Num:
        return (v - self.low) / ((self.high - self.low) or 1.0)


def formatter(unit: str) -> Callable[[float], str]:
    return fmt_bytes if unit == "bytes" else fmt_us


def _finite(values: list[Any]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _title(text: str) -> str:
    return f"<title>{esc(text)}</title>"


def _fill(color: str) -> str:
    return f'class="nbp-f-{esc(color)}" fill="{COLOR_VARS.get(color, COLOR_VARS["other"])[1]}"'


def _stroke(color: str, dash: str) -> str:
    pattern = DASHES.get(dash)
    return (f'class="nbp-s-{esc(color)}" stroke="{COLOR_VARS.get(color, COLOR_VARS["other"])[1]}" fill="none" '
            f'stroke-width="2"' + (f' stroke-dasharray="{pattern}"' if pattern else ""))


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "", extra: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{c}{extra}>{esc(text)}</text>'


def _value_range(spec: dict[str, Any], panel: dict[str, Any]) -> tuple[float, float]:
    """The lowest and highest value a panel's y axis must hold (bars: the stacked totals)."""
    panels = spec["panels"] if spec["shared_y"] else [panel]
    if spec["kind"] == "bars":
        columns = [column for p in panels for column in zip(*(s["values"] for s in p["series"]))]
        totals = [sum(max(0.0, v or 0.0) for v in column) for column in columns]
        return 0.0, max(totals, default=0.0)
    values = [v for p in panels for s in p["series"] for v in _finite(s["values"])]
    return min(values, default=0.0), max(values, default=0.0)


class Frame:
    """A panel's plot area on the canvas, with its value axis and the x position of each point."""

    def __init__(self, spec: dict[str, Any], panel: dict[str, Any], left: float, top: float, width: float) -> None:
        self.left, self.top = left + MARGIN_LEFT, top + PANEL_TOP
        self.width, self.height = width - MARGIN_LEFT - MARGIN_RIGHT, PLOT_HEIGHT
        low, high = _value_range(spec, panel)
        self.axis = Axis(spec["y"]["unit"], low, high, panel["from_zero"])
        xs = panel["x"]
        self.n = len(xs)
        self.continuous = spec["x"]["unit"] == "us"
        self.x_axis = Axis("us", 0.0, max(_finite(xs), default=0.0), True) if self.continuous else None

    def y(self, v: Num) -> Num:
        """Where value ``v`` lies; element-wise for an array of values."""
        return self.top + self.height - self.axis.frac(v) * self.height

    def x(self, i: Num, value: Any = 0.0) -> Num:
        """The centre of point ``i``'s band, or on a continuous axis, where ``value`` lies;
        element-wise for arrays of positions and values (``value`` of the same kind as ``i``)."""
        if self.x_axis is not None:
            return self.left + self.x_axis.frac(value) * self.width
        return self.left + (i + 0.5) * self.width / max(self.n, 1)

    def band(self) -> float:
        return self.width / max(self.n, 1)


def _axes(spec: dict[str, Any], panel: dict[str, Any], f: Frame) -> list[str]:
    """Grid, y ticks in the axis unit, x tick labels, both axis titles and the panel's title."""
    out = []
    for t in f.axis.ticks:
        y = f.y(t * f.axis.scale)
        out.append(f'<line class="nbp-grid" stroke="#ddd" x1="{_n(f.left)}" x2="{_n(f.left + f.width)}" '
                   f'y1="{_n(y)}" y2="{_n(y)}"/>')
        out.append(_text(f.left - 5, y + 4, tick_label(t), "end", "nbp-muted"))
    bottom = f.top + f.height
    out.append(f'<line class="nbp-axis" stroke="#555" x1="{_n(f.left)}" x2="{_n(f.left + f.width)}" '
               f'y1="{_n(bottom)}" y2="{_n(bottom)}"/>')
    mid = f.top + f.height / 2
    out.append(_text(f.left - 48, mid, f"{spec['y']['label']} ({f.axis.label})", "middle", "",
                     f' transform="rotate(-90 {_n(f.left - 48)} {_n(mid)})"'))
    if f.x_axis is not None:
        for t in f.x_axis.ticks:
            out.append(_text(f.left + f.x_axis.frac(t * f.x_axis.scale) * f.width, bottom + 14, tick_label(t),
                             "middle", "nbp-muted"))
        x_title = f"{spec['x']['label']} ({f.x_axis.label})"
    else:
        every = max(1, math.ceil(f.n / MAX_X_LABELS))
        for i in range(0, f.n, every):
            out.append(_text(f.x(i), bottom + 14, str(panel["x"][i]), "middle", "nbp-muted"))
        x_title = spec["x"]["label"]
    out.append(_text(f.left + f.width / 2, bottom + 30, x_title, "middle"))
    if panel["title"]:
        out.append(_text(f.left, f.top - 6, panel["title"], "start", "nbp-muted"))
    return out


def _phases(panel: dict[str, Any], f: Frame) -> list[str]:
    index = {x: i for i, x in enumerate(panel["x"])}
    out = []
    for run in panel["phases"]:
        i, j = index[run["start"]], index[run["end"]]
        x0, x1 = f.x(i) - f.band() / 2, f.x(j) + f.band() / 2
        steps = f"step {run['start']}" if i == j else f"steps {run['start']}–{run['end']}"
        out.append(f'<rect class="nbp-phase-{esc(run["phase"])}" fill="{COLOR_VARS[PHASE_COLORS[run["phase"]]][1]}" '
                   f'fill-opacity="{PHASE_OPACITY}" x="{_n(x0)}" y="{_n(f.top)}" width="{_n(x1 - x0)}" '
                   f'height="{_n(f.height)}">{_title(run["phase"] + " " + steps)}</rect>')
    return out


def _bars(spec: dict[str, Any], panel: dict[str, Any], f: Frame) -> list[str]:
    """Stacked bars per step with each part's time and share of its step; past ``MAX_BARS``
    steps a stacked band per part, whose title gives its mean per step."""
    fmt = formatter(spec["y"]["unit"])
    series = panel["series"]
    columns = [[max(0.0, v or 0.0) for v in col] for col in zip(*(s["values"] for s in series))]
    out = []
    if f.n > MAX_BARS:
        base = [0.0] * f.n
        for k, s in enumerate(series):
            top = [b + c[k] for b, c in zip(base, columns)]
            upper = " ".join(f"{_n(f.x(i))},{_n(f.y(v))}" for i, v in enumerate(top))
            lower = " ".join(f"{_n(f.x(i))},{_n(f.y(v))}" for i, v in reversed(list(enumerate(base))))
            mean = sum(c[k] for c in columns) / f.n
            out.append(f'<polygon {_fill(s["color"])} points="{upper} {lower}">'
                       f'{_title(s["label"] + f": {fmt(mean)} per step on average over {f.n} steps")}</polygon>')
            base = top
        return out
    width = min(48.0, f.band() * 0.72)
    for i, (step, col) in enumerate(zip(panel["x"], columns)):
        total, acc = sum(col), 0.0
        for s, v in zip(series, col):
            if v <= 0:
                continue
            y0, y1 = f.y(acc), f.y(acc + v)
            acc += v
            share = f" ({100 * v / total:.0f}%)" if total > 0 else ""
            hover = f"step {step} · " + s["label"] + f": {fmt(v)}{share}"
            out.append(f'<rect {_fill(s["color"])} x="{_n(f.x(i) - width / 2)}" y="{_n(y1)}" width="{_n(width)}" '
                       f'height="{_n(max(0.5, y0 - y1))}">{_title(hover)}</rect>')
    return out


def _lines(spec: dict[str, Any], panel: dict[str, Any], f: Frame) -> list[str]:
    """A line per series; per step a point whose title gives the step, its phase and the value.
    A ``timeline`` holds each level until the next event (step-wise)."""
    fmt = formatter(spec["y"]["unit"])
    xs = panel["x"]
    phase_of = {x: run["phase"] for run in panel["phases"] for x in xs if run["start"] <= x <= run["end"]}
    stepwise = spec["kind"] == "timeline"
    out = []
    x_values = np.array(xs, dtype=np.float64) if f.x_axis is not None else np.zeros(len(xs))
    for s in panel["series"]:
        d = _path(s["values"], x_values, f, stepwise)
        finite = _finite(s["values"])
        if not finite:
            continue
        summary = f"{s['label']}: {fmt(min(finite))} to {fmt(max(finite))}"
        out.append(f'<path {_stroke(s["color"], s["dash"])} d="{d}">{_title(summary)}</path>')
        if stepwise or f.n > MAX_POINTS:
            continue
        for i, v in enumerate(s["values"]):
            if v is None:
                continue
            phase = f" ({phase_of[xs[i]]})" if xs[i] in phase_of else ""
            out.append(f'<circle {_fill(s["color"])} cx="{_n(f.x(i))}" cy="{_n(f.y(v))}" r="3">'
                       f'{_title(f"step {xs[i]}{phase} · " + s["label"] + f": {fmt(v)}")}</circle>')
    return out


def _path(values: list[Any], x_values: np.ndarray, f: Frame, stepwise: bool) -> str:
    """A series' path data: a move to the first point of each run of values (a None ends a
    run), then a line (or, ``stepwise``, a horizontal then a vertical step) to each next one.
    Placed as arrays: a memory series holds thousands of points."""
    at = np.flatnonzero([v is not None for v in values])
    if len(at) == 0:
        return ""
    xs = [_n(x) for x in f.x(at, x_values[at]).tolist()]
    ys = [_n(y) for y in f.y(np.array([values[i] for i in at.tolist()], dtype=np.float64)).tolist()]
    moves = np.concatenate(([True], np.diff(at) > 1)).tolist()
    step = "H{}V{}" if stepwise else "L{} {}"
    return "".join(("M{} {}" if move else step).format(x, y) for move, x, y in zip(moves, xs, ys))


def _markers(panel: dict[str, Any], f: Frame) -> list[str]:
    """A dashed line where each marker stands: at its time on a continuous axis, else at the point whose
    x is its ``at`` (a marker at no point is not drawn)."""
    out = []
    for m in panel["markers"]:
        if f.x_axis is not None:
            x, title = f.x(0, m["at"]), m["label"] + " starts at " + fmt_us(m["at"])
        elif m["at"] in panel["x"]:
            x, title = f.x(panel["x"].index(m["at"])), m["label"]
        else:
            continue
        out.append(f'<line class="nbp-marker" stroke="#555" stroke-dasharray="2 3" x1="{_n(x)}" x2="{_n(x)}" '
                   f'y1="{_n(f.top)}" y2="{_n(f.top + f.height)}">{_title(title)}</line>')
        out.append(_text(x + 2, f.top + 10, m["label"], "start", "nbp-muted"))
    return out


def _hbars(spec: dict[str, Any], panel: dict[str, Any], top: float) -> tuple[list[str], float]:
    """One horizontal bar per category, largest first, its time and share in the title; a
    category name too long for the margin is shortened, in full in the title."""
    fmt = formatter(spec["y"]["unit"])
    (s,) = panel["series"]
    values = [v or 0.0 for v in s["values"]]
    total = sum(values) or 1.0
    axis = Axis(spec["y"]["unit"], 0.0, max(values, default=0.0), True)
    left, width = HBAR_LEFT, WIDTH - HBAR_LEFT - MARGIN_RIGHT - 60
    height = HBAR_ROW * len(values)
    out = []
    for t in axis.ticks:
        x = left + axis.frac(t * axis.scale) * width
        out.append(f'<line class="nbp-grid" stroke="#ddd" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top)}" '
                   f'y2="{_n(top + height)}"/>')
        out.append(_text(x, top + height + 14, tick_label(t), "middle", "nbp-muted"))
    out.append(_text(left + width / 2, top + height + 30, f"{spec['y']['label']} ({axis.label})", "middle"))
    for i, (name, v) in enumerate(zip(panel["x"], values)):
        y = top + i * HBAR_ROW
        w = axis.frac(v) * width
        out.append(_text(left - 6, y + HBAR_ROW / 2 + 4, shorten(name, 22), "end", "", ""))
        out.append(f'<rect {_fill(s["color"])} x="{left}" y="{_n(y + 3)}" width="{_n(max(w, 0.5))}" '
                   f'height="{HBAR_ROW - 6}">{_title(f"{name}: {fmt(v)} ({100 * v / total:.0f}%)")}</rect>')
        out.append(_text(left + w + 4, y + HBAR_ROW / 2 + 4, f"{100 * v / total:.0f}%", "start", "nbp-muted"))
    return out, height + PANEL_BOTTOM


def point_hover(point: dict[str, Any], x: float, y: float) -> list[str]:
    """A scatter point's hover lines under its name: dtype, FLOPs per byte, FLOP/s and what bounds it
    (``scatterHover`` in labextension/src/report/charts.ts writes the same)."""
    return [f"dtype: {point['dtype'] or 'unknown'}", f"intensity: {fmt_si(x, 'FLOP/byte')}",
            f"achieved: {fmt_si(y, 'FLOP/s')}", f"bound: {point['bound']}"]


def roof_text(roof: dict[str, Any]) -> str:
    """What a roof line is (its hover text)."""
    dtype, peak = roof["dtype"], fmt_si(roof["peak_flops_per_s"], "FLOP/s")
    return (f"{dtype} roof: memory bandwidth {fmt_rate(roof['bytes_per_s'] / 1e9)} up to the ridge at "
            f"{fmt_si(roof['ridge'], 'FLOP/byte')}, then the {dtype} peak {peak}")


class LogAxis:
    """A log axis over ``domain`` (two powers of ten): where a value lies (0 to 1), and a tick per decade."""

    def __init__(self, domain: list[float]) -> None:
        self.low, self.high = math.log10(domain[0]), math.log10(domain[1])
        self.ticks = [10.0 ** k for k in range(round(self.low), round(self.high) + 1)]

    def frac(self, v: float) -> float:
        return (math.log10(v) - self.low) / ((self.high - self.low) or 1.0)


def _scatter(spec: dict[str, Any], panel: dict[str, Any], top: float) -> tuple[list[str], float]:
    """Points on log-log axes, each named beside it (cut to ``POINT_LABEL_CHARS``, whole in its
    title with its dtype, intensity, FLOP/s and class), under each roof: the bandwidth slope up to
    the ridge, then the dtype's flat peak."""
    xa, ya = LogAxis(spec["x"]["domain"]), LogAxis(spec["y"]["domain"])
    left, width = MARGIN_LEFT + 10, WIDTH - MARGIN_LEFT - 10 - SCATTER_RIGHT
    top += PANEL_TOP

    def at(x: float, y: float) -> tuple[float, float]:
        return left + xa.frac(x) * width, top + SCATTER_HEIGHT - ya.frac(y) * SCATTER_HEIGHT

    out, bottom = [], top + SCATTER_HEIGHT
    for t in ya.ticks:
        _, y = at(10.0 ** xa.low, t)
        out.append(f'<line class="nbp-grid" stroke="#ddd" x1="{_n(left)}" x2="{_n(left + width)}" y1="{_n(y)}" '
                   f'y2="{_n(y)}"/>')
        out.append(_text(left - 5, y + 4, fmt_si(t, "").strip(), "end", "nbp-muted"))
    for t in xa.ticks:
        x, _ = at(t, 10.0 ** ya.low)
        out.append(f'<line class="nbp-grid" stroke="#ddd" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top)}" '
                   f'y2="{_n(bottom)}"/>')
        out.append(_text(x, bottom + 14, tick_label(t), "middle", "nbp-muted"))
    mid = top + SCATTER_HEIGHT / 2
    out.append(_text(left - 52, mid, f"{spec['y']['label']} (FLOP/s)", "middle", "",
                     f' transform="rotate(-90 {_n(left - 52)} {_n(mid)})"'))
    out.append(_text(left + width / 2, bottom + 30, f"{spec['x']['label']} (FLOP/byte)", "middle"))
    for roof in panel["roofs"]:
        start = max(10.0 ** xa.low, 10.0 ** ya.low / roof["bytes_per_s"])
        corners = [at(start, start * roof["bytes_per_s"]), at(roof["ridge"], roof["peak_flops_per_s"]),
                   at(10.0 ** xa.high, roof["peak_flops_per_s"])]
        d = "M" + " L".join(f"{_n(x)} {_n(y)}" for x, y in corners)
        out.append(f'<path data-roof="{esc(roof["dtype"])}" {_stroke("other", "dashed")} d="{d}">'
                   f'{_title(roof_text(roof))}</path>')
        out.append(_text(corners[2][0] + 4, corners[2][1] + 4,
                         f"{roof['dtype']} {fmt_si(roof['peak_flops_per_s'], 'FLOP/s')}", "start", "nbp-muted"))
    for s in panel["series"]:
        for i, v in enumerate(s["values"]):
            if v is None:
                continue
            point, (x, y) = panel["points"][i], at(panel["x"][i], v)
            hover = " · ".join([point["label"], *point_hover(point, panel["x"][i], v)])
            out.append(f'<g class="nbp-point"><circle {_fill(s["color"])} cx="{_n(x)}" cy="{_n(y)}" r="4">'
                       f'{_title(hover)}</circle>'
                       f'{_text(x + 6, y - 5, shorten(point["label"], POINT_LABEL_CHARS))}</g>')
    return out, PANEL_TOP + SCATTER_HEIGHT + PANEL_BOTTOM


def legend_entries(spec: dict[str, Any]) -> list[dict[str, str]]:
    """Every kind of mark the chart draws, once: ``{"kind": "series"|"phase"|"marker"|"roof", "label", "color",
    "dash"}``."""
    entries: dict[str, dict[str, str]] = {}
    for panel in spec["panels"]:
        for s in panel["series"]:
            entries.setdefault(f"s:{s['key']}", {"kind": "series", "label": s["label"], "color": s["color"],
                                                 "dash": s["dash"]})
    phases = {run["phase"] for panel in spec["panels"] for run in panel["phases"]}
    for phase in PHASE_COLORS:
        if phase in phases:
            entries[f"p:{phase}"] = {"kind": "phase", "label": f"{phase} steps", "color": phase, "dash": "solid"}
    if any(panel["markers"] for panel in spec["panels"]):
        entries["m"] = {"kind": "marker", "label": spec.get("marker_label", "step start"), "color": "",
                        "dash": "dotted"}
    if any(panel.get("roofs") for panel in spec["panels"]):
        entries["r"] = {"kind": "roof", "label": "roof (memory bandwidth, then peak)", "color": "other",
                        "dash": "dashed"}
    return list(entries.values())


def _legend(spec: dict[str, Any], top: float) -> tuple[list[str], float]:
    """The legend in rows across the chart's width (about 7 px a character)."""
    out, x, y = [], float(MARGIN_LEFT), top + 12
    line = spec["kind"] in ("lines", "timeline")
    for entry in legend_entries(spec):
        width = 34 + 7 * len(entry["label"])
        if x + width > WIDTH and x > MARGIN_LEFT:
            x, y = float(MARGIN_LEFT), y + LEGEND_ROW
        if entry["kind"] == "phase":
            c = COLOR_VARS[PHASE_COLORS[entry["color"]]][1]
            swatch = (f'<rect class="nbp-phase-{entry["color"]}" fill="{c}" fill-opacity="{PHASE_OPACITY}" '
                      f'x="{_n(x)}" y="{_n(y - 9)}" width="16" height="11"/>')
        elif entry["kind"] == "marker":
            swatch = (f'<line class="nbp-marker" stroke="#555" stroke-dasharray="2 3" x1="{_n(x + 8)}" '
                      f'x2="{_n(x + 8)}" y1="{_n(y - 10)}" y2="{_n(y + 2)}"/>')
        elif line or entry["kind"] == "roof":
            swatch = f'<path {_stroke(entry["color"], entry["dash"])} d="M{_n(x)} {_n(y - 4)}h16"/>'
        else:
            swatch = f'<rect {_fill(entry["color"])} x="{_n(x)}" y="{_n(y - 9)}" width="16" height="11"/>'
        out.append(f'<g class="nbp-legend-entry">{swatch}{_text(x + 21, y, entry["label"])}</g>')
        x += width
    return out, y + 8 - top


def svg_from_spec(spec: dict[str, Any]) -> str:
    """The whole chart: title, panels (stacked in rows, or side by side), legend."""
    body = [_text(MARGIN_LEFT, 16, spec["title"], "start", "nbp-chart-title")]
    top = float(TITLE_HEIGHT)
    if spec["kind"] in ("hbars", "scatter"):
        draw = _hbars if spec["kind"] == "hbars" else _scatter
        marks, height = draw(spec, spec["panels"][0], top + 4)
        body += marks
        top += height + 4
    else:
        columns = spec["layout"] == "columns"
        width = WIDTH / len(spec["panels"]) if columns else WIDTH
        for k, panel in enumerate(spec["panels"]):
            f = Frame(spec, panel, k * width if columns else 0.0, top, width)
            body += _phases(panel, f) + _axes(spec, panel, f) + _markers(panel, f)
            body += _bars(spec, panel, f) if spec["kind"] == "bars" else _lines(spec, panel, f)
            if not columns or k == len(spec["panels"]) - 1:
                top += PANEL_TOP + PLOT_HEIGHT + PANEL_BOTTOM
    marks, height = _legend(spec, top)
    body += marks
    total = top + height
    # The cap is inline: a host's ``svg{max-width:100%}`` (JupyterLab's and nbconvert's output CSS) outranks a
    # class rule, and a chart stretched past WIDTH scales its text with it (1.5x the report's in a wide page).
    return (f'<svg class="nbp-chart" viewBox="0 0 {WIDTH} {_n(total)}" width="{WIDTH}" '
            f'style="max-width:{WIDTH}px" role="img" aria-label="{esc(spec["title"])}"><style>{CHART_CSS}</style>'
            f'{_title(spec["title"])}{"".join(body)}</svg>')
