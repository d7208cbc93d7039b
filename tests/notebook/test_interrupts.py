"""Ctrl-C at the moments that used to crash the kernel, leave torch's profiler or the hooks
behind, or lose the report: while the profiler changes phase, inside the per-step
sampler, as the run starts and as it is cleaned up.

Ctrl-C is delivered as the interpreter delivers it: by calling the SIGINT handler in
force at that moment (Python's own raises KeyboardInterrupt on the spot). After each,
the user's checks: the KeyboardInterrupt reached them, the partial report holds the
steps that completed, nothing is left installed or running, no temp trace remains, and
the next profiled cell is a normal full run. ``bench/interrupt_sweep.py`` tries every
point of the run's code path this way.
"""
from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest
import torch
from IPython.utils.capture import capture_output
from torch.profiler import ProfilerAction

import nbprofiler
from conftest import TRAIN_CELL, assert_nothing_left, temp_traces
from nbprofiler.capture import sampler as sampler_module
from nbprofiler.capture import session
from nbprofiler.capture.hooks import StepHooks
from nbprofiler.capture.session import ProfileRun
from nbprofiler.notebook import profile
from nbprofiler.notebook.profile import live_run
from nbprofiler.options import ProfileOptions
from nbprofiler.render.live import LiveStatus

pytestmark = pytest.mark.usefixtures("private_tmp", "one_torch_thread")

ACTIVE = [2, 3, 4]  # the default schedule: wait 1, warmup 1, active 3
# TRAIN_CELL, counting the steps the user saw complete.
COUNTING_CELL = TRAIN_CELL.rstrip() + "\n    done += 1\n"


def ctrl_c() -> None:
    """What pressing Ctrl-C does at this point: run the SIGINT handler in force."""
    handler = signal.getsignal(signal.SIGINT)
    assert callable(handler)
    handler(signal.SIGINT, None)


def always(*args: Any, **kwargs: Any) -> bool:
    return True


def ctrl_c_before(original: Callable[..., Any], when: Callable[..., bool] = always,
                  pressed: list[bool] | None = None) -> Callable[..., Any]:
    """``original``, with Ctrl-C pressed just before its first call for which ``when`` holds
    (noted in ``pressed``)."""
    pressed = [] if pressed is None else pressed

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not pressed and when(*args, **kwargs):
            pressed.append(True)
            ctrl_c()
        return original(*args, **kwargs)
    return wrapper


def ctrl_c_after(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original``, with Ctrl-C pressed as its first call returns (its value returned)."""
    pressed: list[bool] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        if not pressed:
            pressed.append(True)
            ctrl_c()
        return value
    return wrapper


@pytest.fixture(autouse=True)
def python_ctrl_c_handler():
    """Python's own SIGINT handler, as in a kernel, also where pytest was started with
    SIGINT ignored (in the background), where Ctrl-C would do nothing to hold or deliver."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture(autouse=True)
def text_only_display(ip):
    """The report shows as text only: these tests check what it holds, not how it draws."""
    before = ip.display_formatter.active_types
    ip.display_formatter.active_types = ["text/plain"]
    yield
    ip.display_formatter.active_types = before


def run_counting_cell(shell: Any) -> tuple[BaseException | None, Any]:
    """Run the profiled training cell; the exception that reached the user, and ``run``."""
    shell.user_ns.update(done=0, run=None)
    with capture_output():
        result = shell.run_cell(f"%%torchprofile -q -o run\n{COUNTING_CELL}")
    return result.error_in_exec, shell.user_ns["run"]


def assert_recovered(shell: Any) -> None:
    """Nothing left behind (Python's own Ctrl-C handler in force again), and the next
    profiled cell is a normal full run."""
    assert_nothing_left([shell.user_ns["model"]])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert temp_traces() == []
    error, after = run_counting_cell(shell)
    assert error is None and not after.partial
    assert len(after.steps) == 12 and list(after.trace_steps["step"]) == ACTIVE
    assert_nothing_left([shell.user_ns["model"]])


def _at_transit(prev: ProfilerAction, cur: ProfilerAction) -> tuple[Any, str, Callable[..., bool]]:
    return torch.profiler.profile, "_transit_action", lambda self, *change: change == (prev, cur)


@pytest.mark.parametrize("moment, done, profiled", [
    # half-way into warming up: torch's recorder made, kineto not yet prepared
    ((torch.autograd.profiler.profile, "_prepare_trace", always), 1, []),
    (_at_transit(ProfilerAction.WARMUP, ProfilerAction.RECORD), 2, []),
    (_at_transit(ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE), 5, ACTIVE),
], ids=["wait-to-warmup", "warmup-to-active", "end-of-active"])
def test_ctrl_c_while_the_profiler_changes_phase(shell, monkeypatch, moment, done, profiled):
    """Pressed as torch's profiler changes phase: the change completes first (a
    half-changed profiler segfaults when stopped, or stays on), then the KeyboardInterrupt arrives."""
    owner, name, when = moment
    monkeypatch.setattr(owner, name, ctrl_c_before(getattr(owner, name), when))
    error, run = run_counting_cell(shell)
    monkeypatch.undo()
    assert isinstance(error, KeyboardInterrupt)
    assert shell.user_ns["done"] == done - 1  # the interrupt left the optimizer.step() that ended step `done`
    assert run.partial and run.run.error == "KeyboardInterrupt"
    assert len(run.steps) == done and list(run.trace_steps["step"]) == profiled
    assert_recovered(shell)


def _raise_worker_died() -> None:
    """What torch's SIGCHLD handler raises, in whatever the main thread runs, when a worker dies."""
    raise RuntimeError("DataLoader worker (pid 4242) exited unexpectedly with exit code 1.")


@pytest.mark.parametrize("press, error_type, steps", [
    (ctrl_c, KeyboardInterrupt, 3),  # held: step 3 is recorded whole
    (_raise_worker_died, RuntimeError, 2),  # not held: the half-recorded step 3 is dropped
], ids=["ctrl-c", "worker-died"])
def test_interrupt_inside_the_per_step_sampler(shell, monkeypatch, press, error_type, steps):
    """Raised half-way through recording step 3's figures (its memory read is last): the
    report keeps every step recorded whole, instead of failing on columns of unequal length."""
    reads = []

    def rss() -> int:
        reads.append(1)
        if len(reads) == 3:
            press()
        return 1 << 20

    monkeypatch.setattr(sampler_module, "_rss_reader", lambda: rss)
    error, run = run_counting_cell(shell)
    monkeypatch.undo()
    assert isinstance(error, error_type)
    assert run.partial and len(run.steps) == steps and run.steps["rss_bytes"].notna().all()
    assert list(run.trace_steps["step"]) == ([2] if steps == 3 else [])
    assert_recovered(shell)


def _called_from(name: str) -> Callable[..., bool]:
    """For ``ctrl_c_before``: true when the wrapped function is called from function ``name``."""
    def when(*args: Any, **kwargs: Any) -> bool:
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:  # this module's wrappers
            frame = frame.f_back
        return frame is not None and frame.f_code.co_name == name
    return when


@pytest.mark.parametrize("owner, name, when", [
    (ProfileRun, "_stop_profiler", always),
    (ProfileRun, "_cleanup", always),
    (session, "ctrl_c_held", _called_from("_release")),  # just before the finish holds Ctrl-C
], ids=["stop", "cleanup", "before-the-hold"])
def test_ctrl_c_as_the_run_cleans_up(shell, monkeypatch, owner, name, when):
    """Pressed as the cell's finish stops the profiler or removes the hooks: both still
    happen, and the full run's report is kept."""
    monkeypatch.setattr(owner, name, ctrl_c_before(getattr(owner, name), when))
    error, run = run_counting_cell(shell)
    monkeypatch.undo()
    assert isinstance(error, KeyboardInterrupt)
    assert run.partial and len(run.steps) == 12 and list(run.trace_steps["step"]) == ACTIVE
    assert_recovered(shell)


def test_ctrl_c_after_the_stop_still_gets_the_report(shell, monkeypatch):
    """Pressed once the profiler is stopped and the hooks are gone, before the report is
    built: the report of the whole run is still built and kept, then the interrupt comes."""
    monkeypatch.setattr(ProfileRun, "_release", ctrl_c_after(ProfileRun._release))
    error, run = run_counting_cell(shell)
    monkeypatch.undo()
    assert isinstance(error, KeyboardInterrupt)
    assert run is not None and len(run.steps) == 12 and list(run.trace_steps["step"]) == ACTIVE
    assert_recovered(shell)


def test_ctrl_c_as_the_run_starts(shell, monkeypatch):
    """Pressed while the run starts (the last thing before ``__enter__`` returns): the
    start is undone, so no cell is left refused as nested and no hook stays."""
    monkeypatch.setattr(ProfileRun, "_start", ctrl_c_after(ProfileRun._start))
    error, _ = run_counting_cell(shell)
    monkeypatch.undo()
    assert isinstance(error, KeyboardInterrupt) and shell.user_ns["done"] == 0
    assert_recovered(shell)


def test_ctrl_c_just_after_the_run_started_is_the_cells_interrupt(shell, monkeypatch):
    """Pressed after ``__enter__`` returned, before the cell's first line: the run has
    started, so the magic finishes it (a report of no steps) and nothing stays installed
    for the next cell to find."""
    monkeypatch.setattr(ProfileRun, "__enter__", ctrl_c_after(ProfileRun.__enter__))
    error, run = run_counting_cell(shell)
    monkeypatch.undo()
    assert isinstance(error, KeyboardInterrupt) and shell.user_ns["done"] == 0
    assert nbprofiler.current_run() is None
    assert_nothing_left([shell.user_ns["model"]])
    assert run is not None and len(run.steps) == 0 and run.partial
    assert_recovered(shell)


def test_ctrl_c_before_the_finish_can_hold_it_still_gets_the_report(shell, monkeypatch):
    """Pressed between the cell's end and the finish (nothing of nbprofiler runs yet to
    hold it): the magic finishes the run once more, so the full report is kept and
    nothing stays behind for the next cell to clean up."""
    monkeypatch.setattr(ProfileRun, "finish", ctrl_c_before(ProfileRun.finish))
    error, run = run_counting_cell(shell)
    monkeypatch.undo()
    assert isinstance(error, KeyboardInterrupt)
    assert run is not None and len(run.steps) == 12 and list(run.trace_steps["step"]) == ACTIVE
    assert nbprofiler.current_run() is None
    assert_recovered(shell)


def test_a_run_left_entered_by_a_function_that_returned_is_cleaned_up():
    """From Python: a run entered in a function that returned without finishing it."""
    def start_and_forget() -> None:
        live_run(ProfileOptions(wait=0, warmup=0, active=1)).__enter__()

    start_and_forget()
    assert torch.autograd.profiler._is_profiler_enabled
    with nbprofiler.profile(wait=0, warmup=0, active=1, step_on="manual") as run:
        torch.ones(4).sum()
        nbprofiler.step()
    assert len(run.report.steps) == 1 and not run.report.partial
    assert_nothing_left()


def test_nested_and_foreign_profilers_are_still_refused():
    """The clean-up above never touches a run in progress or the user's own profiler."""
    with nbprofiler.profile(active=1) as outer:
        with pytest.raises(nbprofiler.NbprofilerError, match="cannot be nested"):
            with nbprofiler.profile(active=1):
                pass
        assert nbprofiler.current_run() is outer
    with torch.profiler.profile():
        with pytest.raises(nbprofiler.NbprofilerError, match="another torch profiler"):
            with nbprofiler.profile(active=1):
                pass
        assert torch.autograd.profiler._is_profiler_enabled
    assert_nothing_left()


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("this __str__ is broken")


def test_exception_whose_str_raises_keeps_the_report(shell):
    shell.user_ns["UnprintableError"] = UnprintableError
    body = COUNTING_CELL.replace("    done += 1\n",
                                 "    done += 1\n    if done == 4:\n        raise UnprintableError()\n")
    shell.user_ns.update(done=0, run=None)
    with capture_output():
        result = shell.run_cell(f"%%torchprofile -q -o run\n{body}")
    assert isinstance(result.error_in_exec, UnprintableError)
    run = shell.user_ns["run"]
    assert run.partial and run.run.error == "UnprintableError" and len(run.steps) == 4
    assert_recovered(shell)


def test_ctrl_c_while_the_status_line_first_shows(ip, monkeypatch):
    """In a kernel without widgets (no stdin, no comms), Ctrl-C during the first display of
    the status line: the user gets the KeyboardInterrupt, and closing the line works."""
    import IPython.display

    monkeypatch.setattr(ip, "kernel", object(), raising=False)
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: ctrl_c())
    status = LiveStatus()
    run = live_run(ProfileOptions())
    with pytest.raises(KeyboardInterrupt):
        status.start(run)
    status.close()
    assert status.mode is None


def test_wrappers_left_by_a_killed_run_are_replaced_not_wrapped(shell):
    """Optimizer and DataLoader wrappers whose undo was lost (an exception raised from
    outside while the hooks went in): the next run wraps the originals, and its clean-up
    puts the originals back, so the stale wrappers are gone for good."""
    stale = live_run(ProfileOptions()).hooks
    stale.install()
    del stale._removers[1:]  # keep only the optimizer post-step hook's undo
    stale.remove()
    assert torch.optim.SGD.__dict__["step"].__code__.co_filename == StepHooks._wrap_step.__code__.co_filename
    error, run = run_counting_cell(shell)
    assert error is None and len(run.steps) == 12
    assert_nothing_left([shell.user_ns["model"]])


# -- Ctrl-C once the cell's loop has ended: while the report is analysed, drawn and shown ----
def _drawing_moments() -> list[Any]:
    """Where the time after the loop goes, each a (owner, name) pressed Ctrl-C in."""
    import nbprofiler.report.report as report_module  # where the Report calls the rules
    from nbprofiler.notebook import magic
    from nbprofiler.render import frontend, widget

    return [
        pytest.param(LiveStatus, "close", id="status-line-goes"),
        pytest.param(report_module, "suggest", id="analysis"),
        pytest.param(frontend, "render_text", id="text"),
        pytest.param(frontend, "render_html", id="static-html"),
        pytest.param(frontend, "report_payload", id="saved-data"),
        pytest.param(widget.Explorer, "__init__", id="explorer"),
        pytest.param(magic, "finished", id="history"),
    ]


SHOWN = ["text/plain", "text/html", "application/vnd.nbprofiler.report+json",
         "application/vnd.jupyter.widget-view+json"]


@pytest.fixture()
def widget_front_end(ip, monkeypatch):
    """The report drawn in full, as in JupyterLab: text, static HTML, saved data and explorer."""
    from nbprofiler.render import frontend

    monkeypatch.setattr(ip.display_formatter, "active_types", SHOWN)
    monkeypatch.setattr(frontend, "widget_frontend", lambda: True)


@pytest.mark.parametrize("owner, name", _drawing_moments())
@pytest.mark.usefixtures("widget_front_end")
def test_ctrl_c_while_the_report_draws_keeps_it_and_says_how_to_show_it(shell, owner, name):
    """Pressed at any moment after the loop: the cell ends interrupted with one line saying so
    and how to show the report again, no library's traceback; the report is in ``-o`` and
    ``nbprofiler.last()`` with every step; nothing stays installed; showing it again works."""
    profile._last_report = None
    shell.user_ns.update(done=0, run=None)
    with pytest.MonkeyPatch.context() as pressed, capture_output() as shown:
        pressed.setattr(owner, name, ctrl_c_before(getattr(owner, name)))
        result = shell.run_cell(f"%%torchprofile -o run\n{COUNTING_CELL}")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    said = (shown.stdout + shown.stderr).strip().splitlines()
    interrupted = [line for line in said if "interrupted" in line]
    assert len(interrupted) == 1 and "`run`" in interrupted[0] and "nbprofiler.last()" in interrupted[0]
    assert "Traceback" not in shown.stdout + shown.stderr and ".py" not in shown.stdout + shown.stderr
    run = shell.user_ns["run"]
    assert run is nbprofiler.last() and len(run.steps) == shell.user_ns["done"] == 12
    assert list(run.trace_steps["step"]) == ACTIVE
    assert_nothing_left([shell.user_ns["model"]])
    assert "clear_output" not in vars(shell.display_pub)  # the status line's watch on clears is gone
    with capture_output() as again:
        run.show()
    assert [sorted(o.data) for o in again.outputs] == [sorted(SHOWN)]  # the whole report, every part of it
    assert_recovered(shell)


@pytest.mark.usefixtures("widget_front_end")
def test_ctrl_c_while_drawing_without_o_points_to_last(shell, monkeypatch):
    """Without ``-o`` the line names ``nbprofiler.last().show()``, which shows the kept report."""
    from nbprofiler.render import frontend

    shell.user_ns.update(done=0)
    with capture_output() as shown:
        monkeypatch.setattr(frontend, "render_html", ctrl_c_before(frontend.render_html))
        result = shell.run_cell(f"%%torchprofile\n{COUNTING_CELL}")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert "nbprofiler.last().show()" in shown.stdout + shown.stderr and "`run`" not in shown.stdout
    assert len(nbprofiler.last().steps) == 12
    assert_recovered(shell)


@pytest.mark.usefixtures("widget_front_end")
def test_ctrl_c_while_drawing_after_the_cell_failed_keeps_the_cells_error(shell, monkeypatch):
    """The cell raised, then Ctrl-C struck the drawing: the user gets the cell's own exception with
    its traceback, the line about the report, and the report of the steps done."""
    from nbprofiler.render import frontend

    body = COUNTING_CELL.replace("    done += 1\n",
                                 "    done += 1\n    if done == 6:\n        raise ValueError('bad batch')\n")
    shell.user_ns.update(done=0, run=None)
    with capture_output() as shown:
        monkeypatch.setattr(frontend, "render_text", ctrl_c_before(frontend.render_text))
        result = shell.run_cell(f"%%torchprofile -o run\n{body}")
    assert isinstance(result.error_in_exec, ValueError)
    assert "ValueError: bad batch" in shown.stdout and "interrupted while drawing" in shown.stderr
    assert len(shell.user_ns["run"].steps) == 6
    assert_recovered(shell)


# -- A second Ctrl-C, as users press them: the first stops the loop in the active steps, the -----
# -- second lands as the magic stops the run and keeps its report --------------------------------
# The cell presses the first itself, after 4 steps: the profiler is recording step 4. An earlier
# one, after 2 steps, the cell catches and goes on: Ctrl-C in the cell still acts at once after it.
PRESSING_CELL = COUNTING_CELL + """\
    if done == 2:
        try:
            ctrl_c()
        except KeyboardInterrupt:
            caught = True
    if done == 4:
        ctrl_c()
"""


@pytest.mark.parametrize("name, when, output", [
    ("_finish", always, "run"),
    ("_finish", always, None),
    ("_store", always, "run"),
    ("_store", always, None),
    ("ctrl_c_held", _called_from("_store"), "run"),  # the store holds Ctrl-C only for -o
], ids=["as-the-finish-starts", "as-the-finish-starts-no-o", "as-the-store-starts", "as-the-store-starts-no-o",
        "as-the-stores-hold-starts"])
def test_a_second_ctrl_c_as_the_cell_stops_keeps_the_report(shell, name, when, output) -> None:
    """Nothing stays running or installed, the report of the 4 steps done is in ``-o``,
    ``nbprofiler.last()`` and the history, and the user gets the KeyboardInterrupt with one
    line naming only the places that hold the report."""
    from nbprofiler.notebook import magic as module

    profile._last_report = None
    shell.user_ns.update(done=0, run=None, ctrl_c=ctrl_c, caught=False)
    kept_before = len(nbprofiler.history())  # type: ignore[operator]  # a callable module
    pressed: list[bool] = []
    with pytest.MonkeyPatch.context() as patch, capture_output() as shown:
        patch.setattr(module, name, ctrl_c_before(getattr(module, name), when, pressed))
        result = shell.run_cell(f"%%torchprofile -q{' -o ' + output if output else ''}\n{PRESSING_CELL}")
    assert shell.user_ns["caught"] and shell.user_ns["done"] == 4  # the first Ctrl-C stopped the loop at once
    assert pressed  # the second came as the run stopped
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert_nothing_left([shell.user_ns["model"]])
    report = nbprofiler.last()
    assert report is not None and len(report.steps) == 4 and list(report.trace_steps["step"]) == [2, 3]
    assert report.run is not None and report.run.error == "KeyboardInterrupt"
    assert shell.user_ns["run"] is (report if output else None)
    kept = nbprofiler.history()  # type: ignore[operator]  # a callable module
    assert len(kept) == kept_before + 1 and kept["steps_run"].iloc[-1] == 4
    said = [line for line in (shown.stdout + shown.stderr).splitlines() if line.startswith("nbprofiler:")]
    places = "`run` or `nbprofiler.last()`" if output else "`nbprofiler.last()`"
    assert said == [f"nbprofiler: interrupted as the run stopped; its report is kept in {places}"]
    assert "KeyboardInterrupt" in shown.stdout  # the cell's own interrupt, with its traceback
    assert_recovered(shell)
