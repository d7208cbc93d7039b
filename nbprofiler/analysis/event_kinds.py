"""Which events are of some kinds: a lookup table indexed by kind code.

``np.isin(table.kind, kinds)`` sorts or hashes a million kind codes on each call;
the codes are small integers, so indexing a boolean table by them is several times
faster, and every analysis asks this question of the whole trace.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..trace.table import Kind


def of_kind(kind: np.ndarray, wanted: Iterable[int]) -> np.ndarray:
    """Whether each event's kind (a ``Kind`` code) is one of ``wanted``."""
    table = np.zeros(max(Kind) + 1, dtype=bool)
    table[list(wanted)] = True
    return table[kind]
