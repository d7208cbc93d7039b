"""``nbprofiler.compare``: did a change help, by how much, and is it more than noise?

Real traces (the two V100 runs, num_workers 0 and 4), real profiled cells in the IPython
shell, and the bootstrap itself on simulated step times.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import shared_report, shared_trace

import nbprofiler
from nbprofiler.analysis import compare as cmp

V100_0 = "v100_resnet50_train_num_workers_0.pt.trace.json.gz"
V100_4 = "v100_resnet50_train_num_workers_4.pt.trace.json.gz"


@pytest.fixture(scope="module")
def v100():
    return nbprofiler.compare(shared_report(V100_0), shared_report(V100_4), tried="dataloader")


def _spans_ms(report) -> np.ndarray:
    spans = report.stretched_steps
    return ((spans["end_us"] - spans["start_us"]) / 1e3).to_numpy()


# -- the shared V100 traces ------------------------------------------------------------------
def test_v100_dataloader_share_falls_from_a_third_to_under_one_percent(v100):
    bd = v100.breakdown.set_index("part")
    assert v100.breakdown_kind == "device"
    assert bd.loc["dataloader", "before_share"] == pytest.approx(0.33, abs=0.01)
    assert bd.loc["dataloader", "after_share"] < 0.01
    # the shares are the reports' own
    assert bd.loc["dataloader", "before_share"] == pytest.approx(v100.before.breakdown_shares()["dataloader"])
    assert bd.loc["dataloader", "after_share"] == pytest.approx(v100.after.breakdown_shares()["dataloader"])
    assert bd["before_share"].sum() == pytest.approx(1.0)


def test_v100_step_time_and_speedup(v100):
    before_ms, after_ms = v100.step_ms
    assert round(before_ms, 1) == 177.6 and round(after_ms, 1) == 141.1
    assert before_ms == pytest.approx(v100.before.summary["avg_step_us"] / 1e3)
    assert after_ms == pytest.approx(v100.after.summary["avg_step_us"] / 1e3)
    # the speed-up is the ratio of the median stretched steps, the steps the averages are over
    medians = np.median(_spans_ms(v100.before)), np.median(_spans_ms(v100.after))
    assert v100.median_step_ms == pytest.approx(medians)
    assert v100.speedup == pytest.approx(medians[0] / medians[1])
    low, high = v100.speedup_ci
    assert 1 < low <= v100.speedup <= high
    assert low <= before_ms / after_ms <= high  # the ratio of the means lies in the interval too
    assert v100.changed
    assert v100.verdict.startswith(f"{v100.speedup:.2f}× faster ({low:.2f}–{high:.2f})")
    assert not any(n.startswith("By the mean steps") for n in v100.notes)  # the means' 1.26× is in the interval


def test_v100_breakdown_dataloader_delta_is_negative_and_explained(v100):
    row = v100.breakdown.set_index("part").loc["dataloader"]
    assert row["delta_ms"] == pytest.approx(row["after_ms"] - row["before_ms"])
    assert row["delta_low_ms"] <= row["delta_ms"] <= row["delta_high_ms"] < 0
    assert row["before_ms"] == pytest.approx(v100.before.breakdown["dataloader"].mean() / 1e3)
    assert row["explanation"].startswith("DataLoader −58")
    assert "the DataLoader change's own target" in row["explanation"]
    # the same files without --tried: no set-up is known, so the move is the step's share
    plain = nbprofiler.compare(v100.before, v100.after).breakdown.set_index("part").loc["dataloader"]
    assert "of the step's change" in plain["explanation"]


def test_v100_changes_claims_and_text(v100):
    assert v100.changes == ("unknown: trace files record no set-up",)
    claim = next(s for s in v100.before.suggestions if s.kind == "dataloader")
    assert v100.stated_vs_measured.startswith(f"stated: at most {claim.gain:.2f}× · measured: {v100.speedup:.2f}×")
    assert v100.stated_vs_measured.endswith("within the claim")
    text = v100.to_text()
    assert v100.verdict in text and "DataLoader" in text and "177.6 ms → 141.1 ms" in text


def test_v100_kernels_and_operators_per_step(v100):
    steps = len(v100.before.trace_steps), len(v100.after.trace_steps)
    k = v100.kernels.set_index("name")
    name = v100.before.kernels["name"].iloc[0]
    assert k.loc[name, "total_ms_before"] == pytest.approx(v100.before.kernels["total_us"].iloc[0] / 1e3 / steps[0])
    assert set(v100.kernels["status"]) == {"both", "new", "vanished"}
    vanished = k[k["status"] == "vanished"]
    assert (vanished["calls_after"] == 0).all() and (vanished["calls_before"] > 0).all()
    assert not set(vanished.index) & set(v100.after.kernels["name"])
    ops = v100.operators
    main = ops["device_self_ms_delta"].abs().to_numpy()
    assert (main[:-1] >= main[1:]).all()  # largest change first, by device time on a GPU run


def test_tables_are_copies(v100):
    mine, ops = v100.breakdown, v100.operators
    del mine["explanation"]
    ops.loc[:, "calls_before"] = -1
    assert "explanation" in v100.breakdown and (v100.operators["calls_before"] >= 0).all()


def test_paths_and_run_ids_and_bad_input():
    c = nbprofiler.compare(shared_trace(V100_0), str(shared_trace(V100_4)))
    assert c.step_ms == pytest.approx((177.592, 141.068), abs=1e-3)
    with pytest.raises(TypeError, match="compare: after must be a Report, a trace or report path"):
        nbprofiler.compare(c.before, [1, 2])


# -- the bootstrap ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [3, 5, 10])
def test_interval_holds_one_for_identical_distributions(n):
    """The method holds for few steps: two runs drawn from one step-time distribution get an
    interval that contains 1 in at least 88% of 300 simulated pairs (3 steps a side: 90%)."""
    rng = np.random.default_rng(n)
    held = 0
    for _ in range(300):
        b, a = (rng.lognormal(np.log(100), 0.1, n) for _ in range(2))
        low, high = cmp.median_ratio_interval(b, a, resamples=2000, drift=0)
        held += low <= 1 <= high
    assert held / 300 >= 0.88


def test_interval_finds_a_real_change_and_is_reproducible():
    rng = np.random.default_rng(0)
    b, a = rng.normal(100, 3, 5), rng.normal(70, 3, 5)
    ci = cmp.median_ratio_interval(b, a)
    assert ci == cmp.median_ratio_interval(b, a)  # fixed seed
    assert 1.3 < ci[0] <= np.median(b) / np.median(a) <= ci[1]
    assert cmp.verdict(np.median(b) / np.median(a), ci).endswith("faster " + f"({ci[0]:.2f}–{ci[1]:.2f})")
    slower = cmp.median_ratio_interval(a, b)
    assert cmp.verdict(np.median(a) / np.median(b), slower) == (
        f"{np.median(b) / np.median(a):.2f}× slower ({1 / slower[1]:.2f}–{1 / slower[0]:.2f})")


def test_one_step_on_a_side_gives_no_interval():
    assert cmp.median_ratio_interval(np.array([100.0]), np.array([80.0, 82.0])) is None
    words = cmp.verdict(1.25, None)
    assert words == "1.25× faster by the medians (one step on a side: no interval; profile more steps with --active)"
    assert cmp.verdict(None, None) == "no step on a side: nothing to compare"


def test_breakdown_delta_interval_and_explanations():
    before = pd.DataFrame({"step": [1, 2, 3, 4], "dataloader": [50e3, 52e3, 49e3, 51e3],
                           "forward": [30e3, 31e3, 29e3, 30e3], "other": [1e3, 2e3, 1e3, 2e3]})
    after = pd.DataFrame({"step": [1, 2, 3, 4], "dataloader": [2e3, 3e3, 2e3, 3e3],
                          "forward": [20e3, 21e3, 19e3, 20e3], "other": [2e3, 1e3, 1e3, 2e3]})
    labels = {"dataloader": "DataLoader", "forward": "Forward", "other": "Other"}
    loader = cmp.SetupChange("DataLoader train_loader: num_workers 0 → 4", "DataLoader", frozenset({"dataloader"}))
    bd = cmp.breakdown_diff(before, after, labels, (loader,)).set_index("part")
    assert bd.loc["dataloader", "delta_ms"] == pytest.approx(-48.0)
    assert bd.loc["dataloader", "delta_low_ms"] <= -48.0 <= bd.loc["dataloader", "delta_high_ms"] < 0
    assert bd.loc["dataloader", "explanation"] == "DataLoader −48.0 ms: the DataLoader change's own target"
    assert bd.loc["forward", "explanation"] == ("Forward −10.0 ms, which this change should not have touched: "
                                               "check that the machine was quiet")
    assert bd.loc["other", "explanation"] == "within noise"
    unknown = cmp.breakdown_diff(before, after, labels, None).set_index("part")
    assert unknown.loc["dataloader", "explanation"] == "DataLoader −48.0 ms, 82.8% of the step's change"


def test_operators_new_and_vanished_per_step():
    before = pd.DataFrame({"name": ["aten::mm", "aten::relu"], "calls": [6, 3], "host_self_us": [600.0, 300.0],
                           "device_self_us": [0.0, 0.0]})
    after = pd.DataFrame({"name": ["aten::mm", "<script>x</script>"], "calls": [6, 3], "host_self_us": [300.0, 90.0],
                          "device_self_us": [0.0, 0.0]})
    diff = cmp.operator_diff(before, after, (3, 3), device=False).set_index("name")
    assert diff.loc["aten::relu", "status"] == "vanished" and diff.loc["<script>x</script>", "status"] == "new"
    assert diff.loc["aten::mm", "host_self_ms_before"] == pytest.approx(0.2)  # per profiled step
    assert diff.loc["aten::mm", "calls_delta"] == 0
    assert list(diff.index) == ["aten::mm", "aten::relu", "<script>x</script>"]  # largest |delta| first


def test_ranks_compare_rank_by_rank():
    from nbprofiler import Report

    slow, fast = shared_report(V100_0), shared_report(V100_4)
    before = Report.from_trace(slow.table, slow.source_path, ranks={0: slow, 1: slow})
    after = Report.from_trace(fast.table, fast.source_path, ranks={0: fast, 1: fast, 2: fast})
    ranks = nbprofiler.compare(before, after).ranks
    assert list(ranks["rank"]) == [0, 1]  # the ranks both runs have
    assert ranks["speedup"].to_numpy() == pytest.approx([177.592 / 141.068] * 2, rel=1e-4)
    assert nbprofiler.compare(slow, fast).ranks.empty


# -- live runs in the real shell ---------------------------------------------------------------
# Each sample sleeps 10 ms, as a read from slow storage does: a step of 4 samples is 40 ms of
# waiting and about 1 ms of compute, so the machine's load barely moves it.
SLOW_SETUP = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader
from workloads import SlowDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
slow_ds = SlowDataset(48, 0.01)
train_loader = DataLoader(slow_ds, batch_size=4)
"""
SLOW_CELL = """%%torchprofile --active 8 -q -o {out}
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def _profile(shell, cell: str, out: str):
    shell.run_cell(cell.format(out=out)).raise_error()
    return shell.user_ns[out]


def test_same_cell_twice_is_no_measurable_change(shell, one_torch_thread):
    shell.run_cell(SLOW_SETUP).raise_error()
    first, second = _profile(shell, SLOW_CELL, "first"), _profile(shell, SLOW_CELL, "second")
    c = nbprofiler.compare(first, second)
    low, high = c.speedup_ci
    assert low <= 1 <= high, c.to_text()
    assert c.verdict == f"no measurable change ({low:.2f}–{high:.2f})" and not c.changed
    assert c.changes == () and c.breakdown_kind == "phases"
    assert len(c.step_samples[0]) == len(c.step_samples[1]) == 8
    assert set(c.operators["status"]) == {"both"}
    assert "none recorded" in c.to_text()


# The loop's own work takes 30 ms a step (a sleep, as a GPU step waits for its kernels), longer than
# the 20 ms two workers need for a batch between them: they keep ahead, and every step is the work
# alone (workers that fell behind would deliver in bursts, a step waiting and the next not).
WORK_CELL = """%%torchprofile --active 8 -q -o {out}
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    time.sleep(0.03)
"""


def test_workers_for_a_sleeping_loader_are_a_measured_gain(shell, one_torch_thread):
    shell.run_cell(SLOW_SETUP + "import time").raise_error()
    before = _profile(shell, WORK_CELL, "before")
    shell.run_cell("train_loader = DataLoader(slow_ds, batch_size=4, num_workers=2)").raise_error()
    after = _profile(shell, WORK_CELL, "after")
    c = nbprofiler.compare(before, after, tried="dataloader")
    assert c.speedup_ci[0] > 1.3, c.to_text()
    assert c.verdict.startswith(f"{c.speedup:.2f}× faster") and c.changed
    assert "DataLoader train_loader: num_workers 0 → 2" in c.changes
    row = c.breakdown.set_index("part").loc["dataloader"]
    assert row["delta_high_ms"] < 0
    assert row["explanation"].startswith("DataLoader −") and row["explanation"].endswith(
        "the DataLoader change's own target")
    assert c.samples_per_s[1] > c.samples_per_s[0]
    assert "measured: " in c.stated_vs_measured


def test_live_run_compares_with_a_trace_file(shell, one_torch_thread, tmp_path):
    shell.run_cell(SLOW_SETUP).raise_error()
    live = _profile(shell, SLOW_CELL, "live")
    path = live.export_chrome_trace(tmp_path / "live.pt.trace.json.gz")
    c = nbprofiler.compare(live, path)
    assert c.changes == ("unknown: trace files record no set-up",)
    assert c.after.run is None and c.after.source_path == str(path)
    # the same trace on both sides: every operator and part is as it was
    assert set(c.operators["status"]) == {"both"}
    assert c.operators[["calls_delta", "host_self_ms_delta"]].abs().max().max() == pytest.approx(0, abs=1e-9)
    assert (c.breakdown["explanation"] == "within noise").all()
    low, high = c.speedup_ci  # the sampler's wall times against the trace's step spans of the same steps
    assert low <= 1 <= high, c.to_text()


CALL_CELL = """%%torchprofile --active {active} -q -o {out}
for x, y in train_loader:
    loss = F.cross_entropy(torch.{op}(model(x)), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_changed_cell_adds_and_removes_operators(shell, one_torch_thread):
    before = _profile(shell, CALL_CELL.replace("{op}", "sigmoid").replace("{active}", "3"), "before")
    after = _profile(shell, CALL_CELL.replace("{op}", "tanh").replace("{active}", "3"), "after")
    c = nbprofiler.compare(before, after)
    ops = c.operators.set_index("name")
    assert ops.loc["aten::tanh", "status"] == "new" and ops.loc["aten::sigmoid", "status"] == "vanished"
    assert ops.loc["aten::tanh", "calls_after"] == 1  # one call per profiled step
    assert ops.loc["aten::sigmoid", "calls_before"] == 1 and ops.loc["aten::sigmoid", "calls_after"] == 0
    assert "the cell's code changed" in c.changes
    mem = c.memory
    assert {"process RSS", "peak allocated"} <= set(mem["measure"]) and set(mem["device"]) == {"cpu"}
    rss = mem.set_index("measure").loc["process RSS"]
    assert rss["before_bytes"] == before.memory_steps["rss_bytes"].max()
    assert rss["delta_bytes"] == rss["after_bytes"] - rss["before_bytes"]


def test_one_step_on_a_side(shell, one_torch_thread):
    cell = CALL_CELL.replace("{op}", "relu")
    one = _profile(shell, cell.replace("{active}", "1"), "one")
    three = _profile(shell, cell.replace("{active}", "3"), "three")
    c = nbprofiler.compare(one, three)
    assert len(c.step_samples[0]) == 1 and c.speedup is not None and c.speedup_ci is None and not c.changed
    assert c.verdict.endswith("(one step on a side: no interval; profile more steps with --active)")
    assert c.breakdown["delta_low_ms"].isna().all()
    assert any("schedule" in change for change in c.changes)
    assert "The schedules differ, so the runs profiled different steps of the loop." in c.notes


def test_stated_against_measured():
    words = cmp.stated_vs_measured((1.0, 1.5), "at most 1.50×", 1.2, (1.1, 1.3))
    assert words == "stated: at most 1.50× · measured: 1.20× (1.10–1.30): within the claim"
    assert cmp.stated_vs_measured((1.0, 1.5), "at most 1.50×", 1.9, (1.7, 2.1)).endswith(
        ": beyond the claim (something else changed too, or the machine was busier before)")
    assert cmp.stated_vs_measured((1.2, 1.6), "about 1.40×", 0.9, (0.85, 0.95)).endswith(": below the claim")


def test_a_bursty_run_notes_the_means():
    """Workers that fall behind deliver batches in bursts: one step waits, the next does not.
    The medians then miss what throughput follows, and a note gives the means' ratio."""
    before = np.full(8, 100.0) + np.arange(8) * 0.1
    after = np.array([90.0, 90.5, 91.0, 91.5, 92.0, 92.5, 93.0, 2.0])
    ci = cmp.median_ratio_interval(before, after)
    (note,) = cmp.centre_note(before, after, ci)
    assert note.startswith(f"By the mean steps (100.4 ms → {after.mean():.1f} ms) the speed-up is "
                           f"{before.mean() / after.mean():.2f}×")
    assert cmp.centre_note(before, before * 0.5, cmp.median_ratio_interval(before, before * 0.5)) == []
