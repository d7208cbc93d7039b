"""The per-step sampler: wall time, DataLoader wait, batches and memory for every step.

It runs on all steps, not only the profiled ones, so the report can show how a
long cell behaved from its first step to its last. Each step costs a few
fixed-size numbers (``array('d')``), so 2,000 steps take well under 1 MB.

On CUDA, step time also comes from a pair of CUDA events per step: one recorded
when the step starts (after the profiler's own work at the boundary, so a trace
export is not billed to the step) and one when it ends. A finished pair is read
without waiting (``Event.query``) at a later boundary and then dropped, so no
step pays for a device-wide synchronize and the events held stay few; the
report synchronizes once for the last ones.
"""
from __future__ import annotations

import functools
import math
import os
import time
from array import array
from collections import deque
from collections.abc import Callable

import pandas as pd
import psutil
import torch

from ..options import ProfileOptions


class StepSampler:
    """Collects one row per completed step."""

    def __init__(self, options: ProfileOptions, cuda: bool) -> None:
        self.options = options
        self.cuda = cuda
        self.host_ms = array("d")
        self.dataloader_ms = array("d")
        self.batches = array("q")  # DataLoader batches the step consumed
        self.samples = array("d")  # samples in them; NaN when a batch's size could not be told
        self.mem_a = array("d")  # CUDA allocated, or RSS on CPU
        self.mem_peak = array("d")
        self.mem_reserved = array("d")
        self.device_ms = array("d")  # NaN until the step's events have completed
        self._start_event: torch.cuda.Event | None = None
        self._pending: deque[tuple[int, torch.cuda.Event, torch.cuda.Event]] = deque()
        self._rss = _rss_reader()
        self._wait_s = 0.0
        self._batches = 0
        self._samples = 0.0
        self._given: float | None = None  # samples the user gave nbprofiler.step() for this step
        self._t0 = 0.0

    def start(self) -> None:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        self.restart_clock()

    def add_fetch(self, seconds: float, delivered: bool, samples: int | None) -> None:
        """A DataLoader fetch of the current step: its wait, and whether it delivered a batch, with
        the samples in it (None: unknown). A step may consume several (gradient accumulation): each counts."""
        self._wait_s += seconds
        if delivered:
            self._batches += 1
            self._samples += math.nan if samples is None else samples

    def set_samples(self, samples: int) -> None:
        """The samples the current step processed, as the user counted them (``nbprofiler.step(samples=)``):
        they replace the count of its DataLoader batches."""
        self._given = float(samples)

    def end_step(self) -> None:
        now = time.perf_counter()
        self.host_ms.append((now - self._t0) * 1e3)
        self.dataloader_ms.append(self._wait_s * 1e3)
        self.batches.append(self._batches)
        self.samples.append(self._samples if self._given is None else self._given)
        self._wait_s, self._batches, self._samples, self._given = 0.0, 0, 0.0, None
        if self.cuda:
            self.device_ms.append(math.nan)
            if self._start_event is not None:
                self._pending.append((self.count - 1, self._start_event, self._record_event()))
            self._read_finished(wait=False)
            allocated, peak, reserved = cuda_memory()
            self.mem_a.append(allocated)
            self.mem_peak.append(peak)
            self.mem_reserved.append(reserved)
            torch.cuda.reset_peak_memory_stats()
        else:
            self.mem_a.append(float(self._rss()))

    def restart_clock(self) -> None:
        """Start timing the next step. The run calls it once its own work at a boundary
        (trace export, the status line) is done, so that work is not billed to the user's step."""
        self._t0 = time.perf_counter()
        if self.cuda:
            self._start_event = self._record_event()

    def _read_finished(self, wait: bool) -> None:
        """Device time of the steps whose end event has completed (all of them when ``wait``)."""
        if wait and self._pending:
            torch.cuda.synchronize()
        while self._pending and (wait or self._pending[0][2].query()):
            step, begin, end = self._pending.popleft()
            self.device_ms[step] = begin.elapsed_time(end)

    @property
    def count(self) -> int:
        return len(self.host_ms)

    def nbytes(self) -> int:
        """Memory the per-step columns hold (for the large-run guarantee)."""
        return sum(c.buffer_info()[1] * c.itemsize for c in self._columns()) + 128 * len(self._pending)

    def _record_event(self) -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def _columns(self) -> tuple[array, ...]:
        """The columns that get one value per step (peak, reserved and device time on CUDA only)."""
        cuda_only = (self.mem_peak, self.mem_reserved, self.device_ms) if self.cuda else ()
        return (self.host_ms, self.dataloader_ms, self.batches, self.samples, self.mem_a) + cuda_only

    def _drop_partial_step(self) -> None:
        """Drop a step whose figures were half appended. Ctrl-C is held while a step is
        recorded, but another exception raised from outside (torch's SIGCHLD handler for a
        dead DataLoader worker) can still land between two appends; the report keeps the
        steps recorded whole."""
        columns = self._columns()
        n = min(len(c) for c in columns)
        for c in columns:
            del c[n:]

    def frame(self) -> pd.DataFrame:
        """``report.steps``: one row per completed step. Synchronizes once on CUDA."""
        if self.cuda:
            self._read_finished(wait=True)
        self._drop_partial_step()
        return self.window(0).frame()

    def window(self, first: int) -> "SampledWindow":
        """A copy of the steps from ``first`` to the last completed one, without waiting for the
        device: the steps of a cycle that just ended, to be made into its summary on another
        thread while the loop goes on (a step whose device time is still pending has its host time)."""
        n = min(len(c) for c in self._columns())  # a step half-appended is not complete
        columns = {name: column[first:n] for name, column in zip(self._column_names(), self._columns())}
        return SampledWindow(first, self.options, columns)

    def _column_names(self) -> tuple[str, ...]:
        """The names ``_columns`` are known by in ``report.steps``."""
        cuda_only = ("mem_peak_bytes", "mem_reserved_bytes", "device_ms") if self.cuda else ()
        memory = "mem_allocated_bytes" if self.cuda else "rss_bytes"
        return ("host_ms", "dataloader_ms", "batches", "samples", memory) + cuda_only


class SampledWindow:
    """Steps ``first`` on, as the sampler's columns held them: made into ``report.steps``' rows by ``frame``."""

    def __init__(self, first: int, options: ProfileOptions, columns: dict[str, array]) -> None:
        self.first = first
        self.options = options
        self.columns = columns

    def frame(self) -> pd.DataFrame:
        """The steps as ``report.steps`` has them: a step's wall time is the longer of its host
        time and, on CUDA, its device time."""
        c = self.columns
        n = len(c["host_ms"])
        wall = list(c["host_ms"])
        if "device_ms" in c:
            wall = [h if math.isnan(d) else max(h, d) for h, d in zip(wall, c["device_ms"])]
        steps = range(self.first, self.first + n)
        df = pd.DataFrame(
            {
                "step": steps,
                "phase": [self.options.phase_of(i) for i in steps],
                "wall_ms": wall,
                "dataloader_ms": list(c["dataloader_ms"]),
                "batches": list(c["batches"]),
                "samples": list(c["samples"]),
            }
        )
        for name in ("mem_allocated_bytes", "mem_peak_bytes", "mem_reserved_bytes", "rss_bytes"):
            if name in c:
                df[name] = list(c[name])
        return df


def cuda_memory() -> tuple[float, float, float]:
    """The current device's allocated, peak allocated and reserved bytes, in one read.

    ``torch.cuda.memory_allocated``, ``max_memory_allocated`` and ``memory_reserved`` each
    flatten the allocator's whole statistics in Python (about 160 calls), on every step.
    The nested dict is built in C++ and read here once. It is empty while CUDA is not
    initialized (a cell that has not touched the GPU yet): nothing is allocated then.
    """
    stats = torch.cuda.memory_stats_as_nested_dict()
    if not stats:
        return 0.0, 0.0, 0.0
    allocated, reserved = stats["allocated_bytes"]["all"], stats["reserved_bytes"]["all"]
    return float(allocated["current"]), float(allocated["peak"]), float(reserved["current"])


@functools.lru_cache(maxsize=1)
def _rss_reader() -> Callable[[], int]:
    """A cheap way to read this process's RSS on every step.

    On Linux, one ``pread`` of ``/proc/self/statm`` (a few µs; the file stays
    open, one per process); elsewhere psutil, which costs tens of µs a call.
    """
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        process = psutil.Process()
        return lambda: process.memory_info().rss
    page = os.sysconf("SC_PAGE_SIZE")
    return lambda: int(os.pread(fd, 128, 0).split()[1]) * page
