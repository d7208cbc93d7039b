"""nbprofiler: ``%%torchprofile`` for PyTorch notebooks.

``%load_ext nbprofiler`` adds the magic; ``nbprofiler.profile`` is the same
capture for scripts; ``nbprofiler.load`` reads trace files into the same Report.
"""
from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Any, Union

import numpy as np

from . import history  # history is a callable module: nbprofiler.history() lists the kept runs
from .advice.suggestion import Suggestion
from .errors import NbprofilerError, NestedProfileError, OptionError, TraceError
from .history import stored_run
from .notebook import cell_runs
from .options import ProfileOptions
from .report import Report
from .report.comparison import Comparison
from .report.load import load
from .version import __version__ as __version__  # the package's version, one place

__all__ = [
    "profile", "load", "last", "last_comparison", "step", "Report", "ProfileOptions",
    "TraceError", "OptionError", "NestedProfileError", "NbprofilerError",
    "Suggestion", "tune_dataloader", "batch_size_curve", "history", "stored_run", "compare", "Comparison",
]


# What runs the user's code with torch is imported on first use, so that ``import nbprofiler``
# and ``nbprofiler.load(trace)`` cost no torch import (hundreds of MB, seconds).
_WITH_TORCH = {"profile": ".notebook.profile", "tune_dataloader": ".notebook.measured",
               "batch_size_curve": ".notebook.measured"}
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


Side = Union[Report, str, "os.PathLike[str]", int]


def compare(before: Side, after: Side, *, tried: str | None = None,
            before_label: str = "before", after_label: str = "after") -> Comparison:
    """Compare two runs: did the change help, by how much, and is that more than noise?

    ``before`` and ``after`` are each a Report, a path ``nbprofiler.load`` reads (a trace
    file, a TensorBoard directory, a ``.nbprof``), or a run id of ``nbprofiler.history()``.
    ``tried`` names the suggestion kind the change follows (``"dataloader"``): its claim is
    then shown beside the measured speed-up (``stated_vs_measured``).
    """
    return Comparison(_report(before, "before"), _report(after, "after"), before_label, after_label, tried)


def _report(side: Any, which: str) -> Report:
    """One side of ``compare`` as a Report: a run id is looked up here, above the report layer,
    since only the package sees both the reports and the history."""
    if isinstance(side, Report):
        return side
    if isinstance(side, (str, os.PathLike)):
        return load(side)
    if isinstance(side, (int, np.integer)) and not isinstance(side, bool):
        return stored_run(int(side))
    raise TypeError(f"compare: {which} must be a Report, a trace or report path, or a run id of "
                    f"nbprofiler.history(), got {type(side).__name__}")


def last_comparison() -> Any:
    """The Comparison the most recent ``%%torchprofile --compare`` run made, or None."""
    return cell_runs.last_comparison()


def last() -> Report | None:
    """The most recent Report, also when ``-o`` was not given."""
    profiled = sys.modules.get(_PROFILE)  # not imported yet: no run has finished
    return profiled.last_report() if profiled is not None else None


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the built extension (used by ``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "nbprofiler"}]


def load_ipython_extension(ipython: Any) -> None:
    from .notebook.magic import load_ipython_extension as _load  # IPython's magics: imported on %load_ext only

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook.magic import unload_ipython_extension as _unload  # as load_ipython_extension

    _unload(ipython)
