"""Profiler steps as the trace records them (``ProfilerStep#N`` ranges).

A trace with no step annotations is one step covering all host activity, and
``synthetic`` says so, so the report can tell the user instead of guessing.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..trace.table import EventTable, Kind
from .event_kinds import of_kind

_STEP_NAME = re.compile(r"^ProfilerStep#(\d{1,18})$")  # longer numbers would overflow int64: no step
STEP_COLUMNS = ["step", "start_us", "end_us", "pid", "tid", "synthetic"]
# The range torch.profiler records around each DataLoader fetch:
# "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" (or _MultiProcessing...).
DATALOADER_PREFIX, DATALOADER_SUFFIX = "enumerate(DataLoader)#", ".__next__"


def dataloader_names(table: EventTable) -> np.ndarray:
    """Per name code, whether the name is a DataLoader fetch range."""
    names = pd.Series(table.names, dtype=object).astype(str)
    return (names.str.startswith(DATALOADER_PREFIX) & names.str.endswith(DATALOADER_SUFFIX)).to_numpy(dtype=bool)


def profiler_steps(table: EventTable) -> pd.DataFrame:
    """One row per ``ProfilerStep#N`` range, host time only, sorted by start."""
    names = pd.Series(table.names, dtype=object)
    step_numbers = names.str.extract(_STEP_NAME, expand=False)
    is_step_name = step_numbers.notna().to_numpy()
    host = of_kind(table.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION))
    mask = host & is_step_name[table.name_code]
    if mask.any():
        ts, dur = table["ts"][mask], table["dur"][mask]
        df = pd.DataFrame(
            {
                "step": step_numbers.to_numpy()[table.name_code[mask]].astype(np.int64),
                "start_us": ts,
                "end_us": ts + dur,
                "pid": table["pid"][mask],
                "tid": table["tid"][mask],
                "synthetic": False,
            }
        )
        # One range per step number: a duplicate (several threads) keeps the longest.
        df = df.sort_values(["step", "end_us"]).drop_duplicates("step", keep="last")
        return df.sort_values("start_us").reset_index(drop=True)
    hosts = of_kind(table.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, Kind.RUNTIME))
    if not hosts.any():
        hosts = table.kind != Kind.TRACE_SPAN
    ts, end = table["ts"][hosts], table["ts"][hosts] + table["dur"][hosts]
    if len(ts) == 0:
        return pd.DataFrame(columns=STEP_COLUMNS)
    return pd.DataFrame(
        {"step": [0], "start_us": [ts.min()], "end_us": [end.max()], "pid": [-1], "tid": [-1], "synthetic": [True]}
    )


def step_of(ts: np.ndarray, steps: pd.DataFrame) -> np.ndarray:
    """The step number each timestamp falls in, or -1 outside every step."""
    if steps.empty:
        return np.full(len(ts), -1, dtype=np.int64)
    starts = steps["start_us"].to_numpy()
    ends = steps["end_us"].to_numpy()
    i = np.searchsorted(starts, ts, side="right") - 1
    ok = (i >= 0) & (ts < ends[np.clip(i, 0, None)])
    out = np.full(len(ts), -1, dtype=np.int64)
    out[ok] = steps["step"].to_numpy()[i[ok]]
    return out
