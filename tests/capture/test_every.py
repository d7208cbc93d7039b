"""``--every N``: a whole run watched cycle by cycle, and the drift between its cycles.

Real cells in a real IPython shell, with a DataLoader whose collate function stands for the
loading (``bench/drift_workload.py``): it sleeps a fixed time per batch, so that the steady
cell's steps are steady on a busy machine, and the slowed cell's loading takes several times
longer from a known batch on.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
import torch
from IPython.utils.capture import capture_output

import nbprofiler
from nbprofiler.advice.rules import verdicts
from nbprofiler.errors import OptionError
from nbprofiler.notebook.profile import live_run
from nbprofiler.options import ProfileOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from drift_workload import CELL, SETUP  # a loop whose loading slows from a chosen batch
from every_memory import TARGET_MB, probe  # the benchmark's own fresh-interpreter probe

pytestmark = pytest.mark.usefixtures("private_tmp", "one_torch_thread")


def run_cell(shell, slow_from: int | None, every: int = 100):
    shell.run_cell(SETUP).raise_error()
    with capture_output():
        shell.run_cell_magic("torchprofile", f"-q -o run --every {every}", CELL.format(slow_from=slow_from))
    return shell.user_ns["run"]


def test_every_sets_a_cycle_of_n_steps_repeated_until_the_cell_ends():
    options = ProfileOptions(every=200, warmup=1, active=3)
    assert (options.wait, options.repeat, options.cycle_length) == (196, 0, 200)
    assert [options.phase_of(s) for s in (0, 195, 196, 197, 199, 200, 397, 4_000, 4_197)] == \
        ["wait", "wait", "warmup", "active", "active", "wait", "active", "wait", "active"]
    assert options.replace(active=5).wait == 194  # the wait fills the cycle again
    with pytest.raises(OptionError, match=r"--every: must be at least --warmup \+ --active \(1 \+ 3 = 4\), got 3"):
        ProfileOptions(every=3)
    with pytest.raises(OptionError, match="--repeat: cannot be combined with --every"):
        ProfileOptions(every=50, repeat=4)


def test_a_loader_that_slows_at_step_600_drifts_from_the_cycle_that_holds_it(shell):
    report = run_cell(shell, slow_from=600)
    cycles = report.cycles
    # every cycle of the 1,000 steps, each 100 steps long, each reduced to its row
    assert cycles["cycle"].tolist() == list(range(1, 11))
    assert cycles["first_step"].tolist() == list(range(0, 1000, 100))
    assert cycles["last_step"].tolist() == list(range(99, 1000, 100))
    assert cycles["problem"].isna().all()
    drift = report.drift.set_index("measure")
    assert drift.loc["step_time", "from_cycle"] == 7 and drift.loc["step_time", "from_step"] == 600
    assert drift.loc["data_wait", "from_cycle"] == 7
    assert drift.loc["data_wait", "after"] > drift.loc["data_wait", "before"] + 0.1
    card = next(s for s in report.suggestions if s.kind == "drift")
    assert card.title.startswith("The run drifted: from cycle 7 (step 600) ")
    assert "DataLoader" in card.title  # the part of the step that moved
    assert any(fact.startswith("From cycle 7 (step 600) the data wait rose from ") for fact in card.facts)
    assert card.claim == "estimate" and card.gain_low <= card.gain <= card.gain_high
    assert "tune_dataloader(train_loader" in card.detail  # what to measure, in the cell's names


def test_a_steady_loop_gets_no_drift(shell):
    report = run_cell(shell, slow_from=None)
    assert len(report.cycles) == 10
    assert report.drift.empty
    assert all(s.kind != "drift" for s in report.suggestions)
    checked = {v.check: v for v in verdicts(report)}
    assert checked["drift across the run's cycles"].state == "passed"


def test_each_cycle_row_holds_what_its_own_trace_and_steps_measured(shell):
    report = run_cell(shell, slow_from=None, every=50)
    steps, last = report.steps, report.cycles.iloc[-1]
    # The report's trace tables are the last cycle's: its row was made from the same trace.
    assert last["profiled_step_ms"] == pytest.approx(report.summary["avg_step_us"] / 1e3)
    assert report.breakdown_shares()["dataloader"] == pytest.approx(last["dataloader_share"])
    ops = report.operators.nlargest(3, "host_self_us")["name"].tolist()
    assert [part.rsplit(" ", 1)[0] for part in last["top_operators"].split("; ")] == ops
    # the step figures are the cycle's unprofiled steps, as the sampler timed them
    waiting = steps[(steps["step"] >= last["first_step"]) & (steps["phase"] == "wait")]
    assert last["step_ms"] == pytest.approx(waiting["wall_ms"].mean())
    assert last["data_wait_share"] == pytest.approx(waiting["dataloader_ms"].sum() / waiting["wall_ms"].sum())
    assert last["samples_per_s"] == pytest.approx(waiting["samples"].sum() / waiting["wall_ms"].sum() * 1e3)
    assert any("trace tables show the last cycle" in note for note in report.notes)


def test_cycles_come_back_from_a_saved_report_and_from_the_history_in_a_fresh_interpreter(shell, tmp_path):
    report = run_cell(shell, slow_from=600)
    reopened = nbprofiler.load(report.save(tmp_path / "run.nbprof"))
    assert reopened.cycles.equals(report.cycles)
    assert reopened.drift.equals(report.drift)
    row = nbprofiler.history().iloc[-1]
    assert row["cycles"] == 10
    # A kernel started later (a fresh interpreter) lists the run and reopens its cycles and drift.
    fresh = subprocess.run([sys.executable, "-c", REOPEN, str(int(row["run_id"]))], capture_output=True, text=True,
                           env=os.environ.copy(), timeout=300, check=True)
    listed, cycles, drift = fresh.stdout.strip().splitlines()[-3:]
    assert int(listed) == 10
    assert cycles == report.cycles.to_json(orient="split")  # every row and value, as this kernel has them
    assert json.loads(drift) == report.drift["text"].tolist()


# What a fresh interpreter prints of a kept run: its cycles count as listed, its cycles, its drift.
REOPEN = """
import sys, json, nbprofiler
run_id = int(sys.argv[1])
listed = nbprofiler.history()
print(int(listed.loc[listed["run_id"] == run_id, "cycles"].iloc[0]))
stored = nbprofiler.stored_run(run_id)
print(stored.cycles.to_json(orient="split"))
print(json.dumps(stored.drift["text"].tolist()))
"""


def test_a_20000_step_monitored_run_grows_with_its_cycles_not_its_steps():
    found = probe(20_000, 200)
    assert (found["steps"], found["cycles"]) == (20_000, 100)
    # after its first 3 cycles, 19,400 more steps and 97 more cycles keep the RSS within the target
    assert found["growth_bytes"] < TARGET_MB * 1e6, found


def test_a_cell_ending_inside_a_cycles_profiled_steps_keeps_that_cycle_from_its_first_step(private_tmp):
    net = torch.nn.Linear(8, 2)
    with nbprofiler.profile(every=20, history=False, step_on="manual") as run:
        for _ in range(58):  # the third cycle's wait is steps 40-55, its warmup 56, its first active step 57
            net(torch.randn(4, 8)).sum().backward()
            nbprofiler.step()
    cycles = run.report.cycles
    assert cycles[["cycle", "first_step", "last_step"]].values.tolist() == [[1, 0, 19], [2, 20, 39], [3, 40, 57]]


def test_a_watched_run_left_unfinished_ends_its_summary_thread_when_cleaned_up(private_tmp):
    """A --every run entered by a function that returned without finishing it (its cycles queued for
    their summaries) is cleaned up by the next run, and its background thread ends with it."""
    def start_and_forget() -> None:
        run = live_run(ProfileOptions(every=4, wait=0, warmup=0, active=1, step_on="manual"))
        run.__enter__()
        for _ in range(9):  # two cycles end, each queued for its summary
            torch.ones(4).sum()
            nbprofiler.step()

    start_and_forget()
    assert any(t.name == "nbprofiler-cycles" for t in threading.enumerate())
    with nbprofiler.profile(wait=0, warmup=0, active=1, step_on="manual"):
        nbprofiler.step()
    for thread in [t for t in threading.enumerate() if t.name == "nbprofiler-cycles"]:
        thread.join(timeout=60)
        assert not thread.is_alive()


def test_a_saved_reports_cycles_from_someone_else_are_text_and_checked(shell, tmp_path):
    """A .nbprof file's cycles may come from someone else: an operator name is escaped in every view, and
    a value of the wrong kind is the loader's one-line error."""
    report = run_cell(shell, slow_from=None, every=250)
    saved = report.save(tmp_path / "run.nbprof")
    with zipfile.ZipFile(saved) as archive:
        doc, trace = json.loads(archive.read("nbprofiler.json")), archive.read("trace.json")

    def tampered(column: str, value: object) -> Path:
        changed = json.loads(json.dumps(doc))
        next(c for c in changed["report"]["run"]["cycles"] if c["name"] == column)["values"][0] = value
        path = tmp_path / f"{column}.nbprof"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("nbprofiler.json", json.dumps(changed))
            archive.writestr("trace.json", trace)
        return path

    hostile = "<img src=x onerror=alert(1)>"
    html = nbprofiler.load(tampered("top_operators", hostile)).to_html()
    assert hostile not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    with pytest.raises(nbprofiler.TraceError, match=r"cycle\.nbprof: a malformed saved report"):
        nbprofiler.load(tampered("cycle", None))


def test_a_slowdown_while_other_programs_kept_the_machine_busier_is_no_drift_of_the_run(shell):
    """The same slowdown, with other programs keeping a core more busy from cycle 7 on (as a job started
    beside the notebook would), is the machine's: the drift analysis claims none from it."""
    from nbprofiler.analysis.drift import drift
    from nbprofiler.render.bundle import LABELS

    report = run_cell(shell, slow_from=600)
    cycles = report.cycles
    assert cycles["other_cores"].notna().all()  # measured over each cycle
    assert set(drift(report.steps, cycles, LABELS, 0.02, 0)["measure"]) >= {"step_time", "data_wait"}
    busier = cycles.assign(other_cores=[0.1] * 6 + [1.3] * 4)
    assert set(drift(report.steps, busier, LABELS, 0.02, 0)["measure"]) <= {"memory"}
