"""report.memory / memory_steps / memory_by_operator / memory_growth.

The leak is the classic one: a validation loss accumulated without
``torch.no_grad()`` and never backpropagated, so each step's graph, with the
activations it saved, stays alive. What it keeps per step follows from the
model's shapes (see ``leak_bytes_per_step``), not from nbprofiler's tables.

The validation batch (200) gives the leaked tensors sizes no gradient or
training activation has: the event table has no allocation addresses, so
frees are paired with allocations by size (see ``memory_by_operator``).
"""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import nbprofiler
from conftest import shared_trace
import pandas as pd

from nbprofiler.analysis.memory import growth_series, memory_growth

IN, HIDDEN, OUT, BATCH, VAL_BATCH = 256, 1024, 10, 64, 200
F32 = 4


def leak_bytes_per_step(val_batch: int) -> int:
    """What one leaked graph of ``Linear -> ReLU -> Linear -> pow -> mean`` holds:
    ReLU's output (its backward needs it), the first layer's input (for the
    weight gradient) and the last output (``pow`` saves its input)."""
    return F32 * val_batch * (HIDDEN + IN + OUT)


def train(leak: bool, *, val_batch: int = VAL_BATCH, steps: int = 16, active: int = 3):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(torch.randn(BATCH * steps, IN), torch.randint(0, OUT, (BATCH * steps,))),
                        batch_size=BATCH)
    x_val = torch.randn(val_batch, IN)
    running = 0.0
    with nbprofiler.profile(wait=1, warmup=1, active=active) as run:
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            if leak:
                val_loss = model(x_val + 0).pow(2).mean()
                running = running + val_loss
            else:
                running += model(x_val + 0).pow(2).mean().item()
    return run.report


def growth_row(report, source: str):
    rows = report.memory_growth
    rows = rows[(rows["device"] == "cpu") & (rows["source"] == source)]
    assert len(rows) == 1, report.memory_growth
    return rows.iloc[0]


@pytest.fixture(scope="module")
def traced_runs():
    """Six profiled steps each: enough for the trace alone to show a trend."""
    return {leak: train(leak, active=6, steps=10) for leak in (False, True)}


def test_a_leak_is_flagged_from_the_trace_with_the_leaked_bytes_per_step(traced_runs):
    row = growth_row(traced_runs[True], "trace")
    assert row["steps"] == 6
    assert bool(row["flagged"])
    assert row["slope_bytes_per_step"] == pytest.approx(leak_bytes_per_step(VAL_BATCH), rel=0.05)


def test_a_steady_loop_is_not_flagged(traced_runs):
    row = growth_row(traced_runs[False], "trace")
    assert not bool(row["flagged"])
    assert abs(row["slope_bytes_per_step"]) < 0.05 * leak_bytes_per_step(VAL_BATCH)


def test_held_bytes_per_operator_show_what_the_leak_keeps(traced_runs):
    """Allocations still alive when their step ended: the leak adds its graph's tensors, every step,
    on the forward operators that made them (not on backward's)."""
    held = {leak: r.memory_by_operator for leak, r in traced_runs.items()}
    extra = held[True]["held_bytes"].sum() - held[False]["held_bytes"].sum()
    assert extra == pytest.approx(6 * leak_bytes_per_step(VAL_BATCH), rel=0.05)
    forward_ops = ["aten::addmm", "aten::relu", "aten::clamp_min", "aten::add", "aten::pow", "aten::mean"]
    on_forward = {leak: h.loc[h["name"].isin(forward_ops), "held_bytes"].sum() for leak, h in held.items()}
    assert on_forward[True] - on_forward[False] == pytest.approx(extra, rel=0.01)
    table = held[True]
    assert (table["held_bytes"] <= table["allocated_bytes"]).all()
    assert table["allocated_bytes"].is_monotonic_decreasing


def test_operator_table_has_the_bytes_each_operator_allocated(traced_runs):
    """Forward ``addmm`` makes each Linear's output: (batch x out) floats, for the training
    batch and the validation batch, in each of the six profiled steps."""
    report = traced_runs[False]
    ops = report.operators.set_index("name")
    assert {"host_self_alloc_bytes", "device_self_alloc_bytes"} <= set(ops.columns)
    per_step = F32 * (BATCH + VAL_BATCH) * (HIDDEN + OUT)
    assert ops.loc["aten::addmm", "host_self_alloc_bytes"] == 6 * per_step
    assert (ops["device_self_alloc_bytes"] == 0).all()  # a CPU run
    # The same attribution as the memory tab's per-operator table.
    by_op = report.memory_by_operator.set_index("name")["allocated_bytes"]
    allocating = ops["host_self_alloc_bytes"][ops["host_self_alloc_bytes"] > 0]
    assert allocating.to_dict() == by_op.drop("(no operator)", errors="ignore").to_dict()


def test_operator_table_has_no_memory_columns_without_memory():
    with nbprofiler.profile(wait=0, warmup=0, active=1, memory=False) as run:
        torch.ones(1024).sum()
        nbprofiler.step()
    ops = run.report.operators
    assert "aten::sum" in set(ops["name"])
    assert not any(c.endswith("_bytes") for c in ops.columns)


def test_live_memory_steps_join_the_sampler_on_every_step(traced_runs):
    report = traced_runs[False]
    steps = report.memory_steps
    assert list(steps["step"]) == list(range(10)) and set(steps["device"]) == {"cpu"}
    profiled = steps["phase"] == "active"
    assert steps.loc[profiled, "peak_allocated_bytes"].notna().all()
    assert steps.loc[~profiled, "peak_allocated_bytes"].isna().all()
    assert steps["rss_bytes"].notna().all()
    prof = steps[profiled]
    assert (prof["peak_allocated_bytes"] >= prof[["start_allocated_bytes", "end_allocated_bytes"]].max(axis=1)).all()
    timeline = report.memory
    assert set(timeline["device"]) == {"cpu"} and not timeline["reconstructed"].any()
    assert (np.diff(timeline["ts"].to_numpy()) >= 0).all()


def test_a_leak_is_flagged_from_the_live_sampler_over_all_steps():
    """The sampler sees every step, also the unprofiled ones: RSS on a CPU run."""
    leaky, steady = train(True, val_batch=2048), train(False, val_batch=2048)
    row = growth_row(leaky, "sampler")
    assert row["measure"] == "rss" and row["steps"] >= 8
    assert bool(row["flagged"])
    assert 0.5 * leak_bytes_per_step(2048) < row["slope_bytes_per_step"] < 2 * leak_bytes_per_step(2048)
    assert not bool(growth_row(steady, "sampler")["flagged"])


def test_growth_rule_needs_a_consistent_rise():
    steps = np.arange(20)
    rng = np.random.default_rng(0)
    base = 500e6
    mib = float(1 << 20)
    cases = {
        "leak": base + 4 * mib * steps + rng.normal(0, 0.2 * mib, 20),
        "noise": base + rng.normal(0, 4 * mib, 20),
        "one-off jump": np.where(steps > 0, base + 64 * mib, base),
        "tiny creep": base + 1e3 * steps,
        "falling": base - 4 * mib * steps,
    }
    rows = memory_growth((name, "test", "allocated", steps, values) for name, values in cases.items())
    flagged = dict(zip(rows["device"], rows["flagged"]))
    assert flagged == {"leak": True, "noise": False, "one-off jump": False, "tiny creep": False, "falling": False}
    leak = rows.set_index("device").loc["leak"]
    assert leak["slope_bytes_per_step"] == pytest.approx(4 * mib, rel=0.05)
    few = memory_growth([("cpu", "test", "allocated", np.arange(3), base + 64 * mib * np.arange(3))])
    assert not few["flagged"].iloc[0]


def test_rss_is_judged_on_one_unbroken_stretch_the_profiler_left_alone():
    """RSS that the profiler's recording raised stays raised (the C allocator keeps it), and a
    steady loop's RSS creeps by allocator chunks: neither is a leak. A real leak still is."""
    mib = float(1 << 20)
    phases = ["wait", "warmup", "active", "active", "active"] + ["none"] * 7
    steps = np.arange(len(phases))
    # 400 MiB before recording; +40 MiB of profiler buffers kept; then a creep of 0.6 MiB a step.
    steady = np.where(steps < 5, 400 * mib, 440 * mib + 0.6 * mib * np.maximum(steps - 5, 0))

    def judged(rss):
        table = pd.DataFrame({"step": steps, "phase": phases, "device": "cpu", "rss_bytes": rss,
                              "end_allocated_bytes": np.nan})
        ((device, source, measure, xs, _),) = growth_series(table, "cpu")
        return xs, memory_growth(growth_series(table, "cpu")).iloc[0]

    xs, row = judged(steady)
    # The step after the last active one holds the export; the stretch after it is the one judged.
    assert list(xs) == [6, 7, 8, 9, 10, 11] and row["measure"] == "rss"
    assert not bool(row["flagged"])
    xs, row = judged(steady + 12 * mib * steps)
    assert bool(row["flagged"]) and row["slope_bytes_per_step"] == pytest.approx(12.6 * mib, rel=0.01)


def test_2021_trace_rebuilds_totals_from_bytes():
    """No ``Total Allocated`` in 2021 traces: the running total is rebuilt per device."""
    path = shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz")
    with gzip.open(path, "rt") as f:
        raw = json.load(f)
    device_memory = int(raw["deviceProperties"][0]["totalGlobalMem"])
    report = nbprofiler.load(path)
    timeline = report.memory
    assert set(timeline["device"]) == {"cpu", "cuda:0"}
    assert timeline["reconstructed"].all()
    assert (timeline["allocated_bytes"] >= 0).all()
    cuda = timeline[timeline["device"] == "cuda:0"]
    # ResNet-50 training activations: gigabytes, and never more than the V100 holds.
    assert 1e9 < cuda["allocated_bytes"].max() < device_memory
    steps = report.memory_steps
    gpu = steps[steps["device"] == "cuda:0"]
    assert len(gpu) == 6
    assert (gpu["peak_allocated_bytes"] > 1e9).all()
    # A steady training loop: every step ends where it started, nothing grows.
    assert (gpu["end_allocated_bytes"] == gpu["start_allocated_bytes"]).all()
    assert not report.memory_growth["flagged"].any()
    ops = report.memory_by_operator
    assert ops.loc[ops["device"] == "cuda:0", "allocated_bytes"].sum() == pytest.approx(
        cuda.loc[(cuda["delta_bytes"] > 0), "delta_bytes"].sum(), rel=0.01)
