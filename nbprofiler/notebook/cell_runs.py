"""What happens to a finished run besides showing it: it is kept in the history, remembered
as its cell's latest run, and compared with the run it should be measured against.

``%%torchprofile --compare`` means "did my change help?": the baseline is chosen before
the cell runs (a ``-o run --compare run`` cell compares with the ``run`` it is about to
replace), and the comparison is made after it, from the two Reports. This kernel's own
latest run of the cell comes first, with its whole trace; after a kernel restart the
history still has it, with the tables it kept.
"""
from __future__ import annotations

import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..errors import OptionError
from ..history import keep as keep_in_history
from ..history import previous_run
from ..report import Report
from ..report.comparison import Comparison
from .option_names import is_variable_name

_REMEMBERED_CELLS = 8  # the cells whose latest Report this kernel holds (each holds its trace)
_latest: "OrderedDict[str, Report]" = OrderedDict()
_last_comparison: Comparison | None = None


@dataclass(frozen=True)
class Baseline:
    """The report a new run is compared with, and what to call it."""

    report: Report
    label: str


def baseline(namespace: dict[str, Any], variable: str | None, cell: str) -> Baseline | None:
    """The run ``--compare`` names: the Report in ``variable``, or with ``variable`` empty,
    this cell's previous run (this kernel's, else the history's). None when the cell has no
    earlier run; an ``OptionError`` when ``variable`` holds no Report."""
    if variable:
        if not is_variable_name(variable):  # never offered as `-o NAME` to paste
            raise OptionError("--compare", f"{variable!r} is not a valid variable name: name the variable a run's "
                                           "report was stored in with -o")
        if variable not in namespace:
            raise OptionError("--compare", f"there is no variable {variable!r} in the notebook; store a run's "
                                           f"report in it with -o {variable}")
        value = namespace[variable]
        if not isinstance(value, Report):
            raise OptionError("--compare", f"{variable!r} holds a {type(value).__name__}, not an nbprofiler Report "
                                           f"(store one with -o {variable})")
        return Baseline(value, variable)
    if cell in _latest:
        return Baseline(_latest[cell], "the previous run of this cell")
    stored = previous_run(cell)
    return Baseline(stored, "the previous run of this cell (from the history)") if stored is not None else None


def finished(report: Report, keep: bool) -> None:
    """Remember ``report`` as its cell's latest run, and keep it in the history unless ``keep``
    is off (``--no-history``). A history that cannot be written says so in one line, and the
    run is unaffected."""
    if not report.ran_live:
        return
    cell = report.cell_key
    if cell is not None:
        _latest[cell] = report
        _latest.move_to_end(cell)
        while len(_latest) > _REMEMBERED_CELLS:
            _latest.popitem(last=False)
    if keep:
        keep_in_history(report, cell=cell, notebook=report.notebook)


def compared(before: Baseline, after: Report, tried: str | None) -> Comparison | None:
    """``after`` compared with ``before``; None, with a one-line note, if the comparison
    could not be made: the run and its report stand whatever happens here."""
    global _last_comparison
    try:
        comparison = Comparison(before.report, after, before_label=before.label, after_label="this run", tried=tried)
        comparison.verdict  # noqa: B018 - made now, so that a comparison that cannot be made fails here, not in the display
    except Exception as exc:  # noqa: BLE001 - the run's report is shown already and must not be lost
        print(f"nbprofiler: the comparison with {before.label} could not be made "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return None
    _last_comparison = comparison
    return comparison


def last_comparison() -> Comparison | None:
    """The comparison the latest ``--compare`` run made."""
    return _last_comparison
