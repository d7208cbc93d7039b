"""``nbprofiler.load``: a Report from trace files, through the same parser as live runs."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import TraceError
from ..trace.parser import parse_trace
from ..trace.sources import find_trace_files, read_trace_file
from ..trace.table import EventTable, Kind
from .report import Report
from .saved import SUFFIX as SAVED_SUFFIX
from .saved import read_report

# ``tensorboard_trace_handler`` names each file ``<worker>.<time>.pt.trace.json[.gz]``: the
# worker (``<host>_<pid>`` unless given) is one process, the time tells its profiling cycles apart.
_HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<time>\d+)\.pt\.trace\.json(\.gz)?$")
_NAMES_SHOWN = 3
_LOST_NAME = "unknown"  # what torch's JSON export writes for a name it cannot write (see _lost_names_note)


@dataclass
class _Process:
    """The traces one process (a worker, as one rank or none) wrote: its latest cycle parsed."""

    latest: Report
    path: Path  # the latest cycle's file
    time: int
    earlier: list[Path] = field(default_factory=list)


def load(path: str | os.PathLike[str]) -> Report:
    """Load a Chrome trace (``.json``/``.json.gz``), a ``tensorboard_trace_handler`` directory,
    or a report ``Report.save`` wrote (``.nbprof``: the run's data with its trace).

    In a directory, files are grouped by the process that wrote them: the worker
    in the file name and the rank in its ``distributedInfo``. A schedule with
    ``repeat`` makes one process write a file per profiling cycle; the latest
    cycle is loaded and the report's notes name the file and the earlier cycles
    (pass a file's path to load one of them). Several processes with distinct
    ranks are one distributed run: the lowest rank's Report, with every rank's
    Report in ``report.ranks``. Anything else raises rather than guess which
    run was meant: processes without ``distributedInfo`` are separate runs,
    never ranks (comparing them would flag a "straggler" that is just another
    run), and two processes claiming one rank are two runs mixed. Bad input
    raises ``nbprofiler.TraceError`` naming the file and the problem, except an
    empty file among others: a rank that crashed before its export, or is still
    writing, must not hide the ranks that finished, so it is skipped and named in
    the notes.
    """
    files = find_trace_files(path)
    if files[0].name.endswith(SAVED_SUFFIX):  # only a file named itself: a directory yields trace files
        return read_report(files[0])
    empty = [f for f in files if f.stat().st_size == 0] if len(files) > 1 else []
    if len(empty) == len(files):  # nothing else to load: the first file's own error says it is empty
        empty = []
    files = [f for f in files if f not in empty]
    notes = _empty_files_note(path, empty, len(files))
    if len(files) == 1:
        report = _parse(files[0])
        return replace(report, load_notes=notes + _lost_names_note(report.table))
    processes: dict[tuple[str, int | None], _Process] = {}
    for f in files:
        report = _parse(f)
        worker, time = _worker_and_time(f)
        key = (worker, report.table.meta.rank)
        seen = processes.get(key)
        if seen is None:
            processes[key] = _Process(report, f, time)
        elif time > seen.time:
            seen.earlier.append(seen.path)
            seen.latest, seen.path, seen.time = report, f, time
        else:
            seen.earlier.append(f)
    without_rank = [p for (_, rank), p in processes.items() if rank is None]
    if len(processes) > 1 and without_rank:
        names = _names([p.path for p in without_rank])
        raise TraceError(path, f"{len(processes)} processes wrote traces here and {names} "
                               f"{'has' if len(without_rank) == 1 else 'have'} no distributedInfo, so they are "
                               "separate runs, not ranks of one; pass one file's path to nbprofiler.load")
    by_rank: dict[int, _Process] = {}
    for (_, rank), p in processes.items():
        number = 0 if rank is None else rank
        if number in by_rank:
            raise TraceError(path, f"two trace files claim rank {number}: {by_rank[number].path} and "
                                   f"{p.path}; load them one at a time")
        by_rank[number] = p
    first = by_rank[min(by_rank)]
    notes += _cycles_note(path, processes)
    ranks = {number: p.latest for number, p in by_rank.items()} if len(by_rank) > 1 else None
    return replace(Report.from_trace(first.latest.table, str(first.path), ranks=ranks),
                   load_notes=notes + _lost_names_note(first.latest.table))


def _parse(f: Path) -> Report:
    data = read_trace_file(f).data
    try:
        table = parse_trace(data, source=str(f))
    finally:
        del data
    return Report.from_trace(table, str(f))


def _worker_and_time(f: Path) -> tuple[str, int]:
    """The process a file comes from (its folder and worker name) and its cycle's time.

    A name the handler did not write is a process of its own (time 0): nothing
    says which of two such files came later.
    """
    m = _HANDLER_NAME.match(f.name)
    return (str(f.parent / m["worker"]), int(m["time"])) if m else (str(f), 0)


def _empty_files_note(path: str | os.PathLike[str], empty: list[Path], loaded: int) -> tuple[str, ...]:
    """Which empty files a directory load skipped, so a missing rank is never silent."""
    if not empty:
        return ()
    return (f"{path}: skipped {_names(empty)}: empty (0 bytes), as when a process stops before its export or is "
            f"still writing; loaded the other {loaded} file(s).",)


def _lost_names_note(table: EventTable) -> tuple[str, ...]:
    """How many events torch's JSON export wrote as "unknown", and of what kind.

    The exporter writes "unknown" in place of any name holding a non-ASCII or
    control character (``record_function("résumé ✓")``, a tab), so the file no
    longer has those names and distinct ranges share one "unknown" row. The note
    says so, rather than show that row as if it were an operator's real name.
    """
    lost = np.flatnonzero(table.names == _LOST_NAME)
    if not len(lost):
        return ()
    kinds = table.kind[table.name_code == lost[0]]
    ranges = int(np.count_nonzero(kinds == Kind.USER_ANNOTATION))
    what = ", ".join(part for count, part in ((ranges, f"{ranges} record_function range(s)"),
                                              (len(kinds) - ranges, f"{len(kinds) - ranges} other event(s)")) if count)
    return (f"{what} in {table.meta.source} are named '{_LOST_NAME}': torch.profiler's JSON export writes that for "
            f"every name with a non-ASCII or control character, such as record_function(\"résumé ✓\"), so their "
            "real names are not in the file and they share one row; use ASCII names to tell them apart.",)


def _cycles_note(path: str | os.PathLike[str], processes: dict[tuple[str, int | None], _Process]) -> tuple[str, ...]:
    """What the load chose when some process wrote several cycles, and how to see the others."""
    cycled = sorted(((rank, p) for (_, rank), p in processes.items() if p.earlier), key=lambda rp: rp[0] or 0)
    if not cycled:
        return ()
    chosen = "; ".join(f"{'' if rank is None else f'rank {rank}: '}{p.path.name}, "
                       f"the latest of {len(p.earlier) + 1} cycles" for rank, p in cycled)
    earlier = sum(len(p.earlier) for _, p in cycled)
    return (f"{path} holds several profiling cycles (schedule repeat); loaded the latest: {chosen}. The other "
            f"{earlier} file(s) are earlier cycles: pass one's path to nbprofiler.load to see it.",)


def _names(paths: list[Path]) -> str:
    shown = ", ".join(p.name for p in paths[:_NAMES_SHOWN])
    return shown + (f" and {len(paths) - _NAMES_SHOWN} more" if len(paths) > _NAMES_SHOWN else "")
