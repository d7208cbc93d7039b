"""The operator table: host and device time per operator name (and input shape).

The figures mean what torch's ``key_averages()`` and the TensorBoard profiler
plugin mean by them, so a user can check one against the other:

- host self time is an operator's duration minus its child operators' and
  minus the CUDA runtime calls it made itself (``cudaLaunchKernel``,
  ``cudaMemcpyAsync``...): since PyTorch 1.8 those are rows of their own;
- a call nested as the only child of a call of the same name (``aten::div``
  calling ``aten::div``) is one call, as torch's ``EventList._remove_dup_nodes``
  makes it: it adds no call and no total time, and its self times go to the
  outer call.

Device time reaches an operator through the launch link the profiler records:
a kernel's ``External id`` is that of the innermost operator that launched it
(2021 traces spell it ``external id``); where a kernel lacks it, its runtime
call's correlation id leads to the same operator.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ..trace.module_names import MODEL_PREFIX
from ..trace.module_names import RANGE_PREFIX as MODULE_RANGE_PREFIX
from ..trace.table import DEVICE_WORK_KINDS, EventTable, Kind
from .event_kinds import of_kind
from .intervals import (accumulate_to_ancestors, children_sum, climb, innermost_around, levels_deepest_first,
                        parent_index)
from .links import launching_runtime, lookup

OPERATOR_COLUMNS = ["name", "calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"]
# The op autograd records around each backward node it runs, exactly as torch spells it
# ("autograd::engine::evaluate_function: AddmmBackward0", the space included).
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "


@dataclass(frozen=True, eq=False)
class OperatorTree:
    """Host operator ranges with their nesting and the device time each launched.

    ``index`` points into the event table; ``parent`` into ``index`` (-1 at a root).
    """

    table: EventTable

    @cached_property
    def index(self) -> np.ndarray:
        kinds = self.table.kind
        is_op = (kinds == Kind.CPU_OP) | (kinds == Kind.USER_ANNOTATION)
        names = self.table.names
        # Step ranges, --modules' ranges and the model calls' wrap operators; as operators they would count
        # their time twice.
        wraps = pd.Series(names, dtype=object).str.startswith(
            ("ProfilerStep#", MODULE_RANGE_PREFIX, MODEL_PREFIX)).to_numpy()
        return np.flatnonzero(is_op & ~wraps[self.table.name_code])

    @cached_property
    def start(self) -> np.ndarray:
        return self.table["ts"][self.index]

    @cached_property
    def end(self) -> np.ndarray:
        return self.start + self.dur

    @cached_property
    def thread(self) -> np.ndarray:
        return self.table.thread[self.index]

    @cached_property
    def parent(self) -> np.ndarray:
        return parent_index(self.start, self.end, self.thread)

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """``levels_deepest_first(parent)``, kept for every sum up the tree (device time, phases)."""
        return levels_deepest_first(self.parent)

    @cached_property
    def dur(self) -> np.ndarray:
        """Durations as recorded (``end - start`` would lose precision on large timestamps)."""
        return self.table["dur"][self.index]

    @cached_property
    def runtime_us(self) -> np.ndarray:
        """Time in the runtime calls each operator made itself: those on its thread whose
        innermost enclosing operator it is (found by time, as torch nests them, since the
        runtime calls of some traces carry no usable ``External id``)."""
        t = self.table
        runtime = np.flatnonzero(t.kind == Kind.RUNTIME)
        caller = self.enclosing(t.thread[runtime], t["ts"][runtime])
        made = caller >= 0
        return np.bincount(caller[made], weights=t["dur"][runtime][made], minlength=len(self.index))

    @cached_property
    def host_self_us(self) -> np.ndarray:
        """Duration minus child operators and the operator's own runtime calls, which torch
        and the plugin report as rows of their own (clipped at 0 for overlapping quirks)."""
        return np.maximum(self.dur - children_sum(self.dur, self.parent) - self.runtime_us, 0.0)

    @cached_property
    def call(self) -> np.ndarray:
        """For each operator, the position of the call it counts in: itself, or the
        outermost of a chain of same-name operators each the only child of the one above.

        torch's ``key_averages`` merges such a chain (``aten::mul`` whose one child is
        ``aten::mul``) into one call, and the plugin follows it; counting each link
        would count the same work's calls and total time twice.
        """
        parent = self.parent
        nested = np.flatnonzero(parent >= 0)
        codes = self.table.name_code[self.index]
        only_child = np.bincount(parent[nested], minlength=len(parent)) == 1
        repeat = np.zeros(len(parent), dtype=bool)
        repeat[nested] = (codes[nested] == codes[parent[nested]]) & only_child[parent[nested]]
        return climb(parent, np.arange(len(parent)), lambda _, nodes: repeat[nodes])[0]

    @cached_property
    def is_call(self) -> np.ndarray:
        """Whether each operator counts as a call of its own (see ``call``)."""
        return self.call == np.arange(len(self.index))

    @cached_property
    def launcher(self) -> np.ndarray:
        """For each device-work event (``device_events``), the position in ``index`` of
        the operator that launched it, or -1."""
        t = self.table
        dev = self.device_events
        op_ext = t["external_id"][self.index]
        found = lookup(op_ext, np.arange(len(op_ext)), t["external_id"][dev])
        lacking = np.flatnonzero(found < 0)
        if len(lacking):
            # No usable External id: follow the correlation id to the runtime call,
            # then take the innermost operator around that call on its thread.
            rt = launching_runtime(t, dev[lacking])
            has_rt = rt >= 0
            found[lacking[has_rt]] = self.enclosing(t.thread[rt[has_rt]], t["ts"][rt[has_rt]])
        return found

    @cached_property
    def _by_thread_and_start(self) -> np.ndarray:
        return np.lexsort((self.start, self.thread))

    def enclosing(self, thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """The innermost operator (position in ``index``) around each (thread, ts), or -1."""
        return innermost_around(self.start, self.end, self.thread, self.parent, self._by_thread_and_start, thread, ts)

    @cached_property
    def device_events(self) -> np.ndarray:
        return np.flatnonzero(of_kind(self.table.kind, DEVICE_WORK_KINDS))

    @cached_property
    def device_self_us(self) -> np.ndarray:
        launched = self.launcher >= 0
        return np.bincount(self.launcher[launched], weights=self.table["dur"][self.device_events][launched],
                           minlength=len(self.index)).astype(np.float64, copy=False)

    @cached_property
    def device_total_us(self) -> np.ndarray:
        return accumulate_to_ancestors(self.device_self_us, self.parent, self.levels)


def operator_table(tree: OperatorTree, by_shape: bool = False,
                   memory: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Per operator name (and input shape when ``by_shape``): calls and times in µs.

    ``memory`` adds per-call columns (bytes allocated, aligned with ``tree.index``),
    summed like the self times. An operator merged into a same-name call
    (``tree.call``) adds its self times to that call's row and nothing else.
    Sorted by device self time when any device time exists, else by host self time.
    """
    t = tree.table
    own = tree.is_call
    callers = tree.index[tree.call]
    frame = pd.DataFrame(
        {
            "name": pd.Categorical.from_codes(t.name_code[callers], categories=pd.Index(t.names, dtype=object)),
            "calls": own.astype(np.int64),
            "host_self_us": tree.host_self_us,
            "host_total_us": np.where(own, tree.dur, 0.0),
            "device_self_us": tree.device_self_us,
            "device_total_us": np.where(own, tree.device_total_us, 0.0),
            **(memory or {}),
        }
    )
    keys = ["name"]
    if by_shape and t.input_dims is not None:
        dims = t.input_dims[callers]
        frame["input_shapes"] = [d.decode("utf-8", "replace") if d is not None else "" for d in dims]
        keys.append("input_shapes")
    out = frame.groupby(keys, observed=True, sort=False).sum().reset_index()
    out["name"] = out["name"].astype(object)
    sort_key = "device_self_us" if out["device_self_us"].sum() > 0 else "host_self_us"
    cols = ["name", "calls", *(["input_shapes"] if "input_shapes" in out else []), *OPERATOR_COLUMNS[2:],
            *(memory or {})]
    return out[cols].sort_values(sort_key, ascending=False, kind="stable").reset_index(drop=True)
