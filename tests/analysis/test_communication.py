"""report.communication on the shared traces: NCCL kernels and ops, gloo ops.

Counts are checked against the raw JSON, matched by plain Python here:
kernels to the step whose host range holds the runtime call that launched
them (correlation id), host ranges to the step they start in.
"""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import nbprofiler
from conftest import shared_trace


def raw_events(name: str) -> list[dict]:
    with gzip.open(shared_trace(name), "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def host_steps(events: list[dict]) -> dict[int, tuple[float, float]]:
    return {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in events
            if e["name"].startswith("ProfilerStep#")}


def nccl_kernels_per_step(events: list[dict]) -> dict[int, int]:
    steps = host_steps(events)
    launch = {e["args"]["correlation"]: e["ts"] for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    counts = dict.fromkeys(steps, 0)
    for e in events:
        if e.get("cat") == "kernel" and "nccl" in e["name"].lower():
            ts = launch.get(e["args"].get("correlation"))
            for step, (lo, hi) in steps.items():
                if ts is not None and lo <= ts < hi:
                    counts[step] += 1
    return counts


def host_comm_per_step(events: list[dict], prefix: tuple[str, ...]) -> dict[int, int]:
    steps = host_steps(events)
    host = [e for e in events if e["name"].startswith(prefix) and e.get("cat") in ("cpu_op", "user_annotation")]
    return {step: sum(1 for e in host if lo <= e["ts"] < hi) for step, (lo, hi) in steps.items()}


def check_ranges(comm) -> None:
    assert ((comm["share"] >= 0) & (comm["share"] <= 1)).all()
    assert (comm["communication_us"] <= comm["step_us"] + 1e-6).all()
    assert (comm["communication_us"] + 1e-6 >= comm[["kernel_us", "host_us"]].max(axis=1)).all()
    assert (comm["overlap_us"] >= 0).all()
    overlap = comm["overlap_share"].dropna()
    assert ((overlap >= 0) & (overlap <= 1 + 1e-9)).all()


@pytest.mark.parametrize("name", ["a100_nccl_distributed.pt.trace.json.gz", "a100_train.pt.trace.json.gz"])
def test_nccl_traces_count_their_collectives_per_step(name):
    events = raw_events(name)
    report = nbprofiler.load(shared_trace(name))
    comm = report.communication.set_index("step")
    check_ranges(comm.reset_index())
    assert (comm["communication_us"] > 0).all()
    assert (comm["kernel_us"] > 0).all()
    expected_kernels = nccl_kernels_per_step(events)
    expected_ops = host_comm_per_step(events, ("nccl:",))
    for step in comm.index:
        assert comm.loc[step, "kernels"] == expected_kernels[step]
        assert comm.loc[step, "host_ops"] == expected_ops[step]
    # Overlap is measured kernel against kernel: never more than the NCCL kernels' own time.
    assert (comm["overlap_us"] <= comm["kernel_us"] + 1e-6).all()
    # The breakdown's communication is what no compute kernel hid: a part of the whole.
    breakdown = report.breakdown.set_index("step")
    assert (breakdown.loc[comm.index, "communication"] <= comm["communication_us"] + 1e-6).all()


def test_cpu_only_gloo_collectives_are_communication():
    name = "cpu_only.pt.trace.json.gz"
    events = raw_events(name)
    (step, (lo, hi)), = host_steps(events).items()
    gloo = [e for e in events if e["name"].startswith("gloo:")]
    starting = [e for e in gloo if lo <= e["ts"] < hi]
    comm = nbprofiler.load(shared_trace(name)).communication
    check_ranges(comm)
    assert len(comm) == 1 and comm["step"].iloc[0] == step
    row = comm.iloc[0]
    assert row["kernels"] == 0 and row["kernel_us"] == 0
    assert row["host_ops"] == len(starting) > 0
    # The collectives run on two gloo threads at once: their union, clipped to the step.
    spans = sorted((max(e["ts"], lo), min(e["ts"] + e["dur"], hi))
                   for e in gloo if e["ts"] < hi and e["ts"] + e["dur"] > lo)
    union_end, covered = -np.inf, 0.0
    for a, b in spans:
        covered += max(0.0, b - max(a, union_end))
        union_end = max(union_end, b)
    assert row["communication_us"] == pytest.approx(covered)
    assert row["share"] > 0.5


def test_single_rank_nccl_records_ops_but_launches_no_kernels():
    """World size 1: the collectives are called (host ranges) but NCCL has nothing to move."""
    name = "v100_resnet_ns_timestamps.pt.trace.json.gz"
    comm = nbprofiler.load(shared_trace(name)).communication
    check_ranges(comm)
    assert comm["host_ops"].sum() == sum(host_comm_per_step(raw_events(name), ("nccl:",)).values()) > 0
    assert comm["kernels"].sum() == 0 and comm["kernel_us"].sum() == 0
    assert comm["overlap_share"].isna().all()


@pytest.mark.parametrize("name", ["v100_resnet50_train_num_workers_0.pt.trace.json.gz",
                                  "mi250_rocm_toy_train.pt.trace.json.gz"])
def test_traces_without_collectives_show_none(name):
    comm = nbprofiler.load(shared_trace(name)).communication
    assert len(comm) > 0
    assert (comm[["kernels", "host_ops"]] == 0).all().all()
    assert (comm["communication_us"] == 0).all() and (comm["share"] == 0).all()
    assert comm["overlap_share"].isna().all()
