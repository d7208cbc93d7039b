"""Per-step host phases: where the training loop's wall time went on the host.

``dataloader, forward, backward, optimizer, other`` (µs) per profiled step,
plus ``total`` (the step's host wall time). This is the breakdown that still
means something on a CPU-only run, where the device-side breakdown has nothing
to show.

Each instant of a step goes to exactly one phase, so the phases add up to the
step: a phase's intervals are merged, and where phases overlap in time the
first in ``dataloader > backward > optimizer > forward`` wins (a closure-based
optimizer running forward and backward inside ``Optimizer.step`` still shows
its backward). What is left is ``other``: Python between operators, waits
with nothing recorded, the profiler's own step bookkeeping.

What marks each phase, and why:

- dataloader: ``enumerate(DataLoader)#...__next__`` ranges, which
  ``torch.utils.data`` records around every batch fetch.
- optimizer: ``Optimizer.step#...`` and ``Optimizer.zero_grad#...``
  annotations (``zero_grad`` is optimizer work, not forward).
- backward: ``autograd::engine::evaluate_function:`` ranges and ops whose
  ``Fwd thread id`` is above 0 (backward nodes name the forward thread that
  recorded them; forward ops carry 0), with everything nested in them. On a
  GPU run the engine runs them on its own thread (``pt_autograd_0``), and
  every top-level op on such a thread is backward work. On a CPU-only run the
  engine runs them on the calling thread, so backward is found by those
  ranges, never by thread alone. A range on the loop thread that does no
  dataloader or optimizer work and is more than half covered by the autograd
  thread's work (a user's ``record_function("## backward ##")`` around
  ``loss.backward()``) is the loop waiting for backward, so its uncovered
  time counts as backward too, below every other phase.
- forward: the remaining operator time on the loop thread (the thread of the
  ``ProfilerStep#N`` ranges): top-level ranges that contain no range of the
  phases above. A range that wraps the whole step contains those, so it does
  not swallow the step into forward.

Host ops on other threads (pin-memory threads, communication threads) are not
phases of the loop; their time shows only where the loop thread did nothing
else, as ``other``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.table import thread_key
from .intervals import accumulate_to_ancestors, covered_in_windows, merged_covered_in_windows, union
from .operators import BACKWARD_PREFIX, OperatorTree
from .steps import dataloader_names

PHASES = ("dataloader", "forward", "backward", "optimizer", "other")
PHASE_COLUMNS = ["step", *PHASES, "total"]

OPTIMIZER_PREFIXES = ("Optimizer.step#", "Optimizer.zero_grad#")
# A loop-thread range more than this share covered by autograd-thread work is a wait for backward.
BACKWARD_WAIT_COVERAGE = 0.5


def step_phases(tree: OperatorTree, steps: pd.DataFrame) -> pd.DataFrame:
    """One row per step: ``step, dataloader, forward, backward, optimizer, other, total`` in µs.

    ``steps`` is ``profiler_steps(table)`` (host ranges); a synthetic step
    (no ProfilerStep annotations) is the whole trace, as for every table.
    """
    if steps.empty:
        return pd.DataFrame(columns=PHASE_COLUMNS)
    base = float(steps["start_us"].min())  # keeps sub-µs precision on 1e15-µs timestamps
    win_start = steps["start_us"].to_numpy(dtype=np.float64) - base
    win_end = steps["end_us"].to_numpy(dtype=np.float64) - base
    masks = _phase_masks(tree, _loop_thread(tree, steps))
    start = tree.start - base
    end = start + tree.dur
    covered_before = np.zeros(len(steps))
    claimed = np.zeros(len(tree.index), dtype=bool)
    claimed_start, claimed_end = np.empty(0), np.empty(0)  # the union of the operators claimed so far
    out: dict[str, np.ndarray] = {p: np.zeros(len(steps)) for p in PHASES}
    for phase, mask in masks:
        new = mask & ~claimed
        if not new.any():  # claims nothing more: the phase gains exactly 0
            continue
        claimed |= new
        new_start, new_end = union(start[new], end[new])
        claimed_start, claimed_end = union(np.concatenate((claimed_start, new_start)),
                                           np.concatenate((claimed_end, new_end)))
        covered = merged_covered_in_windows(claimed_start, claimed_end, win_start, win_end)
        out[phase] += covered - covered_before
        covered_before = covered
    total = win_end - win_start
    out["other"] = np.maximum(total - covered_before, 0.0)
    frame = pd.DataFrame({"step": steps["step"].to_numpy(dtype=np.int64), **out, "total": total})
    return frame[PHASE_COLUMNS]


def phase_shares(phases: pd.DataFrame) -> pd.DataFrame:
    """The phases as fractions of each step's total (each row sums to 1)."""
    shares = phases.copy()
    total = phases["total"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        for p in PHASES:
            shares[p] = np.where(total > 0, phases[p].to_numpy(dtype=np.float64) / total, np.nan)
    shares["total"] = np.where(total > 0, 1.0, np.nan)
    return shares


def _phase_masks(tree: OperatorTree, loop: int) -> list[tuple[str, np.ndarray]]:
    """Which operators mark each phase, in priority order (a phase may appear twice)."""
    t = tree.table
    names = pd.Series(t.names, dtype=object)
    code = t.name_code[tree.index]
    is_dl = dataloader_names(t)[code]
    is_opt = names.str.startswith(OPTIMIZER_PREFIXES).to_numpy(dtype=bool)[code]
    is_bwd = names.str.startswith(BACKWARD_PREFIX).to_numpy(dtype=bool)[code] | (t["fwd_thread"][tree.index] > 0)

    thread = tree.thread
    on_loop = thread == loop
    autograd_threads = np.unique(thread[is_bwd & ~on_loop])
    on_autograd = np.isin(thread, autograd_threads)
    is_bwd = is_bwd | on_autograd

    parent = tree.parent
    marked = is_dl | is_opt | is_bwd
    holds_dl_or_opt = accumulate_to_ancestors((is_dl | is_opt).astype(np.float64), parent, tree.levels) > 0
    candidates = np.flatnonzero(on_loop & ~marked & ~holds_dl_or_opt)
    waits = np.zeros(len(thread), dtype=bool)
    if len(candidates) and on_autograd.any():
        covered = covered_in_windows(tree.start[on_autograd], tree.end[on_autograd],
                                     tree.start[candidates], tree.end[candidates])
        waits[candidates] = covered > BACKWARD_WAIT_COVERAGE * tree.dur[candidates]

    holds_marked = accumulate_to_ancestors((marked | waits).astype(np.float64), parent, tree.levels) > 0
    is_fwd = on_loop & ~holds_marked
    return [("dataloader", is_dl), ("backward", is_bwd), ("optimizer", is_opt), ("forward", is_fwd),
            ("backward", waits)]


def _loop_thread(tree: OperatorTree, steps: pd.DataFrame) -> int:
    """The training loop's thread: the ProfilerStep ranges' thread, or, with no
    step annotations, the thread with the most top-level operator time."""
    real = steps[~steps["synthetic"].astype(bool)]
    if len(real):
        keys = thread_key(real["pid"].to_numpy(), real["tid"].to_numpy())
        values, counts = np.unique(keys, return_counts=True)
        return int(values[np.argmax(counts)])
    roots = tree.parent < 0
    if not roots.any():
        return -1
    per_thread = pd.Series(tree.dur[roots]).groupby(tree.thread[roots]).sum()
    return int(per_thread.idxmax())
