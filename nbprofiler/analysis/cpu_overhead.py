"""The fixed cost in a CPU run's steps, for the batch-size advice.

A step's time splits into work that grows with the batch (inside the
operators) and cost that does not: each operator call's fixed overhead, the
Python that glues one call to the next, and the optimizer (its cost depends on
the parameters). The batch-size advice needs that second part's share.

The rest of the Python between operators cannot be placed from one batch size:
a long stretch of Python with no operator in it is a loop over the samples
(tokenising each text grows with the batch) as often as per-step work (logging,
the loop's bookkeeping). It is measured apart (``loose_us``), never counted as
fixed: a batch of 8 texts whose tokenising was 60% of the step was claimed to
share out 91% of the step, and a 4x batch measured 1.74x where 3.18x was said.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.table import EventTable, Kind
from .intervals import covered_in_windows, has_ancestor
from .operators import OperatorTree
from .steps import DATALOADER_PREFIX, step_of


@dataclass(frozen=True)
class CpuOverhead:
    """On CPU: how much of a step is fixed cost that a larger batch would share out.

    Figures are means per profiled step; the arrays hold each step's own, so that the
    advice can tell how far the steps agree (``advice.fixed_share``); the shares are medians. ``fixed_us`` is
    the cost known not to grow with the batch; ``loose_us`` the Python outside every
    operator beyond each call's glue, which may or may not grow with it.
    """

    steps: int
    step_us: float  # step time without data waiting
    op_calls: float  # outermost operator calls per step, outside the optimizer
    op_us: float  # time inside those operators per step
    fixed_cost_us: float  # estimated fixed cost of one operator call
    glue_us: float  # Python between two consecutive operator calls: one call's glue
    optimizer_us: float  # optimizer step and zero_grad, their Python included: the same for any batch size
    python_us: float  # step time outside any operator and the optimizer (glue and loose Python)
    compute_by_step: np.ndarray  # µs per step without data waiting
    fixed_by_step: np.ndarray  # µs per step: calls x (fixed cost + glue) + optimizer
    loose_by_step: np.ndarray  # µs per step: the Python beyond the calls' glue

    @property
    def share(self) -> float:
        """The fixed part of a typical profiled step: the median over steps. A step the machine
        preempted reads near 0 (the wait fell in an operator) or near 1 (in the optimizer): the
        median of the steps' shares passes over such steps, where a ratio of their sums would not."""
        return float(np.median(self.fixed_by_step / self.compute_by_step))

    @property
    def loose_share(self) -> float:
        """The part of a typical profiled step that is Python beyond the calls' glue (median)."""
        return float(np.median(self.loose_by_step / self.compute_by_step))

    @property
    def loose_us(self) -> float:
        return float(np.median(self.loose_by_step))


def cpu_overhead(table: EventTable, tree: OperatorTree, steps: pd.DataFrame, quantile: float) -> CpuOverhead | None:
    """Fixed cost per step of a CPU run's profiled steps (``steps``: ``profiler_steps``),
    from their operators; None without real steps or operators in them.

    The outermost operators of the training thread (``aten::linear``, not the
    ``aten::addmm`` inside it) are the calls Python makes. The fast end of
    their durations (``quantile``) is what a call costs when it does almost no
    work, and the median stretch of Python between two of them is what gluing
    one call to the next costs, so ``calls x (both)``, plus the optimizer (its cost
    depends on the parameters, not the batch), is the part of the step that does
    not grow with the batch. Python time beyond that glue is the loose part.
    """
    if steps.empty or bool(steps["synthetic"].iloc[0]):
        return None
    kinds = table.kind[tree.index]
    names = table.names[table.name_code[tree.index]].astype(str)
    is_loader = np.char.startswith(names, DATALOADER_PREFIX)
    is_op = (kinds == Kind.CPU_OP) & ~is_loader
    is_optimizer = (kinds == Kind.USER_ANNOTATION) & np.char.startswith(names, "Optimizer.")
    in_optimizer = has_ancestor(tree.parent, is_optimizer)
    loop_thread = int(steps["tid"].iloc[0])
    step = step_of(tree.start, steps)
    mine = (table["tid"][tree.index] == loop_thread) & (step >= 0)
    model = is_op & ~has_ancestor(tree.parent, is_op | is_loader) & ~in_optimizer & ~is_optimizer & mine
    if not model.any():
        return None
    optimizer = is_optimizer & ~in_optimizer & mine
    loader = is_loader & ~has_ancestor(tree.parent, is_loader) & mine
    lo = steps["start_us"].to_numpy(dtype=np.float64)
    hi = steps["end_us"].to_numpy(dtype=np.float64)

    def per_step(mask: np.ndarray) -> np.ndarray:
        return covered_in_windows(tree.start[mask], tree.end[mask], lo, hi)

    wait = per_step(loader)
    ops = per_step(model)
    optimizer_us = per_step(optimizer)
    window = np.searchsorted(steps["step"].to_numpy(), step[model])
    calls = np.bincount(window, minlength=len(steps)).astype(float)
    fixed_cost = float(np.quantile(tree.dur[model], quantile))
    glue = _median_glue(tree.start[model], tree.end[model], window)
    compute = np.maximum(hi - lo - wait, 1e-9)
    python = np.maximum(compute - ops - optimizer_us, 0.0)
    glued = np.minimum(calls * glue, python)  # glue is Python the step had
    return CpuOverhead(
        steps=len(steps),
        step_us=float(compute.mean()),
        op_calls=float(calls.mean()),
        op_us=float(ops.mean()),
        fixed_cost_us=fixed_cost,
        glue_us=glue,
        optimizer_us=float(optimizer_us.mean()),
        python_us=float(python.mean()),
        compute_by_step=compute,
        fixed_by_step=calls * fixed_cost + glued + optimizer_us,
        loose_by_step=python - glued,
    )


def _median_glue(start: np.ndarray, end: np.ndarray, window: np.ndarray) -> float:
    """The median stretch between the end of one outermost operator call and the start of
    the next in the same step: the Python that passes one call's result to the next
    (``nn.Module.__call__``, argument parsing). Under the median, the long stretches of
    Python that do work of their own (a loop over samples, logging) do not count."""
    order = np.lexsort((start, window))
    s, e, w = start[order], end[order], window[order]
    same = w[1:] == w[:-1]
    gaps = np.maximum(s[1:] - e[:-1], 0.0)[same]
    return float(np.median(gaps)) if len(gaps) else 0.0
