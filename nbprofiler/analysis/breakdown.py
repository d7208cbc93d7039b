"""The step-time breakdown: where each step's wall time went, one category per instant.

The definitions are those of the PyTorch Profiler TensorBoard plugin, so that a
user moving from it sees the same figures:

* Steps are the ``ProfilerStep#N`` host ranges. When any step launched device
  work, each step is *stretched*: it starts at the later of its host start and
  the previous step's stretched end, and ends at the later of its host end and
  the end of the last device activity (kernel, memcpy, memset) it launched. A
  device activity belongs to the step whose host range wholly contains the
  runtime call that launched it (matched through the correlation id), whichever
  thread made the call.
* Trailing steps that launched no device work are dropped, and so is the last
  remaining step when it launched fewer than 80% of the device activities of
  the step before it: the profiler most likely stopped before its kernels ran.
* Each instant of a step goes to exactly one category, by priority
  Kernel > Communication (NCCL kernels) > Memcpy > Memset > Communication
  (host ranges) > Runtime > DataLoader > CPU Exec, and whatever no category
  covers is Other. A category gets the union of its intervals minus what the
  higher ones already took.
* Communication takes time at two ranks. Its kernels rank with the kernels, as
  in the plugin, which ranks every kernel first (it moves a kernel to
  Communication only when the kernel carries the External id of an ``nccl:``
  range, and the NCCL kernels of real traces carry their launching op's id
  instead). So an instant with any kernel running is ``kernel`` or
  ``communication``, never memcpy, memset or runtime, and ``kernel`` plus the
  device part of ``communication`` is the plugin's Kernel figure; the column
  stays apart so that the collectives' time shows. An instant covered by a
  compute kernel and an NCCL kernel at once is ``kernel``: ``kernel`` is then
  the same figure with or without collectives, and device ``communication`` is
  the collective time that no computation hid. The collectives' host ranges
  keep the plugin's Communication rank, below Memset and above Runtime: they
  are host time, waits for the other ranks included.

On a trace without device work nothing is stretched or dropped, and the device
categories are 0: the breakdown is then about host time only.
"""
from __future__ import annotations

import weakref

import numpy as np
import pandas as pd

from ..trace.table import DEVICE_WORK_KINDS, HOST_RANGE_KINDS, EventTable, Kind
from .event_kinds import of_kind
from .intervals import merged_covered_in_windows, union
from .links import launching_runtime
from .steps import dataloader_names

CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")
BREAKDOWN_COLUMNS = ["step", *CATEGORIES, "other", "total"]
STEP_SPAN_COLUMNS = ["step", "start_us", "end_us", "host_start_us", "host_end_us", "device_activities"]
# The last step is kept only when it launched at least this share of the previous step's device work.
LAST_STEP_MIN_SHARE = 0.8

_COMM_OP_PREFIXES = ("nccl:", "gloo:")
_STEP_PREFIX = "ProfilerStep#"


def stretched_steps(table: EventTable, host_steps: pd.DataFrame) -> pd.DataFrame:
    """The steps the breakdown uses: ``step, start_us, end_us, host_start_us, host_end_us,
    device_activities`` (device activities each step launched), stretched and trimmed
    as the module docstring says.

    ``host_steps`` is ``profiler_steps(table)``: host ranges sorted by start.
    """
    if host_steps.empty:
        return pd.DataFrame(columns=STEP_SPAN_COLUMNS)
    host_start = host_steps["start_us"].to_numpy(dtype=np.float64)
    host_end = host_steps["end_us"].to_numpy(dtype=np.float64)
    n = len(host_start)
    dev, step = _launches(table, host_start, host_end)
    count = np.bincount(step, minlength=n)
    start, end = host_start, host_end
    keep = _kept(count)
    if count.any():
        ts, dur = table["ts"], table["dur"]
        device_end = np.full(n, -np.inf)
        np.maximum.at(device_end, step, ts[dev] + dur[dev])
        # end_i = max(host_end_i, device_end_i, start_i) with start_i = max(host_start_i, end_{i-1}):
        # host_start_i <= host_end_i, so the recurrence is a running maximum.
        end = np.maximum.accumulate(np.maximum(host_end, device_end))
        start = np.maximum(host_start, np.concatenate(([host_start[0]], end[:-1])))
    return pd.DataFrame(
        {
            "step": host_steps["step"].to_numpy()[:keep],
            "start_us": start[:keep],
            "end_us": end[:keep],
            "host_start_us": host_start[:keep],
            "host_end_us": host_end[:keep],
            "device_activities": count[:keep],
        }
    )


def dropped_steps(table: EventTable, host_steps: pd.DataFrame) -> tuple[int, int]:
    """The steps ``stretched_steps`` leaves out, so the report can say so: (trailing steps
    that launched no device work, last steps cut short: 0 or 1)."""
    if host_steps.empty:
        return 0, 0
    host_start = host_steps["start_us"].to_numpy(dtype=np.float64)
    host_end = host_steps["end_us"].to_numpy(dtype=np.float64)
    count = np.bincount(_launches(table, host_start, host_end)[1], minlength=len(host_start))
    keep = _kept(count)
    cut_short = int(keep < len(count) and count[keep] > 0)
    return len(count) - keep - cut_short, cut_short


def _launches(table: EventTable, host_start: np.ndarray, host_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Device activities launched inside a step's host range, and that step's position."""
    ts, dur = table["ts"], table["dur"]
    dev = np.flatnonzero(of_kind(table.kind, DEVICE_WORK_KINDS))
    rt = launching_runtime(table, dev)
    launched = rt >= 0
    dev, rt = dev[launched], rt[launched]
    rt_start, rt_end = ts[rt], ts[rt] + dur[rt]
    step = np.searchsorted(host_start, rt_start, side="right") - 1
    inside = (step >= 0) & (rt_end <= host_end[np.maximum(step, 0)])
    return dev[inside], step[inside]


def _kept(count: np.ndarray) -> int:
    """How many leading steps the breakdown keeps, from the device activities each launched:
    all of them without device work, else up to the last that launched any, less that one
    when it launched under ``LAST_STEP_MIN_SHARE`` of the step before it."""
    if not count.any():
        return len(count)
    last = int(np.flatnonzero(count)[-1])
    if last > 0 and count[last] < LAST_STEP_MIN_SHARE * count[last - 1]:
        return last
    return last + 1


# The order in which the parts of the categories take time: (part, the category it counts in).
# Communication takes time at two ranks (see the module docstring): its kernels right after the
# compute kernels, its host ranges at the plugin's Communication rank.
PRIORITY: tuple[tuple[str, str], ...] = (
    ("kernel", "kernel"),
    ("communication_kernel", "communication"),
    ("memcpy", "memcpy"),
    ("memset", "memset"),
    ("communication_host", "communication"),
    ("runtime", "runtime"),
    ("dataloader", "dataloader"),
    ("cpu_exec", "cpu_exec"),
)


_PART_MASKS: "weakref.WeakKeyDictionary[EventTable, dict[str, np.ndarray]]" = weakref.WeakKeyDictionary()


def part_masks(table: EventTable) -> dict[str, np.ndarray]:
    """For each part of ``PRIORITY``, which events fall in it (boolean masks over the table, read
    only). Computed once per table: the breakdown and the communication table both need them."""
    if table not in _PART_MASKS:
        masks = _part_masks(table)
        for mask in masks.values():
            mask.flags.writeable = False
        _PART_MASKS[table] = masks
    return _PART_MASKS[table]


def _part_masks(table: EventTable) -> dict[str, np.ndarray]:
    names = pd.Series(table.names, dtype=object).astype(str)
    code = table.name_code
    nccl = names.str.lower().str.contains("nccl", regex=False).to_numpy()[code]
    comm_op = names.str.startswith(_COMM_OP_PREFIXES).to_numpy()[code]
    dataloader = dataloader_names(table)[code]
    step = names.str.startswith(_STEP_PREFIX).to_numpy()[code]
    kind = table.kind
    kernel = kind == Kind.KERNEL
    host = of_kind(kind, HOST_RANGE_KINDS)
    return {
        "kernel": kernel & ~nccl,
        "communication_kernel": kernel & nccl,
        "memcpy": kind == Kind.MEMCPY,
        "memset": kind == Kind.MEMSET,
        "communication_host": host & comm_op,
        "runtime": kind == Kind.RUNTIME,
        "dataloader": host & dataloader & ~comm_op,
        "cpu_exec": host & ~dataloader & ~comm_op & ~step,
    }


def category_masks(table: EventTable) -> dict[str, np.ndarray]:
    """For each category, which events fall in it (boolean masks over the table): the
    union of its parts."""
    parts = part_masks(table)
    masks = {c: np.zeros(len(table.kind), dtype=bool) for c in CATEGORIES}
    for part, category in PRIORITY:
        masks[category] |= parts[part]
    return masks


def step_breakdown(table: EventTable, spans: pd.DataFrame) -> pd.DataFrame:
    """One row per step of ``spans`` (``stretched_steps``), in µs: ``step``, the
    categories, ``other`` and ``total`` (the step's wall time).

    Priority attribution by prefix unions: the time part *p* of ``PRIORITY``
    takes in a step is the length of (parts 1..p together) in the step minus
    that of (parts 1..p-1), added to its category; so the columns add up to
    ``total`` exactly and no instant is counted twice.
    """
    if spans.empty:
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    lo = spans["start_us"].to_numpy(dtype=np.float64)
    hi = spans["end_us"].to_numpy(dtype=np.float64)
    ts, dur = table["ts"], table["dur"]
    out: dict[str, np.ndarray] = {"step": spans["step"].to_numpy()}
    out.update({c: np.zeros(len(lo)) for c in CATEGORIES})
    acc_start, acc_end = np.empty(0), np.empty(0)
    covered_so_far = np.zeros(len(lo))
    masks = part_masks(table)
    for part, category in PRIORITY:
        mask = masks[part]
        if not mask.any():  # adds nothing to the union: its category gains exactly 0
            continue
        s = ts[mask]
        part_start, part_end = union(s, s + dur[mask])
        acc_start, acc_end = union(np.concatenate((acc_start, part_start)), np.concatenate((acc_end, part_end)))
        covered = merged_covered_in_windows(acc_start, acc_end, lo, hi)
        out[category] += covered - covered_so_far
        covered_so_far = covered
    total = hi - lo
    out["other"] = np.maximum(total - covered_so_far, 0.0)
    out["total"] = total
    return pd.DataFrame(out, columns=BREAKDOWN_COLUMNS)


def breakdown_shares(breakdown: pd.DataFrame, per_step: bool = False) -> pd.Series | pd.DataFrame:
    """Each category as a fraction of the step; the fractions add up to 1.

    By default one Series over all steps, as the plugin's overview gives it: the
    category's mean over the steps divided by the mean step time (so long steps
    weigh more). ``per_step=True`` gives each step's own fractions instead.
    """
    parts = [*CATEGORIES, "other"]
    if per_step:
        shares = breakdown[parts].div(breakdown["total"].where(breakdown["total"] > 0), axis=0)
        shares.insert(0, "step", breakdown["step"].to_numpy())
        return shares
    total = float(breakdown["total"].sum()) if len(breakdown) else 0.0
    if total <= 0:
        return pd.Series(np.nan, index=parts, dtype=np.float64)
    return breakdown[parts].sum().astype(np.float64) / total
