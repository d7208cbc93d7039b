"""Host-device synchronisation and GPU idle time, per step.

**Synchronisations** are host calls that block until the device catches up:
``cudaDeviceSynchronize``, ``cudaStreamSynchronize``, ``cudaEventSynchronize``
(and their ``hip*`` names), and ``aten::item`` / ``aten::_local_scalar_dense``,
which copy a device scalar to the host (``loss.item()``, ``if tensor:``). They
nest (``aten::item`` calls ``_local_scalar_dense``, which calls
``cudaStreamSynchronize``), so the rows are not to be added up. A call belongs
to the step whose host range it starts in: it is the step's code that waits.

**Idle time** is, per stretched step (the breakdown's steps), the time the
device ran no kernel, memcpy or memset. Each idle gap ends where the device
starts work again, and the gap is split by what that work's launch looked like:

* ``host_wait_us``: when the device went idle, the next activity had not been
  submitted yet: the runtime call that launched it returned after the previous
  activity ended (or there was no later activity at all). The device starved,
  waiting for the host (Python overhead, a slow DataLoader, a sync).
  The call's *return* is the test, not its start: a launch that began before
  the device went idle but had not yet submitted the kernel still kept it waiting.
* ``other_idle_us``: the next activity was already submitted, yet the device
  did not run it at once: waits on events or other streams, or work whose
  launch the trace does not record.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.table import DEVICE_WORK_KINDS, EventTable, Kind
from .intervals import covered_in_windows
from .links import launching_runtime
from .steps import step_of

SYNC_NAMES = (
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize",
    "aten::item", "aten::_local_scalar_dense",
)
SYNC_COLUMNS = ["step", "name", "calls", "total_us"]
IDLE_COLUMNS = ["step", "busy_us", "idle_us", "host_wait_us", "other_idle_us"]
_SYNC_KINDS = (Kind.RUNTIME, Kind.CPU_OP)


def sync_calls(table: EventTable, host_steps: pd.DataFrame) -> pd.DataFrame:
    """``step, name, calls, total_us`` for each synchronising call made in a step
    (``host_steps`` is ``profiler_steps``); steps without any have no rows."""
    wanted = np.isin(table.names.astype(str), SYNC_NAMES)[table.name_code] & np.isin(table.kind, _SYNC_KINDS)
    idx = np.flatnonzero(wanted)
    step = step_of(table["ts"][idx], host_steps)
    inside = step >= 0
    idx, step = idx[inside], step[inside]
    if len(idx) == 0:
        return pd.DataFrame(columns=SYNC_COLUMNS)
    frame = pd.DataFrame({"step": step, "name": table.names[table.name_code[idx]].astype(object), "dur": table["dur"][idx]})
    out = frame.groupby(["step", "name"], sort=False)["dur"].agg(calls="count", total_us="sum").reset_index()
    out["calls"] = out["calls"].astype(np.int64)
    return out.sort_values(["step", "total_us"], ascending=[True, False], kind="stable").reset_index(drop=True)[SYNC_COLUMNS]


def idle_time(table: EventTable, spans: pd.DataFrame, device: int | None = None) -> pd.DataFrame:
    """``IDLE_COLUMNS`` per step of ``spans`` (``stretched_steps``), for one device
    (``None``: the device with the most device work). Empty without device work."""
    work = np.flatnonzero(np.isin(table.kind, DEVICE_WORK_KINDS))
    if len(work) == 0 or spans.empty:
        return pd.DataFrame(columns=IDLE_COLUMNS)
    devices = table["device"][work]
    if device is None or not (devices == device).any():
        values, counts = np.unique(devices, return_counts=True)
        device = int(values[np.argmax(counts)])
    work = work[devices == device]
    ts, dur = table["ts"], table["dur"]
    rt = launching_runtime(table, work)
    submitted = np.where(rt >= 0, ts[rt] + dur[rt], np.nan)
    start, end = ts[work], ts[work] + dur[work]
    # Busy intervals: runs of overlapping activities. Within a run sorted by start
    # (then by submission), the first activity is the one that ended the gap before it.
    order = np.lexsort((submitted, start))
    start, end, submitted = start[order], end[order], submitted[order]
    running_end = np.maximum.accumulate(end)
    first = np.concatenate(([True], start[1:] > running_end[:-1]))
    busy_start = start[first]
    last = np.concatenate((np.flatnonzero(first)[1:] - 1, [len(start) - 1]))
    busy_end = running_end[last]
    # Gap k ends where busy run k starts; the last gap runs past the final activity.
    lo = spans["start_us"].to_numpy(dtype=np.float64)
    hi = spans["end_us"].to_numpy(dtype=np.float64)
    gap_start = np.concatenate(([min(lo[0], busy_start[0])], busy_end))
    gap_end = np.concatenate((busy_start, [max(hi[-1], busy_end[-1])]))
    next_submitted = np.concatenate((submitted[first], [np.nan]))
    host_wait = next_submitted > np.concatenate(([-np.inf], busy_end))
    host_wait[-1] = True  # nothing more was launched: the device waited on the host
    host = covered_in_windows(gap_start[host_wait], gap_end[host_wait], lo, hi)
    other = covered_in_windows(gap_start[~host_wait], gap_end[~host_wait], lo, hi)
    total = hi - lo
    idle = host + other
    return pd.DataFrame(
        {
            "step": spans["step"].to_numpy(),
            "busy_us": np.maximum(total - idle, 0.0),
            "idle_us": idle,
            "host_wait_us": host,
            "other_idle_us": other,
        },
        columns=IDLE_COLUMNS,
    )
