"""The history never holds up a cell: a run it cannot keep (a full disk, a lock another process
holds) is named in its report's notes with the real cause, every such run says so, the cell waits
on the history for one budget of ``HISTORY_WAIT_S`` at most (bench/history_lock.py measures the
wait), and the runs already kept are left sound."""
from __future__ import annotations

import contextlib
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

import nbprofiler
from nbprofiler.history.measurements import MEASURED_WAIT_S
from nbprofiler.history.store import HISTORY_WAIT_S

# A tiny CPU loop, run four times, each run a profiled step.
CPU_CELL = "sum(i * i for i in range(20_000))"
CPU_LINE = "-q -o run -n 4 --wait 0 --warmup 0 --active 4"
NOT_KEPT = re.compile(r"This run \(ended \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\) was not kept: (.+)\.")


def profile(shell):
    """Run the CPU cell under the magic: its report, and what it printed on stderr."""
    with capture_output() as captured:
        shell.run_cell_magic("torchprofile", CPU_LINE, CPU_CELL)
    return shell.user_ns["run"], captured.stderr


def lost(report) -> list[str]:
    """Why the history did not keep ``report``'s run, as its notes say (none when it was kept)."""
    return [m[1] for m in map(NOT_KEPT.fullmatch, report.notes) if m]


def cause(history_file: Path, problem: str) -> str:
    return f"the run history {history_file} {problem}; set NBPROFILER_HISTORY to use another file"


def assert_kept_and_sound(shell, history_file: Path, runs: int) -> None:
    """The history holds ``runs`` runs and a sound file, and keeps the next run."""
    assert len(nbprofiler.history()) == runs  # type: ignore[operator]  # a callable module
    with sqlite3.connect(history_file) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    report, stderr = profile(shell)
    assert lost(report) == [] and "not kept" not in stderr
    assert len(nbprofiler.history()) == runs + 1  # type: ignore[operator]  # a callable module


@contextlib.contextmanager
def connections_to(path: Path, prepare: Callable[[sqlite3.Connection, float], None]) -> Iterator[None]:
    """``prepare(conn, timeout)`` on each connection opened to ``path`` while the block runs."""
    connect = sqlite3.connect

    def opened(database, *args, **kwargs):
        conn = connect(database, *args, **kwargs)
        if Path(database) == path:
            prepare(conn, kwargs.get("timeout", args[0] if args else 5.0))
        return conn

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", opened)
        yield


@contextlib.contextmanager
def lock_held(path: Path) -> Iterator[subprocess.Popen]:
    """Another process holding ``path``'s write lock (``BEGIN EXCLUSIVE``) until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
                               "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "conn.execute('BEGIN EXCLUSIVE')\n"
                               "print('held', flush=True)\n"
                               "sys.stdin.read()\n", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.stdin.close()  # it reads its input to the end, then exits: the lock is released
        holder.wait(timeout=60)


def test_a_full_disk_is_named_in_each_run_it_costs(shell, history_file):
    profile(shell)  # the file exists, with one run

    def full(conn: sqlite3.Connection, _timeout: float) -> None:  # SQLite's own limit: not one page more
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")

    with connections_to(history_file, full):
        runs = [profile(shell) for _ in range(2)]

    # Every run it cost names itself, with the cause SQLite gave (not the failed rollback after it).
    full_disk = cause(history_file, "could not grow, as the history's disk is full (database or disk is full)")
    for report, stderr in runs:
        assert len(report.run.steps) == 4 and report.summary["steps"] == 4  # the cell and its report are whole
        assert lost(report) == [full_disk]
        assert f"nbprofiler: {report.notes[-1]}" in stderr.splitlines()
    assert_kept_and_sound(shell, history_file, runs=1)


def test_a_lock_another_process_holds_costs_the_run_one_bounded_wait_never_the_cell(shell, history_file) -> None:
    profile(shell)  # the file exists, in WAL mode, with one run
    allowed: list[list[float]] = []  # per run: each busy wait the history allowed SQLite, in order (s)

    def watched(conn: sqlite3.Connection, timeout: float) -> None:
        allowed[-1].append(timeout)
        conn.set_trace_callback(lambda sql: allowed[-1].extend(
            int(m[1]) / 1000 for m in [re.fullmatch(r"PRAGMA busy_timeout = (\d+)", sql)] if m))

    runs = []
    with lock_held(history_file) as holder, connections_to(history_file, watched):
        for _ in range(2):
            allowed.append([])
            runs.append(profile(shell))
        assert holder.poll() is None  # held throughout

    locked = cause(history_file, f"was locked, as another process held the history's lock for over "
                                 f"{HISTORY_WAIT_S:g} s (database is locked)")
    for (report, stderr), waits in zip(runs, allowed):
        assert len(report.run.steps) == 4 and report.summary["steps"] == 4  # the cell finished, its report whole
        assert lost(report) == [locked]
        assert f"nbprofiler: {report.notes[-1]}" in stderr.splitlines()
        # One budget per run: each wait SQLite was allowed is what was left of the run's HISTORY_WAIT_S,
        # never a fresh one per attempt or per statement; before it, reading the measurements the advice
        # quotes allows itself MEASURED_WAIT_S at most.
        reading = [w for w in waits[:2] if w <= MEASURED_WAIT_S]
        keeping = waits[len(reading):]
        assert len(reading) == 2 and reading == sorted(reading, reverse=True), waits
        assert keeping and keeping[0] <= HISTORY_WAIT_S and keeping == sorted(keeping, reverse=True), waits
    assert_kept_and_sound(shell, history_file, runs=1)
