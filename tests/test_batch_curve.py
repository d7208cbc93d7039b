"""batch_size_curve: real steps at each batch size, a clean stop at the first out-of-memory."""
from __future__ import annotations

import pandas as pd
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from nbprofiler.advice import thresholds as T
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
    result = batch_size_curve(step, [64, 1, 8], min_seconds=0.05, restore=[model, opt], progress=False)
    assert list(result["batch_size"]) == [1, 8, 64]  # run smallest first
    assert set(result["status"]) == {"ok"} and (result["steps"] >= 3).all()
    assert (result["samples_per_s"] > 0).all() and (result["peak_memory_bytes"] > 0).all()
    assert set(result["memory"]) == {"rss"}  # no CUDA in this process
    assert result["efficiency"].max() == pytest.approx(1.0)
    assert result.attrs["recommended"] in (1, 8, 64)
    assert "Recommended batch_size=" in capsys.readouterr().out
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))


def test_stops_cleanly_at_the_first_out_of_memory(training):
    _, _, step = training

    def step_with_limit(batch_size: int) -> None:
        if batch_size >= 64:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        step(batch_size)

    result = batch_size_curve(step_with_limit, [8, 16, 64, 128, 256], min_seconds=0.0, progress=False)
    assert list(result["status"]) == ["ok", "ok", "out of memory"] + ["not run: a smaller batch ran out of memory"] * 2
    assert result.attrs["recommended"] in (8, 16)
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


def test_recommends_the_smallest_batch_near_the_best():
    rows = pd.DataFrame({"batch_size": [8, 16, 32, 64], "samples_per_s": [400.0, 900.0, 960.0, 1000.0],
                         "status": "ok"})
    rows["efficiency"] = rows["samples_per_s"] / 1000.0
    assert T.MEASURED_TIE_SHARE == 0.95
    assert _recommend(rows)["recommended"] == 32  # 960 >= 95% of 1000; 900 is not


def test_bad_arguments_are_rejected(training):
    _, _, step = training
    with pytest.raises(ValueError, match="positive"):
        batch_size_curve(step, [], progress=False)
    with pytest.raises(ValueError, match="repeats"):
        batch_size_curve(step, [2], repeats=0, progress=False)


def test_plot_has_labelled_axes(training):
    _, _, step = training
    result = batch_size_curve(step, [2, 4], min_seconds=0.0, progress=False, plot=False)
    fig = plot_batch_curve(result)
    ax, mem = fig.axes
    assert ax.get_xlabel() == "batch size (samples per step)"
    assert ax.get_ylabel() == "throughput (samples/s)"
    assert mem.get_ylabel() == "memory (MiB, RSS)"
