"""The fixed cost in a CPU run's steps, for the batch-size advice.

A step's time splits into work that grows with the batch (inside the
operators) and cost that does not: each operator call's fixed overhead, the
optimizer (its cost depends on the parameters), and the Python between
operators. The batch-size advice needs that second part's share.
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

    The figures are those of one representative step: the first quartile by
    step time. A busy machine only ever adds time to a step (to its operators
    or to the gaps between them, at random), so the quieter steps show the
    costs best, while the very fastest may be a short last batch.
    """

    steps: int
    step_us: float  # step time without data waiting
    op_calls: float  # outermost operator calls per step, outside the optimizer
    op_us: float  # time inside those operators per step
    fixed_cost_us: float  # estimated fixed cost of one operator call
    optimizer_us: float  # optimizer step and zero_grad: the same for any batch size
    python_us: float  # step time outside any operator (Python, the framework)
    share: float  # median over steps of (fixed cost) / (step time without data waiting)


def cpu_overhead(table: EventTable, tree: OperatorTree, steps: pd.DataFrame, quantile: float) -> CpuOverhead | None:
    """Fixed cost per step of a CPU run's profiled steps (``steps``: ``profiler_steps``),
    from their operators; None without real steps or operators in them.

    The outermost operators of the training thread (``aten::linear``, not the
    ``aten::addmm`` inside it) are the calls Python makes. The fast end of
    their durations (``quantile``) is what a call costs when it does almost no
    work, so ``calls x that``, plus the optimizer (its cost depends on the
    parameters, not the batch) and the time outside any operator, is the part
    of the step that does not grow with the batch.
    """
    if steps.empty or bool(steps["synthetic"].iloc[0]):
        return None
    kinds = table.kind[tree.index]
    names = table.names[table.name_code[tree.index]].astype(str)
    is_loader = np.char.startswith(names, DATALOADER_PREFIX)
    is_op = (kinds == Kind.CPU_OP) & ~is_loader
    in_optimizer = has_ancestor(tree.parent, (kinds == Kind.USER_ANNOTATION) & np.char.startswith(names, "Optimizer."))
    loop_thread = int(steps["tid"].iloc[0])
    step = step_of(tree.start, steps)
    mine = (table["tid"][tree.index] == loop_thread) & (step >= 0)
    outer = is_op & ~has_ancestor(tree.parent, is_op | is_loader) & mine
    model = outer & ~in_optimizer
    if not model.any():
        return None
    lo = steps["start_us"].to_numpy(dtype=np.float64)
    hi = steps["end_us"].to_numpy(dtype=np.float64)

    def per_step(mask: np.ndarray) -> np.ndarray:
        return covered_in_windows(tree.start[mask], tree.end[mask], lo, hi)

    wait = per_step(is_loader & mine)
    ops = per_step(outer)
    optimizer = per_step(outer & in_optimizer)
    calls = np.bincount(np.searchsorted(steps["step"].to_numpy(), step[model]), minlength=len(steps)).astype(float)
    fixed_cost = float(np.quantile(tree.dur[model], quantile))
    compute = np.maximum(hi - lo - wait, 1e-9)
    python = np.maximum(compute - ops, 0.0)
    k = int(np.argsort(compute, kind="stable")[(len(compute) - 1) // 4])
    return CpuOverhead(
        steps=len(steps),
        step_us=float(compute[k]),
        op_calls=float(calls[k]),
        op_us=float(ops[k] - optimizer[k]),
        fixed_cost_us=fixed_cost,
        optimizer_us=float(optimizer[k]),
        python_us=float(python[k]),
        share=float(min((python[k] + optimizer[k] + calls[k] * fixed_cost) / compute[k], 1.0)),
    )
