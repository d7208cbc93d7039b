"""Other programs' load on the machine: measured during each run, and a comparison says when it
moved between two runs, since that alone can make an unchanged cell look faster or slower."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from conftest import TRAIN_CELL

import nbprofiler
from nbprofiler.analysis import compare as cmp

BUSY_CELL = """
import time
end = time.perf_counter() + 1.5
while time.perf_counter() < end:
    for x, y in train_loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
"""


@pytest.fixture()
def busy_program():
    """A program outside this process tree that keeps one core busy for a few seconds (started
    through a shell that exits, so it is no child of the test's process, as another user's job)."""
    subprocess.run(["sh", "-c", f'timeout 6 {sys.executable} -c "while True: pass" >/dev/null 2>&1 &'],  # noqa: S607 - the system shell
                   check=True)
    yield


def test_a_run_measures_the_cores_other_programs_kept_busy(shell, busy_program):
    shell.run_cell_magic("torchprofile", "-q --no-history", BUSY_CELL)
    # The busy program takes a core of its own, or shares one with the cell and whatever else runs
    # (which counts as other programs too): at least half a core, with the rest of the machine's load.
    assert nbprofiler.last().run.other_cores >= 0.5


def test_a_change_measured_while_the_load_moved_says_so(shell):
    shell.run_cell_magic("torchprofile", "-q --no-history -o quiet", TRAIN_CELL)
    quiet = shell.user_ns["quiet"]
    measured = nbprofiler.compare(quiet, quiet)  # one run against itself: what the figures alone say
    assert not any("Other programs kept" in note for note in measured.notes)

    def with_load(report, cores: float):
        run = dataclasses.replace(report.run, other_cores=cores)
        return dataclasses.replace(report, origin=dataclasses.replace(report.origin, run=run))

    same = nbprofiler.compare(with_load(quiet, 1.6), with_load(quiet, 0.1))
    (note,) = [n for n in same.notes if n.startswith("Other programs kept")]
    assert "1.6 cores busy during the before run and 0.1 during the after run" in note
    assert not same.changed and "load" not in same.verdict  # the same steps: no change to explain

    # Slower by far more than a busy machine slows the quiet run down.
    slowed = TRAIN_CELL.replace("opt.step()", "opt.step(); __import__('time').sleep(0.1)")
    shell.run_cell_magic("torchprofile", "-q --no-history -o slow", slowed)
    changed = nbprofiler.compare(with_load(quiet, 0.1), with_load(shell.user_ns["slow"], 1.6))
    assert changed.changed and " slower (" in changed.verdict
    assert changed.verdict.endswith(", but the machine's load changed between the runs"), changed.verdict


def test_the_verdict_of_a_change_names_a_moved_load():
    assert cmp.load_note((0.2, 0.4), ("before", "after")) is None  # within what a quiet machine varies
    assert cmp.load_note((None, 1.8), ("before", "after")) is None  # a trace file: not measured
    assert "0.0 cores busy during the a run and 1.8 during the b run" in cmp.load_note((0.0, 1.8), ("a", "b"))
