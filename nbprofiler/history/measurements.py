"""The measurements the history keeps, and those a later run's advice quotes.

A ``batch_size_curve`` or ``tune_dataloader`` result measures what a suggestion only estimates;
kept here (``keep_measurement``), a later profile of the same cell, or of the same model and
loader, quotes it (``measured_for``) instead of its estimate. A measurement of the same model on
another device, under another torch version, or of a cell whose code has changed since, no
longer applies: it is handed on with ``stale`` saying why, and the advice keeps its estimate.

What ties a measurement to a run (``SetUp``): the profiled cell it follows (its key and a
fingerprint of its source), the device as a report names it, torch's version, the modules it
trained ("Net(12,345 parameters)") and the loader it tuned ("TensorDataset(16000)"). Like every
history row, a measurement may come from someone else: its result is decoded into typed fields
(``report.saved.measurement_from_json``), never run, and what the advice makes of it is text
and numbers. Keeping or reading one never fails the measurement or the run: a history that
cannot be used is one line on stderr, said once per run by the run's keeping.
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from datetime import datetime, timezone

from ..records import StoredMeasurement
from ..report.saved import measurement_from_json
from .location import history_path
from .store import HistoryError, transaction

KINDS = ("batch_size_curve", "tune_dataloader")
MEASURED_WAIT_S = 0.1
"""The longest a run waits to read the measurements, every attempt together. A reader of a WAL file
waits for no writer, only for a checkpoint or a migration: a history locked longer costs the run's
advice its quotes, never the run a second ``HISTORY_WAIT_S`` (its keeping has that one)."""


@dataclasses.dataclass(frozen=True)
class SetUp:
    """What a measurement measured, or what a run ran: see the module's docstring."""

    cell: str | None
    cell_source: str | None
    device: str
    torch: str
    models: tuple[str, ...] = ()
    loader: str | None = None


def keep_measurement(measured: StoredMeasurement, setup: SetUp) -> None:
    """Keep ``measured`` in the history; a history that cannot be written is one line on stderr."""
    row = {"measured_at": measured.measured_at, "kind": measured.kind, "cell": setup.cell,
           "cell_source": setup.cell_source, "device": setup.device, "torch": setup.torch,
           "models": json.dumps(list(setup.models)), "loader": setup.loader,
           "result": json.dumps({k: v for k, v in dataclasses.asdict(measured).items() if k != "stale"})}

    def insert(conn: sqlite3.Connection) -> None:
        names = ", ".join(row)
        conn.execute(f"INSERT INTO measurements ({names}) VALUES ({', '.join('?' for _ in row)})",  # noqa: S608
                     tuple(row.values()))

    try:
        transaction(insert, write=True)
    except HistoryError as exc:
        print(f"nbprofiler: this {measured.kind} result was not kept, so later profiles cannot quote it: {exc}",
              file=sys.stderr)


def measured_now() -> str:
    """Now, as a measurement's ``measured_at``."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def measured_for(run: SetUp) -> tuple[StoredMeasurement, ...]:
    """The latest measurement of each kind of ``run``'s cell, models or loader, each with ``stale``
    set where it no longer applies; none where the history has none or cannot be read (silently:
    the run is kept in the same history next, and its report's one note says what is wrong with it)."""
    path = history_path()
    if not path.exists():
        return ()

    def rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
        conn.row_factory = sqlite3.Row
        return conn.execute("SELECT * FROM measurements ORDER BY measurement_id DESC").fetchall()

    try:
        found = transaction(rows, write=False, path=path, wait_s=MEASURED_WAIT_S)
    except HistoryError:
        return ()
    latest: dict[str, StoredMeasurement] = {}
    for row in found:
        if row["kind"] in latest or row["kind"] not in KINDS or not _same_set_up(row, run):
            continue
        try:
            measured = measurement_from_json(json.loads(row["result"]))
        except (ValueError, TypeError):  # a row this version cannot read is no measurement to quote
            continue
        latest[row["kind"]] = dataclasses.replace(measured, kind=row["kind"], stale=_stale(row, run))
    return tuple(latest[kind] for kind in KINDS if kind in latest)


def _same_set_up(row: sqlite3.Row, run: SetUp) -> bool:
    """The same cell, or the same modules (all of the measured ones among the run's), or the same loader."""
    try:
        models = {str(m) for m in json.loads(row["models"])}
    except (ValueError, TypeError):
        models = set()
    return ((run.cell is not None and row["cell"] == run.cell)
            or (bool(models) and models <= set(run.models))
            or (run.loader is not None and row["loader"] == run.loader))


def _stale(row: sqlite3.Row, run: SetUp) -> str | None:
    """Why the measurement in ``row`` no longer applies to ``run``; None when it does."""
    why = []
    if row["device"] != run.device:
        why.append(f"it ran on {row['device']}, this run on {run.device}")
    if row["torch"] != run.torch:
        why.append(f"it ran under torch {row['torch']}, this run under {run.torch}")
    if run.cell is not None and row["cell"] == run.cell and row["cell_source"] != run.cell_source:
        why.append("the cell's code has changed since")
    return "; ".join(why) or None
