"""The Hardware tab in a real JupyterLab (tests/browser/hardware_e2e.mjs): a notebook holding the saved
output of the V100 ResNet-50 trace's report opens in Chromium; clicking the Hardware tab shows the
launches and the copies as the report's own tables count them, and the roofline scatter's points, one
per roofline row, with what each is on hover; the Kernels tab shows each kernel's launching operator's
achieved FLOP/s and bound; the same trace loaded by the kernel shows the same launch count and the same
scatter in the explorer's Hardware tab."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_report, shared_trace
from test_browser import ROOT, SHOTS, _run_in_lab, saved_output_notebook

from nbprofiler.format import fmt_bytes, fmt_rate, fmt_si
from nbprofiler.render.chart_svg import point_hover
from nbprofiler.render.hardware import KERNEL_ROOFLINE_HELP
from nbprofiler.render.payload import report_payload

SCRIPT = ROOT / "tests" / "browser" / "hardware_e2e.mjs"
TRACE = "v100_resnet50_train_num_workers_0"

pytestmark = pytest.mark.slow


def saved_notebook(path: Path, trace_name: str = TRACE) -> Path:
    """A notebook whose first cell holds the shared trace's saved report and whose second loads the trace."""
    return saved_output_notebook(path, shared_report(trace_name), shared_trace(trace_name))


def test_the_saved_hardware_tab_shows_the_launches_and_copies(tmp_path: Path) -> None:
    notebook = saved_notebook(tmp_path / "hardware.ipynb")
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "hardware", timeout=300)
    report = shared_report(TRACE)
    assert result["launchLabels"][0] == "launches"
    assert result["launches"] == result["liveLaunches"] == f"{report.launch_summary().launches:,}"
    assert result["device"] == f"Device: {report.device.name}"
    first = report.copies.iloc[0]
    shown = dict(zip(result["copiesHeader"], result["copies"], strict=True))
    assert (shown["direction"], shown["host memory"], shown["copies"], shown["bytes"], shown["rate"]) == (
        first["direction"], first["host_memory"] or "–", f"{first['copies']:,}", fmt_bytes(first["bytes"]),
        fmt_rate(first["gb_per_s"]))
    roofline = report.roofline
    assert result["points"] == result["livePoints"] == list(roofline["operator"])
    first = roofline.iloc[0]
    point = {"dtype": first["dtype"], "bound": first["bound"]}
    assert result["tip"] == [first["operator"], *point_hover(point, first["intensity"], first["achieved_flops_per_s"])]
    header = result["kernelHeader"]
    assert "Achieved FLOP/s" in header and "Bound" in header
    assert result["kernelHelp"] == KERNEL_ROOFLINE_HELP["achieved_flops_per_s"]
    kernels = report_payload(report)["kernels"]
    top = dict(zip(kernels["columns"], kernels["rows"][0]))
    shown = dict(zip(header, result["kernelRow"], strict=True))
    assert shown["Kernel"] == top["short_name"] and top["achieved_flops_per_s"] is not None
    assert (shown["Achieved FLOP/s"], shown["Bound"]) == (fmt_si(top["achieved_flops_per_s"], "FLOP/s"), top["bound"])
