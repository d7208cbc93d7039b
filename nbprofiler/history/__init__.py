"""The run history: every profiled run kept in a local SQLite file, to list, reload and compare.

``nbprofiler.history()`` lists the kept runs (``nbprofiler.history(cell=...)`` one cell's),
``nbprofiler.stored_run(run_id)`` reloads one as a Report, ``previous_run(cell)`` finds a
cell's latest for ``%%torchprofile --compare``, and ``keep`` is how each run gets there.

The file is ``NBPROFILER_HISTORY``, else ``$XDG_DATA_HOME/nbprofiler/history.sqlite``
(location.py); its schema and migrations are in schema.py, what a run keeps in record.py,
how several kernels share the file in store.py, the reloaded Report in stored.py.

``nbprofiler.history`` is both this package and the function that lists the runs: the
module is callable, so ``nbprofiler.history()`` and ``nbprofiler.history.keep`` both read
as they are meant.
"""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from .location import ENV_VAR, history_path
from .record import RunId, keep
from .store import HistoryError
from .stored import history, previous_run, stored_run

if TYPE_CHECKING:
    import pandas as pd

    from ..report import Report

__all__ = ["ENV_VAR", "HistoryError", "RunId", "history", "history_path", "keep", "previous_run", "stored_run"]


class _CallableModule(types.ModuleType):
    def __call__(self, cell: "str | Report | None" = None) -> "pd.DataFrame":
        return history(cell)

    __call__.__doc__ = history.__doc__


sys.modules[__name__].__class__ = _CallableModule
