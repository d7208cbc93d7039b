"""A long cell: 2,000 training steps under the default schedule.

The per-step sampler runs on every step, so its memory must stay small (< 1 MiB,
measured three ways: what it reports, the allocated size of its containers, and
what tracemalloc saw it allocate); the profiler records only the scheduled steps,
so the trace holds exactly the three active ones whatever the cell's length.

A large trace file is analysed within 3x its JSON size (peak RSS rise over the
RSS before the load), or refused up front with a message naming the limit. Here
with a trace of 300,000 events, through bench/big_trace.py's fresh-interpreter
probe; that benchmark runs the same at 5 million events.
"""
from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

from conftest import assert_nothing_left

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from big_trace import TARGET_RATIO, probe  # the benchmark's own probe and generator
from analysis_speed import synthetic_trace

pytestmark = pytest.mark.usefixtures("private_tmp", "one_torch_thread")

STEPS = 2000
LONG_CELL = f"""
import nbprofiler
sampler = nbprofiler.current_run().sampler
xs, ys = torch.randn(16, 8, 20), torch.randint(0, 4, (16, 8))
for i in range({STEPS}):
    loss = F.cross_entropy(model(xs[i % 16]), ys[i % 16])
    opt.zero_grad(); loss.backward(); opt.step()
"""
ONE_MIB = 1 << 20


def _allocated_size(sampler) -> int:
    """Bytes the sampler's containers hold, allocated capacity included."""
    parts = [sampler.host_ms, sampler.dataloader_ms, sampler.mem_a, sampler.mem_peak, sampler.mem_reserved,
             sampler.device_ms, sampler._pending, sampler]
    return sum(sys.getsizeof(p) for p in parts) + sum(sys.getsizeof(e) for e in sampler._pending)


def test_2000_steps_keep_the_sampler_small_and_trace_only_the_active_steps(shell):
    sampler_file = sys.modules["nbprofiler.capture.sampler"].__file__
    tracemalloc.start()
    try:
        with capture_output():
            shell.run_cell_magic("torchprofile", "-q -o long", LONG_CELL)
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, sampler_file)])
    finally:
        tracemalloc.stop()
    report = shell.user_ns["long"]
    sampler = shell.user_ns["sampler"]
    assert len(report.steps) == STEPS and report.run.step_source == "optimizer"
    assert 0 < report.run.sampler_bytes < ONE_MIB
    assert _allocated_size(sampler) < ONE_MIB
    traced = sum(stat.size for stat in snapshot.statistics("filename"))
    assert 0 < traced < ONE_MIB, f"tracemalloc: the sampler allocated {traced} bytes"
    # Only the scheduled steps were recorded: the trace holds steps 2-4 and nothing of
    # the other 1,997 (two Linear layers: two addmm calls a step).
    assert list(report.trace_steps["step"]) == [2, 3, 4]
    events = json.loads(report.raw_trace)["traceEvents"]
    assert sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")) == [
        "ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    ops = report.operators.set_index("name")
    assert ops.loc["aten::addmm", "calls"] == 6 and ops.loc["Optimizer.step#SGD.step", "calls"] == 3
    assert len(report.raw_trace) < 4 * ONE_MIB
    assert_nothing_left([shell.user_ns["model"]])


def test_a_large_trace_is_analysed_within_three_times_its_size_or_refused(tmp_path):
    path = tmp_path / "big.pt.trace.json"
    events = synthetic_trace(path, 300_000)
    size = path.stat().st_size
    loaded = probe(path, {"NBPROFILER_MAX_TRACE_BYTES": str(size + 1)})
    assert loaded["events"] > 0.7 * events and "breakdown" in loaded["tables"] and "suggestions" in loaded["tables"]
    assert loaded["peak"] - loaded["before"] <= TARGET_RATIO * size
    refused = probe(path, {"NBPROFILER_MAX_TRACE_BYTES": str(size // 2)})
    message = refused["refused"]
    assert str(path) in message and "limit" in message and "profile fewer steps" in message and "\n" not in message
    assert refused["peak"] - refused["before"] < size / 10  # refused from its size, not read
