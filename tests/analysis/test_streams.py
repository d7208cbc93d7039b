"""Per stream idle time and the overlap of compute, communication and memory work, against plain
Python walks over the raw trace JSON."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest
import torch

from conftest import shared_raw_events as raw_events, shared_report as report
import nbprofiler
from nbprofiler.analysis.streams import (KERNEL_WAIT_US, OVERLAP_COLUMNS, OVERLAP_TYPES, STREAM_IDLE_COLUMNS,
                                         kernel_overlap, stream_idle)

_DEVICE_CATS = {"Kernel", "kernel", "Memcpy", "gpu_memcpy", "Memset", "gpu_memset"}
_RUNTIME_CATS = {"Runtime", "cuda_runtime", "cuda_driver"}
# Traces with one stream, several streams (with "other" idle and NCCL), fractional timestamps.
TRACES = ["v100_resnet50_train_num_workers_0", "a100_train", "v100_resnet_ns_timestamps", "a100_nccl_distributed"]


def _windows(name: str) -> list[tuple[float, float]]:
    spans = report(name).stretched_steps
    return list(zip(spans["start_us"].tolist(), spans["end_us"].tolist()))


def _inside(start: float, end: float, windows: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(end, hi) - max(start, lo)) for lo, hi in windows)


def reference_streams(name: str) -> dict[tuple[int, int], dict[str, float]]:
    """Per (device, stream): busy, kernel wait, host wait and other idle µs in the steps, walking
    each stream's activities in start order: a gap is host wait when the launch of the activity
    that ends it returned after the gap began (or nothing ends it), else kernel wait when shorter
    than HTA's 30 µs, else other."""
    events = raw_events(name)
    returned: dict[int, float] = {}
    for e in events:
        if e.get("cat") in _RUNTIME_CATS and "correlation" in e["args"]:
            returned.setdefault(e["args"]["correlation"], e["ts"] + e["dur"])
    per_stream: dict[tuple[int, int], list[tuple[float, float, float]]] = {}
    for e in events:
        if e.get("cat") in _DEVICE_CATS:
            key = (e["args"]["device"], e["args"]["stream"])
            sub = returned.get(e["args"].get("correlation"), math.nan)
            per_stream.setdefault(key, []).append((e["ts"], sub, e["ts"] + e["dur"]))
    windows = _windows(name)
    out = {}
    for key, work in per_stream.items():
        work.sort(key=lambda w: (w[0], math.inf if math.isnan(w[1]) else w[1]))
        totals = {"busy": 0.0, "kernel_wait": 0.0, "host_wait": 0.0, "other": 0.0}
        prev_end, run_start = -math.inf, None
        for start, sub, end in work:
            if start > prev_end:  # a gap, ended by this activity
                if run_start is not None:
                    totals["busy"] += _inside(run_start, prev_end, windows)
                gap_from = min(windows[0][0], start) if prev_end == -math.inf else prev_end
                cause = ("host_wait" if sub > prev_end else
                         "kernel_wait" if start - prev_end < KERNEL_WAIT_US else "other")
                totals[cause] += _inside(gap_from, start, windows)
                run_start = start
            prev_end = max(prev_end, end)
        assert run_start is not None  # each stream has work
        totals["busy"] += _inside(run_start, prev_end, windows)
        totals["host_wait"] += _inside(prev_end, max(windows[-1][1], prev_end), windows)
        out[key] = totals
    return out


@pytest.mark.parametrize("name", TRACES)
def test_stream_idle_matches_the_reference(name):
    table = stream_idle(report(name).table, report(name).stretched_steps)
    reference = reference_streams(name)
    assert list(table.columns) == STREAM_IDLE_COLUMNS
    assert set(zip(table["device"], table["stream"])) == set(reference)
    for row in table.to_dict("records"):
        ref = reference[row["device"], row["stream"]]
        for column in ("busy", "kernel_wait", "host_wait", "other"):
            assert row[f"{column}_us"] == pytest.approx(ref[column], abs=0.01), (row["stream"], column)
    span = sum(hi - lo for lo, hi in _windows(name))
    np.testing.assert_allclose(table["busy_us"] + table["idle_us"], span, rtol=1e-12)
    np.testing.assert_allclose(table[["kernel_wait_us", "host_wait_us", "other_us"]].sum(axis=1), table["idle_us"],
                               rtol=1e-12)


def test_stream_figures_a_user_would_check():
    # a100_train: the compute stream 7 is the busiest; the three NCCL/side streams mostly wait on the host.
    table = stream_idle(report("a100_train").table, report("a100_train").stretched_steps).set_index("stream")
    assert table["busy_us"].idxmax() == 7
    assert (table.loc[[20, 21, 22], "host_wait_us"] > 0.6 * table.loc[[20, 21, 22], "idle_us"]).all()
    # One stream per device: the stream's busy time is the device's (sync.idle_time's).
    v100 = report("v100_resnet50_train_num_workers_0")
    (row,) = stream_idle(v100.table, v100.stretched_steps).to_dict("records")
    assert row["busy_us"] == pytest.approx(v100.idle["busy_us"].sum(), rel=1e-9)
    assert row["host_wait_us"] == pytest.approx(v100.idle["host_wait_us"].sum(), rel=1e-9)
    # A larger threshold moves time from "other" to kernel wait and never touches host wait.
    wide = stream_idle(v100.table, v100.stretched_steps, kernel_wait_us=1e9).iloc[0]
    assert wide["host_wait_us"] == row["host_wait_us"] and wide["other_us"] == 0
    assert wide["kernel_wait_us"] == pytest.approx(row["kernel_wait_us"] + row["other_us"])


def _union(intervals: list[tuple[float, float]]) -> list[list[float]]:
    merged: list[list[float]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def reference_busy(name: str) -> dict[int, dict[str, list[list[float]]]]:
    """Per device, the merged intervals of each type of device work, from the raw events."""
    by_device: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for e in raw_events(name):
        cat = e.get("cat", "")
        if cat not in _DEVICE_CATS:
            continue
        kind = ("memory" if cat.lower().endswith(("memcpy", "memset")) else
                "communication" if "nccl" in e["name"].lower() else "compute")
        per_type = by_device.setdefault(e["args"]["device"], {t: [] for t in OVERLAP_TYPES})
        per_type[kind].append((e["ts"], e["ts"] + e["dur"]))
    return {d: {t: _union(v) for t, v in types.items()} for d, types in by_device.items()}


@pytest.mark.parametrize("name", ["a100_train", "a100_nccl_distributed", "v100_resnet50_train_num_workers_0"])
def test_overlap_matrix_matches_the_reference(name):
    windows = _windows(name)
    matrix = kernel_overlap(report(name).table, report(name).stretched_steps)
    assert list(matrix.columns) == OVERLAP_COLUMNS
    for device, busy in reference_busy(name).items():
        m = matrix[matrix["device"] == device].set_index("type").loc[list(OVERLAP_TYPES), list(OVERLAP_TYPES)]
        np.testing.assert_allclose(m.to_numpy(), m.to_numpy().T)
        for a in OVERLAP_TYPES:
            assert m.loc[a, a] == pytest.approx(sum(_inside(s, e, windows) for s, e in busy[a]), abs=0.01)
            for b in OVERLAP_TYPES:
                if a != b:
                    both = sum(_inside(s, e, windows) for s, e in _intersection(busy[a], busy[b]))
                    assert m.loc[a, b] == pytest.approx(both, abs=0.01), (a, b)


def _intersection(a: list[list[float]], b: list[list[float]]) -> list[tuple[float, float]]:
    """The common parts of two sorted lists of disjoint intervals (two pointers)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def test_communication_hidden_by_compute():
    # a100_train overlaps its NCCL kernels with compute (HTA reports 47% of the communication time);
    # a single-GPU run has no communication at all.
    m = kernel_overlap(report("a100_train").table, report("a100_train").stretched_steps).set_index("type")
    assert 0.3 < m.loc["communication", "compute"] / m.loc["communication", "communication"] < 0.7
    v100 = kernel_overlap(report("v100_resnet50_train_num_workers_0").table,
                          report("v100_resnet50_train_num_workers_0").stretched_steps).set_index("type")
    assert v100["communication"].sum() == 0 and v100.loc["compute", "compute"] > 0


@lru_cache(maxsize=None)
def live_cpu_report():
    """A live profiled CPU training loop (test_copies reads it too): no device work at all."""
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with nbprofiler.profile(wait=0, warmup=0, active=2) as run:
        for _ in range(2):
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
    return run.report


def test_cpu_runs_give_empty_tables_with_the_columns():
    for r in (live_cpu_report(), report("cpu_only")):
        assert not r.stretched_steps.empty  # there are steps to measure over, just no device work
        idle = stream_idle(r.table, r.stretched_steps)
        overlap = kernel_overlap(r.table, r.stretched_steps)
        assert idle.empty and list(idle.columns) == STREAM_IDLE_COLUMNS
        assert overlap.empty and list(overlap.columns) == OVERLAP_COLUMNS
