"""The Distributed tab in a real JupyterLab (tests/browser/distributed_e2e.mjs), on the real two-rank NCCL
trace written as 3 ranks with rank 1 running 1.5x slower (``bench/many_ranks.write_ranks``): a notebook
holding the folder's saved report opens in Chromium; its Distributed tab names the straggler with its
reason, draws a bar per rank and shows each rank's split as the rank's own tables give it, the
straggler's row marked; the notebook's second cell runs ``nbprofiler.load(<folder>)`` and the live
explorer's Distributed tab shows the same."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import shared_trace
from test_browser import ROOT, SHOTS, _run_in_lab, saved_output_notebook

import nbprofiler
from nbprofiler.render.hardware import cell_text

sys.path.insert(0, str(ROOT / "bench"))
from many_ranks import write_ranks  # the benchmark's own generator

SCRIPT = ROOT / "tests" / "browser" / "distributed_e2e.mjs"

pytestmark = pytest.mark.slow


def test_the_distributed_tab_shows_each_rank_and_the_straggler_saved_and_live(tmp_path: Path) -> None:
    folder = tmp_path / "ranks"
    write_ranks(shared_trace("a100_nccl_distributed"), folder, 3, 1)
    notebook = saved_output_notebook(tmp_path / "distributed.ipynb", nbprofiler.load(folder), folder)
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "distributed", timeout=300)
    report = nbprofiler.load(folder)
    comparison = report.rank_comparison.set_index("rank")
    assert comparison.index[comparison["straggler"]].tolist() == [1]
    reason = comparison.loc[1, "reason"]
    assert result["verdict"] == result["liveVerdict"] == f"Straggler: rank 1, {reason}."
    assert result["verdictWarns"]
    assert result["bars"] == result["liveBars"] == ["rank 0", "rank 1", "rank 2"]
    assert result["marked"] == ["1"]
    assert "Distributed" in result["liveTabs"]
    for header, rows in ((result["header"], result["rows"]), (result["liveHeader"], result["liveRows"])):
        assert header == ["rank", "steps", "step", "computation", "communication", "overlap", "other time",
                          "straggler", "reason"]
        shown = {int(r[0]): dict(zip(header, r, strict=True)) for r in rows}
        assert sorted(shown) == [0, 1, 2]
        for n, rank in report.ranks.items():
            b, c = rank.breakdown, rank.communication
            assert shown[n]["steps"] == f"{len(b):,}"
            assert shown[n]["computation"] == cell_text("us", b["kernel"].mean())
            assert shown[n]["communication"] == cell_text("us", c["kernel_us"].mean())
            assert shown[n]["overlap"] == cell_text("us", c["overlap_us"].mean())
            assert shown[n]["straggler"] == ("straggler" if n == 1 else "–")
    busbw = {(int(r[0]), r[1]): r for r in result["collectives"]}
    column = result["collectivesHeader"].index("bus bandwidth")
    for n, rank in report.ranks.items():
        top = rank.collectives.iloc[0]
        assert busbw[(n, top["collective"])][column] == cell_text("gb_per_s", top["busbw_gb_per_s"])
