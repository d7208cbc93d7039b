"""batch_size_curve: real steps at each batch size, a clean stop at the first out-of-memory."""
from __future__ import annotations

import time

import pandas as pd
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from nbprofiler.advice import thresholds as T
from nbprofiler.measure import batch_curve
from nbprofiler.measure.batch_curve import _recommend, batch_size_curve, is_out_of_memory, plot_batch_curve


@pytest.fixture()
def training():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(batch_size: int) -> None:
        x, y = torch.randn(batch_size, 64), torch.randint(0, 4, (batch_size,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return model, opt, step


def test_measures_every_size_and_restores_the_model(training, capsys):
    model, opt, step = training
    weights = [p.detach().clone() for p in model.parameters()]
    result = batch_size_curve(step, [64, 1, 8], min_seconds=0.05, rounds=3, restore=[model, opt], progress=False)
    assert list(result["batch_size"]) == [1, 8, 64]  # sorted
    assert set(result["status"]) == {"ok"} and (result["rounds"] == 3).all() and (result["steps"] >= 1).all()
    assert (result["samples_per_s_low"] <= result["samples_per_s"]).all()
    assert (result["samples_per_s"] <= result["samples_per_s_high"]).all()
    assert (result["peak_memory_bytes"] > 0).all()
    assert set(result["memory_kind"]) == {"process RSS"}  # no CUDA in this process
    assert result.loc[0, ["speedup", "speedup_low", "speedup_high"]].tolist() == [1.0, 1.0, 1.0]  # the reference
    assert "batch_size=1" in capsys.readouterr().out
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))


def test_warm_up_then_interleaved_rounds_and_the_median_comes_from_them() -> None:
    calls: list[int] = []

    def step(batch_size: int) -> None:
        calls.append(batch_size)
        time.sleep(0.004 + 0.0005 * batch_size)  # a fixed cost per step plus a cost per sample

    result = batch_size_curve(step, [4, 16, 64], rounds=3, min_seconds=0.0, progress=False)
    runs = result.attrs["rounds"]
    assert calls[:3] == [4, 16, 64]  # the warm-up: each size once, smallest first, untimed
    assert calls[3:] == [4, 16, 64, 16, 64, 4, 64, 4, 16]  # then rounds, the order rotated (one step each here)
    assert list(runs["batch_size"]) == calls[3:] and list(runs["round"]) == [0] * 3 + [1] * 3 + [2] * 3
    rates = runs.pivot(index="round", columns="batch_size", values="samples_per_s")
    row = result.set_index("batch_size").loc[64]
    assert row["samples_per_s"] == pytest.approx(rates[64].median())
    assert (row["samples_per_s_low"], row["samples_per_s_high"]) == pytest.approx(tuple(rates[64].quantile([.25, .75])))
    ratios = rates[64] / rates[4]
    assert row["speedup"] == pytest.approx(ratios.median())
    # 4.5 x 4 samples cost 6 ms, 64 samples 36 ms: 64 is about 2.8x the samples/s of 4, far beyond any spread.
    assert result.attrs["recommended"] in (16, 64)


def test_a_gain_within_the_spread_is_not_recommended(monkeypatch, capsys):
    # The per-round rates swing so that larger batches are faster in some rounds and slower in others.
    seconds = iter([0.01, 0.01, 0.01] + [1.0, 1.0, 1.0, 1.0, 0.8, 1.3, 1.0, 1.2, 0.9, 1.0, 1.0, 0.95, 1.0, 1.1, 1.05])
    monkeypatch.setattr(batch_curve, "_attempt", lambda step_fn, size, steps, cuda: (next(seconds) * size, 1.0))
    result = batch_size_curve(lambda b: None, [2, 4, 8], rounds=5, min_seconds=0.0, progress=False)
    gains = result.set_index("batch_size")
    assert ((gains["speedup"] - 1) <= (gains["speedup_high"] - gains["speedup_low"])).all()
    assert result.attrs["recommended"] is None
    assert "No batch size is reliably faster than batch_size=2" in capsys.readouterr().out


def test_stops_cleanly_at_the_first_out_of_memory(training):
    _, _, step = training

    def step_with_limit(batch_size: int) -> None:
        if batch_size >= 64:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        step(batch_size)

    result = batch_size_curve(step_with_limit, [8, 16, 64, 128, 256], min_seconds=0.0, progress=False)
    assert list(result["status"]) == ["ok", "ok", "out of memory"] + ["not run: a smaller batch ran out of memory"] * 2
    assert result.attrs["recommended"] in (16, None)  # never a size that ran out of memory; 8 is the reference
    assert "Batch size 64 ran out of memory" in result.attrs["summary"]


def test_a_real_cpu_allocation_failure_counts_as_out_of_memory():
    def step(batch_size: int) -> None:
        torch.empty(batch_size, 2**48, dtype=torch.uint8)  # 2**48 bytes per sample: the allocator refuses

    result = batch_size_curve(step, [1, 2], progress=False)
    assert list(result["status"]) == ["out of memory", "not run: a smaller batch ran out of memory"]
    assert result.attrs["recommended"] is None


def test_other_errors_propagate_after_restoring(training):
    model, opt, step = training
    weights = [p.detach().clone() for p in model.parameters()]

    def broken(batch_size: int) -> None:
        step(batch_size)
        if batch_size > 4:
            raise ValueError("shape mismatch")

    with pytest.raises(ValueError, match="shape mismatch"):
        batch_size_curve(broken, [2, 8], min_seconds=0.0, restore=[model, opt], progress=False)
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))


def test_is_out_of_memory():
    assert is_out_of_memory(torch.OutOfMemoryError("x"))
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 bytes"))
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def test_recommends_the_smallest_reliable_batch_near_the_best():
    rows = pd.DataFrame({"batch_size": [8, 16, 32, 64], "samples_per_s": [400.0, 900.0, 960.0, 1000.0],
                         "speedup": [1.0, 2.25, 2.4, 2.5], "speedup_low": [1.0, 2.2, 2.3, 2.4],
                         "speedup_high": [1.0, 2.3, 2.5, 2.6], "rounds": 5, "status": "ok"})
    assert T.MEASURED_TIE_SHARE == 0.95
    assert _recommend(rows, 8)["recommended"] == 32  # 2.4 >= 95% of 2.5; 2.25 is not
    rows.loc[2, "speedup_high"] = 4.0  # its gain (1.4) now within its spread (1.7): not reliably faster
    assert _recommend(rows, 8)["recommended"] == 64


def test_bad_arguments_are_rejected(training):
    _, _, step = training
    with pytest.raises(ValueError, match="positive"):
        batch_size_curve(step, [], progress=False)
    with pytest.raises(ValueError, match="rounds"):
        batch_size_curve(step, [2], rounds=1, progress=False)


def test_plot_has_labelled_axes(training):
    _, _, step = training
    result = batch_size_curve(step, [2, 4], rounds=2, min_seconds=0.0, progress=False, plot=False)
    fig = plot_batch_curve(result)
    ax, mem = fig.axes
    assert ax.get_xlabel() == "batch size (samples per step)"
    assert ax.get_ylabel() == "throughput (samples/s)"
    assert len(ax.containers) == 1  # the samples/s with its error bars
    assert mem.get_ylabel() == "memory (MiB, process RSS)"
