"""The JupyterLab extension's unit tests (vitest, labextension/test/), run from pytest.

They render the recorded report payloads (with hostile operator names) in
jsdom and check the tabs, the charts, sorting, filtering, copying and the
renderer's choice between the live explorer and the saved report. Skipped
without Node.js (failed instead under NBPROFILER_REQUIRE_LABEXTENSION=1, as in
CI); with Node.js the extension's node modules must be installed
(labextension/build.sh does it).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from browser.prerequisites import missing

LABEXT = Path(__file__).resolve().parents[2] / "labextension"
VITEST = LABEXT / "node_modules" / "vitest" / "vitest.mjs"


def test_labextension_unit_tests() -> None:
    node = shutil.which("node")
    if node is None:
        missing("Node.js is not installed")
    if not VITEST.is_file():
        pytest.fail("the labextension's node modules are missing: run labextension/build.sh")
    run = subprocess.run([node, str(VITEST), "run"], cwd=LABEXT,
                         capture_output=True, text=True, timeout=600)
    print(run.stdout[-3000:])
    assert run.returncode == 0, f"vitest failed:\n{run.stdout[-8000:]}\n{run.stderr[-3000:]}"
