"""Memory copies by direction and host memory kind, against what the host link can carry.

The profiler names each copy after its direction and the memory on both ends,
in both trace schemas: ``Memcpy HtoD (Pageable -> Device)``, ``Memcpy DtoH
(Device -> Pinned)``, ``Memcpy DtoD (Device -> Device)``; ROCm writes ``Host``
where CUDA says pageable or pinned. A copy from pageable memory is staged
through a pinned buffer by the driver and blocks the host: those rows are the
evidence for ``pin_memory=True`` advice (``advice.measures.h2d_copies``).

A copy's rate is its bytes over its time (the profiler's own "memory bandwidth
(GB/s)" argument is the same ratio), and a group's is its bytes over its total
time, so a group of small copies shows the latency they pay. Copies that cross
the host link (HtoD, DtoH) are compared with the link's per-direction figure of
the device's data sheet (``device_specs``); copies within the device or the host
have no link figure.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..trace.table import EventTable, Kind
from .device_specs import DeviceSpec

COPY_COLUMNS = ["direction", "host_memory", "copies", "bytes", "time_us", "gb_per_s", "link_gb_per_s", "share_of_link"]
# Directions whose copies cross the host link (CUPTI's names).
_OVER_LINK = ("HtoD", "DtoH")
_NAME = re.compile(r"^Memcpy (?P<direction>\w+)(?: \((?P<src>[^)]*?) -> (?P<dst>[^)]*)\))?")
# Host memory kinds as the trace writes them; anything else ("Host", "Device", "Unknown") says nothing.
_HOST_KINDS = {"pageable": "pageable", "pinned": "pinned"}


def copy_kind(name: str) -> tuple[str, str]:
    """(direction, host memory kind or "") of a memcpy name ("Memcpy HtoD (Pageable -> Device)":
    ("HtoD", "pageable")); ("", "") when it is not one. The one reading of copy names: the copy
    table and the sync points (``analysis.sync``) both use it."""
    m = _NAME.match(name)
    if m is None:
        return "", ""
    direction = m["direction"]
    # The host end: the source of a copy from the host, else its destination.
    host_end = m["src"] if direction.startswith("H") else m["dst"] if direction.endswith("H") else None
    return direction, _HOST_KINDS.get((host_end or "").strip().lower(), "")


def copy_table(table: EventTable, spec: DeviceSpec | None) -> pd.DataFrame:
    """``COPY_COLUMNS``, one row per (direction, host memory kind) present, most bytes first.

    ``bytes`` is NaN when no copy of the group records its size (ROCm traces), and so
    are ``gb_per_s`` and ``share_of_link``; ``link_gb_per_s`` is the host link's
    per-direction figure of ``spec`` for HtoD and DtoH, NaN otherwise or without a spec.
    """
    copies = np.flatnonzero(table.kind == Kind.MEMCPY)
    if len(copies) == 0:
        return pd.DataFrame(columns=COPY_COLUMNS)
    # Names are read once per distinct name, then looked up by each copy's name code.
    codes, where = np.unique(table.name_code[copies], return_inverse=True)
    parsed = [copy_kind(str(table.names[c])) for c in codes]
    frame = pd.DataFrame({
        "direction": np.array([p[0] for p in parsed], dtype=object)[where],
        "host_memory": np.array([p[1] for p in parsed], dtype=object)[where],
        "bytes": table["bytes"][copies],
        "time_us": table["dur"][copies],
    })
    out = frame.groupby(["direction", "host_memory"], sort=False).agg(
        copies=("time_us", "size"), bytes=("bytes", lambda b: b.sum(min_count=1)), time_us=("time_us", "sum"),
    ).reset_index()
    out["copies"] = out["copies"].astype(np.int64)
    out["bytes"] = out["bytes"].astype(np.float64)
    # bytes / µs is MB/s: / 1e3 for GB/s (1e9 B/s, as the profiler and data sheets count).
    out["gb_per_s"] = out["bytes"] / out["time_us"].where(out["time_us"] > 0) / 1e3
    link = np.nan if spec is None else spec.host_link_gb_per_s
    out["link_gb_per_s"] = np.where(out["direction"].isin(_OVER_LINK), link, np.nan)
    out["share_of_link"] = out["gb_per_s"] / out["link_gb_per_s"]
    out = out.sort_values(["bytes", "time_us"], ascending=False, kind="stable", na_position="last")
    return out.reset_index(drop=True)[COPY_COLUMNS]
