"""Memory over time, per step, per operator, and growth from step to step.

Everything here reads the profiler's ``[memory]`` instant events: one per
allocator allocation (``Bytes`` > 0) or free (``Bytes`` < 0), with the
allocator's running ``Total Allocated`` / ``Total Reserved`` in current
traces. Two kinds of level are not absolute, and are rebuilt from the
cumulative ``Bytes`` per device instead:

* 2021 traces have no totals at all;
* on the CPU, torch's counter adds what it sees allocated while profiling and
  subtracts only the frees of those same blocks: tensors from before
  profiling never come off it, and blocks allocated while profiling but freed
  after it never do either, so its level creeps up with every profiled run of
  the same cell (by a few MiB a run for a small Transformer with AdamW).

The trace cannot say what was allocated before it started, so a rebuilt total
is a level relative to the start of recording, marked ``reconstructed``. On the
CPU it counts the blocks allocated while recording that are still held: the
frees of blocks made before recording are left out, because torch reports one
only when its table of block sizes (kept across runs, never cleared of blocks
freed while not profiling) happens to hold the block's address from an earlier
run, so counting them gave identical runs of a cell different levels. Elsewhere (2021 traces) every free counts, and
the level before the first event is chosen so that the total never drops below 0.
What a rebuilt level says exactly is how memory moves within the profiled steps:
the rise of a step's peak over the step's starting level (``peak_rise_bytes``),
and the change of the level from step to step, which identical runs of a cell
repeat. The first profiled step's rise includes the replacements of what it freed
from before recording (last step's gradients, say): the report leaves it out.

A live run's per-step sampler (``report.run.steps``) covers every step the cell
ran, while the trace covers only the active ones; ``memory_steps`` puts the
two side by side and ``memory_growth`` prefers the longer series.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.table import MISSING, DeviceInfo, EventTable, Kind
from .operators import OperatorTree
from .steps import step_of

TIMELINE_COLUMNS = ["ts", "device", "allocated_bytes", "reserved_bytes", "delta_bytes", "reconstructed"]
STEP_COLUMNS = ["step", "device", "start_allocated_bytes", "end_allocated_bytes", "peak_allocated_bytes",
                "peak_rise_bytes", "end_reserved_bytes", "peak_reserved_bytes", "reconstructed"]
OPERATOR_COLUMNS = ["name", "device", "allocations", "allocated_bytes", "held_bytes"]
GROWTH_COLUMNS = ["device", "source", "measure", "steps", "first_bytes", "last_bytes", "slope_bytes_per_step",
                  "rising_share", "judged", "flagged"]
SAMPLER_MEMORY_COLUMNS = ("mem_allocated_bytes", "mem_peak_bytes", "mem_reserved_bytes", "rss_bytes")
NO_OPERATOR = "(no operator)"

# c10::DeviceType codes, as the profiler writes them in "Device Type".
_DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 9: "xla", 12: "xpu", 13: "mps", 15: "hpu", 19: "mtia",
                 20: "privateuseone"}

# Growth detection (see ``memory_growth``).
GROWTH_MIN_STEPS = 4
# The trace's allocated bytes are exact (no allocator caching, no page reuse): three profiled steps
# whose level rises by about the same amount each time are a leak already (the default --active 3).
GROWTH_MIN_STEADY_STEPS = 3
# "About the same": the smallest step-to-step rise is at least this share of the largest.
GROWTH_STEADY_RATIO = 0.5
GROWTH_MIN_RISING_SHARE = 2 / 3
GROWTH_MIN_RISE_BYTES = 1 << 20
# RSS moves in the C allocator's chunks (heap extensions, mmap thresholds that adapt up to
# 32 MiB), so a steady CPU loop's RSS can creep by a few MiB over a handful of steps.
GROWTH_MIN_RSS_RISE_BYTES = 8 << 20
GROWTH_MIN_RISE_FRACTION = 0.01
_THEIL_SEN_MAX_POINTS = 1000

GrowthSeries = tuple[str, str, str, np.ndarray, np.ndarray]  # device, source, measure, steps, bytes per step


def device_label(device_type: np.ndarray, device_id: np.ndarray) -> np.ndarray:
    """``'cpu'``, ``'cuda:0'``...: the names torch uses for ``torch.device``."""
    code, labels = device_codes(device_type, device_id)
    return labels[code]


def device_codes(device_type: np.ndarray, device_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each event's device as a code into the device labels (``device_label``) it returns: what
    grouping by device needs, without hashing a million label strings."""
    pair, pairs = pd.factorize(device_type.astype(np.int64) * (1 << 32) + device_id.astype(np.int64))
    labels = []
    for key in pairs.tolist():
        t, i = (key + (1 << 31)) >> 32, ((key + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        kind = _DEVICE_TYPES.get(t, "unknown" if t < 0 else f"device_type_{t}")
        labels.append(kind if kind == "cpu" or i < 0 else f"{kind}:{i}")
    label_code, distinct = pd.factorize(np.array(labels, dtype=object))
    return label_code[pair], np.asarray(distinct, dtype=object)


def sampler_device(device: DeviceInfo) -> str:
    """The timeline's label for the device a live run's sampler measured (ROCm
    reports itself as CUDA in ``[memory]`` events, as in ``torch.device``)."""
    return "cpu" if device.kind == "cpu" else f"cuda:{max(device.index, 0)}"


def memory_timeline(table: EventTable) -> pd.DataFrame:
    """``ts, device, allocated_bytes, reserved_bytes, delta_bytes, reconstructed``: one row per
    ``[memory]`` event, sorted by time, allocated being the device's running total after it
    (rebuilt from the events where the trace's own is no absolute level: see the module docstring).
    ``delta_bytes`` is what the event adds to the level: 0 for a CPU free of a block made
    before recording."""
    idx = _memory_events(table)
    if len(idx) == 0:
        return pd.DataFrame(columns=TIMELINE_COLUMNS)
    code, labels = device_codes(table["mem_device_type"][idx], table["mem_device_id"][idx])
    device = labels[code]
    ts, delta = table["ts"][idx], np.nan_to_num(table["bytes"][idx])
    allocated = table["total_allocated"][idx].copy()
    reserved = table["total_reserved"][idx]
    reconstructed = np.zeros(len(idx), dtype=bool)
    on_cpu = device == "cpu"
    if on_cpu.any():
        # A CPU free of a block made before recording is reported or not as torch's table of
        # block sizes happens to hold its address from an earlier run: never counted.
        made_before = on_cpu & (delta < 0) & (_partners(delta, code, table["addr"][idx]) < 0)
        delta = np.where(made_before, 0.0, delta)
    for label in pd.unique(device):  # a few devices: hashing beats sorting a million labels
        on = device == label
        if label == "cpu" or np.isnan(allocated[on]).all():
            running = np.cumsum(delta[on])
            allocated[on] = running - min(0.0, float(running.min()))
            reconstructed[on] = True
    return pd.DataFrame({"ts": ts, "device": device, "allocated_bytes": allocated, "reserved_bytes": reserved,
                         "delta_bytes": delta, "reconstructed": reconstructed})


def memory_steps(timeline: pd.DataFrame, steps: pd.DataFrame, sampler: pd.DataFrame | None = None,
                 sampler_device: str | None = None) -> pd.DataFrame:
    """Per step and device: allocated at the step's start and end, its peak and the peak's
    rise over the start, reserved at the end and at its peak (bytes), and ``reconstructed``
    when the levels count from the start of recording (``memory_timeline``).

    ``timeline`` is ``memory_timeline``; ``steps`` the trace's host steps. With a
    live run's ``sampler`` (``run.steps``), its memory columns join on ``step``
    for ``sampler_device`` and every sampled step gets a row, so steps outside
    the profiled window show the sampler's figures with the trace's left empty.
    """
    rows = []
    if len(timeline) and len(steps):
        a = steps["start_us"].to_numpy(dtype=np.float64)
        b = steps["end_us"].to_numpy(dtype=np.float64)
        code, labels = pd.factorize(timeline["device"].to_numpy(), sort=True)  # objects hash twice as fast as str
        columns = {c: timeline[c].to_numpy() for c in ("ts", "allocated_bytes", "reserved_bytes", "delta_bytes",
                                                       "reconstructed")}
        for i, label in enumerate(labels.tolist()):
            g = {c: v[code == i] for c, v in columns.items()}  # the device's rows, in time order
            ts = g["ts"]
            alloc = g["allocated_bytes"].astype(np.float64, copy=False)
            reserved = g["reserved_bytes"].astype(np.float64, copy=False)
            relative = bool(g["reconstructed"].any())
            # The level before each step: after the last event before it (or before the first event).
            level_before_first = alloc[0] - float(np.nan_to_num(g["delta_bytes"][0]))
            first = np.searchsorted(ts, a, side="left")
            last = np.searchsorted(ts, b, side="right")
            for k, step in enumerate(steps["step"].tolist()):
                start_level = alloc[first[k] - 1] if first[k] > 0 else level_before_first
                end_level = alloc[last[k] - 1] if last[k] > 0 else level_before_first
                inside = slice(first[k], last[k])
                peak = max(start_level, float(alloc[inside].max())) if last[k] > first[k] else start_level
                r = reserved[max(first[k] - 1, 0):last[k]]
                peak_reserved = float(np.nanmax(r)) if len(r) and not np.isnan(r).all() else np.nan
                end_reserved = reserved[last[k] - 1] if last[k] > 0 else np.nan
                rows.append((step, label, start_level, end_level, peak, peak - start_level, end_reserved,
                             peak_reserved, relative))
    frame = pd.DataFrame(rows, columns=STEP_COLUMNS)
    frame = frame.astype({"step": np.int64, "reconstructed": bool})
    if sampler is None or sampler_device is None or sampler.empty:
        return frame
    sampled = sampler[["step", *[c for c in SAMPLER_MEMORY_COLUMNS if c in sampler]]].copy()
    sampled["device"] = sampler_device
    merged = frame.merge(sampled, on=["step", "device"], how="outer")
    merged["phase"] = merged["step"].map(sampler.set_index("step")["phase"])
    merged["reconstructed"] = merged["reconstructed"].eq(True)  # sampler-only rows have no trace level
    cols = ["step", "phase", "device", *STEP_COLUMNS[2:], *[c for c in SAMPLER_MEMORY_COLUMNS if c in merged]]
    return merged[cols].sort_values(["step", "device"], kind="stable").reset_index(drop=True)


def memory_by_operator(tree: OperatorTree, steps: pd.DataFrame, allocations: "Allocations") -> pd.DataFrame:
    """Per operator name and device: ``allocations, allocated_bytes, held_bytes``.

    Each allocation inside a profiled step goes to the operator that made it
    (``allocations``, from ``allocation_owners``), or to ``(no operator)``.
    ``held_bytes`` is what of it was still allocated when its step ended (summed
    over steps): activations kept for backward, gradients, optimizer state, or a leak.

    A free is paired with its allocation by device and block address. Traces
    without addresses (the 2021 schema) pair it with the most recent live
    allocation of the same device and size instead (temporaries are freed in
    reverse order); there, when two same-size allocations are alive and the
    *older* is freed first (``relu(linear(x))``), the two swap: the bytes held
    are right but can be credited to the other one's operator, or step. Bytes
    allocated per operator, and the levels in ``memory_steps``, are exact.
    """
    table = tree.table
    idx = allocations.events
    if len(idx) == 0 or steps.empty:
        return pd.DataFrame(columns=OPERATOR_COLUMNS)
    ts = table["ts"][idx]
    delta = np.nan_to_num(table["bytes"][idx])
    device, device_labels = device_codes(table["mem_device_type"][idx], table["mem_device_id"][idx])
    free_ts = _paired_free_time(ts, delta, device, table["addr"][idx])
    step = step_of(ts, steps)
    alloc = np.flatnonzero((delta > 0) & (step >= 0))
    if len(alloc) == 0:
        return pd.DataFrame(columns=OPERATOR_COLUMNS)
    step_end = pd.Series(steps["end_us"].to_numpy(), index=steps["step"].to_numpy())
    ends = step_end.reindex(step[alloc]).to_numpy()
    held = ~(free_ts[alloc] < ends)  # never freed in the trace, or freed after its step ended
    owner = allocations.owner[alloc]
    # Grouped by name code and device code (integers hash far faster than strings), named after.
    name = np.where(owner >= 0, table.name_code[tree.index[np.maximum(owner, 0)]], -1)
    frame = pd.DataFrame({"name": name, "device": device[alloc], "allocated_bytes": delta[alloc],
                          "held_bytes": np.where(held, delta[alloc], 0.0)})
    grouped = frame.groupby(["name", "device"], sort=False)
    out = grouped[["allocated_bytes", "held_bytes"]].sum()
    out.insert(0, "allocations", grouped.size())
    out = out.reset_index()
    names = np.append(np.asarray(table.names, dtype=object), NO_OPERATOR)  # code -1: the last
    out["name"] = names[out["name"].to_numpy()]
    out["device"] = device_labels[out["device"].to_numpy()]
    return out[OPERATOR_COLUMNS].sort_values(["allocated_bytes", "name"], ascending=[False, True],
                                             kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Allocations:
    """The trace's ``[memory]`` events in time order, and for each the operator that made it
    (position in ``tree.index``; -1 for frees and for allocations outside any operator)."""

    events: np.ndarray
    owner: np.ndarray


def allocation_owners(tree: OperatorTree) -> Allocations:
    """Each allocation's operator: the innermost one running on its thread then. Computed
    once: the operator table and the per-operator memory table share it."""
    table = tree.table
    idx = _memory_events(table)
    owners = np.full(len(idx), -1, dtype=np.int64)
    alloc = np.flatnonzero(np.nan_to_num(table["bytes"][idx]) > 0)
    if len(alloc) and len(tree.index):
        events = idx[alloc]
        owners[alloc] = tree.enclosing(table.thread[events], table["ts"][events])
    return Allocations(idx, owners)


def allocation_lifetimes(table: EventTable) -> tuple[np.ndarray, np.ndarray]:
    """Every allocation event (time-sorted) and the time of the free paired with it (+inf: not
    freed in the trace), for the leak advice to find which cell line made what was never freed."""
    idx = _memory_events(table)
    delta = np.nan_to_num(table["bytes"][idx])
    device = device_codes(table["mem_device_type"][idx], table["mem_device_id"][idx])[0]
    free_ts = _paired_free_time(table["ts"][idx], delta, device, table["addr"][idx])
    alloc = delta > 0
    return idx[alloc], free_ts[alloc]


def self_allocated_bytes(tree: OperatorTree, allocations: Allocations) -> dict[str, np.ndarray] | None:
    """Bytes each operator call allocated itself (not in the operators it called), on the host
    and on devices: the operator table's memory columns. None when the trace recorded no memory."""
    table = tree.table
    idx, owners = allocations.events, allocations.owner
    if len(idx) == 0:
        return None
    made = owners >= 0
    delta = np.nan_to_num(table["bytes"][idx])[made]
    on_host = (table["mem_device_type"][idx] == 0)[made]
    n = len(tree.index)
    return {"host_self_alloc_bytes": np.bincount(owners[made][on_host], weights=delta[on_host], minlength=n),
            "device_self_alloc_bytes": np.bincount(owners[made][~on_host], weights=delta[~on_host], minlength=n)}


def memory_growth(series: Iterable[GrowthSeries]) -> pd.DataFrame:
    """Flag memory that rises step after step, as a leak does.

    ``series`` holds ``(device, source, measure, steps, bytes)``: a level per
    step taken at the step's end (see ``growth_series`` for the measures). One
    row per series: the robust slope in bytes per step, the share of
    step-to-step changes that were rises, ``judged`` (the series had the steps
    its test needs: a series that was not judged says nothing either way) and
    ``flagged``.

    The slope is Theil-Sen's (the median of the slopes between all pairs of
    steps), so a one-off jump, such as optimizer state created on the first
    step or the allocator growing its cache once, does not make a loop look
    leaky. A series is flagged when either test holds:

    - a trend, over at least ``GROWTH_MIN_STEPS`` (4) steps: the slope is
      positive, at least ``GROWTH_MIN_RISING_SHARE`` (2/3) of the step-to-step
      changes are rises (a consistent climb, not noise that goes both ways),
      and the rise the slope predicts over the observed steps is at least
      1 MiB (8 MiB for ``"rss"``) and at least 1% of the median level, so
      allocator and RSS jitter on a large process is not reported as a leak;
    - for the trace's ``"allocated"`` bytes, which are exact (no caching, no
      page reuse), a steady rise over at least ``GROWTH_MIN_STEADY_STEPS`` (3)
      steps: every change is a rise, the smallest at least
      ``GROWTH_STEADY_RATIO`` of the largest, and together at least 1 MiB.
    """
    rows = []
    for device, source, measure, steps, values in series:
        ok = np.isfinite(values)
        x, y = np.asarray(steps, dtype=np.float64)[ok], np.asarray(values, dtype=np.float64)[ok]
        n = len(y)
        exact = source == "trace" and measure == "allocated"
        judged = n >= (GROWTH_MIN_STEADY_STEPS if exact else GROWTH_MIN_STEPS)
        if n < 2:
            level = float(y[0]) if n else np.nan
            rows.append((device, source, measure, n, level, level, np.nan, np.nan, judged, False))
            continue
        slope = _theil_sen(x, y)
        diffs = np.diff(y)
        rising = float((diffs > 0).mean())
        rise = slope * (x[-1] - x[0])
        min_rise = GROWTH_MIN_RSS_RISE_BYTES if measure == "rss" else GROWTH_MIN_RISE_BYTES
        trend = (n >= GROWTH_MIN_STEPS and slope > 0 and rising >= GROWTH_MIN_RISING_SHARE
                 and rise >= max(min_rise, GROWTH_MIN_RISE_FRACTION * float(np.median(y))))
        steady = (exact and judged and bool((diffs > 0).all())
                  and diffs.min() >= GROWTH_STEADY_RATIO * diffs.max() and diffs.sum() >= GROWTH_MIN_RISE_BYTES)
        rows.append((device, source, measure, n, float(y[0]), float(y[-1]), slope, rising, judged,
                     bool(trend or steady)))
    # Typed even when empty, so ``growth[growth["flagged"]]`` is a row mask, never a column list.
    return pd.DataFrame(rows, columns=GROWTH_COLUMNS).astype({"judged": bool, "flagged": bool})


def series_label(source: str, measure: str) -> str:
    """What a growth series measures, in words: "process RSS", "allocated bytes (trace)"."""
    what = {"allocated": "allocated bytes", "reserved": "reserved bytes", "peak": "peak allocated bytes",
            "rss": "process RSS"}.get(measure, measure)
    return what if measure == "rss" else f"{what} ({'every step' if source == 'sampler' else source})"


def relative_devices(step_table: pd.DataFrame) -> set[str]:
    """Devices whose traced levels count from the start of recording (``reconstructed``)."""
    if "reconstructed" not in step_table or step_table.empty:
        return set()
    return set(step_table.loc[step_table["reconstructed"], "device"].astype(str))


def growth_series(step_table: pd.DataFrame, sampler_device: str | None) -> list[GrowthSeries]:
    """The per-step levels ``memory_growth`` judges, from ``memory_steps``' table: every
    series the run has.

    The live sampler's (every step the cell ran) for its device: on CUDA the
    allocator's allocated, reserved and per-step peak bytes, on the CPU the
    process RSS; and the trace's end-of-step allocated and reserved bytes
    (profiled steps only) for every device.
    RSS also moves with the profiler's own event buffers while it records
    (``warmup`` and ``active`` steps) and with the trace export that follows
    the last active step, which would look like a leak on a steady loop; so an
    RSS series keeps only the steps the profiler left alone, and of those one
    unbroken stretch (the longest, the later on a tie): the C allocator keeps
    much of what the profiler took, so the level after a profiled stretch is
    not comparable with the level before it. The CUDA allocator's figures do
    not see host buffers and keep every step.
    """
    out: list[GrowthSeries] = []
    if sampler_device is not None:
        for column, measure in (("mem_allocated_bytes", "allocated"), ("mem_reserved_bytes", "reserved"),
                                ("mem_peak_bytes", "peak"), ("rss_bytes", "rss")):
            if column in step_table:
                rows = step_table[(step_table["device"] == sampler_device) & step_table[column].notna()]
                if measure == "rss":
                    rows = rows[_longest_stretch(_unprofiled(rows["phase"].to_numpy()))]
                out.append((sampler_device, "sampler", measure, rows["step"].to_numpy(), rows[column].to_numpy()))
    for column, measure in (("end_allocated_bytes", "allocated"), ("end_reserved_bytes", "reserved")):
        if column not in step_table:
            continue
        traced = step_table[step_table[column].notna()]
        for device, rows in traced.groupby("device", sort=True):
            if measure == "reserved" and not rows[column].any():
                continue  # no caching allocator behind it (the CPU's): nothing is ever reserved
            out.append((str(device), "trace", measure, rows["step"].to_numpy(), rows[column].to_numpy()))
    return out


def _unprofiled(phase: np.ndarray) -> np.ndarray:
    """Steps in which the profiler neither recorded nor exported (phases in step order)."""
    after_active = np.concatenate(([False], phase[:-1] == "active"))
    return np.isin(phase, ("wait", "none")) & ~after_active


def _longest_stretch(keep: np.ndarray) -> np.ndarray:
    """``keep`` narrowed to its longest run of consecutive ``True`` (the later one on a tie)."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], keep.astype(np.int8), [0]))))
    starts, ends = edges[::2], edges[1::2]
    out = np.zeros(len(keep), dtype=bool)
    if len(starts):
        longest = len(starts) - 1 - int(np.argmax((ends - starts)[::-1]))
        out[starts[longest]:ends[longest]] = True
    return out


def _memory_events(table: EventTable) -> np.ndarray:
    """``[memory]`` events sorted by time (stable, so same-time events keep trace order)."""
    idx = np.flatnonzero(table.kind == Kind.MEMORY)
    return idx[np.argsort(table["ts"][idx], kind="stable")]


def _paired_free_time(ts: np.ndarray, delta: np.ndarray, device: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """For each allocation event, the time of the free paired with it (+inf when none);
    ``device`` holds device codes (``device_codes``)."""
    partner = _partners(delta, device, addr)
    out = np.full(len(ts), np.inf)
    paired = (delta > 0) & (partner >= 0)
    out[paired] = ts[partner[paired]]
    return out


def _partners(delta: np.ndarray, device: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """For each event, the position of the event it pairs with: an allocation's free, a
    free's allocation; -1 when it has none in the trace (a block not yet freed, or freed
    but made before recording).

    Events group by (device, address), or by (device, size) where the trace has
    no address. Within one group, pairing each free with the most recent
    unpaired allocation is bracket matching: with ``depth`` the number of live
    allocations after each event, an allocation that raises the depth to ``d``
    is freed by the next event in the group that lowers it from ``d``. Sorting
    by (group, level, time) puts those two next to each other, so the matching
    is one sort, no loop.
    """
    n = len(delta)
    out = np.full(n, -1, dtype=np.int64)
    sign = np.sign(delta).astype(np.int64)
    size = np.abs(delta)
    size_code = pd.factorize(size)[0]
    block = np.where(addr != MISSING, addr, -2 - size_code)  # addresses are >= 0: no clash with size codes
    block_code = pd.factorize(block)[0]
    group = device.astype(np.int64) * (int(block_code.max(initial=0)) + 1) + block_code
    order = np.argsort(group, kind="stable")  # by group, then time (events are time-sorted)
    g, s = group[order], sign[order]
    depth = np.cumsum(s)
    group_start = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    offset = np.repeat(depth[group_start] - s[group_start], np.diff(np.concatenate((group_start, [n]))))
    depth = depth - offset
    level = np.where(s > 0, depth, depth + 1)  # the depth an allocation rises to, or a free falls from
    level_range = int(level.max(initial=0)) - int(level.min(initial=0)) + 1
    pair_order = np.argsort(g * level_range + (level - level.min(initial=0)), kind="stable")  # group, level, time
    pos = order[pair_order]
    same = (g[pair_order][1:] == g[pair_order][:-1]) & (level[pair_order][1:] == level[pair_order][:-1])
    matched = same & (s[pair_order][:-1] > 0) & (s[pair_order][1:] < 0)
    out[pos[:-1][matched]] = pos[1:][matched]
    out[pos[1:][matched]] = pos[:-1][matched]
    return out


def _theil_sen(x: np.ndarray, y: np.ndarray) -> float:
    """Median of pairwise slopes; long series are thinned evenly to bound the O(n^2) pairs."""
    if len(x) > _THEIL_SEN_MAX_POINTS:
        keep = np.linspace(0, len(x) - 1, _THEIL_SEN_MAX_POINTS).round().astype(np.int64)
        x, y = x[keep], y[keep]
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    valid = dx != 0
    return float(np.median((y[j] - y[i])[valid] / dx[valid])) if valid.any() else 0.0
