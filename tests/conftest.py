"""Shared fixtures: a real IPython shell with the extension loaded, and the shared traces."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES = ROOT.parent / "shared" / "traces"

SETUP_CELL = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_ds = TensorDataset(torch.randn(96, 20), torch.randint(0, 4, (96,)))
train_loader = DataLoader(train_ds, batch_size=8)   # 12 batches
"""

TRAIN_CELL = """
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def shared_trace(name: str) -> Path:
    path = SHARED_TRACES / name
    if not path.exists():
        pytest.skip(f"shared trace {name} not available")
    return path


@pytest.fixture(scope="session")
def ip():
    """One real IPython shell for the session, with nbprofiler loaded and rich output on."""
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    shell.display_formatter.active_types = ["text/plain", "text/html", "application/vnd.nbprofiler.report+json"]
    return shell


@pytest.fixture()
def shell(ip):
    """The shell with a fresh small model, optimizer and DataLoader in its namespace."""
    result = ip.run_cell(SETUP_CELL)
    result.raise_error()
    return ip


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` need a live GPU: skip them cleanly without one."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a live CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def execute_notebook(name: str, timeout: int = 300):
    """Execute ``notebooks/<name>`` with nbclient, from the notebooks folder, and return it."""
    import nbformat
    from nbclient import NotebookClient

    path = ROOT / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def cell_outputs(nb, startswith: str) -> list[dict]:
    """The outputs of the first code cell whose source starts with ``startswith``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.lstrip().startswith(startswith):
            return list(cell.get("outputs", []))
    raise AssertionError(f"no cell starts with {startswith!r}")
