"""Per stream idle time, and how much the kinds of device work ran at once.

**Stream idle** (``stream_idle``) is the idle time of each (device, stream) over
the profiled steps (the breakdown's stretched steps), as Holistic Trace
Analysis's ``get_idle_time_breakdown`` splits it: a stream can be starved while
the device is busy with another, and the device-wide figure (``sync.idle_time``)
does not show that. Each gap between a stream's activities (kernels, memcpys,
memsets) ends where the stream runs again, and goes to one category, in HTA's
order:

* ``host_wait_us``: the activity that ends the gap was launched by a runtime call
  that returned after the gap began: the stream waited on the host. So is the
  time after a stream's last activity (nothing more was launched). The test is
  the call's return, as in ``sync.idle_time`` (HTA tests the call's start: a
  launch that started before the gap but had not yet submitted still kept the
  stream waiting).
* ``kernel_wait_us``: otherwise, a gap shorter than ``KERNEL_WAIT_US``: the
  device's own delay between back-to-back work (launch overhead of many small
  kernels). HTA's default threshold (``consecutive_kernel_delay=30``, compared
  with the trace's µs although its docstring says ns).
* ``other_us``: the rest: the work was queued yet did not run (waits on events
  or other streams, or work whose launch the trace does not record).

**Overlap** (``kernel_overlap``) is, per device, how long each pair of kinds of
device work ran at once: compute kernels, communication kernels (NCCL/RCCL, the
breakdown's masks) and memory work (memcpy, memset). The diagonal is each kind's
busy time (the union of its intervals); communication hidden behind computation
is the compute/communication cell, HTA's ``get_comm_comp_overlap`` is that cell
over the communication diagonal.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.table import DEVICE_WORK_KINDS, EventTable
from .breakdown import part_masks
from .event_kinds import of_kind
from .intervals import covered_in_windows
from .links import launching_runtime
from .steps import step_of

# HTA's ``consecutive_kernel_delay`` default: gaps shorter than this (µs) are kernel waits.
KERNEL_WAIT_US = 30.0
STREAM_IDLE_COLUMNS = ["device", "stream", "activities", "span_us", "busy_us", "idle_us",
                       "kernel_wait_us", "host_wait_us", "other_us"]
OVERLAP_TYPES = ("compute", "communication", "memory")
OVERLAP_COLUMNS = ["device", "type", *OVERLAP_TYPES]


def stream_idle(table: EventTable, spans: pd.DataFrame, kernel_wait_us: float = KERNEL_WAIT_US) -> pd.DataFrame:
    """``STREAM_IDLE_COLUMNS``, one row per (device, stream) that ran device work, over the
    steps of ``spans`` (``stretched_steps``), in µs: ``span_us`` is the steps' total,
    ``busy_us + idle_us == span_us`` and the three waits add up to ``idle_us``;
    ``activities`` counts the stream's activities that start in a step. Empty without
    device work or steps."""
    work = np.flatnonzero(of_kind(table.kind, DEVICE_WORK_KINDS))
    if len(work) == 0 or spans.empty:
        return pd.DataFrame(columns=STREAM_IDLE_COLUMNS)
    lo = spans["start_us"].to_numpy(dtype=np.float64)
    hi = spans["end_us"].to_numpy(dtype=np.float64)
    ts, dur = table["ts"], table["dur"]
    rt = launching_runtime(table, work)
    submitted = np.where(rt >= 0, ts[rt] + dur[rt], np.nan)
    start, end = ts[work], ts[work] + dur[work]
    device, stream = table["device"][work], table["stream"][work]
    # Per stream, by start, then by submission: within a run of overlapping activities the
    # first is the one that ended the gap before the run.
    order = np.lexsort((submitted, start, stream, device))
    start, end, submitted, device, stream = (a[order] for a in (start, end, submitted, device, stream))
    new_group = np.concatenate(([True], (device[1:] != device[:-1]) | (stream[1:] != stream[:-1])))
    bounds = np.append(np.flatnonzero(new_group), len(start))
    in_step = step_of(start, spans) >= 0
    span = float((hi - lo).sum())
    rows = []
    for a, b in zip(bounds[:-1], bounds[1:]):  # one pass per stream: a trace has a few dozen
        waits = [float(w.sum()) for w in idle_by_cause(start[a:b], end[a:b], submitted[a:b], lo, hi, kernel_wait_us)]
        idle = sum(waits)
        rows.append((int(device[a]), int(stream[a]), int(in_step[a:b].sum()), span,
                     max(span - idle, 0.0), idle, *waits))
    return pd.DataFrame(rows, columns=STREAM_IDLE_COLUMNS)


def idle_by_cause(start: np.ndarray, end: np.ndarray, submitted: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  kernel_wait_us: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kernel wait, host wait, other) µs inside each window ``[lo, hi)``, of device work sorted
    by start (then submission), ``submitted`` being when each activity's launch returned (NaN:
    launch not in the trace). The one gap classification: one stream's here, the whole
    device's in ``sync.idle_time`` (with ``kernel_wait_us`` 0, which leaves no kernel wait)."""
    running_end = np.maximum.accumulate(end)
    first = np.concatenate(([True], start[1:] > running_end[:-1]))
    busy_start = start[first]
    last = np.concatenate((np.flatnonzero(first)[1:] - 1, [len(start) - 1]))
    busy_end = running_end[last]
    # Gap k ends where busy run k starts; the last one runs past the final activity.
    previous_end = np.concatenate(([-np.inf], busy_end))
    gap_start = np.concatenate(([min(lo[0], busy_start[0])], busy_end))
    gap_end = np.concatenate((busy_start, [max(hi[-1], busy_end[-1])]))
    host = np.concatenate((submitted[first], [np.nan])) > previous_end
    host[-1] = True  # nothing more was launched: the device waited on the host
    kernel = ~host & (gap_end - previous_end < kernel_wait_us)
    other = ~host & ~kernel

    def inside(mask: np.ndarray) -> np.ndarray:
        return covered_in_windows(gap_start[mask], gap_end[mask], lo, hi)

    return inside(kernel), inside(host), inside(other)


def kernel_overlap(table: EventTable, spans: pd.DataFrame) -> pd.DataFrame:
    """``OVERLAP_COLUMNS``: per device, a symmetric matrix (rows ``type``, columns the same
    types) of the µs, within the steps of ``spans``, during which work of both types ran;
    the diagonal is each type's busy time. Empty without device work or steps.

    Each pair is counted by inclusion-exclusion over unions, |A ∩ B| = |A| + |B| - |A ∪ B|,
    all three measured by ``covered_in_windows``: no per-pair interval walk.
    """
    masks = part_masks(table)
    kinds = {
        "compute": masks["kernel"],
        "communication": masks["communication_kernel"],
        "memory": masks["memcpy"] | masks["memset"],
    }
    any_work = kinds["compute"] | kinds["communication"] | kinds["memory"]
    if spans.empty or not any_work.any():
        return pd.DataFrame(columns=OVERLAP_COLUMNS)
    lo = spans["start_us"].to_numpy(dtype=np.float64)
    hi = spans["end_us"].to_numpy(dtype=np.float64)
    # Only the device work, in table order: the masks below then span it, not every event.
    work = np.flatnonzero(any_work)
    kinds = {t: m[work] for t, m in kinds.items()}
    ts, end, work_device = table["ts"][work], table["ts"][work] + table["dur"][work], table["device"][work]

    def busy(mask: np.ndarray) -> float:
        return float(covered_in_windows(ts[mask], end[mask], lo, hi).sum())

    rows = []
    for device in np.unique(work_device):
        on = work_device == device
        alone = {t: busy(m & on) for t, m in kinds.items()}
        matrix = {(t, t): alone[t] for t in OVERLAP_TYPES}
        for i, a in enumerate(OVERLAP_TYPES):
            for b in OVERLAP_TYPES[i + 1:]:
                both = max(alone[a] + alone[b] - busy((kinds[a] | kinds[b]) & on), 0.0)
                matrix[a, b] = matrix[b, a] = both
        rows += [(int(device), a, *(matrix[a, b] for b in OVERLAP_TYPES)) for a in OVERLAP_TYPES]
    return pd.DataFrame(rows, columns=OVERLAP_COLUMNS)
