"""How events point at one another: ids the profiler records on both ends of a link.

A device activity carries the ``correlation`` id of the runtime call that
launched it (``cudaLaunchKernel``, ``cudaMemcpyAsync``...), and the ``External
id`` of the innermost operator around that call. Following either link is a
lookup of ids in a sorted key array, done here once for every analysis.
"""
from __future__ import annotations

import numpy as np

from ..trace.table import MISSING, EventTable, Kind


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
    correlation id (the call that launched it), or -1."""
    runtime = np.flatnonzero(table.kind == Kind.RUNTIME)
    return lookup(table["correlation"][runtime], runtime, table["correlation"][events])
