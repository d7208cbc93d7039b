"""Errors a user can cause, each with a one-line message that says what to do.

They live in one module so that the README's troubleshooting table and the code
cannot drift apart: every message is built here.
"""
from __future__ import annotations

import os


class NbprofilerError(Exception):
    """Base of every error nbprofiler raises on purpose."""


class TraceError(NbprofilerError, ValueError):
    """A trace file is missing, unreadable, or not a torch.profiler trace.

    It is a ``ValueError`` so that callers who already guard against bad
    input with ``except ValueError`` keep working.
    """

    def __init__(self, path: str | os.PathLike[str] | None, problem: str) -> None:
        self.path = None if path is None else str(path)
        self.problem = problem
        where = f"{self.path}: " if self.path else ""
        super().__init__(f"{where}{problem}")


class OptionError(NbprofilerError, ValueError):
    """An option given to ``%%torchprofile`` or ``nbprofiler.profile`` is invalid."""

    def __init__(self, option: str, problem: str) -> None:
        self.option = option
        super().__init__(f"{option}: {problem}")


class NestedProfileError(NbprofilerError, RuntimeError):
    """A profile was started while another torch profiler is running."""
