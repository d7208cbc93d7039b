"""Opening the history file and running one transaction on it, safely from several kernels.

Several kernels (and scripts) may keep runs in one file at once. SQLite's WAL journal
lets readers go on while one writes; a writer waits for another, and a "database is
locked" or "busy" that still gets through (WAL being switched on, a checkpoint) is
retried, with a growing, jittered pause, as a whole transaction: all of it within
``HISTORY_WAIT_S``. Each call opens its own connection: a kernel holds no file handle
between runs, and a forked DataLoader worker never shares one.

A file that cannot be used (not a database, damaged, written by a newer nbprofiler, not
writable, on a full disk, locked for longer than that) is a ``HistoryError`` with a
one-line reason: the one SQLite gave first, not what a rollback after it said.
"""
from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import NbprofilerError
from .atomic import atomic
from .location import ENV_VAR, history_path
from .schema import NewerSchemaError, upgrade

T = TypeVar("T")

HISTORY_WAIT_S = 1.0
"""The longest one use of the history waits for another process's lock, every attempt together.

Another kernel or script may hold the file's write lock for as long as it likes, and the
profiled cell waits while its run is kept: past this, the run is not kept and its report says
why, rather than the cell hanging on someone else's transaction. Keeping a run takes
milliseconds, so a writer that is only keeping its own run is waited for."""
_FIRST_PAUSE_S = 0.02  # between whole-transaction attempts (for locks the busy wait does not cover), doubled each time


class HistoryError(NbprofilerError):
    """The history file cannot be used; the message is one line that says why and what to do."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem  # follows the file's name: "is not a readable database (...)"
        super().__init__(f"the run history {path} {problem}; set {ENV_VAR} to use another file")


def transaction(work: Callable[[sqlite3.Connection], T], *, write: bool, path: Path | None = None,
                wait_s: float = HISTORY_WAIT_S) -> T:
    """``work(conn)`` in one transaction on the history (migrated first), retried whole while
    the file is locked, for ``wait_s`` in all; a ``HistoryError`` when the file cannot be used."""
    path = history_path() if path is None else path
    deadline = time.monotonic() + wait_s
    pause = _FIRST_PAUSE_S
    while True:
        try:
            return _attempt(path, work, write, deadline)
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or _left(deadline) == 0:
                raise HistoryError(path, _problem(exc)) from None
        except NewerSchemaError as exc:
            raise HistoryError(path, str(exc)) from None
        except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
            raise HistoryError(path, _problem(exc)) from None
        except OSError as exc:  # the folder cannot be made
            raise HistoryError(path, f"cannot be created ({exc.strerror or exc})") from None
        time.sleep(min(pause * (1 + random.random()), _left(deadline)))
        pause *= 2


def _attempt(path: Path, work: Callable[[sqlite3.Connection], T], write: bool, deadline: float) -> T:
    path.parent.mkdir(parents=True, exist_ok=True)
    # SQLite's own busy wait, never past the deadline; autocommit: transactions are begun here
    conn = sqlite3.connect(path, timeout=_left(deadline), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # kept in the file: only the first open switches it
        upgrade(conn)
        conn.execute(f"PRAGMA busy_timeout = {int(_left(deadline) * 1000)}")  # what is left after the upgrade
        with atomic(conn, "BEGIN IMMEDIATE" if write else "BEGIN"):
            return work(conn)
    finally:
        conn.close()


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def _locked(exc: sqlite3.Error) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _problem(exc: sqlite3.Error) -> str:
    """What is wrong with the file, in words a user can act on (SQLite's message for each
    result code is fixed: "database or disk is full" is SQLITE_FULL's)."""
    message = str(exc)
    if "disk is full" in message:
        return f"could not grow, as the history's disk is full ({message})"
    if _locked(exc):
        return f"was locked, as another process held the history's lock for over {HISTORY_WAIT_S:g} s ({message})"
    if isinstance(exc, sqlite3.OperationalError):
        return f"cannot be used ({message})"
    return f"is not a readable database ({message})"
