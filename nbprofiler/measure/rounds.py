"""Interleaved rounds: how the measuring tools compare settings on a noisy machine.

Timing A, then B, compares A with whatever else the machine did meanwhile: a
busy neighbour, a warming cache, a thermal limit. So every setting runs once
per round, in an order rotated each round, and settings are compared by their
per-round ratios to a reference measured in the same round. The median ratio
is the gain; the interquartile range of the ratios is its spread. A gain
smaller than its spread is not told apart from noise.
"""
from __future__ import annotations

from typing import Sequence, TypeVar

import pandas as pd

from ..advice import thresholds as T

Item = TypeVar("Item")


def rotated(items: Sequence[Item], round_index: int) -> list[Item]:
    """``items`` starting at position ``round_index`` (mod its length): each goes first in turn."""
    if not items:
        return []
    k = round_index % len(items)
    return [*items[k:], *items[:k]]


def quartiles(values: pd.DataFrame) -> pd.DataFrame:
    """Per column of ``values`` (rows: rounds), its ``median``, ``low`` and ``high`` quantiles
    (``T.MEASURED_SPREAD``: the quartiles)."""
    low_q, high_q = T.MEASURED_SPREAD
    return pd.DataFrame({"median": values.median(), "low": values.quantile(low_q), "high": values.quantile(high_q)})


def ratio_spread(rates: pd.DataFrame, reference: object) -> pd.DataFrame:
    """Per column of ``rates`` (rows: rounds, columns: settings), the quartiles of its per-round
    ratio to the ``reference`` column: the reference's own are all 1."""
    return quartiles(rates.div(rates[reference], axis=0))


def reliably_faster(median: pd.Series, low: pd.Series, high: pd.Series) -> pd.Series:
    """Settings whose gain (median ratio - 1) exceeds the spread of their ratios (high - low)."""
    return (median - 1.0) > (high - low)
