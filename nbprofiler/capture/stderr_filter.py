"""Keep the profiler's own log lines out of the cell's output.

Kineto prints ``USDT: ... profiler_start`` / ``profiler_stop`` and c10 prints
"Memory block of unknown size was allocated before the profiling started" on
the process's stderr, under every profiled cell; no setting turns them off
once torch is loaded. While a run lasts, file descriptor 2 points at a
temporary file, and a thread forwards every other line to the real stderr a
few times a second. A file, unlike a pipe, never blocks a writer, so C code
that logs while holding the GIL cannot deadlock against the forwarding thread.

A process forked while a run lasts (a DataLoader worker) gets the real stderr
back at once: it has no forwarding thread, and a persistent worker outlives the
run and its temporary file.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from typing import IO

_NOISE = re.compile(
    rb"^(?:USDT|STAGE):\S+ \S+ \d+:\d+ \S+\] (?:profiler_start|profiler_stop|Completed Stage: .*)$"
    rb"|^\[W\d+ [\d:.]+ CPUAllocator\.cpp:\d+\] Memory block of unknown size was allocated before the profiling"
)
_POLL_S = 0.1
_filtering: "StderrFilter | None" = None  # the filter between start and stop, for forked children


def _real_stderr_in_child() -> None:
    global _filtering
    if _filtering is not None and _filtering._saved is not None:
        os.dup2(_filtering._saved, 2)
    _filtering = None  # the child has no forwarding thread to stop


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_real_stderr_in_child)


class StderrFilter:
    """Between ``start`` and ``stop``, C-level stderr minus the profiler's noise."""

    def __init__(self) -> None:
        self._saved: int | None = None
        self._file: IO[bytes] | None = None
        self._offset = 0
        self._pending = b""
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            for stream in (sys.stderr, sys.__stderr__):
                if stream is not None:
                    stream.flush()
            file = tempfile.TemporaryFile()  # none in an unwritable temp dir: then no filtering
        except (OSError, ValueError):
            return
        try:
            saved = os.dup(2)
        except OSError:  # no usable fd 2: nothing to filter
            file.close()
            return
        global _filtering
        self._saved = saved
        self._file = file
        _filtering = self
        os.dup2(file.fileno(), 2)
        self._thread = threading.Thread(target=self._pump, args=(file, saved), name="nbprofiler-stderr", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        global _filtering
        saved, file = self._saved, self._file
        if saved is None:
            return
        assert file is not None  # start sets both or neither
        os.dup2(saved, 2)
        _filtering = None
        self._done.set()
        try:
            if self._thread is not None:
                self._thread.join()
            self._forward(file, saved, final=True)
        finally:  # even when interrupted while joining: no fd or temp file left open
            os.close(saved)
            file.close()
            self._saved = None

    def _pump(self, file: IO[bytes], saved: int) -> None:
        while not self._done.wait(_POLL_S):
            self._forward(file, saved, final=False)

    def _forward(self, file: IO[bytes], saved: int, final: bool) -> None:
        """Copy what was written to ``file`` since the last call, less the noise, to ``saved``, the real stderr."""
        fd = file.fileno()
        data = self._pending
        while chunk := os.pread(fd, 1 << 16, self._offset):
            self._offset += len(chunk)
            data += chunk
        cut = len(data) if final else data.rfind(b"\n") + 1  # hold back a line still being written
        complete, self._pending = data[:cut], data[cut:]
        kept = [line for line in complete.splitlines(keepends=True) if not _NOISE.match(line.rstrip(b"\r\n"))]
        if kept:
            os.write(saved, b"".join(kept))
