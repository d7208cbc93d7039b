"""A kept run back as a Report, and the list of kept runs.

The rebuilt Report has the run's RunRecord and, in ``report.stored``, the tables,
suggestions and notes the history kept (record.py), served as they were: the suggestions
are the ones the user saw, not recomputed from partial tables. Tables that need the raw
trace (the memory timeline, cell lines, modules, idle time, ...) are empty, and
``report.lacks`` names them; its notes say so, and where the run's trace file still
exists, how to load the full report from it.

``history()`` and ``stored_run()`` are called by the user, who asked for the history: an
unusable file raises its one-line ``HistoryError``. ``previous_run()`` is called by the
magic for ``--compare``: there an unusable file is a one-line note, and None.
"""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..advice.suggestion import Suggestion
from ..report.origin import Kind, Origin
from ..report.read_only import read_only_table
from ..report.report import Report
from ..report.saved import frame_from_json, run_from_json
from .location import history_path
from .record import TOP_ROWS
from .store import HistoryError, transaction

if TYPE_CHECKING:
    from .record import RunId

# Tables a stored run has without the trace: ``steps`` and ``cycles`` are the RunRecord's (``drift``
# is made from them), and a live run has
# one rank, so no rank comparison to lack.
_NOT_LACKING = ("steps", "cycles", "drift", "rank_comparison")
LISTED = ("run_id", "when", "notebook", "cell", "device", "steps_run", "steps", "cycles", "avg_step_ms",
          "samples_per_s", "top_suggestion", "error", "trace_path")
_LISTED_SQL = ("SELECT run_id, ran_at, notebook, cell, device, steps_run, steps, cycles, avg_step_us / 1000.0, "
               "samples_per_s, top_suggestion, error, trace_path FROM runs")


def history(cell: "str | Report | None" = None) -> pd.DataFrame:
    """One row per kept run, oldest first: ``run_id, when`` (UTC), ``notebook, cell, device,
    steps_run, steps`` (those the average is over), ``cycles`` (a ``--every N`` run's profiler
    cycles, else 0), ``avg_step_ms, samples_per_s, top_suggestion, error, trace_path``.
    ``cell``: a cell's key, or a Report of that cell, for that cell's runs only.
    ``nbprofiler.stored_run(run_id)`` reloads one, and its ``cycles`` gives a run's cycles back."""
    key = _cell_key(cell)
    path = history_path()
    if not path.exists():
        return _listing([])
    where, args = (" WHERE cell = ?", (key,)) if key is not None else ("", ())
    rows = transaction(lambda conn: conn.execute(f"{_LISTED_SQL}{where} ORDER BY run_id", args).fetchall(),
                       write=False, path=path)
    return _listing(rows)


def stored_run(run_id: "RunId") -> Report:
    """The kept run ``run_id`` as a Report (see the module's docstring for what it lacks)."""
    path = history_path()
    row = transaction(lambda conn: _row(conn, int(run_id)), write=False, path=path) if path.exists() else None
    if row is None:
        raise HistoryError(path, f"has no run {run_id} (nbprofiler.history() lists the runs it keeps)")
    return _report(row)


def previous_run(cell: str, before: "RunId | None" = None) -> Report | None:
    """The latest kept run of ``cell`` (older than run ``before`` when given); None when there
    is none, or when the history cannot be read (said in one line)."""
    path = history_path()
    if not path.exists():
        return None

    def latest(conn: sqlite3.Connection) -> sqlite3.Row | None:
        found = conn.execute("SELECT run_id FROM runs WHERE cell = ? AND run_id < ? ORDER BY run_id DESC LIMIT 1",
                             (cell, before if before is not None else 2**63 - 1)).fetchone()
        return None if found is None else _row(conn, found[0])

    try:
        row = transaction(latest, write=False, path=path)
    except HistoryError as exc:
        print(f"nbprofiler: --compare could not read the previous run: {exc}", file=sys.stderr)
        return None
    return None if row is None else _report(row)


def _cell_key(cell: "str | Report | None") -> str | None:
    if cell is None or isinstance(cell, str):
        return cell
    if isinstance(cell, Report):
        key = cell.cell_key
        if key is None:
            raise ValueError("this report has no cell key: only runs of a %%torchprofile cell are kept by cell")
        return key
    raise TypeError(f"cell must be a cell key (str) or a Report, got {type(cell).__name__}")


def _listing(rows: list[Any]) -> pd.DataFrame:
    table = pd.DataFrame.from_records(rows, columns=list(LISTED))
    table["when"] = pd.to_datetime(table["when"], utc=True, format="ISO8601")
    for column in ("run_id", "steps_run", "steps", "cycles"):
        table[column] = table[column].astype("int64")
    return table


def _row(conn: sqlite3.Connection, run_id: int) -> sqlite3.Row | None:
    conn.row_factory = sqlite3.Row
    row: sqlite3.Row | None = conn.execute(
        "SELECT run_id, ran_at, trace_path, run, tables, suggestions, notes FROM runs WHERE run_id = ?",
        (run_id,)).fetchone()
    return row


def _report(row: sqlite3.Row) -> Report:
    tables = json.loads(row["tables"])
    stored: dict[str, Any] = {name: frame_from_json(frame) for name, frame in tables["frames"].items()}
    stored.update(summary=tables["summary"], has_device_activity=tables["has_device_activity"],
                  suggestions=tuple(_suggestion(s) for s in json.loads(row["suggestions"])))
    lacks = tuple(name for name, attr in vars(Report).items()
                  if isinstance(attr, read_only_table) and name not in stored and name not in _NOT_LACKING)
    stored.update(lacks=lacks, notes=(*json.loads(row["notes"]), *_history_notes(row, lacks)))
    return Report(origin=Origin(Kind.STORED_RUN, run=run_from_json(json.loads(row["run"])), stored=stored))


def _suggestion(kept: dict[str, Any]) -> Suggestion:
    return Suggestion(**{**kept, "facts": tuple(kept["facts"])})


def _history_notes(row: sqlite3.Row, lacks: tuple[str, ...]) -> list[str]:
    """What the reloaded report is, and where the full one can still be had."""
    notes = [f"Reloaded from the run history (run {row['run_id']}, {row['ran_at']}) without its raw trace: the "
             f"top {TOP_ROWS} operators and kernels are kept, and it lacks {', '.join(lacks)}."]
    trace = row["trace_path"]
    if trace is not None and Path(trace).exists():
        notes.append(f"The run's trace is still at {trace}: nbprofiler.load({trace!r}) gives the full report.")
    return notes
