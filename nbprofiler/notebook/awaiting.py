"""A ``%%torchprofile`` cell whose body awaits runs on the kernel's event loop: an input
transformer puts ``await`` before the magic's call in such a cell, so that IPython and
ipykernel run the cell as an awaiting one and await what the magic returns.

The transformer reads every cell, so a cell without the magic must run none of nbprofiler's
Python code in it, and a Ctrl-C while a cell is read must not escape the shell.
"""
from __future__ import annotations

import argparse
import ast
import functools
import itertools
import re
import sys
from typing import Any

from IPython.core.getipython import get_ipython
from IPython.utils.process import arg_split

from .command_line import asks_for_help, split_statement


# How IPython writes a ``%%torchprofile`` cell, or a ``%torchprofile`` line that starts a line,
# once its own transforms have run: a call that carries the options and the body as literals.
_MAGIC_CALL = re.compile(r"^get_ipython\(\)\.run_(cell|line)_magic\('torchprofile', ([^\n]*)\)$")


def _awaited_if_it_awaits(parser: argparse.ArgumentParser, call: "re.Match[str]") -> str:
    """The magic's call, behind ``await`` when the magic profiles an awaiting body: IPython and
    ipykernel then run the cell on their event loop and await what the magic returns (the magic
    itself is called from synchronous code, and cannot run an awaiting body on a loop that
    already runs).

    IPython's ``run_cell`` catches only ``Exception`` from a transform, so a Ctrl-C while
    this reads the cell would escape the shell: the cell raises it when it runs instead,
    as if the interrupt had come a moment later. Reading the body once more (to see whether
    it awaits) comes back here for a ``%torchprofile`` line in it: that reading leaves the
    Ctrl-C to this outer one, so that it is not lost in the body's text."""
    try:
        return f"await {call.group()}" if _awaits(parser, call) else call.group()
    except KeyboardInterrupt:
        if _reading_a_body(sys._getframe(1)):
            raise
        return "raise KeyboardInterrupt  # Ctrl-C as the cell was read, before it ran"


def _awaits(parser: argparse.ArgumentParser, call: "re.Match[str]") -> bool:
    """Whether the magic call ``call`` (see ``_MAGIC_CALL``) profiles an awaiting body."""
    shell = get_ipython()
    cell = call.group(1) == "cell"
    try:
        arguments = ast.literal_eval(f"({call.group(2)},)")
    except Exception:  # noqa: BLE001 - a line that only looks like the call IPython writes: left as it is
        return False
    if shell is None or len(arguments) != (2 if cell else 1) or not all(isinstance(a, str) for a in arguments):
        return False
    options, body = arguments if cell else split_statement(arguments[0], parser)
    return _profiles_an_await(shell, options, body)


def _reading_a_body(frame: Any) -> bool:
    """Whether ``frame`` runs inside another reading of ``_awaited_if_it_awaits``."""
    while frame is not None:
        if frame.f_code is _awaited_if_it_awaits.__code__:
            return True
        frame = frame.f_back
    return False


class _AwaitingMagics(functools.partial):  # type: ignore[type-arg]
    """The input transformer: each line of a transformed cell through ``_MAGIC_CALL.sub``, which
    calls ``_awaited_if_it_awaits`` for a line of the magic only. Every step of it is
    C code (``partial``, ``map``, ``re``), so a cell without the magic runs none of
    nbprofiler's Python, and a Ctrl-C while it is read lands in IPython's code, as without
    nbprofiler. It returns an iterator, which IPython joins into the cell's text: it must be
    the last of the shell's ``input_transformers_post``, after IPython has turned the magic
    into its call."""


def install(shell: Any, parser: argparse.ArgumentParser) -> None:
    """Add the transformer to ``shell``, last; ``parser`` reads a ``%torchprofile`` line's options."""
    reading = functools.partial(_awaited_if_it_awaits, parser)
    shell.input_transformers_post.append(_AwaitingMagics(map, _MAGIC_CALL.sub, itertools.repeat(reading)))


def remove(shell: Any) -> None:
    """Take the transformer off ``shell``; by class name, so that one from an earlier import of
    this module (``importlib.reload``) goes too."""
    shell.input_transformers_post[:] = [
        t for t in shell.input_transformers_post
        if (type(t).__module__, type(t).__name__) != (__name__, _AwaitingMagics.__name__)
    ]


def _profiles_an_await(shell: Any, options: str, code: str) -> bool:
    """Whether the magic, given ``options``, profiles ``code`` as an awaiting cell, and so
    returns an awaitable (-h runs nothing, and returns none)."""
    try:
        if asks_for_help(arg_split(options, posix=True)) or not code.strip():
            return False
        return shell.should_run_async(code, transformed_cell=shell.transform_cell(code))
    except Exception:  # noqa: BLE001 - options or code the magic cannot read: it reports them when it runs
        return False
