"""``nbprofiler.load``: a Report from trace files, through the same parser as live runs."""
from __future__ import annotations

import multiprocessing
import os
import re
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import TraceError
from ..machine import process_cpus
from ..trace.sources import find_trace_files
from ..trace.table import EventTable, Kind
from .rank_summary import RankSummary, parse_file
from .report import Report
from .saved import SUFFIX as SAVED_SUFFIX
from .saved_reader import read_report

# ``tensorboard_trace_handler`` names each file ``<worker>.<time>.pt.trace.json[.gz]``: the
# worker (``<host>_<pid>`` unless given) is one process, the time tells its profiling cycles apart.
_HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<time>\d+)\.pt\.trace\.json(\.gz)?$")
_NAMES_SHOWN = 3
_LOST_NAME = "unknown"  # what torch's JSON export writes for a name it cannot write (see _lost_names_note)


@dataclass
class _Process:
    """The traces one process (a worker, as one rank or none) wrote: its latest cycle's summary."""

    latest: RankSummary
    path: Path  # the latest cycle's file
    time: int
    earlier: list[Path] = field(default_factory=list)


class _Unreadable(NamedTuple):
    """A rank file that did not parse, and its one-line reason (a TraceError does not pickle)."""

    path: str
    problem: str


class _Parsed(NamedTuple):
    """A rank file's summary, and its events when it may be the lowest rank (rank 0, or none):
    that rank becomes the report itself, so its events come back rather than be parsed twice."""

    summary: RankSummary
    table: EventTable | None


def load(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], executor: Executor | None = None) -> Report:
    """Load a Chrome trace (``.json``/``.json.gz``), a ``tensorboard_trace_handler`` directory,
    or a report ``Report.save`` wrote (``.nbprof``: the run's data with its trace).

    In a directory, files are grouped by the process that wrote them: the worker
    in the file name and the rank in its ``distributedInfo``. A schedule with
    ``repeat`` makes one process write a file per profiling cycle; the latest
    cycle is loaded and the report's notes name the file and the earlier cycles
    (pass a file's path to load one of them). Several processes with distinct
    ranks are one distributed run: the lowest rank's Report, with every rank's
    ``RankSummary`` (the tables the rank comparison needs) in ``report.ranks``
    and its whole Report from ``report.rank(n)``. Anything else raises rather
    than guess which run was meant: processes without ``distributedInfo`` are
    separate runs, never ranks (comparing them would flag a "straggler" that is
    just another run), and two processes claiming one rank are two runs mixed.
    Bad input raises ``nbprofiler.TraceError`` naming the file and the problem,
    except a bad file among others: a rank that crashed before its export, or is
    still writing, must not hide the ranks that finished, so an empty or
    unreadable file is skipped and named in the notes.

    A directory's files are parsed in parallel, each reduced to its summary where
    it was parsed, so that only those tables come back: by default in a process
    pool as large as the cores this process may use, or by ``executor``, any
    ``concurrent.futures.Executor`` (a Dask ``client.get_executor()`` spreads the
    files over a cluster whose workers can read them at the same paths).
    """
    path = _path_text(path)
    if executor is not None and not isinstance(executor, Executor):  # a Dask Client maps to futures, not results
        raise TypeError(f"executor must be a concurrent.futures.Executor, such as a Dask client.get_executor(), or "
                        f"None for a pool of this machine's cores; got {type(executor).__name__} {executor!r:.60}")
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
    parsed, unreadable = _summaries(files, executor)
    notes += _unreadable_note(path, unreadable, len(parsed))
    by_rank, processes = _ranks(path, [p.summary for p in parsed])
    first = by_rank[min(by_rank)]
    table = next((p.table for p in parsed if p.summary is first.latest), None)
    # The lowest rank's events, as its worker parsed them (a table that came through a pickle is
    # made again, so that its columns are read-only as the parser leaves them); parsed here only
    # when no rank 0 came back with its events.
    table = parse_file(first.path) if table is None else replace(table)
    notes += _cycles_note(path, processes)
    ranks = {number: p.latest for number, p in by_rank.items()} if len(by_rank) > 1 else None
    return replace(Report.from_trace(table, str(first.path), ranks=ranks), load_notes=notes + first.latest.load_notes)


def _path_text(path: Any) -> str:
    """``path`` as text, a bytes path decoded as ``os.fsdecode`` does; anything else a TypeError
    that says what ``load`` takes."""
    try:
        return os.fsdecode(path)
    except TypeError:
        raise TypeError(f"nbprofiler.load takes a path (str, bytes or os.PathLike) to a trace file, a directory of "
                        f"them or a .nbprof file; got {type(path).__name__}") from None


def _summaries(files: list[Path], executor: Executor | None) -> tuple[list[_Parsed], list[_Unreadable]]:
    """Every file's summary, parsed by ``executor`` (see ``load``), and the files that did not parse.

    Raises the first file's error when none parsed, as a load of that file alone would.
    """
    paths = [str(f) for f in files]
    # A daemon process (a multiprocessing or Dask worker calling load) may not start processes of its own.
    workers = 1 if multiprocessing.current_process().daemon else min(len(paths), process_cpus())
    if executor is not None:
        results = list(executor.map(summarize_file, paths))
    elif workers > 1:
        pool = ProcessPoolExecutor(max_workers=workers)
        try:
            results = list(pool.map(summarize_file, paths))
        finally:
            # On Ctrl-C (or any error) the files not started yet are dropped at once, rather than
            # parsed to the end while the user waits; the workers finish their file and exit.
            pool.shutdown(wait=False, cancel_futures=True)
    else:
        results = [summarize_file(p) for p in paths]
    parsed = [r for r in results if isinstance(r, _Parsed)]
    unreadable = [r for r in results if isinstance(r, _Unreadable)]
    if not parsed:
        raise TraceError(unreadable[0].path, unreadable[0].problem)
    return parsed, unreadable


def summarize_file(path: str) -> _Parsed | _Unreadable:
    """One rank file parsed and reduced to its summary (with its events when it is rank 0), or
    why it could not be: what a worker of ``load`` runs (a module-level function, so that any
    executor can pickle it by name)."""
    try:
        report = _parse(Path(path))
    except TraceError as exc:
        return _Unreadable(path, exc.problem)
    rank = report.table.meta.rank or 0
    summary = RankSummary.of(rank, replace(report, load_notes=_lost_names_note(report.table)))
    return _Parsed(summary, report.table if rank == 0 else None)


def _ranks(path: str | os.PathLike[str],
           summaries: list[RankSummary]) -> tuple[dict[int, _Process], dict[tuple[str, int | None], _Process]]:
    """The files grouped by process (its latest cycle chosen), then by rank; raises for files
    that are not the ranks of one run (see ``load``)."""
    processes: dict[tuple[str, int | None], _Process] = {}
    for summary in summaries:
        f = Path(summary.source_path)
        worker, time = _worker_and_time(f)
        key = (worker, summary.meta.rank)
        seen = processes.get(key)
        if seen is None:
            processes[key] = _Process(summary, f, time)
        elif time > seen.time:
            seen.earlier.append(seen.path)
            seen.latest, seen.path, seen.time = summary, f, time
        else:
            seen.earlier.append(f)
    without_rank = [p for (_, rank), p in processes.items() if rank is None]
    if len(processes) > 1 and without_rank:
        names = _names([p.path for p in without_rank])
        raise TraceError(path, f"{len(processes)} processes wrote traces here and {names} "
                               f"{'has' if len(without_rank) == 1 else 'have'} no distributedInfo, so they are "
                               "separate runs, not ranks of one; pass one file's path to nbprofiler.load")
    by_rank: dict[int, _Process] = {}
    for p in processes.values():
        if p.latest.rank in by_rank:
            raise TraceError(path, f"two trace files claim rank {p.latest.rank}: {by_rank[p.latest.rank].path} and "
                                   f"{p.path}; load them one at a time")
        by_rank[p.latest.rank] = p
    return by_rank, processes


def _parse(f: Path) -> Report:
    return Report.from_trace(parse_file(f), str(f))


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


def _unreadable_note(path: str | os.PathLike[str], unreadable: list[_Unreadable], loaded: int) -> tuple[str, ...]:
    """Which files a directory load could not parse, each with its reason, so a missing rank is never silent."""
    if not unreadable:
        return ()
    reasons = "; ".join(f"{Path(u.path).name}: {u.problem}" for u in unreadable)
    return (f"{path}: skipped {len(unreadable)} file(s) that could not be read ({reasons}); loaded the other "
            f"{loaded} file(s).",)


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
