"""Ctrl-C while a profiled cell runs: held back where acting on it at once would lose state.

``ctrl_c_held`` holds it for a short block (the profiler changing phase, the hooks going
in or out, a step being counted) and delivers it once the block ends. ``CtrlCAfterTheCell``
holds it from the moment the cell's own code ends until its run is kept: users press
Ctrl-C twice, and the second press, landing as the first unwinds the cell, must not cut
the finish (a profiler left running, hooks installed, no report) or the store short.
"""
from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal's C half, which typeshed does not describe
import signal
import sys
import threading
from types import CodeType, FrameType


_SIGINT = int(signal.SIGINT)


class _HeldCtrlC:
    """The SIGINT handler while Ctrl-C is held: it notes the signal for later delivery."""

    def __init__(self) -> None:
        self.pending: tuple[int, FrameType | None] | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.pending = (signum, frame)


def ctrl_c_held() -> "_CtrlCHold":
    """Hold Ctrl-C back for the duration of a ``with`` block; deliver it (KeyboardInterrupt) once
    the block ends. The block gets the holder (whose ``pending`` says a Ctrl-C is waiting), or
    None where this block does not hold.

    A KeyboardInterrupt half-way through torch's profiler changing state leaves kineto in
    a state that segfaults when stopped or leaves it running; half-way through installing
    or removing the hooks, or counting a step, it leaves hooks behind or a step half
    recorded. These blocks are short, so the user waits no longer than for a step.
    Only the main thread receives SIGINT (and may set its handler); elsewhere, and when
    Python's handler is not in force (ignored, default), there is nothing to hold. Nested
    blocks hold once: the outermost delivers.
    """
    return _CtrlCHold()


class _CtrlCHold:
    """``ctrl_c_held``'s block. Under a profiled cell's own handler (``CtrlCAfterTheCell``, in force
    while the cell runs) it holds by a flag of that handler; elsewhere it swaps the handler. A step
    holds Ctrl-C once, and the swap's two system calls, with a generator-based context manager and
    ``signal``'s enum wrappers, cost it 5 to 20 µs (on a sandboxed 2-core test machine)."""

    __slots__ = ("_held", "_previous", "_flagged")

    def __enter__(self) -> _HeldCtrlC | None:
        self._held: _HeldCtrlC | None = None
        self._flagged: CtrlCAfterTheCell | None = None
        if threading.current_thread() is not threading.main_thread():
            return None
        previous = self._previous = _signal.getsignal(_SIGINT)
        if isinstance(previous, CtrlCAfterTheCell):
            if previous.holding is not None:  # nested: the outermost block delivers
                return None
            held = self._held = previous.holding = previous.note
            held.pending = None
            self._flagged = previous
            return held
        if not callable(previous) or isinstance(previous, _HeldCtrlC):
            return None
        held = self._held = _HeldCtrlC()
        _signal.signal(_SIGINT, held)
        return held

    def __exit__(self, *exc: object) -> None:
        held = self._held
        if held is None:
            return
        if self._flagged is not None:
            self._flagged.holding = None
        else:
            _signal.signal(_SIGINT, self._previous)
        if held.pending is not None:
            self._previous(*held.pending)


class CtrlCAfterTheCell:
    """The SIGINT handler from a profiled cell's start until its run is kept.

    Where a frame of a ``passing`` function is on the stack (the one that runs the cell;
    those that draw the report), Ctrl-C raises KeyboardInterrupt at once, as Python's own
    handler does. Elsewhere below ``owner`` (the magic's frame), that is from the moment the
    cell's code has ended, by returning or raising, it is held: ``pending`` says so, and
    the owner raises it once the run is finished and kept. The stack tells the two apart,
    not a flag set when the cell ends: a flag could only be set by a line after the cell,
    and a Ctrl-C could land before that line. For the same reason the handler goes in
    before the cell starts, from inside the passing function that runs it.

    Only Python's own handler is stood in for, in the main thread (the only one that gets
    SIGINT); under another handler the cell runs as it would without this one.
    """

    def __init__(self, owner: FrameType, passing: frozenset[CodeType]) -> None:
        self.pending = False
        self.holding: _HeldCtrlC | None = None  # a ``ctrl_c_held`` block's, which notes a Ctrl-C for its end
        self.note = _HeldCtrlC()  # what each block holds with, made once: a step holds Ctrl-C once
        self._owner = owner
        self._passing = passing
        self._closed = False

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self)

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.holding is not None:
            self.holding(signum, frame)
            return
        if self._holds(frame if frame is not None else sys._getframe(1)):
            self.pending = True
        else:
            signal.default_int_handler(signum, frame)

    def _holds(self, frame: FrameType | None) -> bool:
        """Whether Ctrl-C at ``frame`` waits: after the cell, outside the drawing, before ``close``.
        Outside the owner altogether (an awaiting cell suspended, the event loop running) it
        does not: that is the user's code or the shell's."""
        if self._closed:  # a handler that saved this one, and calls it, finds Python's again
            return False
        while frame is not None:
            if frame.f_code in self._passing:
                return False
            if frame is self._owner:
                return True
            frame = frame.f_back
        return False

    def close(self) -> bool:
        """Put Python's own handler back, if this one is still in force (a cell may have set its
        own, which stays); whether a Ctrl-C was held, for the owner to raise."""
        self._closed = True
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is self:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return self.pending
