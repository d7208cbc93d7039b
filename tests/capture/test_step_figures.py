"""One step time everywhere, throughput that counts every batch, and the package's own
work kept out of the user's steps: each checked against the user's own timers."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import nbprofiler
from nbprofiler.capture.session import ProfileRun
from nbprofiler.notebook.profile import live_run
from nbprofiler.options import ProfileOptions

ITEM_SLEEP_S = 0.003
MICRO_BATCH, ACCUMULATION = 16, 4


class SlowItems(Dataset):
    """Each item costs a fixed wait, as decoding a file would: a batch of 16 takes ~48 ms."""

    def __init__(self, n: int) -> None:
        self.x, self.y = torch.randn(n, 32), torch.randint(0, 4, (n,))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        time.sleep(ITEM_SLEEP_S)
        return self.x[i], self.y[i]


def accumulating_run(optimizer_steps: int = 6):
    """4 micro-batches of 16 per optimizer step, profiled with --step-on optimizer (the
    report's own advice for gradient accumulation), with the user's own timers: a step
    runs from its first fetch until the optimizer's own post-step hook (the user's work,
    before nbprofiler ends the step), and each fetch is timed around ``next()``."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(SlowItems(MICRO_BATCH * ACCUMULATION * optimizer_steps), batch_size=MICRO_BATCH)
    starts: list[float] = []
    ends: list[float] = []
    fetch_s: list[float] = []
    handle = opt.register_step_post_hook(lambda *_: ends.append(time.perf_counter()))
    try:
        with nbprofiler.profile(step_on="optimizer") as run:
            batches = iter(loader)
            for i in range(len(loader)):
                t = time.perf_counter()
                if i % ACCUMULATION == 0:
                    starts.append(t)
                    opt.zero_grad()
                x, y = next(batches)
                fetch_s.append(time.perf_counter() - t)
                (F.cross_entropy(model(x), y) / ACCUMULATION).backward()
                if (i + 1) % ACCUMULATION == 0:
                    opt.step()
    finally:
        handle.remove()
    return run.report, (np.array(ends) - np.array(starts)) * 1e3, np.array(fetch_s) * 1e3


@pytest.fixture(scope="module")
def accumulated():
    return accumulating_run()


def test_throughput_counts_every_batch_of_an_accumulating_step(accumulated):
    report, user_step_ms, _ = accumulated
    summary = report.summary
    assert summary["batches_per_step"] == ACCUMULATION
    assert summary["samples_per_step"] == MICRO_BATCH * ACCUMULATION
    # The user's own timer over the same profiled steps gives the same samples/s.
    profiled = report.step_window.steps
    user_rate = MICRO_BATCH * ACCUMULATION / (user_step_ms[list(profiled)].mean() / 1e3)
    assert summary["samples_per_s"] == pytest.approx(user_rate, rel=0.05)
    assert "samples/s (64 samples per step: 4 batches of 16)" in report.to_text()
    assert "64 samples per step: 4 batches of 16" in report.to_html()


def test_loader_advice_gives_the_time_to_load_one_batch_not_one_step(accumulated):
    report, _, user_fetch_ms = accumulated
    (s,) = [s for s in report.suggestions if s.kind == "dataloader"]
    per_batch = re.search(r"\(([\d.]+) ms to load a batch\)", s.detail)
    assert per_batch is not None, s.detail
    # The user's own timer around next(): the same wait per batch (the first fetch is no slower here).
    assert float(per_batch.group(1)) == pytest.approx(float(np.median(user_fetch_ms)), rel=0.15)
    assert "a step's 4 batches" in s.detail
    assert any("each step consumed 4 batches" in fact for fact in s.facts)


def test_the_header_and_every_suggestion_quote_one_step_time(accumulated):
    report, _, _ = accumulated
    avg_ms = report.summary["avg_step_us"] / 1e3
    title = repr(report)
    header = re.search(r"avg step ([\d.]+) ms", title)
    assert header is not None and float(header.group(1)) == pytest.approx(avg_ms, abs=0.05)
    for s in report.suggestions:
        if "step_ms" in s.evidence:
            assert s.evidence["step_ms"] == pytest.approx(avg_ms, abs=1e-3), s.kind
        quoted = [float(m) for fact in s.facts for m in re.findall(r"avg step ([\d.]+) ms", fact)]
        assert quoted and all(q == pytest.approx(avg_ms, abs=0.05) for q in quoted), (s.kind, s.facts)


def test_evidence_is_words_with_units_in_every_renderer(accumulated):
    report, _, _ = accumulated
    text, html = report.to_text(), report.to_html()
    for s in report.suggestions:
        assert s.facts, s.kind
        for fact in s.facts:
            assert re.search(r"\d", fact) and re.search(r"%| ms| µs| s\b|B\b|batch|core|step", fact), fact
            assert f"    - {fact}" in text
        # The evidence's keys and raw ratios are for programs (``s.evidence``): no person reads them.
        for key in s.evidence:
            if re.search(r"_(share|ms|us|bytes|per_step)$", key):
                assert key not in text and key not in html, key
    (loader,) = [s for s in report.suggestions if s.kind == "dataloader"]
    data_wait = next(f for f in loader.facts if f.startswith("data wait:"))
    assert re.fullmatch(r"data wait: \d+% of the step, [\d.]+ ms of [\d.]+ ms \(avg step [\d.]+ ms over the "
                        r"3 profiled steps\)", data_wait), data_wait


def test_the_status_line_is_not_billed_to_the_users_step():
    """Work the run does for itself at a step boundary (its ``on_step`` callback) stays out
    of the sampler's step times and the loader's mean."""
    pause_s = 0.3

    def slow_callback(run: ProfileRun) -> None:
        if run.steps_done == 1:
            time.sleep(pause_s)

    user_ms = []
    with live_run(ProfileOptions(step_on="manual", wait=0, warmup=0, active=2), on_step=slow_callback) as run:
        for _ in range(5):
            t = time.perf_counter()
            time.sleep(0.02)
            user_ms.append((time.perf_counter() - t) * 1e3)
            run.step()
    wall = run.report.steps["wall_ms"].to_numpy()
    assert wall.max() < 0.5 * pause_s * 1e3, wall
    assert np.median(wall) == pytest.approx(np.median(user_ms), abs=5.0)


def test_the_status_lines_start_up_is_in_no_step(ip, monkeypatch):
    """The live status line's first display (up to half a second in a widget front end) happens
    before the profiler starts: not in the first step, profiled or not, nor in the trace."""
    from nbprofiler.render.live import LiveStatus

    pause_s = 0.3
    original = LiveStatus._start

    def slow_start(self, text, series):
        time.sleep(pause_s)  # as importing ipywidgets and opening the widget's comm can
        original(self, text, series)

    monkeypatch.setattr(LiveStatus, "_start", slow_start)
    ip.run_cell("import time, nbprofiler").raise_error()
    ip.run_cell_magic("torchprofile", "-o run --wait 0 --warmup 0 --active 4 -n 4", "time.sleep(0.02)")
    report = ip.user_ns["run"]
    assert (report.steps["wall_ms"] < 0.5 * pause_s * 1e3).all(), report.steps
    assert report.summary["avg_step_us"] < 0.5 * pause_s * 1e6 / 4


def test_with_n_every_run_of_the_cell_is_a_step_and_counts_its_batches(ip):
    """``-n 4``: each run of the cell is one step; the two batches it takes are its samples."""
    ip.run_cell("""
import torch, nbprofiler
from torch.utils.data import DataLoader, TensorDataset
batches = iter(DataLoader(TensorDataset(torch.randn(8 * 12, 4)), batch_size=8))
""").raise_error()
    ip.run_cell_magic("torchprofile", "-q -o run -n 4 --wait 0 --warmup 1 --active 3",
                      "a, = next(batches)\nb, = next(batches)\n(a @ b.T).sum()")
    report = ip.user_ns["run"]
    assert report.run.step_source == "iterations" and len(report.steps) == 4
    assert list(report.steps["batches"]) == [2] * 4 and list(report.steps["samples"]) == [16] * 4
    summary = report.summary
    assert summary["batches_per_step"] == 2 and summary["samples_per_step"] == 16
    assert summary["samples_per_s"] == pytest.approx(16 / (summary["avg_step_us"] / 1e6))


def test_samples_count_a_short_last_batch_and_loaders_without_a_batch_size():
    from torch.utils.data import BatchSampler, SequentialSampler, TensorDataset

    data = TensorDataset(torch.randn(20, 3), torch.randn(20))
    plain = DataLoader(data, batch_size=8)  # 8, 8 and a last batch of 4
    by_sampler = DataLoader(data, sampler=BatchSampler(SequentialSampler(data), batch_size=5, drop_last=False),
                            batch_size=None)  # whole batches from the dataset: no batch_size to read
    for loader, expected in ((plain, [8, 8, 4]), (by_sampler, [5, 5, 5, 5])):
        with nbprofiler.profile(step_on="dataloader", wait=0, warmup=0, active=1) as run:
            for x, y in loader:
                (x.sum() + y.sum()).item()
        steps = run.report.steps
        assert list(steps["samples"]) == expected and list(steps["batches"]) == [1] * len(expected)
