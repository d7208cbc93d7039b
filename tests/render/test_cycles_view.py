"""The Cycles view (render/cycles.py) in the saved payload, the static HTML and the explorer, checked
against the tables a user has (``report.cycles``, ``report.drift``): on a real 1,000-step run watched
every 100 steps whose loading slows from batch 600, and on the same loop steady
(``bench/drift_workload.py``)."""
from __future__ import annotations

import html
import sys

import pytest
from conftest import ROOT

import nbprofiler
from nbprofiler.render.hardware import cell_text
from nbprofiler.render.html import render_html
from nbprofiler.render.payload import report_payload
from nbprofiler.render.widget import Explorer

sys.path.insert(0, str(ROOT / "bench"))
from drift_workload import profiled  # the loop whose loading slows from a chosen batch

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def drifting():
    return profiled(600)


@pytest.fixture(scope="module")
def steady():
    return profiled(None)


def tab_html(widget) -> str:
    own = [widget.value] if hasattr(widget, "value") and isinstance(widget.value, str) else []
    return html.unescape("".join(own + [tab_html(child) for child in getattr(widget, "children", ())]))


def shown(report) -> tuple[dict, str, str]:
    """The Cycles view as the payload holds it, as the static HTML and the explorer's tab show it."""
    explorer = Explorer(report)
    assert explorer.tab_titles.index("Cycles") == explorer.tab_titles.index("Operators") + 1
    return (report_payload(report)["cycles"], html.unescape(render_html(report)),
            tab_html(explorer.show_tab("Cycles")))


def test_a_drift_is_named_with_its_cycle_in_every_view_and_marked_on_the_trend(drifting):
    drift = drifting.drift
    assert set(drift["measure"]) >= {"step_time", "data_wait"} and set(drift["from_cycle"]) == {7}
    payload, static, tab = shown(drifting)
    assert payload["drifted"] is True
    # one sentence for the cycle it began in, with each change
    assert payload["verdict"] == "From cycle 7 (step 600) " + "; ".join(drift["change"]) + "."
    assert payload["verdict"] in static and payload["verdict"] in tab
    step_chart = payload["charts"][0]
    assert step_chart["panels"][0]["x"] == drifting.cycles["first_step"].tolist()
    assert step_chart["panels"][0]["markers"] == [{"at": 600, "label": "drift: step time, data wait"}]
    # The static HTML draws the same trend, the marker at the point of step 600, named in the legend.
    svg = static.split("<h4>Cycles</h4>", 1)[1].split("</svg>", 1)[0]
    assert "drift: step time, data wait" in svg and "drift began" in svg


def test_the_cycles_table_shows_each_cycles_figures_as_report_cycles_has_them(drifting):
    payload, static, tab = shown(drifting)
    section = payload["sections"][0]
    rows = [dict(zip(section["columns"], row)) for row in section["rows"]]
    cycles = drifting.cycles
    assert [r["cycle"] for r in rows] == cycles["cycle"].tolist()
    for row, (_, cycle) in zip(rows, cycles.iterrows()):
        assert row["first_step"] == cycle["first_step"] and row["last_step"] == cycle["last_step"]
        assert row["unprofiled_step_us"] == pytest.approx(cycle["step_ms"] * 1e3)
        assert row["data_wait_share"] == pytest.approx(cycle["data_wait_share"])
        assert row["top_operators"] == cycle["top_operators"]
        # each view writes the step time as the others do
        text = cell_text("us", row["unprofiled_step_us"])
        assert text in static and text in tab


def test_a_steady_run_is_said_to_be_steady(steady):
    payload, static, tab = shown(steady)
    assert steady.drift.empty and payload["drifted"] is False
    assert payload["verdict"].startswith("Steady over its 10 cycles")
    assert payload["verdict"] in static and payload["verdict"] in tab
    assert all(not panel["markers"] for chart in payload["charts"] for panel in chart["panels"])


def test_a_run_without_cycles_has_no_cycles_view_and_is_told_how_to_get_one(private_tmp):
    with nbprofiler.profile(history=False, step_on="manual") as run:
        for _ in range(6):
            nbprofiler.step()
    report = run.report
    assert "Cycles" not in Explorer(report).tab_titles
    assert report_payload(report)["cycles"] is None
    static = render_html(report)
    assert "<h4>Cycles</h4>" not in static
    assert "with --every N for Cycles (the trend of a whole run, cycle by cycle)" in html.unescape(static)
