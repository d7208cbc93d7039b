"""The flame graph's tree: where the time of every operator went, from the code that called it
down to the kernels it launched, summed over every call (every profiled step).

Each path from the root reads, top to bottom:

- the Python frames of the user's own code around the call (the cell's and those of the user's
  files, as ``CallSites`` tells them from torch's and the libraries'; a trace has them only with
  ``--stack``);
- the ``nn.Module`` calls around it (``--modules``' ranges, or the Python tracer's module frames,
  as ``modules.module_table`` reads them), by their qualified name's parts;
- the operators, outermost first, as they nested (a call nested as the only child of a call of
  the same name is one box, as the operator table counts it);
- the kernels, copies and memsets each operator launched itself.

Calls with the same path are one node. Frames and modules are looked up for the outermost
operators: an operator nested in another sits under it, whatever frames lie between.

The times add up to the operator table's: an operator node's host time is the host self time
of its calls and of every operator below it (so the root's host time is the table's
``host_self_us`` summed, which leaves out the runtime calls torch lists as rows of their own),
and a node's device time is that of the device work launched below it (the root's is the
table's ``device_self_us`` summed). So no node's children hold more time than it does.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .callsites import CallSites
from .intervals import accumulate_to_ancestors, depth, parent_index
from .modules import module_ranges, nearest_below
from .operators import OperatorTree

FLAME_COLUMNS = ["id", "parent", "depth", "name", "kind", "host_us", "device_us"]
ROOT_NAME = "all"


class _Nodes:
    """The tree being built: one node per (parent, kind, name), numbered as first met, so a
    node's parent always has a smaller id."""

    def __init__(self) -> None:
        self.parent: list[int] = [-1]
        self.name: list[str] = [ROOT_NAME]
        self.kind: list[str] = ["root"]
        self._ids: dict[tuple[int, str, str], int] = {}

    def node(self, parent: int, kind: str, name: str) -> int:
        key = (parent, kind, name)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.parent)
            self.parent.append(parent)
            self.name.append(name)
            self.kind.append(kind)
        return found

    def children(self, parent: np.ndarray, codes: np.ndarray, names: np.ndarray, kind: str) -> np.ndarray:
        """The node under each ``parent`` named ``names[code]``: one lookup per distinct pair."""
        if len(parent) == 0:
            return np.zeros(0, dtype=np.int64)
        pairs = parent.astype(np.int64) * max(len(names), 1) + codes
        unique, inverse = np.unique(pairs, return_inverse=True)
        made = np.array([self.node(int(u) // len(names), kind, str(names[int(u) % len(names)])) for u in unique],
                        dtype=np.int64)
        return made[inverse.reshape(-1)]


def flame_nodes(tree: OperatorTree, cell_filename: str | None) -> pd.DataFrame:
    """The flame graph's nodes, parents before children: ``id, parent, depth, name, kind,
    host_us, device_us`` with ``kind`` one of root, frame, module, operator, kernel (see the
    module docstring for what the times hold). Node 0 is the root; ``parent`` is -1 there. A run
    without operators has no flame graph: no rows, as every table of a run that recorded nothing."""
    if len(tree.index) == 0:
        return pd.DataFrame({"id": pd.Series(dtype=np.int64), "parent": pd.Series(dtype=np.int64),
                             "depth": pd.Series(dtype=np.int64), "name": pd.Series(dtype=object),
                             "kind": pd.Series(dtype=object), "host_us": pd.Series(dtype=np.float64),
                             "device_us": pd.Series(dtype=np.float64)})[FLAME_COLUMNS]
    t = tree.table
    nodes = _Nodes()
    top = np.flatnonzero(tree.parent < 0)
    context = _module_nodes(tree, top, _frame_nodes(tree, cell_filename, nodes, top), nodes)
    op_node = np.zeros(len(tree.index), dtype=np.int64)
    level = depth(tree.parent)
    codes = t.name_code[tree.index]
    for d in range(int(level.max(initial=-1)) + 1):
        at = np.flatnonzero(level == d)
        if d == 0:
            op_node[at] = nodes.children(context, codes[at], t.names, "operator")
            continue
        repeat = tree.call[at] != at  # one call with its same-name parent: the parent's box
        op_node[at[repeat]] = op_node[tree.parent[at[repeat]]]
        new = at[~repeat]
        op_node[new] = nodes.children(op_node[tree.parent[new]], codes[new], t.names, "operator")

    launched = tree.launcher >= 0
    events = tree.device_events[launched]
    kernel_node = nodes.children(op_node[tree.launcher[launched]], t.name_code[events], t.names, "kernel")

    parent = np.array(nodes.parent, dtype=np.int64)
    own_host = np.bincount(op_node, weights=tree.host_self_us, minlength=len(parent))
    own_device = np.bincount(kernel_node, weights=t["dur"][events], minlength=len(parent))
    return pd.DataFrame({
        "id": np.arange(len(parent), dtype=np.int64),
        "parent": parent,
        "depth": depth(parent),
        "name": np.array(nodes.name, dtype=object),
        "kind": np.array(nodes.kind, dtype=object),
        "host_us": accumulate_to_ancestors(own_host.astype(np.float64), parent),
        "device_us": accumulate_to_ancestors(own_device.astype(np.float64), parent),
    })[FLAME_COLUMNS]


def _frame_nodes(tree: OperatorTree, cell_filename: str | None, nodes: _Nodes, top: np.ndarray) -> np.ndarray:
    """For each outermost operator (``top``), the node of the innermost frame of the user's code
    around it (the root when there is none)."""
    sites = CallSites(tree, cell_filename)
    if not sites.has_frames:
        return np.zeros(len(top), dtype=np.int64)
    user = sites.is_user | sites.in_cell
    names, codes = np.unique(sites.frame_names.astype(str), return_inverse=True)
    frame_node = np.zeros(len(user), dtype=np.int64)
    level = depth(sites.frame_parent)
    for d in range(int(level.max(initial=-1)) + 1):
        at = np.flatnonzero(level == d)
        up = sites.frame_parent[at]
        around = np.where(up >= 0, frame_node[np.maximum(up, 0)], 0)
        frame_node[at] = around
        mine = user[at]
        frame_node[at[mine]] = nodes.children(around[mine], codes.reshape(-1)[at[mine]], names, "frame")
    frame = sites.op_frame[top]
    return np.where(frame >= 0, frame_node[np.maximum(frame, 0)], 0)


def _module_nodes(tree: OperatorTree, top: np.ndarray, around: np.ndarray, nodes: _Nodes) -> np.ndarray:
    """For each outermost operator, the node of the innermost module call around it, each module
    a node under the one that called it, under the operator's frame node ``around``."""
    t = tree.table
    mods, path, types = module_ranges(t)
    if len(mods) == 0:
        return around
    start = t["ts"][mods]
    nesting = parent_index(np.concatenate([start, tree.start[top]]),
                           np.concatenate([start + t["dur"][mods], tree.end[top]]),
                           np.concatenate([t.thread[mods], tree.thread[top]]))
    module = nearest_below(nesting[len(mods):], nesting, len(mods))
    out = around.copy()
    made: dict[tuple[int, str], int] = {}
    for i in np.flatnonzero(module >= 0):
        key = (int(around[i]), str(path[module[i]]))
        if key not in made:
            made[key] = _module_chain(nodes, *key, types)
        out[i] = made[key]
    return out


def _module_chain(nodes: _Nodes, parent: int, path: str, types: dict[str, str]) -> int:
    """The node of module ``path`` under ``parent``, one node per part of its dotted name,
    each named by its part and, where the part does not say it, its class."""
    prefix = ""
    for part in path.split("."):
        prefix = f"{prefix}.{part}" if prefix else part
        kind = types.get(prefix, "")
        parent = nodes.node(parent, "module", f"{part} ({kind})" if kind and not part.startswith(kind) else part)
    return parent
