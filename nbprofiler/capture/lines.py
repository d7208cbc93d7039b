"""Which line of the profiled cell is running when: what the cell-line view needs.

A Chrome trace cannot tell line 3 of a cell from line 7. torch's Python tracer
names each ``python_function`` frame after the line where it first saw the
frame: the ``def`` line for a call made while tracing, and ``(0)`` for an
IPython cell's module frame. So the lines of a cell's top-level code all look
the same in the trace.

``LineRecorder`` fills that gap with a ``sys.settrace`` hook that follows only
frames whose code comes from the cell's file (the cell itself and functions it
defines). Each time the innermost such frame moves to another line, it notes
the wall-clock time in Unix nanoseconds, which is the clock torch converts its
trace timestamps to, and the line. Every other frame is declined at its call
event, so library and model code pay one cheap callback per call and nothing
per line.
"""
from __future__ import annotations

import sys
import time
from array import array
from types import FrameType
from typing import Any, Callable

import numpy as np

from ..records import NOT_IN_CELL, LineMarks


class LineRecorder:
    """Records ``LineMarks`` for the frames of one file while it is started.

    It records nothing when another trace function (a debugger, coverage) is
    already installed, so it never takes over someone else's tracing;
    ``skipped`` says so.
    """

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.skipped = False
        self._times = array("q")
        self._lines = array("i")
        self._stack: list[int] = []  # the current line of each running cell frame, innermost last
        self._running = False

    def start(self) -> None:
        if sys.gettrace() is not None:
            self.skipped = True
            return
        self._running = True
        sys.settrace(self._on_call)

    def stop(self) -> None:
        if self._running:
            sys.settrace(None)
            self._running = False
            self._mark(NOT_IN_CELL)

    def marks(self) -> LineMarks:
        return LineMarks(times_ns=np.frombuffer(self._times, dtype=np.int64).copy(),
                         lines=np.frombuffer(self._lines, dtype=np.int32).copy())

    def _mark(self, line: int) -> None:
        if self._lines and self._lines[-1] == line:
            return
        self._times.append(time.time_ns())
        self._lines.append(line)

    def _on_call(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if frame.f_code.co_filename != self.filename:
            return None
        self._stack.append(frame.f_lineno)
        return self._on_event

    def _on_event(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "line":
            self._stack[-1] = frame.f_lineno
            self._mark(frame.f_lineno)
        elif event == "return":
            # Also fired when the frame unwinds on an exception, and when a generator yields.
            self._stack.pop()
            self._mark(self._stack[-1] if self._stack else NOT_IN_CELL)
        return self._on_event
