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

from nbprofiler import machine
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


class PidDataset(SleepyDataset):
    """Items say which process loaded them, so a step can tell which candidate fed it."""

    def __getitem__(self, i: int):
        time.sleep(self.delay)
        return torch.tensor([os.getpid()])


def test_workers_help_the_loader_alone_and_it_says_so(no_workers_before, capsys):
    # Sleep-bound items (10 ms each): two workers overlap them even on a busy machine.
    ds = SleepyDataset(400, delay=0.01)
    train_loader = DataLoader(ds, batch_size=8, shuffle=True)
    before = rng_states()
    result = tune_dataloader(train_loader, candidates=[{"num_workers": 2}], max_seconds=3,
                             namespace={"train_loader": train_loader, "train_ds": ds}, progress=False)
    assert list(result["num_workers"]) == [0, 2] and set(result["status"]) == {"ok"}  # the current setting joins
    assert "loop_speedup" not in result.columns and "loader alone" in result.attrs["measured"]
    current, workers = result.itertuples()
    assert current.loader_speedup == current.loader_speedup_low == current.loader_speedup_high == 1.0
    assert workers.loader_speedup_low > 1.4  # two workers overlap the sleeps in every round
    assert workers.samples_per_s == pytest.approx(8 * workers.loader_batches_per_s)
    assert result.attrs["recommended"] == {"num_workers": 2, "pin_memory": False}
    code = result.attrs["code"]
    assert code.startswith("train_loader = DataLoader(\n    train_ds,\n    batch_size=8,\n    shuffle=True,\n")
    assert "num_workers=2,  # changed: was 0" in code and "persistent_workers=True,  # changed: was False" in code
    out = capsys.readouterr().out
    assert out.startswith("Measured the loader alone (no step=), not the training loop")
    assert train_loader.num_workers == 0  # the user's loader is untouched
    assert_same_rng(before)


def test_a_step_that_dominates_shows_the_loop_gains_little(no_workers_before, capsys):
    # Loading takes 8 x 2 ms = 16 ms a batch, the step 80 ms: workers hide the loading behind the step,
    # so the loop can gain at most 96/80 = 1.2x, although the loader alone gets much faster.
    ds = SleepyDataset(200, delay=0.002)
    loader = DataLoader(ds, batch_size=8)
    result = tune_dataloader(loader, candidates=[{"num_workers": 2}], max_seconds=2, step=lambda b: time.sleep(0.08),
                             rounds=3, progress=False)
    assert "the training loop" in result.attrs["measured"]
    gains = result.set_index("num_workers")
    assert gains.at[0, "loop_speedup"] == 1.0
    assert 1.0 < gains.at[2, "loop_speedup"] < 1.25  # bounded by the loading it hides, whatever the noise
    assert gains.at[2, "wait_share"] < gains.at[0, "wait_share"]
    assert capsys.readouterr().out.startswith("Measured the training loop (step= ran on every batch)")


def test_candidates_run_in_interleaved_rounds_of_equal_steps(no_workers_before) -> None:
    ds = PidDataset(400, delay=0.0)
    loader = DataLoader(ds, batch_size=2)
    fed_by_main: list[bool] = []
    result = tune_dataloader(loader, candidates=[{"num_workers": 1}], max_seconds=1, step=lambda b: fed_by_main.append(
        int(b[0]) == os.getpid()), rounds=4, progress=False)
    runs = result.attrs["rounds"]
    steps = int(result["steps"].iloc[0])
    assert (runs["steps"] == steps).all() and list(runs["round"]) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert list(runs["num_workers"]) == [0, 1, 1, 0, 0, 1, 1, 0]  # the order rotates each round
    # The step's calls: a warm-up run per candidate (its warm-up batches, 1 in the main process and 2 from the
    # worker's prefetch, then CALIBRATION_STEPS), then per round each candidate's warm-up batches and steps.
    calls = {0: 1, 1: 2}
    expected = [w == 0 for w in (0, 1) for _ in range(calls[w] + tuner.CALIBRATION_STEPS)]
    expected += [w == 0 for w in runs["num_workers"] for _ in range(calls[w] + steps)]
    assert fed_by_main == expected
    # The table is computed from the rounds: the median (and quartiles) of per-round ratios.
    rates = runs.pivot(index="round", columns="num_workers", values="rate")
    ratios = rates[1] / rates[0]
    row = result.set_index("num_workers").loc[1]
    assert row["loop_speedup"] == pytest.approx(ratios.median())
    assert (row["loop_speedup_low"], row["loop_speedup_high"]) == pytest.approx(tuple(ratios.quantile([0.25, 0.75])))
    assert row["loop_steps_per_s"] == pytest.approx(rates[1].median())


def test_a_gain_within_the_spread_is_not_recommended(no_workers_before, capsys, monkeypatch):
    # Steps alternate fast and slow by round, so the ratios swing both ways: their median gain is within
    # their spread. The timing is replaced by a fixed sequence so the test does not depend on the machine.
    loader = DataLoader(SleepyDataset(64, delay=0.0), batch_size=8)
    ticks = iter([1.0, 1.1, 0.9, 1.2, 1.0, 0.8] * 100)

    def fake_run(loader, cand, step, steps):
        return {"steps": steps, "seconds": next(ticks) if cand.num_workers else 1.0, "wait_s": 0.0,
                "startup_s": 0.0, "warmup_s": 0.0}

    monkeypatch.setattr(tuner, "_run", fake_run)
    result = tune_dataloader(loader, candidates=[{"num_workers": 1}], max_seconds=0.1, progress=False)
    row = result.set_index("num_workers").loc[1]
    assert row["loader_speedup"] - 1 <= row["loader_speedup_high"] - row["loader_speedup_low"]
    assert result.attrs["recommended"] == {"num_workers": 0, "pin_memory": False} and result.attrs["code"] is None
    assert "No setting is reliably faster than your current one (num_workers=0)" in capsys.readouterr().out


def test_the_code_keeps_every_argument_and_runs(no_workers_before):
    ds = SleepyDataset(48, delay=0.0)
    g = torch.Generator().manual_seed(3)

    def seed_worker(worker_id: int) -> None:
        random.seed(worker_id)

    def collate(items):
        return torch.stack([x for x, _ in items])

    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=1, persistent_workers=True, prefetch_factor=3,
                        drop_last=True, worker_init_fn=seed_worker, generator=g, collate_fn=collate, timeout=30)
    ns = {"loader": loader, "ds": ds, "DataLoader": DataLoader}
    result = tune_dataloader(loader, candidates=[{"num_workers": 2}, {"num_workers": 1}], max_seconds=1,
                             step=lambda b: time.sleep(0.002), namespace=ns, progress=False)
    code = tuner._recommend(result.assign(status="ok", loop_speedup=[1.0, 2.0], loop_speedup_low=[1.0, 1.9],
                                          loop_speedup_high=[1.0, 2.1]),
                            loader, tuner.Candidate.of({}, loader), tuner.Measured(loop=True), ns)["code"]
    for kept in ("shuffle=True", "drop_last=True", "persistent_workers=True", "prefetch_factor=3",
                 "worker_init_fn=loader.worker_init_fn", "generator=loader.generator", "collate_fn=loader.collate_fn",
                 "timeout=loader.timeout"):
        assert kept in code
    assert "num_workers=2,  # changed: was 1" in code
    exec(code, ns)  # pasted into the cell: it runs, and builds the loader the user had, with two workers
    new = ns["loader"]
    assert new is not loader and new.num_workers == 2
    for arg in ("batch_size", "drop_last", "persistent_workers", "prefetch_factor", "worker_init_fn", "generator",
                "collate_fn", "timeout"):
        assert getattr(new, arg) == getattr(loader, arg), arg
    assert type(new.sampler) is type(loader.sampler)
    assert next(iter(new)).shape == (4, 4)
    new._iterator = None  # shut its persistent workers down


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


def test_default_candidates_follow_the_usable_cpus(monkeypatch, tmp_path):
    loader = DataLoader(SleepyDataset(8, 0.0), batch_size=2)
    monkeypatch.setattr(tuner.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(6)), raising=False)
    monkeypatch.setattr(machine, "CGROUP_ROOT", tmp_path)  # no CPU quota
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
    with pytest.raises(ValueError, match="rounds"):
        tune_dataloader(loader, rounds=1)


def test_plot_shows_the_spread(no_workers_before):
    loader = DataLoader(SleepyDataset(64, delay=0.0), batch_size=8)
    result = tune_dataloader(loader, candidates=[{"num_workers": 1}], max_seconds=1, rounds=2, progress=False,
                             plot=False)
    ax = plot_throughput(result).axes[0]
    assert ax.get_xlabel() == "num_workers (worker processes)"
    assert ax.get_ylabel() == "loader alone speed-up vs current"
    assert len(ax.containers) == 1  # one pin_memory setting, drawn with its error bars


def test_a_batch_sampler_loader_gets_code_that_runs():
    # DataLoader rejects batch_size beside a batch_sampler: the code passes the sampler on, and no batch_size.
    from torch.utils.data import BatchSampler, SequentialSampler

    from nbprofiler.advice.loader_code import dataloader_call
    from nbprofiler.measure.tuner import args_from_loader

    ds = SleepyDataset(10, delay=0.0)
    loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 3, drop_last=False))
    ns = {"loader": loader, "ds": ds, "DataLoader": DataLoader}
    code = dataloader_call(args_from_loader(loader, ns), {"num_workers": 1})
    assert "batch_sampler=loader.batch_sampler" in code and "batch_size" not in code
    exec(code, ns)
    assert ns["loader"].batch_sampler is loader.batch_sampler and ns["loader"].num_workers == 1


def test_the_steps_train_nothing_when_restored(no_workers_before):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    weights = [p.detach().clone() for p in model.parameters()]

    def train_step(batch):
        x, _ = batch
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    loader = DataLoader(SleepyDataset(64, delay=0.0), batch_size=8)
    tune_dataloader(loader, candidates=[{"num_workers": 0}], max_seconds=0.5, rounds=2, step=train_step,
                    restore=[model, opt], progress=False)
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))
    assert opt.state_dict()["state"] == {}  # no momentum buffers left behind

    def broken_step(batch):
        train_step(batch)
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        tune_dataloader(loader, candidates=[{"num_workers": 0}], step=broken_step, restore=[model, opt], progress=False)
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))
