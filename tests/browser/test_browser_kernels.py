"""The Kernels tab of the A100 trace (templated kernel names up to 1,646 characters) in a real
JupyterLab (tests/browser/kernels_e2e.mjs), saved and live: each kernel is one line by its short
name, the whole name is its hover text, and the table scrolls sideways so its last column can be
brought into view instead of being cut off."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_report
from test_browser import ROOT, SHOTS, _run_in_lab
from test_browser_hardware import saved_notebook

from nbprofiler.render import view_model

SCRIPT = ROOT / "tests" / "browser" / "kernels_e2e.mjs"
TRACE = "a100_train"

pytestmark = pytest.mark.slow


def test_kernel_rows_are_one_line_and_the_table_scrolls_sideways(tmp_path: Path) -> None:
    notebook = saved_notebook(tmp_path / "kernels.ipynb", TRACE)
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "kernels", timeout=300)
    kernels = view_model.of(shared_report(TRACE)).kernels
    for where in ("saved", "live"):
        shown = result[where]
        print(where, {k: v for k, v in shown.items() if k not in ("titles", "texts")})
        assert 0 < shown["tallestRow"] <= 1.5 * shown["line"] + 8  # padding and border around one line
        assert shown["overflowX"] == "auto" and shown["lastHeaderVisible"]
        assert shown["scrollWidth"] >= shown["clientWidth"]
        assert shown["lastHeader"].lower().startswith("launched by")
        # The first 25 rows (what the page sends back), in the report's order.
        assert shown["titles"] == list(kernels["name"].head(25))
    assert result["saved"]["texts"] == list(kernels["short_name"].head(25))
    assert result["saved"]["rows"] == len(kernels)
