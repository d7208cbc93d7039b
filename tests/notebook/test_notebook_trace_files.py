"""notebooks/05_trace_files.ipynb: trace files and TensorBoard directories through nbprofiler.load."""
from __future__ import annotations

import pytest

from conftest import SHARED_TRACES, cell_outputs, execute_notebook

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def notebook():
    return execute_notebook("05_trace_files.ipynb")


def _text(outputs) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)


def test_recorded_directory_loads_as_three_profiled_steps(notebook):
    out = _text(cell_outputs(notebook, "report = nbprofiler.load(trace_dir)"))
    assert "3 profiled steps" in out and "no notes" in out


def test_phases_of_the_recorded_run(notebook):
    shares = _text(cell_outputs(notebook, "phase_shares(report.phases)"))
    for phase in ("dataloader", "forward", "backward", "optimizer"):
        assert phase in shares


@pytest.mark.skipif(not (SHARED_TRACES / "v100_resnet50_train_num_workers_0.pt.trace.json.gz").exists(),
                    reason="shared traces not available")
def test_shared_gpu_trace_breakdown_is_shown(notebook):
    shown = cell_outputs(notebook, "gpu.breakdown_shares()")[0]["data"]["text/plain"]
    shares = {line.split()[0]: float(line.split()[1]) for line in shown.splitlines() if line.split()[0] != "dtype:"}
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.005)
    # num_workers=0: loading in the main process is a large share of the step.
    assert shares["dataloader"] > 0.2 and shares["kernel"] > 0.3
