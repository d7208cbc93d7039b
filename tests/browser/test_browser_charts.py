"""The charts in a real JupyterLab (tests/browser/chart_hover_e2e.mjs): a notebook runs a short
%%torchprofile training loop; in the live explorer's Overview and in the saved report reopened
without a kernel, hovering a bar shows its step's times with their units, dragging across
three steps zooms on them, the lowest point's tooltip stays in sight, and the Memory chart's
legend draws each line's swatch in its line's colour (the saved one in the light and the dark theme)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_browser import ROOT, SHOTS, _run_in_lab, write_notebook

SCRIPT = ROOT / "tests" / "browser" / "chart_hover_e2e.mjs"
SETUP = """import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
%load_ext nbprofiler
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(96, 20), torch.randint(0, 4, (96,))), batch_size=8)
"""
TRAIN = """%%torchprofile --wait 1 --warmup 1 --active 6
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

pytestmark = pytest.mark.slow


def test_chart_hover_and_zoom_live_and_saved(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "charts.ipynb", SETUP, TRAIN)
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "charts", timeout=600)
    print(json.dumps({k: result.get(k) for k in ("live", "saved", "liveLegend", "savedLegend")}, indent=1))
    for view in ("live", "saved"):
        seen = result[view]
        assert seen["steps"] == 6 and seen["zoomed"] == 3, seen
        assert all(any(u in line for u in (" µs", " ms", " s")) for line in seen["tooltip"][1:]), seen
        assert seen["tipInSight"], seen
        legends = result[f"{view}Legend"]
        themes = {"JupyterLab Light", "JupyterLab Dark"} if view == "saved" else {"JupyterLab Light"}
        assert set(legends) == themes, legends
        for pairs in legends.values():
            assert pairs and all(p["swatch"] == p["line"] != p["text"] for p in pairs), pairs
