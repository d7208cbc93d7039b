"""What nbprofiler does while IPython reads a cell, before the cell runs.

A cell without the magic runs none of nbprofiler's code on its way to running: the input
transformer that lets ``%%torchprofile`` profile an awaiting body is C code up to a line
that holds the magic. A cell with the magic is read by nbprofiler (whether its body awaits
decides how IPython runs it), and a Ctrl-C while it is read is that cell's KeyboardInterrupt:
IPython's ``run_cell`` catches only ``Exception`` there, so one escaping it would leave the
cell silently not run in a kernel.
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output

import nbprofiler
from nbprofiler.notebook import awaiting

PACKAGE = str(Path(nbprofiler.__file__).parent) + os.sep


@pytest.fixture(autouse=True)
def python_ctrl_c_handler():
    """Python's own SIGINT handler, as in a kernel (pytest may run with SIGINT ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_cell_without_the_magic_runs_no_code_of_nbprofiler(shell) -> None:
    """Every function call while a plain cell (a loop, a %magic, an output) is read and run:
    none is nbprofiler's. The same trace sees nbprofiler read a cell with the magic."""
    entered: list[str] = []

    def note(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE):
            entered.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    sys.setprofile(note)
    try:
        with capture_output():
            result = shell.run_cell("total = 0\nfor i in range(3):\n    total += i\n%time total += 1\ntotal\n")
        plain = list(entered)
        awaiting = shell.transform_cell("%%torchprofile -q\nimport asyncio\nawait asyncio.sleep(0)\n")
    finally:
        sys.setprofile(None)
    assert result.success and result.result == 4
    assert plain == []
    assert awaiting.startswith("await get_ipython().run_cell_magic('torchprofile'")
    assert any(name.endswith(":_awaited_if_it_awaits") for name in entered[len(plain):])


class CtrlCWhileReading:
    """A ``sys.setprofile`` hook that presses Ctrl-C (the SIGINT handler in force) at the
    ``at``-th point where Python handles a signal while nbprofiler reads a cell: a
    function's entry, and the return of each call, inside ``_awaited_if_it_awaits``.
    Its own entry is left out: a Ctrl-C handled there, before any line of it, is one
    no code of nbprofiler can catch, as one landing in IPython's own transforms.
    ``at=None`` counts the points."""

    def __init__(self, at: int | None) -> None:
        self.at = at
        self.count = 0
        self.fired = False

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if self.fired or event not in ("call", "return", "c_return"):
            return
        reader = _reader_frame(frame)
        if reader is None or (frame is reader and event != "c_return"):
            return
        self.count += 1
        if self.count == self.at:
            self.fired = True
            handler = signal.getsignal(signal.SIGINT)
            assert callable(handler), handler
            handler(signal.SIGINT, frame)


def _reader_frame(frame: Any) -> Any:
    while frame is not None and frame.f_code is not awaiting._awaited_if_it_awaits.__code__:
        frame = frame.f_back
    return frame


def _read_with(shell: Any, cell: str, hook: CtrlCWhileReading) -> tuple[Any, str]:
    sys.setprofile(hook)
    try:
        with capture_output() as shown:
            result = shell.run_cell(cell)
    finally:
        sys.setprofile(None)
    return result, shown.stdout


AWAITING_CELLS = [
    "%%torchprofile -q\nimport asyncio\nawait asyncio.sleep(0)\nran = True\n",
    "import asyncio\n%torchprofile -q await asyncio.sleep(0)\nran = True\n",
]


@pytest.mark.parametrize("cell", AWAITING_CELLS, ids=["cell-magic", "line-magic"])
def test_ctrl_c_while_a_cell_with_the_magic_is_read_is_that_cells_interrupt(shell, cell):
    """At every point of the reading, one at a time: ``run_cell`` returns, with the
    KeyboardInterrupt as the cell's error, shown as a cell's interrupt is, and the cell did
    not run. Past the last point, the same cell is read and run as usual."""
    at = 0
    while True:
        at += 1
        shell.user_ns.pop("ran", None)
        hook = CtrlCWhileReading(at)
        result, shown = _read_with(shell, cell, hook)
        if not hook.fired:  # past the reading's last point (IPython's own state can shorten it)
            break
        assert isinstance(result.error_in_exec, KeyboardInterrupt), (at, result.error_in_exec)
        assert "ran" not in shell.user_ns and shown.strip().splitlines()[-1] == "KeyboardInterrupt:"
    assert at > 100  # the body is read again, through IPython's own transforms
    assert result.success and shell.user_ns["ran"] is True
