"""``read_only_table``: a Report's table, computed once on first access and handed out as a copy.

Shared by the Report, the Comparison and a rank's summary, which hand out their tables alike.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import pandas as pd

def _copy_on_write() -> bool:
    """Whether pandas copies a frame's data before a shallow copy of it is written (pandas 3, or
    2.x with the option on): then handing out a shallow copy costs nothing and protects the data."""
    return int(pd.__version__.split(".")[0]) >= 3 or pd.get_option("mode.copy_on_write") is True


def table_lock(cache: dict[str, Any], slot: str) -> threading.RLock:
    """The lock of one table of one report, kept in the report's own cache: a report's table is
    built once, and no report ever waits on another's. ``dict.setdefault`` is atomic (one call
    into C, under the GIL, or the dict's own lock in a free-threaded build), so two threads asking
    at once get the same lock, with no lock shared between reports to make it. Re-entrant: a
    table's build may ask for another table, never for itself, so one thread never waits on itself."""
    locks: dict[str, threading.RLock] = cache.setdefault("_table_locks", {})
    return locks.setdefault(slot, threading.RLock())


class read_only_table:  # noqa: N801 - used as a decorator, like cached_property
    """A table computed once, on first access, and handed out as a copy of its own each time.

    ``report.operators.drop(columns=..., inplace=True)`` or a ``.loc`` assignment changes
    the user's copy, never the Report: every renderer, rule and later access sees the
    table as the analysis made it. Under pandas' copy-on-write the copy is shallow (no data
    is copied until someone writes); without it, a deep copy.

    A run reloaded from the history has no trace to compute from: the tables it kept are in
    ``report.stored`` and served from there instead.

    Each table is computed once even when two threads ask at once (a large report's bundle
    builds some tables on a second thread, ``render.background``): the second waits for the
    first's result on a lock of that report and table.
    """

    def __init__(self, build: Callable[[Any], Any]) -> None:
        self.build = build
        self.__doc__ = build.__doc__
        self.slot = ""
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_table_{name}"
        self.name = name

    def __get__(self, report: Any, owner: type | None = None) -> Any:
        if report is None:
            return self
        cache = report.__dict__  # a frozen dataclass: the cache bypasses __setattr__, as cached_property does
        if self.slot not in cache:
            with table_lock(cache, self.slot):
                if self.slot not in cache:  # not made by another thread meanwhile
                    stored = getattr(report, "stored", None) or {}  # a Comparison keeps none
                    cache[self.slot] = stored[self.name] if self.name in stored else self.build(report)
        return handed_out(cache[self.slot])


def handed_out(value: Any) -> Any:
    """A table as handed to the user: a copy of its own (see ``read_only_table``)."""
    if isinstance(value, pd.DataFrame):
        return value.copy(deep=not _copy_on_write())
    return dict(value)
