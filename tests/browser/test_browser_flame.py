"""The Flame graph in a real JupyterLab (tests/browser/flame_e2e.mjs), saved and live, on the V100
ResNet-50 trace: a click zooms into a box (it then spans the width) and the root zooms back out,
and a search for aten::conv2d states the share of the device time the operator table gives it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import shared_report
from test_browser import ROOT, SHOTS, _run_in_lab
from test_browser_hardware import TRACE, saved_notebook

SCRIPT = ROOT / "tests" / "browser" / "flame_e2e.mjs"

pytestmark = pytest.mark.slow


def test_the_flame_graph_zooms_and_searches_saved_and_live(tmp_path: Path) -> None:
    notebook = saved_notebook(tmp_path / "flame.ipynb")
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "flame", timeout=300)
    ops = shared_report(TRACE).operators
    conv = ops.loc[ops["name"] == "aten::conv2d", "device_total_us"].sum()
    expected = 100 * conv / ops["device_self_us"].sum()
    for where in ("saved", "live"):
        shown = result[where]
        print(where, shown)
        assert shown["metric"] == "device"
        assert shown["rootWidth"] == pytest.approx(shown["viewWidth"], abs=1)
        assert shown["widest"]["width"] < shown["viewWidth"] - 1  # a part of the graph before the click...
        assert shown["zoomedWidth"] == pytest.approx(shown["viewWidth"], abs=1)  # ...the whole width after it
        assert shown["widest"]["name"] in shown["zoomStatus"]
        assert shown["outWidth"] == pytest.approx(shown["widest"]["width"], abs=0.1)  # the root zooms back out
        share = re.search(r"([\d.]+)% of the device time", shown["searchStatus"])
        assert share is not None, shown["searchStatus"]
        assert float(share.group(1)) == pytest.approx(expected, abs=0.1 if expected < 10 else 0.5)
