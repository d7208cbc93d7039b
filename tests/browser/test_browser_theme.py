"""The live explorer reads in JupyterLab's light and dark themes (tests/browser/theme_e2e.mjs).

A real JupyterLab and Chromium (see test_browser.py) on a small generated
notebook: a CNN trained a few steps under ``%%torchprofile --shapes``. The
scenario switches the theme and measures the WCAG contrast of the explorer's
title, metric figures, suggestion text and table rows against the background
they are drawn on; it checks that the tables' headers sit over their columns
and that header and row clicks reach the kernel. The measured ratios are printed
and kept in build/screenshots/theme/result.json.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_browser import ROOT, SHOTS, _run_in_lab, write_notebook

SCRIPT = ROOT / "tests" / "browser" / "theme_e2e.mjs"

pytestmark = pytest.mark.slow


def _small_cnn_notebook(path: Path) -> Path:
    setup = "\n".join([
        "import torch",
        "import torch.nn.functional as F",
        "from torch import nn",
        "%load_ext nbprofiler",
        "torch.manual_seed(0)",
        "model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),",
        "                      nn.Linear(8 * 16 * 16, 10))",
        "opt = torch.optim.SGD(model.parameters(), lr=0.01)",
        "batches = [(torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))) for _ in range(6)]",
    ])
    training = "\n".join([
        "%%torchprofile --shapes",
        "for x, y in batches:",
        "    loss = F.cross_entropy(model(x), y)",
        "    opt.zero_grad()",
        "    loss.backward()",
        "    opt.step()",
    ])
    return write_notebook(path, setup, training)


def test_explorer_text_reaches_contrast_in_light_and_dark_themes(tmp_path: Path) -> None:
    """Title, metric figures, suggestion text and table rows at 4.5:1 or more in both themes; table
    headers over their columns within 1 px; a header click sorts and a row click shows its operator."""
    notebook = _small_cnn_notebook(tmp_path / "theme.ipynb")
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "theme", timeout=600)
    ratios = {theme: {what: m["ratio"] for what, m in measured.items() if isinstance(m, dict) and "ratio" in m}
              for theme, measured in result["contrast"].items()}
    print(json.dumps({"contrast": ratios, "rowClick": result.get("rowClick")}, indent=1))
