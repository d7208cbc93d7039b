"""Ranks side by side, and the ranks that hold the others back.

In data-parallel training every rank waits for the slowest one at each
collective, so step times come out nearly equal and the slow rank hides: the
others show it as long communication (waiting inside the collective), while
the slow rank itself shows more time outside communication. So three figures
per rank are compared, each as its mean per step:

- ``step_us``: the step's wall time (the breakdown's ``total``);
- ``communication``: the breakdown's communication, i.e. collective time
  that no compute kernel hid (on a CPU-only run, all collective time): the
  time the rank was held up in collectives, waits for other ranks included;
- ``compute_us``: the step minus that, the rank's own work.

``communication_us`` (all collective time, hidden or not, from
``step_communication``) is shown beside them.

A figure *stands out* on a rank when it is above both

- the median of the other ranks + 3 x their scaled MAD (1.4826 x the median
  absolute deviation, which equals the standard deviation on normal data but
  ignores a few extreme ranks), and
- 1.1 x the median of the other ranks (more than 10% off, so that ranks in
  lock-step with a tiny spread are not flagged over microseconds).

Comparing each rank with the *others* keeps one extreme rank from moving its
own yardstick, and with two ranks the rule reduces to "more than 10% above
the other". ``straggler`` is set where step time or compute stands out;
``long_wait`` where communication does: such a rank waits, usually for a
straggler, or has a slower link.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

SPREAD_FACTOR = 3.0
MIN_EXCESS = 0.10
_MAD_TO_SIGMA = 1.4826
FIGURES = (("step_us", "step time"), ("compute_us", "compute (step minus communication)"),
           ("communication", "communication"))


def rank_comparison(breakdowns: Mapping[int, pd.DataFrame], communication: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """One row per rank: ``rank, steps, step_us``, the mean per step of every
    breakdown category (µs), ``communication_us, compute_us``, the flags
    ``slow_step, slow_compute, long_wait, straggler`` and ``reason`` (plain
    text, empty when nothing stands out).

    ``breakdowns`` maps rank to its step breakdown (``step, <categories>...,
    total``) and ``communication`` to its ``step_communication`` table, over the
    same steps.
    """
    rows = []
    for rank in sorted(breakdowns):
        b, c = breakdowns[rank], communication[rank]
        parts = {col: float(b[col].mean()) if len(b) else np.nan for col in b.columns if col != "step"}
        step_us = parts.pop("total", np.nan)
        comm_us = float(c["communication_us"].mean()) if len(c) else np.nan
        rows.append({"rank": rank, "steps": len(b), "step_us": step_us, **parts,
                     "communication_us": comm_us, "compute_us": step_us - parts["communication"]})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    flags = {column: stands_out(frame[column].to_numpy(dtype=np.float64)) for column, _ in FIGURES}
    frame["slow_step"] = flags["step_us"]
    frame["slow_compute"] = flags["compute_us"]
    frame["long_wait"] = flags["communication"]
    frame["straggler"] = frame["slow_step"] | frame["slow_compute"]
    frame["reason"] = [_reason(frame, i, flags) for i in range(len(frame))]
    return frame


def stands_out(values: np.ndarray) -> np.ndarray:
    """Whether each value is above the others by the rule in the module docstring."""
    n = len(values)
    out = np.zeros(n, dtype=bool)
    if n < 2:
        return out
    for i in range(n):  # one pass per rank: ranks are few
        others = np.delete(values, i)
        others = others[np.isfinite(others)]
        if not np.isfinite(values[i]) or len(others) == 0:
            continue
        ref = float(np.median(others))
        spread = _MAD_TO_SIGMA * float(np.median(np.abs(others - ref)))
        out[i] = values[i] > ref + SPREAD_FACTOR * spread and values[i] > (1 + MIN_EXCESS) * ref
    return out


def _reason(frame: pd.DataFrame, i: int, flags: dict[str, np.ndarray]) -> str:
    said = []
    for column, label in FIGURES:
        if flags[column][i]:
            others = np.delete(frame[column].to_numpy(dtype=np.float64), i)
            said.append(f"{label} {frame[column].iloc[i] / 1e3:.3g} ms/step vs {np.nanmedian(others) / 1e3:.3g} ms "
                        "on the other ranks")
    return "; ".join(said)
