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
import re

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import nbprofiler
from conftest import shared_trace
import pandas as pd

from nbprofiler.advice.rules import nothing_to_improve, verdicts
from nbprofiler.analysis.memory import growth_series, memory_growth
from nbprofiler.render.payload import report_payload

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
    # torch's CPU counter is no absolute level (it drifts with every profiled run): the
    # level is rebuilt from the events, counted from the start of recording.
    assert set(timeline["device"]) == {"cpu"} and timeline["reconstructed"].all()
    assert timeline["allocated_bytes"].min() == 0
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


LEAKY_CELL = """
history = []
for x, y in loader:
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    history.append(model(x_val + 0).pow(2).mean())   # kept with its graph: the leak
"""
STEADY_CELL = LEAKY_CELL.replace("history.append(model(x_val + 0).pow(2).mean())",
                                 "history.append(model(x_val + 0).pow(2).mean().item())")
MEMORY_SETUP = f"""
import torch, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear({IN}, {HIDDEN}), torch.nn.ReLU(), torch.nn.Linear({HIDDEN}, {OUT}))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn({BATCH} * 8, {IN}), torch.randint(0, {OUT}, ({BATCH} * 8,))),
                    batch_size={BATCH})
x_val = torch.randn({VAL_BATCH}, {IN})
"""


def run_twice(ip, cell: str):
    """The cell's report on its second run in the same kernel, with default options
    (--active 3): RSS then stays flat, as freed pages are reused."""
    ip.run_cell(MEMORY_SETUP).raise_error()
    for _ in range(2):
        ip.run_cell_magic("torchprofile", "-q -o run", cell)
    return ip.user_ns["run"]


def test_a_leak_over_three_profiled_steps_is_flagged_in_a_kernel_that_ran_the_cell_before(ip, one_torch_thread):
    report = run_twice(ip, LEAKY_CELL)
    assert len(report.trace_steps) == 3
    row = growth_row(report, "trace")
    assert row["steps"] == 3 and bool(row["judged"]) and bool(row["flagged"])
    assert row["slope_bytes_per_step"] == pytest.approx(leak_bytes_per_step(VAL_BATCH), rel=0.05)
    leak = [s for s in report.suggestions if s.kind == "memory_growth"]
    assert len(leak) == 1 and "allocated bytes (trace) on cpu" in leak[0].facts[1]
    # The first fact names the cell line that keeps the graphs (tests/advice/test_leak_fix.py pastes its fix).
    assert leak[0].facts[0].startswith("cell line 7: `history.append(model(x_val + 0).pow(2).mean())")
    assert not any(s.nothing_to_improve for s in report.suggestions)
    # The warning is the report's own, and the text and the saved data show that same sentence.
    assert report.memory_warnings and report.memory_warnings[0].startswith("Memory grows: allocated bytes (trace)")
    assert all(f"WARNING: {w}" in report.to_text() for w in report.memory_warnings)
    assert report_payload(report)["memory"]["warnings"] == list(report.memory_warnings)


def test_a_steady_loop_over_three_profiled_steps_is_not_flagged(ip, one_torch_thread):
    report = run_twice(ip, STEADY_CELL)
    row = growth_row(report, "trace")
    assert row["steps"] == 3 and bool(row["judged"]) and not bool(row["flagged"])
    assert "memory_growth" not in {s.kind for s in report.suggestions}


def test_a_growth_check_that_could_not_run_is_never_listed_as_passed(one_torch_thread):
    """Two profiled steps are too few to judge the trace's series, and the few steps the
    profiler left alone too few for RSS: "nothing to improve" must say so, not vouch for it."""
    report = train(False, steps=5, active=2)
    growth = report.memory_growth
    assert not growth["judged"].any(), growth
    s = nothing_to_improve(verdicts(report))  # what the report says when no rule fires
    passed, _, not_run = s.detail.partition("Could not check:")
    assert "memory does not grow" not in passed
    assert "memory growth of allocated bytes (trace) on cpu (2 step(s) to judge, it needs 3)" in not_run
    assert "memory growth of process RSS on cpu" in not_run


def test_steady_rise_needs_every_step_to_rise_by_about_the_same():
    mib = float(1 << 20)
    steps = np.arange(3)
    cases = {
        "leak": 50 * mib + 7 * mib * steps,
        "one jump": 50 * mib + np.array([0, 7, 7.2]) * mib,  # the first step created state once
        "uneven": 50 * mib + np.array([0, 1, 9]) * mib,
        "tiny": 50 * mib + 1e3 * steps,
    }
    rows = memory_growth(("cpu", "trace", "allocated", steps, v) for v in cases.values())
    assert dict(zip(cases, rows["flagged"])) == {"leak": True, "one jump": False, "uneven": False, "tiny": False}
    # The same three steps from the sampler (RSS, CUDA figures) are too few to judge a trend.
    sampled = memory_growth([("cuda:0", "sampler", "allocated", steps, cases["leak"])]).iloc[0]
    assert not sampled["judged"] and not sampled["flagged"]


ALLOCATING_CELL = """
for _ in range(6):
    a = torch.empty(3 << 20, dtype=torch.uint8)     # 3 MiB
    b = torch.empty(5 << 20, dtype=torch.uint8)     # 5 MiB: 8 MiB above the step's start
    del a, b
    c = torch.empty(1 << 20, dtype=torch.uint8)     # 1 MiB, freed when the next step replaces it
    nbprofiler.step()
"""


def test_cpu_peak_is_the_rise_within_a_step_and_identical_reruns_agree(ip):
    """torch's CPU counter never sees the frees of blocks allocated before (or freed after)
    profiling, so its absolute level drifts from one run of a cell to the next. The report
    gives the rise of each step's peak over the step's start, which the cell fixes exactly."""
    ip.run_cell("import torch, nbprofiler").raise_error()
    rises, texts = [], []
    for _ in range(3):
        ip.run_cell_magic("torchprofile", "-q -o run --wait 0 --warmup 1 --active 3", ALLOCATING_CELL)
        report = ip.user_ns["run"]
        steps = report.memory_steps
        traced = steps[steps["peak_rise_bytes"].notna()]
        assert traced["reconstructed"].all()
        rises.append(traced["peak_rise_bytes"].to_numpy())
        texts.append(next(line for line in report.to_text().splitlines() if line.startswith("Memory on cpu")))
    # Each step starts holding the previous step's `c` (1 MiB), frees it when `c` is replaced,
    # so its peak is a and b together: 8 MiB over its start, in every step of every run.
    for rise in rises:
        assert list(rise) == [8 << 20] * 3
    assert ("largest rise within a step after the first profiled one, over its starting level (traced) 8.0 MiB"
            in texts[0])
    # The figures the cell fixes agree; the process's RSS, which the test process's history moves, is left out.
    traced_only = [re.sub(r"process RSS [\d.]+ \w+", "process RSS", text) for text in texts]
    assert traced_only[0] == traced_only[1] == traced_only[2]


TRANSFORMER_CELL = """
for _ in range(5):
    tokens = torch.randint(0, 1000, (8, 64))
    logits = lm(tokens)
    loss = F.cross_entropy(logits.reshape(-1, 1000), tokens.reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_transformer_lm_gives_the_same_memory_figures_on_every_rerun(ip, one_torch_thread):
    ip.run_cell("""
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2)
        self.out = nn.Linear(64, 1000)
    def forward(self, t):
        return self.out(self.enc(self.emb(t)))
lm = LM()
opt = torch.optim.AdamW(lm.parameters())
""").raise_error()
    lines = []
    for _ in range(4):
        ip.run_cell_magic("torchprofile", "-q -o run", TRANSFORMER_CELL)
        report = ip.user_ns["run"]
        lines.append(next(line for line in report.to_text().splitlines() if line.startswith("Memory on cpu")))
        steps = report.memory_steps
        assert steps["end_allocated_bytes"].dropna().max() < steps["peak_rise_bytes"].max()  # no level carried over
    figures = [float(re.search(r"over its starting level \(traced\) ([\d.]+) MiB", line).group(1)) for line in lines]
    assert max(figures) <= 1.05 * min(figures), lines
