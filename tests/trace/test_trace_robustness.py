"""Every shared trace loads and its phases, memory and communication tables make sense,
including the awkward ones: no ProfilerStep, no device, ROCm, fractional
timestamps, nested ranges that overlap slightly, no ``distributedInfo``, and a
process-group list with hundreds of entries.
"""
from __future__ import annotations

import functools
import gzip
import json

import numpy as np
import pytest

import nbprofiler
from conftest import TRACE_FILES, shared_trace
from nbprofiler.analysis.phases import PHASES

ALL_TRACES = TRACE_FILES
HOST_CATEGORIES = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver", "Operator", "Runtime"}


@functools.cache
def raw(name: str) -> dict:
    with gzip.open(shared_trace(name), "rt") as f:
        return json.load(f)


@functools.cache
def load(name: str) -> nbprofiler.Report:
    """One Report per trace for the module: Reports never change, and parsing is the slow part."""
    return nbprofiler.load(shared_trace(name))


def host_ranges(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in HOST_CATEGORIES]


@pytest.mark.parametrize("name", ALL_TRACES)
def test_every_table_makes_sense(name):
    report = load(name)
    phases = report.phases
    assert len(phases) == len(report.trace_steps) >= 1
    assert (phases[list(PHASES)] >= 0).all().all()
    assert (phases[list(PHASES)].sum(axis=1) - phases["total"]).abs().max() <= 1e-6 * phases["total"].max()
    assert (phases["total"] > 0).all()
    comm = report.communication
    assert ((comm["share"] >= 0) & (comm["share"] <= 1)).all()
    memory = report.memory
    if len(memory):
        assert (memory["allocated_bytes"].dropna() >= 0).all()
        steps = report.memory_steps
        assert (steps["peak_allocated_bytes"] + 1e-6 >= steps["end_allocated_bytes"]).all()
    assert not report.memory_growth["flagged"].any()  # none of these runs leaks
    ops = report.memory_by_operator
    assert (ops["held_bytes"] <= ops["allocated_bytes"]).all()
    assert report.rank_comparison.empty  # one file, one rank


def test_no_profiler_step_is_one_synthetic_step_over_the_whole_trace():
    name = "a100_alexnet_small.pt.trace.json.gz"
    trace = raw(name)
    assert not any(e.get("name", "").startswith("ProfilerStep#") for e in trace["traceEvents"])
    report = load(name)
    assert any("no ProfilerStep" in n for n in report.notes)
    phases = report.phases
    assert len(phases) == 1
    host = host_ranges(trace)
    span = max(e["ts"] + e["dur"] for e in host) - min(e["ts"] for e in host)
    assert phases["total"].iloc[0] == pytest.approx(span)
    # An inference benchmark: no batches fetched, no backward, no optimizer; the rest is forward.
    row = phases.iloc[0]
    assert row["dataloader"] == row["backward"] == row["optimizer"] == 0
    assert row["forward"] > 0.9 * row["total"]


def test_cpu_only_trace_with_a_huge_process_group_list():
    name = "cpu_only.pt.trace.json.gz"
    trace = raw(name)
    groups = trace["distributedInfo"]["pg_config"]
    assert sum(len(g["ranks"]) for g in groups) > 1000
    report = load(name)
    meta = report.table.meta
    assert (meta.rank, meta.world_size, meta.backend) == (34, 300, "gloo")
    assert not report.has_device_activity and meta.devices == ()
    assert report.communication["host_ops"].sum() > 0
    # The loop thread recorded almost nothing in the step; gloo's threads did the work.
    assert report.phases["other"].iloc[0] > 0.9 * report.phases["total"].iloc[0]


def test_rocm_trace_finds_backward_on_the_autograd_thread():
    name = "mi250_rocm_toy_train.pt.trace.json.gz"
    report = load(name)
    assert {d.kind for d in report.table.meta.devices} == {"rocm"}
    trace = raw(name)
    autograd_tids = {e["tid"] for e in trace["traceEvents"]
                     if e.get("ph") == "M" and "autograd" in str(e.get("args", {}).get("name", ""))}
    assert autograd_tids
    first = report.phases.iloc[0]
    assert first["backward"] > 0 and first["forward"] > 0 and first["optimizer"] > 0


def test_fractional_timestamps_and_slightly_overlapping_nested_ranges() -> None:
    name = "v100_resnet_ns_timestamps.pt.trace.json.gz"
    host = [e for e in host_ranges(raw(name)) if e["cat"] in ("cpu_op", "user_annotation")]
    assert any(e["ts"] != int(e["ts"]) for e in host)
    # The quirk: on one thread, a range starts inside another and ends a little after it.
    by_thread: dict[tuple, list[dict]] = {}
    for e in host:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    overlaps = 0
    for events in by_thread.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ranges: list[dict] = []
        for e in events:
            while open_ranges and open_ranges[-1]["ts"] + open_ranges[-1]["dur"] <= e["ts"]:
                open_ranges.pop()
            if open_ranges and e["ts"] + e["dur"] > open_ranges[-1]["ts"] + open_ranges[-1]["dur"]:
                overlaps += 1
            open_ranges.append(e)
    assert overlaps > 0
    phases = load(name).phases
    assert (phases[list(PHASES)].sum(axis=1) - phases["total"]).abs().max() < 1e-6
    assert (phases[list(PHASES)].max(axis=1) <= phases["total"]).all()


@pytest.mark.parametrize("name", ["v100_resnet50_train_num_workers_0.pt.trace.json.gz",
                                  "mi250_rocm_toy_train.pt.trace.json.gz"])
def test_no_distributed_info(name):
    assert "distributedInfo" not in raw(name)
    report = load(name)
    meta = report.table.meta
    assert meta.rank is None and meta.world_size is None
    assert report.rank_comparison.empty
    assert (report.communication["communication_us"] == 0).all()
    assert np.isfinite(report.phases["total"]).all()


def test_steps_left_out_of_the_breakdown_are_reported():
    """MI250: the second profiled step launched no device work, so the breakdown (as the
    plugin's) keeps one step; the report says so instead of changing the count silently."""
    report = load("mi250_rocm_toy_train.pt.trace.json.gz")
    assert len(report.trace_steps) == 2 and report.summary["steps"] == len(report.breakdown) == 1
    note = next(n for n in report.notes if "left out" in n)
    assert note.startswith("1 of the 2 profiled steps is left out of the step breakdown")
    assert "1 step(s) at the end launched no device work" in note
    assert not any("left out" in n for n in load("v100_resnet_ns_timestamps.pt.trace.json.gz").notes)


def test_a_last_step_cut_short_is_reported(tmp_path):
    """The real V100 trace with half the launches of its last step removed, as when the profiler
    stops before the step's kernels ran: that step is left out, and the note says why."""
    trace = json.loads(json.dumps(raw("v100_resnet_ns_timestamps.pt.trace.json.gz")))
    last = max((e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")),
               key=lambda e: e["ts"])
    launches = [e for e in trace["traceEvents"] if e.get("cat") == "cuda_runtime" and "Launch" in e.get("name", "")
                and last["ts"] <= e["ts"] <= last["ts"] + last["dur"]]
    dropped = {id(e) for e in launches[::2]}
    trace["traceEvents"] = [e for e in trace["traceEvents"] if id(e) not in dropped]
    (tmp_path / "cut.json").write_text(json.dumps(trace))
    report = nbprofiler.load(tmp_path / "cut.json")
    assert len(report.trace_steps) == 5 and report.summary["steps"] == 4
    note = next(n for n in report.notes if "left out" in n)
    assert note.startswith("1 of the 5 profiled steps is left out")
    assert "the last step that launched device work launched under 80% of the step before it" in note
