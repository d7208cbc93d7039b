"""The time a CPU run's steps spend inside the model's calls, and what fills it.

A live run records a range around each call of each module the cell calls by name
(``nbprofiler.model: <name>``, ``capture/model_calls.py``). Inside one, the outermost
operators are the calls Python makes; those that do matrix work (a matmul, a
convolution, attention: ``analysis.flops``' operators, or an operator around one)
are the heavy ones (``aten::conv2d`` and the like: the convolutions among them),
every other one (elementwise, normalisation, activation,
pooling, views) light; the rest of the range is the Python of the model's forward
and its submodules' ``__call__``. These are the parts torch.compile changes
(``advice.compile_gain``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.module_names import MODEL_PREFIX
from ..trace.table import EventTable, Kind
from .flops import _CONV, _flop_ops
from .intervals import climb, covered_in_windows, has_ancestor
from .operators import OperatorTree
from .steps import step_of


@dataclass(frozen=True, eq=False)
class ModelTime:
    """One model's calls in each profiled step (arrays, a value per step, in µs; ``name``: the
    cell's name for it). Per step, so that an estimate can be taken step by step and its median
    pass over a step the machine preempted, where a mean over the steps would not."""

    name: str
    step_us: np.ndarray  # the whole step, data waiting included
    model_us: np.ndarray  # inside the model's calls
    calls: np.ndarray  # the model's calls
    heavy_us: np.ndarray  # outermost operators that do matrix work, convolutions among them
    heavy_calls: np.ndarray
    conv_us: np.ndarray  # of ``heavy_us``, the convolutions
    light_us: np.ndarray  # every other outermost operator
    light_calls: np.ndarray

    @property
    def python_us(self) -> np.ndarray:
        """The model's time outside its operators: its forward's Python and its submodules' calls."""
        return np.maximum(self.model_us - self.heavy_us - self.light_us, 0.0)

    @property
    def share(self) -> float:
        """The model's share of a typical step (the median over steps)."""
        return float(np.median(np.minimum(self.model_us / np.maximum(self.step_us, 1e-9), 1.0)))


def model_times(table: EventTable, tree: OperatorTree, steps: pd.DataFrame) -> list[ModelTime]:
    """Each model's time in the profiled steps (``steps``: ``profiler_steps``), most time first;
    empty without real steps or model ranges in them."""
    if steps.empty or bool(steps["synthetic"].iloc[0]):
        return []
    names = pd.Series(table.names, dtype=object)
    is_model = names.str.startswith(MODEL_PREFIX).to_numpy()[table.name_code] & (table.kind == Kind.USER_ANNOTATION)
    loop_thread = int(steps["tid"].iloc[0])
    ranges = np.flatnonzero(is_model & (table["tid"] == loop_thread))
    ranges = ranges[step_of(table["ts"][ranges], steps) >= 0]
    if len(ranges) == 0:
        return []
    lo = steps["start_us"].to_numpy(dtype=np.float64)
    hi = steps["end_us"].to_numpy(dtype=np.float64)
    n = len(steps)
    outer = _outermost_ops(table, tree, loop_thread)
    heavy = _heavy(tree, outer)
    op_names = table.names[table.name_code[tree.index[outer]]]
    conv = heavy & np.fromiter((bool(_CONV.match(str(name))) for name in op_names), dtype=bool, count=len(outer))
    found = []
    labels = names.to_numpy()[table.name_code[ranges]]
    for label in sorted(set(labels)):
        start, end = _outermost(table["ts"][ranges[labels == label]], table["dur"][ranges[labels == label]])
        inside = _inside(tree.start[outer], start, end)
        ops, is_heavy, is_conv = outer[inside], heavy[inside], conv[inside]
        step = np.searchsorted(steps["step"].to_numpy(), step_of(tree.start[ops], steps))

        def per_step(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
            return np.bincount(step[mask],  # noqa: B023 - called in this iteration only
                                weights=None if weights is None else weights[mask], minlength=n)

        found.append(ModelTime(
            name=str(label)[len(MODEL_PREFIX):], step_us=hi - lo, model_us=covered_in_windows(start, end, lo, hi),
            calls=np.bincount(np.searchsorted(steps["step"].to_numpy(), step_of(start, steps)), minlength=n),
            heavy_us=per_step(is_heavy, tree.dur[ops]), heavy_calls=per_step(is_heavy),
            conv_us=per_step(is_conv, tree.dur[ops]),
            light_us=per_step(~is_heavy, tree.dur[ops]), light_calls=per_step(~is_heavy)))
    return sorted(found, key=lambda m: -float(m.model_us.sum()))


def _outermost_ops(table: EventTable, tree: OperatorTree, thread: int) -> np.ndarray:
    """Positions in ``tree`` of the operators on ``thread`` that no other operator encloses."""
    is_op = table.kind[tree.index] == Kind.CPU_OP
    return np.flatnonzero(is_op & ~has_ancestor(tree.parent, is_op) & (table["tid"][tree.index] == thread))


def _heavy(tree: OperatorTree, outer: np.ndarray) -> np.ndarray:
    """For each of ``outer``, whether it is, or encloses, an operator that does matrix work."""
    flop_op, _ = _flop_ops(tree)
    is_op, parent = tree.table.kind[tree.index] == Kind.CPU_OP, tree.parent
    roots, _ = climb(parent, np.flatnonzero(flop_op),
                     lambda _, nodes: (parent[nodes] >= 0) & is_op[np.maximum(parent[nodes], 0)])
    return np.isin(outer, roots)


def _outermost(start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges no other encloses (a model that calls itself counts once), as (starts, ends)."""
    order = np.argsort(start, kind="stable")
    start, end = start[order], (start + dur)[order]
    kept = end > np.concatenate([[-np.inf], np.maximum.accumulate(end)[:-1]])
    return start[kept], end[kept]


def _inside(ts: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whether each of ``ts`` falls in one of the sorted, disjoint ranges ``[start, end)``."""
    i = np.searchsorted(start, ts, side="right") - 1
    return (i >= 0) & (ts < end[np.clip(i, 0, None)])
