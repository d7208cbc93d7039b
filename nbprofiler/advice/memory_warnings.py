"""The memory warnings a report shows above its memory figures: one per series that rises step
after step.

Worded as the memory-growth suggestion's evidence (``growth_fact``), so the warning and the
suggestion quote the same levels; built here, as Report data (``Report.memory_warnings``), so
that every renderer shows these sentences and none re-derives them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.memory import relative_devices
from .rules.memory import growth_fact

if TYPE_CHECKING:
    from ..report import Report

CAUSE = ("Something keeps tensors alive from one step to the next. The usual cause is a loss or an output kept "
         "with its graph (computed with autograd on and never backpropagated, such as a validation loss outside "
         "torch.no_grad()): keep loss.item() or loss.detach() instead.")


def memory_warnings(report: "Report") -> tuple[str, ...]:
    """One sentence per flagged series of ``report.memory_growth``: what grew, by how much, and the usual cause."""
    growth = report.memory_growth
    relative = relative_devices(report.memory_steps)
    return tuple(f"Memory grows: {growth_fact(row, relative)}. {CAUSE}"
                 for row in growth[growth["flagged"]].itertuples(index=False))
