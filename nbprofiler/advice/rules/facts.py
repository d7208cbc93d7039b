"""The measurements of one report that the rules share, each computed once, on first use.

Several rules read the same figure (the device time, the kernel mix, the data waiting, the
cell's training step): ``Facts`` computes each once per report, so no two rules judge from two
computations of it, and a rule pays only for what it reads. The DataLoader suggestions are a fact
too: the sync rule leaves blocking input copies to them where they pin memory.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import pandas as pd

from ...format import fmt_ms
from ...machine import local_world_size
from ...records import LoaderRecord
from .. import measures as M
from .. import thresholds as T
from ..cell_names import TrainingStep, training_step
from ..dataloader_plan import Cores, LoaderPlan
from ..safe_names import copyable
from ..suggestion import Suggestion
from .dataloader import loader_plans, loader_suggestion

if TYPE_CHECKING:
    from ...report import Report


class Facts:
    """The measurements of one report, computed once and shared by the rules."""

    def __init__(self, report: "Report") -> None:
        self.report = report

    @cached_property
    def data_wait(self) -> M.DataWait | None:
        return M.data_wait(self.report)

    @cached_property
    def device_time(self) -> M.DeviceTime | None:
        return M.device_time(self.report)

    @cached_property
    def kernel_mix(self) -> M.KernelMix | None:
        return M.kernel_mix(self.report, T.TINY_KERNEL_US)

    @cached_property
    def syncs(self) -> pd.DataFrame:
        return M.sync_points(self.report)

    @cached_property
    def memory(self) -> M.DeviceMemory | None:
        return M.device_memory(self.report)

    @cached_property
    def cpu(self) -> M.CpuOverhead | None:
        return M.cpu_overhead(self.report, T.CPU_FIXED_COST_QUANTILE)

    @cached_property
    def h2d(self) -> M.H2DCopies | None:
        return M.h2d_copies(self.report)

    @cached_property
    def cell_step(self) -> TrainingStep | None:
        """The training step the cell shows; None for trace files (no cell)."""
        return training_step(self.report.cell_source)

    @property
    def training_step(self) -> TrainingStep | None:
        """The cell's training step, for code in its own names: ``cell_step`` where the lines its
        edits copy may be copied (``may_copy``), else None (``step_not_copied`` says which)."""
        step = self.cell_step
        return step if step is not None and self.may_copy(*step.copied) else None

    @property
    def step_not_copied(self) -> bool:
        """Whether the cell shows a training step whose lines may not be copied."""
        return self.cell_step is not None and self.training_step is None

    def may_copy(self, first: int, last: int) -> bool:
        """Whether cell lines ``first`` to ``last`` may be copied into code: all of a cell this
        kernel ran (``Report.made_here``: the user's own), those ``safe_names.copyable`` allows
        of any other (a file's or the history's, written by whoever made it)."""
        source = self.report.cell_source
        if not source:
            return False
        return self.report.made_here or copyable(source, first, last)

    @cached_property
    def main_loader(self) -> LoaderRecord | None:
        """The loader that delivered the most batches: the training loader."""
        loaders = self.report.loaders
        return max(loaders, key=lambda r: r.batches) if loaders else None

    @cached_property
    def cores(self) -> Cores | None:
        """The cores a live run's loader shares with its compute; None for trace files, which
        come from a machine we cannot see. Compute keeps torch's intra-op threads busy on a
        CPU run; where it runs on a GPU, or the threads were not recorded, the main process
        keeps ``CORES_KEPT_FOR_MAIN``."""
        run = self.report.run
        if run is None:
            return None
        threads = run.intra_op_threads if run.intra_op_threads and not self.on_gpu else T.CORES_KEPT_FOR_MAIN
        return Cores(run.cpu_count, local_world_size(), threads)

    @cached_property
    def loader_plans(self) -> list[tuple[LoaderPlan, LoaderRecord | None]]:
        """The plan for each loader that keeps the steps waiting, with its record (None: a trace)."""
        return loader_plans(self)

    @cached_property
    def dataloader(self) -> list[Suggestion]:
        """The DataLoader suggestions (the sync rule needs to know whether they pin memory)."""
        return [s for p, record in self.loader_plans if (s := loader_suggestion(self, p, record)) is not None]

    @property
    def on_gpu(self) -> bool:
        return self.report.device.kind in ("cuda", "rocm")

    @property
    def step(self) -> str:
        """The step time every suggestion quotes, named: "avg step 205 ms over the 3 profiled steps"."""
        window = self.report.step_window
        return (f"avg step {fmt_ms(window.avg_step_us / 1e3)} over {window.label}" if window.avg_step_us
                else window.label)
