"""Loading that computes is told from loading that sleeps on I/O, also on a machine whose
cores are all busy with another process's work."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import nbprofiler
from nbprofiler.advice.dataloader_plan import _waits_on_io

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"),
                                reason="the time a thread waits for a core is read from Linux's schedstat")

_WORD = re.compile(r"[a-z]+\d*")


class Tokenised(Dataset):
    """Each item is pure CPU work: a regex over a text and a hash chain, no I/O."""

    def __len__(self) -> int:
        return 48

    def __getitem__(self, i: int):
        text = " ".join(f"word{i * j % 97}" for j in range(3000))
        digest = b""
        for token in _WORD.findall(text):
            digest = hashlib.sha256(digest + token.encode()).digest()
        return torch.tensor(list(digest[:8]), dtype=torch.float32)


class Remote(Dataset):
    """Each item waits on a slow read (a sleep), computing next to nothing."""

    def __len__(self) -> int:
        return 48

    def __getitem__(self, i: int):
        time.sleep(0.004)
        return torch.full((8,), float(i))


def loader_record(dataset: Dataset):
    model = torch.nn.Linear(8, 1)
    with nbprofiler.profile(history=False) as run:
        for x in DataLoader(dataset, batch_size=8):
            model(x).sum().backward()
            nbprofiler.step()
    (record,) = run.report.run.loaders
    return record


@pytest.fixture()
def busy_cores():
    """Four spinning processes per core, started by the test: the loop's thread is runnable but
    waiting for a core most of the time, which must not read as waiting on I/O."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4 * (os.cpu_count() or 1))]
    time.sleep(0.5)  # let them start spinning
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_cpu_bound_loading_is_not_taken_for_io_on_busy_cores(busy_cores, one_torch_thread):
    record = loader_record(Tokenised())
    assert not _waits_on_io(record, workers=0), record.wait_cpu_share


def test_loading_that_sleeps_is_io_on_busy_cores(busy_cores, one_torch_thread):
    record = loader_record(Remote())
    assert _waits_on_io(record, workers=0), record.wait_cpu_share
