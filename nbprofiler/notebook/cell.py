"""A cell's code run as IPython runs a cell, for the magic to run it under capture.

The magic cannot hand its body to ``run_cell``: the body must run in the magic's frame, between
the start and the end of a run, and be one step per run with ``-n``. So it compiles the body as
``InteractiveShell.run_cell`` does (%magics and !commands, the shell's AST transformers,
top-level ``await``, the last expression's value as the output), runs it on IPython's event
loop when it awaits, and shows the user's frames, not nbprofiler's, in a traceback.
"""
from __future__ import annotations

import ast
import asyncio
import inspect
from collections.abc import Coroutine
from dataclasses import dataclass
from types import CodeType, TracebackType
from typing import Any

from IPython.core.displayhook import DisplayHook


@dataclass(frozen=True)
class Cell:
    """A cell compiled as IPython compiles one: its %magics and !commands turned into
    calls, the shell's AST transformers applied, top-level ``await`` allowed (with
    autoawait on), and its last expression kept apart so that its value is the output.

    Every line keeps the number it has in ``source``, what --stack attributes time to.
    """

    source: str  # as the user wrote it
    filename: str
    statements: CodeType | None
    last_expression: CodeType | None  # None when the cell ends in a statement, or in ';'

    @property
    def awaits(self) -> bool:
        return any(code is not None and code.co_flags & inspect.CO_COROUTINE
                   for code in (self.statements, self.last_expression))

    async def run(self, namespace: dict[str, Any]) -> Any:
        """Run the cell once; the value of its last expression, or None."""
        __tracebackhide__ = True
        if self.statements is not None:
            await _evaluate(self.statements, namespace)
        return None if self.last_expression is None else await _evaluate(self.last_expression, namespace)

    def own_frames(self, tb: TracebackType | None) -> TracebackType | None:
        """The traceback from the cell's outermost frame on: the frames before it are
        nbprofiler's, and tracebacks should show the user's code."""
        start = tb
        while start is not None and start.tb_frame.f_code.co_filename != self.filename:
            start = start.tb_next
        return start if start is not None else tb


def compile_cell(shell: Any, source: str) -> Cell:
    """``source`` compiled as ``InteractiveShell.run_cell`` compiles a cell; a SyntaxError
    propagates."""
    transformed = shell.transform_cell(source)
    # IPython drops a cell's leading blank lines; put them back, so that each line keeps its number.
    dropped = _leading_blank_lines(source) - _leading_blank_lines(transformed)
    transformed = "\n" * max(dropped, 0) + transformed
    filename = shell.compile.cache(transformed, raw_code=source)
    tree = shell.transform_ast(shell.compile.ast_parse(transformed, filename=filename))
    body = list(tree.body)
    last = None
    if body and isinstance(body[-1], ast.Expr) and not DisplayHook.semicolon_at_end_of_expression(transformed):
        last = ast.Expression(body.pop().value)
    with shell.compile.extra_flags(ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if shell.autoawait else 0):
        statements = shell.compile(ast.Module(body, []), filename, "exec") if body else None
        last_expression = shell.compile(last, filename, "eval") if last is not None else None
    return Cell(source, filename, statements, last_expression)


def _leading_blank_lines(text: str) -> int:
    lines = text.splitlines()
    return next((i for i, line in enumerate(lines) if line.strip()), len(lines))


async def _evaluate(code: CodeType, namespace: dict[str, Any]) -> Any:
    __tracebackhide__ = True
    result = eval(code, namespace)  # noqa: S307 - the user's own cell
    return await result if code.co_flags & inspect.CO_COROUTINE else result


def _run_to_end(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that awaits nothing that suspends (a cell without ``await``) in this
    frame, without an event loop, as IPython's pseudo-sync runner does."""
    __tracebackhide__ = True
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise AssertionError("a profiled cell without await was suspended")


def run_as_ipython(shell: Any, running: Coroutine[Any, Any, Any], awaits: bool) -> Any:
    """Run ``running`` (a cell's code, with what wraps it) as IPython runs a cell; its value.
    A cell that awaits runs on IPython's event loop: when that loop already runs in this
    thread (a kernel), the awaitable is returned, for the caller's cell to await."""
    __tracebackhide__ = True
    if not awaits:
        return _run_to_end(running)
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop runs in this thread: run it as IPython runs an awaiting cell
        return shell.loop_runner(running)
    return running
