"""nbprofiler: ``%%torchprofile`` for PyTorch notebooks.

``%load_ext nbprofiler`` adds the magic; ``nbprofiler.profile`` is the same
capture for scripts; ``nbprofiler.load`` reads trace files into the same Report.
"""
from __future__ import annotations

from typing import Any

from .advice import Suggestion, batch_size_curve, tune_dataloader
from .capture.session import current_run, last_report, profile
from .errors import NbprofilerError, NestedProfileError, OptionError, TraceError
from .options import ProfileOptions
from .report import Report
from .report.load import load

__version__ = "0.1.0"
__all__ = [
    "profile", "load", "last", "step", "Report", "ProfileOptions",
    "TraceError", "OptionError", "NestedProfileError", "NbprofilerError",
    "Suggestion", "tune_dataloader", "batch_size_curve",
]


def step() -> None:
    """End the current profiler step (use with ``--step-on manual``; always counts)."""
    run = current_run()
    if run is not None:
        run.step()


def last() -> Report | None:
    """The most recent Report, also when ``-o`` was not given."""
    return last_report()


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the built extension (used by ``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "nbprofiler"}]


def load_ipython_extension(ipython: Any) -> None:
    from .magic import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magic import unload_ipython_extension as _unload

    _unload(ipython)
