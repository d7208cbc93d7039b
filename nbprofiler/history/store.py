"""Opening the history file and running one transaction on it, safely from several kernels.

Several kernels (and scripts) may keep runs in one file at once. SQLite's WAL journal
lets readers go on while one writes; a writer waits for another up to the busy timeout,
and a "database is locked" or "busy" that still gets through (WAL being switched on,
a checkpoint) is retried, with a growing, jittered pause, as a whole transaction. Each
call opens its own connection: a kernel holds no file handle between runs, and a
forked DataLoader worker never shares one.

A file that cannot be used (not a database, damaged, written by a newer nbprofiler,
not writable) is a ``HistoryError`` with a one-line reason. The run being kept never
depends on it: ``keep`` turns it into one line on stderr, once per file per process.
"""
from __future__ import annotations

import random
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import NbprofilerError
from .location import ENV_VAR, history_path
from .schema import NewerSchema, upgrade

T = TypeVar("T")

BUSY_TIMEOUT_S = 10.0  # how long SQLite itself waits for another writer
ATTEMPTS = 8  # whole-transaction retries beyond that (locks SQLite's wait does not cover)
_told: set[str] = set()  # the files whose problem this process has already printed


class HistoryError(NbprofilerError):
    """The history file cannot be used; the message is one line that says why and what to do."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"the run history {path} {problem}; set {ENV_VAR} to use another file")


def transaction(work: Callable[[sqlite3.Connection], T], *, write: bool, path: Path | None = None) -> T:
    """``work(conn)`` in one transaction on the history (migrated first), retried whole while
    the file is locked; a ``HistoryError`` when the file cannot be used."""
    path = history_path() if path is None else path
    pause = 0.05
    for attempt in range(ATTEMPTS):
        try:
            return _attempt(path, work, write)
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or attempt == ATTEMPTS - 1:
                raise HistoryError(path, _problem(exc)) from None
        except NewerSchema as exc:
            raise HistoryError(path, str(exc)) from None
        except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
            raise HistoryError(path, _problem(exc)) from None
        except OSError as exc:  # the folder cannot be made
            raise HistoryError(path, f"cannot be created ({exc.strerror or exc})") from None
        time.sleep(pause * (1 + random.random()))
        pause = min(pause * 2, 1.0)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _attempt(path: Path, work: Callable[[sqlite3.Connection], T], write: bool) -> T:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)  # autocommit: we BEGIN ourselves
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # kept in the file: only the first open switches it
        upgrade(conn)
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            result = work(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return result
    finally:
        conn.close()


def _locked(exc: sqlite3.Error) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _problem(exc: sqlite3.Error) -> str:
    """What is wrong with the file, in words a user can act on."""
    message = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and not _locked(exc):
        return f"cannot be used ({message})"
    if _locked(exc):
        return f"stayed locked by another process ({message})"
    return f"is not a readable database ({message})"


def tell_once(error: HistoryError) -> None:
    """One line on stderr for ``error``'s file, the first time this process meets it."""
    key = str(error.path)
    if key in _told:
        return
    _told.add(key)
    print(f"nbprofiler: run history not kept: {error.path} {error.problem}; profiling is unaffected "
          f"(set {ENV_VAR} to use another file)", file=sys.stderr)
