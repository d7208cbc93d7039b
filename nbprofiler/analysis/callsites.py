"""One operator up close: the kernels it launched and where it was called from.

The explorer shows this when a user selects an operator, so it is computed for
one operator at a time, on demand.

Kernels: every device activity launched by a call of the operator or by any op
nested inside it (``aten::linear`` launches its GEMM through ``aten::addmm``).

Call sites (with ``--stack``): for each call, the cell line that was running
(``LineMarks``) and the innermost Python frame around it that is the user's
own code, outside torch, as torch's Python tracer names it
(``model.py(12): forward``; the number is the line of the ``def``). Frames of
the cell itself are the line already, so they are not repeated.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..records import NOT_IN_CELL, LineMarks
from ..trace.table import Kind
from .frames import frame_file, user_frame
from .intervals import climb, parent_index
from .lines import line_at
from .modules import nearest_below
from .operators import OperatorTree

KERNEL_COLUMNS = ["kernel", "calls", "total_us"]
CALL_SITE_COLUMNS = ["line", "source", "called_from", "calls", "host_us", "device_us"]


def operator_mask(tree: OperatorTree, name: str, input_shapes: str | None = None) -> np.ndarray:
    """Which positions of ``tree.index`` are calls of ``name`` (with these input shapes),
    counted as the operator table counts them: one nested in a same-name call is part of it."""
    t = tree.table
    codes = np.flatnonzero(t.names == name)
    mask = np.isin(t.name_code[tree.index], codes) & tree.is_call
    if input_shapes is not None and t.input_dims is not None:
        dims = t.input_dims[tree.index]
        mask &= np.array([(d.decode("utf-8", "replace") if d is not None else "") == input_shapes for d in dims])
    return mask


def operator_kernels(tree: OperatorTree, mask: np.ndarray) -> pd.DataFrame:
    """Device activities launched under the selected calls: ``kernel, calls, total_us``."""
    under = climb(tree.parent, tree.launcher, lambda _, nodes: ~mask[nodes])[0] >= 0
    t = tree.table
    events = tree.device_events[under]
    if len(events) == 0:
        return pd.DataFrame({c: pd.Series(dtype=d) for c, d in zip(KERNEL_COLUMNS, ("object", "int64", "float64"))})
    frame = pd.DataFrame({"kernel": t.names[t.name_code[events]], "total_us": t["dur"][events]})
    out = frame.groupby("kernel", sort=False)["total_us"].agg(["size", "sum"]).reset_index()
    out.columns = KERNEL_COLUMNS
    return out.sort_values("total_us", ascending=False, kind="stable").reset_index(drop=True)


class CallSites:
    """Python frames around every op of one trace, for ``call_sites`` of any operator."""

    def __init__(self, tree: OperatorTree, cell_filename: str | None) -> None:
        t = tree.table
        self.tree = tree
        py = np.flatnonzero(t.kind == Kind.PYTHON_FUNCTION)
        start = t["ts"][py]
        thread = t.thread[py]
        parent = parent_index(np.concatenate([start, tree.start]), np.concatenate([start + t["dur"][py], tree.end]),
                              np.concatenate([thread, tree.thread]))
        n = len(py)
        self.frame_parent = nearest_below(parent[:n], parent, n)
        self.op_frame = nearest_below(parent[n:], parent, n)
        codes = t.name_code[py]
        self.frame_names = t.names[codes]
        # Judged once per distinct name, not per frame: a --stack trace repeats its frames.
        in_cell = np.array([cell_filename is not None and frame_file(n) == cell_filename for n in t.names], dtype=bool)
        user = np.array([user_frame(n) is not None for n in t.names], dtype=bool)
        self.in_cell = in_cell[codes]
        self.is_user = user[codes] & ~self.in_cell

    @property
    def has_frames(self) -> bool:
        return len(self.frame_names) > 0

    def called_from(self, ops: np.ndarray) -> list[str]:
        """The innermost user frame outside torch around each op, "" when the cell itself called it."""
        stop = self.is_user | self.in_cell
        frame = climb(self.frame_parent, self.op_frame[ops], lambda _, frames: ~stop[frames])[0]
        found = frame >= 0
        found[found] = self.is_user[frame[found]]
        out = np.full(len(ops), "", dtype=object)
        out[found] = self.frame_names[frame[found]]
        return out.astype(str).tolist()

    def call_sites(self, mask: np.ndarray, marks: LineMarks | None, base_ns: int, source: str) -> pd.DataFrame:
        """Per (cell line, calling frame): ``line, source, called_from, calls, host_us, device_us``."""
        tree = self.tree
        ops = np.flatnonzero(mask)
        lines = line_at(marks, tree.start[ops], base_ns) if marks is not None else np.full(len(ops), NOT_IN_CELL)
        frame = pd.DataFrame({
            "line": lines,
            "called_from": self.called_from(ops),
            "host_us": tree.dur[ops],
            "device_us": tree.device_total_us[ops],
        })
        out = frame.groupby(["line", "called_from"], sort=False).agg(
            calls=("host_us", "size"), host_us=("host_us", "sum"), device_us=("device_us", "sum")).reset_index()
        text = source.splitlines()
        out.insert(1, "source", [text[n - 1] if 0 < n <= len(text) else "" for n in out["line"]])
        key = "device_us" if out["device_us"].sum() > 0 else "host_us"
        return out[CALL_SITE_COLUMNS].sort_values(key, ascending=False, kind="stable").reset_index(drop=True)
