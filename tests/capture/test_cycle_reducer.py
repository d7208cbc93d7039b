"""The ``--every`` summaries' thread: that it makes no summary while the loop runs (unless the
waiting traces pass their bound), and that no cycle is lost or reordered by waiting.

Real threads, and a real summary's cost stood in by CPU work of a known length.
"""
from __future__ import annotations

import time
from array import array

import pandas as pd
import pytest

from nbprofiler.capture import cycles
from nbprofiler.capture.cycles import CycleReducer, FinishedCycle
from nbprofiler.capture.sampler import SampledWindow
from nbprofiler.options import ProfileOptions
from nbprofiler.trace.table import DeviceInfo

OPTIONS = ProfileOptions(every=10, warmup=1, active=2)
CPU = DeviceInfo(0, "cpu", "cpu")
SUMMARY_CPU_S = 0.02


def _cycle(number: int, trace: bytes) -> FinishedCycle:
    first = (number - 1) * OPTIONS.cycle_length
    n = OPTIONS.cycle_length
    steps = SampledWindow(first, OPTIONS, {"host_ms": array("d", [1.0] * n), "dataloader_ms": array("d", [0.0] * n),
                                           "batches": array("q", [1] * n), "samples": array("d", [8.0] * n),
                                           "rss_bytes": array("d", [1e8] * n)})
    return FinishedCycle(number, trace, steps, CPU)


class CostlySummary:
    """A summary that computes for SUMMARY_CPU_S of its thread's CPU time, and notes when it ran."""

    def __init__(self) -> None:
        self.finished_at: list[float] = []

    def __call__(self, trace: bytes, steps: pd.DataFrame, options: ProfileOptions, device: DeviceInfo) -> dict:
        began = time.thread_time()
        while time.thread_time() - began < SUMMARY_CPU_S:
            pass
        self.finished_at.append(time.perf_counter())
        return {"trace_bytes": len(trace), "first": int(steps["step"].iloc[0])}


def test_while_the_loop_runs_no_summary_is_made_and_all_are_made_in_order_as_it_ends():
    """A summary holds the GIL for its whole length: while cycles keep coming (and their traces are
    under the bound), none is made; as the cell ends, every one is, each from its own trace."""
    summary = CostlySummary()
    reducer = CycleReducer(summary)
    reducer.load_from(None)
    traces = [bytes([n]) * (1000 + n) for n in range(1, 21)]
    for number, trace in enumerate(traces, 1):
        reducer.add(_cycle(number, trace))
        time.sleep(0.01)
    ended = time.perf_counter()
    assert summary.finished_at == []
    table = reducer.table()
    assert table is not None
    assert all(t > ended for t in summary.finished_at) and len(summary.finished_at) == 20
    assert list(table["cycle"]) == list(range(1, 21))  # none lost, in the order they ended
    assert list(table["trace_bytes"]) == [len(t) for t in traces]  # each its own trace, decompressed whole
    assert list(table["first"]) == list(table["first_step"]) == [(n - 1) * 10 for n in range(1, 21)]


def test_traces_waiting_past_their_bound_are_reduced_while_the_loop_runs(monkeypatch):
    """However long the run, waiting traces never hold more than WAITING_BYTES compressed."""
    monkeypatch.setattr(cycles, "WAITING_BYTES", 1)
    summary = CostlySummary()
    reducer = CycleReducer(summary)
    reducer.load_from(None)
    for number in range(1, 6):
        reducer.add(_cycle(number, b"x" * 100))
    deadline = time.perf_counter() + 60
    while len(summary.finished_at) < 4 and time.perf_counter() < deadline:
        time.sleep(0.01)
    # Each trace past the first waiting one is over the bound: all but the last are reduced before the end.
    assert len(summary.finished_at) >= 4
    table = reducer.table()
    assert table is not None and list(table["cycle"]) == [1, 2, 3, 4, 5]


def test_a_failing_summary_is_its_cycles_problem_and_the_others_are_made():
    def summarize(trace: bytes, steps: pd.DataFrame, options: ProfileOptions, device: DeviceInfo) -> dict:
        if trace == b"bad":
            raise ValueError("not a trace")
        return {"trace_bytes": len(trace)}

    reducer = CycleReducer(summarize)
    for number, trace in enumerate([b"good", b"bad", b"fine!"], 1):
        reducer.add(_cycle(number, trace))
    table = reducer.table()
    assert table is not None
    assert table["problem"].tolist()[1] == "ValueError: not a trace"
    assert table["trace_bytes"].tolist()[0] == 4 and table["trace_bytes"].tolist()[2] == 5
    assert pd.isna(table["trace_bytes"].tolist()[1])


@pytest.mark.parametrize("stop_first", [True, False])
def test_the_thread_ends_once_the_run_is_over(stop_first):
    reducer = CycleReducer(CostlySummary())
    reducer.add(_cycle(1, b"t"))
    if stop_first:
        reducer.stop()  # an abandoned run: nobody asks for the table
        thread = reducer._thread
        assert thread is not None
        thread.join(timeout=60)
        assert not thread.is_alive()
    else:
        table = reducer.table()
        assert table is not None and len(table) == 1
        assert reducer._thread is not None and not reducer._thread.is_alive()
