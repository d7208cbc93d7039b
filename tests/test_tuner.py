"""tune_dataloader measures real loaders and leaves nothing behind: not on success, not on
error, not on KeyboardInterrupt."""
from __future__ import annotations

import os
import random
import signal
import threading
import time

import numpy as np
import psutil
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from nbprofiler.measure import tuner
from nbprofiler.measure.tuner import default_candidates, plot_throughput, tune_dataloader


class SleepyDataset(Dataset):
    """Each sample waits ``delay`` seconds (I/O-like), so worker processes overlap it."""

    def __init__(self, n: int, delay: float, fail_at: int | None = None) -> None:
        self.n, self.delay, self.fail_at = n, delay, fail_at

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if i == self.fail_at:
            raise ValueError(f"sample {i} is corrupt")
        time.sleep(self.delay)
        return torch.full((4,), float(i)), i


def rng_states():
    return torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()


def assert_same_rng(before) -> None:
    after = rng_states()
    assert torch.equal(before[0], after[0])
    assert before[1] == after[1]
    assert np.array_equal(before[2], after[2])


def live_children() -> set[int]:
    """Child processes still running (zombies have exited; they are reaped later)."""
    out = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                out.add(child.pid)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture()
def no_workers_before():
    """The test starts no child process that outlives it (others' children are left alone)."""
    before = live_children()
    yield
    deadline = time.monotonic() + 5
    while live_children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_children() - before == set(), "tune_dataloader left worker processes running"


def test_workers_measured_faster_and_recommended(no_workers_before, capsys):
    # Sleep-bound items (10 ms each): two workers overlap them even on a busy machine.
    ds = SleepyDataset(400, delay=0.01)
    train_loader = DataLoader(ds, batch_size=8, shuffle=True)
    before = rng_states()
    result = tune_dataloader(train_loader, candidates=[{"num_workers": 0}, {"num_workers": 2}], max_seconds=4,
                             namespace={"train_loader": train_loader, "train_ds": ds}, progress=False)
    assert list(result["num_workers"]) == [0, 2] and set(result["status"]) == {"ok"}
    serial, parallel = result["batches_per_s"]
    assert parallel > 1.4 * serial  # two workers overlap the sleeps
    assert result["speedup"].iloc[0] == pytest.approx(1.0)
    assert result["samples_per_s"].iloc[1] == pytest.approx(8 * parallel)
    assert result.attrs["recommended"] == {"num_workers": 2, "pin_memory": False}
    code = result.attrs["code"]
    assert code.startswith("train_loader = DataLoader(\n    train_ds,\n    batch_size=8,\n    shuffle=True,\n")
    assert "num_workers=2,  # changed: was 0" in code
    assert "Best measured: num_workers=2" in capsys.readouterr().out
    assert train_loader.num_workers == 0  # the user's loader is untouched
    assert_same_rng(before)


def test_current_setting_best_says_so(no_workers_before, capsys):
    ds = SleepyDataset(64, delay=0.0)
    loader = DataLoader(ds, batch_size=16)
    result = tune_dataloader(loader, candidates=[{"num_workers": 0}], max_seconds=1, progress=False)
    assert result.attrs["recommended"]["num_workers"] == 0
    assert "your current setting" in capsys.readouterr().out


def test_error_in_the_dataset_propagates_after_cleanup(no_workers_before):
    ds = SleepyDataset(200, delay=0.001, fail_at=37)
    loader = DataLoader(ds, batch_size=4)
    before = rng_states()
    with pytest.raises(ValueError, match="sample 37 is corrupt"):
        tune_dataloader(loader, candidates=[{"num_workers": 2}], max_seconds=5, progress=False)
    assert_same_rng(before)


def test_keyboard_interrupt_shuts_workers_down(no_workers_before):
    ds = SleepyDataset(10_000, delay=0.005)
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    before = rng_states()
    main = threading.main_thread()
    assert threading.current_thread() is main
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tune_dataloader(loader, candidates=[{"num_workers": 2}], max_seconds=30, progress=False)
    finally:
        timer.cancel()
    assert_same_rng(before)


def test_loader_generators_are_restored(no_workers_before):
    g = torch.Generator().manual_seed(7)
    loader = DataLoader(SleepyDataset(64, delay=0.0), batch_size=8, shuffle=True, generator=g)
    state = g.get_state()
    tune_dataloader(loader, candidates=[{"num_workers": 0}], max_seconds=0.5, progress=False)
    assert torch.equal(g.get_state(), state)


def test_default_candidates_follow_the_usable_cpus(monkeypatch):
    loader = DataLoader(SleepyDataset(8, 0.0), batch_size=2)
    monkeypatch.setattr(tuner.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(6)), raising=False)
    assert [c["num_workers"] for c in default_candidates(loader)] == [0, 1, 2, 4, 6]
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert [c["num_workers"] for c in default_candidates(loader)] == [0, 1, 2, 3]
    monkeypatch.setattr(tuner.torch.cuda, "is_available", lambda: True)
    assert {c["pin_memory"] for c in default_candidates(loader)} == {False, True}


def test_bad_arguments_are_rejected():
    loader = DataLoader(SleepyDataset(8, 0.0), batch_size=2)
    with pytest.raises(TypeError, match="DataLoader"):
        tune_dataloader([1, 2, 3])
    with pytest.raises(ValueError, match="max_seconds"):
        tune_dataloader(loader, max_seconds=0)
    with pytest.raises(ValueError, match="batch_size"):
        tune_dataloader(loader, candidates=[{"batch_size": 4}])


def test_plot_has_labelled_axes(no_workers_before):
    loader = DataLoader(SleepyDataset(64, delay=0.0), batch_size=8)
    result = tune_dataloader(loader, candidates=[{"num_workers": 0}, {"num_workers": 1}], max_seconds=1.5,
                             progress=False, plot=False)
    ax = plot_throughput(result).axes[0]
    assert ax.get_xlabel() == "num_workers (worker processes)"
    assert ax.get_ylabel() == "throughput (batches/s)"
    assert len(ax.lines) == 1  # one pin_memory setting measured
