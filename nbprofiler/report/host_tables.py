"""The Report's tables of the host's side: the steps, the operators, and the user's code
(cell lines, ``nn.Module`` calls), each a function of the Report that ``Report`` declares.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..analysis.compare import run_drift
from ..analysis.cycles import cycle_table
from ..analysis.drift import DRIFT_COLUMNS, drift as cycles_drift
from ..analysis.event_kinds import of_kind
from ..analysis.flame import flame_nodes
from ..analysis.lines import LINE_COLUMNS, cell_lines
from ..analysis.memory import self_allocated_bytes
from ..analysis.modules import module_table
from ..analysis.operators import OperatorTree, operator_table as grouped_operators
from ..analysis.phases import step_phases
from ..analysis.steps import dataloader_names, profiler_steps, step_of
from ..render import bundle
from ..trace.table import Kind

if TYPE_CHECKING:
    from .report import Report


def trace_steps(report: "Report") -> pd.DataFrame:
    """The profiled steps as the trace records them (host ranges)."""
    steps = profiler_steps(report.table)
    sampled = report.sampled_steps
    if sampled is not None:
        # A step the run never completed (the cell raised, broke out, or ended
        # mid-step) is in the trace but is no whole step: leave it out.
        # (A cycle's report samples only the cycle's steps: the last one it sampled is what counts.)
        done = int(sampled["step"].iloc[-1]) + 1 if len(sampled) else 0
        steps = steps[steps["step"] < done].reset_index(drop=True)
    return steps


def cycles(report: "Report") -> pd.DataFrame:
    """One row per profiler cycle of a ``--every N`` run (``analysis.cycles.CYCLE_COLUMNS``),
    made as the run went; no row for any other run or a trace file."""
    return cycle_table(report._recorded(lambda run: run.cycles))


def drift(report: "Report") -> pd.DataFrame:
    """Where a later cycle of a ``--every N`` run differs from the first ones beyond noise
    (``analysis.drift``): one row per measure that drifted; none on a steady run."""
    run, cycles = report.run, report.cycles
    if run is None or cycles.empty:
        return pd.DataFrame(columns=list(DRIFT_COLUMNS))
    main = max(run.loaders, key=lambda r: r.batches) if run.loaders else None
    return cycles_drift(run.steps, cycles, bundle.LABELS, run_drift((run.other_cores, run.other_cores)),
                        main.num_workers if main is not None else None)


def operator_tree(report: "Report") -> OperatorTree:
    return OperatorTree(report.table)


def operators(report: "Report") -> pd.DataFrame:
    """Per operator: ``name, calls, host_self_us, host_total_us, device_self_us, device_total_us``,
    with ``input_shapes`` after ``calls`` under ``--shapes``, and ``host_self_alloc_bytes,
    device_self_alloc_bytes`` (what its calls allocated themselves) when memory was recorded."""
    options = report.run_options
    return report.operator_table(options is not None and options.shapes)


def operator_table(report: "Report", by_shape: bool) -> pd.DataFrame:
    """``operators`` grouped by name, or by name and input shapes."""
    return grouped_operators(report.operator_tree, by_shape=by_shape,
                             memory=self_allocated_bytes(report.operator_tree, report._allocation_owners))


def lines(report: "Report") -> pd.DataFrame:
    """Per line of the profiled cell (``--stack``): ``line, source, host_us, device_us``.

    One row per line whose torch ops took time, largest first. Empty for trace
    files and runs without ``--stack``: only a live run knows the cell's lines.
    """
    marks = report.line_marks
    if marks is None:
        return pd.DataFrame(columns=LINE_COLUMNS)
    return cell_lines(report.operator_tree, marks, report.cell_source or "", report.table.meta.base_time_ns)


def modules(report: "Report") -> pd.DataFrame:
    """Per ``nn.Module`` (``--modules`` or ``--stack``), a tree in call order:
    ``module, parent, type, depth, calls, forward_host_us, forward_device_us,
    backward_host_us, backward_device_us`` (each including its submodules)."""
    return module_table(report.table, report.operator_tree)


def steps(report: "Report") -> pd.DataFrame:
    """One row per step: ``step, phase, wall_ms, dataloader_ms`` and memory columns.

    Live runs list every step the cell ran (all phases); trace files list the
    profiled steps, all ``active``.
    """
    sampled = report.sampled_steps
    if sampled is not None:
        return sampled
    profiled = report.trace_steps
    return pd.DataFrame(
        {
            "step": profiled["step"].to_numpy(),
            "phase": "active",
            "wall_ms": (profiled["end_us"] - profiled["start_us"]).to_numpy() / 1e3,
            "dataloader_ms": _dataloader_ms_by_step(report, profiled),
        }
    )


def _dataloader_ms_by_step(report: "Report", steps: pd.DataFrame) -> np.ndarray:
    t = report.table
    if steps.empty:
        return np.zeros(len(steps))
    is_dl = dataloader_names(t)[t.name_code]
    is_dl &= of_kind(t.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION))
    which = step_of(t["ts"][is_dl], steps)
    sums = pd.Series(t["dur"][is_dl]).groupby(which).sum()
    return np.array([sums.get(s, 0.0) / 1e3 for s in steps["step"]])


def phases(report: "Report") -> pd.DataFrame:
    """Per step, host µs in ``dataloader, forward, backward, optimizer, other`` and
    ``total`` (the breakdown that means something on CPU-only runs). Shares: ``phase_shares``."""
    return step_phases(report.operator_tree, report.trace_steps)


def flame(report: "Report") -> pd.DataFrame:
    """The flame graph's nodes (``analysis.flame``): ``id, parent, depth, name, kind, host_us,
    device_us``, from the user's frames (``--stack``) and modules (``--modules``) down through the
    operators to the kernels they launched, summed over the run. The root's times are the operator
    table's self times summed."""
    return flame_nodes(report.operator_tree, report.cell_filename)
