"""A range around each call of the ``nn.Module``s the cell calls by name, on every run.

The torch.compile advice compiles the cell's model and counts the time spent inside
it: a cell that featurises its data in Python, then calls its model, gains nothing
from compiling the featuriser (dynamo breaks its graph on the Python). The default
trace has no module ranges (``--modules`` and ``with_stack`` cost too much to be on
by default), so each module the cell calls by a name of the user's namespace gets
two hooks of its own, opening and closing a ``record_function`` range named
``nbprofiler.model: <name>``; its submodules keep torch's hook-free fast path, so
a step pays two hooks per call of the model. The run record keeps which of the
names the cell calls are modules (``RunRecord.cell_modules``), for the code.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.profiler import record_function

from ..trace.module_names import MODEL_PREFIX
from .module_ranges import _ALWAYS_CALL, _compiling


def cell_modules(called: tuple[str, ...], namespace: dict[str, Any] | None) -> tuple[str, ...]:
    """The names the cell calls (``model(x)``: ``called``, read off its source by ``advice.cell_names``)
    that are ``nn.Module`` instances in ``namespace``."""
    if not namespace:
        return ()
    return tuple(name for name in called if isinstance(namespace.get(name), nn.Module))


def install_model_ranges(names: tuple[str, ...], namespace: dict[str, Any], is_mine: Callable[[], bool],
                         on_undo: Callable[[Callable[[], None]], None]) -> None:
    """Hook each module ``names`` holds in ``namespace`` (once, should two names hold one), handing
    each undo to ``on_undo``."""
    hooked: set[int] = set()
    for name in names:
        module = namespace[name]
        if id(module) in hooked:
            continue
        hooked.add(id(module))
        open_ranges: list[record_function | None] = []

        def enter(_module: nn.Module, _args: Any, label: str = MODEL_PREFIX + name,
                  stack: list[record_function | None] = open_ranges) -> None:
            if _compiling() or not is_mine():
                return
            rf = record_function(label) if recording() else None
            if rf is not None:
                rf.__enter__()
            stack.append(rf)

        def leave(_module: nn.Module, _args: Any, _out: Any,
                  stack: list[record_function | None] = open_ranges) -> None:
            if stack and not _compiling():
                rf = stack.pop()
                if rf is not None:
                    rf.__exit__(None, None, None)

        on_undo(module.register_forward_pre_hook(enter).remove)
        on_undo(module.register_forward_hook(leave, **_ALWAYS_CALL).remove)
        on_undo(functools.partial(_close, open_ranges))


def recording() -> bool:
    """Whether torch's profiler records now: a range opened outside its active steps is never
    kept, and costs the step its opening and closing (about 25 µs a call of the model on a
    CPU), so a run that profiles 3 steps in 200 opens ranges in those 3 only. The schedule
    changes phase at step boundaries, never inside a call of the model."""
    return bool(torch.autograd.profiler._is_profiler_enabled)


def _close(stack: list[record_function | None]) -> None:
    """Close what a ``BaseException`` (Ctrl-C) left open: torch runs no hook for it."""
    while stack:
        rf = stack.pop()
        if rf is not None:
            rf.__exit__(None, None, None)
