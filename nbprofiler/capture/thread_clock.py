"""The time a thread computed, and the time it waited for a core, while it fetched a batch.

Whether loading computes or sleeps on I/O was told from the fetching thread's CPU
time over the fetch's wall time. On a busy machine a thread that computes the whole
time is runnable but not running for much of it: its CPU time over wall time drops,
and pure CPU work (regex, hashing) read as waiting on I/O. Linux counts the time a
thread spent runnable and waiting for a core (``/proc/thread-self/schedstat``, its
second field, in ns); the time it was blocked is the wall time less its CPU time
and that wait, so the share of the fetch it computed can leave the wait for a core
out. Where the kernel does not say (another OS, schedstat off), the queued time is
unknown (None) and the share falls back to CPU over wall time.
"""
from __future__ import annotations

import os
import threading
import time

_SCHEDSTAT = "/proc/thread-self/schedstat"


class ThreadClock:
    """Reads the CPU time and the run-queue wait of the thread that created it.

    The file is opened once, in that thread (``/proc/thread-self`` names the opener),
    and read with ``pread``; another thread reads only its CPU time."""

    def __init__(self) -> None:
        self._thread = threading.get_ident()
        self._fd: int | None = None
        try:
            self._fd = fd = os.open(_SCHEDSTAT, os.O_RDONLY)
            _queued_ns(fd)
        except (OSError, ValueError, IndexError):  # no such file, or not the layout it has on Linux
            self.close()

    def read(self) -> tuple[float, float | None]:
        """The calling thread's CPU seconds, and its seconds waiting for a core (None: unknown)."""
        cpu = time.thread_time()
        if self._fd is None or threading.get_ident() != self._thread:
            return cpu, None
        return cpu, _queued_ns(self._fd) / 1e9

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _queued_ns(fd: int) -> int:
    """schedstat's second field: nanoseconds the thread has spent runnable, waiting for a core."""
    return int(os.pread(fd, 128, 0).split()[1])
