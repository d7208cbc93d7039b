"""Time per ``nn.Module``, forward and backward, host and device, as a tree.

What the trace holds: a live run with ``--modules`` records a
``user_annotation`` range per module call, ``nbprofiler.module: <path> (<Class>)``
(``capture/module_ranges.py``), where ``path`` is the module's qualified name
as ``model.named_modules()`` spells it, such as ``model.enc.0.fc``.

Traces recorded elsewhere have no such ranges. For them, torch's Python tracer
(on with ``with_stack``) records each module call as a ``python_function``
range named ``nn.Module: <Class>_<k>``, where ``k`` numbers the instances of
that class in the order the trace first met them. A module's parent is the
nearest module range around it on its thread, so a module is named by its
path of instances, such as ``Net_0.Sequential_0.Block_1.Linear_1``; these
traces hold no attribute names.

Either way a module's ``parent`` is its path less the last part (the nearest
ancestor that was called, should the profiled window have cut one off).

Forward: a module's host time is the length of its ranges; its device time is
the device work launched by the ops inside it.

Backward: autograd runs a module's backward ops outside any module range,
often on another thread. Each forward op that records a gradient node has a
``Sequence number``; the backward op that evaluates that node
(``autograd::engine::evaluate_function: ...``) carries the same number. So a
backward op belongs to the innermost module around the forward op with its
number. Gradient accumulation (``AccumulateGrad``) has no forward op and
belongs to no module.

Every figure includes the module's submodules.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.module_names import RANGE_PREFIX, parse_range_name
from ..trace.table import MISSING, EventTable, Kind
from .intervals import accumulate_to_ancestors, climb, depth, has_ancestor, parent_index
from .operators import BACKWARD_PREFIX, OperatorTree

MODULE_PREFIX = "nn.Module: "
MODULE_COLUMNS = ["module", "parent", "type", "depth", "calls",
                  "forward_host_us", "forward_device_us", "backward_host_us", "backward_device_us"]


def module_table(table: EventTable, tree: OperatorTree) -> pd.DataFrame:
    """One row per module path, parents before children, siblings in call order.

    ``module`` is the qualified name (or, in a trace without nbprofiler's module
    ranges, the path of instances) from the outermost module, ``parent`` that of
    the enclosing module ("" at a root), ``type`` the class name.
    """
    mods, path, types = module_ranges(table)
    if len(mods) == 0:
        return _empty()
    m_start, m_dur = table["ts"][mods], table["dur"][mods]
    n_mod = len(mods)
    # Modules and ops nest in time on their thread: one nesting over both.
    parent = parent_index(np.concatenate([m_start, tree.start]),
                          np.concatenate([m_start + m_dur, tree.end]),
                          np.concatenate([table.thread[mods], tree.thread]))
    op_module = nearest_below(parent[n_mod:], parent, n_mod)
    key, first = np.unique(path, return_index=True)
    row = np.searchsorted(key, path)  # each module range's row
    row_parent = _row_parents(key)

    fwd_device_self = np.zeros(len(key))
    in_module = op_module >= 0
    np.add.at(fwd_device_self, row[op_module[in_module]], tree.device_self_us[in_module])
    bwd_host_self, bwd_device_self = _backward_self(table, tree, op_module, row, len(key))

    out = pd.DataFrame({
        "module": key,
        "parent": np.where(row_parent >= 0, key[np.maximum(row_parent, 0)], ""),
        "type": [types[k] for k in key],
        "depth": depth(row_parent),
        "calls": np.bincount(row, minlength=len(key)),
        "forward_host_us": np.bincount(row, weights=m_dur, minlength=len(key)),
        "forward_device_us": accumulate_to_ancestors(fwd_device_self, row_parent),
        "backward_host_us": accumulate_to_ancestors(bwd_host_self, row_parent),
        "backward_device_us": accumulate_to_ancestors(bwd_device_self, row_parent),
        "_start": m_start[first],
    })
    return _tree_order(out, row_parent)[MODULE_COLUMNS].reset_index(drop=True)


def module_ranges(table: EventTable) -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
    """The module ranges (event indices), each one's path, and each path's class:
    nbprofiler's ranges where the trace has them, else the Python tracer's."""
    names = pd.Series(table.names, dtype=object)
    mods = _ranges(table, names, Kind.USER_ANNOTATION, RANGE_PREFIX)
    if len(mods):
        full = names.to_numpy()[table.name_code[mods]]
        parsed = {s: parse_range_name(s) for s in set(full)}
        return mods, np.array([parsed[s][0] for s in full], dtype=object), dict(parsed.values())
    mods = _ranges(table, names, Kind.PYTHON_FUNCTION, MODULE_PREFIX)
    start, dur = table["ts"][mods], table["dur"][mods]
    leaf = [s[len(MODULE_PREFIX):] for s in names.to_numpy()[table.name_code[mods]]]
    path = _paths(leaf, parent_index(start, start + dur, table.thread[mods]))
    return mods, path, {p: p.rsplit(".", 1)[-1].rsplit("_", 1)[0] for p in path}


def _ranges(table: EventTable, names: pd.Series, kind: Kind, prefix: str) -> np.ndarray:
    """Indices of the events of ``kind`` whose name starts with ``prefix``."""
    named = names.str.startswith(prefix).to_numpy()
    return np.flatnonzero((table.kind == kind) & named[table.name_code])


def _row_parents(key: np.ndarray) -> np.ndarray:
    """For each sorted path, the row of its nearest ancestor path that is a row too, or -1."""
    rows = {k: i for i, k in enumerate(key.tolist())}
    out = np.full(len(key), -1, dtype=np.int64)
    for i, k in enumerate(key.tolist()):
        up = k.rpartition(".")[0]
        while up and up not in rows:
            up = up.rpartition(".")[0]
        if up:
            out[i] = rows[up]
    return out


def nearest_below(start: np.ndarray, parent: np.ndarray, n: int) -> np.ndarray:
    """From each position of a nesting, up its ``parent`` links to the first position
    below ``n``, or -1: with ranges of one kind stacked before ops in one nesting,
    the nearest enclosing range of that kind."""
    return climb(parent, start, lambda _, nodes: nodes >= n)[0]


def _paths(leaf: list[str], module_parent: np.ndarray) -> np.ndarray:
    """Dotted instance paths, outermost first; parents come before children in time."""
    out = np.empty(len(leaf), dtype=object)
    for i in np.argsort(depth(module_parent), kind="stable"):
        p = module_parent[i]
        out[i] = leaf[i] if p < 0 else f"{out[p]}.{leaf[i]}"
    return out


def _backward_self(table: EventTable, tree: OperatorTree, op_module: np.ndarray, row: np.ndarray,
                   n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Backward host and device µs per module row, through the forward ops' sequence numbers."""
    host, device = np.zeros(n_rows), np.zeros(n_rows)
    seq = table["seq"][tree.index]
    op_names = pd.Series(table.names, dtype=object).str.startswith(BACKWARD_PREFIX).to_numpy()
    is_bwd = op_names[table.name_code[tree.index]] & (seq != MISSING)
    forward = (~is_bwd) & (seq != MISSING) & (op_module >= 0)
    if not forward.any() or not is_bwd.any():
        return host, device
    # A sequence number -> the module around its forward op (nested ops share the number).
    fwd_seq, first = np.unique(seq[forward], return_index=True)
    fwd_row = row[op_module[np.flatnonzero(forward)[first]]]
    # Reentrant backward (checkpointing) nests evaluate_function ops: count the outer one.
    outer = is_bwd & ~has_ancestor(tree.parent, is_bwd)
    bwd = np.flatnonzero(outer)
    pos = np.clip(np.searchsorted(fwd_seq, seq[bwd]), 0, len(fwd_seq) - 1)
    hit = fwd_seq[pos] == seq[bwd]
    np.add.at(host, fwd_row[pos[hit]], tree.dur[bwd[hit]])
    np.add.at(device, fwd_row[pos[hit]], tree.device_total_us[bwd[hit]])
    return host, device


def _tree_order(df: pd.DataFrame, row_parent: np.ndarray) -> pd.DataFrame:
    """Depth-first, each parent followed by its children in the order they were first called."""
    children: dict[int, list[int]] = {}
    for i in np.argsort(df["_start"].to_numpy(), kind="stable").tolist():
        children.setdefault(int(row_parent[i]), []).append(i)
    order: list[int] = []
    todo = list(reversed(children.get(-1, [])))
    while todo:
        i = todo.pop()
        order.append(i)
        todo.extend(reversed(children.get(i, [])))
    return df.iloc[order]


def _empty() -> pd.DataFrame:
    dtypes = ("object", "object", "object", "int64", "int64", "float64", "float64", "float64", "float64")
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(MODULE_COLUMNS, dtypes)})
