"""The Timeline view in a real JupyterLab (tests/browser/timeline_e2e.mjs): a notebook displays a
report loaded from a real A100 trace; the explorer's Timeline tab, and the saved report's without a
kernel, are zoomed to one kernel with the wheel and clicked, and show that kernel's details."""
from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_browser import ROOT, SHOTS, _run_in_lab, write_notebook

import nbprofiler
from nbprofiler.render import view_model

SCRIPT = ROOT / "tests" / "browser" / "timeline_e2e.mjs"
TRACE = ROOT / "tests" / "data" / "traces" / "a100_alexnet_small.pt.trace.json.gz"
SEARCH = "scudnn"

pytestmark = pytest.mark.slow


def _array(payload: dict, key: str, dtype: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(payload["events"][key]), dtype=dtype)


def _first_match(trace: Path) -> dict:
    """The earliest event whose name contains SEARCH, as the timeline's search goes to it first."""
    payload = view_model.of(nbprofiler.load(trace)).timeline_payload()
    assert payload is not None
    names = _array(payload, "name", "<u4")
    start = _array(payload, "start", "<f8")
    hits = [i for i, code in enumerate(names) if SEARCH in payload["strings"][code].lower()]
    first = min(hits, key=lambda i: (start[i], i))
    return {"pattern": SEARCH, "name": payload["strings"][names[first]],
            "dur_us": float(_array(payload, "dur", "<f4")[first]), "events": payload["events"]["n"]}


def test_timeline_zooms_to_a_kernel_and_shows_its_details(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / TRACE.name
    shutil.copy(TRACE, trace)
    kernel = _first_match(trace)
    monkeypatch.setenv("NBP_TIMELINE_KERNEL", json.dumps(kernel))
    notebook = write_notebook(tmp_path / "timeline.ipynb",
                              f"import nbprofiler\nreport = nbprofiler.load({str(trace)!r})\nreport\n")
    result = _run_in_lab(tmp_path / "lab", SCRIPT, notebook, SHOTS / "timeline", timeout=600)
    print(json.dumps({k: result.get(k) for k in ("live", "saved", "download")}, indent=1))
