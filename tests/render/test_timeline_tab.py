"""The explorer's Timeline tab: built when opened, it hands the timeline's bundle to the front end
through an ipywidgets Output, so JupyterLab draws it with the extension's renderer and other front
ends show the bundle's one-line HTML."""
from __future__ import annotations

from conftest import shared_report

from nbprofiler.render import view_model
from nbprofiler.render.timeline_data import TIMELINE_MIME
from nbprofiler.render.widget import Explorer


def test_the_timeline_tab_shows_the_reports_timeline_bundle():
    report = shared_report("a100_alexnet_small")
    explorer = Explorer(report)
    assert "Timeline" in explorer.tab_titles
    box = explorer.show_tab("Timeline")
    outputs = [w for w in box.children[0].children if hasattr(w, "outputs")]
    assert len(outputs) == 1
    (shown,) = outputs[0].outputs
    assert shown["output_type"] == "display_data"
    assert shown["data"][TIMELINE_MIME] == view_model.of(report).timeline_payload()
    assert "JupyterLab extension" in shown["data"]["text/html"]
