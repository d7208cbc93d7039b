"""The capture of one run: code run under a scheduled torch.profiler, and what it measured.

This is the one capture path, under ``nbprofiler.profile`` and ``%%torchprofile``
(``notebook.profile``). Its finish hands the run's record and trace to the
``make_report`` it was given, and keeps what that makes (the Report) as
``run.report``. The guarantees live here: the profiler is always stopped and every
hook removed (``finally``), the steps that completed are kept when the code
raises or is interrupted, and the exception itself propagates unchanged. Ctrl-C
is held back while the profiler, the hooks or the step count change state
(``ctrl_c_held``), and what a run interrupted before its finish left behind is
cleaned up by the next run (``ProfileRun._claim``) or at exit.
"""
from __future__ import annotations

import atexit
import os
import platform
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import psutil
import torch
from torch.profiler import ProfilerActivity

from ..errors import NestedProfileError, OptionError
from ..machine import CpuUse, cpu_use, other_cores, process_cpus
from ..options import ProfileOptions
from ..records import CaptureFacts, LoaderRecord, RunRecord, UnwrittenOutput
from ..trace.table import DeviceInfo
from ..trace.writers import write_tensorboard, write_trace
from .ctrl_c import ctrl_c_held
from .cycles import CycleReducer, FinishedCycle, Summarize
from .hooks import StepHooks
from .lines import LineRecorder
from .loaders import named
from .model_calls import cell_modules
from .names import restore_names
from .profiler_steps import ProfilerSteps
from .sampler import StepSampler
from .stderr_filter import StderrFilter

_active_lock = threading.RLock()  # re-entered when a claim cleans up an abandoned run
_active: "ProfileRun | None" = None
# True from the moment a run starts torch's profiler until one sees it off: a profiler
# still on while no run is active was left by an interrupted run of ours, not the user's.
_profiler_ours = False


# What the run's record and trace are made into when it finishes (the Report: ``notebook.profile``).
MakeReport = Callable[[RunRecord, bytes | None], Any]


class ProfileRun:
    """One profiled run. ``report``, what ``make_report`` made of its record and trace, is set
    when the ``with`` block ends, also on error. ``cell_calls``: the names the cell calls on
    arguments (``model(x)``); those that hold an ``nn.Module`` get a range of their own."""

    def __init__(self, options: ProfileOptions, make_report: MakeReport, namespace: dict[str, Any] | None = None,
                 cell_source: str | None = None, cell_filename: str | None = None,
                 on_step: Callable[["ProfileRun"], None] | None = None,
                 cell_key: str | None = None, notebook: str | None = None, cell_calls: tuple[str, ...] = (),
                 summarize_cycle: Summarize | None = None) -> None:
        self.options = options
        self.make_report = make_report
        self.namespace = namespace
        self.cell_source = cell_source
        self.cell_calls = cell_calls
        self.cell_filename = cell_filename
        self.cell_key = cell_key
        self.notebook = notebook
        self.lines = LineRecorder(cell_filename) if options.stack and cell_filename else None
        self.on_step = on_step
        self.cuda = _use_cuda(options.device)
        self.sampler = StepSampler(options, self.cuda)
        self._stderr = StderrFilter()
        self.hooks = StepHooks(self, "manual" if options.iterations else options.step_on)
        self.report: Any = None
        # torch clears its events at the end of each cycle, so each cycle is its own
        # trace; only the latest is kept, so --repeat 0 over a long cell holds one.
        self._trace: bytes | None = None
        self._cycles = 0
        # --every: each cycle's trace made into a row of report.cycles as it ends (capture/cycles.py)
        self._device_info: DeviceInfo | None = None
        self._cycle_rows = CycleReducer(summarize_cycle) if options.every and summarize_cycle else None
        self._prof: torch.profiler.profile | None = None
        self._profiler_steps = ProfilerSteps(options.skip_first + options.cycle_length)
        self._boundaries: dict[str, int] = {}
        self._t_start = 0.0
        self._cpu_start: CpuUse | None = None  # the machine's CPU use when the run started
        self._export_error: BaseException | None = None
        self._cell_thread: int | None = None  # the thread that started the profiler
        self._owner: FrameType | None = None  # the frame that entered the run, until it finishes
        self._started = False  # set once __enter__ has claimed the process and started everything
        self._released = False  # set once _cleanup has run to its end
        self._other_thread_steps = 0
        self._unwritten: list[UnwrittenOutput] = []  # the --trace / --tensorboard copies that could not be written

    @property
    def unfinished(self) -> bool:
        """Whether this run started and has no report yet: whoever entered it must ``finish`` it,
        once more if a finish was cut short (it then does only what is left). False after a
        refused or undone start."""
        return self._started and self.report is None

    # -- listener interface used by StepHooks -----------------------------------------------
    def on_boundary(self, source: str) -> None:
        if threading.get_ident() != self._cell_thread:
            # torch.profiler records only the thread that started it, and stepping or
            # stopping it from another thread crashes the process (segfault in the
            # export): another thread's steps are counted for a note, never ended here.
            if source != "dataloader":  # a producer thread's fetches are no loop's steps
                self._other_thread_steps += 1
            return
        try:
            if self._cycle_rows is not None:
                self._cycle_rows.step_ended()  # the cycle that ended at the previous boundary, off its profiled step
            with ctrl_c_held():  # a step half-counted, or a profiler half-way to its next phase, is lost or fatal
                self._boundaries[source] = self._boundaries.get(source, 0) + 1
                self.sampler.end_step()
                self.hooks.boundary_passed()
                done = self.sampler.count
                if self._prof is not None and self._profiler_steps.due(done):
                    self._profiler_steps.before_step(self._prof, done)
                    self._transition("step")
                    if self._prof is not None:
                        self._profiler_steps.stepped(self._prof, done)
            if self.on_step is not None:
                self.on_step(self)
        finally:
            # The profiler's trace export and the live status line (whose first display
            # imports ipywidgets: up to half a second) are the package's own work, not
            # the user's: the next step's clock starts after them.
            self.sampler.restart_clock()

    def on_fetch(self, seconds: float, cpu_seconds: float | None, queued_seconds: float | None,
                 record: LoaderRecord | None, delivered: bool, samples: int | None) -> None:
        if threading.get_ident() != self._cell_thread:
            return  # a producer thread's fetches are not the loop's wait or batches
        self.sampler.add_fetch(seconds, delivered, samples)
        if record is not None:
            step = self.sampler.count
            record.wait_ms_by_step[step] = record.wait_ms_by_step.get(step, 0.0) + seconds * 1e3
            if cpu_seconds is not None:  # a fetch whose thread's clock was read
                record.wait_cpu_ms = (record.wait_cpu_ms or 0.0) + cpu_seconds * 1e3
                record.wait_clocked_ms = (record.wait_clocked_ms or 0.0) + seconds * 1e3
            if queued_seconds is not None:
                record.wait_queued_ms = (record.wait_queued_ms or 0.0) + queued_seconds * 1e3

    def on_loader(self, loader: Any, record: LoaderRecord) -> None:
        named(record, loader, self.namespace)

    # -- progress, for live status lines ----------------------------------------------------
    @property
    def steps_done(self) -> int:
        return self.sampler.count

    @property
    def current_phase(self) -> str:
        return self.options.phase_of(self.sampler.count)

    @property
    def last_step_s(self) -> float | None:
        return self.sampler.host_ms[-1] / 1e3 if self.sampler.count else None

    # -- the run ---------------------------------------------------------------------------
    def _on_trace_ready(self, prof: torch.profiler.profile) -> None:
        """Export each finished cycle. A failure is kept for the report, never raised
        into the user's training loop (this runs inside ``optimizer.step()``)."""
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(prefix="nbprofiler-", suffix=".json")  # fails if TMPDIR is unwritable
            os.close(fd)
            prof.export_chrome_trace(tmp)
            raw = restore_names(Path(tmp).read_bytes(), prof)
            self._trace = raw
            self._cycles += 1
            if self._cycle_rows is not None:
                # The cycle's steps: its wait, warmup and active ones (fewer when the cell ended in it).
                first = self.options.skip_first + (self._cycles - 1) * self.options.cycle_length
                exported, tmp = tmp, None  # removed by the summaries' thread, off the loop
                self._cycle_rows.add(FinishedCycle(self._cycles, raw, self.sampler.window(first), self._device(),
                                                   exported))
            if self.options.tensorboard:
                self._write_output("--tensorboard", write_tensorboard, raw, self.options.tensorboard)
        except Exception as exc:  # noqa: BLE001 - any failure of torch's export: the report shows it
            self._export_error = exc
        finally:
            if tmp is not None:
                os.unlink(tmp)

    def _profiler(self) -> torch.profiler.profile:
        o = self.options
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        with warnings.catch_warnings():
            # torch warns when warmup is 0; here the user asked for it explicitly.
            warnings.filterwarnings("ignore", message=".*won't be using warmup.*")
            schedule = torch.profiler.schedule(wait=o.wait, warmup=o.warmup, active=o.active, repeat=o.repeat,
                                               skip_first=o.skip_first)
        return _Profiler(
            activities=activities,
            schedule=schedule,
            on_trace_ready=self._on_trace_ready,
            record_shapes=o.shapes,
            profile_memory=o.memory,
            # --modules records its own ranges (capture/module_ranges.py), without the costly Python tracer.
            with_stack=o.stack,
            with_modules=o.modules,
        )

    def __enter__(self) -> "ProfileRun":
        """Claim the process, install the hooks and start the profiler, all or nothing.

        Ctrl-C is held until the start is complete. Landing in it (or as it returns),
        it undoes the start: otherwise no ``finish`` would ever remove what was installed.
        """
        self._owner = self._owner or sys._getframe(1)
        try:
            with ctrl_c_held():
                self._claim()
                self._start()
                self._started = True
            return self
        except NestedProfileError:
            raise  # refused before anything was installed; the run in progress is not ours to undo
        except BaseException:
            self._started = False
            self._release()
            raise

    def _claim(self) -> None:
        """Become the active run, after cleaning up what an interrupted run of ours left."""
        global _active
        with _active_lock:
            if _active is not None and _active._abandoned():
                _active._abandon()
            if _active is not None:
                raise NestedProfileError(
                    "a profiled cell is already running; %%torchprofile cannot be nested (remove the inner one)"
                )
            _turn_off_left_profiler()
            if _torch_profiler_on():
                raise NestedProfileError(
                    "another torch profiler is running; stop it (exit its `with` block) before %%torchprofile"
                )
            _active = self

    def _start(self) -> None:
        global _profiler_ours
        prof = self._profiler()
        self.hooks.install()
        self._stderr.start()
        self._t_start = time.perf_counter()
        self._cpu_start = cpu_use()
        if self._cycle_rows is not None:
            self._cycle_rows.load_from(self._cpu_start)
        self._cell_thread = threading.get_ident()
        self.sampler.start()
        _profiler_ours = True
        prof.start()
        self._prof = prof  # only a started profiler is stepped and stopped
        self._profiler_steps.stepped(prof, 0)
        if self.lines is not None:
            self.lines.start()

    def _abandoned(self) -> bool:
        """Whether this active run was left by an interrupted cell: its owner (the frame that
        entered it) is no longer running in the thread that entered it. A nested run's owner
        is on the stack; a run in another thread is that thread's."""
        if self._cell_thread != threading.get_ident():
            return False
        frame: FrameType | None = sys._getframe()
        while frame is not None:
            if frame is self._owner:
                return False
            frame = frame.f_back
        return True

    def _abandon(self) -> None:
        """Undo what an interrupted run left (called with ``_active_lock`` held)."""
        interrupt = self._release()
        if interrupt is not None:
            raise interrupt

    def _transition(self, change: str) -> None:
        """Step or stop torch's profiler. A change that raises anyway (an error inside
        torch, torch's SIGCHLD handler) leaves the profiler half-way, and stopping such a
        profiler crashes kineto: it is dropped, and turned off by ``_cleanup``."""
        if self._prof is None:
            return
        try:
            getattr(self._prof, change)()
        except BaseException:
            self._prof = None
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.finish(exc)

    def finish(self, exc: BaseException | None = None) -> None:
        """Stop the profiler, remove every hook, and make the report (also after an error).

        Ctrl-C is held while the profiler stops and the hooks go. An exception raised
        into this code from outside still leaves a (partial) report: Ctrl-C held until
        the final trace export is done, or torch's SIGCHLD handler reporting a dead
        DataLoader worker, which fires in whatever the main thread runs next. It is
        held, the report built (once more if it struck the build), then re-raised.
        Called again after one cut short before it could hold (``unfinished``), it does
        only what is left; after one that built the report, nothing.
        """
        if self.report is not None:
            return
        with ctrl_c_held() as held:  # a Ctrl-C between the stop and the report waits for the report too
            interrupt = self._release()
            if interrupt is None and held is not None and held.pending is not None:
                interrupt = KeyboardInterrupt()  # pressed while the run stopped: the report says so
            try:
                self.report = self._build_report(_describe_failure(exc, interrupt))
            except BaseException as e:  # noqa: BLE001 - the build is pure: a second try sees the same state
                interrupt = interrupt or e
                self.report = self._build_report(_describe_failure(exc, interrupt))
        if interrupt is not None:
            raise interrupt

    def _release(self) -> BaseException | None:
        """Stop the profiler and undo everything, with Ctrl-C held; what interrupted it, if
        anything, is returned, to be raised once the report exists. A Ctrl-C landing just
        before the hold takes effect, or a stop that raised, skips the clean-up: then it
        runs once more (each step of it is done once, so a second run does only the rest)."""
        interrupt: BaseException | None = None
        if self._released:  # a finish cut short after the clean-up, called again
            return None
        for _ in range(2):
            try:
                with ctrl_c_held():
                    self._stop_profiler()
                    self._cleanup()
            except BaseException as e:  # noqa: BLE001 - returned, for the caller to raise
                interrupt = interrupt or e
            if self._released:
                break
        return interrupt

    def _stop_profiler(self) -> None:
        """Stop torch's profiler (its final export keeps a failure for the report)."""
        try:
            self._transition("stop")
        except Exception as e:  # noqa: BLE001 - the final export failed inside torch: keep the steps
            self._export_error = e

    def _cleanup(self) -> None:
        """Remove every hook, release the process, and make sure torch's profiler is off."""
        global _active
        try:
            try:
                if self.lines is not None:
                    self.lines.stop()
            finally:  # an interrupt while the line tracer stops must not leave the step hooks in place
                self.hooks.remove()
        finally:  # even if interrupted mid-way: a stale _active would refuse every later cell as nested
            self._prof = None
            self._owner = None
            try:
                with _active_lock:
                    if _active is self:
                        _active = None
                    if _active is None:  # while another run is active, the profiler is that run's
                        _turn_off_left_profiler()
            finally:
                self._stderr.stop()
                if self._cycle_rows is not None:  # its thread ends after the cycles queued, finished or not
                    self._cycle_rows.stop()
        self._released = True

    def _build_report(self, error: str | None) -> Any:
        """What ``make_report`` makes of the run's record and its trace."""
        record = self._record(error)
        return self.make_report(record, self._trace)

    def _record(self, error: str | None) -> RunRecord:
        """What the run measured, with the facts its notes tell; writes the trace copy ``--trace`` asks for."""
        wall_s = time.perf_counter() - self._t_start  # the cell's, not the copy's writing below
        others = other_cores(self._cpu_start, cpu_use())
        if self._trace is not None:
            self._write_outputs(self._trace)
        return RunRecord(
            options=self.options,
            device=self._device(),
            steps=self.sampler.frame(),
            loaders=tuple(self.hooks.loaders.values()),
            step_source=self._step_source(),
            error=error,
            cell_source=self.cell_source,
            cell_modules=cell_modules(self.cell_calls, self.namespace),
            cell_filename=self.cell_filename,
            cell_key=self.cell_key,
            notebook=self.notebook,
            line_marks=self.lines.marks() if self.lines is not None and not self.lines.skipped else None,
            sampler_bytes=self.sampler.nbytes(),
            cpu_count=process_cpus(),
            intra_op_threads=torch.get_num_threads(),  # what the loop ran with, if the cell set it
            wall_s=wall_s,
            other_cores=others,
            facts=self._facts(),
            cycles=None if self._cycle_rows is None else self._cycle_rows.table(),
        )

    def _device(self) -> DeviceInfo:
        """The device the run ran on, read once: each cycle's summary and the record share it."""
        if self._device_info is None:
            self._device_info = live_device(self.cuda)
        return self._device_info

    def _facts(self) -> CaptureFacts:
        """What happened during the capture that the report's notes tell: what was not recorded,
        what ended the steps where that is not what the user may assume, and what was not written."""
        boundaries = self._boundaries
        switched = self.options.step_on == "auto" and not self.options.iterations and "optimizer" in boundaries
        cycle = self.hooks.cycles.get(self._cell_thread or 0)
        if cycle is None or not cycle.several or "optimizer" not in boundaries:
            cycle = None  # one optimizer (or none) per iteration: nothing to tell
        return CaptureFacts(
            lines_skipped=self.lines is not None and self.lines.skipped,
            other_thread_steps=self._other_thread_steps,
            export_error=None if self._export_error is None else _describe(self._export_error),
            temp_dir=None if self._export_error is None else tempfile.gettempdir(),
            loader_steps_before_optimizer=boundaries.get("dataloader", 0) if switched else 0,
            optimizers=() if cycle is None else tuple(cycle.names),
            closing_optimizer=None if cycle is None else cycle.closing_name,
            unknown_samples=bool(boundaries.get("manual")) and not any(self.sampler.batches)
            and not any(self.sampler.samples),
            cycles=self._cycles,
            unwritten=tuple(self._unwritten),
        )

    def _write_outputs(self, raw: bytes) -> None:
        if self.options.trace:
            self._write_output("--trace", write_trace, raw, self.options.trace)

    def _write_output(self, flag: str, write: Callable[[bytes, str], Path], raw: bytes, where: str) -> None:
        """Write a copy of the trace the user asked for. Failing to is a note: the run and
        its report stand, and an unwritable path must not lose them."""
        try:
            write(raw, where)
        except OSError as exc:
            self._unwritten.append(UnwrittenOutput(flag, where, _describe(exc)))

    def _step_source(self) -> str:
        if self.options.iterations:
            return "iterations"
        if not self._boundaries:
            return "other thread" if self._other_thread_steps else "none"
        return max(self._boundaries, key=self._boundaries.__getitem__)

    def step(self, samples: int | None = None) -> None:
        if samples is not None and threading.get_ident() == self._cell_thread:
            self.sampler.set_samples(samples)
        self.on_boundary("manual")


class _Profiler(torch.profiler.profile):
    """torch's profiler, without its "Profiler clears events at the end of each cycle"
    warning: with --repeat the report keeps the last cycle and its note says so."""

    def prepare_trace(self) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
            super().prepare_trace()


def _describe_failure(exc: BaseException | None, interrupt: BaseException | None) -> str | None:
    """What stopped the run: the cell's own exception, else what interrupted the finish."""
    failure = exc if exc is not None else interrupt
    return None if failure is None else _describe(failure)


def _describe(exc: BaseException) -> str:
    """``Type: first line of the message``; only the type when the message cannot be had
    (a user exception whose ``__str__`` raises must not cost the report)."""
    try:
        text = str(exc).strip().splitlines()
    except Exception:  # noqa: BLE001 - any failure of the user's __str__
        text = []
    return type(exc).__name__ + (f": {text[0]}" if text else "")


def _torch_profiler_on() -> bool:
    return bool(torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled())


def _turn_off_left_profiler() -> None:
    """Turn off torch's profiler if a run of ours left it on (its stop was interrupted, or
    never came): it would keep its overhead on every later op, refuse every later run as
    "another torch profiler", and crash the interpreter at exit. Never stops the user's."""
    global _profiler_ours
    if not _profiler_ours:
        return
    if torch._C._autograd._profiler_enabled():
        torch._C._autograd._disable_profiler()
    torch.autograd.profiler._set_is_profiler_enabled(False)
    _profiler_ours = False


atexit.register(_turn_off_left_profiler)


def _use_cuda(choice: str) -> bool:
    if choice == "cuda":
        if not torch.cuda.is_available():
            raise OptionError("--device",
                              "cuda was asked for, but torch.cuda.is_available() is False; use --device cpu")
        return True
    return choice == "auto" and torch.cuda.is_available()


def live_device(cuda: bool) -> DeviceInfo:
    """The device work runs on in this process: the current CUDA device, else this machine's CPU."""
    if cuda:
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        return DeviceInfo(index=index, name=props.name, kind=kind, total_memory_bytes=int(props.total_memory),
                          compute_capability=(props.major, props.minor), sm_count=props.multi_processor_count)
    name = platform.processor() or platform.machine() or "CPU"
    return DeviceInfo(index=-1, name=f"CPU ({name}, {os.cpu_count()} cores)", kind="cpu",
                      total_memory_bytes=int(psutil.virtual_memory().total))


def _undo_hooks_in_forked_child() -> None:
    """A process forked while a run lasts (a DataLoader worker) is not that run: it gets
    torch's own classes and hooks back, so nothing of nbprofiler runs in its batches."""
    global _active
    run, _active = _active, None  # no lock: another thread may have held it at the fork
    if run is not None:
        try:
            run.hooks.remove()
        except Exception:  # noqa: BLE001, S110 - a worker must start even if an undo failed
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_undo_hooks_in_forked_child)


def current_run() -> ProfileRun | None:
    """The run in progress in this process. A DataLoader worker forked during a run is
    not that run (the fork clears ``_active``; the pid check covers a fork that ran no
    at-fork handlers), so ``nbprofiler.step()`` there does nothing."""
    run = _active
    return run if run is not None and run.hooks.owner_pid == os.getpid() else None
