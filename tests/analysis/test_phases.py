"""report.phases: dataloader / forward / backward / optimizer / other per step.

Expectations come from the raw trace JSON (the documented marker ranges,
merged by a few lines of plain Python here) or from the user's own
annotations in the shared traces, never from nbprofiler's own tables.
"""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

import nbprofiler
from conftest import shared_trace
from nbprofiler.analysis.phases import PHASES, phase_shares

ACTIVE = 3


class SlowDataset(Dataset):
    """A dataset whose every item takes ``delay_s``: a data pipeline that is the bottleneck."""

    def __init__(self, n: int, delay_s: float) -> None:
        self.x, self.y = torch.randn(n, 32), torch.randint(0, 4, (n,))
        self.delay_s = delay_s

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        time.sleep(self.delay_s)
        return self.x[i], self.y[i]


def record_training(path: Path, dataset: Dataset, batch_size: int = 16) -> Path:
    """A real training loop under a scheduled torch.profiler; the trace goes to ``path``."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(dataset, batch_size=batch_size)
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=ACTIVE)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops on shared cores: no intra-op thread pool to wait on
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                    on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
            for i, (x, y) in enumerate(loader):
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                prof.step()
                if i == 1 + 1 + ACTIVE:
                    break
    finally:
        torch.set_num_threads(threads)
    return path


def raw_events(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def union_inside(ranges: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of ``ranges`` clipped to ``[lo, hi)``: plain Python, on purpose."""
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in ranges if a < hi and b > lo)
    total, cur_a, cur_b = 0.0, 0.0, None  # cur_a is read only once cur_b is set
    for a, b in clipped:
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    return total + (cur_b - cur_a if cur_b is not None else 0.0)


def ranges(events: list[dict], test) -> list[tuple[float, float]]:
    return [(e["ts"], e["ts"] + e["dur"]) for e in events if test(e)]


def step_windows(events: list[dict]) -> list[tuple[int, float, float]]:
    steps = [(int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in events
             if e["name"].startswith("ProfilerStep#")]
    return sorted(steps, key=lambda s: s[1])


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory) -> Path:
    ds = TensorDataset(torch.randn(16 * 8, 32), torch.randint(0, 4, (16 * 8,)))
    return record_training(tmp_path_factory.mktemp("phases") / "train.pt.trace.json", ds)


def test_cpu_training_phases_add_up_and_match_the_marker_ranges(cpu_trace):
    report = nbprofiler.load(cpu_trace)
    phases = report.phases
    events = raw_events(cpu_trace)
    windows = step_windows(events)
    assert list(phases["step"]) == [s for s, _, _ in windows] and len(phases) == ACTIVE
    # Every instant of a step goes to one phase: they add up to the step's wall time.
    assert (phases[list(PHASES)].sum(axis=1) - phases["total"]).abs().max() < 1e-6
    assert (phases[list(PHASES)] >= 0).all().all()
    dl = ranges(events, lambda e: e["name"].startswith("enumerate(DataLoader)#"))
    opt = ranges(events, lambda e: e["name"].startswith(("Optimizer.step#", "Optimizer.zero_grad#")))
    bwd = ranges(events, lambda e: e["name"].startswith("autograd::engine::evaluate_function:"))
    for (_, lo, hi), row in zip(windows, phases.itertuples()):
        assert row.total == pytest.approx(hi - lo)
        assert row.dataloader == pytest.approx(union_inside(dl, lo, hi), abs=0.01)
        assert row.optimizer == pytest.approx(union_inside(opt, lo, hi), abs=0.01)
        assert row.backward == pytest.approx(union_inside(bwd, lo, hi), abs=0.01)
        assert row.dataloader > 0 and row.forward > 0 and row.backward > 0 and row.optimizer > 0
    shares = phase_shares(phases)
    assert shares[list(PHASES)].sum(axis=1).to_numpy() == pytest.approx([1.0] * ACTIVE)


def test_backward_on_the_calling_thread_is_found_by_its_ranges(cpu_trace):
    """On CPU the autograd engine runs on the loop's own thread: no separate thread to go by."""
    events = raw_events(cpu_trace)
    op_threads = {e["tid"] for e in events if e.get("cat") == "cpu_op"}
    assert len(op_threads) == 1
    report = nbprofiler.load(cpu_trace)
    assert (report.phases["backward"] > 0).all()


def test_a_slow_dataset_shows_as_dataloader_time(tmp_path):
    delay, batch = 0.004, 8
    path = record_training(tmp_path / "slow.pt.trace.json", SlowDataset(batch * 7, delay), batch_size=batch)
    phases = nbprofiler.load(path).phases
    # Each step fetches one batch: at least batch x delay of sleeping inside __next__.
    assert (phases["dataloader"] >= batch * delay * 1e6 * 0.95).all()
    # A tiny model beside a 32 ms batch: loading is most of the step (the median step,
    # as one step of a busy shared machine may stall anywhere).
    assert phase_shares(phases)["dataloader"].median() > 0.5, phases


def test_live_cpu_run_shows_phases_for_its_profiled_steps():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(80, 16), torch.randint(0, 2, (80,))), batch_size=8)
    with nbprofiler.profile(wait=1, warmup=1, active=3) as run:
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    report = run.report
    phases = report.phases
    assert list(phases["step"]) == [2, 3, 4]
    assert (phases[list(PHASES)].sum(axis=1) - phases["total"]).abs().max() < 1e-6
    for phase in ("dataloader", "forward", "backward", "optimizer"):
        assert (phases[phase] > 0).all(), phase
    # The trace's step is the sampler's step: the same wall time, give or take the
    # profiler's own step bookkeeping (tens of µs).
    sampled = report.steps.set_index("step")["wall_ms"].loc[phases["step"]].to_numpy() * 1e3
    assert (abs(phases["total"].to_numpy() - sampled) < 0.1 * sampled + 200).all()


def test_dataloader_share_without_workers_is_far_above_with_workers():
    share = {n: phase_shares(nbprofiler.load(shared_trace(f"v100_resnet50_train_num_workers_{n}.pt.trace.json.gz"))
                             .phases)["dataloader"].mean() for n in (0, 4)}
    assert share[0] > 0.25
    assert share[0] > 10 * share[4]


@pytest.mark.parametrize("name", ["v100_resnet_ns_timestamps.pt.trace.json.gz",
                                  "a100_nccl_distributed.pt.trace.json.gz"])
def test_phases_agree_with_the_users_own_annotations(name):
    """These runs wrap each phase in ``## forward ##`` / ``## backward ##``: an independent ruler.

    Backward work runs on the autograd thread while the loop thread sits in
    ``## backward ##``; that wait is backward time, not forward or other.
    """
    path = shared_trace(name)
    events = raw_events(path)
    phases = nbprofiler.load(path).phases
    fwd = ranges(events, lambda e: e["name"] == "## forward ##")
    bwd = ranges(events, lambda e: e["name"] == "## backward ##")
    for (step, lo, hi), row in zip(step_windows(events), phases.itertuples()):
        assert row.step == step
        assert row.backward == pytest.approx(union_inside(bwd, lo, hi), abs=0.02 * row.total)
        assert row.forward == pytest.approx(union_inside(fwd, lo, hi), abs=0.02 * row.total)


def test_backward_on_the_autograd_thread_of_a_2021_trace():
    """The 2021 schema has no ``evaluate_function`` ranges: the autograd thread's own ops are backward."""
    path = shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz")
    events = raw_events(path)
    windows = step_windows(events)
    main = next(e["tid"] for e in events if e["name"].startswith("ProfilerStep#"))
    other = [e for e in events if e.get("cat") == "Operator" and e["tid"] != main]
    bwd = ranges(other, lambda e: True)
    phases = nbprofiler.load(path).phases
    for (_, lo, hi), row in zip(windows, phases.itertuples()):
        assert row.backward == pytest.approx(union_inside(bwd, lo, hi), rel=0.01)
        assert 0.05 < row.backward / row.total < 0.5
