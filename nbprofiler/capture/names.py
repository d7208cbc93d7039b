"""Names torch's JSON export loses, put back from the profiler's own events.

torch writes ``"unknown"`` for every range name with a non-ASCII or control
character (``record_function("résumé ✓")``), while its in-memory events keep the
real name. An exported event's ``ts`` is its start, in µs after the trace's
``baseTimeNanoseconds``, exactly as the in-memory event's ``start_ns``, so a live
run can restore the names before anything reads the trace. A trace file has no
such source, and its report says so instead (``report.load``).
"""
from __future__ import annotations

import json
import re
from typing import Any

_UNKNOWN = re.compile(rb'"name":\s*"unknown"')
# One event's "unknown" name and its "ts", never reaching into the next event (which starts with "ph").
_NAMED_EVENT = re.compile(rb'"name":\s*"unknown"(?P<rest>(?:(?!"ph":).)*?"ts":\s*(?P<ts>[-+\d.eE]+))', re.S)
_BASE = re.compile(rb'"baseTimeNanoseconds":\s*(\d+)')


def restore_names(raw: bytes, prof: Any) -> bytes:
    """``raw`` with each ``"unknown"`` event name replaced by the real one, JSON-escaped.

    Costs nothing on the usual trace (one byte search); the profiler's events are
    read only when a name was lost. An event that cannot be matched, or any
    surprise in torch's internals, leaves the name "unknown", as in a trace file.
    """
    if _UNKNOWN.search(raw) is None:
        return raw
    base = _BASE.search(raw)
    offset = int(base[1]) if base else 0
    try:
        lost = {event.start_ns() - offset: event.name() for event in prof.profiler.kineto_results.events()
                if not (event.name().isascii() and event.name().isprintable())}
    except Exception:  # noqa: BLE001 - internals of torch: without them the names stay lost
        return raw

    def real(match: re.Match[bytes]) -> bytes:
        at = round(float(match["ts"]) * 1000)  # µs with 3 decimals, near 1e15: a float is within 1 ns
        name = next((lost[t] for t in (at, at - 1, at + 1) if t in lost), None)
        return match[0] if name is None else b'"name": ' + json.dumps(name).encode("ascii") + match["rest"]

    return _NAMED_EVENT.sub(real, raw)
