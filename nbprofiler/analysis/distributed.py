"""Each rank's step split into computation, communication, their overlap and other, and what
each rank waited on: the figures of the Distributed view, from tables every rank already has.

The split follows the TensorBoard plugin's "Computation/Communication Overview":
``computation`` and ``communication`` are the time covered by each inside the step,
``overlap`` the time both ran at once, and ``other`` the rest of the step (neither ran:
host work, launches, idle). So ``computation - overlap``, ``overlap``,
``communication - overlap`` and ``other`` add up to the step. It is read from the rank's
``breakdown`` and ``communication`` (``step_communication``) tables, which measure it as
the plugin does:

* on a trace with GPU kernels, computation is the union of the compute kernels (the
  breakdown's ``kernel``, which takes every instant a compute kernel ran), communication
  the union of the collectives' kernels (``kernel_us``), and overlap the time both ran
  (``overlap_us``);
* on a CPU-only run (gloo), communication is the collectives' host ranges (``host_us``)
  and computation the host operators that are not communication: the breakdown gives
  them the time no communication took (``cpu_exec + dataloader``), so the overlap is
  added back.

What a rank waited on (``rank_waits``): in data-parallel training each collective ends
when its slowest rank arrives, so a rank that computes less than the slowest one waits
for it, once per step, inside its collectives. ``behind_slowest_us`` is that wait: the
slowest rank's compute per step (step minus exposed communication, as
``rank_comparison`` defines it) minus this rank's. ``exposed_us`` is the rank's
communication that no compute hid (the breakdown's ``communication``): its whole time
held in collectives, the wait for other ranks included, the rest being the transfer.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

SPLIT_COLUMNS = ["rank", "step", "step_us", "computation_us", "communication_us", "overlap_us", "other_us"]
WAIT_COLUMNS = ["rank", "exposed_us", "behind_slowest_us"]


def step_split(rank: int, breakdown: pd.DataFrame, communication: pd.DataFrame) -> pd.DataFrame:
    """``SPLIT_COLUMNS``, one row per step of ``breakdown``, µs (see the module docstring)."""
    if breakdown.empty:
        return pd.DataFrame(columns=SPLIT_COLUMNS)
    comm = communication.set_index("step").reindex(breakdown["step"]).fillna(0.0)
    kernel_us = comm["kernel_us"].to_numpy(dtype=np.float64)
    overlap = comm["overlap_us"].to_numpy(dtype=np.float64)
    on_device = bool(breakdown["kernel"].sum() > 0 or kernel_us.sum() > 0)
    if on_device:
        computation = breakdown["kernel"].to_numpy(dtype=np.float64)
        communicating = kernel_us
    else:
        computation = (breakdown["cpu_exec"] + breakdown["dataloader"]).to_numpy(dtype=np.float64) + overlap
        communicating = comm["host_us"].to_numpy(dtype=np.float64)
    step_us = breakdown["total"].to_numpy(dtype=np.float64)
    return pd.DataFrame({
        "rank": rank, "step": breakdown["step"].to_numpy(), "step_us": step_us,
        "computation_us": computation, "communication_us": communicating, "overlap_us": overlap,
        "other_us": np.maximum(step_us - (computation + communicating - overlap), 0.0),
    }, columns=SPLIT_COLUMNS)


def rank_steps(ranks: Mapping[int, tuple[pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    """``step_split`` of every rank (rank -> (breakdown, communication)), one table in rank order."""
    frames = [step_split(rank, *ranks[rank]) for rank in sorted(ranks)]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SPLIT_COLUMNS)


def rank_split(steps: pd.DataFrame) -> pd.DataFrame:
    """``rank_steps`` averaged per rank: ``rank, steps`` and each figure's mean per step."""
    if steps.empty:
        return pd.DataFrame(columns=["rank", "steps", *SPLIT_COLUMNS[2:]])
    means = steps.groupby("rank", sort=True)[SPLIT_COLUMNS[2:]].mean()
    return means.assign(steps=steps.groupby("rank", sort=True).size()).reset_index()[
        ["rank", "steps", *SPLIT_COLUMNS[2:]]]


def rank_waits(comparison: pd.DataFrame) -> pd.DataFrame:
    """``WAIT_COLUMNS`` per rank of ``rank_comparison`` (see the module docstring); empty
    with fewer than two ranks, since a wait for the slowest rank needs the others."""
    if len(comparison) < 2:
        return pd.DataFrame(columns=WAIT_COLUMNS)
    compute = comparison["compute_us"].to_numpy(dtype=np.float64)
    return pd.DataFrame({"rank": comparison["rank"].to_numpy(),
                         "exposed_us": comparison["communication"].to_numpy(dtype=np.float64),
                         "behind_slowest_us": np.nanmax(compute) - compute}, columns=WAIT_COLUMNS)
