"""What ``batch_size_curve`` and ``tune_dataloader`` measured, kept in the history and quoted by the next
profile of the same cell or set-up in place of the estimate; and when such a measurement no longer
applies (another device, torch version or cell code), said so, with the estimate kept.

Real measurements of a small CPU loop whose steps are mostly fixed per-step cost (a hundred tiny
layers at batch 2), so that the batch card fires and a larger batch is measured reliably faster."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import torch

import nbprofiler
from nbprofiler.advice.rules import verdicts
from nbprofiler.history.measurements import SetUp, keep_measurement, measured_for, measured_now
from nbprofiler.history.schema import SCHEMA_VERSION
from nbprofiler.records import StoredMeasurement

pytestmark = pytest.mark.usefixtures("private_tmp", "one_torch_thread")

SETUP = """
import torch, torch.nn as nn, torch.nn.functional as F, nbprofiler
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
net = nn.Sequential(*[nn.Linear(4, 4) for _ in range(100)])
opt = torch.optim.SGD(net.parameters(), lr=0.001)
train_loader = DataLoader(TensorDataset(torch.randn(256, 4), torch.randn(256, 4)), batch_size=2)

def step_fn(batch):
    x, y = torch.randn(batch, 4), torch.randn(batch, 4)
    loss = F.mse_loss(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
CELL = """
for x, y in train_loader:
    loss = F.mse_loss(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
CURVE = "curve = nbprofiler.batch_size_curve(step_fn, [2, 32], current=2, rounds=3, min_seconds=0.15, " \
        "restore=[net, opt], plot=False, progress=False)"


def profiled(shell):
    shell.run_cell_magic("torchprofile", "-q -o run --wait 0 --active 8", CELL)
    return shell.user_ns["run"]


def batch_card(report):
    cards = [s for s in report.suggestions if s.kind == "batch_size"]
    assert len(cards) == 1, [s.title for s in report.suggestions]
    return cards[0]


def test_a_batch_card_quotes_the_curve_the_history_kept_and_its_code_sets_that_batch(shell, history_file):
    shell.run_cell(SETUP).raise_error()
    estimated = batch_card(profiled(shell))
    assert "measured" not in estimated.expected_gain  # an estimate, until measured
    shell.run_cell(CURVE).raise_error()
    curve = shell.user_ns["curve"]
    assert curve.attrs["recommended"] == 32
    measured = curve.set_index("batch_size").loc[32]

    card = batch_card(profiled(shell))
    today = measured_now()[:10]
    assert card.title == f"Use batch_size=32: measured {measured['speedup']:.2f}× the samples/s of batch_size=2 " \
                         "with batch_size=32"
    assert f"on {today} by nbprofiler.batch_size_curve (3 interleaved rounds; middle half " \
           f"{measured['speedup_low']:.2f}–{measured['speedup_high']:.2f}×)" in card.expected_gain
    assert card.gain == pytest.approx(measured["speedup"])
    assert (card.gain_low, card.gain_high) == pytest.approx((measured["speedup_low"], measured["speedup_high"]))
    assert "batch_size=32" in card.code
    # the code runs when pasted into the cell, and gives the measured batch
    shell.run_cell(card.code).raise_error()
    assert shell.user_ns["train_loader"].batch_size == 32


def test_a_measurement_from_another_torch_or_device_is_said_not_to_apply(shell, history_file):
    shell.run_cell(SETUP).raise_error()
    profiled(shell)
    shell.run_cell(CURVE).raise_error()
    with sqlite3.connect(history_file) as conn:
        conn.execute("UPDATE measurements SET torch = '1.13.1', device = 'NVIDIA A100-SXM4-40GB'")
    card = batch_card(profiled(shell))
    assert "measured" not in card.title and "in place of" not in card.expected_gain  # the estimate stays
    (said,) = [fact for fact in card.facts if "no longer applies" in fact]
    assert f"a batch_size_curve measured on {measured_now()[:10]} no longer applies" in said
    assert "it ran on NVIDIA A100-SXM4-40GB, this run on CPU (" in said
    assert f"it ran under torch 1.13.1, this run under {torch.__version__}" in said


def test_a_curve_measured_from_another_batch_size_is_said_not_to_apply(shell, history_file):
    shell.run_cell(SETUP).raise_error()
    profiled(shell)
    shell.run_cell(CURVE.replace("[2, 32], current=2", "[4, 32], current=4")).raise_error()
    card = batch_card(profiled(shell))  # the loop still runs at batch_size=2
    assert "measured" not in card.title
    assert any(fact.endswith("no longer applies, so this card keeps its estimate: its gains are against "
                             "batch_size=4, and this run has batch_size=2") for fact in card.facts), card.facts


def test_a_curve_that_found_no_faster_batch_passes_the_check_instead_of_a_card(shell, history_file):
    shell.run_cell(SETUP).raise_error()
    profiled(shell)
    shell.run_cell(CURVE).raise_error()
    with sqlite3.connect(history_file) as conn:
        (result,) = conn.execute("SELECT result FROM measurements").fetchone()
        kept = {**json.loads(result), "best": None, "best_value": None, "speedup": None}
        conn.execute("UPDATE measurements SET result = ?", (json.dumps(kept),))
    report = profiled(shell)
    assert all(s.kind != "batch_size" for s in report.suggestions)
    (v,) = [v for v in verdicts(report) if v.check == "the CPU batch size"]
    assert v.state == "passed"
    assert v.figures.startswith("batch_size_curve measured no setting reliably faster than batch_size=2 on ")


def test_a_changed_cell_and_another_device_make_a_measurement_stale(history_file):
    kept = StoredMeasurement(kind="tune_dataloader", measured_at="2026-12-03T10:00:00+00:00", rounds=5,
                             reference="num_workers=0", best="num_workers=2, pin_memory=False", best_value=2,
                             pin_memory=False, speedup=1.6, speedup_low=1.5, speedup_high=1.7)
    then = SetUp(cell="cell-1", cell_source="aaaa", device="CPU (x86_64, 2 cores)", torch=torch.__version__,
                 loader="TensorDataset(256)")
    keep_measurement(kept, then)
    (same,) = measured_for(then)
    assert same == kept  # as kept, and it applies
    (edited,) = measured_for(SetUp(cell="cell-1", cell_source="bbbb", device=then.device, torch=then.torch))
    assert edited.stale == "the cell's code has changed since"
    (moved,) = measured_for(SetUp(cell=None, cell_source=None, device="NVIDIA H200", torch=then.torch,
                                  loader="TensorDataset(256)"))
    assert moved.stale == "it ran on CPU (x86_64, 2 cores), this run on NVIDIA H200"
    assert measured_for(SetUp(cell="cell-2", cell_source=None, device=then.device, torch=then.torch,
                              loader="TensorDataset(999)")) == ()  # another cell and loader: not this run's


def test_a_history_row_that_is_not_a_measurement_is_not_quoted(history_file):
    keep_measurement(StoredMeasurement(kind="batch_size_curve", measured_at=measured_now(), rounds=3,
                                       reference="batch_size=2"), SetUp(cell="c", cell_source=None, device="d",
                                                                        torch="t"))
    with sqlite3.connect(history_file) as conn:
        conn.execute("UPDATE measurements SET result = ?",
                     (json.dumps({"kind": "batch_size_curve", "measured_at": "x", "rounds": "<script>",
                                  "reference": 3}),))
    assert measured_for(SetUp(cell="c", cell_source=None, device="d", torch="t")) == ()


def test_a_version_1_history_gains_the_cycles_column_and_the_measurements_table(history_file):
    from nbprofiler.history.schema import MIGRATIONS

    with sqlite3.connect(history_file) as conn:
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
    assert nbprofiler.history().empty
    assert list(nbprofiler.history().columns).index("cycles") == 7
    with sqlite3.connect(history_file) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "measurements"} <= tables


LOADER_SETUP = f"""
import sys, torch, torch.nn as nn, torch.nn.functional as F, nbprofiler
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from torch.utils.data import DataLoader
from workloads import SlowDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train_loader = DataLoader(SlowDataset(96, 0.004), batch_size=8, num_workers=0)

def step(batch):
    x, y = batch
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
LOADER_CELL = """
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
TUNE = ('tuned = nbprofiler.tune_dataloader(train_loader, [{"num_workers": 2}], step=step, max_seconds=3, rounds=3, '
        "restore=[model, opt], plot=False, progress=False)")


def test_a_dataloader_card_quotes_the_tuning_the_history_kept(shell, history_file):
    """A loop waiting on a sleep-bound loader: tune_dataloader measures 2 workers in the loop, and the next
    profile's DataLoader card quotes that measurement, its code setting what was measured."""
    shell.run_cell(LOADER_SETUP).raise_error()
    shell.run_cell_magic("torchprofile", "-q -o run --wait 0 --active 4", LOADER_CELL)
    assert any(s.kind == "dataloader" for s in shell.user_ns["run"].suggestions)
    shell.run_cell(TUNE).raise_error()
    tuned = shell.user_ns["tuned"]
    assert tuned.attrs["recommended"]["num_workers"] == 2
    row = tuned[tuned["num_workers"] == 2].iloc[0]
    shell.run_cell_magic("torchprofile", "-q -o run --wait 0 --active 4", LOADER_CELL)
    (card,) = [s for s in shell.user_ns["run"].suggestions if s.kind == "dataloader"]
    assert card.title == (f"Use num_workers=2, pin_memory=False: measured {row['loop_speedup']:.2f}× the loop's speed "
                          "of num_workers=0 with num_workers=2, pin_memory=False")
    assert card.gain == pytest.approx(row["loop_speedup"])
    assert "num_workers=2" in card.code and "persistent_workers=True" in card.code
    shell.run_cell(card.code).raise_error()
    assert shell.user_ns["train_loader"].num_workers == 2
