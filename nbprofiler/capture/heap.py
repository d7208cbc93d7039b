"""The C heap of this process, as glibc's allocator sees it.

After a profiled run, the torch profiler's event buffers and the trace's parse are
freed, but glibc keeps much of what they took as free heap it does not hand back
to the system, so the kernel's RSS reads tens of MiB above what it holds, by an
amount that depends on where the last large blocks lay. Reading the heap tells
held memory from kept free memory.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    """The C library this process runs on, when it is glibc (it has ``malloc_trim``); else None."""
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols: no search for the library's file
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError, TypeError):  # not glibc, or no dlopen(NULL) (Windows)
        return None
    mallinfo2 = getattr(libc, "mallinfo2", None)  # glibc 2.33 and later
    if mallinfo2 is not None:
        mallinfo2.restype = _MallInfo2
    return libc


def heap_usage() -> tuple[int, int] | None:
    """(bytes of C heap in use, bytes free in it, resident or handed back); None off glibc 2.33+."""
    libc = _libc()
    if libc is None or getattr(libc, "mallinfo2", None) is None:
        return None
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd), int(info.fordblks)


def release_free_heap() -> None:
    """Hand the free pages of the C heap back to the system (glibc's ``malloc_trim``).

    A profiled run frees the profiler's buffers and the trace's parse; glibc keeps the
    space as free heap, pinned below blocks that live on (the new Report), so without
    this the kernel's RSS climbs over re-runs of a cell until it reaches some tens of MiB
    above what plain runs hold, though what the process holds stays the same.
    """
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
