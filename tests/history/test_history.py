"""The run history: runs kept in SQLite outlive the kernel, two writers at once lose nothing,
a bad file costs one line and never the run, and a stored run reloads as a Report."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from IPython.utils.capture import capture_output

import nbprofiler
from conftest import ROOT, SETUP_CELL, TRAIN_CELL
from nbprofiler.history import HistoryError, previous_run
from nbprofiler.history.record import TOP_ROWS
from nbprofiler.history.schema import SCHEMA_VERSION
from nbprofiler.render.views import ranked_suggestions

def profile_cell(shell, line: str = "-q -o run", cell: str = TRAIN_CELL):
    """Run a cell under the magic, which keeps the run in the history; its Report and what was
    printed and shown."""
    with capture_output() as captured:
        shell.run_cell_magic("torchprofile", line, cell)
    return shell.user_ns["run"], captured


def kept_id(report) -> int:
    """The run id the history gave ``report``'s run: the latest of its cell."""
    return int(nbprofiler.history(cell=report)["run_id"].iloc[-1])  # type: ignore[operator]  # a callable module


def keep(report):
    return nbprofiler.history.keep(report, cell="train-cell", notebook="history.ipynb")


def test_a_stored_run_reloads_with_the_tables_it_kept(shell, history_file, tmp_path):
    trace = tmp_path / "run.pt.trace.json"
    live, _ = profile_cell(shell, f"-q -o run --trace {trace}")
    run_id = kept_id(live)
    stored = nbprofiler.stored_run(run_id)

    assert stored.run is not None and stored.raw_trace is None
    pd.testing.assert_frame_equal(stored.run.steps, live.run.steps)
    assert stored.summary == live.summary
    assert stored.step_window == live.step_window
    for name in ("stretched_steps", "breakdown", "phases", "memory_steps", "memory_growth"):
        pd.testing.assert_frame_equal(getattr(stored, name), getattr(live, name), obj=name)
    top_ops = live.operators.sort_values("host_self_us", ascending=False, kind="stable").head(TOP_ROWS)
    pd.testing.assert_frame_equal(stored.operators, top_ops.reset_index(drop=True))
    assert list(stored.kernels.columns) == list(live.kernels.columns)
    assert stored.suggestions == live.suggestions  # as the user saw them, not recomputed
    assert stored.has_device_activity is False and stored.device == live.device

    # What needs the raw trace is named, and empty; the notes say so and where the trace still is.
    assert {"memory", "lines", "modules", "idle", "syncs"} <= set(stored.lacks)
    assert not {"summary", "operators", "breakdown", "steps"} & set(stored.lacks)
    assert stored.memory.empty and stored.modules.empty and live.lacks == ()
    assert any(f"it lacks {', '.join(stored.lacks)}." in n for n in stored.notes)
    assert any(str(trace) in n and "nbprofiler.load" in n for n in stored.notes)
    assert nbprofiler.load(trace).summary["steps"] == live.summary["steps"]

    text = stored.to_text()
    assert live.suggestions[0].title in text and "Reloaded from the run history" in text
    assert "<html" in stored.to_html(tmp_path / "stored.html")
    # It compares as a live run does: by its id, against the run it was kept from.
    comparison = nbprofiler.compare(run_id, live)
    assert comparison.before.lacks == stored.lacks and comparison.speedup == pytest.approx(1.0)

    trace.unlink()  # once the trace is gone, no note points at it
    assert not any("nbprofiler.load" in n for n in nbprofiler.stored_run(run_id).notes)


def test_the_history_lists_runs_oldest_first_and_by_cell(shell, history_file):
    empty = nbprofiler.history()
    assert empty.empty and {"run_id", "when", "cell", "avg_step_ms", "top_suggestion"} <= set(empty.columns)
    assert not history_file.exists()  # reading an absent history creates nothing
    other_cell = TRAIN_CELL + "model.eval()\n"
    a1, _ = profile_cell(shell)
    b, _ = profile_cell(shell, cell=other_cell)
    a2, _ = profile_cell(shell)
    assert a1.run.cell_key == a2.run.cell_key != b.run.cell_key

    listed = nbprofiler.history()
    assert list(listed["run_id"]) == [1, 2, 3] and listed["when"].is_monotonic_increasing
    assert list(listed["cell"]) == [a1.run.cell_key, b.run.cell_key, a1.run.cell_key]
    for report, row in zip((a1, b, a2), listed.itertuples()):
        assert row.avg_step_ms == pytest.approx(report.summary["avg_step_us"] / 1e3)
        assert row.samples_per_s == pytest.approx(report.summary["samples_per_s"])
        assert row.steps_run == len(report.run.steps) and row.steps == report.summary["steps"]
        assert row.device == report.device.name and row.trace_path is None
        assert row.top_suggestion == ranked_suggestions(report)[0].title
    assert list(nbprofiler.history(cell=a2)["run_id"]) == [1, 3]
    assert list(nbprofiler.history(cell=b.run.cell_key)["run_id"]) == [2]

    # A cell's previous run, as --compare finds it after a restart.
    pd.testing.assert_frame_equal(previous_run(a1.run.cell_key).run.steps, a2.run.steps)
    pd.testing.assert_frame_equal(previous_run(a1.run.cell_key, before=3).run.steps, a1.run.steps)
    assert previous_run(a1.run.cell_key, before=1) is None and previous_run("no-such-cell") is None
    with pytest.raises(HistoryError, match="has no run 99 "):
        nbprofiler.stored_run(99)

    # A run stays small: kilobytes, not the megabytes of its trace.
    with sqlite3.connect(history_file) as conn:
        sizes = conn.execute("SELECT length(run) + length(tables) + length(suggestions) + length(notes) "
                             "FROM runs").fetchall()
    assert max(size for (size,) in sizes) < 100_000


def test_the_file_carries_its_schema_version_and_reopens(history_file):
    with sqlite3.connect(history_file) as conn:  # an empty database: what schema version 0 is
        conn.execute("PRAGMA user_version = 0")
    assert nbprofiler.history().empty
    with sqlite3.connect(history_file) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert {"runs"} <= {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert nbprofiler.history().empty  # reopening an up-to-date file migrates nothing


def garbage_file(path: Path) -> str:
    """A file a sync tool or a bad copy left: not a database at all."""
    path.write_bytes(b"this is not an SQLite database\n" * 64)
    return "file is not a database"


def damaged_database(path: Path) -> str:
    """A real history whose first page (the schema) was overwritten, as a disk error would."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE filler (x TEXT)")
    conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 1000,)] * 50)
    conn.commit()
    conn.close()
    with path.open("r+b") as fh:
        fh.seek(100)
        fh.write(b"\xff" * 3000)
    return "database disk image is malformed"


@pytest.mark.parametrize("damage", [garbage_file, damaged_database])
def test_a_corrupt_history_costs_a_note_per_run_and_never_the_run(shell, history_file, damage):
    why = damage(history_file)
    damaged = history_file.read_bytes()
    with capture_output() as captured:
        shell.run_cell_magic("torchprofile", "-o run", TRAIN_CELL)
        run = shell.user_ns["run"]
        kept = [keep(run) for _ in range(2)]
        assert previous_run("train-cell") is None
    assert kept == [None, None]
    assert "nbprofiler report" in captured.outputs[-1].data["text/plain"]  # the report is shown as ever
    # Each time the run is not kept, its report's notes and one line on stderr say so, and why.
    problem = (f"the run history {history_file} is not a readable database ({why}); "
               "set NBPROFILER_HISTORY to use another file")
    lost = [note for note in run.notes if "was not kept" in note]
    assert len(lost) == 3 and all(note.endswith(f" UTC) was not kept: {problem}.") for note in lost)
    lines = [line for line in captured.stderr.splitlines() if "history" in line]
    assert lines == [*(f"nbprofiler: {note}" for note in lost),
                     f"nbprofiler: --compare could not read the previous run: {problem}"]
    # Asked for the history, the user gets the reason as a one-line error; the file is left as it was.
    with pytest.raises(HistoryError) as raised:
        nbprofiler.history()
    assert str(raised.value) == problem
    assert history_file.read_bytes() == damaged


def test_a_history_from_a_newer_nbprofiler_is_left_alone(shell, history_file):
    with sqlite3.connect(history_file) as conn:
        conn.execute("CREATE TABLE runs_v99 (anything TEXT)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 98}")
    with capture_output() as captured:
        shell.run_cell_magic("torchprofile", "-o run", TRAIN_CELL)
        assert keep(shell.user_ns["run"]) is None
    assert "nbprofiler report" in captured.outputs[-1].data["text/plain"]
    lines = [line for line in captured.stderr.splitlines() if "was not kept" in line]
    assert len(lines) == 2  # the cell's run, and the same run kept again
    assert all(f"was written by a newer nbprofiler (schema version {SCHEMA_VERSION + 98}" in line for line in lines)
    with sqlite3.connect(history_file) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 98
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'runs'").fetchone() is None


# Keeps one saved report N times into the history once the test says go: two of these at
# once are two writers racing on the same file (from its creation: both migrate it).
WRITER = """
import sys, time
from pathlib import Path
import nbprofiler
saved, ready, go, runs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
report = nbprofiler.load(saved)
report.summary, report.suggestions  # analysed before the race, as a finished run is
ready.touch()
while not go.exists():
    time.sleep(0.01)
ids = [nbprofiler.history.keep(report, cell=ready.stem, notebook=None) for _ in range(runs)]
print(ids)
"""


def test_two_processes_keeping_runs_at_once_lose_none(shell, history_file, tmp_path):
    run, _ = profile_cell(shell, "-q -o run --no-history")  # the writers create the file
    saved = run.save(tmp_path / "run.nbprof")
    runs, go = 20, tmp_path / "go"
    ready = [tmp_path / f"writer{i}" for i in (1, 2)]
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(saved), str(r), str(go), str(runs)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in ready]
    deadline = time.monotonic() + 60
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        time.sleep(0.05)
    go.touch()
    results = [w.communicate(timeout=120) for w in writers]
    for (_, err), writer in zip(results, writers):
        assert writer.returncode == 0 and "not kept" not in err, err
    ids = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
    assert all(isinstance(i, int) for i in ids[0] + ids[1])
    assert sorted(ids[0] + ids[1]) == list(range(1, 2 * runs + 1))

    listed = nbprofiler.history()
    assert len(listed) == 2 * runs
    assert listed["cell"].value_counts().to_dict() == {"writer1": runs, "writer2": runs}
    with sqlite3.connect(history_file) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert nbprofiler.stored_run(ids[1][-1]).summary == run.summary


def test_the_history_survives_a_kernel_restart(history_file, tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    from leak import widget_kernel

    first, second = tmp_path / "first.json", tmp_path / "second.json"
    with widget_kernel() as kernel:  # it sends each cell's id, as JupyterLab does
        kernel.execute(SETUP_CELL + "torch.set_num_threads(1)", cell_id="setup")
        kernel.execute(f"%%torchprofile -q -o run\n{TRAIN_CELL}", cell_id="train-cell")
        kernel.execute(
            "import json, nbprofiler\n"
            "run_id = int(nbprofiler.history(cell=run)['run_id'].iloc[-1])\n"
            f"json.dump({{'run_id': run_id, 'cell': run.run.cell_key, 'wall_ms': run.run.steps['wall_ms'].tolist()}}, "
            f"open({str(first)!r}, 'w'))")
    kept = json.loads(first.read_text())
    assert kept["cell"] == "train-cell"

    # A new kernel, with nothing of the first one's memory: it reads the history only. The same
    # cell, run again with --compare, is compared with the run the first kernel kept.
    with widget_kernel() as kernel:
        kernel.execute(SETUP_CELL + "torch.set_num_threads(1)", cell_id="setup")
        kernel.execute(f"%%torchprofile -q --compare\n{TRAIN_CELL}", cell_id="train-cell")
        kernel.execute(
            "import json, nbprofiler\n"
            "listed = nbprofiler.history(cell='train-cell')\n"
            "stored = nbprofiler.stored_run(int(listed['run_id'].iloc[0]))\n"
            "c = nbprofiler.last_comparison()\n"
            f"json.dump({{'run_ids': listed['run_id'].tolist(), 'wall_ms': stored.run.steps['wall_ms'].tolist(), "
            "'text': stored.to_text(), 'baseline': c.before_label, 'baseline_wall_ms': "
            f"c.before.run.steps['wall_ms'].tolist(), 'verdict': c.verdict}}, open({str(second)!r}, 'w'))")
    reloaded = json.loads(second.read_text())
    assert reloaded["run_ids"][0] == kept["run_id"] and len(reloaded["run_ids"]) == 2
    assert reloaded["wall_ms"] == kept["wall_ms"]
    assert "Reloaded from the run history" in reloaded["text"]
    assert reloaded["baseline"] == "the previous run of this cell (from the history)"
    assert reloaded["baseline_wall_ms"] == kept["wall_ms"] and reloaded["verdict"]


def test_two_kernels_profiling_at_once_keep_every_run(history_file):
    """Two real kernels, each running a cell that profiles 6 times, sent at once: the history
    holds all 12 runs, each under its own kernel's cell, and the file is sound."""
    from jupyter_client.manager import start_new_kernel

    runs = 6
    cell = (SETUP_CELL + "torch.set_num_threads(1)\n"
            f"for _ in range({runs}):\n    get_ipython().run_cell_magic('torchprofile', '-q', {TRAIN_CELL!r})\n")
    kernels = [start_new_kernel(kernel_name="python3", cwd=str(ROOT)) for _ in range(2)]
    try:
        for _, client in kernels:
            client.execute_interactive("%load_ext nbprofiler", timeout=60, output_hook=lambda msg: None)
        sent = [client.execute(cell) for _, client in kernels]  # both at once
        replies = [_reply(client, msg_id) for (_, client), msg_id in zip(kernels, sent)]
    finally:
        for manager, client in kernels:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    assert all(r["status"] == "ok" for r in replies), replies
    listed = nbprofiler.history()
    assert len(listed) == 2 * runs and listed["run_id"].is_unique
    assert listed["cell"].nunique() == 1  # no cell id outside JupyterLab: the same source, the same key
    with sqlite3.connect(history_file) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _reply(client, msg_id: str) -> dict:
    while True:
        reply = client.get_shell_msg(timeout=300)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]
