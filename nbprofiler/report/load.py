"""``nbprofiler.load``: a Report from trace files, through the same parser as live runs."""
from __future__ import annotations

import os

from ..errors import TraceError
from ..trace.parser import parse_trace
from ..trace.sources import find_trace_files, read_trace_file
from .report import Report


def load(path: str | os.PathLike[str]) -> Report:
    """Load a Chrome trace (``.json``/``.json.gz``) or a ``tensorboard_trace_handler`` directory.

    A directory with traces from several ranks gives the lowest rank's Report,
    with every rank's Report in ``report.ranks``. Bad input raises
    ``nbprofiler.TraceError`` naming the file and the problem.
    """
    files = find_trace_files(path)
    reports = []
    for f in files:
        data = read_trace_file(f).data
        try:
            table = parse_trace(data, source=str(f))
        finally:
            del data
        reports.append(Report.from_trace(table, str(f)))
    if len(reports) == 1:
        return reports[0]
    by_rank: dict[int, Report] = {}
    for i, r in enumerate(reports):
        rank = r.table.meta.rank if r.table.meta.rank is not None else i
        if rank in by_rank:
            raise TraceError(path, f"two trace files claim rank {rank}: {by_rank[rank].source_path} and {r.source_path}; "
                                   "load them one at a time")
        by_rank[rank] = r
    first = by_rank[min(by_rank)]
    return Report.from_trace(first.table, first.source_path, ranks=by_rank)
