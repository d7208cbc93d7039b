"""notebooks/01_quickstart.ipynb runs headless and shows a complete report."""
from __future__ import annotations

import pytest
from nbconvert import HTMLExporter

from conftest import cell_outputs, execute_notebook

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quickstart():
    return execute_notebook("01_quickstart.ipynb")


def test_profiled_cell_shows_the_report(quickstart):
    outputs = cell_outputs(quickstart, "%%torchprofile")
    bundles = [o["data"] for o in outputs if "data" in o and "text/plain" in o["data"]]
    report = next(b for b in bundles if "nbprofiler report" in b["text/plain"])
    # 512 samples / batch 32 = 16 optimizer steps, 5 of them profiled.
    assert "16 steps run, 5 profiled" in report["text/plain"]
    assert "aten::convolution" in report["text/html"] or "aten::mkldnn_convolution" in report["text/html"]
    assert report["application/vnd.nbprofiler.report+json"]["schema"] == "nbprofiler.report/1"


def test_report_tables_and_reloaded_trace(quickstart):
    steps_html = cell_outputs(quickstart, "run.steps")[0]["data"]["text/html"]
    assert "warmup" in steps_html and "active" in steps_html
    reloaded = "".join(o.get("text", "") for o in cell_outputs(quickstart, "import nbprofiler"))
    assert "5 profiled steps" in reloaded


def test_nbconvert_html_holds_the_report(quickstart):
    html, _ = HTMLExporter().from_notebook_node(quickstart)
    assert "nbprofiler report" in html and "Top operators" in html
