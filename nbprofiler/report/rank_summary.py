"""What a distributed report keeps of each rank: its summary tables, never its events.

A job of 64 ranks of 50 MB each cannot hold every rank's event tables in one
process, and comparing ranks needs only a few small per-step tables of each.
``nbprofiler.load`` reduces every rank to a ``RankSummary`` where it parsed it
(a worker process, or another machine through ``executor=``), so only these
tables travel back; ``Report.rank(n)`` parses rank n's trace again, from where
``RankTraces`` says it is, when its full tables are wanted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd

from ..trace.parser import parse_trace
from ..trace.sources import read_trace_file
from ..trace.table import DeviceInfo, EventTable, TraceMeta
from .read_only import handed_out

if TYPE_CHECKING:
    from .report import Report


@dataclass(frozen=True, eq=False)
class RankSummary:
    """One rank's figures for the rank comparison and ``Comparison.ranks``: small and read-only.

    ``breakdown``, ``communication``, ``collectives`` and ``summary`` are the rank's Report tables of
    those names, each handed out as a copy of its own, as a Report hands out its tables.
    """

    rank: int
    source_path: str
    meta: TraceMeta
    device: DeviceInfo
    load_notes: tuple[str, ...] = ()
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    summary_values: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, rank: int, report: "Report") -> "RankSummary":
        """The summary of ``report``, filed as ``rank``: what a worker sends back instead of the report."""
        return cls(rank=rank, source_path=str(report.source_path), meta=report.table.meta, device=report.device,
                   load_notes=report.load_notes,
                   tables={"breakdown": report.breakdown, "communication": report.communication,
                           "collectives": report.collectives},
                   summary_values=report.summary)

    @property
    def breakdown(self) -> pd.DataFrame:
        """Per step, µs by category, as ``Report.breakdown``."""
        return handed_out(self.tables["breakdown"])

    @property
    def communication(self) -> pd.DataFrame:
        """Per step, collectives' count, µs, share and overlap, as ``Report.communication``."""
        return handed_out(self.tables["communication"])

    @property
    def collectives(self) -> pd.DataFrame:
        """Per collective, its calls, bytes, time and bus bandwidth, as ``Report.collectives``."""
        return handed_out(self.tables["collectives"])

    @property
    def summary(self) -> dict[str, Any]:
        """``avg_step_us, steps``, device metrics, FLOPs and MFU, as ``Report.summary``."""
        return dict(self.summary_values)


def parse_file(path: Path) -> EventTable:
    """A trace file's events, its bytes let go as soon as the table holds them."""
    data = read_trace_file(path).data
    try:
        return parse_trace(data, source=str(path))
    finally:
        del data
