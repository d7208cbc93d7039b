"""The three live CPU runs of the golden dump, profiled in a real IPython shell with the magic and
saved with ``Report.save``: a training loop over a slow DataLoader with time per cell line and per
module, a model run with ``-n`` that syncs with the host, and a loop whose memory grows each step.
They are recorded once (``python tests/golden.py --record``), since a live run's figures change
with every run; the dump then reads them back, as a saved report and as a live report."""
from __future__ import annotations

from pathlib import Path

SETUP = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from workloads import SlowDataset
torch.manual_seed(0)
"""

CELLS = {
    "loader_training": (
        "%%torchprofile --stack --modules --wait 1 --warmup 1 --active 4 -o golden_run\n"
        "model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loader = DataLoader(SlowDataset(256, 0.002), batch_size=16)\n"
        "for x, y in loader:\n"
        "    loss = F.cross_entropy(model(x), y)\n"
        "    opt.zero_grad()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    ),
    "host_syncs": (
        "%%torchprofile -n 6 --wait 0 --warmup 1 --active 4 -o golden_run\n"
        "net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))\n"
        "images = torch.randn(8, 3, 16, 16)\n"
        "with torch.no_grad():\n"
        "    out = net(images)\n"
        "    best = [float(v) for v in out.max(dim=1).values]\n"
    ),
    "growing_memory": (
        "%%torchprofile --step-on manual --wait 0 --warmup 1 --active 5 -o golden_run\n"
        "import nbprofiler\n"
        "kept = []\n"
        "layer = nn.Linear(64, 64)\n"
        "for i in range(8):\n"
        "    y = layer(torch.randn(32, 64))\n"
        "    kept.append(y)\n"
        "    nbprofiler.step(samples=32)\n"
    ),
}


def record(folder: Path) -> list[Path]:
    """Profile each cell in a fresh shell namespace and save its report as ``folder/NAME.nbprof``."""
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    paths = []
    for name, cell in CELLS.items():
        shell.run_cell(SETUP).raise_error()
        shell.run_cell(cell).raise_error()
        path = folder / f"{name}.nbprof"
        shell.user_ns["golden_run"].save(path)
        paths.append(path)
    return paths
