"""The Distributed view (render/distributed.py) in the saved payload, the static HTML and the explorer,
checked against the per-rank DataFrames a user has (``report.ranks[n].breakdown``, ``.communication``,
``.collectives``, ``report.rank_comparison``): on the real two-rank NCCL trace's rank 0 alone, and on
that trace written as 3 ranks with rank 1 running 1.5x slower (``bench/many_ranks.write_ranks``)."""
from __future__ import annotations

import html
import sys

import numpy as np
import pytest
from conftest import ROOT, shared_report, shared_trace

import nbprofiler
from nbprofiler.render.hardware import cell_text
from nbprofiler.render.html import render_html
from nbprofiler.render.payload import report_payload
from nbprofiler.render.widget import Explorer

sys.path.insert(0, str(ROOT / "bench"))
from many_ranks import write_ranks  # the benchmark's own generator


@pytest.fixture(scope="module")
def three_ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ranks")
    write_ranks(shared_trace("a100_nccl_distributed"), folder, 3, 1)
    return nbprofiler.load(folder)


def tab_html(widget) -> str:
    own = [widget.value] if hasattr(widget, "value") and isinstance(widget.value, str) else []
    return html.unescape("".join(own + [tab_html(child) for child in getattr(widget, "children", ())]))


def expected_split(rank) -> dict[str, float]:
    """A rank's mean step split per step, read from its own breakdown and communication tables."""
    b, c = rank.breakdown, rank.communication
    computation, communication, overlap = b["kernel"].mean(), c["kernel_us"].mean(), c["overlap_us"].mean()
    step = b["total"].mean()
    return {"step_us": step, "computation_us": computation, "communication_us": communication,
            "overlap_us": overlap, "other_time_us": step - (computation + communication - overlap)}


def shown(report) -> tuple[dict, str, str]:
    """The Distributed view as the payload holds it, as the static HTML and the explorer's tab show it."""
    explorer = Explorer(report)
    assert explorer.tab_titles.index("Distributed") == explorer.tab_titles.index("Kernels") + 1
    return (report_payload(report)["distributed"], html.unescape(render_html(report)),
            tab_html(explorer.show_tab("Distributed")))


def section_rows(payload: dict, key: str) -> list[dict]:
    s = next(s for s in payload["sections"] if s["key"] == key)
    return [dict(zip(s["columns"], row)) for row in s["rows"]]


def check_ranks(report, ranks: dict) -> None:
    """Every rank's split and collectives, as each view shows them, equal its DataFrames'."""
    payload, static, tab = shown(report)
    assert payload["ranks"] == sorted(ranks)
    split = {row["rank"]: row for row in section_rows(payload, "split")}
    collectives = section_rows(payload, "collectives")
    for n, rank in ranks.items():
        for column, value in expected_split(rank).items():
            assert split[n][column] == pytest.approx(value), (n, column)
            assert cell_text("us", value) in static and cell_text("us", value) in tab, (n, column)
        table = rank.collectives
        mine = [row for row in collectives if row["rank"] == n]
        assert [r["collective"] for r in mine] == table["collective"].tolist()
        assert [r["busbw_gb_per_s"] for r in mine] == pytest.approx(table["busbw_gb_per_s"].tolist())
        assert [r["algbw_gb_per_s"] for r in mine] == pytest.approx(table["algbw_gb_per_s"].tolist())
        for busbw in table["busbw_gb_per_s"]:
            assert cell_text("gb_per_s", busbw) in static and cell_text("gb_per_s", busbw) in tab
    # The stacked bar per rank adds up to each rank's step.
    chart = payload["chart"]["panels"][0]
    assert chart["x"] == [f"rank {n}" for n in sorted(ranks)]
    totals = np.sum([s["values"] for s in chart["series"]], axis=0)
    assert totals == pytest.approx([expected_split(ranks[n])["step_us"] for n in sorted(ranks)])


def test_one_ranks_trace_shows_its_split_and_collectives_and_says_it_cannot_be_compared():
    report = shared_report("a100_nccl_distributed")
    check_ranks(report, {0: report})
    payload, static, tab = shown(report)
    assert payload["straggler"] == []
    assert "one rank (0 of 2)" in payload["verdict"] and payload["verdict"] in static and payload["verdict"] in tab
    # all-reduce among 2 ranks: bus bandwidth = algorithm bandwidth x 2(2-1)/2
    row = next(r for r in section_rows(payload, "collectives") if r["collective"] == "allreduce")
    assert row["busbw_gb_per_s"] == pytest.approx(row["bytes"] / row["time_us"] / 1e3)


def test_three_ranks_show_each_ranks_figures_and_the_straggler_with_its_reason(three_ranks):
    check_ranks(three_ranks, dict(three_ranks.ranks))
    payload, static, tab = shown(three_ranks)
    comparison = three_ranks.rank_comparison
    assert comparison.loc[comparison["straggler"], "rank"].tolist() == payload["straggler"] == [1]
    reason = comparison.set_index("rank").loc[1, "reason"]
    assert reason and reason in payload["verdict"]
    assert "nbp-straggler" in render_html(three_ranks)
    for view in (static, tab):
        assert f"Straggler: rank 1, {reason}" in view
    assert [r["straggler"] for r in section_rows(payload, "split")] == ["", "straggler", ""]
    # What each rank waited on: the slowest rank's compute per step minus its own, and its exposed communication.
    waits = {r["rank"]: r for r in section_rows(payload, "waits")}
    compute = comparison.set_index("rank")["compute_us"]
    for n in three_ranks.ranks:
        behind = compute.max() - compute[n]
        assert waits[n]["behind_slowest_us"] == pytest.approx(behind)
        assert waits[n]["exposed_us"] == pytest.approx(three_ranks.ranks[n].breakdown["communication"].mean())
        assert cell_text("us", behind) in static and cell_text("us", behind) in tab
    assert waits[1]["behind_slowest_us"] == 0 and waits[0]["behind_slowest_us"] > 0


def test_a_run_without_communication_has_no_distributed_view():
    report = shared_report("v100_resnet50_train_num_workers_0")
    assert report_payload(report)["distributed"] is None
    assert "Distributed" not in Explorer(report).tab_titles
    assert "<h4>Distributed</h4>" not in render_html(report)
