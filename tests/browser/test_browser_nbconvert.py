"""The report in nbconvert's HTML (``jupyter nbconvert --to html``), measured in Chromium
(tests/browser/nbconvert_fonts_e2e.mjs): its charts' text is drawn at the report's text size,
not scaled up with a chart stretched across a wide page."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from browser.prerequisites import missing
from test_browser import CHROMIUM, ROOT, _node

import nbprofiler

SCRIPT = ROOT / "tests" / "browser" / "nbconvert_fonts_e2e.mjs"
TRACE = ROOT / "tests" / "data" / "traces" / "v100_resnet50_train_num_workers_0.pt.trace.json.gz"

pytestmark = pytest.mark.slow


def _converted(tmp_path: Path) -> Path:
    """A notebook whose output is a real trace's report, as a kernel would have saved it, converted to HTML."""
    bundle = nbprofiler.load(str(TRACE))._repr_mimebundle_()
    cell = nbformat.v4.new_code_cell("report")
    cell.outputs = [nbformat.v4.new_output("display_data", data={k: v for k, v in bundle.items() if "widget" not in k})]
    notebook = tmp_path / "report.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), notebook)
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(notebook)],
                   check=True, capture_output=True, timeout=120)
    return notebook.with_suffix(".html")


def test_chart_text_in_nbconvert_html_is_the_reports_size(tmp_path: Path) -> None:
    node = _node()
    if not os.access(CHROMIUM, os.X_OK):
        missing(f"Chromium is not installed at {CHROMIUM}")
    run = subprocess.run([node, str(SCRIPT), str(_converted(tmp_path))], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, NBP_CHROMIUM=CHROMIUM))
    line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert run.returncode == 0 and line, run.stderr[-3000:]
    seen = json.loads(line[len("RESULT "):])
    print(json.dumps(seen, indent=1))
    assert len(seen["charts"]) >= 3 and seen["reportPx"] == 13
    for chart in seen["charts"]:
        # A chart's title reads at the report's text size, its ticks smaller; none is scaled past its own size.
        assert chart["drawn"] <= chart["viewBox"] + 0.5, chart
        assert abs(chart["titlePx"] - seen["reportPx"]) < 0.5 and chart["tickPx"] < seen["reportPx"], chart
