"""Profile code and make its report: the capture, then the report, then what follows.

``nbprofiler.profile`` and ``%%torchprofile`` run code under one capture
(``capture.session.ProfileRun``), made by ``live_run``. As the run finishes, with Ctrl-C
still held, the capture hands its record and trace to ``_report``: the DataLoaders the
advice may rebuild are checked (``measure.loader_check``), the Report is made and becomes
``nbprofiler.last()``, so a second Ctrl-C landing as the run stops never costs the report.
What follows a finished run (kept in the history, remembered as its cell's latest) is
``cell_runs.finished``: ``profile`` calls it here, the magic after it has shown the report.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from ..advice.cell_names import called_names
from ..capture.session import ProfileRun
from .cell_runs import finished
from ..errors import OptionError
from ..measure.loader_check import check_rebuilt_loaders
from ..options import ProfileOptions
from ..history.measurements import SetUp, measured_for
from ..records import RunRecord, source_fingerprint
from ..report import Report
from ..report.cycle_summary import cycle_summary

_last_report: Report | None = None


def live_run(options: ProfileOptions, namespace: dict[str, Any] | None = None, cell_source: str | None = None,
             cell_filename: str | None = None, on_step: Callable[[ProfileRun], None] | None = None,
             cell_key: str | None = None, notebook: str | None = None) -> ProfileRun:
    """A run of code under ``options`` whose finish makes its Report (``run.report``); with a
    cell's ``namespace`` and ``source``, the names the cell calls are watched for its model."""
    return ProfileRun(options, functools.partial(_report, namespace), namespace=namespace, cell_source=cell_source,
                      cell_filename=cell_filename, on_step=on_step, cell_key=cell_key, notebook=notebook,
                      cell_calls=tuple(called_names(cell_source)), summarize_cycle=cycle_summary)


def _report(namespace: Mapping[str, Any] | None, run: RunRecord, trace: bytes | None) -> Report:
    """The run's Report, made while the capture holds Ctrl-C (``ProfileRun.finish``): the rebuilt
    loaders checked first, since the advice reads what the check found."""
    global _last_report
    check_rebuilt_loaders(run, namespace)
    if run.options.history:  # what the history measured of this cell or set-up, which the advice quotes
        run.measured = measured_for(set_up_of(run, namespace))
    _last_report = Report.from_live(None, run, raw_trace=trace)
    return _last_report


def set_up_of(run: RunRecord, namespace: Mapping[str, Any] | None) -> SetUp:
    """What a profiled run ran, as measurements are matched to it: its cell, the modules the cell
    calls (``run.cell_modules``), the loader that gave the most batches."""
    modules = [namespace[name] for name in run.cell_modules or () if namespace and name in namespace]
    main = max(run.loaders, key=lambda r: r.batches) if run.loaders else None
    return SetUp(cell=run.cell_key, cell_source=source_fingerprint(run.cell_source) if run.cell_source else None,
                 device=run.device.name, torch=torch.__version__, models=fingerprints(modules),
                 loader=main.setup_name if main is not None else None)


def fingerprints(modules: Iterable[nn.Module]) -> tuple[str, ...]:
    """Each module as "Class(N parameters)", sorted, each once: how a measurement names what it trained."""
    return tuple(sorted({f"{type(m).__qualname__}({sum(p.numel() for p in m.parameters()):,} parameters)"
                         for m in modules}))


def last_report() -> Report | None:
    """The most recent live run's Report in this process (``nbprofiler.last()``)."""
    return _last_report


@contextmanager
def profile(options: ProfileOptions | None = None, **kwargs: Any) -> Iterator[ProfileRun]:
    """Profile the ``with`` block; ``run.report`` holds the Report afterwards.

    Takes the same options as ``%%torchprofile`` (as keyword arguments, e.g.
    ``active=5, step_on="manual"``). Steps end on optimizer steps, DataLoader
    batches or ``nbprofiler.step()``, as ``step_on`` says.
    """
    opts = (options or ProfileOptions()).replace(**kwargs) if kwargs else (options or ProfileOptions())
    if opts.iterations is not None:
        raise OptionError("iterations", "a with block runs once, so it cannot be repeated: call nbprofiler.step() "
                                        "at the end of each iteration of your loop, or use %%torchprofile -n N "
                                        "in a cell")
    run = live_run(opts)
    run._owner = sys._getframe(2)  # the frame with the `with` statement (1 is contextlib's __enter__)
    try:
        with run:
            yield run
    finally:
        if run.report is not None:  # kept in the history as the magic's runs are (unless history=False)
            finished(run.report, keep=opts.history)
