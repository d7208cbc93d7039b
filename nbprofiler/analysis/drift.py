"""Drift: when a later cycle of a ``--every N`` run differs from the first ones beyond noise.

A long training run changes as it goes: a loader slows once its cache is cold, memory creeps
up epoch after epoch, throughput sags after a learning-rate change. Each cycle of the run is
compared with the first ones (``BASELINE_CYCLES``, after the very first: it pays for the
loop's warm-up, and it alone runs while no earlier cycle is being summarized), by the statistics a comparison of two
runs uses (``compare.py``): the ratio of the mean step times (or samples/s), its percentile
bootstrap interval over each side's steps, widened for the machine's load moving between
them. A single slow cycle is noise the user cannot act on, so a drift is a change that lasts:
every cycle from its first to the run's last differs, in the same direction, for at least
``MIN_DRIFT_CYCLES`` cycles. Only changes for the worse are drifts: steps that take longer,
a data wait that takes a larger share of the step, memory that rises cycle after cycle. A
slowdown in cycles where other programs kept the machine busier (``other_cores``, by
``LOAD_SHIFT_CORES`` or more) is the machine's, not the run's: no drift is claimed from it.

The steps compared are the sampler's unprofiled ones (the schedule's wait), which the profiler
did not slow; the cell's first step is left out, as a comparison leaves it out. Which part of
the step moved comes from the cycles' traces (their breakdown shares of the profiled steps).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..format import fmt_bytes, fmt_ms
from .compare import CONFIDENCE, LOAD_SHIFT_CORES, percentiles, resample, speedup, speedup_interval
from .cycles import PARTS, step_memory

BASELINE_CYCLES = 2  # "the first ones": at most this many cycles, as many as leave MIN_DRIFT_CYCLES after them
MIN_DRIFT_CYCLES = 2  # a drift lasts at least this many cycles, to the run's end
MIN_SLOWDOWN = 1.25  # a drift of the step time is at least this factor, however sure
MIN_WAIT_RISE = 0.10  # a drift of the data wait takes at least this much more of the step
MIN_MEMORY_RISE = 0.05  # memory that rises cycle after cycle rises this share of where it began...
MIN_MEMORY_RISE_BYTES = 16 * 2**20  # ...and this much, so that the allocator's rounding is no drift
DRIFT_RESAMPLES = 2_000  # per cycle compared; the interval's ends move by well under 1% from 10,000
DRIFT_SEED = 29
DRIFT_COLUMNS = ("measure", "from_cycle", "from_step", "before", "after", "low", "high", "cycles", "change", "text")


@dataclass(frozen=True)
class _Cycle:
    number: int
    first_step: int
    steps: pd.DataFrame  # the cycle's unprofiled steps


def drift(steps: pd.DataFrame, cycles: pd.DataFrame, labels: Mapping[str, str], allowance: float,
          workers: int | None = None) -> pd.DataFrame:
    """One row per measure that drifted (``DRIFT_COLUMNS``): ``step_time`` (samples/s where the
    steps counted samples), ``data_wait`` (its share of the step) and ``memory`` (at each
    cycle's end); ``before``/``after`` the first cycles' figure and the drifted cycles', ``low``/
    ``high`` the interval of the change (a ratio for the step time, a difference of shares
    for the wait, none for memory), ``change`` what changed in words and ``text`` the sentence a
    user reads, which says from when. ``allowance``: how far
    the machine's load moves a whole cycle (``compare.run_drift``); ``workers``: the main
    DataLoader's, to say why a wait rose. No row on a steady run, or with too few cycles."""
    timed = _cycles(steps, cycles)[1:]  # the first cycle warms up, and no cycle's summary competes with its steps
    baseline_n = min(BASELINE_CYCLES, len(timed) - MIN_DRIFT_CYCLES)
    if baseline_n < 1:
        return pd.DataFrame(columns=list(DRIFT_COLUMNS))
    first, later = timed[:baseline_n], timed[baseline_n:]
    base = pd.concat([c.steps for c in first])
    load = _Load(cycles, [c.number for c in first])
    rows = [row for row in (_step_time(base, later, cycles, labels, allowance, load),
                            _data_wait(base, later, workers, load),
                            _memory(steps, cycles, 1 + baseline_n)) if row is not None]
    return pd.DataFrame(rows, columns=list(DRIFT_COLUMNS))


def _cycles(steps: pd.DataFrame, cycles: pd.DataFrame) -> list[_Cycle]:
    """Each cycle's unprofiled steps (all of its steps where it had none), the cell's first left out."""
    out = []
    for row in cycles.itertuples():
        rows = steps[(steps["step"] >= row.first_step) & (steps["step"] <= row.last_step) & (steps["step"] > 0)]
        waiting = rows[rows["phase"] == "wait"]
        out.append(_Cycle(int(row.cycle), int(row.first_step), waiting if len(waiting) >= 2 else rows))
    return [c for c in out if len(c.steps) >= 2]


class _Load:
    """How busy other programs kept the machine in each cycle (``other_cores``), to tell a run that
    slowed from a machine that got busier: the same steady loop, its cores shared with another job
    from some cycle on, slows as much as a loader that falls behind."""

    def __init__(self, cycles: pd.DataFrame, baseline: list[int]) -> None:
        self._by_cycle = dict(zip(cycles["cycle"].astype(int), cycles["other_cores"]))
        self._baseline = self._mean(baseline)

    def _mean(self, numbers: list[int]) -> float | None:
        known = [float(v) for n in numbers if (v := self._by_cycle.get(n)) is not None and math.isfinite(v)]
        return sum(known) / len(known) if known else None

    def explains(self, run: list[_Cycle]) -> bool:
        """Whether other programs kept ``LOAD_SHIFT_CORES`` more busy in the drifted cycles than in the first ones."""
        drifted = self._mean([c.number for c in run])
        return self._baseline is not None and drifted is not None and drifted - self._baseline >= LOAD_SHIFT_CORES


def _onset(later: list[_Cycle], drifted: Callable[[_Cycle], bool]) -> list[_Cycle]:
    """The cycles from the drift's first to the run's last: the longest run of drifted cycles
    that ends the run, checked from the last back; empty when shorter than ``MIN_DRIFT_CYCLES``."""
    n = 0
    for cycle in reversed(later):
        if not drifted(cycle):
            break
        n += 1
    return later[len(later) - n:] if n >= MIN_DRIFT_CYCLES else []


def _ms_work(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
    """Each step's wall time, and its samples where every step counted some (then the ratio is of samples/s)."""
    ms = rows["wall_ms"].to_numpy(np.float64)
    samples = rows["samples"].to_numpy(np.float64) if "samples" in rows else None
    if samples is None or not np.all(np.isfinite(samples)) or not np.all(samples > 0):
        return ms, None
    return ms, samples


def _step_time(base: pd.DataFrame, later: list[_Cycle], cycles: pd.DataFrame, labels: Mapping[str, str],
               allowance: float, load: _Load) -> list[object] | None:
    base_ms, base_work = _ms_work(base)
    per_sample = base_work is not None

    def ratio(rows: pd.DataFrame) -> tuple[float | None, tuple[float, float] | None]:
        ms, work = _ms_work(rows)
        work = work if per_sample and work is not None else None
        b_work = base_work if work is not None else None
        interval = speedup_interval(base_ms, ms, b_work, work, resamples=DRIFT_RESAMPLES, seed=DRIFT_SEED,
                                    drift=allowance)
        return speedup(base_ms, ms, b_work, work), interval

    def drifted(cycle: _Cycle) -> bool:
        s, interval = ratio(cycle.steps)
        return s is not None and interval is not None and 1 / s >= MIN_SLOWDOWN and interval[1] < 1

    run = _onset(later, drifted)
    if not run or load.explains(run):
        return None
    after = pd.concat([c.steps for c in run])
    s, interval = ratio(after)
    assert s is not None and interval is not None
    onset = run[0]
    before_ms, after_ms = float(base["wall_ms"].mean()), float(after["wall_ms"].mean())
    if per_sample and _ms_work(after)[1] is not None:
        rate = lambda rows: float(rows["samples"].sum() / rows["wall_ms"].sum() * 1e3)  # noqa: E731
        what = (f"samples/s fell from {rate(base):,.0f} to {rate(after):,.0f} ({1 / s:.2f}× slower, "
                f"{CONFIDENCE:.0%} interval {1 / interval[1]:.2f}–{1 / interval[0]:.2f}×)")
    else:
        what = (f"the step took {fmt_ms(after_ms)} instead of {fmt_ms(before_ms)} ({1 / s:.2f}× slower, "
                f"{CONFIDENCE:.0%} interval {1 / interval[1]:.2f}–{1 / interval[0]:.2f}×)")
    change = what + _part_moved(cycles, len(later) - len(run), onset.number, labels)
    return ["step_time", onset.number, onset.first_step, before_ms, after_ms, 1 / interval[1], 1 / interval[0],
            len(run), change, _sentence(onset.number, onset.first_step, change)]


def _sentence(cycle: int, step: int, change: str) -> str:
    return f"From cycle {cycle} (step {step:,}) {change}."


def _part_moved(cycles: pd.DataFrame, baseline_end: int, onset: int, labels: Mapping[str, str]) -> str:
    """Which part of the profiled steps grew most from the first cycles to the drifted ones, in
    ms per step (share × profiled step time); "" where the cycles' traces give no breakdown."""
    ms = cycles[[f"{p}_share" for p in PARTS]].mul(cycles["profiled_step_ms"], axis=0)
    first = ms[cycles["cycle"] <= cycles["cycle"].iloc[0] + max(baseline_end, 1) - 1].mean()
    drifted = ms[cycles["cycle"] >= onset].mean()
    delta = (drifted - first).dropna()
    if delta.empty or not (delta > 0).any():
        return ""
    column = str(delta.idxmax())
    part = column.removesuffix("_share")
    return (f"; most of it in {labels.get(part, part)}: {fmt_ms(float(first[column]))} → "
            f"{fmt_ms(float(drifted[column]))} per profiled step")


def _wait_shares(rows: pd.DataFrame) -> np.ndarray:
    """Bootstrap resamples of the data wait's share of the step (mean wait over mean wall time)."""
    x = rows[["dataloader_ms", "wall_ms"]].to_numpy(np.float64)
    means = resample(x, np.mean, np.random.default_rng(DRIFT_SEED), DRIFT_RESAMPLES)
    return means[:, 0] / means[:, 1]


def _share(rows: pd.DataFrame) -> float:
    wall = float(rows["wall_ms"].sum())
    return float(rows["dataloader_ms"].sum()) / wall if wall > 0 else math.nan


def _data_wait(base: pd.DataFrame, later: list[_Cycle], workers: int | None, load: _Load) -> list[object] | None:
    base_share = _share(base)
    base_resampled = _wait_shares(base)

    def rise(rows: pd.DataFrame) -> tuple[float, float, float]:
        low, high = percentiles(_wait_shares(rows) - base_resampled, CONFIDENCE)
        return _share(rows) - base_share, float(low), float(high)

    def drifted(cycle: _Cycle) -> bool:
        delta, low, _ = rise(cycle.steps)
        return delta >= MIN_WAIT_RISE and low > 0

    run = _onset(later, drifted)
    if not run or load.explains(run):
        return None
    after = pd.concat([c.steps for c in run])
    _, low, high = rise(after)
    onset = run[0]
    why = ("the loading in the loop's own process got slower (num_workers=0)" if workers == 0 else
           f"the DataLoader's {workers} workers fall behind" if workers else "the DataLoader falls behind")
    change = f"the data wait rose from {base_share:.0%} to {_share(after):.0%} of the step; {why}"
    return ["data_wait", onset.number, onset.first_step, base_share, _share(after), low, high, len(run), change,
            _sentence(onset.number, onset.first_step, change)]


def _memory(steps: pd.DataFrame, cycles: pd.DataFrame, baseline_n: int) -> list[object] | None:
    """Memory at each cycle's last step, rising every cycle from the drift's first to the run's last."""
    column = step_memory(steps)
    if column is None or len(cycles) < baseline_n + MIN_DRIFT_CYCLES:
        return None
    by_step = steps.set_index("step")[column]
    ends = [float(by_step.get(int(last), math.nan)) for last in cycles["last_step"]]
    n = 0
    for i in range(len(ends) - 1, baseline_n - 1, -1):
        if not ends[i] > ends[i - 1]:
            break
        n += 1
    if n < MIN_DRIFT_CYCLES:
        return None
    start = len(ends) - n
    before, after = ends[start - 1], ends[-1]
    rise = after - before
    if rise < max(MIN_MEMORY_RISE * before, MIN_MEMORY_RISE_BYTES):
        return None
    cycle, step = int(cycles["cycle"].iloc[start]), int(cycles["first_step"].iloc[start])
    change = (f"memory rose every cycle, from {fmt_bytes(before)} to {fmt_bytes(after)} ({fmt_bytes(rise / n)} a "
              f"cycle over {n} cycles)")
    return ["memory", cycle, step, before, after, math.nan, math.nan, n, change, _sentence(cycle, step, change)]
