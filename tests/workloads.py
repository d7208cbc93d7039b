"""Small deterministic training workloads shared by the advice tests: a dataset whose samples
take a known time (like slow storage or a decode), and one epoch of the usual training loop."""
from __future__ import annotations

import time
from collections.abc import Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset


class SlowDataset(Dataset):
    """Each sample takes ``delay`` seconds to produce: asleep, like a read from slow storage,
    or with ``compute`` busy on the CPU, like a decode; 32 random features and one of 4 classes."""

    def __init__(self, n: int, delay: float, compute: bool = False) -> None:
        self.n, self.delay, self.compute = n, delay, compute
        self.data = torch.randn(n, 32)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        if self.compute:
            end = time.thread_time() + self.delay  # CPU time: a busy machine stretches it, never shortens it
            while time.thread_time() < end:
                pass
        elif self.delay:
            time.sleep(self.delay)
        return self.data[i], i % 4


def train_epoch(loader: Iterable[tuple[torch.Tensor, torch.Tensor]], model: nn.Module,
                opt: torch.optim.Optimizer) -> None:
    """One pass of the usual loop: forward, cross-entropy, zero_grad, backward, step."""
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
