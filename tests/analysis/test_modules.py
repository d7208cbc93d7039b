"""report.modules: time per nn.Module, forward and backward, host and device, as a tree."""
from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
import torch
from IPython.utils.capture import capture_output
from torch import nn

import nbprofiler
from conftest import assert_nothing_left
from nbprofiler.analysis.modules import MODULE_COLUMNS
from nbprofiler.trace.module_names import RANGE_PREFIX, range_name
from nbprofiler.report import Report
from nbprofiler.trace.parser import parse_trace
from nbprofiler.trace.table import Kind


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


class Flaky(nn.Module):
    """Raises ``error`` on its ``fail_at``-th call (counting from 1)."""

    def __init__(self, error: BaseException, fail_at: int) -> None:
        super().__init__()
        self.fc, self.error, self.fail_at, self.calls = nn.Linear(8, 8), error, fail_at, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        y = self.fc(x)
        if self.calls == self.fail_at:
            raise self.error
        return y


OUTSIDE = nn.Tanh()  # called inside Net but none of its submodules


class WithOutside(Net):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + OUTSIDE(x).sum()


@pytest.fixture(scope="module")
def nested(ip) -> tuple[Report, Net]:
    """``model`` in a real shell's namespace, trained for 3 steps, the last 2 profiled."""
    torch.manual_seed(0)
    model = WithOutside()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ip.user_ns.update(model=model, x=torch.randn(128, 64), opt=torch.optim.SGD(model.parameters(), lr=0.01))
    try:
        with capture_output():
            ip.run_cell_magic("torchprofile", "--modules -q -o modules_run --wait 0 --warmup 1 --active 2", STEPS_CELL)
    finally:
        torch.set_num_threads(threads)
    return ip.user_ns["modules_run"], model


STEPS_CELL = """
for _ in range(3):
    loss = model(x).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_modules_are_named_as_named_modules_names_them(nested):
    report, model = nested
    mods = report.modules
    assert list(mods.columns) == MODULE_COLUMNS
    qualified = {sub: "model" + (f".{name}" if name else "") for name, sub in model.named_modules()}
    # Depth first, each parent before its children, in call order (here the order they were
    # registered); the Tanh that is no submodule is named by its caller and its class.
    assert list(mods["module"]) == [*qualified.values(), "model.Tanh"]
    kinds = {name: type(sub).__name__ for sub, name in qualified.items()} | {"model.Tanh": "Tanh"}
    assert dict(zip(mods["module"], mods["type"])) == kinds
    assert (mods["parent"] == [m.rpartition(".")[0] for m in mods["module"]]).all()
    assert (mods["depth"] == mods["module"].str.count(r"\.")).all()
    assert (mods["calls"] == 2).all()  # two profiled steps, one call each


def test_forward_and_backward_time_go_to_the_right_modules(nested):
    row = nested[0].modules.set_index("module")
    big, head = row.loc["model.big"], row.loc["model.head"]
    assert (row["forward_host_us"] > 0).all()
    assert big["forward_host_us"] > head["forward_host_us"]
    assert big["backward_host_us"] > 3 * head["backward_host_us"] > 0
    # Every module with a gradient graph has backward time, also the parameterless ReLU.
    assert (row["backward_host_us"] > 0).all()
    # A parent includes its children, forward and backward.
    for parent in row.index:
        kids = row[row["parent"] == parent]
        assert row.loc[parent, "forward_host_us"] >= kids["forward_host_us"].sum()
        assert row.loc[parent, "backward_host_us"] >= kids["backward_host_us"].sum() - 1e-6
    # The root's backward is the backward pass of the model's autograd nodes, within the whole backward.
    ops = nested[0].operators
    evaluate = ops[ops["name"].str.startswith("autograd::engine::evaluate_function")]
    assert row.loc["model", "backward_host_us"] <= evaluate["host_total_us"].sum() + 1e-6


def test_module_ranges_need_no_python_tracer_and_are_no_operators(nested):
    report = nested[0]
    assert not (report.table.kind == Kind.PYTHON_FUNCTION).any()  # --modules alone leaves with_stack off
    assert (report.table.names == range_name("model.enc.0.fc", "Linear")).any()
    assert not report.operators["name"].str.startswith(RANGE_PREFIX).any()


def test_no_module_data_without_the_flag(shell):
    from conftest import TRAIN_CELL

    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o plain", TRAIN_CELL)
    mods = shell.user_ns["plain"].modules
    assert mods.empty and list(mods.columns) == MODULE_COLUMNS


def test_a_forward_that_raises_closes_its_ranges():
    model = nn.Sequential(nn.Linear(8, 8), Flaky(ValueError("bad batch"), fail_at=2))
    x = torch.randn(4, 8)
    with nbprofiler.profile(modules=True, wait=0, warmup=0, active=3, step_on="manual") as run:
        for _ in range(3):
            try:
                model(x)
            except ValueError:
                assert run.hooks.module_ranges.open_calls() == 0  # closed as the error left each module
            nbprofiler.step()
    assert_nothing_left([model])
    row = run.report.modules.set_index("module")
    # No name from the Python namespace: the root is its class. Each call, the failed one too, is a range.
    assert list(row.index) == ["Sequential", "Sequential.0", "Sequential.1", "Sequential.1.fc"]
    assert (row["calls"] == 3).all()


@pytest.mark.parametrize("error", [ValueError("bad batch"), KeyboardInterrupt()])
def test_a_run_stopped_inside_a_module_leaves_nothing(error):
    model = nn.Sequential(Flaky(error, fail_at=1))
    with pytest.raises(type(error)):
        with nbprofiler.profile(modules=True, wait=0, warmup=0, active=1) as run:
            model(torch.randn(4, 8))
    # torch runs no hook for a KeyboardInterrupt: the run's end closes the ranges left open.
    assert run.hooks.module_ranges.open_calls() == 0
    assert_nothing_left([model])
    assert run.report is not None


def test_a_compiled_model_runs_and_is_one_module():
    """Dynamo traces the global module hooks with the model; they must not fail the cell.
    The compiled model is one range (its torch.compile wrapper, called eagerly), the
    modules around it are recorded as in an eager run."""
    torch.manual_seed(0)
    net, head = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), nn.Linear(4, 2)
    x = torch.randn(4, 8)
    expected = head(net(x))
    compiled = torch.compile(net, backend="eager")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with nbprofiler.profile(modules=True, wait=0, warmup=1, active=2, step_on="manual") as run:
                for _ in range(3):
                    y = head(compiled(x))
                    nbprofiler.step()
            silenced = [f for f in warnings.filters if f[1] is not None and "global hooks" in f[1].pattern]
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(y, expected)
    assert_nothing_left([net, head])
    # torch's warning about global hooks speaks of nbprofiler's: not shown, and not silenced after the run.
    assert not [w for w in caught if "global hooks" in str(w.message)] and not silenced
    row = run.report.modules.set_index("module")
    assert list(row.index) == ["OptimizedModule", "Linear"] and (row["calls"] == 2).all()
    assert list(row["type"]) == ["OptimizedModule", "Linear"]
    assert (row["forward_host_us"] > 0).all()


class Probe(nn.Module):
    """Returns how many global module hooks this process has (the run installs two)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import torch.nn.modules.module as module_hooks

        return torch.tensor(len(module_hooks._global_forward_pre_hooks) + len(module_hooks._global_forward_hooks))


PROBE = Probe()


class ProbeData(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> torch.Tensor:
        return PROBE(torch.zeros(1))


def test_dataloader_workers_record_no_module_ranges():
    loader = torch.utils.data.DataLoader(ProbeData(), batch_size=1, num_workers=1)
    with nbprofiler.profile(modules=True, wait=0, warmup=0, active=2):
        assert int(PROBE(torch.zeros(1))) == 2  # in the run's process: the pre- and post-forward hooks
        # A forked worker is not the run: the fork took the hooks away.
        assert [int(b) for b in loader] == [0, 0]


def _event(cat: str, name: str, ts: float, dur: float, tid: int = 1, pid: int = 1, **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


# How a trace names three nested module ranges: torch's Python tracer (traces recorded
# elsewhere), or nbprofiler's ranges (an attribute name may hold " (").
TRACER = ("python_function", ["nn.Module: Net_0", "nn.Module: Linear_0", "nn.Module: ReLU_0"])
RANGES = ("user_annotation", [range_name("net", "Net"), range_name("net.fc (v2)", "Linear"),
                              range_name("net.act", "ReLU")])


def synthetic_module_trace(*module_ranges: tuple[str, list[str]]) -> Report:
    """A GPU step by hand: net > (fc, act), their kernels, and their backward on thread 2,
    with the module ranges named each way given."""
    events = [_event("user_annotation", "ProfilerStep#1", 0, 1000)]
    for cat, (net, fc, act) in module_ranges:
        events += [_event(cat, net, 10, 500), _event(cat, fc, 20, 200), _event(cat, act, 250, 100)]
    events += [
        _event("cpu_op", "aten::linear", 30, 150, **{"External id": 1, "Sequence number": 5, "Fwd thread id": 0}),
        _event("cpu_op", "aten::addmm", 40, 100, **{"External id": 2, "Sequence number": 6, "Fwd thread id": 0}),
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


@pytest.mark.parametrize(("module_ranges", "paths"), [
    ([TRACER], ["Net_0", "Net_0.Linear_0", "Net_0.ReLU_0"]),
    ([RANGES], ["net", "net.fc (v2)", "net.act"]),
    ([TRACER, RANGES], ["net", "net.fc (v2)", "net.act"]),  # --stack --modules: nbprofiler's ranges win
], ids=["tracer", "module ranges", "both"])
def test_device_time_through_launches_and_sequence_numbers(module_ranges, paths):
    mods = synthetic_module_trace(*module_ranges).modules
    net, fc, act = paths
    assert list(mods["module"]) == paths
    assert list(mods["type"]) == ["Net", "Linear", "ReLU"]
    assert list(mods["parent"]) == ["", net, net] and list(mods["depth"]) == [0, 1, 1]
    row = mods.set_index("module")
    assert row.loc[fc, "forward_device_us"] == pytest.approx(30)
    assert row.loc[act, "forward_device_us"] == pytest.approx(10)
    assert row.loc[fc, "backward_device_us"] == pytest.approx(60)  # seq 6 -> addmm in fc
    assert row.loc[act, "backward_device_us"] == pytest.approx(12)
    assert row.loc[fc, "backward_host_us"] == pytest.approx(80)
    # The root sums its children; AccumulateGrad (no forward op) belongs to no module.
    assert row.loc[net, "forward_device_us"] == pytest.approx(40)
    assert row.loc[net, "backward_device_us"] == pytest.approx(72)
    assert row.loc[net, "backward_host_us"] == pytest.approx(120)
    assert row.loc[net, "forward_host_us"] == pytest.approx(500)


def test_module_ranges_change_no_operator_or_phase_figure():
    """nbprofiler's ranges wrap operators: counted as operators they would count time twice."""
    tracer, ranges = synthetic_module_trace(TRACER), synthetic_module_trace(RANGES)
    for table in ("operators", "phases", "breakdown"):
        pd.testing.assert_frame_equal(getattr(ranges, table), getattr(tracer, table))
