"""Step boundary hooks: optimizer steps, DataLoader batches, ``nbprofiler.step()``;
and with ``--modules`` the module ranges (``module_ranges``).

Everything installed here is removed by ``StepHooks.remove`` (always called,
from a ``finally``, and in a process forked while a cell runs, right at the
fork: see ``session``); every hook also checks the process id (noted again in a
forked child), so a worker that still holds a hook never acts on the parent's profiler.

Optimizer steps end a profiler step *after* ``optimizer.step()`` returns, not
inside it: torch runs its post-step hooks inside the ``Optimizer.step#...``
range, and ending the step there would bill the profiler's own trace export
to the optimizer and make that range straddle two steps. So each optimizer
class's ``step`` gets an outer wrapper, and the global post-step hook only
ends the step itself when no wrapper is around it (an optimizer whose bound
``step`` was captured earlier, e.g. by an LR scheduler). Where several optimizers step
in each loop iteration, only the last of them ends a step (``optimizer_cycle``).
"""
from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _BaseDataLoaderIter

from ..records import LoaderRecord
from .loaders import name_in, samples_in
from .model_calls import cell_modules, install_model_ranges
from .module_ranges import ModuleRanges
from .optimizer_cycle import OptimizerCycle
from .thread_clock import ThreadClock


_ORIGINAL = "_nbprofiler_original"  # on each wrapper: the function it wraps
# This process's id, set again in a forked child as it starts (``os.fork`` runs the at-fork handlers,
# multiprocessing's workers too): each hook asks it, and ``os.getpid`` is a system call, which a
# sandboxed machine makes cost microseconds, three times a step.
_pid = os.getpid()


def _note_fork() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_note_fork)
# The fetches whose thread's clock is read, to tell loading that computes from loading that waits on
# I/O (``LoaderRecord.wait_cpu_share``): the first CLOCKED_FIRST, then one in CLOCKED_EVERY. Its two
# reads of /proc cost a fetch about 13 µs (a step of a 2,000-step loop of a small model on a 2-core
# machine: 244 µs with them, 231 µs without), and a share needs no more than a sample of the fetches.
CLOCKED_FIRST = 64
CLOCKED_EVERY = 8


class StepHooks:
    """Installs the hooks for one profiled cell and reports events to ``listener``.

    ``listener`` gets ``on_boundary(source)`` when a step ends, and
    ``on_fetch(seconds, cpu_seconds, queued_seconds, record, delivered, samples)`` for each fetch
    (its wall time, the CPU time the fetching thread used in it and the time it waited for a
    core, None where unknown: ``thread_clock``; its loader's record; whether it delivered a
    batch, and the samples in it, None where unknown); its ``options.modules``
    and ``namespace`` say whether to record module ranges and how to name the roots, and
    its ``cell_calls`` the names the cell calls (each module among them gets a range of its own).
    """

    def __init__(self, listener: Any, step_on: str) -> None:
        self.listener = listener
        self.step_on = step_on
        self.owner_pid = _pid
        self.loaders: dict[int, LoaderRecord] = {}
        self.saw_optimizer_step = False
        self._fetches_since_boundary = 0
        self._fetches = 0  # every fetch of the run, from any loader: which ones read the thread's clock
        # Per thread: two threads stepping their own optimizers at once must each end
        # their own step, not share one depth counter and one pending flag.
        self._thread = _StepState()
        # Per thread too: which optimizer's step ends a loop iteration (``optimizer_cycle``).
        self.cycles: dict[int, OptimizerCycle] = {}
        self._removers: list[Callable[[], None]] = []
        self.module_ranges: ModuleRanges | None = None
        self.clock: ThreadClock | None = None

    # -- installation -------------------------------------------------------------------
    def install(self) -> None:
        """Install every hook; called in the thread that runs the cell (its fetches are timed)."""
        handle = register_optimizer_step_post_hook(self._after_optimizer_step)
        self._removers.append(handle.remove)
        clock = self.clock = ThreadClock()
        self._removers.append(clock.close)
        for cls in _optimizer_classes():
            if "step" in cls.__dict__:
                self._patch(cls, "step", self._wrap_step)
        self._patch(_BaseDataLoaderIter, "__next__", self._wrap_next)
        self._patch(DataLoader, "__iter__", self._wrap_iter)
        if self.listener.options.modules:
            self.module_ranges = ModuleRanges(self.listener.namespace, self._mine)
            self.module_ranges.install(self._removers.append)
        namespace = self.listener.namespace
        models = cell_modules(self.listener.cell_calls, namespace)
        if models and namespace is not None:
            install_model_ranges(models, namespace, self._mine, self._removers.append)

    def remove(self) -> None:
        """Undo every patch. One undo that raises (Ctrl-C arriving mid-way) does not
        stop the others; the first error is re-raised once all have run."""
        error: BaseException | None = None
        while self._removers:
            try:
                self._removers.pop()()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                error = error or exc
        if error is not None:
            raise error

    def _patch(self, cls: type, attr: str, wrapper: Callable[[Callable], Callable]) -> None:
        """Wrap ``cls.attr``. The undo is registered first, so no interruption can leave a
        wrapper without one; a wrapper an earlier, killed run left (``_ORIGINAL``) is
        replaced rather than wrapped, so it never reports to that dead run."""
        current = cls.__dict__[attr]
        original = getattr(current, _ORIGINAL, current)
        self._removers.append(lambda: setattr(cls, attr, original))
        patched = wrapper(original)
        setattr(patched, _ORIGINAL, original)
        setattr(cls, attr, patched)

    # -- hooks --------------------------------------------------------------------------
    def _mine(self) -> bool:
        return _pid == self.owner_pid

    def _after_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if _pid != self.owner_pid:
            return
        self.saw_optimizer_step = True
        if self.step_on == "optimizer" or (self.step_on == "auto" and self._ends_iteration(optimizer)):
            if self._thread.depth:
                self._thread.pending = True  # ended by the wrapper once step() returns
            else:
                self.listener.on_boundary("optimizer")

    def _ends_iteration(self, optimizer: torch.optim.Optimizer) -> bool:
        """Whether this optimizer's step ends the loop iteration (the last of several optimizers).
        Asked under ``--step-on auto`` only: ``--step-on optimizer`` ends a step at every one."""
        cycle = self.cycles.get(threading.get_ident())
        if cycle is None:
            cycle = self.cycles[threading.get_ident()] = OptimizerCycle()
        return cycle.ends_step(optimizer, lambda: name_in(self.listener.namespace, optimizer)
                               or type(optimizer).__name__)

    def _wrap_step(self, original: Callable) -> Callable:
        hooks = self

        @functools.wraps(original)  # keeps torch's ``hooked`` mark, so torch does not wrap again
        def step(optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
            if _pid != hooks.owner_pid:
                return original(optimizer, *args, **kwargs)
            state = hooks._thread
            state.depth += 1
            try:
                return original(optimizer, *args, **kwargs)
            finally:
                state.depth -= 1
                if state.depth == 0 and state.pending:
                    state.pending = False
                    hooks.listener.on_boundary("optimizer")

        return step

    def _wrap_iter(self, original: Callable) -> Callable:
        hooks = self

        def __iter__(loader: DataLoader):  # noqa: N807 - the patched dunder
            iterator = original(loader)
            if hooks._mine():
                record = hooks.loaders.get(id(loader))
                if record is None:
                    record = hooks.loaders[id(loader)] = LoaderRecord.of(loader)
                    hooks.listener.on_loader(loader, record)
                record.iterations_started += 1
                try:
                    iterator._nbprofiler_record = record
                except AttributeError:  # an iterator type with __slots__: wait time goes unattributed
                    pass
            return iterator

        return __iter__

    def _wrap_next(self, original: Callable) -> Callable:
        hooks = self

        def __next__(iterator: _BaseDataLoaderIter):  # noqa: N807 - the patched dunder
            if _pid != hooks.owner_pid:
                return original(iterator)
            if hooks._fetches_since_boundary and hooks._loader_ends_step():
                hooks.listener.on_boundary("dataloader")
            hooks._fetches += 1
            clock = hooks.clock if hooks._fetches <= CLOCKED_FIRST or not hooks._fetches % CLOCKED_EVERY else None
            began = clock.read() if clock is not None else None
            start = time.perf_counter()
            try:
                batch = original(iterator)
            except StopIteration:
                # The epoch is over: shutting the workers down is no wait for a batch, and the
                # loop's own timer around next() never sees this call.
                raise
            except BaseException:
                hooks._fetched(iterator, start, clock, began, False, None)
                raise
            hooks._fetched(iterator, start, clock, began, True, batch)
            return batch

        return __next__

    def _fetched(self, iterator: _BaseDataLoaderIter, start: float, clock: ThreadClock | None,
                 began: tuple[float, float | None] | None, delivered: bool, batch: Any) -> None:
        """Tell the listener of a fetch that began at ``start``: how long it took, how its thread
        spent it where ``clock`` was read as it began (``began``), and the batch it ``delivered``."""
        seconds = time.perf_counter() - start
        cpu = queued = None
        if clock is not None and began is not None:
            cpu_end, queued_end = clock.read()
            cpu = cpu_end - began[0]
            # The clock is read just outside the wall time (its reads are not the loop's wait): a
            # wait for a core that ends at those reads counts no more than the fetch had.
            if began[1] is not None and queued_end is not None:
                queued = min(queued_end - began[1], max(seconds - cpu, 0.0))
        record: LoaderRecord | None = getattr(iterator, "_nbprofiler_record", None)
        samples = None
        if delivered:
            self._fetches_since_boundary += 1
            if record is not None:
                record.batches += 1
            samples = samples_in(batch, record.batch_size if record is not None else None)
        self.listener.on_fetch(seconds, cpu, queued, record, delivered, samples)

    def _loader_ends_step(self) -> bool:
        """A fetch ends the step that the previous batch started (dataloader-driven steps); asked
        where a batch was fetched since the last boundary."""
        if self.step_on == "dataloader":
            return True
        return self.step_on == "auto" and not self.saw_optimizer_step

    def boundary_passed(self) -> None:
        self._fetches_since_boundary = 0


class _StepState(threading.local):
    """One thread's ``optimizer.step()`` nesting: calls in progress under our wrapper,
    and whether the post-step hook asked for a boundary once the outermost returns."""

    depth = 0
    pending = False


def _optimizer_classes() -> list[type]:
    """Every optimizer class defined so far (torch's and the user's)."""
    seen: list[type] = []
    todo = [torch.optim.Optimizer]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen
