"""``report.cycles``: one row per profiler cycle of a ``--every N`` run, and its columns.

The rows are made as the run goes (``report/cycle_summary.py``, on the capture's thread) and kept
in the run's record, so that a saved report and the run history give them back as they were.
"""
from __future__ import annotations

import pandas as pd

from .breakdown import CATEGORIES

PARTS = (*CATEGORIES, "other")  # the breakdown's parts, whose shares of the profiled steps a row holds
CYCLE_COLUMNS = ("cycle", "first_step", "last_step", "step_ms", "samples_per_s", "data_wait_share",
                 "profiled_step_ms", *(f"{part}_share" for part in PARTS), "mem_peak_bytes", "mem_growth_bytes",
                 "mfu", "top_operators", "other_cores", "problem")
# The memory each step of ``report.steps`` records: CUDA's allocated bytes, or the CPU's RSS.
STEP_MEMORY = ("mem_allocated_bytes", "rss_bytes")
_WHOLE = ("cycle", "first_step", "last_step")
_TEXT = ("top_operators", "problem")


def cycle_table(rows: pd.DataFrame | None) -> pd.DataFrame:
    """The run's cycles with every column of ``CYCLE_COLUMNS`` in order (a cycle whose summary
    failed has its numbers missing and its ``problem``); no row for a run without ``--every``."""
    table = pd.DataFrame() if rows is None else rows
    return pd.DataFrame({name: _column(table, name) for name in CYCLE_COLUMNS})


def step_memory(steps: pd.DataFrame) -> str | None:
    """The column of ``steps`` that holds each step's memory (``STEP_MEMORY``), None where none does."""
    return next((name for name in STEP_MEMORY if name in steps), None)


def _column(table: pd.DataFrame, name: str) -> pd.Series:
    if name in table:
        column = table[name].reset_index(drop=True)
    else:
        column = pd.Series([None] * len(table), dtype="object")
    if name in _WHOLE:
        return column.astype("int64")
    if name in _TEXT:
        return column.astype("object").where(column.notna(), None)
    return pd.to_numeric(column, errors="coerce").astype("float64")
