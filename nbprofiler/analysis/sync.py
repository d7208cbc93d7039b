"""Host-device synchronisation and GPU idle time, per step.

**Synchronisations** are host calls that block until the device catches up:
``cudaDeviceSynchronize``, ``cudaStreamSynchronize``, ``cudaEventSynchronize``
(and their ``hip*`` names), and ``aten::item`` / ``aten::_local_scalar_dense``,
which copy a device scalar to the host (``loss.item()``, ``if tensor:``). They
nest (``aten::item`` calls ``_local_scalar_dense``, which calls
``cudaStreamSynchronize``), so the rows are not to be added up. A call belongs
to the step whose host range it starts in: it is the step's code that waits.

**Sync points** (``sync_points``, for the advice) are those waits one by one,
with what caused them (``.item()``, a data-dependent shape, a copy to the host
or from pageable memory, an explicit synchronize), where in the user's code
they happened (``SyncLocator``), and how long the device then sat idle.

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

from ..records import NOT_IN_CELL, LineMarks
from ..trace.table import DEVICE_WORK_KINDS, EventTable, Kind
from .copies import copy_kind
from .event_kinds import of_kind
from .frames import user_frame
from .intervals import climb, has_ancestor, innermost_around, parent_index, union
from .lines import line_at
from .links import launching_runtime
from .operators import OperatorTree
from .steps import step_of
from .streams import idle_by_cause

SYNC_RUNTIME_NAMES = (
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize",
)
SYNC_NAMES = (*SYNC_RUNTIME_NAMES, "aten::item", "aten::_local_scalar_dense")
# Operators that copy a device value to the host, by what the user wrote to cause them.
SYNC_OPS = {
    "aten::item": "item",
    "aten::_local_scalar_dense": "item",
    "aten::is_nonzero": "bool",
    "aten::nonzero": "shape",
    "aten::masked_select": "shape",
    "aten::_unique2": "shape",
    "aten::unique_consecutive": "shape",
    "aten::unique_dim": "shape",
}
SYNC_COLUMNS = ["step", "name", "calls", "total_us"]
IDLE_COLUMNS = ["step", "busy_us", "idle_us", "host_wait_us", "other_idle_us"]
SYNC_POINT_COLUMNS = ["step", "ts", "operator", "cause", "where", "host_us", "idle_after_us"]
_SYNC_KINDS = (Kind.RUNTIME, Kind.CPU_OP)


def sync_calls(table: EventTable, host_steps: pd.DataFrame) -> pd.DataFrame:
    """``step, name, calls, total_us`` for each synchronising call made in a step
    (``host_steps`` is ``profiler_steps``); steps without any have no rows."""
    wanted = np.isin(table.names.astype(str), SYNC_NAMES)[table.name_code] & of_kind(table.kind, _SYNC_KINDS)
    idx = np.flatnonzero(wanted)
    step = step_of(table["ts"][idx], host_steps)
    inside = step >= 0
    idx, step = idx[inside], step[inside]
    if len(idx) == 0:
        return pd.DataFrame(columns=SYNC_COLUMNS)
    frame = pd.DataFrame({"step": step, "name": table.names[table.name_code[idx]].astype(object),
                          "dur": table["dur"][idx]})
    out = frame.groupby(["step", "name"], sort=False)["dur"].agg(calls="count", total_us="sum").reset_index()
    out["calls"] = out["calls"].astype(np.int64)
    out = out.sort_values(["step", "total_us"], ascending=[True, False], kind="stable")
    return out.reset_index(drop=True)[SYNC_COLUMNS]


def idle_time(table: EventTable, spans: pd.DataFrame, device: int | None = None) -> pd.DataFrame:
    """``IDLE_COLUMNS`` per step of ``spans`` (``stretched_steps``), for one device
    (``None``: the device with the most device work). Empty without device work."""
    work = np.flatnonzero(of_kind(table.kind, DEVICE_WORK_KINDS))
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
    lo = spans["start_us"].to_numpy(dtype=np.float64)
    hi = spans["end_us"].to_numpy(dtype=np.float64)
    _, host, other = idle_by_cause(start[order], end[order], submitted[order], lo, hi, kernel_wait_us=0.0)
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


def sync_points(table: EventTable, tree: OperatorTree, steps: pd.DataFrame, device: int,
                locator: "SyncLocator") -> pd.DataFrame:
    """Each point in a profiled step (``steps``: ``profiler_steps``) where the host waited
    for ``device``, as ``SYNC_POINT_COLUMNS``.

    A sync point is the outermost of: an operator that copies a device value to
    the host (``aten::item``, ``aten::is_nonzero``, data-dependent shapes such as
    ``aten::nonzero``), an operator whose launched copy goes device-to-host, or
    from pageable host memory to the device, and a bare ``cuda*Synchronize``
    call. ``idle_after_us`` is how long the device then sat idle before the
    host queued work again, clipped to the step: the time the sync cost.
    ``where`` is what ``locator`` finds. Empty without real steps (a synthetic
    one spans the whole trace, so "after the sync, within the step" means nothing).
    """
    empty = pd.DataFrame(columns=SYNC_POINT_COLUMNS)
    if steps.empty or bool(steps["synthetic"].iloc[0]):
        return empty
    # Names are judged once per distinct name, then looked up by each event's name code.
    names = [str(n) for n in table.names]
    dev = tree.device_events
    memcpy = table.kind[dev] == Kind.MEMCPY
    launcher = tree.launcher
    kinds = [copy_kind(n) for n in names]
    dtoh_name = np.array([direction == "DtoH" for direction, _ in kinds], dtype=bool)
    pageable_htod_name = np.array([k == ("HtoD", "pageable") for k in kinds], dtype=bool)
    dtoh = memcpy & dtoh_name[table.name_code[dev]]
    pageable_htod = memcpy & pageable_htod_name[table.name_code[dev]]
    # Causes as codes into ``cause_names`` (0: none): small integers, not strings, per operator.
    cause_names = list(dict.fromkeys(["", "cpu", "h2d", *SYNC_OPS.values(), "explicit"]))
    code_of = {c: i for i, c in enumerate(cause_names)}
    cause = np.zeros(len(tree.index), dtype=np.int8)
    cause[launcher[dtoh & (launcher >= 0)]] = code_of["cpu"]
    cause[launcher[pageable_htod & (launcher >= 0)]] = code_of["h2d"]
    sync_cause = np.array([code_of[SYNC_OPS.get(n, "")] for n in names], dtype=np.int8)[table.name_code[tree.index]]
    cause = np.where(sync_cause != 0, sync_cause, cause)
    is_candidate = cause != 0
    inside_candidate = has_ancestor(tree.parent, is_candidate)
    outermost = np.flatnonzero(is_candidate & ~inside_candidate)
    # A bare sync call counts unless an operator it is in was counted already, as its cause.
    runtime = np.flatnonzero((table.kind == Kind.RUNTIME) & np.isin(table.names, SYNC_RUNTIME_NAMES)[table.name_code])
    around = tree.enclosing(table.thread[runtime], table["ts"][runtime])
    counted = is_candidate | inside_candidate
    bare = ~((around >= 0) & counted[np.maximum(around, 0)])
    events = np.concatenate([tree.index[outermost], runtime[bare]])
    positions = np.concatenate([outermost, around[bare]])
    causes = np.concatenate([cause[outermost], np.full(int(bare.sum()), code_of["explicit"], dtype=np.int8)])
    start = table["ts"][events]
    end = start + table["dur"][events]
    step = step_of(start, steps)
    keep = step >= 0
    if not keep.any():
        return empty
    events, positions, causes, start, end, step = (a[keep] for a in (events, positions, causes, start, end, step))
    step_row = np.searchsorted(steps["start_us"].to_numpy(), start, side="right") - 1
    step_end = steps["end_us"].to_numpy(dtype=np.float64)[step_row]
    work = of_kind(table.kind, DEVICE_WORK_KINDS) & (table["device"] == device)
    busy_start, busy_end = union(table["ts"][work], table["ts"][work] + table["dur"][work])
    frame = pd.DataFrame(
        {
            "step": step,
            "ts": start,
            "operator": table.names[table.name_code[events]].astype(str).astype(object),
            "cause": np.array(cause_names, dtype=object)[causes],
            "where": locator.where(events, positions),
            "host_us": end - start,
            "idle_after_us": _idle_after(end, busy_start, busy_end, step_end),
        },
        columns=SYNC_POINT_COLUMNS,
    )
    return frame.sort_values("ts", kind="stable").reset_index(drop=True)


def sync_idle_us(points: pd.DataFrame) -> float:
    """Device idle after syncs (``sync_points``), each instant counted once when syncs follow each other."""
    if points.empty:
        return 0.0
    s, e = union(points["ts"].to_numpy() + points["host_us"].to_numpy(),
                 points["ts"].to_numpy() + points["host_us"].to_numpy() + points["idle_after_us"].to_numpy())
    return float((e - s).sum())


def _idle_after(end: np.ndarray, busy_start: np.ndarray, busy_end: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """From each ``end`` on, how long the device stayed idle (no busy interval) before ``limit``;
    0 where it was still busy at ``end`` (another stream ran on: nothing was lost there)."""
    j = np.searchsorted(busy_start, end, side="right")  # busy intervals that started by each end
    previous_end = np.concatenate(([-np.inf], busy_end))[j]
    resume = np.concatenate((busy_start, [np.inf]))[j]
    return np.where(previous_end > end, 0.0, np.maximum(np.minimum(resume, limit) - end, 0.0))


class SyncLocator:
    """Where syncs happened, from the best the trace offers.

    A cell profiled with ``--stack`` records which cell line ran when
    (``marks``): that gives the exact line. 2021 traces keep a ``Call
    stack`` per operator with true line numbers. A live trace with stacks has
    Python function ranges, whose line numbers are not the calling line, so
    they give the first frame of user code by file and function. Without any
    of these, the enclosing operator chain (``## forward ## > aten::item``).
    """

    def __init__(self, table: EventTable, tree: OperatorTree, marks: LineMarks | None, cell_source: str) -> None:
        self.table, self.tree, self.marks = table, tree, marks
        self.cell_lines = cell_source.splitlines()
        # Python frames with their nesting, so the frames around a sync are found by a
        # binary search and a climb, not a scan of every frame.
        self.py = np.flatnonzero(table.kind == Kind.PYTHON_FUNCTION)
        self.py_thread = table.thread[self.py]
        self.py_start = table["ts"][self.py]
        self.py_end = self.py_start + table["dur"][self.py]
        self.py_parent = parent_index(self.py_start, self.py_end, self.py_thread)
        self.py_order = np.lexsort((self.py_start, self.py_thread))
        # Judged once per distinct name: a trace with stacks repeats its frames.
        self.py_user = np.array([user_frame(n) is not None for n in table.names], dtype=bool)[table.name_code[self.py]]

    def where(self, events: np.ndarray, positions: np.ndarray) -> list[str]:
        """For each sync (its event, and the position in ``tree.index`` of the innermost
        operator around it, or -1), where it happened, in words."""
        t, tree = self.table, self.tree
        ts = t["ts"][events]
        out = np.full(len(events), "", dtype=object)
        if self.marks is not None:
            line = line_at(self.marks, ts, t.meta.base_time_ns)
            for i in np.flatnonzero((line != NOT_IN_CELL) & (line > 0) & (line <= len(self.cell_lines))):
                out[i] = f"cell line {line[i]}: {self.cell_lines[line[i] - 1].strip()}"
        if t.call_stack is not None:
            # The innermost operator around each sync that has a call stack; its first user frame.
            todo = np.flatnonzero(out == "")
            stacks = t.call_stack
            with_stack = climb(tree.parent, positions[todo],
                               lambda _, nodes: ~stacks[tree.index[nodes]].astype(bool))[0]
            for i, pos in zip(todo[with_stack >= 0], with_stack[with_stack >= 0]):
                out[i] = next((m.group(0) for m in map(user_frame, str(stacks[tree.index[pos]]).split(";"))
                               if m is not None), "")
        todo = np.flatnonzero(out == "")
        for i, frame in zip(todo, self._user_frames(t.thread[events[todo]], ts[todo])):
            m = None if frame < 0 else user_frame(t.names[t.name_code[self.py[frame]]])
            out[i] = "" if m is None else f"{m['file']}, in {m['func']}"
        for i in np.flatnonzero(out == ""):
            out[i] = self._chain(int(positions[i]), int(events[i]))
        return out.tolist()

    def _user_frames(self, thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """The innermost Python frame of user code running on each ``thread`` at ``ts``, or -1."""
        around = innermost_around(self.py_start, self.py_end, self.py_thread, self.py_parent, self.py_order, thread, ts)
        user = self.py_user
        return climb(self.py_parent, around, lambda _, frames: ~user[frames])[0]

    def _chain(self, pos: int, ev: int) -> str:
        """Up to four operators from the outermost around the sync to the innermost."""
        t, tree = self.table, self.tree
        chain: list[str] = []
        p = pos
        while p >= 0 and len(chain) < 4:
            chain.append(str(t.names[t.name_code[tree.index[p]]]))
            p = int(tree.parent[p])
        if not chain:
            chain.append(str(t.names[t.name_code[ev]]))
        return " > ".join(reversed(chain))
