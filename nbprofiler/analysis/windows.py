"""How much of a set of intervals falls inside each of many windows (steps).

Every per-step table (phases, communication) asks the same question: of this
category's time, how much lies inside step k? Answering it with one
``intersect_length`` per step is a Python loop over steps times a sort; here
the intervals are merged once and a cumulative "covered up to t" function is
evaluated at all window edges with one ``searchsorted``, so the cost is
O((n + w) log n) for n intervals and w windows, whatever the windows are.
"""
from __future__ import annotations

import numpy as np

from .intervals import union


def covered_in_windows(start: np.ndarray, end: np.ndarray, win_start: np.ndarray, win_end: np.ndarray) -> np.ndarray:
    """Length of the union of ``[start, end)`` inside each window ``[win_start, win_end)``.

    Windows may overlap each other or be empty; intervals may overlap or nest.
    """
    win_start = np.asarray(win_start, dtype=np.float64)
    win_end = np.asarray(win_end, dtype=np.float64)
    if len(start) == 0:
        return np.zeros(len(win_start))
    s, e = union(np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64))
    length = e - s
    before = np.concatenate([[0.0], np.cumsum(length)])  # before[k]: length of the first k intervals

    def covered_up_to(t: np.ndarray) -> np.ndarray:
        # Intervals that start at or before t; all but the last of them end before t.
        k = np.searchsorted(s, t, side="right")
        last = np.maximum(k - 1, 0)
        partial = np.clip(t - s[last], 0.0, length[last])
        return np.where(k > 0, before[last] + partial, 0.0)

    return np.maximum(covered_up_to(win_end) - covered_up_to(win_start), 0.0)
