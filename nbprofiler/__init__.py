"""nbprofiler: ``%%torchprofile`` for PyTorch notebooks.

``%load_ext nbprofiler`` adds the magic; ``nbprofiler.profile`` is the same
capture for scripts; ``nbprofiler.load`` reads trace files into the same Report.
"""
from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

from . import history  # a callable module: nbprofiler.history() lists the kept runs
from .advice.suggestion import Suggestion
from .errors import NbprofilerError, NestedProfileError, OptionError, TraceError
from .history import stored_run
from .options import ProfileOptions
from .report import Report
from .report.comparison import Comparison, compare
from .report.load import load

__version__ = "0.1.0"
__all__ = [
    "profile", "load", "last", "last_comparison", "step", "Report", "ProfileOptions",
    "TraceError", "OptionError", "NestedProfileError", "NbprofilerError",
    "Suggestion", "tune_dataloader", "batch_size_curve", "history", "stored_run", "compare", "Comparison",
]


# What runs the user's code with torch is imported on first use, so that ``import nbprofiler``
# and ``nbprofiler.load(trace)`` cost no torch import (hundreds of MB, seconds).
_WITH_TORCH = {"profile": ".notebook.profile", "tune_dataloader": ".measure", "batch_size_curve": ".measure"}
_SESSION = __name__ + ".capture.session"
_PROFILE = __name__ + ".notebook.profile"


def __getattr__(name: str) -> Any:
    if name in _WITH_TORCH:
        return getattr(import_module(_WITH_TORCH[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def current_run() -> Any:
    """The run in progress in this process, or None."""
    session = sys.modules.get(_SESSION)  # not imported yet: no run can be in progress
    return session.current_run() if session is not None else None


def step(samples: int | None = None) -> None:
    """End the current profiler step (use with ``--step-on manual``; always counts).

    ``samples``: how many samples the step processed, for samples/s where no DataLoader
    says it (a loop over tensors it made itself); it replaces the count of the step's
    DataLoader batches."""
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 0):
        raise OptionError("samples", f"must be a whole number >= 0, got {samples!r}")
    run = current_run()
    if run is not None:
        run.step(samples)


def last_comparison() -> Any:
    """The Comparison the most recent ``%%torchprofile --compare`` run made, or None."""
    from .notebook.cell_runs import last_comparison as latest

    return latest()


def last() -> Report | None:
    """The most recent Report, also when ``-o`` was not given."""
    profiled = sys.modules.get(_PROFILE)  # not imported yet: no run has finished
    return profiled.last_report() if profiled is not None else None


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the built extension (used by ``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "nbprofiler"}]


def load_ipython_extension(ipython: Any) -> None:
    from .notebook.magic import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook.magic import unload_ipython_extension as _unload

    _unload(ipython)
