"""``--every N``: each finished profiler cycle made into one row of ``report.cycles``, off the loop.

A run that profiles a few steps every N steps until its cell ends would hold one trace per
cycle, and torch clears its events after each: so each cycle's trace is handed here as it
is exported, with a copy of its steps from the sampler, to a background thread, which
compresses it at once (zlib lets the loop run meanwhile: a small CNN's 314 KB trace becomes
28 KB in 1 ms) and reduces it to one summary row. The trace is dropped once reduced (the run
keeps only the latest, for the report's other tables).

A summary is Python that holds the GIL (about 10 ms for that CNN's cycle, 16 ms beside a
running loop), so every one made while the loop runs is taken from the loop: at 200 steps
of 1.3 ms, 4% of it. The thread therefore spends on summaries at most ``SUMMARY_SHARE`` of
the run's time so far while the loop runs; a cycle beyond that waits, compressed, and is
reduced when the cell ends, or at once when the waiting traces pass ``WAITING_BYTES``. So a
2,000-step cell reduces most of its cycles as it finishes (10 cycles: about 0.1 s), and memory
grows with the number of cycles times one row, plus at most ``WAITING_BYTES`` of traces.

What a row holds is decided by the ``summarize`` callable the run is given (the Report's
side, ``report/cycle_summary.py``): capture cannot build reports. A cycle whose summary
fails keeps its step range and the failure in ``problem``, so one bad cycle never costs
the others, and nothing raised here reaches the user's loop.
"""
from __future__ import annotations

import os
import queue
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..machine import CpuUse, cpu_use, other_cores
from ..options import ProfileOptions
from ..trace.table import DeviceInfo
from .sampler import SampledWindow

_DONE = None  # put on the queue when the run finishes: the worker stops after the cycles before it
# While the loop runs, the most of the run's time so far the thread spends on summaries.
SUMMARY_SHARE = 0.01
# Compressed traces waiting for their summary beyond which the thread reduces them whatever its share
# (about 600 cycles of a small CNN's): memory stays bounded however long the run.
WAITING_BYTES = 16 << 20


@dataclass(frozen=True)
class FinishedCycle:
    """One profiler cycle as it ended: its number (1 for the first), the trace torch exported for
    it, the sampler's copy of its steps (from the cycle's first step to its last active one), the
    device the run ran on, and the file torch exported the trace to, which the thread removes."""

    number: int
    trace: bytes
    steps: SampledWindow
    device: DeviceInfo
    exported: str | None = None


# A cycle's row from its trace, its steps (as ``report.steps`` has them), the run's options and device.
Summarize = Callable[[bytes, pd.DataFrame, ProfileOptions, DeviceInfo], dict[str, Any]]


class CycleReducer:
    """Reduces finished cycles to rows on one background thread, in the order they finished."""

    def __init__(self, summarize: Summarize) -> None:
        self._summarize = summarize
        self._cpu: CpuUse | None = None  # the machine's CPU use when the latest cycle was taken up
        self._started = time.perf_counter()  # when the run started: the summaries' share is of the time since
        self._queue: queue.SimpleQueue[FinishedCycle | None] = queue.SimpleQueue()
        self._waiting: deque[_Waiting] = deque()  # cycles taken up and compressed, not yet reduced
        self._waiting_bytes = 0
        self._spent_s = 0.0  # the thread's CPU time in summaries so far
        self._last_s = 0.0  # the latest summary's: the next is allowed once the share has room for as much
        self._rows: list[dict[str, Any]] = []
        self._held: FinishedCycle | None = None  # the latest cycle, until the loop's next step ends
        self._thread: threading.Thread | None = None
        self._stopped = False  # no cycle comes after those queued: the thread ends once it has reduced them

    def load_from(self, cpu: CpuUse | None) -> None:
        """The run starts: the machine's CPU use now, from which the first cycle's load is measured."""
        self._cpu = cpu
        self._started = time.perf_counter()

    def add(self, cycle: FinishedCycle) -> None:
        """Hold ``cycle`` until the loop's next step ends (``step_ended``). The thread's first work on
        it (reading the machine's load, compressing the trace) competes with the loop, and the step
        that ended the cycle is a profiled one: its time should be the profiler's own."""
        self._release()  # one still held (no step ended between two cycles) goes first
        self._held = cycle

    def step_ended(self) -> None:
        """The loop ended a step: a cycle held goes to the thread."""
        if self._held is not None:
            self._release()

    def _release(self) -> None:
        """Queue the cycle held; the thread starts with the first one, so a run without cycles starts none."""
        cycle, self._held = self._held, None
        if cycle is None:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="nbprofiler-cycles", daemon=True)
            self._thread.start()
        self._queue.put(cycle)

    def _work(self) -> None:
        finishing = False
        while not finishing or self._waiting:
            if not finishing:
                try:
                    cycle = self._queue.get(timeout=self._until_allowed())
                    if cycle is _DONE:
                        finishing = True
                    else:
                        self._take(cycle)
                except queue.Empty:  # no cycle came, and the share has room for the next summary
                    pass
            while self._waiting and (finishing or self._waiting_bytes > WAITING_BYTES or self._until_allowed() == 0):
                self._reduce(self._waiting.popleft())

    def _until_allowed(self) -> float | None:
        """Seconds until the share of the run's time allows the next summary: 0 now, None while none waits."""
        if not self._waiting:
            return None
        return max((self._spent_s + self._last_s) / SUMMARY_SHARE - (time.perf_counter() - self._started), 0.0)

    def _take(self, cycle: FinishedCycle) -> None:
        """What must be read as the cycle ends, and its trace compressed to wait for its summary.

        Here, not in the loop: removing a file just written (3 ms on a test machine's disk) and
        reading the machine's CPU use (1.4 ms, a scan of /proc for the workers) would lengthen
        the step that ended the cycle. The thread takes each cycle up as it ends, unless a
        summary is still running, so the load is over the cycle give or take one summary."""
        if cycle.exported is not None:
            _remove(cycle.exported)
        now = cpu_use()  # how busy other programs kept the machine: a drift is the run's own only without
        load, self._cpu = other_cores(self._cpu, now), now
        packed = zlib.compress(cycle.trace, 1)
        self._waiting.append(_Waiting(cycle.number, packed, cycle.steps, cycle.device, load))
        self._waiting_bytes += len(packed)

    def _reduce(self, cycle: "_Waiting") -> None:
        self._waiting_bytes -= len(cycle.packed)
        began = time.thread_time()
        try:
            row = self._summarize(zlib.decompress(cycle.packed), cycle.steps.frame(), cycle.steps.options,
                                  cycle.device)
        except Exception as exc:  # noqa: BLE001 - one cycle's failure is its row's, never the run's
            row = {"problem": f"{type(exc).__name__}: {exc}"}
        self._last_s = time.thread_time() - began
        self._spent_s += self._last_s
        self._rows.append({"cycle": cycle.number, "first_step": cycle.steps.first,
                           "last_step": cycle.steps.first + len(cycle.steps.columns["host_ms"]) - 1,
                           "other_cores": cycle.other_cores, **row})

    def stop(self) -> None:
        """No cycle comes after those queued: the run is over, finished or abandoned (an interrupted
        cell's run, cleaned up by the next one, never asks for its ``table``). Without waiting: the
        thread reduces what waits, and ends."""
        self._release()
        if self._thread is not None and not self._stopped:
            self._queue.put(_DONE)
            self._stopped = True

    def table(self) -> pd.DataFrame | None:
        """Every queued cycle's row, once the thread has reduced them all; None when no cycle
        finished. Asked as the run finishes, after ``stop``; again (a report built once more after
        an interrupted build), the same rows."""
        self.stop()
        if self._thread is None:
            return None
        self._thread.join()
        return pd.DataFrame(self._rows)


@dataclass(frozen=True)
class _Waiting:
    """A cycle taken up, its trace compressed, waiting for its summary."""

    number: int
    packed: bytes
    steps: SampledWindow
    device: DeviceInfo
    other_cores: float | None  # cores other programs kept busy over the cycle (``machine.other_cores``)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # already gone: nothing to clean up
        pass
