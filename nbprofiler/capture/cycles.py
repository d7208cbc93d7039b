"""``--every N``: each finished profiler cycle made into one row of ``report.cycles``, off the loop.

A run that profiles a few steps every N steps until its cell ends would hold one trace per
cycle, and torch clears its events after each: so each cycle's trace is handed here as it
is exported, with a copy of its steps from the sampler, to a background thread, which
compresses it at once (zlib lets the loop run meanwhile: a small CNN's 314 KB trace becomes
28 KB in 1 ms) and reduces it to one summary row. The trace is dropped once reduced (the run
keeps only the latest, for the report's other tables).

A summary is Python that holds the GIL: about 10 ms for that CNN's cycle, 16 ms beside a running
loop, all taken from the loop, whose steps it would also disturb (the steps that later cycles
are compared by, for drift). So while the loop runs the thread only takes each cycle up, and
the summaries wait, compressed, for the cell's end (10 cycles: about 0.1 s); only when the
waiting traces pass ``WAITING_BYTES`` is the oldest reduced at once. Memory grows with the
number of cycles times one row, plus at most ``WAITING_BYTES`` of traces, and the cell's end
waits for at most the summaries of that much (about 1.5 s).

What a row holds is decided by the ``summarize`` callable the run is given (the Report's
side, ``report/cycle_summary.py``): capture cannot build reports. A cycle whose summary
fails keeps its step range and the failure in ``problem``, so one bad cycle never costs
the others, and nothing raised here reaches the user's loop.
"""
from __future__ import annotations

import os
import queue
import threading
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
# Compressed traces waiting for their summary beyond which the thread reduces the oldest while the
# loop runs: about 150 cycles of a small CNN's (28 KB each), whose summaries take about 1.5 s at the
# cell's end. Memory, and that wait, stay bounded however long the run.
WAITING_BYTES = 4 << 20


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
        self._queue: queue.SimpleQueue[FinishedCycle | None] = queue.SimpleQueue()
        self._waiting: deque[_Waiting] = deque()  # cycles taken up and compressed, not yet reduced
        self._waiting_bytes = 0
        self._rows: list[dict[str, Any]] = []
        self._held: FinishedCycle | None = None  # the latest cycle, until the loop's next step ends
        self._thread: threading.Thread | None = None
        self._stopped = False  # no cycle comes after those queued: the thread ends once it has reduced them

    def load_from(self, cpu: CpuUse | None) -> None:
        """The run starts: the machine's CPU use now, from which the first cycle's load is measured."""
        self._cpu = cpu

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
                cycle = self._queue.get()
                if cycle is _DONE:
                    finishing = True
                else:
                    self._take(cycle)
            while self._waiting and (finishing or self._waiting_bytes > WAITING_BYTES):
                self._reduce(self._waiting.popleft())

    def _take(self, cycle: FinishedCycle) -> None:
        """What must be read as the cycle ends, and its trace compressed to wait for its summary.

        Here, not in the loop: removing the file just written (0.1 ms on a test machine's disk) and
        reading the machine's CPU use (0.8 ms) would lengthen the step that ended the cycle. The thread
        takes each cycle up as the step after it ends (later only while a summary forced by the
        waiting traces' bound runs), so the load is over the cycle."""
        if cycle.exported is not None:
            _remove(cycle.exported)
        now = cpu_use()  # how busy other programs kept the machine: a drift is the run's own only without
        load, self._cpu = other_cores(self._cpu, now), now
        packed = zlib.compress(cycle.trace, 1)
        self._waiting.append(_Waiting(cycle.number, packed, cycle.steps, cycle.device, load))
        self._waiting_bytes += len(packed)

    def _reduce(self, cycle: "_Waiting") -> None:
        self._waiting_bytes -= len(cycle.packed)
        try:
            row = self._summarize(zlib.decompress(cycle.packed), cycle.steps.frame(), cycle.steps.options,
                                  cycle.device)
        except Exception as exc:  # noqa: BLE001 - one cycle's failure is its row's, never the run's
            row = {"problem": f"{type(exc).__name__}: {exc}"}
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
