"""DataLoader workers that fit the machine: the worker count the DataLoader suggestion proposes
given the cores the process may use and the threads its compute runs, the thread split where
workers would take cores from compute (or nothing, where that costs more than the wait), and a
loader that is slow per sample, whose wait a larger batch cannot share out.

Live CPU runs use sleep-bound datasets (known time per sample) and one intra-op thread; the
machine's core count is replaced where a test says how many cores it has. The split decisions
are pinned on run records with fixed step figures, which no machine load can move.
"""
from __future__ import annotations


import inspect
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from nbprofiler.advice import thresholds as T
from nbprofiler.advice.rules import suggest, verdicts
from nbprofiler.notebook.profile import live_run
from nbprofiler.measure import tune_dataloader
from nbprofiler.options import ProfileOptions
from nbprofiler.records import LoaderRecord, RunRecord
from nbprofiler.report import Report
from nbprofiler.trace.table import DeviceInfo
from workloads import SlowDataset, train_epoch

CPU = DeviceInfo(index=-1, name="CPU", kind="cpu", total_memory_bytes=16 * 2**30)


def _train(loader: DataLoader, dataset: Dataset) -> Report:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with live_run(ProfileOptions(), namespace={"train_ds": dataset, "train_loader": loader}) as run:
        train_epoch(loader, model, opt)
    return run.report


def _only(found, kind: str):
    matches = [s for s in found if s.kind == kind]
    assert len(matches) == 1, [s.kind for s in found]
    return matches[0]


def _bound_with(s, workers: int) -> float:
    """The step speed-up if ``workers`` each load a step's batches as fast as the loop did (the
    wait) while compute keeps its speed, from the suggestion's own evidence: the loop then waits
    only for what the workers cannot overlap with compute."""
    step, wait, compute = s.evidence["step_ms"], s.evidence["wait_ms_per_step"], s.evidence["compute_ms_per_step"]
    left = max(wait / workers - compute, 0.0)
    return min(step / (compute + left), 1 / (1 - wait / step))


@pytest.mark.parametrize("cores, fewest", [(2, 1), (4, 3), (16, 8)])
def test_workers_take_the_cores_compute_leaves(monkeypatch, one_torch_thread, cores, fewest):
    """2 ms of CPU work a sample, 16 a batch: 32 ms of loading against a few ms of compute needs
    more than 8 workers, so the small machines give all the cores the one compute thread leaves,
    and 16 cores at least 8 (how many more depends on the measured compute); never a thread split.
    The claim is what those workers can do at most, not all the waiting gone."""
    monkeypatch.setattr("nbprofiler.capture.session.process_cpus", lambda: cores)
    ds = SlowDataset(16 * 6, delay=0.002, compute=True)
    report = _train(DataLoader(ds, batch_size=16), ds)
    assert (report.run.cpu_count, report.run.intra_op_threads) == (cores, 1)
    s = _only(report.suggestions, "dataloader")
    workers = int(s.code.split("num_workers=")[1].split(",")[0])
    assert fewest <= workers <= cores - 1 and "# changed: was 0" in s.code
    assert "set_num_threads" not in s.code and "waits on I/O" not in " ".join(s.facts)
    assert s.evidence["loading_cpu_share"] > T.IO_BOUND_CPU_SHARE
    assert s.claim == "at_most" and s.gain == pytest.approx(_bound_with(s, workers), rel=1e-3)
    assert (s.evidence["usable_cpus"], s.evidence["compute_threads"]) == (cores, 1)


def test_a_loader_that_waits_on_io_gets_more_workers_than_cores(monkeypatch, one_torch_thread):
    """2 ms asleep a sample (a read from slow storage): the loop's thread hardly computes while
    it waits, so workers, which mostly sleep too, are not limited to the one spare core of a
    2-core machine; the claim is what that many workers can do at most."""
    monkeypatch.setattr("nbprofiler.capture.session.process_cpus", lambda: 2)
    ds = SlowDataset(16 * 6, delay=0.002)
    report = _train(DataLoader(ds, batch_size=16), ds)
    s = _only(report.suggestions, "dataloader")
    workers = int(s.code.split("num_workers=")[1].split(",")[0])
    assert 1 < workers <= T.IO_MAX_WORKERS and s.evidence["loading_cpu_share"] < T.IO_BOUND_CPU_SHARE
    assert any("the loading waits on I/O" in fact for fact in s.facts)
    assert s.claim == "at_most" and s.gain == pytest.approx(_bound_with(s, workers), rel=1e-3)


# -- workers against compute threads: fixed step figures --------------------------------------------
def _run(cpus: int, threads: int, step_ms: float, wait_ms: float, n: int = 8) -> Report:
    """A CPU run whose loader (no workers) waits ``wait_ms`` of each ``step_ms`` step."""
    steps = pd.DataFrame({"step": range(n), "phase": "active", "wall_ms": step_ms, "dataloader_ms": wait_ms,
                          "rss_bytes": 1e9})
    loader = LoaderRecord(loader_id=1, batch_size=32, num_workers=0, pin_memory=False, persistent_workers=False,
                          prefetch_factor=None, drop_last=False, shuffle=True, dataset_type="ImageFolder",
                          dataset_length=10_000, dataset_repr="ImageFolder", name="train_loader",
                          dataset_name="train_ds", batches=n, wait_ms_by_step={i: wait_ms for i in range(n)})
    record = RunRecord(options=ProfileOptions(), device=CPU, steps=steps, loaders=(loader,), step_source="optimizer",
                       cpu_count=cpus, intra_op_threads=threads)
    return Report.from_live(None, record, None)


def _measured_call(card) -> inspect.BoundArguments:
    """The ``tune_dataloader`` call a card gives, bound to the tuner's real signature."""
    text = card.expected_gain
    call = text[text.index("nbprofiler.tune_dataloader("):text.index(", where step(batch)")]
    seen = []
    real = inspect.signature(tune_dataloader)
    stub = SimpleNamespace(tune_dataloader=lambda *a, **k: seen.append(real.bind(*a, **k)))
    eval(call, {"nbprofiler": stub, "train_loader": "train_loader", "step": "step"})  # the card's own call
    return seen[0]


def test_a_worker_that_may_slow_compute_more_than_it_saves_is_to_be_measured():
    """The issue's first workload: 2 cores both running compute's threads, 36 ms of loading
    against ~200 ms of compute. One worker measured 0.88x there; with one thread less, compute
    may take twice as long. No code is proposed: the card gives the range one run allows and
    the tuner call, in the user's names, that measures that worker."""
    report = _run(cpus=2, threads=2, step_ms=236.0, wait_ms=36.0)
    card = _only(suggest(report), "dataloader")
    assert card.code is None and card.evidence["to_measure"] == {"num_workers": 1}
    assert card.gain_range == pytest.approx((236 / (2 * 200), 236 / 200))  # compute twice as long .. kept
    assert "use all 2 core(s)" in card.detail and "no change is proposed" in card.detail
    call = _measured_call(card)
    assert call.arguments["loader"] == "train_loader" and call.arguments["candidates"] == [{"num_workers": 1}]


def test_workers_on_compute_cores_come_with_the_thread_split_and_an_estimate():
    """16 cores all running compute's 16 threads, 20 ms of loading against 100 ms of compute:
    one worker with 15 compute threads wins even if compute slows in proportion (1.125x), and
    at most all the wait (1.2x). The code sets the threads with the worker count."""
    report = _run(cpus=16, threads=16, step_ms=120.0, wait_ms=20.0)
    s = _only(suggest(report), "dataloader")
    assert "import torch\ntorch.set_num_threads(15)" in s.code
    assert "num_workers=1,  # changed: was 0" in s.code and "persistent_workers=True" in s.code
    assert s.claim == "estimate"
    assert s.gain_range == pytest.approx((120 / (100 * 16 / 15), 1.2))
    assert "(estimate, 1.12–1.20×)" in s.expected_gain and "instead of 16" in s.expected_gain
    assert "compete for 16 core(s)" in s.detail
    namespace = {"DataLoader": DataLoader, "train_ds": SlowDataset(4, 0.0)}
    exec(s.code, namespace)
    assert namespace["train_loader"].num_workers == 1


def test_loading_bound_steps_split_the_cores_even_when_compute_slows():
    """2 cores both computing, but 30 ms of loading against 5 ms of compute: a worker with
    one compute thread wins whatever compute does (the step is the worker's 30 ms)."""
    s = _only(suggest(_run(cpus=2, threads=2, step_ms=35.0, wait_ms=30.0)), "dataloader")
    assert "torch.set_num_threads(1)" in s.code and "num_workers=1," in s.code
    low, high = s.gain_range
    assert low == pytest.approx(35 / 30) and high == pytest.approx(35 / 30)


def test_spare_cores_need_no_split():
    """4 cores, 1 compute thread: 3 workers fit beside compute, claimed as a bound on the wait."""
    s = _only(suggest(_run(cpus=4, threads=1, step_ms=120.0, wait_ms=20.0)), "dataloader")
    assert "num_workers=1," in s.code and "set_num_threads" not in s.code  # one worker keeps up
    assert s.claim == "at_most" and s.gain == pytest.approx(1.2)


# -- a loader slow per sample is not a fixed cost -------------------------------------------------------
def test_a_loader_slow_per_sample_comes_first_and_the_batch_rule_stays_quiet(one_torch_thread):
    """3 ms a sample, batch 8, a tiny model: the step's compute is mostly fixed cost, but the
    step is ~90% waiting that grows with the batch, so a larger batch gains nothing."""
    ds = SlowDataset(8 * 24, delay=0.003)
    report = _train(DataLoader(ds, batch_size=8, shuffle=True), ds)
    found = report.suggestions
    assert found[0].kind == "dataloader" and "batch_size" not in [s.kind for s in found]
    (batch,) = [v for v in verdicts(report) if v.check == "the CPU batch size"]
    assert batch.state == "passed" and "which grows with the batch" in batch.figures
    assert batch.evidence["data_wait_share"] > T.CPU_BATCH_MAX_WAIT_SHARE


# -- a CNN with an augmenting loader on 2 cores that compute's 2 threads use --------------------------
class AugmentedImages(Dataset):
    """Decode-like CPU work per item: an image from its seed, a random crop, a flip, a resize and a blur."""

    blur = torch.full((3, 1, 3, 3), 1 / 9)

    def __len__(self) -> int:
        return 16 * 8

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, (3, 48, 48), generator=g, dtype=torch.uint8).float() / 255
        top, left = torch.randint(0, 9, (2,), generator=g).tolist()
        img = img[:, top:top + 40, left:left + 40]
        if torch.rand(1, generator=g).item() < 0.5:
            img = img.flip(2)
        img = F.interpolate(img[None], size=(32, 32), mode="bilinear", align_corners=False)
        return F.conv2d(img, self.blur, padding=1, groups=3)[0], i % 10


class Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


@pytest.fixture()
def two_torch_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_on_cores_compute_uses_the_card_proposes_only_what_cannot_slow_the_loop(monkeypatch, two_torch_threads):
    """A ResNet-style CNN of width 16 on 2 cores with 2 intra-op threads, its loader decoding and
    augmenting each image: workers would take cores from compute. Whatever the card says, the
    tuner call it gives measures that setting, and a change with code claims no less than ~1×
    at its low end; with no code the card's range says a slowdown is possible."""
    monkeypatch.setattr("nbprofiler.capture.session.process_cpus", lambda: 2)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), Block(16),
                          Block(16), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ds = AugmentedImages()
    loader = DataLoader(ds, batch_size=16, shuffle=True)
    with live_run(ProfileOptions(), namespace={"train_ds": ds, "train_loader": loader}) as run:
        train_epoch(loader, model, opt)
    card = _only(run.report.suggestions, "dataloader")
    call = _measured_call(card)
    assert call.arguments["loader"] == "train_loader"
    if card.code is None:
        assert card.gain_range[0] < 1.0 <= card.gain_range[1]
        assert call.arguments["candidates"] == [card.evidence["to_measure"]]
    else:
        workers = int(card.code.split("num_workers=")[1].split(",")[0])
        assert call.arguments["candidates"] == [{"num_workers": workers}]
        assert card.gain_range[0] >= 0.97


# -- what a run without workers cannot show: a batch's hand-over from a worker -------------------------
def test_a_first_worker_for_a_short_wait_per_batch_is_to_be_measured_not_pasted():
    """The shape of a click model over EmbeddingBag ids: a 1.7 ms step waits 0.4 ms for each batch
    its collate builds, on 4 cores with compute on 1. Taking a batch from a worker costs the loop
    more than that (num_workers=1 made such a loop 0.43x as fast), and a run without workers cannot
    show it: the card gives no code, a range that reaches below 1, and the tuner call."""
    report = _run(cpus=4, threads=1, step_ms=1.7, wait_ms=0.4)
    card = _only(suggest(report), "dataloader")
    assert card.code is None and card.evidence["to_measure"] == {"num_workers": 1}
    low, high = card.gain_range
    assert low == pytest.approx(1.7 / (1.7 - 0.4 + T.WORKER_HANDOVER_MS)) and low < 1 < high
    assert "cannot show" in card.detail
    assert _measured_call(card).arguments["candidates"] == [{"num_workers": 1}]


def test_a_wait_per_batch_longer_than_any_hand_over_gets_workers_with_code():
    """The same cores, a 40 ms step waiting 20 ms for each batch (decoding images): workers pay
    whatever a hand-over costs, so the card pastes num_workers with its bound."""
    report = _run(cpus=4, threads=1, step_ms=40.0, wait_ms=20.0)
    card = _only(suggest(report), "dataloader")
    assert card.code is not None and "num_workers=" in card.code and card.claim == "at_most" and card.gain > 1


def test_persistent_workers_claim_the_waits_of_every_step_the_cell_ran():
    """A loader with 2 workers on 2 cores, restarted at each pass: the first step of the pass waits 200 ms for
    them to start, before the profiled steps, the rest 3 ms of 10. Persistent workers remove the
    start-ups, which the profiled steps leave out, so the bound is all the loader's waiting over
    every step the cell ran, not 1.00x."""
    n = 8
    wall = [210.0] + [10.0] * (n - 1)
    wait = [200.0] + [3.0] * (n - 1)
    phases = ["wait"] + ["active"] * (n - 1)  # the start-up falls before the profiled steps, as by default
    steps = pd.DataFrame({"step": range(n), "phase": phases, "wall_ms": wall, "dataloader_ms": wait,
                          "rss_bytes": 1e9})
    loader = LoaderRecord(loader_id=1, batch_size=32, num_workers=2, pin_memory=False, persistent_workers=False,
                          prefetch_factor=2, drop_last=False, shuffle=True, dataset_type="Records",
                          dataset_length=10_000, dataset_repr="Records", name="train_loader",
                          dataset_name="train_ds", batches=n, iterations_started=2,
                          wait_ms_by_step=dict(enumerate(wait)))
    record = RunRecord(options=ProfileOptions(), device=CPU, steps=steps, loaders=(loader,),
                       step_source="optimizer", cpu_count=2, intra_op_threads=1)  # no core for a third worker
    card = _only(suggest(Report.from_live(None, record, None)), "dataloader")
    assert "persistent_workers=True" in card.code
    assert card.claim == "at_most" and card.gain == pytest.approx(1 / (1 - sum(wait) / sum(wall)), rel=1e-3)
    # The cell ran 60 ms more than its steps (its workers stopping after the last batch): that may go too.
    record.wall_s = (sum(wall) + 60.0) / 1e3
    card = _only(suggest(Report.from_live(None, record, None)), "dataloader")
    assert card.gain == pytest.approx((sum(wall) + 60) / (sum(wall) - sum(wait)), rel=1e-3)
