"""Faults inside a profiled cell, through the real IPython shell.

After every fault: the torch profiler is stopped, no nbprofiler hook is left,
the partial report was shown, the user's own exception reached them with its
traceback, no temporary trace file remains, and the next profiled cell works.
(test_magic.py covers a ValueError at step 3 and a KeyboardInterrupt during
the active steps; these cover every step, the export, and the other faults.)
"""
from __future__ import annotations

import sys

import gc
from collections.abc import Callable
from typing import Any

import pytest
import torch
from IPython.utils.capture import capture_output
from torch.utils.data._utils import signal_handling
from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter

import nbprofiler
from conftest import TRAIN_CELL, assert_nothing_left, temp_traces
from nbprofiler.capture.hooks import StepHooks
from nbprofiler.notebook.magic import ReportInterrupted

MIME = "application/vnd.nbprofiler.report+json"
ACTIVE = (2, 3, 4)  # the default schedule: wait 1, warmup 1, active 3

pytestmark = pytest.mark.usefixtures("private_tmp", "one_torch_thread")

# A loop of 12 steps that raises `boom` (put in the namespace by the test) in step FAIL_AT.
FAILING_LOOP = """
for i, (x, y) in enumerate(train_loader):
    loss = F.cross_entropy(model(x), y)
    if i == FAIL_AT:
        raise boom
    opt.zero_grad(); loss.backward(); opt.step()
"""

CRASHING_DATASET = """
import os
class Flaky(torch.utils.data.Dataset):
    '''Sample 40 kills (or raises in) the DataLoader worker that fetches it.'''
    def __init__(self, how): self.how = how
    def __len__(self): return 64
    def __getitem__(self, i):
        if i == 40:
            if self.how == "exit":
                os._exit(1)
            raise ValueError("corrupt sample 40")
        return torch.randn(20), i % 4
"""
WORKER_LOOP = """
for x, y in DataLoader(Flaky(HOW), batch_size=4, num_workers=2):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def run_cell(shell: Any, line: str, body: str) -> tuple[Any, Any]:
    """Run ``%%torchprofile`` the way a notebook does (``run_cell``); return result and output."""
    with capture_output() as captured:
        result = shell.run_cell(f"%%torchprofile {line}\n{body}")
    return result, captured


@pytest.fixture(autouse=True)
def text_only_display(ip):
    """Reports display as text/plain only: the HTML report draws charts (about a second
    each here), and what these tests check, that the partial report is shown, is in the text."""
    before = ip.display_formatter.active_types
    ip.display_formatter.active_types = ["text/plain"]
    yield
    ip.display_formatter.active_types = before


def shown_report(captured: Any) -> str:
    """The text of the report displayed under the cell (the last one shown)."""
    texts = [o.data["text/plain"] for o in captured.outputs
             if o.data.get("text/plain", "").startswith("nbprofiler report")]
    assert texts, "no report was displayed"
    return texts[-1]


def innermost_filename(exc: BaseException) -> str:
    tb = exc.__traceback__
    assert tb is not None, "the error was raised"
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename


def assert_recovered(shell: Any) -> None:
    """Nothing left behind, and the next profiled cell is a normal full run."""
    assert_nothing_left([shell.user_ns["model"]])
    assert temp_traces() == []
    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o after", TRAIN_CELL)
    after = shell.user_ns["after"]
    assert len(after.steps) == 12 and list(after.trace_steps["step"]) == list(ACTIVE)
    assert not after.partial and after.run.error is None
    assert_nothing_left([shell.user_ns["model"]])


@pytest.mark.parametrize("fail_at", range(7))  # wait, warmup, 3 active, 2 after the schedule
def test_exception_at_every_step(shell, fail_at):
    shell.user_ns.update(FAIL_AT=fail_at, boom=ValueError(f"bad batch {fail_at}"))
    result, captured = run_cell(shell, "-o run", FAILING_LOOP)
    boom = shell.user_ns["boom"]
    assert result.error_in_exec is boom  # the user's own exception object reached them,
    assert innermost_filename(boom) == shell.user_ns["run"].run.cell_filename  # raised in their cell,
    assert "----> 5     raise boom" in captured.stdout  # and its traceback shows their line
    run = shell.user_ns["run"]
    assert run.partial and run.run.error == f"ValueError: bad batch {fail_at}"
    assert len(run.steps) == fail_at
    assert list(run.trace_steps["step"]) == [s for s in ACTIVE if s < fail_at]
    assert "Partial report" in shown_report(captured)
    assert_recovered(shell)


@pytest.mark.parametrize("fail_at", [0, 3])  # before the tracers record, and while they do
def test_exception_with_line_and_module_tracing(shell, fail_at):
    """--stack installs a line tracer and --modules module hooks: both go, also on error."""
    shell.user_ns.update(FAIL_AT=fail_at, boom=ValueError(f"bad batch {fail_at}"))
    result, captured = run_cell(shell, "--stack --modules -o run", FAILING_LOOP)
    assert result.error_in_exec is shell.user_ns["boom"]
    run = shell.user_ns["run"]
    assert run.partial and len(run.steps) == fail_at
    assert sys.gettrace() is None
    assert_recovered(shell)


def test_exception_inside_optimizer_step(shell):
    """Raised inside the wrapped ``optimizer.step()`` (a pre-hook): the wrapper unwinds."""
    shell.run_cell(
        "def fail_in_step(optimizer, args, kwargs):\n"
        "    global n_steps\n"
        "    n_steps += 1\n"
        "    if n_steps == 4:\n"
        "        raise RuntimeError('step hook failed')\n"
        "n_steps = 0\nhandle = opt.register_step_pre_hook(fail_in_step)\n"
    ).raise_error()
    try:
        result, captured = run_cell(shell, "-o run", TRAIN_CELL)
    finally:
        shell.user_ns["handle"].remove()
    assert isinstance(result.error_in_exec, RuntimeError)
    run = shell.user_ns["run"]
    assert len(run.steps) == 3 and list(run.trace_steps["step"]) == [2]
    assert "Partial report" in shown_report(captured)
    assert_recovered(shell)


def test_out_of_memory_in_an_active_step(shell):
    shell.user_ns.update(FAIL_AT=3, boom=torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    result, captured = run_cell(shell, "-o run", FAILING_LOOP)
    assert result.error_in_exec is shell.user_ns["boom"]
    run = shell.user_ns["run"]
    assert run.run.error.startswith("OutOfMemoryError: CUDA out of memory")
    assert list(run.trace_steps["step"]) == [2]  # what was profiled before the OOM is kept
    assert "Partial report" in shown_report(captured)
    assert_recovered(shell)


def test_keyboard_interrupt_during_warmup(shell):
    shell.user_ns.update(FAIL_AT=1, boom=KeyboardInterrupt())
    result, captured = run_cell(shell, "-o run", FAILING_LOOP)
    assert result.error_in_exec is shell.user_ns["boom"]
    run = shell.user_ns["run"]
    assert run.run.error == "KeyboardInterrupt" and len(run.steps) == 1 and run.trace_steps.empty
    assert "Partial report" in shown_report(captured)
    assert_recovered(shell)


def test_keyboard_interrupt_inside_a_dataloader_fetch(shell):
    """Ctrl-C lands while nbprofiler's own ``__next__`` wrapper is on the stack."""
    shell.run_cell(
        "class Interrupting(torch.utils.data.Dataset):\n"
        "    def __len__(self): return 48\n"
        "    def __getitem__(self, i):\n"
        "        if i == 24: raise KeyboardInterrupt\n"
        "        return torch.randn(20), i % 4\n"
        "interrupting = DataLoader(Interrupting(), batch_size=4)\n"
    ).raise_error()
    body = TRAIN_CELL.replace("train_loader", "interrupting")
    result, captured = run_cell(shell, "-o run", body)
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    run = shell.user_ns["run"]
    assert len(run.steps) == 6 and list(run.trace_steps["step"]) == list(ACTIVE)
    assert "Partial report" in shown_report(captured)
    assert_recovered(shell)


def test_system_exit(shell):
    shell.user_ns.update(FAIL_AT=3, boom=SystemExit(3))
    with pytest.warns(UserWarning, match="To exit"):  # IPython's answer to SystemExit in a cell
        result, captured = run_cell(shell, "-o run", FAILING_LOOP)
    assert result.error_in_exec is shell.user_ns["boom"]
    run = shell.user_ns["run"]
    assert run.run.error == "SystemExit: 3" and list(run.trace_steps["step"]) == [2]
    assert "Partial report" in shown_report(captured)
    assert_recovered(shell)


def _shut_down_workers() -> None:
    """torch's own shutdown of a loader whose worker raised waits ~10 s for workers that
    never exit; kill them first so the test does not pay that (the user would, too)."""
    # type(), not isinstance(): isinstance() asks each object for __class__, which raises on a
    # weak proxy whose referent is gone and wakes torch's deprecated module aliases.
    iterators = [o for o in gc.get_objects() if issubclass(type(o), _MultiProcessingDataLoaderIter)]
    for obj in iterators:
        if obj._worker_pids_set:
            signal_handling._remove_worker_pids(id(obj))  # or torch's SIGCHLD handler raises on the kill
            obj._worker_pids_set = False
            for worker in obj._workers:
                worker.kill()
            obj._shutdown_workers()


# A dead worker surfaces as torch's RuntimeError ("exited unexpectedly"), or, when the parent
# was receiving a batch from it at that moment, as the ConnectionResetError of that read.
@pytest.mark.parametrize("how, errors", [("exit", (RuntimeError, ConnectionResetError)), ("raise", (ValueError,))])
def test_dataloader_worker_crash(shell, how, errors):
    shell.run_cell(CRASHING_DATASET).raise_error()
    shell.user_ns["HOW"] = how
    try:
        result, captured = run_cell(shell, "-o run", WORKER_LOOP)
        error = result.error_in_exec
        assert isinstance(error, errors), repr(error)
        if not isinstance(error, ConnectionResetError):
            assert ("exited unexpectedly" if how == "exit" else "corrupt sample 40") in str(error)
    finally:
        _shut_down_workers()
    run = shell.user_ns["run"]
    assert run.partial and run.run.error.startswith(type(error).__name__)
    assert 0 < len(run.steps) < 16 and run.run.loaders[0].num_workers == 2
    assert "Partial report" in shown_report(captured)
    assert_recovered(shell)


# -- the trace export fails -----------------------------------------------------------------

SHORT_LOOP = """
for i, (x, y) in enumerate(train_loader):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if i == 3:
        break  # 4 steps: the cell ends inside the active steps
"""


def _failing_export(exc: BaseException) -> Callable[..., None]:
    def export_chrome_trace(self: Any, path: str) -> None:
        raise exc
    return export_chrome_trace


@pytest.mark.parametrize("body, steps", [(TRAIN_CELL, 12), (SHORT_LOOP, 4)], ids=["in-step", "at-stop"])
def test_export_failure_is_a_note_not_an_exception(shell, monkeypatch, body, steps):
    """The export runs inside ``optimizer.step()`` (schedule done) or at the end of the cell;
    either way its failure must not stop the user's training loop."""
    with monkeypatch.context() as patch:  # undone before the recovery check (monkeypatch.undo would
        patch.setattr(torch.profiler.profile, "export_chrome_trace", _failing_export(OSError("disk full")))
        result, captured = run_cell(shell, "-o run", body)  # also undo private_tmp's temp dir)
    assert result.error_in_exec is None
    run = shell.user_ns["run"]
    assert len(run.steps) == steps and not run.has_trace
    note = next(n for n in run.notes if "trace export failed" in n)
    assert "OSError: disk full" in note and "TMPDIR" in note
    assert "trace export failed" in shown_report(captured)
    assert_recovered(shell)


def test_unwritable_temp_dir_is_a_note_not_an_exception(shell, private_tmp, monkeypatch):
    """A temp dir inside a regular file: nothing can create it (torch would create a
    missing one; root ignores permissions)."""
    (private_tmp / "a-file").write_text("")
    monkeypatch.setattr("tempfile.tempdir", str(private_tmp / "a-file" / "tmp"))
    result, _ = run_cell(shell, "-q -o run", TRAIN_CELL)
    assert result.error_in_exec is None
    run = shell.user_ns["run"]
    assert len(run.steps) == 12 and any("trace export failed" in n for n in run.notes)
    monkeypatch.setattr("tempfile.tempdir", str(private_tmp))
    assert_recovered(shell)


def test_interrupt_during_the_final_export_still_shows_the_report(shell, monkeypatch):
    """Ctrl-C while a long export runs at the end of the cell. Displayed in full (HTML too):
    a partial report without a trace must render."""
    monkeypatch.setattr(shell.display_formatter, "active_types", ["text/plain", "text/html", MIME])
    with monkeypatch.context() as patch:
        patch.setattr(torch.profiler.profile, "export_chrome_trace", _failing_export(KeyboardInterrupt()))
        result, captured = run_cell(shell, "-o run", SHORT_LOOP)
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    run = shell.user_ns["run"]
    assert run.run.error == "KeyboardInterrupt" and len(run.steps) == 4
    assert "Partial report" in shown_report(captured)
    bundle = captured.outputs[-1].data
    assert bundle[MIME]["partial"] and "Partial report" in bundle["text/html"]
    assert_recovered(shell)


# What torch's SIGCHLD handler raises, from wherever the main thread is, when a worker dies.
WORKER_DIED = RuntimeError("DataLoader worker (pid 4242) exited unexpectedly with exit code 1.")


def _raise_once(exc: BaseException, then: Callable[..., Any]) -> Callable[..., Any]:
    """``then``, except that the first call raises ``exc`` instead."""
    calls = []

    def fire(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise exc
        return then(*args, **kwargs)
    return fire


@pytest.mark.parametrize("where", ["finish start", "hook removal", "report build"])
@pytest.mark.parametrize("exc", [KeyboardInterrupt(), WORKER_DIED], ids=["ctrl-c", "worker-died"])
def test_exception_landing_in_the_finish_still_gives_the_report(shell, monkeypatch, where, exc):
    """An exception raised into the finish from outside (Ctrl-C; torch's SIGCHLD handler)
    may strike any line of it, its very start included, where no code of the finish can
    catch it: every hook is still removed, the report still built and shown, and that
    exception still raised."""
    from nbprofiler.notebook import magic
    from nbprofiler.capture.session import ProfileRun

    install = StepHooks.install

    def install_then_arm(self: StepHooks) -> None:
        install(self)
        self._removers.append(_raise_once(exc, lambda: None))  # the first undo to run

    with monkeypatch.context() as patch:
        if where == "finish start":
            patch.setattr(magic, "_finish", _raise_once(exc, magic._finish))
        elif where == "hook removal":
            patch.setattr(StepHooks, "install", install_then_arm)
        else:
            patch.setattr(ProfileRun, "_build_report", _raise_once(exc, ProfileRun._build_report))
        result, captured = run_cell(shell, "-o run", TRAIN_CELL)
    if isinstance(exc, KeyboardInterrupt):
        # Ctrl-C as the run stopped: the cell counts as interrupted, in one line that says the report is kept.
        assert isinstance(result.error_in_exec, ReportInterrupted)
        assert "its report is kept in `run` or `nbprofiler.last()`" in str(result.error_in_exec)
    else:
        assert result.error_in_exec is exc
    run = shell.user_ns["run"]
    assert len(run.steps) == 12 and list(run.trace_steps["step"]) == list(ACTIVE)
    assert run.run.error == type(exc).__name__ + (f": {exc}" if str(exc) else "")
    assert "Partial report" in shown_report(captured)
    assert nbprofiler.current_run() is None
    assert_recovered(shell)


@pytest.mark.parametrize("flag", ["--trace", "--tensorboard"])
def test_unwritable_output_path_is_a_note_and_the_report_stands(shell, private_tmp, flag):
    """A typo'd --trace / --tensorboard path must not cost the user the run they just did."""
    blocker = private_tmp / "a-file"
    blocker.write_text("")
    where = blocker / ("t.json" if flag == "--trace" else "tb")  # inside a file: cannot be created
    result, _ = run_cell(shell, f"-q -o run {flag} {where}", TRAIN_CELL)
    assert result.error_in_exec is None
    run = shell.user_ns["run"]
    assert list(run.trace_steps["step"]) == list(ACTIVE) and len(run.operators)
    (note,) = [n for n in run.notes if n.startswith(flag)]
    assert "not written" in note and "writable directory" in note
    assert_recovered(shell)
