"""The report's output across its kernel's life, in a real JupyterLab (tests/browser/reload_e2e.mjs):
after a page reload with the kernel still running, the live explorer comes back (three reloads);
once the kernel is shut down, the saved report replaces it and says why; closing the tab and
reopening it without a kernel draws the saved report, never a dead explorer (twice). In each
state the operator table sorts on a header click."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_browser import ROOT, SHOTS, _run_in_lab, write_notebook

SCRIPT = ROOT / "tests" / "browser" / "reload_e2e.mjs"

pytestmark = pytest.mark.slow


def test_the_report_follows_its_kernel_across_reloads_shutdown_and_reopening(tmp_path: Path) -> None:
    notebook = write_notebook(
        tmp_path / "reload.ipynb",
        "\n".join(["import torch", "import torch.nn.functional as F", "from torch import nn", "%load_ext nbprofiler",
                   "torch.manual_seed(0)", "model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))",
                   "opt = torch.optim.SGD(model.parameters(), lr=0.01)",
                   "batches = [(torch.randn(16, 32), torch.randint(0, 4, (16,))) for _ in range(8)]"]),
        "\n".join(["%%torchprofile", "for x, y in batches:", "    loss = F.cross_entropy(model(x), y)",
                   "    opt.zero_grad()", "    loss.backward()", "    opt.step()"]),
    )
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "reload", timeout=600)
    assert result["reloads"] == [{"mode": "widget", "sorted": True}] * 3
    assert result["afterShutdown"] == {"mode": "static", "saysWhy": True}
    assert result["reopens"] == [{"mode": "static", "sorted": True, "dead": False}] * 2
