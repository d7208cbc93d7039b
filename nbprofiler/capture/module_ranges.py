"""``--modules``: a ``record_function`` range around each ``nn.Module`` call, named
by the module's qualified name.

Why not torch's own module ranges: its Python tracer (``with_stack``) names a
module by instance (``Linear_3``), which the user cannot map to an attribute of
their model, and it traces every Python call, which costs far more than two
global module hooks called once per module call. The hooks exist only while a
run with ``--modules`` is active (``StepHooks`` installs and removes them).

Names, as ``model.named_modules()`` spells them: an outermost module is its
variable in the user's namespace when it has one, else its class name; a module
called inside it is ``root + "." + name`` from the root's ``named_modules()``;
a module called inside it that is not its submodule is its caller's name plus
its own class name. A root's names are taken once, at its first call: modules
added to it during the run count as not its submodules.

Compiled code (``torch.compile``): when dynamo traces a module call, it traces
the global hooks with it, and a hook that opens a range and keeps it in Python
state fails the user's cell ("already tracked for mutation"). While dynamo
traces, the hooks do nothing, so the compiled graph holds no range and no hook:
a compiled module is one range, from the eager call that runs it (the
``torch.compile(model)`` wrapper), and the modules inside it have none. torch
warns at each such call that global hooks fire for the wrapper too: that is the
range, so the warning is silenced while the hooks are installed.
"""
from __future__ import annotations

import contextlib
import inspect
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.profiler import record_function

from ..trace.module_names import range_name
from .loaders import name_in

# torch < 2.1 has no always_call: a forward that raises then leaves its range open
# until an enclosing module's call returns, or the run ends.
_ALWAYS_CALL = (
    {"always_call": True} if "always_call" in inspect.signature(register_module_forward_hook).parameters else {}
)
_COMPILE_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks on modules"


def _compiling() -> bool:
    """True while dynamo traces. torch.compiler.is_compiling is torch >= 2.3; dynamo's own,
    older, is imported only there (importing dynamo takes about a second)."""
    is_compiling = getattr(torch.compiler, "is_compiling", None)
    if is_compiling is not None:
        return is_compiling()
    from torch._dynamo import is_compiling as dynamo_is_compiling
    return dynamo_is_compiling()


@dataclass
class _Open:
    """A module call in progress on one thread, and its range."""

    module: nn.Module
    name: str
    range: record_function


class ModuleRanges:
    """The global module hooks of one run. ``is_mine`` is false in a process forked
    during the run: the fork removes the hooks there (``session``), and a fork that
    ran no at-fork handlers still records nothing."""

    def __init__(self, namespace: dict[str, Any] | None, is_mine: Callable[[], bool]) -> None:
        self.namespace = namespace
        self._is_mine = is_mine
        # id(root) -> {id(submodule): qualified name}; the roots are kept so no id is reused.
        self._names: dict[int, dict[int, str]] = {}
        self._roots: list[nn.Module] = []
        self._stacks: dict[int, list[_Open]] = {}  # per thread ident: its module calls in progress

    def install(self, on_undo: Callable[[Callable[[], None]], None]) -> None:
        """Register the hooks, handing each undo to ``on_undo`` as soon as it exists."""
        on_undo(self.close_all)
        on_undo(register_module_forward_pre_hook(self._enter).remove)
        on_undo(register_module_forward_hook(self._exit, **_ALWAYS_CALL).remove)
        warnings.filterwarnings("ignore", message=_COMPILE_WARNING, category=UserWarning)
        entry = warnings.filters[0]
        on_undo(lambda: _remove_filter(entry))

    def open_calls(self) -> int:
        """Module ranges open now, on every thread (0 between a run's module calls)."""
        return sum(len(stack) for stack in self._stacks.values())

    def close_all(self) -> None:
        """Close what a ``BaseException`` (Ctrl-C) left open: torch runs no hook for it.
        A forked worker's copies of the parent's open ranges are the parent's to close."""
        if not self._is_mine():
            self._stacks.clear()
            return
        for stack in list(self._stacks.values()):
            _close(stack, 0)

    def _enter(self, module: nn.Module, args: Any) -> None:
        if _compiling() or not self._is_mine():
            return
        stack = self._stacks.setdefault(threading.get_ident(), [])
        name = self._name(module, stack)
        rf = record_function(range_name(name, type(module).__name__))
        rf.__enter__()
        stack.append(_Open(module, name, rf))

    def _exit(self, module: nn.Module, args: Any, output: Any) -> None:
        if _compiling() or not self._is_mine():
            return
        stack = self._stacks.get(threading.get_ident(), [])
        # Its innermost open call; calls above it were left open by a BaseException
        # raised inside them and caught in this module's forward: they end here too.
        for i in range(len(stack) - 1, -1, -1):
            if stack[i].module is module:
                _close(stack, i)
                return

    def _name(self, module: nn.Module, stack: list[_Open]) -> str:
        if not stack:
            return self._root_names(module)[id(module)]
        known = self._root_names(stack[0].module).get(id(module))
        return known if known is not None else f"{stack[-1].name}.{type(module).__name__}"

    def _root_names(self, root: nn.Module) -> dict[int, str]:
        names = self._names.get(id(root))
        if names is None:
            base = name_in(self.namespace, root) or type(root).__name__
            names = {id(m): f"{base}.{n}" if n else base for n, m in root.named_modules()}
            self._names[id(root)] = names
            self._roots.append(root)
        return names


def _remove_filter(entry: Any) -> None:
    """Undo one ``warnings.filterwarnings`` (gone already if the user reset the filters)."""
    with contextlib.suppress(ValueError):
        # A list, as the warnings module documents; typeshed declares it a read-only Sequence.
        cast("list[Any]", warnings.filters).remove(entry)


def _close(stack: list[_Open], down_to: int) -> None:
    while len(stack) > down_to:
        stack.pop().range.__exit__(None, None, None)
