"""report.lines: the time of a profiled cell's torch ops, per line of the cell (--stack).

Each cell runs in the real IPython shell under %%torchprofile --stack, with one
line made expensive on purpose (a large matmul), so the expected line is known.
"""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from nbprofiler.analysis.lines import LINE_COLUMNS, line_at
from nbprofiler.capture.lines import LineRecorder
from nbprofiler.records import NOT_IN_CELL, LineMarks

SETUP = """
import torch, torch.nn as nn
torch.manual_seed(0)
big = torch.randn(384, 384)
small = torch.randn(8, 8)
def heavy(x):          # defined in an earlier cell
    return x @ x @ x
"""
FLAGS = "--stack --wait 0 --warmup 0 --active 3 -n 3 -q -o lines_run"


# One intra-op thread: on two shared cores, OpenMP threads that wait on each other
# make op times swing by 100x, which would blur the comparisons these tests make.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture()
def lshell(ip):
    ip.run_cell(SETUP).raise_error()
    return ip


def profile_lines(shell, cell: str):
    with capture_output():
        shell.run_cell_magic("torchprofile", FLAGS, textwrap.dedent(cell).strip("\n"))
    return shell.user_ns["lines_run"]


def test_the_expensive_line_is_line_3(lshell):
    report = profile_lines(lshell, """
        a = small + 1
        b = small * 2
        c = big @ big @ big
        d = small.relu()
    """)
    lines = report.lines
    assert list(lines.columns) == LINE_COLUMNS
    assert lines["line"].iloc[0] == 3 and lines["source"].iloc[0] == "c = big @ big @ big"
    assert set(lines["line"]) == {1, 2, 3, 4}  # every line ran an op, each on its own row
    assert lines["host_us"].iloc[0] > 0.6 * lines["host_us"].sum()
    assert (lines["device_us"] == 0).all()  # a CPU run
    # The lines hold the cell's top-level ops, nothing twice: at most the host op time of the steps.
    tree = report.operator_tree
    assert lines["host_us"].sum() <= tree.dur[tree.parent < 0].sum() + 1e-6
    # The trace's clock offset is read once, exactly (an integer of ~1.7e18 ns), with the trace:
    # picking an operator in the explorer does not parse the JSON again.
    import json

    base = json.loads(report.raw_trace)["baseTimeNanoseconds"]
    assert isinstance(base, int) and report.table.meta.base_time_ns == base


def test_a_record_function_block_over_several_lines_is_split_by_line(lshell):
    report = profile_lines(lshell, """
        with torch.profiler.record_function("block"):
            a = small + 1
            c = big @ big @ big
        d = small.relu()
    """)
    lines = report.lines.set_index("line")
    assert lines.index[0] == 3  # the matmul's own line, not the line that opened the block
    block = report.operators.set_index("name").loc["block"]
    assert lines.loc[1, "host_us"] == pytest.approx(block["host_self_us"], rel=1e-6)  # only its own time
    tree = report.operator_tree
    assert lines["host_us"].sum() == pytest.approx(tree.dur[tree.parent < 0].sum(), rel=1e-6)  # all of it, once


def test_a_loop_body_adds_up_over_its_iterations(lshell):
    report = profile_lines(lshell, """
        total = 0
        for i in range(4):
            y = big @ big
            z = small + i
        w = small.sum()
    """)
    lines = report.lines.set_index("line")
    assert lines.index[0] == 3
    matmuls = report.operators.set_index("name").loc["aten::mm", "calls"]
    assert matmuls == 4 * 3  # four iterations, three profiled steps
    assert lines.loc[3, "host_us"] > 5 * lines.loc[4, "host_us"]


def test_a_function_from_an_earlier_cell_counts_for_the_calling_line(lshell):
    report = profile_lines(lshell, """
        a = small + 1
        r = heavy(big)
        b = small * 2
    """)
    lines = report.lines
    assert lines["line"].iloc[0] == 2 and lines["source"].iloc[0] == "r = heavy(big)"


def test_a_function_defined_in_this_cell_counts_for_its_own_line(lshell):
    report = profile_lines(lshell, """
        def step(x):
            x = x + 1
            return x @ x
        out = step(big)
        tail = small * 3
    """)
    lines = report.lines.set_index("line")
    assert lines.index[0] == 3  # the matmul inside step(), the deepest line of this cell
    assert 2 in lines.index and 5 in lines.index
    assert 4 not in lines.index  # the call line itself ran no op outside step()


def test_model_code_in_a_module_counts_for_the_calling_line(lshell, tmp_path, monkeypatch):
    (tmp_path / "nbp_lines_model.py").write_text(textwrap.dedent("""
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(384, 384), nn.ReLU(), nn.Linear(384, 384))

            def forward(self, x):
                return self.body(x)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    lshell.run_cell("from nbp_lines_model import Model\nmodel = Model()").raise_error()
    try:
        report = profile_lines(lshell, """
            x = torch.randn(256, 384)
            y = model(x)
            s = y.sum()
        """)
    finally:
        sys.modules.pop("nbp_lines_model", None)
    lines = report.lines
    assert lines["line"].iloc[0] == 2 and lines["source"].iloc[0] == "y = model(x)"


def test_without_stack_there_are_no_lines(shell):
    from conftest import TRAIN_CELL

    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o plain", TRAIN_CELL)
    report = shell.user_ns["plain"]
    assert report.run.line_marks is None
    assert report.lines.empty and list(report.lines.columns) == LINE_COLUMNS


def test_line_at_reads_the_marks_as_a_step_function():
    marks = LineMarks(times_ns=np.array([1_000_000, 2_000_000, 5_000_000], dtype=np.int64),
                      lines=np.array([3, 7, NOT_IN_CELL], dtype=np.int32))
    base = 500_000  # trace µs are counted from here
    ts_us = np.array([100.0, 500.0, 1499.0, 1500.0, 4499.0, 4500.0, 9000.0])
    assert line_at(marks, ts_us, base).tolist() == [NOT_IN_CELL, 3, 3, 7, 7, NOT_IN_CELL, NOT_IN_CELL]


def test_the_recorder_follows_only_its_file_and_yields_to_another_tracer():
    source = "def f():\n    return 1\nx = f()\ny = 2\n"
    code = compile(source, "<nbp-test-cell>", "exec")
    rec = LineRecorder("<nbp-test-cell>")
    rec.start()
    try:
        exec(code, {})
        textwrap.dedent("library code: not recorded")
    finally:
        rec.stop()
    assert rec.marks().lines.tolist() == [1, 3, 2, 3, 4, NOT_IN_CELL]
    previous = sys.gettrace()
    sys.settrace(lambda *a: None)
    try:
        busy = LineRecorder("<nbp-test-cell>")
        busy.start()
        busy.stop()
    finally:
        sys.settrace(previous)
    assert busy.skipped and len(busy.marks()) == 0
