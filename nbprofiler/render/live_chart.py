"""The live status chart of a ``--every N`` run: every step's time and the memory, as the cell runs.

The status line (``live.py``) grows into this chart while a run that watches its whole length
goes on: step time and memory, one point per bucket of steps (``MAX_POINTS`` at most, whatever
the run's length, each bucket's mean time and its last memory reading), a mark where each
profiler cycle begins. It is drawn from the sampler's own arrays, which the loop fills anyway,
at most once a second (``live.py``), in a few hundred µs: the loop pays nothing it can measure.

Two forms of the same figures: a small inline SVG for front ends that show HTML (with the
theme's colours, ``chart_svg.COLOR_VARS``), and a line of block characters for those that show
only text (nbclient, papermill, a terminal).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..format import fmt_bytes, fmt_ms
from .chart_svg import COLOR_VARS, MUTED, Num
from .escape import esc

MAX_POINTS = 240
SPARK_POINTS = 48
SPARKS = "▁▂▃▄▅▆▇█"
WIDTH, STRIP, GAP, LEFT = 560, 40, 10, 4
MAX_MARKS = 60  # cycle marks past this many would fill the strip: then every k-th cycle is marked


@dataclass(frozen=True)
class LiveSeries:
    """What the chart shows: each step's wall time (ms) and memory (bytes; ``memory_label`` says
    which, "RSS" or "allocated"), and where cycles begin (``first``, then every ``every`` steps)."""

    step_ms: np.ndarray
    memory: np.ndarray
    memory_label: str
    every: int
    first: int

    @property
    def steps(self) -> int:
        return len(self.step_ms)


def buckets(values: np.ndarray, n: int, last: bool = False) -> np.ndarray:
    """``values`` in at most ``n`` consecutive buckets of equal size: each bucket's mean, or its
    last value with ``last`` (memory at the bucket's end). The last bucket may be shorter."""
    if len(values) <= n:
        return values.astype(np.float64)
    size = -(-len(values) // n)
    edges = np.arange(0, len(values), size)
    if last:
        return values[np.minimum(edges + size, len(values)) - 1].astype(np.float64)
    return np.add.reduceat(values.astype(np.float64), edges) / np.diff(np.append(edges, len(values)))


def sparkline(values: np.ndarray) -> str:
    """Block characters, lowest value ▁ to highest █ (all ▁ when the values are equal)."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return ""
    low, high = float(finite.min()), float(finite.max())
    span = high - low
    levels = np.zeros(len(values), dtype=int) if span <= 0 else np.clip(
        ((values - low) / span * (len(SPARKS) - 1)).round(), 0, len(SPARKS) - 1).astype(int)
    return "".join(SPARKS[k] for k in levels)


def text(series: LiveSeries) -> str:
    """The chart as one line of text: step time and memory over the run so far."""
    if series.steps < 2:
        return ""
    times = buckets(series.step_ms, SPARK_POINTS)
    line = f"step time {sparkline(times)} (max {fmt_ms(float(np.nanmax(times)))})"
    if len(series.memory):
        line += f" · {series.memory_label} {sparkline(buckets(series.memory, SPARK_POINTS, last=True))} " \
                f"{fmt_bytes(float(series.memory[-1]))}"
    return line


def svg(series: LiveSeries) -> str:
    """The chart as a small inline SVG: a strip of step time, one of memory, the cycles marked."""
    if series.steps < 2:
        return ""
    times = buckets(series.step_ms, MAX_POINTS)
    strips = [(times, "step time", f"max {fmt_ms(float(np.nanmax(times)))}", "kernel")]
    if len(series.memory):
        strips.append((buckets(series.memory, MAX_POINTS, last=True), series.memory_label,
                       fmt_bytes(float(series.memory[-1])), "cpu_exec"))
    height = len(strips) * (STRIP + GAP)
    body = [_cycle_marks(series, height)]
    for k, (values, label, figure, color) in enumerate(strips):
        top = k * (STRIP + GAP)
        body.append(_polyline(values, top, COLOR_VARS[color]))
        body.append(f'<text x="{LEFT + 2}" y="{top + 10}" font-size="10" style="fill:{MUTED}">'
                    f'{esc(label)}: {esc(figure)}</text>')
    return (f'<svg class="nbp-live-chart" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
            f'role="img" aria-label="step time and memory so far">{"".join(body)}</svg>')


def _x(i: Num, n: int) -> Num:
    """Where point ``i`` of ``n`` stands across the chart."""
    return LEFT + (WIDTH - 2 * LEFT) * i / max(n - 1, 1)


def _polyline(values: np.ndarray, top: int, color: tuple[str, str]) -> str:
    finite = np.where(np.isfinite(values), values, np.nan)
    low, high = float(np.nanmin(finite)), float(np.nanmax(finite))
    span = high - low or 1.0
    ys = top + STRIP - 2 - (finite - low) / span * (STRIP - 14)
    xs = _x(np.arange(len(values), dtype=np.float64), len(values))
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys) if np.isfinite(y))
    return (f'<polyline fill="none" stroke-width="1.3" stroke="{color[1]}" style="stroke:{color[0]}" '
            f'points="{points}"/>')


def _cycle_marks(series: LiveSeries, height: int) -> str:
    """A thin line where each cycle begins (every k-th past ``MAX_MARKS``)."""
    starts = list(range(series.first, series.steps, series.every))
    stride = -(-len(starts) // MAX_MARKS) if starts else 1
    lines = []
    for start in starts[::stride]:
        x = float(_x(start, series.steps))
        lines.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" stroke="#999" stroke-dasharray="2 3" '
                     f'style="stroke:{MUTED}"/>')
    return "".join(lines)


def series_of(step_ms: Sequence[float], memory: Sequence[float], cuda: bool, every: int,
              skip_first: int) -> LiveSeries:
    """The chart's figures from the sampler's arrays, copied in one go through their buffers (a
    view would keep the loop from appending to them)."""
    times = np.array(step_ms, dtype=np.float64)
    mem = np.array(memory, dtype=np.float64)
    n = min(len(times), len(mem))
    return LiveSeries(times[:n], mem[:n], "allocated" if cuda else "RSS", every, skip_first)
