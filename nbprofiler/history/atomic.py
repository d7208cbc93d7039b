"""One transaction on an open connection: committed whole, or rolled back with the error that
stopped it.

SQLite rolls a transaction back by itself on some errors (a full disk, an I/O error): a
``ROLLBACK`` after one fails with "cannot rollback - no transaction is active", which, raised
in its place, would hide why the transaction failed. So the rollback here is only for a
transaction still open, and the error raised is always the first one.
"""
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator


@contextlib.contextmanager
def atomic(conn: sqlite3.Connection, begin: str) -> Iterator[None]:
    """``begin`` (``BEGIN``, ``BEGIN IMMEDIATE``) on ``conn``, in autocommit mode, then the
    ``with`` block, then ``COMMIT``; on any error, the transaction is undone and the error raised."""
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # closing the connection undoes what a rollback could not
                conn.execute("ROLLBACK")
        raise
