"""The operator table against independent references: the TensorBoard profiler plugin's
operator view on the shared GPU traces, and torch's ``key_averages()`` on a live CPU run.

The plugin reference is a small re-implementation of the definitions of the plugin's last
source (pytorch/kineto, ``tb_plugin/torch_tb_profiler/profiler``: ``trace.py``, ``event_parser.py``,
``node.py``, ``op_tree.py``, ``op_agg.py``). It reads the raw trace JSON, not nbprofiler's
parser, and builds the operator tree per thread itself:

- tree nodes are the operator ranges (category ``Operator``/``cpu_op``) and, of the user
  annotations, only ``ProfilerStep#``, data loading, ``Optimizer.step`` and the NCCL/Gloo
  collectives; other annotations (``## forward ##``) are not in the tree at all;
- runtime calls belong to the operator whose External id they carry, and device activities
  (kernels, memcpy, memset) to the runtime call with their correlation id;
- an operator's host self time is its duration minus its children's and minus its runtime
  calls'; its device self time is the device time of its runtime calls' activities, and its
  device total adds its children's;
- a node whose only child has its name is merged with it: the child's children and runtime
  calls become the node's (``remove_dup_nodes``, after torch's ``EventList._remove_dup_nodes``);
- the table shows operators (not steps, data loading, ``Optimizer.*`` or
  ``DataParallel.forward``), over the whole trace.

Two deliberate differences from the plugin's code, both where it loses precision or data:
durations are the recorded ``dur`` (the plugin subtracts timestamps, which near 1.7e15 µs
are only good to 0.25 µs), and a range that starts inside another but ends a fraction of a
microsecond after it is nested in it (the plugin logs an error and drops the range).
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import nbprofiler
from conftest import shared_raw_events, shared_report

PLUGIN_TRACES = ["v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4", "v100_resnet_ns_timestamps"]
COLUMNS = ["calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"]
TOP = 20

OPERATOR_CATEGORIES = {"operator", "cpu_op"}
ANNOTATION_CATEGORIES = {"user_annotation", "gpu_user_annotation"}
RUNTIME_CATEGORIES = {"runtime", "cuda_runtime"}
DEVICE_CATEGORIES = {"kernel", "memcpy", "gpu_memcpy", "memset", "gpu_memset"}
COLLECTIVES = {f"{lib}:{op}" for lib in ("nccl", "gloo")
               for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")}


@dataclass
class Node:
    name: str
    category: str
    start: float
    end: float
    dur: float
    external_id: int | None
    shown: bool
    children: list[Node] = field(default_factory=list)
    runtimes: list[dict] = field(default_factory=list)


def _external_id(event: dict) -> int | None:
    args = event.get("args", {})
    return args["external id"] if "external id" in args else args.get("External id")


def _node(event: dict) -> Node | None:
    """The plugin's tree node for a host range, or None for a range it leaves out."""
    name, category = event["name"], event["cat"].lower()
    loader = (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")
              or name.startswith("enumerate(DataPipe)#"))
    special = name.startswith("ProfilerStep#") or loader or name.startswith("Optimizer.step")
    if category in ANNOTATION_CATEGORIES and not special and name not in COLLECTIVES:
        return None
    shown = (category in OPERATOR_CATEGORIES and not special and not name.startswith("Optimizer.")
             and name not in ("DataParallel.forward", "DistributedDataParallel.forward"))
    return Node(name, category, event["ts"], event["ts"] + event["dur"], event["dur"], _external_id(event), shown)


def _thread_roots(events: list[dict]) -> tuple[list[Node], dict[int, float]]:
    """The root of each thread's operator tree, and the device time per correlation id."""
    nodes_by_thread: dict[object, list[Node]] = defaultdict(list)
    runtimes_by_external_id: dict[int | None, list[dict]] = defaultdict(list)
    device_us: dict[int, float] = defaultdict(float)
    for event in events:
        category = event.get("cat", "").lower()
        if category in OPERATOR_CATEGORIES | ANNOTATION_CATEGORIES:
            node = _node(event)
            if node is not None:
                nodes_by_thread[event["tid"]].append(node)
        elif category in RUNTIME_CATEGORIES:
            runtimes_by_external_id[_external_id(event)].append(event)
        elif category in DEVICE_CATEGORIES:
            device_us[event["args"]["correlation"]] += event["dur"]
    roots = []
    for nodes in nodes_by_thread.values():
        for node in nodes:
            node.runtimes = runtimes_by_external_id.pop(node.external_id, [])
        root = Node("root", "", float("-inf"), float("inf"), 0.0, None, False)
        stack = [root]
        for node in sorted(nodes, key=lambda n: (n.start, -n.end)):
            # The innermost open range it starts in is its parent (even if it ends a little later).
            while node.start >= stack[-1].end:
                stack.pop()
            stack[-1].children.append(node)
            stack.append(node)
        roots.append(root)
    return roots, device_us


def _merge_repeats(node: Node) -> None:
    """Merge a node with its only child of the same name, as the plugin and torch do."""
    while (len(node.children) == 1 and node.children[0].name == node.name
           and node.category in OPERATOR_CATEGORIES and node.children[0].category in OPERATOR_CATEGORIES):
        node.children, node.runtimes = node.children[0].children, node.children[0].runtimes
    for child in node.children:
        _merge_repeats(child)


def _aggregate(node: Node, device_us: dict[int, float], rows: dict[str, dict[str, float]]) -> float:
    """Add the node and its subtree to ``rows``; return the node's device total."""
    device_self = sum(device_us.get(rt["args"]["correlation"], 0.0) for rt in node.runtimes)
    host_self = node.dur - sum(rt["dur"] for rt in node.runtimes) - sum(child.dur for child in node.children)
    device_total = device_self + sum(_aggregate(child, device_us, rows) for child in node.children)
    if node.shown:
        row = rows.setdefault(node.name, dict.fromkeys(COLUMNS, 0.0))
        row["calls"] += 1
        row["host_self_us"] += host_self
        row["host_total_us"] += node.dur
        row["device_self_us"] += device_self
        row["device_total_us"] += device_total
    return device_total


def plugin_operator_view(events: list[dict]) -> dict[str, dict[str, float]]:
    """The plugin's operator table by name: calls and times in µs, over the whole trace."""
    roots, device_us = _thread_roots(events)
    rows: dict[str, dict[str, float]] = {}
    for root in roots:
        _merge_repeats(root)
        _aggregate(root, device_us, rows)
    return rows


@pytest.mark.parametrize("name", PLUGIN_TRACES)
def test_top_operators_match_the_plugins_operator_view(name):
    """Every top operator's calls and times are the plugin's: host self time leaves out the
    CUDA runtime calls the operator made, and a same-name call inside a call counts once."""
    reference = plugin_operator_view(shared_raw_events(name))
    top = shared_report(name).operators.head(TOP)
    assert len(top) == TOP
    for row in top.itertuples():
        expected = reference.get(row.name)
        assert expected is not None, f"{row.name} is not an operator in the plugin's view"
        assert row.calls == expected["calls"], row.name
        for column in COLUMNS[1:]:
            assert getattr(row, column) == pytest.approx(expected[column], rel=0.01), (row.name, column)


# -- a live CPU run against torch's own key_averages -------------------------------------------

class Attention(nn.Module):
    """One self-attention layer with dropout: on CPU, its ``aten::mul`` and ``aten::div_``
    run inside calls of themselves, which key_averages counts once."""

    def __init__(self, width: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = (t.reshape(batch, length, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if self.training else 0.0)
        return self.out(y.transpose(1, 2).reshape(batch, length, width))


STEPS = 4


def _train_steps(steps: int, after_each=lambda: None) -> None:
    torch.manual_seed(0)
    model = Attention().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2, 8, 16)
    for _ in range(steps):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        after_each()


def _profiled_by_torch(tmp_path) -> tuple[dict, list[dict], str]:
    """A torch-profiled run: key_averages by name, the exported trace's ranges, and its path."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        _train_steps(STEPS)
    path = str(tmp_path / "attention.pt.trace.json.gz")
    prof.export_chrome_trace(path)
    events = [e for e in json.loads(gzip.open(path).read())["traceEvents"] if e.get("ph") == "X"]
    return {e.key: e for e in prof.key_averages()}, events, path


def _nested_names(averages: dict, events: list[dict]) -> list[str]:
    """Operators the trace has more ranges of than key_averages has calls: those that ran
    inside calls of themselves."""
    ranges: dict[str, int] = defaultdict(int)
    for e in events:
        ranges[e["name"]] += 1
    return sorted(name for name, avg in averages.items() if ranges[name] > avg.count)


def test_nested_same_name_calls_count_once_as_key_averages_does(tmp_path, one_torch_thread):
    """Same run, same events: calls, host total and host self time of every operator are
    key_averages', including those that run inside calls of themselves."""
    averages, events, path = _profiled_by_torch(tmp_path)
    nested = _nested_names(averages, events)
    assert {"aten::mul", "aten::div_"} <= set(nested)
    ops = nbprofiler.load(path).operators.set_index("name")
    for name, avg in averages.items():
        row = ops.loc[name]
        assert row["calls"] == avg.count, name
        assert row["host_total_us"] == pytest.approx(avg.cpu_time_total, rel=0.01, abs=0.05), name
        assert row["host_self_us"] == pytest.approx(avg.self_cpu_time_total, rel=0.01, abs=0.05), name


def test_live_profile_counts_nested_calls_like_key_averages(tmp_path, one_torch_thread):
    """Under nbprofiler.profile, an operator nested in a call of itself is one call, as many
    as key_averages counts for the same training steps in a torch-profiled run."""
    averages, events, _ = _profiled_by_torch(tmp_path)
    with nbprofiler.profile(active=STEPS, wait=0, warmup=0, step_on="manual") as run:
        _train_steps(STEPS, after_each=nbprofiler.step)
    ops = run.report.operators.set_index("name")
    for name in _nested_names(averages, events):
        assert ops.loc[name, "calls"] == averages[name].count, name
