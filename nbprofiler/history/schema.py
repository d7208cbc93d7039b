"""The history's tables, and the migrations that bring an older file up to date.

``PRAGMA user_version`` is the schema version: the number of ``MIGRATIONS`` a file has
had. Opening a file applies the ones it lacks, in order, in one transaction (SQLite's
schema changes are transactional), so two kernels opening an old file at once migrate
it once, and a crash mid-way leaves it as it was. A file with a higher version was
written by a newer nbprofiler: it is left untouched, since this code cannot know what
its tables mean.

Schema version 1, one row per kept run::

    runs(
      run_id         INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
      ran_at         TEXT NOT NULL,     -- when the run ended, UTC, ISO 8601
      notebook       TEXT,              -- the notebook's path, when the server named it
      cell           TEXT,              -- the cell's key (front-end cell id, or source:<hash>)
      cell_source    TEXT,
      device         TEXT NOT NULL,     -- the device's name ("CPU", "NVIDIA A100-SXM4-40GB")
      options        TEXT NOT NULL,     -- ProfileOptions as a JSON object
      steps_run      INTEGER NOT NULL,  -- steps the cell ran
      steps          INTEGER NOT NULL,  -- steps the average is over (report.step_window)
      avg_step_us    REAL,
      samples_per_s  REAL,
      top_suggestion TEXT,              -- the title of the first suggestion (largest expected gain)
      error          TEXT,              -- what the cell raised, if it did
      trace_path     TEXT,              -- the trace written by --trace / --tensorboard, absolute
      nbprofiler     TEXT NOT NULL,     -- the version that kept it
      run            TEXT NOT NULL,     -- the RunRecord as JSON (report/saved.py's codec, no line marks)
      tables         TEXT NOT NULL,     -- JSON, see record.py
      suggestions    TEXT NOT NULL,     -- JSON list, see record.py
      notes          TEXT NOT NULL      -- JSON list of the report's notes
    )
    runs_by_cell ON runs(cell, run_id)   -- a cell's runs, for history(cell=) and previous_run

The scalar columns are what ``history()`` lists without decoding any JSON.

Schema version 2 adds ``runs.cycles INTEGER NOT NULL DEFAULT 0``: the profiler cycles of a
``--every N`` run (the rows of its ``report.cycles``, kept in ``run``), 0 for any other run and
for the runs kept before it was.

Schema version 3 adds one row per ``batch_size_curve`` or ``tune_dataloader`` result, which a
later run of the same cell or set-up quotes (``measurements.py``)::

    measurements(
      measurement_id INTEGER PRIMARY KEY AUTOINCREMENT,
      measured_at    TEXT NOT NULL,     -- UTC, ISO 8601
      kind           TEXT NOT NULL,     -- "batch_size_curve" or "tune_dataloader"
      cell           TEXT,              -- the profiled cell it follows (the latest run's), else the one it ran in
      cell_source    TEXT,              -- a fingerprint of that cell's source then
      device         TEXT NOT NULL,     -- as a report names it
      torch          TEXT NOT NULL,     -- torch.__version__
      models         TEXT NOT NULL,     -- JSON list of "Class(N parameters)" of the modules it trained
      loader         TEXT,              -- "Dataset(length)" of the loader it tuned, or null
      result         TEXT NOT NULL      -- JSON: StoredMeasurement's fields (records.py), but ``stale``
    )
    measurements_by_cell ON measurements(cell, measurement_id)
"""
from __future__ import annotations

import sqlite3

from .atomic import atomic

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE runs (
            run_id INTEGER PRIMARY KEY AUTOINCREMENT,
            ran_at TEXT NOT NULL,
            notebook TEXT,
            cell TEXT,
            cell_source TEXT,
            device TEXT NOT NULL,
            options TEXT NOT NULL,
            steps_run INTEGER NOT NULL,
            steps INTEGER NOT NULL,
            avg_step_us REAL,
            samples_per_s REAL,
            top_suggestion TEXT,
            error TEXT,
            trace_path TEXT,
            nbprofiler TEXT NOT NULL,
            run TEXT NOT NULL,
            tables TEXT NOT NULL,
            suggestions TEXT NOT NULL,
            notes TEXT NOT NULL
        )""",
        "CREATE INDEX runs_by_cell ON runs(cell, run_id)",
    ),
    ("ALTER TABLE runs ADD COLUMN cycles INTEGER NOT NULL DEFAULT 0",),
    (
        """CREATE TABLE measurements (
            measurement_id INTEGER PRIMARY KEY AUTOINCREMENT,
            measured_at TEXT NOT NULL,
            kind TEXT NOT NULL,
            cell TEXT,
            cell_source TEXT,
            device TEXT NOT NULL,
            torch TEXT NOT NULL,
            models TEXT NOT NULL,
            loader TEXT,
            result TEXT NOT NULL
        )""",
        "CREATE INDEX measurements_by_cell ON measurements(cell, measurement_id)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


class NewerSchemaError(Exception):
    """The file's schema version is above ``SCHEMA_VERSION``."""

    def __init__(self, version: int) -> None:
        super().__init__(f"was written by a newer nbprofiler (schema version {version}; this one knows up to "
                         f"{SCHEMA_VERSION}): upgrade nbprofiler (pip install -U nbprofiler)")


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring the file to ``SCHEMA_VERSION`` (``conn`` in autocommit mode); ``NewerSchemaError``
    when it is ahead. The version is read again under the write lock: another process may
    have migrated the file in between."""
    if schema_version(conn) == SCHEMA_VERSION:
        return
    with atomic(conn, "BEGIN IMMEDIATE"):
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise NewerSchemaError(version)
        for migration in MIGRATIONS[version:]:
            for statement in migration:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
