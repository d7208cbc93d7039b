"""The steps a report's figures describe, their average time, and the samples they processed.

One definition of "the step" for the whole report: the title, the overview,
every suggestion and every per-step mean read it from here, so the header's
"avg step" and a suggestion's "of the step" are the same number. It is the mean
of the profiled steps as the breakdown counts them (on a GPU, host ranges
stretched to cover the device work they launched); when nothing was profiled
(the run stopped before its first active step, or the trace could not be
read), the live sampler's steps in the ``active`` phase, else all of them.

Throughput counts every batch a step consumed: with gradient accumulation one
optimizer step takes several DataLoader batches, and samples/s must count them
all, not one batch per step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class StepWindow:
    """The steps the report's means are over, by number, and what to call them."""

    steps: tuple[int, ...]
    avg_step_us: float | None
    label: str  # "the 3 profiled steps", for sentences that name the definition they use

    def of(self, per_step: pd.DataFrame) -> pd.DataFrame:
        """The rows of a per-step table (with a ``step`` column) that are in the window."""
        return per_step[per_step["step"].isin(self.steps)]


def step_window(spans: pd.DataFrame, sampled: pd.DataFrame | None) -> StepWindow:
    """The window from the breakdown's steps (``stretched_steps``), else the live
    sampler's steps (``run.steps``)."""
    if len(spans):
        n = len(spans)
        avg = float((spans["end_us"] - spans["start_us"]).mean())
        label = f"the {n} profiled step{'s' if n != 1 else ''}"
        return StepWindow(tuple(int(s) for s in spans["step"]), avg, label)
    if sampled is None or sampled.empty:
        return StepWindow((), None, "no step")
    active = sampled[sampled["phase"] == "active"]
    rows, label = (active, "the {n} active step{s}") if len(active) else (sampled, "all {n} step{s} the cell ran")
    n = len(rows)
    return StepWindow(tuple(int(s) for s in rows["step"]), float(rows["wall_ms"].mean()) * 1e3,
                      label.format(n=n, s="s" if n != 1 else ""))


@dataclass(frozen=True)
class Throughput:
    """Batches and samples per step over the window, and samples per second."""

    batches_per_step: float | None
    samples_per_step: float | None
    samples_per_s: float | None


def throughput(window: StepWindow, sampled: pd.DataFrame | None) -> Throughput:
    """What the window's steps consumed, from the live sampler's ``batches`` and
    ``samples`` columns. Unknown (None) for trace files, for steps that took no
    DataLoader batch and were given no ``nbprofiler.step(samples=)``, and where some
    batch's size could not be told."""
    none = Throughput(None, None, None)
    if sampled is None or "samples" not in sampled or not window.steps:
        return none
    rows = window.of(sampled)
    batches = rows["batches"].to_numpy(dtype=np.float64)
    samples = rows["samples"].to_numpy(dtype=np.float64)
    if rows.empty:
        return none
    per_step = float(batches.mean()) if batches.sum() else None
    if np.isnan(samples).any() or samples.sum() == 0:
        return Throughput(per_step, None, None)
    samples_per_step = float(samples.mean())
    rate = samples_per_step / (window.avg_step_us / 1e6) if window.avg_step_us else None
    return Throughput(per_step, samples_per_step, rate)
