"""A training loop whose loading slows down from a chosen batch: the drift that ``--every`` watches for.

The DataLoader's collate function stands for the loading: it sleeps a fixed time per batch, so the
steady loop's steps stay steady on a busy machine, and from batch ``slow_from`` on it sleeps 30 times
longer: the step then waits for data most of its time, even where a busy machine slows its compute
threefold. ``tests/capture/test_every.py`` runs it as a cell under ``%%torchprofile --every``, the
saved view's fixture (``labextension/test/fixtures/make_cycles_fixture.py``) and the browser test of a
reopened notebook through ``profiled``.
"""
from __future__ import annotations

from typing import Any

SETUP = """
import time, torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data._utils.collate import default_collate
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
batches_seen = 0

def loading(slow_from, slow_s=0.006, steady_s=0.0002):
    def collate(samples):
        global batches_seen
        time.sleep(slow_s if slow_from is not None and batches_seen >= slow_from else steady_s)
        batches_seen += 1
        return default_collate(samples)
    return collate
"""
# 1,000 steps of 16 samples; ``{slow_from}``: the first slow batch, or None for a steady loop.
CELL = """
batches_seen = 0
train_loader = DataLoader(TensorDataset(torch.randn(16_000, 32), torch.randint(0, 4, (16_000,))), batch_size=16,
                          collate_fn=loading({slow_from}))
for x, y in train_loader:
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def profiled(slow_from: int | None, every: int = 100) -> Any:
    """The loop run under ``nbprofiler.profile(every=every)`` in a namespace of its own; its Report."""
    import nbprofiler

    namespace: dict[str, Any] = {}
    exec(SETUP, namespace)
    with nbprofiler.profile(every=every, history=False) as run:
        exec(CELL.format(slow_from=slow_from), namespace)
    return run.report
