"""The Distributed view's tables: each rank's figures, from its summary (a folder of ranks) or
from the report itself (one rank's trace that ran collectives, such as rank 3 of 8)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol

import pandas as pd

from ..analysis.distributed import rank_steps as split_steps

if TYPE_CHECKING:
    from .report import Report


class RankTables(Protocol):
    """What a rank gives the view: a ``RankSummary``, or the Report of a single rank's trace."""

    @property
    def breakdown(self) -> pd.DataFrame: ...

    @property
    def communication(self) -> pd.DataFrame: ...

    @property
    def collectives(self) -> pd.DataFrame: ...


def rank_tables(report: "Report") -> Mapping[int, RankTables]:
    """Every rank's tables by rank: the folder's ranks; a single trace that ran collectives as its
    own rank (``distributedInfo.rank``, 0 without one); nothing for a run without communication
    (or a run kept by the history, which has no communication table)."""
    if report.ranks:
        return dict(report.ranks)
    if "communication" in report.lacks:
        return {}
    comm = report.communication
    if comm.empty or not (comm["communication_us"] > 0).any():
        return {}
    return {report.table.meta.rank or 0: report}


def rank_steps(report: "Report") -> pd.DataFrame:
    """Per rank and step, µs: the step, computation, communication, their overlap and other
    (``analysis.distributed``); empty for a run without distributed data."""
    ranks = rank_tables(report)
    return split_steps({n: (r.breakdown, r.communication) for n, r in ranks.items()})
