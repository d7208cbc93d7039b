"""report.modules: time per nn.Module, forward and backward, host and device, as a tree."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn

import nbprofiler
from nbprofiler.analysis.modules import MODULE_COLUMNS
from nbprofiler.report import Report
from nbprofiler.trace.parser import parse_trace


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(Block(), Block())
        self.head = nn.Linear(64, 10)
        self.big = nn.Linear(64, 4096)  # the costly one, forward and backward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(x)) + self.big(x).sum()


# One intra-op thread: on two shared cores, OpenMP threads that wait on each other
# make op times swing by 100x, which would blur the comparisons these tests make.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def nested() -> Report:
    torch.manual_seed(0)
    model, x = Net(), torch.randn(128, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with nbprofiler.profile(modules=True, wait=0, warmup=1, active=2) as run:
        for _ in range(3):
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run.report


def test_the_tree_names_every_module_by_its_path(nested):
    mods = nested.modules
    assert list(mods.columns) == MODULE_COLUMNS
    assert list(mods["module"]) == [  # depth first, each parent before its children, in call order
        "Net_0",
        "Net_0.Sequential_0",
        "Net_0.Sequential_0.Block_0", "Net_0.Sequential_0.Block_0.Linear_0", "Net_0.Sequential_0.Block_0.ReLU_0",
        "Net_0.Sequential_0.Block_1", "Net_0.Sequential_0.Block_1.Linear_1", "Net_0.Sequential_0.Block_1.ReLU_1",
        "Net_0.Linear_2",
        "Net_0.Linear_3",
    ]
    row = mods.set_index("module")
    assert row.loc["Net_0", "parent"] == "" and row.loc["Net_0.Linear_3", "parent"] == "Net_0"
    assert row.loc["Net_0.Sequential_0.Block_1.ReLU_1", "depth"] == 3
    assert row.loc["Net_0.Sequential_0.Block_1.ReLU_1", "type"] == "ReLU"
    assert (mods["calls"] == 2).all()  # two profiled steps, one call each


def test_forward_and_backward_time_go_to_the_right_modules(nested):
    row = nested.modules.set_index("module")
    big, head = row.loc["Net_0.Linear_3"], row.loc["Net_0.Linear_2"]
    assert big["forward_host_us"] > head["forward_host_us"]
    assert big["backward_host_us"] > 3 * head["backward_host_us"] > 0
    # Every module with a gradient graph has backward time, also the parameterless ReLU.
    assert (row["backward_host_us"] > 0).all()
    # A parent includes its children, forward and backward.
    for parent in ("Net_0", "Net_0.Sequential_0", "Net_0.Sequential_0.Block_0"):
        kids = row[row["parent"] == parent]
        assert row.loc[parent, "forward_host_us"] >= kids["forward_host_us"].sum()
        assert row.loc[parent, "backward_host_us"] >= kids["backward_host_us"].sum() - 1e-6
    # The root's backward is the backward pass of the model's autograd nodes, within the whole backward.
    evaluate = nested.operators[nested.operators["name"].str.startswith("autograd::engine::evaluate_function")]
    assert row.loc["Net_0", "backward_host_us"] <= evaluate["host_total_us"].sum() + 1e-6


def test_no_module_data_without_the_flag(shell):
    from conftest import TRAIN_CELL
    from IPython.utils.capture import capture_output

    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o plain", TRAIN_CELL)
    mods = shell.user_ns["plain"].modules
    assert mods.empty and list(mods.columns) == MODULE_COLUMNS


def _event(cat: str, name: str, ts: float, dur: float, tid: int = 1, pid: int = 1, **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


def synthetic_module_trace() -> Report:
    """A GPU step by hand: Net_0 > (Linear_0, ReLU_0), their kernels, and their backward on thread 2."""
    events = [
        _event("user_annotation", "ProfilerStep#1", 0, 1000),
        _event("python_function", "nn.Module: Net_0", 10, 500),
        _event("python_function", "nn.Module: Linear_0", 20, 200),
        _event("cpu_op", "aten::linear", 30, 150, **{"External id": 1, "Sequence number": 5, "Fwd thread id": 0}),
        _event("cpu_op", "aten::addmm", 40, 100, **{"External id": 2, "Sequence number": 6, "Fwd thread id": 0}),
        _event("python_function", "nn.Module: ReLU_0", 250, 100),
        _event("cpu_op", "aten::relu", 260, 50, **{"External id": 3, "Sequence number": 7, "Fwd thread id": 0}),
        _event("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", 600, 40, tid=2,
               **{"External id": 4, "Sequence number": 7, "Fwd thread id": 1}),
        _event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 700, 80, tid=2,
               **{"External id": 5, "Sequence number": 6, "Fwd thread id": 1}),
        _event("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 800, 20, tid=2,
               **{"External id": 6}),
    ]
    for ext, ts, dur in ((2, 150, 30), (3, 320, 10), (4, 650, 12), (5, 760, 60), (6, 830, 5)):
        events.append(_event("kernel", f"kernel_{ext}", ts, dur, pid=0, tid=7,
                             **{"External id": ext, "device": 0, "stream": 7, "correlation": 100 + ext}))
    data = json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU"}],
                       "traceEvents": events}).encode()
    return Report.from_trace(parse_trace(data, source="synthetic"), "synthetic")


def test_device_time_through_launches_and_sequence_numbers():
    row = synthetic_module_trace().modules.set_index("module")
    assert list(row.index) == ["Net_0", "Net_0.Linear_0", "Net_0.ReLU_0"]
    assert row.loc["Net_0.Linear_0", "forward_device_us"] == pytest.approx(30)
    assert row.loc["Net_0.ReLU_0", "forward_device_us"] == pytest.approx(10)
    assert row.loc["Net_0.Linear_0", "backward_device_us"] == pytest.approx(60)  # seq 6 -> addmm in Linear_0
    assert row.loc["Net_0.ReLU_0", "backward_device_us"] == pytest.approx(12)
    assert row.loc["Net_0.Linear_0", "backward_host_us"] == pytest.approx(80)
    # The root sums its children; AccumulateGrad (no forward op) belongs to no module.
    assert row.loc["Net_0", "forward_device_us"] == pytest.approx(40)
    assert row.loc["Net_0", "backward_device_us"] == pytest.approx(72)
    assert row.loc["Net_0", "backward_host_us"] == pytest.approx(120)
    assert row.loc["Net_0", "forward_host_us"] == pytest.approx(500)
