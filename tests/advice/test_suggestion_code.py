"""The code of the GPU suggestions (autocast, cuDNN settings, gradient accumulation) runs when
pasted into the user's cell: in the cell's own names, in place of the cell lines its evidence
names, and without NameError where no cell was recorded (a trace file).

The rules read real V100/A100 kernels from the shared traces; a run record beside them holds
the cell's source and loader, as a live run records them. The pasted cell then trains a small
model on CPU, with ``device_type="cpu"`` in place of ``"cuda"`` (this machine has no GPU).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import nbprofiler
from conftest import shared_trace
from nbprofiler.advice.cell_names import training_step
from nbprofiler.advice.step_code import accumulation_code, autocast_code
from nbprofiler.advice.suggestion import Suggestion
from nbprofiler.options import ProfileOptions
from nbprofiler.records import LoaderRecord, RunRecord
from nbprofiler.report import Report
from nbprofiler.trace.table import DeviceInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from advice_accuracy import paste

# A cell that names nothing as a generic loop would: not `model`, `optimizer`, `loss_fn`, `train_loader`.
CELL = """\
for epoch in range(2):
    for xb, yb in train_dl:
        xb = xb.float()
        opt.zero_grad()
        logits = net(xb)
        loss = F.cross_entropy(logits, yb)
        loss.backward()
        opt.step()
        batches += 1
"""
BATCHES = 4  # per epoch: 32 samples, batch 8


def _record(device: DeviceInfo, steps: pd.DataFrame, cell: str | None) -> RunRecord:
    loader = LoaderRecord(loader_id=1, batch_size=8, num_workers=0, pin_memory=False, persistent_workers=False,
                          prefetch_factor=None, drop_last=False, shuffle=False, dataset_type="TensorDataset",
                          dataset_length=32, dataset_repr="TensorDataset", name="train_dl", dataset_name="train_ds",
                          batches=8)
    return RunRecord(options=ProfileOptions(), device=device, steps=steps.reset_index(drop=True), loaders=(loader,),
                     step_source="optimizer", cell_source=cell, cpu_count=8)


@pytest.fixture(scope="module")
def traces() -> dict[str, Report]:
    names = ["v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4", "v100_resnet_ns_timestamps",
             "a100_train", "a100_nccl_distributed", "a100_alexnet_small", "mi250_rocm_toy_train"]
    return {n: nbprofiler.load(shared_trace(n)) for n in names}


def _v100(traces, cc: tuple[int, int], cell: str | None) -> Report:
    """The V100 trace's fp32 kernels (they fire the autocast and cuDNN rules) with ``cell`` recorded."""
    trace = traces["v100_resnet50_train_num_workers_4"]
    device = DeviceInfo(index=0, name="GPU", kind="cuda", total_memory_bytes=32 * 2**30, compute_capability=cc)
    return Report.from_live(trace.table, _record(device, trace.steps[["step", "phase", "wall_ms", "dataloader_ms"]],
                                                 cell), None)


def _near_limit(traces, cell: str | None) -> Report:
    """a100_nccl_distributed's kernels with counters at 95% of a 40 GiB device: accumulation fires."""
    device = DeviceInfo(index=0, name="NVIDIA A100", kind="cuda", total_memory_bytes=40 * 2**30,
                        compute_capability=(8, 0))
    steps = pd.DataFrame({"step": range(8), "phase": "active", "wall_ms": 220.0, "dataloader_ms": 0.0,
                          "mem_allocated_bytes": 10.0 * 2**30, "mem_peak_bytes": 38.0 * 2**30,
                          "mem_reserved_bytes": 38.0 * 2**30})
    return Report.from_live(traces["a100_nccl_distributed"].table, _record(device, steps, cell), None)


def only(report: Report, kind: str) -> Suggestion:
    found = [s for s in report.suggestions if s.kind == kind]
    assert len(found) == 1, [s.kind for s in report.suggestions]
    return found[0]


def run_cell(cell: str) -> dict:
    """``cell`` run as the user's notebook would, on CPU: its loader, model and optimizer defined
    in earlier cells under the names it uses; ``steps`` counts the optimizer's steps."""
    torch.manual_seed(0)
    train_ds = TensorDataset(torch.randn(32, 6), torch.randint(0, 3, (32,)))
    net = nn.Linear(6, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    ns = {"torch": torch, "F": F, "DataLoader": DataLoader, "train_ds": train_ds, "net": net, "opt": opt,
          "train_dl": DataLoader(train_ds, batch_size=8), "batches": 0, "steps": 0}

    def count(*_):
        ns["steps"] += 1
    opt.register_step_post_hook(count)
    exec(cell.replace('"cuda"', '"cpu"'), ns)
    return ns


def test_the_cell_runs_as_it_is():
    ns = run_cell(CELL)
    assert ns["batches"] == ns["steps"] == 2 * BATCHES


# -- trace files: no cell, so no name the cell may lack ------------------------------------------------
@pytest.mark.parametrize("kind", ["amp", "conv"])
def test_trace_suggestions_run_in_an_empty_namespace(traces, monkeypatch, kind):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)  # the conv code sets it: restored after
    fired = [s for r in traces.values() for s in r.suggestions if s.kind == kind]
    assert fired  # the V100 traces fire both rules
    for s in fired:
        exec(s.code, {"torch": torch})  # NameError if it used a name of a cell it never saw
        assert "line" not in s.evidence  # no cell line to replace


def test_accumulation_without_a_cell_is_said_in_comments(traces):
    s = only(_near_limit(traces, None), "memory_near_limit")
    assert all(line.startswith("#") for line in s.code.splitlines())  # runs when pasted: nothing to name
    assert "#     batch_size=4,  # changed: was 8" in s.code  # the loader's own call, to edit by hand
    assert "(loss / 2).backward()" in s.code and "line" not in s.evidence


def test_conv_code_without_a_model_name_is_guarded(traces, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    s = only(_v100(traces, (7, 0), "for x in data:\n    pass\n"), "conv")  # the cell shows no model
    exec(s.code, {"torch": torch})  # no `model`: the guard skips it
    model = nn.Conv2d(3, 4, 3)
    ns = {"torch": torch, "model": model}
    exec(s.code, ns)
    assert ns["model"].weight.is_contiguous(memory_format=torch.channels_last)


# -- the cell's own names ---------------------------------------------------------------------------
def test_bf16_autocast_wraps_the_cells_loss_lines(traces):
    s = only(_v100(traces, (8, 0), CELL), "amp")
    assert (s.evidence["line"], s.evidence["end_line"]) == (5, 6)  # logits = net(xb); loss = ...
    assert s.evidence["line_source"] == "        logits = net(xb)\n        loss = F.cross_entropy(logits, yb)"
    assert s.detail.endswith("the code replaces lines 5-6 of the cell, as indented there")
    assert s.code.splitlines()[:4] == ["        import torch",  # the cell does not use the name: it may lack it
                                       "        with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16):",
                                       "            logits = net(xb)",
                                       "            loss = F.cross_entropy(logits, yb)"]
    _, cell = paste(CELL, s.code, s.evidence)
    ns = run_cell(cell)
    assert ns["logits"].dtype == torch.bfloat16  # the forward pass ran under autocast
    assert ns["steps"] == 2 * BATCHES


def test_fp16_autocast_scales_the_cells_loss_and_steps_its_optimizer(traces):
    s = only(_v100(traces, (7, 0), CELL), "amp")
    assert (s.evidence["line"], s.evidence["end_line"]) == (2, 9)  # the inner loop: the scaler goes before it
    code = s.code.splitlines()
    assert code[:2] == ["    import torch",
                        "    scaler = torch.amp.GradScaler(\"cuda\")  # fp16 needs loss scaling against underflow"]
    assert "        scaler.scale(loss).backward()" in code and "        scaler.step(opt)" in code
    _, cell = paste(CELL, s.code, s.evidence)
    ns = run_cell(cell)
    assert ns["logits"].dtype == torch.float16 and ns["scaler"].is_enabled()  # CPU autocast and scaling ran
    assert ns["batches"] == 2 * BATCHES and ns["steps"] >= 2 * BATCHES - 1  # a first inf/nan step is skipped


def test_accumulation_edits_the_cells_loop(traces):
    s = only(_near_limit(traces, CELL), "memory_near_limit")
    assert (s.evidence["line"], s.evidence["end_line"]) == (2, 9)
    code = s.code.splitlines()
    assert "    for i, (xb, yb) in enumerate(train_dl):" in code
    assert "        (loss / accumulation).backward()" in code
    _, cell = paste(CELL, s.code, s.evidence)
    ns = run_cell(cell)
    assert ns["train_dl"].batch_size == 4  # half the micro-batch: twice the batches
    assert ns["batches"] == 2 * 2 * BATCHES and ns["steps"] == 2 * BATCHES  # one step per 2 micro-batches


@pytest.mark.parametrize("header, counter", [
    ("for step, (xb, yb) in enumerate(train_dl):", "step"),  # the cell's own counter
    ("for step, (xb, yb) in enumerate(train_dl, 1):", "i"),  # counting from 1: a counter of its own
])
def test_accumulation_counts_with_the_loops_counter(header, counter):
    cell = CELL.replace("for xb, yb in train_dl:", header)
    loader = ("train_dl", "from torch.utils.data import DataLoader\ntrain_dl = DataLoader(train_ds, batch_size=4)")
    code, lines = accumulation_code(training_step(cell), loader, 2)
    assert f"        if ({counter} + 1) % accumulation == 0:" in code.splitlines()
    ns = run_cell(paste(cell, code, lines)[1])
    assert ns["batches"] == 2 * 2 * BATCHES and ns["steps"] == 2 * BATCHES


def test_conv_code_uses_the_cells_model(traces, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    s = only(_v100(traces, (7, 0), CELL), "conv")
    assert "net = net.to(memory_format=torch.channels_last)" in s.code
    ns = {"torch": torch, "net": nn.Conv2d(3, 4, 3)}
    exec(s.code, ns)
    assert ns["net"].weight.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("cell", [
    "train_step(model, batch)\n",  # the step is in a function of another cell
    "for x, y in dl: loss = lf(m(x), y); loss.backward(); opt.step()\n",  # statements share a line
    "while True:\n    loss = lf(m(x), y)\n    loss.backward()\n    opt.step()\n    opt.zero_grad()\n",  # no for loop
    "for x, y in dl:\n    lf(m(x), y).backward()\n    opt.step()\n",  # no name for the loss
])
def test_a_step_the_cell_does_not_show_is_given_in_comments(cell):
    step = training_step(cell)
    for code, lines in [autocast_code(step, "float16"), accumulation_code(step, None, 2)]:
        assert all(line.startswith("#") for line in code.splitlines()) and lines == {}
