"""The step-time breakdown on the real shared traces and on a hand-made trace with known answers.

The figures on real traces are checked against a plain-Python reference that
reads the raw JSON itself (not through nbprofiler's parser) and attributes time
by a different method (elementary segments, highest-priority category wins).
"""
from __future__ import annotations

import bisect
import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import shared_report as report, shared_trace
import nbprofiler
from nbprofiler.analysis.breakdown import CATEGORIES, breakdown_shares
from nbprofiler.trace.table import Kind

ALL_TRACES = [
    "v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4", "v100_resnet_ns_timestamps",
    "a100_train", "a100_nccl_distributed", "a100_alexnet_small", "mi250_rocm_toy_train", "cpu_only",
]




# -- an independent reference ------------------------------------------------------------
PLUGIN_ROLES = ("Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CpuOp")
_DEVICE_CATS = {"Kernel": "Kernel", "kernel": "Kernel", "Memcpy": "Memcpy", "gpu_memcpy": "Memcpy",
                "Memset": "Memset", "gpu_memset": "Memset"}
_RUNTIME_CATS = {"Runtime", "cuda_runtime", "cuda_driver"}
_HOST_CATS = {"Operator", "cpu_op", "user_annotation", "python_function"}


def _merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _covers(merged, starts, t):
    i = bisect.bisect_right(starts, t) - 1
    return i >= 0 and t < merged[i][1]


def reference_breakdown(name: str | Path) -> list[dict]:
    """The plugin's procedure, step by step, in loops over the raw JSON events of a shared
    trace (by name) or of a trace file (by path).

    Each row holds the plugin's roles (``PLUGIN_ROLES`` and ``Other``), where every kernel,
    NCCL ones included, is Kernel and Communication is the collectives' host ranges;
    ``Kernel (NCCL only)``, the part of Kernel during which no compute kernel ran, and
    ``Memcpy under NCCL only``, the part of that during which a copy ran too; and the
    step's ``step``, ``start``, ``end`` and ``total``.
    """
    path = name if isinstance(name, Path) else shared_trace(name)
    data = path.read_bytes()
    raw = json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)
    events = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                   if e.get("cat") in _HOST_CATS and e["name"].startswith("ProfilerStep#"))
    if not steps:
        return []
    spans = _reference_spans(steps, *_reference_launches(events, steps))
    roles, nccl_kernels = _reference_roles(events)
    merged = {r: _merge(v) for r, v in roles.items()}
    starts = {r: [m[0] for m in v] for r, v in merged.items()}
    compute = _merge(iv for iv in roles["Kernel"] if iv not in set(nccl_kernels))
    compute_starts = [m[0] for m in compute]
    return [_reference_row(lo, hi, step, merged, starts, compute, compute_starts) for lo, hi, step in spans]


def _reference_launches(events: list[dict], steps: list[tuple]) -> tuple[list[int], list[float | None]]:
    """Per step, the device events its host ranges launched (matched by correlation id) and
    the latest end among them: the plugin stretches a step to its last kernel and trims
    steps at the end that launched little or nothing."""
    runtime_by_corr: dict[int, dict] = {}
    for e in events:
        if e.get("cat") in _RUNTIME_CATS and "correlation" in e.get("args", {}):
            runtime_by_corr.setdefault(e["args"]["correlation"], e)
    count, device_end = [0] * len(steps), list[float | None]([None] * len(steps))
    for e in events:
        if e.get("cat") not in _DEVICE_CATS:
            continue
        rt = runtime_by_corr.get(e.get("args", {}).get("correlation"))
        if rt is None:
            continue
        for i, (s, end, _) in enumerate(steps):
            if s <= rt["ts"] and rt["ts"] + rt["dur"] <= end:
                count[i] += 1
                device_end[i] = max(device_end[i] or -1e300, e["ts"] + e["dur"])
    return count, device_end


def _reference_spans(steps: list[tuple], count: list[int], device_end: list[float | None]) -> list[tuple]:
    """The steps' ``(start, stop, step)`` as the plugin measures them: each starts where the
    previous one stopped and stops at its last kernel; steps at the end that launched no device
    work, and a last step that launched under 80% of the one before, are dropped."""
    spans = []
    prev_end = steps[0][0]
    for i, (s, end, step_name) in enumerate(steps):
        start = max(s, prev_end)
        stop = max(end, start) if device_end[i] is None else max(end, device_end[i], start)
        spans.append((start, stop, int(step_name.split("#")[1])))
        prev_end = stop
    while spans and count[len(spans) - 1] == 0:
        spans.pop()
    if len(spans) > 1 and count[len(spans) - 1] < 0.8 * count[len(spans) - 2]:
        spans.pop()
    return spans


def _reference_roles(events: list[dict]) -> tuple[dict[str, list], list]:
    """Every event's interval under the plugin's role for it (every kernel is Kernel there),
    and the NCCL kernels' intervals apart, to tell compute kernels from them."""
    roles: dict[str, list[tuple[float, float]]] = {r: [] for r in PLUGIN_ROLES}
    nccl_kernels = []
    for e in events:
        cat, nm, iv = e.get("cat"), e["name"], (e["ts"], e["ts"] + e["dur"])
        if cat in _DEVICE_CATS:
            roles[_DEVICE_CATS[cat]].append(iv)
            if _DEVICE_CATS[cat] == "Kernel" and "nccl" in nm.lower():
                nccl_kernels.append(iv)
        elif cat in _RUNTIME_CATS:
            roles["Runtime"].append(iv)
        elif cat in _HOST_CATS and not nm.startswith("ProfilerStep#"):
            roles[_reference_host_role(nm)].append(iv)
    return roles, nccl_kernels


def _reference_host_role(name: str) -> str:
    """The plugin's role for a host range: a collective, the DataLoader's next(), or an operator."""
    if name.startswith(("nccl:", "gloo:")):
        return "Communication"
    if name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__"):
        return "DataLoader"
    return "CpuOp"


def _reference_row(lo: float, hi: float, step: int, merged: dict[str, list], starts: dict[str, list],
                   compute: list, compute_starts: list) -> dict:
    """One step's time by role: every instant goes to the first role in the plugin's priority
    order that covers it, else Other; the NCCL-only parts are counted on the side. ``merged``
    and ``compute`` are merged intervals, ``starts`` and ``compute_starts`` their starts."""
    points = {lo, hi}
    for v in (*merged.values(), compute):
        for s, e in v:
            if e > lo and s < hi:
                points.update((max(s, lo), min(e, hi)))
    cuts = sorted(points)
    row = dict.fromkeys([*PLUGIN_ROLES, "Other", "Kernel (NCCL only)", "Memcpy under NCCL only"], 0.0)
    for a, b in zip(cuts, cuts[1:]):
        owner = next((r for r in PLUGIN_ROLES if _covers(merged[r], starts[r], a)), "Other")
        row[owner] += b - a
        if owner == "Kernel" and not _covers(compute, compute_starts, a):
            row["Kernel (NCCL only)"] += b - a
            if _covers(merged["Memcpy"], starts["Memcpy"], a):
                row["Memcpy under NCCL only"] += b - a
    row.update(step=step, total=hi - lo, start=lo, end=hi)
    return row


# -- real traces -------------------------------------------------------------------------
STEPPED_GPU_TRACES = [n for n in ALL_TRACES if n not in ("a100_alexnet_small", "cpu_only")]  # ProfilerSteps and a GPU


def assert_matches_the_reference(ours: pd.DataFrame, expected: list[dict]) -> None:
    """Our breakdown against the plugin's roles, step by step: the same memcpy, memset,
    runtime, DataLoader, CPU Exec, other and total; kernel and communication together (less
    the collectives' host ranges) equal to the plugin's Kernel, with kernel the part a compute
    kernel covered and communication the rest plus the collectives' host ranges."""
    assert ours["step"].tolist() == [r["step"] for r in expected]
    same = {"memcpy": "Memcpy", "memset": "Memset", "runtime": "Runtime", "dataloader": "DataLoader",
            "cpu_exec": "CpuOp", "other": "Other", "total": "total"}
    for row, ref in zip(ours.to_dict("records"), expected):
        for col, role in same.items():
            assert row[col] == pytest.approx(ref[role], abs=0.01), (row["step"], col)
        device_communication = row["communication"] - ref["Communication"]
        assert row["kernel"] + device_communication == pytest.approx(ref["Kernel"], abs=0.01), row["step"]
        assert device_communication == pytest.approx(ref["Kernel (NCCL only)"], abs=0.01), row["step"]


@pytest.mark.parametrize("name", STEPPED_GPU_TRACES)
def test_breakdown_matches_the_reference_on_every_step(name):
    assert_matches_the_reference(report(name).breakdown, reference_breakdown(name))


@pytest.mark.parametrize("name", ["a100_train", "a100_nccl_distributed"])
def test_nccl_kernels_outrank_the_memcpy_they_overlap_on_real_traces(name):
    """These traces have copies running under NCCL kernels (and no compute kernel): that
    time is communication, so kernel and communication together are the plugin's Kernel."""
    expected = reference_breakdown(name)
    assert sum(r["Memcpy under NCCL only"] for r in expected) > 0
    assert_matches_the_reference(report(name).breakdown, expected)


@pytest.mark.parametrize("name", ALL_TRACES)
def test_shares_add_up_to_one_on_every_trace(name):
    bd = report(name).breakdown
    assert len(bd) >= 1
    parts = bd[[*CATEGORIES, "other"]]
    assert (parts.to_numpy() >= 0).all()
    np.testing.assert_allclose(parts.sum(axis=1), bd["total"], rtol=1e-9)
    assert breakdown_shares(bd).sum() == pytest.approx(1.0)
    assert breakdown_shares(bd, per_step=True)[[*CATEGORIES, "other"]].sum(axis=1).to_numpy() == pytest.approx(1.0)


def test_dataloader_share_is_far_higher_with_num_workers_0():
    starved = breakdown_shares(report("v100_resnet50_train_num_workers_0").breakdown)
    fed = breakdown_shares(report("v100_resnet50_train_num_workers_4").breakdown)
    assert starved["dataloader"] > 0.25
    assert fed["dataloader"] < 0.02
    assert starved["dataloader"] > 10 * fed["dataloader"]
    # The workers' step is shorter because the GPU waits less for data.
    assert report("v100_resnet50_train_num_workers_4").summary["avg_step_us"] < report(
        "v100_resnet50_train_num_workers_0").summary["avg_step_us"]


# Traces whose GPU runs behind the host and whose every kernel was launched inside a step.
@pytest.mark.parametrize("name", ["v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4",
                                  "a100_train", "v100_resnet_ns_timestamps"])
def test_stretched_steps_cover_the_device_work_they_launched(name):
    r = report(name)
    spans, t = r.stretched_steps, r.table
    assert (spans["start_us"] >= spans["host_start_us"]).all()
    assert (spans["end_us"] >= spans["host_end_us"]).all()
    assert (spans["start_us"].to_numpy()[1:] >= spans["end_us"].to_numpy()[:-1]).all()  # no overlap
    assert (spans["end_us"] > spans["host_end_us"]).any()  # the GPU really runs behind the host
    # Every kernel whose launch lies inside a step's host range ends inside the stretched step.
    is_runtime = t.kind == Kind.RUNTIME
    runtime = {int(c): i for i, c in zip(np.flatnonzero(is_runtime), t["correlation"][is_runtime])}
    ts, dur, corr = t["ts"].tolist(), t["dur"].tolist(), t["correlation"].tolist()
    windows = list(zip(spans["host_start_us"], spans["host_end_us"], spans["end_us"]))
    checked = 0
    for k in np.flatnonzero(t.kind == Kind.KERNEL).tolist():
        rt = runtime[corr[k]]
        for host_start, host_end, end in windows:
            if host_start <= ts[rt] and ts[rt] + dur[rt] <= host_end:
                assert ts[k] + dur[k] <= end
                checked += 1
    assert checked == (t.kind == Kind.KERNEL).sum()  # in these traces every kernel was launched in a step


def test_the_last_step_is_dropped_when_it_lost_its_kernels():
    # The ROCm trace's second step launched nothing the profiler saw.
    r = report("mi250_rocm_toy_train")
    assert r.trace_steps["step"].tolist() == [1, 2]
    assert r.breakdown["step"].tolist() == [1]


def test_cpu_only_trace_is_not_stretched_and_has_no_device_time():
    r = report("cpu_only")
    bd = r.breakdown
    assert len(bd) == 1
    assert (bd[["kernel", "memcpy", "memset", "runtime"]].to_numpy() == 0).all()
    host = r.trace_steps.iloc[0]
    assert bd["total"].iloc[0] == pytest.approx(host["end_us"] - host["start_us"])
    # Its gloo all_reduce ranges are communication.
    assert breakdown_shares(bd)["communication"] > 0.5


def test_nccl_kernels_and_collectives_count_as_communication():
    shares = breakdown_shares(report("a100_train").breakdown)
    assert 0.05 < shares["communication"] < 0.5


# -- a hand-made trace with known answers ------------------------------------------------
def _x(cat, name, ts, dur, tid=1, pid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _device(cat, name, ts, dur, corr, **args):
    return _x(cat, name, ts, dur, tid=7, pid=0, device=0, stream=7, correlation=corr, **args)


def hand_made_events(last_step_kernels: int = 4) -> list[dict]:
    """Two stretched steps with known attribution, and a third host-only step.

    Step 1, host [0, 100], stretched to [0, 130] by an NCCL kernel:
      kernel 40 ([30,70]), memcpy 10 ([65,80] minus the kernel), memset 5,
      communication 24 (nccl:all_reduce [92,96] + NCCL kernel [110,130]),
      runtime 5.5 ([20,25] and a sync at [97.5,98]; the rest hides under kernels / the collective),
      dataloader 8, cpu_exec 17 ([10,20] + [25,30] of aten::conv2d, aten::item [96.5,99]
      minus the sync), other 20.5.
    Step 2, host [120, 200], stretched to [130, 210]: kernels 40, runtime 2, cpu_exec 6, other 32.
    Step 3, host [200, 250], launched nothing: dropped.
    """
    ev = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 8),
        _x("cpu_op", "aten::conv2d", 10, 50, **{"External id": 10}),
        _x("cuda_runtime", "cudaLaunchKernel", 20, 5, correlation=1, **{"External id": 10}),
        _device("kernel", "volta_h884gemm_64x64_ldg8_nn", 30, 40, 1, **{"External id": 10, "blocks per SM": 0.5,
                                                                        "est. achieved occupancy %": 50}),
        _x("cuda_runtime", "cudaMemcpyAsync", 40, 5, correlation=2, **{"External id": 10}),
        _device("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 65, 15, 2, bytes=1024),
        _x("cuda_runtime", "cudaStreamSynchronize", 46, 2, correlation=9),
        _x("cuda_runtime", "cudaMemsetAsync", 50, 2, correlation=3, **{"External id": 10}),
        _device("gpu_memset", "Memset (Device)", 85, 5, 3),
        _x("user_annotation", "nccl:all_reduce", 92, 4),
        _x("cuda_runtime", "cudaLaunchKernel", 93, 1, correlation=4),
        _device("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", 110, 20, 4, **{"blocks per SM": 2.0}),
        _x("cpu_op", "aten::item", 96.5, 2.5),
        _x("cpu_op", "aten::_local_scalar_dense", 97, 1.5),
        _x("cuda_runtime", "cudaStreamSynchronize", 97.5, 0.5, correlation=10),
        _x("user_annotation", "ProfilerStep#2", 120, 80),
        _x("cpu_op", "aten::mm", 138, 8, **{"External id": 20}),
        _x("user_annotation", "ProfilerStep#3", 200, 50),
    ]
    kernels = [(150, 10), (160, 10), (170, 10), (200, 10)][:last_step_kernels]
    for i, (ts, dur) in enumerate(kernels):
        ev.append(_x("cuda_runtime", "cudaLaunchKernel", 140 + i, 0.5, correlation=5 + i, **{"External id": 20}))
        ev.append(_device("kernel", "volta_sgemm_128x64_nn", ts, dur, 5 + i,
                          **{"External id": 20, "blocks per SM": 1.0}))
    return ev


def hand_made_report(tmp_path: Path, last_step_kernels: int = 4) -> nbprofiler.Report:
    path = tmp_path / "hand.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": hand_made_events(last_step_kernels)}))
    return nbprofiler.load(path)


def test_priority_attribution_on_a_hand_made_trace(tmp_path):
    r = hand_made_report(tmp_path)
    spans = r.stretched_steps
    assert spans[["step", "start_us", "end_us", "device_activities"]].to_numpy().tolist() == [
        [1, 0, 130, 4], [2, 130, 210, 4]]
    bd = r.breakdown.set_index("step")
    expected = {
        1: dict(kernel=40, memcpy=10, memset=5, communication=24, runtime=5.5, dataloader=8, cpu_exec=17, other=20.5,
                total=130),
        2: dict(kernel=40, memcpy=0, memset=0, communication=0, runtime=2, dataloader=0, cpu_exec=6, other=32,
                total=80),
    }
    for step, cols in expected.items():
        for col, value in cols.items():
            assert bd.loc[step, col] == pytest.approx(value), (step, col)
    shares = breakdown_shares(r.breakdown)
    assert shares["kernel"] == pytest.approx(80 / 210)
    assert shares.sum() == pytest.approx(1.0)


def test_a_last_step_with_under_80_percent_of_the_device_work_is_dropped(tmp_path):
    # 3 activities against the previous step's 4: 3 < 0.8 * 4, so step 2 goes too.
    r = hand_made_report(tmp_path, last_step_kernels=3)
    assert r.breakdown["step"].tolist() == [1]


def test_a_memcpy_under_an_nccl_kernel_is_not_memcpy(tmp_path):
    """One step, host [0, 100]: an NCCL kernel [20, 60], a compute kernel [50, 70] and a
    copy [30, 80] (under the NCCL kernel, then the compute kernel, then alone), launched
    inside the collective's host range nccl:all_reduce [4, 12]; an operator [85, 95].

    The plugin's Kernel is [20, 70] = 50 µs. Here kernel is what the compute kernel covered
    (20), communication the NCCL kernel's time no compute kernel covered ([20, 50] = 30)
    plus the host range (8, over the runtime calls it holds), memcpy only [70, 80] = 10.
    """
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("user_annotation", "nccl:all_reduce", 4, 8),
        _x("cuda_runtime", "cudaLaunchKernel", 5, 1, correlation=1),
        _device("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 20, 40, 1),
        _x("cuda_runtime", "cudaLaunchKernel", 7, 1, correlation=2),
        _device("kernel", "ampere_sgemm_128x64_nn", 50, 20, 2),
        _x("cuda_runtime", "cudaMemcpyAsync", 9, 1, correlation=3),
        _device("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 30, 50, 3, bytes=1 << 20),
        _x("cpu_op", "aten::add", 85, 10),
    ]
    path = tmp_path / "nccl_memcpy.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    bd = nbprofiler.load(path).breakdown
    row = bd.iloc[0]
    expected = dict(kernel=20, communication=38, memcpy=10, memset=0, runtime=0, dataloader=0, cpu_exec=10, other=22,
                    total=100)
    assert {col: row[col] for col in expected} == pytest.approx(expected)
    (ref,) = reference_breakdown(path)
    assert ref["Kernel"] == pytest.approx(50) and ref["Memcpy"] == pytest.approx(10)
    assert_matches_the_reference(bd, [ref])
