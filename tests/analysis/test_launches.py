"""Kernel launches and stream queues, against loops over the raw trace JSON and HTA's published figures."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import torch

from conftest import shared_raw_events as raw_events, shared_report as report
import nbprofiler
from nbprofiler.analysis.launches import launch_summary, launch_table, queue_length, queue_length_series
from nbprofiler.trace.parser import parse_trace
from nbprofiler.trace.table import EventTable, Kind

_RUNTIME_CATS = {"Runtime", "cuda_runtime", "cuda_driver"}
_DEVICE_KIND = {"Kernel": "kernel", "kernel": "kernel", "Memcpy": "memcpy", "gpu_memcpy": "memcpy",
                "Memset": "memset", "gpu_memset": "memset"}
# HTA's launch calls: get_cuda_kernel_launch_stats' four, and the ones its queue length adds.
_LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync", "cuLaunchKernel",
                 "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
                 "hipMemcpyWithStream"}
TRACES = ["v100_resnet50_train_num_workers_0", "v100_resnet_ns_timestamps", "a100_train", "a100_nccl_distributed",
          "mi250_rocm_toy_train"]


def reference_launches(name: str) -> list[dict]:
    """Each device activity with its launch call, paired by correlation id in a loop over the JSON."""
    events = raw_events(name)
    calls: dict[int, dict] = {}
    for e in events:
        if e.get("cat") in _RUNTIME_CATS and e["name"] in _LAUNCH_CALLS and "correlation" in e["args"]:
            calls.setdefault(e["args"]["correlation"], e)
    out = []
    for e in events:
        call = calls.get(e["args"].get("correlation")) if e.get("cat") in _DEVICE_KIND else None
        if call is not None:
            out.append({"kind": _DEVICE_KIND[e["cat"]], "name": e["name"], "runtime": call["name"],
                        "device": e["args"]["device"], "stream": e["args"]["stream"],
                        "call_ts": call["ts"], "call_dur": call["dur"], "ts": e["ts"], "dur": e["dur"],
                        "delay": max(0.0, e["ts"] - (call["ts"] + call["dur"]))})
    return out


def reference_queues(launches: list[dict]) -> dict[tuple[int, int], list[int]]:
    """Per (device, stream), the count after each +1 (call start) and −1 (activity start), launches first at ties."""
    changes: dict[tuple[int, int], list[tuple[float, int]]] = {}
    for launch in launches:
        stream = changes.setdefault((launch["device"], launch["stream"]), [])
        stream += [(launch["call_ts"], 1), (launch["ts"], -1)]
    values: dict[tuple[int, int], list[int]] = {}
    for key, points in changes.items():
        count, values[key] = 0, []
        for _, delta in sorted(points, key=lambda p: (p[0], -p[1])):
            count += delta
            values[key].append(count)
    return values


@pytest.mark.parametrize("name", TRACES)
def test_launch_table_matches_the_reference(name):
    table = launch_table(report(name).table)
    ref = reference_launches(name)
    assert len(table) == len(ref) > 0
    assert np.all(np.diff(table["start_us"].to_numpy()) >= 0)  # in order of start
    key = ["kind", "name", "runtime", "device", "stream"]
    assert Counter(map(tuple, table[key].to_numpy().tolist())) == Counter(tuple(r[k] for k in key) for r in ref)
    for column, field in (("launch_delay_us", "delay"), ("runtime_us", "call_dur"), ("kernel_us", "dur")):
        np.testing.assert_allclose(np.sort(table[column].to_numpy()), sorted(r[field] for r in ref), atol=1e-3)
    summary = launch_summary(table)
    assert summary.delayed == sum(r["delay"] > 100 for r in ref)
    assert summary.gpu_shorter_than_cpu == sum(r["dur"] < r["call_dur"] for r in ref)
    assert summary.median_delay_us == pytest.approx(float(np.median([r["delay"] for r in ref])), abs=1e-3)


@pytest.mark.parametrize("name", TRACES)
def test_queue_length_matches_the_reference(name):
    queues = queue_length(report(name).table)
    ref = reference_queues(reference_launches(name))
    assert [(d, s) for d, s in queues[["device", "stream"]].to_numpy().tolist()] == sorted(ref)
    for row in queues.to_dict("records"):
        values = ref[(row["device"], row["stream"])]
        assert row["mean"] == pytest.approx(np.mean(values))
        assert row["max"] == max(values)
        assert row["p50"] == pytest.approx(np.quantile(values, 0.5))
    first = queues.iloc[0]
    series = queue_length_series(report(name).table, first["device"], first["stream"])
    assert series["outstanding"].tolist() == ref[(first["device"], first["stream"])]
    assert np.all(np.diff(series["ts"].to_numpy()) >= 0)


def hta_view(table: EventTable) -> EventTable:
    """The trace as HTA analyses it by default (``include_last_profiler_step=False``): no runtime
    call from the start of the last ProfilerStep on, so the work they launched is unpaired."""
    names = table.names[table.name_code].astype(str)
    steps = np.char.startswith(names, "ProfilerStep#")
    cut = table["ts"][steps].max()
    keep = ~((table.kind == Kind.RUNTIME) & (table["ts"] >= cut))
    return EventTable(meta=table.meta, names=table.names, kind=table.kind[keep], name_code=table.name_code[keep],
                      columns={k: v[keep] for k, v in table.columns.items()})


def test_the_issues_hta_figures():
    """HTA on the V100 ResNet-50 sample: 7,580 launches, 6,048 delayed over 100 µs; on a100_train
    stream 7 holds 35 outstanding launches on average, 287 at most (within 5%, on HTA's events)."""
    v100 = launch_summary(launch_table(hta_view(report("v100_resnet50_train_num_workers_0").table)))
    assert v100.launches == pytest.approx(7580, rel=0.05)
    assert v100.delayed == pytest.approx(6048, rel=0.05)
    a100 = queue_length(hta_view(report("a100_train").table)).set_index("stream").loc[7]
    assert a100["mean"] == pytest.approx(35, rel=0.05)
    assert a100["max"] == pytest.approx(287, rel=0.05)
    # The whole trace has the last step's launches too: every activity of the V100 sample has its call.
    assert launch_summary(launch_table(report("v100_resnet50_train_num_workers_0").table)).launches == 9096


def test_a_cpu_run_has_no_launches_and_no_queues():
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 2)
    with nbprofiler.profile(step_on="manual", wait=0, warmup=0, active=2) as run:
        for _ in range(2):
            model(torch.randn(4, 8)).sum().backward()
            nbprofiler.step()
    table = run.report.table
    assert len(table) > 0
    launches = launch_table(table)
    assert list(launches.columns)[:6] == ["kind", "name", "stream", "runtime_us", "kernel_us", "launch_delay_us"]
    assert len(launches) == 0
    queues = queue_length(table)
    assert list(queues.columns)[:4] == ["device", "stream", "mean", "max"] and len(queues) == 0
    summary = launch_summary(launches)
    assert (summary.launches, summary.delayed, summary.gpu_shorter_than_cpu, summary.mean_delay_us) == (0, 0, 0, None)


def _x(cat, name, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _work(cat, name, ts, dur, corr, stream=7):
    event = _x(cat, name, ts, dur, device=0, stream=stream, correlation=corr)
    return {**event, "pid": 0, "tid": stream}


def test_hand_made_launches_and_the_kernel_without_its_call():
    """Stream 7: a kernel launched by [10, 15] runs at 20 (delay 5, 10 µs long); a copy launched by
    [12, 14] starts at 13, before its call returned (delay clipped to 0). Stream 8: a kernel
    launched by [11, 12] runs at 50. A kernel whose correlation id has no call in the trace (the
    profiler started after it) and one launched by cudaGraphLaunch are not launches: left out."""
    events = [
        _x("cuda_runtime", "cudaLaunchKernel", 10, 5, correlation=1),
        _x("cuda_runtime", "cudaLaunchKernel", 11, 1, correlation=3),
        _x("cuda_runtime", "cudaMemcpyAsync", 12, 2, correlation=2),
        _x("cuda_runtime", "cudaGraphLaunch", 60, 4, correlation=5),
        _work("kernel", "gemm", 20, 10, 1),
        _work("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 13, 1, 2),
        _work("kernel", "relu", 50, 3, 3, stream=8),
        _work("kernel", "orphan", 40, 2, 99),
        _work("kernel", "graph_node", 70, 2, 5),
    ]
    table = parse_trace(json.dumps({"traceEvents": events}).encode(), source="hand")
    launches = launch_table(table)
    assert launches[["kind", "name", "stream", "runtime_us", "kernel_us", "launch_delay_us"]].to_numpy().tolist() == [
        ["memcpy", "Memcpy HtoD (Pinned -> Device)", 7, 2, 1, 0], ["kernel", "gemm", 7, 5, 10, 5],
        ["kernel", "relu", 8, 1, 3, 38]]
    summary = launch_summary(launches, delay_threshold_us=10)
    assert (summary.launches, summary.delayed, summary.gpu_shorter_than_cpu) == (3, 1, 1)
    queues = queue_length(table)
    # Stream 7: +1 at 10, +1 at 12, -1 at 13, -1 at 20: 1, 2, 1, 0. Stream 8: 1, 0.
    assert queues[["stream", "mean", "max"]].to_numpy().tolist() == [[7, 1, 2], [8, 0.5, 1]]
    series = queue_length_series(table, 0, 7)
    assert series.to_numpy().tolist() == [[10, 1], [12, 2], [13, 1], [20, 0]]
