"""Every allocation of the trace, with its lifetime, its operator and its cell line.

The memory timeline (``memory.memory_timeline``) says how much was allocated;
this table says which blocks made it up: one row per allocation event, with
when it was made, when the free paired with it came (``memory``'s pairing: by
device and block address, or by size in 2021 traces without addresses), the
operator that made it (``memory.allocation_owners``) and, for a live run with
``--stack``, the cell line that was running (``lines.line_at``).

The largest blocks live at each device's peak come first: what to shrink to
lower the peak. A block never freed in the trace (``freed_us`` NaN) was still
held when recording stopped: a weight, an optimizer state, or what a loop keeps
from step to step (the leak advice names the line and operator of the largest
ones made in the profiled steps).

"Live at the peak" is exact in event order: the block was allocated at or
before the event that set the device's highest level and its free came after
it (events that share a timestamp keep the trace's order).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..records import NOT_IN_CELL, LineMarks
from .lines import line_at
from .memory import NO_OPERATOR, Allocations, _paired_free_time, device_codes
from .operators import OperatorTree
from .steps import step_of

ALLOCATION_COLUMNS = ["device", "bytes", "allocated_us", "freed_us", "lifetime_us", "live_at_peak", "step",
                      "operator", "line"]


def allocation_table(tree: OperatorTree, allocations: Allocations, timeline: pd.DataFrame, steps: pd.DataFrame,
                     marks: LineMarks | None = None, base_ns: int = 0) -> pd.DataFrame:
    """``ALLOCATION_COLUMNS``, one row per allocation event.

    ``allocations`` is ``allocation_owners(tree)``; ``timeline`` is ``memory_timeline``
    (its rows are the same events, in the same order), ``steps`` the trace's steps.
    ``allocated_us`` / ``freed_us`` are trace timestamps (µs, as ``report.memory``'s
    ``ts``); ``freed_us`` and ``lifetime_us`` are NaN for a block still held at the end.
    ``step`` is the profiled step it was made in (-1: outside the steps). ``operator``
    is ``(no operator)`` outside any; ``line`` is the cell line with ``marks`` (a live
    run's ``--stack``), else ``<NA>``. Sorted: live at the peak first, then largest.
    """
    table = tree.table
    idx = allocations.events
    if len(idx) == 0:
        return pd.DataFrame(columns=ALLOCATION_COLUMNS)
    delta = np.nan_to_num(table["bytes"][idx])
    device, labels = device_codes(table["mem_device_type"][idx], table["mem_device_id"][idx])
    # Paired by position, not time: which free came after the peak is exact even where
    # timestamps tie (whole microseconds in 2021 traces).
    free_pos = _paired_free_time(np.arange(len(idx), dtype=np.float64), delta, device, table["addr"][idx])
    level = timeline["allocated_bytes"].to_numpy(dtype=np.float64)
    peak_pos = pd.Series(level).groupby(device).idxmax()  # the first event at each device's highest level
    peak = peak_pos.reindex(np.arange(len(labels))).to_numpy(dtype=np.float64)[device]
    made = np.flatnonzero(delta > 0)
    ts = table["ts"][idx]
    freed = np.isfinite(free_pos[made])
    freed_us = np.full(len(made), np.nan)
    freed_us[freed] = ts[free_pos[made][freed].astype(np.int64)]
    live = (made <= peak[made]) & (free_pos[made] > peak[made])
    names = list(table.names)
    none = names.index(NO_OPERATOR) if NO_OPERATOR in names else len(names)  # allocations outside any operator
    owner = allocations.owner[made]
    name_code = np.where(owner >= 0, table.name_code[tree.index[np.maximum(owner, 0)]], none)
    operators = pd.Index(names if none < len(names) else [*names, NO_OPERATOR], dtype=object)
    # All missing, built from its mask: pd.array of an object array of NA converts each one.
    line = pd.arrays.IntegerArray(np.zeros(len(made), dtype=np.int64), np.ones(len(made), dtype=bool))
    if marks is not None:
        at = line_at(marks, ts[made], base_ns)
        line = pd.array(np.where(at == NOT_IN_CELL, 0, at), dtype="Int64")
        line[at == NOT_IN_CELL] = pd.NA
    frame = pd.DataFrame({
        "device": pd.Categorical.from_codes(device[made], categories=pd.Index(labels, dtype=object)),
        "bytes": delta[made],
        "allocated_us": ts[made],
        "freed_us": freed_us,
        "lifetime_us": freed_us - ts[made],
        "live_at_peak": live,
        "step": step_of(ts[made], steps),
        "operator": pd.Categorical.from_codes(name_code, categories=operators),
        "line": line,
    })
    order = np.lexsort((ts[made], -delta[made], ~live))
    return frame.iloc[order].reset_index(drop=True)
