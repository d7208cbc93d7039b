"""Did a change help? Two runs' tables side by side, and whether the difference beats the noise.

Pure functions over what two reports measured: the per-step times, the per-step
breakdown, the operator, kernel and memory tables, and the live runs' set-up.
``nbprofiler.report.comparison.Comparison`` feeds them from two Reports.

The speed-up is the ratio of the mean step times, which is what throughput (and an
epoch) follows: a loop whose steps alternate between waiting for a batch and not
gains what its mean gains, whatever its median does. Between two live runs it is
over every step the per-step sampler timed, not only the few the profiler kept, so
a default schedule of 3 profiled steps still sees a loop's whole length; between a
live run and a trace file, or two trace files, it is over the profiled steps, the
only ones a trace times. The cell's first step is left out where others remain: it
pays once for what later steps reuse (the DataLoader's iterator and workers, lazy
initialisation, the allocator's first blocks).

The interval is a percentile bootstrap over the steps of each run, each side
resampled on its own: it needs no assumption about the shape of the step-time
distribution. A bootstrap of a mean from few steps is too narrow by sqrt((n-1)/n),
so each side's resampled deviations are widened by its inverse (``tests/analysis/test_compare.py``
checks that identical distributions give an interval holding 1 in at least 90% of
simulated pairs from 3 steps a side). What it cannot see is a drift between the two
runs that no step of either shows: the machine's load moving between them. The same
cell profiled twice on a busy 2-core machine, its steps steady to 1% within each run,
measured 2% apart. So the interval is widened by ``RUN_DRIFT`` on each side, and a
change must beat that too. Where other programs kept a share of the machine busy during
either run (``RunRecord.other_cores``), whole runs move further: the same 30-step cell,
profiled 18 times on a 2-core machine shared with other jobs (load average 1.1 to 1.8),
its steps steady to 5-10% within each run, read runs apart by about 10% (standard
deviation). There the allowance is ``BUSY_RUN_DRIFT``, which kept 17 of those 18
identical pairs "no measurable change" and 17 of 18 changes of 1.35× "faster"
(``bench/compare_power.py`` measures both).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import zip_longest
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..format import fmt_delta_us, fmt_factor, fmt_interval, fmt_pct
from ..options import ProfileOptions
from ..records import LoaderRecord, RunRecord
from ..trace.table import DeviceInfo

RESAMPLES = 10_000
SEED = 12  # fixed: the same two runs always get the same interval
CONFIDENCE = 0.95
# How far the machine's load can move a whole run's steps between two runs (see the module
# docstring): the interval is widened by this factor on each side.
RUN_DRIFT = 0.02
# The allowance where other programs kept at least LOAD_BUSY_CORES busy during either run.
BUSY_RUN_DRIFT = 0.08
LOAD_BUSY_CORES = 0.5
# The smallest change a comparison should be able to tell from none: where the interval holds
# both 1 and this factor (or its inverse), it says how many steps would tell them apart.
TELL_FACTOR = 1.3
# Other programs' load (cores kept busy) differing by this much between two runs can move a CPU
# run's steps by more than RUN_DRIFT: a comparison then says the machine may explain it.
LOAD_SHIFT_CORES = 0.5
# A part that moved by less than this share of the step is not worth explaining, however sure the move.
NEGLIGIBLE_PART = 0.01
# The cell's first step is left out of a live run's steps when at least this many remain.
AFTER_FIRST_STEP = 2
ONE_STEP = "one step on a side: no interval; run more steps"
NO_STEPS = "no step on a side: nothing to compare"
UNKNOWN_SETUP = "unknown: trace files record no set-up"
# Suggestion kinds whose claim is in samples/s (a larger batch makes each step longer): their
# claim is held against the runs' samples/s, not their step times.
PER_SAMPLE_KINDS = frozenset({"batch_size"})

LOADER_SETTINGS = ("num_workers", "batch_size", "pin_memory", "persistent_workers", "prefetch_factor")
SCHEDULE = ("skip_first", "wait", "warmup", "active", "repeat")
# The parts of the step a setting can move; None: the whole step (a batch size changes every part's work).
_LOADER_TARGETS: dict[str, frozenset[str] | None] = {
    "num_workers": frozenset({"dataloader"}), "persistent_workers": frozenset({"dataloader"}),
    "prefetch_factor": frozenset({"dataloader"}), "pin_memory": frozenset({"dataloader", "memcpy"}),
    "batch_size": None,
}
# What a suggestion tried (``--tried KIND``) is meant to move; kinds not named change the whole step.
SUGGESTION_TARGETS: dict[str, frozenset[str]] = {"dataloader": frozenset({"dataloader", "memcpy"})}

OPERATOR_VALUES = ("calls", "host_self_ms", "device_self_ms")
KERNEL_VALUES = ("calls", "total_ms")


@dataclass(frozen=True)
class SetupChange:
    """One difference in set-up between the runs: ``text`` in words, ``what`` changed
    ("DataLoader"), and the breakdown ``parts`` it can move (None: the whole step)."""

    text: str
    what: str
    parts: frozenset[str] | None


def method(drift: float) -> str:
    """How the speed-up and its interval are made, in words, with the drift allowance used."""
    return (f"ratio of the mean step times (throughput); {CONFIDENCE:.0%} percentile bootstrap, each run's steps "
            f"resampled on their own ({RESAMPLES:,} resamples, fixed seed, each side's spread corrected for its "
            f"few steps), widened by {drift:.0%} on each side for the machine's load moving between the runs, "
            "which no step of either shows")


def run_drift(other_cores: tuple[float | None, float | None]) -> float:
    """The allowance for the machine's load moving between two runs: ``BUSY_RUN_DRIFT`` when
    other programs kept ``LOAD_BUSY_CORES`` busy during either, else ``RUN_DRIFT``."""
    busy = any(cores is not None and cores >= LOAD_BUSY_CORES for cores in other_cores)
    return BUSY_RUN_DRIFT if busy else RUN_DRIFT


# -- step times --------------------------------------------------------------------------
@dataclass(frozen=True)
class StepSource:
    """Where a report's step times come from: its profiled steps by number (``window``), their
    spans (``end_us - start_us``, stretched on a GPU), and the live sampler's rows (None for a
    trace file, which has no sampler)."""

    window: Sequence[int]
    spans: pd.DataFrame
    sampled: pd.DataFrame | None

    @property
    def live(self) -> bool:
        return self.sampled is not None and len(self.sampled) > 0


@dataclass(frozen=True)
class Steps:
    """One run's steps a comparison is over: each one's time (ms), the samples it consumed (NaN
    where unknown), which steps they are in words, and whether they are every step the sampler
    timed (``timed``) or the profiled ones."""

    ms: np.ndarray
    samples: np.ndarray
    label: str
    timed: bool


def compared_steps(before: StepSource, after: StepSource) -> tuple[Steps, Steps]:
    """The steps each side's speed-up is over: every step the sampler timed when both runs are
    live, else the profiled steps of both (a trace file times no others, and the two sides are
    then measured the same way)."""
    if before.live and after.live:
        return timed_steps(before), timed_steps(after)
    return profiled_steps(before), profiled_steps(after)


def timed_steps(source: StepSource) -> Steps:
    """Every step the live sampler timed, less the cell's first when ``AFTER_FIRST_STEP`` remain."""
    assert source.sampled is not None
    rows = source.sampled.sort_values("step")
    rows = rows[_positive(rows["wall_ms"])]
    after_first = len(rows) > AFTER_FIRST_STEP and rows["step"].iloc[0] == 0
    if after_first:
        rows = rows.iloc[1:]
    label = f"the {_count(len(rows))} the cell ran" + (" after its first" if after_first else "")
    return Steps(rows["wall_ms"].to_numpy(np.float64), _samples(rows), label, True)


def profiled_steps(source: StepSource) -> Steps:
    """The profiled steps: the live sampler's ``wall_ms`` of the window's steps, else the
    steps' spans (a trace file's)."""
    if source.live:
        assert source.sampled is not None
        rows = source.sampled[source.sampled["step"].isin(source.window)].sort_values("step")
        rows = rows[_positive(rows["wall_ms"])]
        if len(rows):
            return Steps(rows["wall_ms"].to_numpy(np.float64), _samples(rows),
                         f"the {_count(len(rows))} profiled", False)
    rows = source.spans[source.spans["step"].isin(source.window)]
    ms = ((rows["end_us"] - rows["start_us"]) / 1e3).to_numpy(np.float64)
    ms = ms[_positive(ms)]
    return Steps(ms, np.full(len(ms), np.nan), f"the {_count(len(ms))} profiled", False)


def _positive(values: Iterable[float]) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    return np.isfinite(x) & (x > 0)


def _samples(rows: pd.DataFrame) -> np.ndarray:
    return rows["samples"].to_numpy(np.float64) if "samples" in rows else np.full(len(rows), np.nan)


def _count(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def resample(x: np.ndarray, stat: Callable[..., np.ndarray], rng: np.random.Generator,
             resamples: int = RESAMPLES) -> np.ndarray:
    """``stat`` of ``resamples`` bootstrap resamples of ``x`` along its first axis (steps):
    rows of a per-step matrix are drawn together, so a step's parts stay together."""
    idx = rng.integers(0, len(x), size=(resamples, len(x)))
    return stat(x[idx], axis=1)


def percentiles(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The interval's ends, per column of ``values`` (the resamples run along axis 0)."""
    tail = 50 * (1 - confidence)
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    return low, high


def speedup(before: np.ndarray, after: np.ndarray, before_work: np.ndarray | None = None,
            after_work: np.ndarray | None = None) -> float | None:
    """The after run's throughput over the before run's: mean(work) / mean(step ms) on each side.
    Without ``work`` each step is one step's worth, and it is mean(before) / mean(after)."""
    if len(before) == 0 or len(after) == 0:
        return None
    return _rate(after, after_work) / _rate(before, before_work)


def _rate(ms: np.ndarray, work: np.ndarray | None) -> float:
    return float((1.0 if work is None else work.mean()) / ms.mean())


def speedup_interval(before: np.ndarray, after: np.ndarray, before_work: np.ndarray | None = None,
                     after_work: np.ndarray | None = None, *, seed: int = SEED, resamples: int = RESAMPLES,
                     confidence: float = CONFIDENCE, drift: float = RUN_DRIFT) -> tuple[float, float] | None:
    """The bootstrap interval of ``speedup``, widened by ``drift`` on each side; None when a
    side has fewer than 2 steps (one step says nothing about how much steps vary)."""
    if len(before) < 2 or len(after) < 2:
        return None
    rng = np.random.default_rng(seed)
    ratios = (_resampled_rates(after, after_work, rng, resamples)
              / _resampled_rates(before, before_work, rng, resamples))
    low, high = percentiles(ratios, confidence)
    return float(low) / (1 + drift), float(high) * (1 + drift)


def _resampled_rates(ms: np.ndarray, work: np.ndarray | None, rng: np.random.Generator,
                     resamples: int) -> np.ndarray:
    """A side's throughput in each resample. A resampled mean of n steps spreads by
    sqrt((n-1)/n) of the mean's own spread: its deviations (on a log scale, so a rate stays
    positive) are widened by the inverse."""
    n = len(ms)
    idx = rng.integers(0, n, size=(resamples, n))
    rates = (1.0 if work is None else work[idx].mean(axis=1)) / ms[idx].mean(axis=1)
    centre = math.log(_rate(ms, work))
    return np.exp(centre + (np.log(rates) - centre) * math.sqrt(n / (n - 1)))


def steps_to_tell(interval: tuple[float, float] | None, steps: tuple[int, int], factor: float = TELL_FACTOR,
                  drift: float = RUN_DRIFT) -> int | None:
    """How many steps a side would tell a ``factor`` change from none, when ``interval`` cannot:
    it holds 1 and reaches ``factor`` (or 1/``factor``). None when it can, or has no interval.

    The rule: the interval's half-width on a log scale, less the drift allowance, shrinks as
    1/sqrt(steps); it tells the two apart once it is under half the distance between them
    (log(factor) / 2, less the allowance), so that no interval can hold both. ``steps``: each
    side's count, taken together as their harmonic mean (the spread of a ratio of two means
    goes as 1/n_before + 1/n_after)."""
    if interval is None:
        return None
    low, high = interval
    if not low <= 1 <= high or (high < factor and low > 1 / factor):
        return None
    allowance = math.log1p(drift)
    spread = math.log(high / low) / 2 - allowance
    room = math.log(factor) / 2 - allowance
    now = 2 / (1 / steps[0] + 1 / steps[1])
    return max(math.ceil(now * (spread / room) ** 2), math.floor(now) + 1)


def more_steps_note(interval: tuple[float, float] | None, before: Steps, after: Steps,
                    drift: float = RUN_DRIFT) -> list[str]:
    """Where the interval cannot tell a ``TELL_FACTOR`` change from none, how many steps would."""
    needed = steps_to_tell(interval, (len(before.ms), len(after.ms)), drift=drift)
    if needed is None or interval is None:
        return []
    how = (f"run the loop for {needed + 1} steps or more (its first is left out)" if before.timed
           else f"profile them with --active {needed} on both runs")
    return [f"The interval ({fmt_interval(*interval)}) holds both no change and a {fmt_factor(TELL_FACTOR)} change, "
            f"so it cannot tell them apart: about {needed} steps a side would, at the spread these steps "
            f"measured: {how}."]


def excludes_one(interval: tuple[float, float]) -> bool:
    """Whether the speed-up's interval, as the verdict prints it (two decimals, a slow-down as its
    inverse), leaves out 1: "faster" never quotes 1.00–1.22."""
    low, high = interval
    return round(low, 2) > 1 or round(1 / high, 2) > 1


def verdict(speedup: float | None, interval: tuple[float, float] | None) -> str:
    """The comparison in words: faster, slower, or no measurable change, with the interval."""
    if speedup is None:
        return NO_STEPS
    if interval is None:
        direction = "faster" if speedup >= 1 else "slower"
        return f"{fmt_factor(max(speedup, 1 / speedup))} {direction} by the mean steps ({ONE_STEP})"
    low, high = interval
    if excludes_one(interval) and low > 1:
        return f"{fmt_factor(speedup)} faster ({fmt_interval(low, high)})"
    if excludes_one(interval):
        return f"{fmt_factor(1 / speedup)} slower ({fmt_interval(1 / high, 1 / low)})"
    return f"no measurable change ({fmt_interval(low, high)})"


# -- breakdown -----------------------------------------------------------------------------
BREAKDOWN_COLUMNS = ["part", "label", "before_ms", "after_ms", "delta_ms", "delta_low_ms", "delta_high_ms",
                     "before_share", "after_share", "explanation"]


def breakdown_diff(before: pd.DataFrame, after: pd.DataFrame, labels: Mapping[str, str],
                   changes: Sequence[SetupChange] | None, *, seed: int = SEED) -> pd.DataFrame:
    """Per part, ms per step before and after, the delta of the means with its bootstrap
    interval (widened by ``RUN_DRIFT`` of the part, as the step's is), each side's share of
    the step, and what explains the delta.

    ``before``/``after``: ``step`` and one µs column per part (the same parts on both).
    ``changes``: the set-up changes when known (live runs), else None.
    """
    parts = [c for c in before.columns if c != "step"]
    b = before[parts].to_numpy(dtype=np.float64) / 1e3
    a = after[parts].to_numpy(dtype=np.float64) / 1e3
    mean_b = b.mean(axis=0) if len(b) else np.full(len(parts), np.nan)
    mean_a = a.mean(axis=0) if len(a) else np.full(len(parts), np.nan)
    delta = mean_a - mean_b
    low, high = _delta_interval(b, a, seed)
    low, high = low - RUN_DRIFT * mean_b, high + RUN_DRIFT * mean_b  # the step's allowance, part by part
    step = Step(float(np.nansum(mean_b)), float(np.nansum(delta)))
    rows = []
    for i, part in enumerate(parts):
        label = labels.get(part, part)
        why = explain(part, label, float(delta[i]), (float(low[i]), float(high[i])), step, changes)
        rows.append((part, label, mean_b[i], mean_a[i], delta[i], low[i], high[i],
                     _share(mean_b, i), _share(mean_a, i), why))
    return pd.DataFrame(rows, columns=BREAKDOWN_COLUMNS)


def _delta_interval(b: np.ndarray, a: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the bootstrap interval of mean(a) - mean(b); NaN with fewer than 2 steps a side."""
    if len(b) < 2 or len(a) < 2:
        nan = np.full(b.shape[1], np.nan)
        return nan, nan
    rng = np.random.default_rng(seed)
    deltas = resample(a, np.mean, rng) - resample(b, np.mean, rng)
    return percentiles(deltas, CONFIDENCE)


def _share(means: np.ndarray, i: int) -> float:
    total = float(np.nansum(means))
    return float(means[i] / total) if total > 0 else float("nan")


@dataclass(frozen=True)
class Step:
    """The step a part's move is judged against: its mean ms before, and its mean change."""

    before_ms: float
    delta_ms: float


def explain(part: str, label: str, delta_ms: float, interval: tuple[float, float], step: Step,
            changes: Sequence[SetupChange] | None) -> str:
    """Why a part moved, in words: within noise; too small to matter; the target of a change
    made; a part the change should not have touched (only when every change made has a
    narrow target: then the machine is the suspect); or its share of the step's change."""
    low, high = interval
    if np.isnan(delta_ms):
        return "not measured on a side"
    if np.isnan(low):
        return f"{label} {fmt_delta_us(delta_ms * 1e3)}; no interval (one step on a side)"
    if low <= 0 <= high:
        return "within noise"
    if abs(delta_ms) < NEGLIGIBLE_PART * step.before_ms:
        return f"too small to matter (under {NEGLIGIBLE_PART:.0%} of the step)"
    moved = f"{label} {fmt_delta_us(delta_ms * 1e3)}"
    if changes:
        aimed = [c for c in changes if c.parts is not None and part in c.parts]
        if aimed:
            return f"{moved}: the {aimed[0].what} change's own target"
        if all(c.parts is not None for c in changes):
            return f"{moved}, which this change should not have touched: check that the machine was quiet"
    return f"{moved}, {_share_of_change(delta_ms, step.delta_ms)}"


def _share_of_change(delta_ms: float, step_delta_ms: float) -> str:
    if step_delta_ms == 0 or np.sign(delta_ms) != np.sign(step_delta_ms):
        return "against the step's change" if step_delta_ms else "while the step as a whole did not move"
    return f"{fmt_pct(delta_ms / step_delta_ms)} of the step's change"


# -- operators and kernels -----------------------------------------------------------------
def per_step_diff(before: pd.DataFrame, after: pd.DataFrame, values: Sequence[str], steps: tuple[int, int],
                  main: str) -> pd.DataFrame:
    """Per name, each of ``values`` per profiled step before and after and its delta, with
    ``status`` "new" (only after), "vanished" (only before) or "both"; sorted by the
    largest |delta| of ``main`` first. ``steps``: each side's number of profiled steps."""
    sides = []
    for frame, n, suffix in ((before, steps[0], "before"), (after, steps[1], "after")):
        per = frame.groupby("name", sort=False)[list(values)].sum() / max(n, 1)
        sides.append(per.add_suffix(f"_{suffix}"))
    both = sides[0].join(sides[1], how="outer")
    status = np.where(both[f"{values[0]}_before"].isna(), "new",
                      np.where(both[f"{values[0]}_after"].isna(), "vanished", "both"))
    both = both.fillna(0.0)
    out = pd.DataFrame({"name": both.index.astype(str), "status": status})
    for v in values:
        out[f"{v}_before"] = both[f"{v}_before"].to_numpy()
        out[f"{v}_after"] = both[f"{v}_after"].to_numpy()
        out[f"{v}_delta"] = out[f"{v}_after"] - out[f"{v}_before"]
    order = np.lexsort((out["name"].to_numpy(), -out[f"{main}_delta"].abs().to_numpy()))
    return out.iloc[order].reset_index(drop=True)


def operator_diff(before: pd.DataFrame, after: pd.DataFrame, steps: tuple[int, int], device: bool) -> pd.DataFrame:
    """``per_step_diff`` of two operator tables (µs in, ms out), by device self time on a GPU
    run, by host self time otherwise."""
    def ms(ops: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"name": ops["name"], "calls": ops["calls"].astype(np.float64),
                             "host_self_ms": ops["host_self_us"] / 1e3, "device_self_ms": ops["device_self_us"] / 1e3})

    return per_step_diff(ms(before), ms(after), OPERATOR_VALUES, steps, "device_self_ms" if device else "host_self_ms")


def kernel_diff(before: pd.DataFrame, after: pd.DataFrame, steps: tuple[int, int]) -> pd.DataFrame:
    """``per_step_diff`` of two kernel tables, by total time."""
    def ms(k: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"name": k["name"], "calls": k["calls"].astype(np.float64),
                             "total_ms": k["total_us"] / 1e3})

    return per_step_diff(ms(before), ms(after), KERNEL_VALUES, steps, "total_ms")


# -- memory ----------------------------------------------------------------------------------
MEMORY_COLUMNS = ["measure", "device", "before_bytes", "after_bytes", "delta_bytes"]
_PEAKS = (("peak allocated", ("mem_peak_bytes", "peak_allocated_bytes")),
          ("peak reserved", ("mem_reserved_bytes", "peak_reserved_bytes")),
          ("process RSS", ("rss_bytes",)))


def memory_measures(steps: pd.DataFrame, growth: pd.DataFrame, label: Callable[[str, str], str]) -> pd.DataFrame:
    """One run's memory figures per device: peaks (the live sampler's where it has them, else
    the trace's), the largest rise of a step's peak over its start (which identical runs
    repeat even where traced levels count from the start of recording; the first profiled
    step is left out when there are others, as the report does), and the growth slope of
    each series ``memory_growth`` judged. ``label`` names a growth series (``series_label``)."""
    rows: list[tuple[str, str, float]] = []
    for device, g in steps.groupby("device", sort=True):
        for measure, columns in _PEAKS:
            found = [g[c].max() for c in columns if c in g and g[c].notna().any()]
            if found:
                rows.append((measure, str(device), float(found[0])))
        rises = g.loc[g["peak_rise_bytes"].notna()].sort_values("step")["peak_rise_bytes"].to_numpy()
        if len(rises):
            rows.append(("largest peak rise in a step", str(device), float(rises[1:].max() if len(rises) > 1
                                                                             else rises[0])))
    for row in growth[growth["slope_bytes_per_step"].notna()].itertuples(index=False):
        rows.append((f"growth per step, {label(row.source, row.measure)}", str(row.device),
                     float(row.slope_bytes_per_step)))
    return pd.DataFrame(rows, columns=["measure", "device", "bytes"])


def memory_diff(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Two ``memory_measures`` tables side by side (NaN where a side lacks the measure)."""
    merged = before.merge(after, on=["measure", "device"], how="outer", suffixes=("_before", "_after"), sort=False)
    merged = merged.rename(columns={"bytes_before": "before_bytes", "bytes_after": "after_bytes"})
    merged["delta_bytes"] = merged["after_bytes"] - merged["before_bytes"]
    return merged[MEMORY_COLUMNS].reset_index(drop=True)


# -- set-up ----------------------------------------------------------------------------------
def setup_changes(before: RunRecord | None, after: RunRecord | None,
                  devices: tuple[DeviceInfo, DeviceInfo]) -> tuple[SetupChange, ...] | None:
    """What differs in set-up: device, schedule and device option, the DataLoaders' settings,
    the cell's code. None when a side is a trace file, which records no set-up (its device,
    if it differs, is still in ``device_change``)."""
    if before is None or after is None:
        return None
    out = list(device_change(devices))
    out += _option_changes(before.options, after.options)
    out += _loader_changes(before.loaders, after.loaders)
    if before.cell_source is not None and after.cell_source is not None \
            and before.cell_source.strip() != after.cell_source.strip():
        out.append(SetupChange("the cell's code changed", "code", None))
    return tuple(out)


def different_devices(devices: tuple[DeviceInfo, DeviceInfo]) -> bool:
    """Whether the runs ran on different devices: GPUs by name; a CPU is a CPU (a trace file
    names it "CPU", a live run adds its cores)."""
    a, b = devices
    return a.kind != b.kind or (a.kind != "cpu" and a.name != b.name)


def device_change(devices: tuple[DeviceInfo, DeviceInfo]) -> tuple[SetupChange, ...]:
    if not different_devices(devices):
        return ()
    return (SetupChange(f"device: {devices[0].name} → {devices[1].name}", "device", None),)


def _option_changes(before: ProfileOptions, after: ProfileOptions) -> list[SetupChange]:
    out = []
    if any(getattr(before, f) != getattr(after, f) for f in SCHEDULE):
        out.append(SetupChange(f"schedule: {_schedule(before)} → {_schedule(after)}", "schedule", frozenset()))
    if before.device != after.device:
        out.append(SetupChange(f"--device {before.device} → {after.device}", "device", None))
    return out


def _schedule(o: ProfileOptions) -> str:
    return " ".join(f"{f} {getattr(o, f)}" for f in SCHEDULE if getattr(o, f) or f == "active")


def _loader_changes(before: Sequence[LoaderRecord], after: Sequence[LoaderRecord]) -> list[SetupChange]:
    out = []
    for name, b, a in _paired_loaders(before, after):
        if b is None or a is None:
            out.append(SetupChange(f"DataLoader {name}: only {'after' if b is None else 'before'}", "DataLoader", None))
            continue
        for setting in LOADER_SETTINGS:
            old, new = getattr(b, setting), getattr(a, setting)
            if old != new:
                out.append(SetupChange(f"DataLoader {name}: {setting} {old} → {new}", "DataLoader",
                                       _LOADER_TARGETS[setting]))
    return out


def _paired_loaders(before: Sequence[LoaderRecord], after: Sequence[LoaderRecord]
                    ) -> list[tuple[str, LoaderRecord | None, LoaderRecord | None]]:
    """The loaders that fed batches in both runs, paired by variable name, the rest in order
    of how many batches they fed."""
    fed = [sorted((r for r in side if r.batches), key=lambda r: -r.batches) for side in (before, after)]
    named = {r.name: r for r in fed[1] if r.name}
    pairs: list[tuple[str, LoaderRecord | None, LoaderRecord | None]] = []
    rest_before = []
    for r in fed[0]:
        match = named.pop(r.name, None) if r.name else None
        if match is not None:
            pairs.append((str(r.name), r, match))
        else:
            rest_before.append(r)
    paired = {id(p[2]) for p in pairs}
    rest_after = [r for r in fed[1] if id(r) not in paired]
    for b, a in zip_longest(rest_before, rest_after):
        pairs.append((next((r.name for r in (b, a) if r is not None and r.name), "(unnamed)"), b, a))
    return pairs


# -- what was claimed, ranks -----------------------------------------------------------------
def stated_vs_measured(gain_range: tuple[float, float] | None, stated: str, speedup: float | None,
                       interval: tuple[float, float] | None, *, bound: bool, steps: tuple[int, int] = (0, 0),
                       quantity: str = "step time", drift: float = RUN_DRIFT) -> str:
    """A suggestion's claim beside the measured speed-up of the same quantity (the caller
    measures samples/s for a claim in samples/s), and whether the measurement is within it: the
    interval (or the point, without one) overlapping the claimed range. ``bound``: the claim is
    "at most", so a measurement above it means the bound was wrong. ``steps``: each side's
    count, to say how many would test a claim the interval is too wide for. ``quantity``: what
    the speed-up is of, named when it is not step time ("samples/s")."""
    named = "" if quantity == "step time" else f" {quantity}"
    measured = f"no {quantity} to measure" if speedup is None else fmt_factor(speedup) + named + (
        f" ({fmt_interval(*interval)})" if interval else "")
    line = f"stated: {stated} · measured: {measured}"
    if gain_range is None or speedup is None:
        return line
    # Judged on the figures as printed (two decimals), as the reader checks them.
    low, high = (round(x, 2) for x in interval or (speedup, speedup))
    gain_range = (round(gain_range[0], 2), round(gain_range[1], 2))
    if high < gain_range[0]:
        return f"{line}: below the claim" + (": the change made the loop slower" if bound else "")
    if low > gain_range[1]:
        if bound:
            return f"{line}: measured above the stated bound: the bound did not hold"
        return f"{line}: measured above the estimate's range: the estimate was too low"
    needed = steps_to_tell(interval, steps, drift=drift) if all(steps) else None
    if needed is not None:
        return f"{line}: within the claim, but the interval is too wide to test it: about {needed} steps a side would"
    return f"{line}: within the claim"


def load_note(other_cores: tuple[float | None, float | None], labels: tuple[str, str]) -> str | None:
    """A note when other programs kept the machine busier during one run than the other
    (``RunRecord.other_cores``): that alone can move every step of a run, beyond the interval's
    allowance for drift, and no step of either run shows it."""
    before, after = other_cores
    if before is None or after is None or abs(before - after) < LOAD_SHIFT_CORES:
        return None
    return (f"Other programs kept {before:.1f} cores busy during the {labels[0]} run and {after:.1f} during the "
            f"{labels[1]} run: the machine's load, not only the change, may explain the difference. Run both "
            "again on a quiet machine, or measure the alternatives in interleaved rounds "
            "(nbprofiler.tune_dataloader, nbprofiler.batch_size_curve).")


def rank_speedups(before: Mapping[int, float | None], after: Mapping[int, float | None]) -> pd.DataFrame:
    """Per rank both runs have: mean step ms before and after, and before / after."""
    rows = []
    for rank in sorted(set(before) & set(after)):
        b, a = before[rank], after[rank]
        rows.append((rank, b, a, b / a if b and a else np.nan))
    return pd.DataFrame(rows, columns=["rank", "before_ms", "after_ms", "speedup"])
