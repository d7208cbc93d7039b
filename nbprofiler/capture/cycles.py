"""``--every N``: each finished profiler cycle made into one row of ``report.cycles``, off the loop.

A run that profiles a few steps every N steps until its cell ends would hold one trace per
cycle, and torch clears its events after each: so each cycle's trace is handed here as it
is exported, with a copy of its steps from the sampler, and reduced to one summary row on a
background thread while the loop goes on. The trace is dropped once reduced (the run keeps
only the latest, for the report's other tables), so memory grows with the number of cycles
times one row, not with the run's length.

What a row holds is decided by the ``summarize`` callable the run is given (the Report's
side, ``report/cycle_summary.py``): capture cannot build reports. A cycle whose summary
fails keeps its step range and the failure in ``problem``, so one bad cycle never costs
the others, and nothing raised here reaches the user's loop.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..options import ProfileOptions
from ..trace.table import DeviceInfo
from .sampler import SampledWindow

_DONE = None  # put on the queue when the run finishes: the worker stops after the cycles before it


@dataclass(frozen=True)
class FinishedCycle:
    """One profiler cycle as it ended: its number (1 for the first), the trace torch exported for
    it, the sampler's copy of its steps (from the cycle's first step to its last active one), and
    the device the run ran on."""

    number: int
    trace: bytes
    steps: SampledWindow
    device: DeviceInfo
    other_cores: float | None = None  # cores other programs kept busy over the cycle (``machine.other_cores``)


# A cycle's row from its trace, its steps (as ``report.steps`` has them), the run's options and device.
Summarize = Callable[[bytes, pd.DataFrame, ProfileOptions, DeviceInfo], dict[str, Any]]


class CycleReducer:
    """Reduces finished cycles to rows on one background thread, in the order they finished."""

    def __init__(self, summarize: Summarize) -> None:
        self._summarize = summarize
        self._queue: queue.SimpleQueue[FinishedCycle | None] = queue.SimpleQueue()
        self._rows: list[dict[str, Any]] = []
        self._thread: threading.Thread | None = None
        self._stopped = False  # no cycle comes after those queued: the thread ends once it has reduced them

    def add(self, cycle: FinishedCycle) -> None:
        """Queue ``cycle``; the thread starts with the first one, so a run without cycles starts none."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="nbprofiler-cycles", daemon=True)
            self._thread.start()
        self._queue.put(cycle)

    def _work(self) -> None:
        while (cycle := self._queue.get()) is not _DONE:
            try:
                row = self._summarize(cycle.trace, cycle.steps.frame(), cycle.steps.options, cycle.device)
            except Exception as exc:  # noqa: BLE001 - one cycle's failure is its row's, never the run's
                row = {"problem": f"{type(exc).__name__}: {exc}"}
            self._rows.append({"cycle": cycle.number, "first_step": cycle.steps.first,
                               "last_step": cycle.steps.first + len(cycle.steps.columns["host_ms"]) - 1,
                               "other_cores": cycle.other_cores, **row})

    def stop(self) -> None:
        """No cycle comes after those queued: the run is over, finished or abandoned (an interrupted
        cell's run, cleaned up by the next one, never asks for its ``table``). Without waiting."""
        if self._thread is not None and not self._stopped:
            self._queue.put(_DONE)
            self._stopped = True

    def table(self) -> pd.DataFrame | None:
        """Every queued cycle's row, once the thread has reduced them all; None when no cycle
        finished. Asked as the run finishes, after ``stop``; again (a report built once more after
        an interrupted build), the same rows."""
        if self._thread is None:
            return None
        self.stop()
        self._thread.join()
        return pd.DataFrame(self._rows)
