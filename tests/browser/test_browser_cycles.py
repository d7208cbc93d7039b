"""The Cycles tab in a real JupyterLab (tests/browser/cycles_e2e.mjs), on a real 1,000-step run watched
every 100 steps whose loading slows from batch 600 (``bench/drift_workload.py``): a notebook holding
the run's saved output opens in Chromium without a kernel, as one reopened days later; its Cycles tab
names the drift's cycle, draws the trend with the drift marked and lists every cycle; the notebook's
second cell loads the run's ``.nbprof`` file and the live explorer's Cycles tab shows the same."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_browser import ROOT, SHOTS, _run_in_lab, saved_output_notebook

from nbprofiler.render.hardware import cell_text

sys.path.insert(0, str(ROOT / "bench"))
from drift_workload import profiled  # the loop whose loading slows from a chosen batch

SCRIPT = ROOT / "tests" / "browser" / "cycles_e2e.mjs"

pytestmark = pytest.mark.slow


def test_a_reopened_notebook_shows_the_runs_trend_and_its_drift_saved_and_live(tmp_path: Path) -> None:
    report = profiled(600)
    saved = report.save(tmp_path / "watched.nbprof")
    notebook = saved_output_notebook(tmp_path / "cycles.ipynb", report, saved)
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "cycles", timeout=300)
    drift = report.drift
    assert set(drift["from_cycle"]) == {7}
    for verdict in (result["verdict"], result["liveVerdict"]):
        assert verdict == "From cycle 7 (step 600) " + "; ".join(drift["change"]) + "."
    assert result["verdictWarns"]
    assert result["charts"][0] == "cycles"
    for text in (result["chartText"], result["liveChartText"]):
        assert "drift: step time, data wait" in text
    assert "Cycles" in result["liveTabs"]
    cycles = report.cycles
    for header, rows in ((result["header"], result["rows"]), (result["liveHeader"], result["liveRows"])):
        assert header[:4] == ["cycle", "first step", "last step", "unprofiled step"]
        assert [int(r[0]) for r in rows] == cycles["cycle"].tolist()
        assert [r[1] for r in rows] == [f"{s:,}" for s in cycles["first_step"]]
        assert [r[3] for r in rows] == [cell_text("us", ms * 1e3) for ms in cycles["step_ms"]]
