"""Collective communication per step: how many, how long, what share of the step,
and how much of it overlapped computation.

What counts as communication is the breakdown's definition
(``breakdown.category_masks``), so this table and the breakdown's
``communication`` column never disagree about which events are collectives:
NCCL kernels (RCCL's too), and the backend's own host range of each
collective, ``nccl:<op>`` or ``gloo:<op>``. On a CPU-only gloo run the latter
are all there is; they run on gloo's worker threads and last as long as the
collective, waits for slower ranks included.

Steps are the breakdown's (stretched to cover the device work they launched),
and every figure is clipped to its step, so ``share`` stays within 0..1.

Overlap is time during which communication and computation ran at once: on a
trace with GPU kernels, communication kernels against the other kernels; on a
CPU-only trace, the collectives' host ranges against the host operators that
are not communication (there the collective runs on gloo's threads while the
loop's thread computes). High overlap means the
communication was hidden; low overlap with a large share means the step waited.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.table import EventTable, Kind
from .breakdown import category_masks
from .intervals import covered_in_windows

COMMUNICATION_COLUMNS = ["step", "kernels", "host_ops", "kernel_us", "host_us", "communication_us", "step_us",
                         "share", "overlap_us", "overlap_share"]


def step_communication(table: EventTable, spans: pd.DataFrame) -> pd.DataFrame:
    """One row per step of ``spans`` (``breakdown.stretched_steps``).

    ``kernels`` / ``host_ops``: communication kernels and host ranges that start
    in the step. ``kernel_us`` / ``host_us`` / ``communication_us``: the union of
    each (and of both) inside the step, µs. ``share``: ``communication_us`` over
    the step's wall time. ``overlap_us``: communication time during which
    computation also ran (kernels against kernels on a GPU trace, host ranges
    against host operators on a CPU-only one); ``overlap_share`` is it over
    that communication time (NaN with none).
    """
    if spans.empty:
        return pd.DataFrame(columns=COMMUNICATION_COLUMNS)
    masks = category_masks(table)
    comm = masks["communication"]
    is_kernel = table.kind == Kind.KERNEL
    comm_kernel, comm_host = comm & is_kernel, comm & ~is_kernel
    on_device = bool(masks["kernel"].any() or comm_kernel.any())
    # What overlap is measured between: device work on a GPU trace, host work on a CPU-only one.
    overlapping = comm_kernel if on_device else comm_host
    compute = masks["kernel"] if on_device else masks["cpu_exec"] | masks["dataloader"]

    base = float(spans["start_us"].min())
    lo = spans["start_us"].to_numpy(dtype=np.float64) - base
    hi = spans["end_us"].to_numpy(dtype=np.float64) - base
    start = table["ts"] - base
    end = start + table["dur"]

    def covered(mask: np.ndarray) -> np.ndarray:
        return covered_in_windows(start[mask], end[mask], lo, hi)

    def started(mask: np.ndarray) -> np.ndarray:
        s = np.sort(start[mask])
        return np.searchsorted(s, hi, side="left") - np.searchsorted(s, lo, side="left")

    comm_us = covered(comm)
    measured = covered(overlapping)
    # |A ∩ B| = |A| + |B| - |A ∪ B|, per step, with no interval intersection built (0 without
    # communication: the two unions of the compute time alone, the costly part on a large trace, cancel).
    overlap = (np.maximum(measured + covered(compute) - covered(overlapping | compute), 0.0) if overlapping.any()
               else np.zeros(len(lo)))
    step_us = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(step_us > 0, comm_us / step_us, np.nan)
        overlap_share = np.where(measured > 0, overlap / measured, np.nan)
    return pd.DataFrame(
        {
            "step": spans["step"].to_numpy(),
            "kernels": started(comm_kernel),
            "host_ops": started(comm_host),
            "kernel_us": covered(comm_kernel),
            "host_us": covered(comm_host),
            "communication_us": comm_us,
            "step_us": step_us,
            "share": share,
            "overlap_us": overlap,
            "overlap_share": overlap_share,
        },
        columns=COMMUNICATION_COLUMNS,
    )
