"""Time per line of the profiled cell: which line of *your* cell costs the time.

Each torch op is billed to the cell line that was running when the op began,
as ``LineMarks`` recorded it (see ``capture/lines.py`` for why the trace alone
cannot say). The marks follow the innermost frame of the cell's own file, so:

- ops in a loop body add up on their body line over every iteration, and the
  DataLoader fetch at the top of each iteration goes to the ``for`` line;
- ops inside a function defined in this cell go to the line of that function
  that ran them;
- ops in model code from a module, or in a function defined in an earlier
  cell, go to the line of this cell that called into that code;
- the backward pass, which on CUDA runs on autograd's own thread, goes to the
  ``loss.backward()`` line, since that is the line running while it executes.

Each stretch of op time is billed once. An op whose nested ops all began on
its own line is billed whole (its total host time, and all the device work it
and they launched). A range that spans lines, such as a ``record_function``
block around several lines of the cell, keeps only its self time on the line
where it began, and the ops inside it are billed on their own lines. So the
host time of a line is the time torch ops ran for it, and its device time the
device work those ops launched.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..records import NOT_IN_CELL, LineMarks
from .intervals import depth
from .operators import OperatorTree

LINE_COLUMNS = ["line", "source", "host_us", "device_us"]


def line_at(marks: LineMarks, ts_us: np.ndarray, base_ns: int) -> np.ndarray:
    """The cell line running at each trace timestamp (µs), or ``NOT_IN_CELL``."""
    if len(marks) == 0:
        return np.full(len(ts_us), NOT_IN_CELL, dtype=np.int64)
    # Integer nanoseconds first, so the 1e18-sized Unix values lose no precision.
    mark_us = (marks.times_ns - np.int64(base_ns)).astype(np.float64) / 1e3
    k = np.searchsorted(mark_us, ts_us, side="right") - 1
    out = np.full(len(ts_us), NOT_IN_CELL, dtype=np.int64)
    ok = k >= 0
    out[ok] = marks.lines[k[ok]]
    return out


def _one_line(line: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """For each op, whether it and every op nested in it began on the same line."""
    same = np.ones(len(line), dtype=bool)
    level = depth(parent)
    for d in range(int(level.max(initial=0)), 0, -1):
        child = np.flatnonzero(level == d)
        differs = ~same[child] | (line[child] != line[parent[child]])
        same[parent[child[differs]]] = False
    return same


def cell_lines(tree: OperatorTree, marks: LineMarks, source: str, base_ns: int) -> pd.DataFrame:
    """One row per cell line that ran torch ops: ``line, source, host_us, device_us``.

    Sorted by device time when the run has any, else by host time, largest first.
    """
    line = line_at(marks, tree.start, base_ns)
    whole = _one_line(line, tree.parent)
    inside_whole = np.zeros(len(line), dtype=bool)
    has_parent = tree.parent >= 0
    inside_whole[has_parent] = whole[tree.parent[has_parent]]
    billed_whole = whole & ~inside_whole
    # A range spanning lines is billed its own time with the runtime calls it made (table self time leaves them out).
    host = np.where(billed_whole, tree.dur, np.where(whole, 0.0, tree.host_self_us + tree.runtime_us))
    device = np.where(billed_whole, tree.device_total_us, np.where(whole, 0.0, tree.device_self_us))
    keep = (line != NOT_IN_CELL) & ((host > 0) | (device > 0))
    frame = pd.DataFrame({"line": line[keep], "host_us": host[keep], "device_us": device[keep]})
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in
                             zip(LINE_COLUMNS, ("int64", "object", "float64", "float64"))})
    out = frame.groupby("line", sort=True).sum().reset_index()
    text = source.splitlines()
    out.insert(1, "source", [text[n - 1] if 0 < n <= len(text) else "" for n in out["line"]])
    key = "device_us" if out["device_us"].sum() > 0 else "host_us"
    return out.sort_values([key, "line"], ascending=[False, True], kind="stable").reset_index(drop=True)
