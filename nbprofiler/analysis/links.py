"""How events point at one another: ids the profiler records on both ends of a link.

A device activity carries the ``correlation`` id of the runtime call that
launched it (``cudaLaunchKernel``, ``cudaMemcpyAsync``...), and the ``External
id`` of the innermost operator around that call. Following either link is a
lookup of ids in a sorted key array, done here once for every analysis.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..trace.table import DEVICE_WORK_KINDS, MISSING, EventTable, Kind
from .event_kinds import of_kind

# Per trace, the launching runtime call of every event (see ``launching_runtime``): the
# breakdown, the idle time, the operators and the timeline all ask, found once.
_launchers: "weakref.WeakKeyDictionary[EventTable, np.ndarray]" = weakref.WeakKeyDictionary()


def lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``values`` at the position of each ``query`` in ``keys``, or -1.

    The first match in ``keys`` order wins when several share a key (the profiler
    records one launch per correlation id; a repeat is a trace quirk), and
    ``MISSING`` matches nothing on either side.
    """
    valid = keys != MISSING
    keys, values = keys[valid], values[valid]
    out = np.full(len(query), -1, dtype=np.int64)
    if len(keys) == 0:
        return out
    order = np.argsort(keys, kind="stable")
    sk, sv = keys[order], values[order]
    pos = np.minimum(np.searchsorted(sk, query), len(sk) - 1)
    found = (sk[pos] == query) & (query != MISSING)
    out[found] = sv[pos[found]]
    return out


def launching_runtime(table: EventTable, events: np.ndarray) -> np.ndarray:
    """For each event index in ``events``, the index of the runtime call with the same
    correlation id (the call that launched it), or -1. Only device activities (kernels,
    copies, memsets) are launched: any other event gets -1."""
    if table not in _launchers:
        runtime = np.flatnonzero(table.kind == Kind.RUNTIME)
        device = np.flatnonzero(of_kind(table.kind, DEVICE_WORK_KINDS))
        launcher = np.full(len(table), -1, dtype=np.int64)
        launcher[device] = lookup(table["correlation"][runtime], runtime, table["correlation"][device])
        launcher.flags.writeable = False
        _launchers[table] = launcher
    return _launchers[table][events]
