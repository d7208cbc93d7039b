"""The Report's memory tables: the traced timeline, per step and per operator, growth from step
to step, and every allocation (``analysis.memory``, ``analysis.allocations``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..analysis import memory as mem
from ..analysis.allocations import allocation_table

if TYPE_CHECKING:
    from .report import Report


def memory(report: "Report") -> pd.DataFrame:
    """The ``[memory]`` timeline: ``ts, device, allocated_bytes, reserved_bytes, delta_bytes, reconstructed``."""
    return mem.memory_timeline(report.table)


def memory_steps(report: "Report") -> pd.DataFrame:
    """Per step and device: allocated at start and end, peaks; with the live sampler's
    per-step memory columns joined (every step the cell ran) on a live run."""
    sampled = report.sampled_steps
    if sampled is None:
        return mem.memory_steps(report.memory, report.trace_steps)
    return mem.memory_steps(report.memory, report.trace_steps, sampled, report.sampler_device)


def memory_by_operator(report: "Report") -> pd.DataFrame:
    """Per operator and device: ``allocations, allocated_bytes, held_bytes`` (held at the step's end)."""
    return mem.memory_by_operator(report.operator_tree, report.trace_steps, report._allocation_owners)


def memory_growth(report: "Report") -> pd.DataFrame:
    """Memory that rises step after step (a leak): slope in bytes/step and ``flagged``, per series."""
    return mem.memory_growth(mem.growth_series(report.memory_steps, report.sampler_device))


def allocation_owners(report: "Report") -> mem.Allocations:
    return mem.allocation_owners(report.operator_tree)


def allocations(report: "Report") -> pd.DataFrame:
    """Every allocation: size, when made and freed (NaN: still held), live at the device's
    peak, step, operator, and cell line under ``--stack`` (``analysis.allocations``)."""
    return allocation_table(report.operator_tree, report._allocation_owners, report.memory, report.trace_steps,
                            report.line_marks, report.table.meta.base_time_ns)
