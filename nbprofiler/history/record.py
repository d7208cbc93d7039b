"""What the history keeps of a run: the figures a later look or comparison needs, in kilobytes.

The raw trace (megabytes) is not kept, only its path when the run wrote one. What is kept
goes in the ``runs`` row (schema.py): the scalars ``history()`` lists, and three JSON texts:

- ``run``: the RunRecord (every step the cell ran with its phase and times, the DataLoaders,
  options, device, cell source), in report/saved.py's codec, without the ``--stack`` line marks;
- ``tables``: ``{"summary": {...}, "has_device_activity": bool, "frames": {name: FRAME}}``,
  FRAME being report/saved.py's column-by-column codec. The frames are ``stretched_steps``
  (the step window), ``breakdown`` and ``phases`` (per profiled step), ``operators`` (the
  ``TOP_ROWS`` largest by the main time: device self time on a GPU run, host otherwise),
  ``kernels`` (the ``TOP_ROWS`` largest by total time), ``memory_steps`` (every step the cell
  ran) and ``memory_growth``;
- ``suggestions``: one object per Suggestion field, as the report made them.

A row is a few tens of KB; the per-step tables grow with the steps the cell ran (about
0.3 KB a step). Nothing is pruned: the history is the user's, and ``DELETE FROM runs`` (or
removing the file) is theirs to run.
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..report.saved import frame_to_json, run_to_json
from ..version import __version__
from .store import HistoryError, transaction

if TYPE_CHECKING:
    from ..options import ProfileOptions
    from ..report import Report

TOP_ROWS = 50
KEPT_FRAMES = ("stretched_steps", "breakdown", "phases", "operators", "kernels", "memory_steps", "memory_growth")
RunId = int


def keep(report: "Report", *, cell: str | None, notebook: str | None) -> RunId | None:
    """Keep ``report``'s run in the history and return its run id. Never raises, and waits for
    another process's lock ``HISTORY_WAIT_S`` at most: a run that cannot be kept (a history that
    cannot be written, a value it cannot encode) gets a note in its report that names it and
    says why, printed on stderr too, each time, and None."""
    ran_at = datetime.now(timezone.utc)
    try:
        row = run_row(report, cell, notebook, ran_at)
    except Exception as exc:  # noqa: BLE001 - a value the encoding does not know must not cost the user the run
        _not_kept(report, ran_at, f"it could not be encoded for the run history ({type(exc).__name__}: {exc})")
        return None
    try:
        return transaction(lambda conn: _insert(conn, row), write=True)
    except HistoryError as exc:
        _not_kept(report, ran_at, str(exc))
        return None


def _not_kept(report: "Report", ran_at: datetime, why: str) -> None:
    """Say that ``report``'s run was not kept, and ``why``: in the report's notes (the run's own,
    where its caveats go), which are made again with it, and as one line on stderr, which the
    user sees under a report already drawn."""
    note = f"This run (ended {ran_at:%Y-%m-%d %H:%M:%S} UTC) was not kept: {why}."
    report.add_run_note(note)
    print(f"nbprofiler: {note}", file=sys.stderr)


def run_row(report: "Report", cell: str | None, notebook: str | None, ran_at: datetime) -> dict[str, Any]:
    """The ``runs`` row for ``report``, ended at ``ran_at`` (a live run's: only a live run has a
    RunRecord to keep)."""
    run = report.run
    if run is None:
        raise ValueError("only a live run is kept (a trace file's report has no run record)")
    summary = report.summary
    top = report.suggestions  # largest expected gain first
    return {
        "ran_at": ran_at.isoformat(timespec="milliseconds"),
        "notebook": notebook,
        "cell": cell,
        "cell_source": run.cell_source,
        "device": report.device.name,
        "options": _json(dataclasses.asdict(run.options)),
        "steps_run": len(run.steps),
        "cycles": len(report.cycles),
        "steps": int(summary.get("steps") or 0),
        "avg_step_us": summary.get("avg_step_us"),
        "samples_per_s": summary.get("samples_per_s"),
        "top_suggestion": top[0].title if top else None,
        "error": run.error,
        "trace_path": trace_path(run.options),
        "nbprofiler": __version__,
        "run": _json(run_to_json(run)),
        "tables": _json({"summary": summary, "has_device_activity": report.has_device_activity,
                         "frames": {name: frame_to_json(frame) for name, frame in kept_frames(report).items()}}),
        "suggestions": _json([dataclasses.asdict(s) for s in report.suggestions]),
        "notes": _json(list(report.notes)),
    }


def kept_frames(report: "Report") -> dict[str, Any]:
    """The tables kept, the operators and kernels cut to their ``TOP_ROWS`` largest."""
    frames = {name: getattr(report, name) for name in KEPT_FRAMES}
    main = "device_self_us" if report.has_device_activity else "host_self_us"
    frames["operators"] = frames["operators"].sort_values(main, ascending=False, kind="stable").head(TOP_ROWS)
    frames["kernels"] = frames["kernels"].sort_values("total_us", ascending=False, kind="stable").head(TOP_ROWS)
    return frames


def trace_path(options: "ProfileOptions") -> str | None:
    """The trace file (``--trace``) or TensorBoard folder (``--tensorboard``) the run wrote, absolute,
    so that it is found from any working folder later; None when it wrote none (or failed to)."""
    for written in (options.trace, options.tensorboard):
        if written:
            path = Path(written).expanduser().resolve()
            if path.exists():
                return str(path)
    return None


def _insert(conn: sqlite3.Connection, row: dict[str, Any]) -> RunId:
    names = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    cursor = conn.execute(f"INSERT INTO runs ({names}) VALUES ({marks})",  # noqa: S608 - the schema's own columns
                          tuple(row.values()))
    assert cursor.lastrowid is not None
    return int(cursor.lastrowid)


def _json(value: Any) -> str:
    return json.dumps(value, default=_plain, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """numpy scalars and arrays (in a summary or a suggestion's evidence) as JSON values."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")
