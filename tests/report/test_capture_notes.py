"""A live run's capture notes: the capture records what happened (``RunRecord.facts``) and the
report words it, so that the run saved, reopened or kept in the history says the same; a run
saved before the facts were recorded holds the words themselves, and says them as it did."""
from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import TRAIN_CELL

import nbprofiler
from nbprofiler.records import CaptureFacts

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPEAT = 2


@pytest.fixture(scope="module")
def unwritable(tmp_path_factory) -> str:
    """A --trace path inside a regular file: nothing can create it."""
    blocker = tmp_path_factory.mktemp("out") / "a-file"
    blocker.write_text("")
    return str(blocker / "trace.json")


@pytest.fixture(scope="module")
def live(unwritable) -> nbprofiler.Report:
    """Inference over tensors of its own, its steps ended by ``nbprofiler.step()`` with no sample
    count, over two profiler cycles, its --trace copy unwritable: three things to tell."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(16, 4)
    batches = [torch.randn(8, 16) for _ in range(6)]
    with nbprofiler.profile(wait=0, warmup=1, active=1, repeat=REPEAT, trace=unwritable) as run:
        with torch.no_grad():
            for x in batches:
                model(x)
                nbprofiler.step()
    return run.report


def capture_notes(report: nbprofiler.Report, unwritable: str) -> list[str]:
    """The report's notes about what the capture could not do, in the order they are shown."""
    starts = ("samples/s is unknown", f"{REPEAT} cycles were recorded", f"--trace {unwritable}: ")
    return [n for n in report.notes if n.startswith(starts)]


def test_the_capture_records_facts_and_the_report_words_them(live, unwritable):
    run = live.run
    assert run is not None and run.notes == []  # no note in words: the capture records what happened
    (output,) = run.facts.unwritten
    assert (output.flag, output.path) == ("--trace", unwritable) and output.reason.split(":")[0].endswith("Error")
    assert run.facts.cycles == REPEAT and run.facts.unknown_samples
    assert not Path(unwritable).exists()
    assert capture_notes(live, unwritable) == [
        "samples/s is unknown: the steps took no DataLoader batch; pass the step's sample count, "
        "nbprofiler.step(samples=len(batch))",
        f"{REPEAT} cycles were recorded (--repeat {REPEAT}); torch clears its events after each, so the trace "
        "tables show the last cycle (the step table shows every step)",
        f"--trace {unwritable}: the trace was not written ({output.reason}); give a path in a writable directory",
    ]
    assert all(note in live.to_text() for note in capture_notes(live, unwritable))


def test_a_saved_run_keeps_its_facts_and_says_the_same(live, unwritable, tmp_path):
    loaded = nbprofiler.load(live.save(tmp_path / "run.nbprof"))
    assert loaded.run is not None and loaded.run.facts == live.run.facts
    assert loaded.notes == live.notes and len(capture_notes(loaded, unwritable)) == 3


def test_a_run_saved_before_facts_were_recorded_says_its_notes_as_it_did(live, unwritable, tmp_path):
    """Such a file has no ``facts`` and the capture's notes in ``notes``, in words."""
    new = live.save(tmp_path / "new.nbprof")
    old = tmp_path / "old.nbprof"
    with zipfile.ZipFile(new) as zin, zipfile.ZipFile(old, "w", zipfile.ZIP_DEFLATED) as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "nbprofiler.json":
                doc = json.loads(data)
                run = doc["report"]["run"]
                del run["facts"]
                run["notes"] = capture_notes(live, unwritable)
                data = json.dumps(doc).encode()
            zout.writestr(name, data)
    loaded = nbprofiler.load(old)
    assert loaded.run is not None and loaded.run.facts == CaptureFacts()
    assert loaded.notes == live.notes


def test_a_kept_run_reloads_with_its_facts_and_notes(live, unwritable, tmp_path, monkeypatch):
    monkeypatch.setenv("NBPROFILER_HISTORY", str(tmp_path / "history.sqlite"))
    run_id = nbprofiler.history.keep(live, cell="capture-notes", notebook="notes.ipynb")
    assert run_id is not None
    stored = nbprofiler.stored_run(run_id)
    assert stored.run is not None and stored.run.facts == live.run.facts
    assert stored.notes[:len(live.notes)] == live.notes and len(capture_notes(stored, unwritable)) == 3


def test_a_debugger_costs_the_cell_lines_and_the_notes_say_so(shell):
    """With another trace function active (a debugger's), --stack records no time per cell line:
    the capture records that, and the note says why."""
    previous = sys.gettrace()
    sys.settrace(lambda *args: None)
    try:
        shell.run_cell_magic("torchprofile", "-q -o run --stack", TRAIN_CELL)
    finally:
        sys.settrace(previous)
    report = shell.user_ns["run"]
    assert report.run.facts.lines_skipped and report.run.line_marks is None and report.lines.empty
    assert ("another trace function (a debugger or coverage tool) was active, so the time per cell line was not "
            "recorded") in report.notes
