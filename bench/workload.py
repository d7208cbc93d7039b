"""Pieces the benchmarks share: the training workload and the RSS probe prelude."""
from __future__ import annotations

import os
import tempfile
from typing import Any


def conv_training_setup(samples: int) -> str:
    """Cell source that builds a small conv net, its SGD optimizer and a DataLoader
    of ``samples`` synthetic CIFAR-shaped images in batches of 32."""
    return f"""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = DataLoader(TensorDataset(torch.randn({samples}, 3, 32, 32), torch.randint(0, 10, ({samples},))), batch_size=32)
"""


def shell_with(setup: str) -> tuple[Any, str]:
    """An IPython shell with the extension loaded and ``setup`` run, and a temporary trace path for a
    hand-written profiler's export (``TRACE_PATH`` in its namespace; the caller removes the file)."""
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nbprofiler")
    ip.run_cell(setup).raise_error()
    fd, trace_path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    ip.user_ns["TRACE_PATH"] = trace_path
    return ip, trace_path


# Python source for a probe subprocess: ``status(key)`` reads /proc/self/status in bytes,
# and the peak (VmHWM) is reset so that it measures only what follows.
RSS_PRELUDE = r"""
def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise KeyError(key)

try:
    with open("/proc/self/clear_refs", "w") as fh:  # start the high-water mark from now
        fh.write("5")
except OSError:
    pass  # the mark then includes the imports, which stay far below a load's peak
"""
