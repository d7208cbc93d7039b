"""The flame graph's tree: its totals are the operator table's, it nests, and its frame and module
levels come from --stack and --modules."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from IPython.utils.capture import capture_output

from conftest import GPU_TRACE_FILES, TRAIN_CELL, shared_report

LEVELS = {"root": 0, "frame": 1, "module": 2, "operator": 3, "kernel": 4}


def check_tree(nodes: pd.DataFrame) -> None:
    """Parents come first, depths count from the root, and no node's children hold more time than it."""
    parent = nodes["parent"].to_numpy()
    assert parent[0] == -1 and (parent[1:] >= 0).all() and (parent[1:] < nodes["id"].to_numpy()[1:]).all()
    assert (nodes["depth"].to_numpy()[1:] == nodes["depth"].to_numpy()[parent[1:]] + 1).all()
    for metric in ("host_us", "device_us"):
        below = nodes[parent >= 0].groupby("parent")[metric].sum()
        own = nodes[metric].to_numpy()[below.index.to_numpy()]
        assert (below.to_numpy() <= own + 1e-6 * np.maximum(own, 1)).all(), metric
    # Top to bottom: frames, then modules, then operators, then kernels.
    level = nodes["kind"].map(LEVELS).to_numpy()
    assert (level[1:] >= level[parent[1:]]).all()


def check_totals(report) -> None:
    """The root's host and device time are the operator table's self times summed."""
    root = report.flame.iloc[0]
    ops = report.operators
    assert root["host_us"] == pytest.approx(ops["host_self_us"].sum(), rel=1e-9)
    assert root["device_us"] == pytest.approx(ops["device_self_us"].sum(), rel=1e-9)


@pytest.mark.parametrize("name", GPU_TRACE_FILES)
def test_real_gpu_traces_add_up_to_the_operator_table(name):
    report = shared_report(name)
    nodes = report.flame
    check_totals(report)
    check_tree(nodes)
    assert nodes.iloc[0]["device_us"] > 0
    # Device time is the device work's (kernels, copies, memsets), drawn in the bottom boxes.
    launched = nodes[nodes["kind"] == "kernel"]
    assert launched["device_us"].sum() == pytest.approx(nodes.iloc[0]["device_us"])
    assert set(report.kernels.nlargest(5, "total_us")["name"]) <= set(launched["name"])
    # No --stack or --modules in these traces: no frame or module level.
    assert set(nodes["kind"]) == {"root", "operator", "kernel"}


def test_an_operator_box_holds_the_device_time_of_its_calls():
    report = shared_report("a100_train")
    nodes = report.flame
    ops = report.operators.set_index("name")
    # aten::conv2d is never called from another operator: its boxes hold all its calls.
    top = nodes[(nodes["depth"] == 1) & (nodes["kind"] == "operator")]
    name = top.sort_values("device_us").iloc[-1]["name"]
    assert (nodes["name"] == name).sum() == 1
    assert top.set_index("name").loc[name, "device_us"] == pytest.approx(ops.loc[name, "device_total_us"])


@pytest.fixture(scope="module")
def runs(ip):
    """One small training loop profiled three ways: plain, --modules, --stack --modules."""
    ip.run_cell("""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(96, 20), torch.randint(0, 4, (96,))), batch_size=8)
""").raise_error()
    out = {}
    for key, flags in (("plain", ""), ("modules", "--modules"), ("both", "--stack --modules")):
        with capture_output():
            ip.run_cell_magic("torchprofile", f"{flags} -q -o flame_{key}", TRAIN_CELL)
        out[key] = ip.user_ns[f"flame_{key}"]
    return out


def test_a_live_run_with_stack_and_modules_adds_up_and_nests(runs):
    report = runs["both"]
    nodes = report.flame
    check_totals(report)
    check_tree(nodes)
    frames = nodes[nodes["kind"] == "frame"]
    # The cell's own frame is the top of the time the cell ran.
    assert frames["name"].str.startswith(f"{report.cell_filename}(").any()
    modules = nodes[nodes["kind"] == "module"]
    assert {"model (Sequential)", "0 (Linear)", "2 (Linear)"} <= set(modules["name"])
    linear = modules[modules["name"] == "0 (Linear)"].iloc[0]
    assert nodes.loc[linear["parent"], "name"] == "model (Sequential)"
    # The modules sit under the cell's frames.
    assert (nodes.loc[modules["parent"], "kind"].isin(["frame", "module"])).all()
    # The forward host time of a module is that of the operators inside it, which its range holds.
    forward = report.modules.set_index("module")
    assert linear["host_us"] <= forward.loc["model.0", "forward_host_us"]
    assert linear["host_us"] > 0


def test_frames_and_modules_appear_only_with_their_flags(runs):
    assert set(runs["plain"].flame["kind"]) == {"root", "operator"}
    assert set(runs["modules"].flame["kind"]) == {"root", "module", "operator"}
    check_totals(runs["plain"])
    check_totals(runs["modules"])
