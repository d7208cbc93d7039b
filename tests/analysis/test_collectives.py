"""report.collectives: calls, bytes, kernel time, nccl-tests' bandwidths and exposed time per collective.

Checked against a recomputation from the raw trace events in plain Python (the
collective's op and its NCCL kernel share an External id in these traces; the
analysis finds the kernel through the operator tree instead), and against the bus
bandwidth factors of nccl-tests' doc/PERFORMANCE.md worked out by hand.
"""
from __future__ import annotations

import math
from collections import defaultdict

import pytest
from conftest import shared_raw_events, shared_report

import nbprofiler
from nbprofiler.analysis.collectives import CALL_COLUMNS, COLLECTIVE_COLUMNS, bus_factor, collective_calls

ELEMENT_BYTES = {"Float": 4, "Long": 8}  # the dtypes these traces' collectives move


def _raw_collectives(name: str) -> list[dict]:
    """Each data collective's op with its kernels' intervals and the compute kernels' overlap."""
    events = shared_raw_events(name)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    by_ext = defaultdict(list)
    for k in kernels:
        by_ext[k["args"].get("External id")].append(k)
    compute = defaultdict(list)
    for k in kernels:
        if "nccl" not in k["name"].lower():
            compute[k["args"]["device"]].append((k["ts"], k["ts"] + k["dur"]))
    merged = {}
    for device, spans in compute.items():
        out: list[list[float]] = []
        for s, e in sorted(spans):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        merged[device] = out
    rows = []
    for op in sorted((e for e in events if e["name"] == "record_param_comms" and e.get("cat") == "cpu_op"),
                     key=lambda e: e["ts"]):
        a = op["args"]
        if a.get("Collective name") in (None, "wait", "barrier"):
            continue
        mine = [k for k in by_ext[a["External id"]] if "nccl" in k["name"].lower()]
        time = sum(k["dur"] for k in mine)
        hidden = sum(max(0.0, min(k["ts"] + k["dur"], e) - max(k["ts"], s))
                     for k in mine for s, e in merged.get(k["args"]["device"], []))
        rows.append({"collective": a["Collective name"], "dtype": a["dtype"], "n": a["Group size"],
                     "bytes": max(a["In msg nelems"], a["Out msg nelems"]) * ELEMENT_BYTES[a["dtype"]],
                     "kernels": len(mine), "time": time, "exposed": time - hidden})
    return rows


def test_nccl_allreduce_and_broadcast_match_the_raw_events():
    raw = _raw_collectives("a100_nccl_distributed")
    calls = collective_calls(shared_report("a100_nccl_distributed").operator_tree)
    assert list(calls.columns) == CALL_COLUMNS and len(calls) == len(raw) == 21
    assert (calls["kernels"] == 1).all()  # each collective launched its one NCCL kernel
    for row, ref in zip(calls.itertuples(index=False), raw):
        assert (row.collective, row.dtype, row.group_size, row.bytes) == (ref["collective"], ref["dtype"],
                                                                          ref["n"], ref["bytes"])
        assert row.time_us == pytest.approx(ref["time"]) and row.exposed_us == pytest.approx(ref["exposed"], abs=1e-3)

    table = shared_report("a100_nccl_distributed").collectives
    assert list(table.columns) == COLLECTIVE_COLUMNS
    assert table["time_us"].is_monotonic_decreasing  # most kernel time first
    for row in table.itertuples(index=False):
        group = [r for r in raw if (r["collective"], r["dtype"]) == (row.collective, row.dtype)]
        data, time = sum(r["bytes"] for r in group), sum(r["time"] for r in group)
        exposed = sum(r["exposed"] for r in group)
        assert row.calls == len(group) and row.bytes == data and row.time_us == pytest.approx(time)
        assert row.latency_us == pytest.approx(time / len(group))
        assert row.algbw_gb_per_s == pytest.approx(data / (time * 1e-6) / 1e9)
        # Two ranks: all-reduce's 2(n-1)/n and broadcast's 1 are both 1, busbw is algbw.
        assert row.busbw_gb_per_s == pytest.approx(row.algbw_gb_per_s)
        assert row.exposed_us == pytest.approx(exposed, abs=1e-2)
        assert row.exposed_share == pytest.approx(exposed / time, abs=1e-6)
    allreduce = table.set_index(["collective", "dtype"]).loc[("allreduce", "Float")]
    assert allreduce["calls"] == 15 and 0 < allreduce["exposed_share"] < 1  # partly hidden behind backward
    # Every NCCL kernel of this trace is a collective's and lies in a step: the hidden part is the
    # compute/communication cell of the overlap matrix, measured there by unions of the whole device.
    overlap = shared_report("a100_nccl_distributed").kernel_overlap.set_index("type")
    assert table["time_us"].sum() == pytest.approx(overlap.loc["communication", "communication"])
    assert (table["time_us"] - table["exposed_us"]).sum() == pytest.approx(overlap.loc["communication", "compute"])


def test_bytes_of_a_known_allreduce():
    """The step's first all-reduce carries "In msg nelems": 2049000 floats: 8,196,000 bytes."""
    calls = collective_calls(shared_report("a100_nccl_distributed").operator_tree)
    first = calls[calls["collective"] == "allreduce"].iloc[0]
    assert first["bytes"] == 2_049_000 * 4


def test_bus_factor_is_nccl_tests():
    """doc/PERFORMANCE.md of nccl-tests: on 8 ranks all-reduce's busbw is 2*7/8 = 1.75 times algbw,
    all-gather's and reduce-scatter's 7/8; broadcast and reduce move the data once."""
    assert bus_factor("allreduce", 8) == 1.75
    assert bus_factor("allgather", 8) == bus_factor("_allgather_base", 8) == 0.875
    assert bus_factor("reduce_scatter", 4) == bus_factor("reduce_scatter_tensor_coalesced", 4) == 0.75
    assert bus_factor("alltoall", 2) == bus_factor("alltoall_base", 2) == 0.5
    assert bus_factor("broadcast", 8) == bus_factor("reduce", 8) == 1.0
    assert bus_factor("allreduce", 1) == 0.0  # one rank: nothing crosses a link
    assert math.isnan(bus_factor("wait", 2))


def test_one_rank_collectives_are_counted_without_kernels() -> None:
    """World size 1: NCCL launches no kernel, so there is no time to measure; the wait ops
    (0 elements) are no data collective and have no row."""
    raw = [e["args"] for e in shared_raw_events("v100_resnet_ns_timestamps") if e["name"] == "record_param_comms"]
    table = shared_report("v100_resnet_ns_timestamps").collectives
    counts = {(r.collective, r.dtype): r.calls for r in table.itertuples(index=False)}
    expected: dict[tuple[str, str], int] = defaultdict(int)
    for a in raw:
        if a["Collective name"] != "wait":
            expected[a["Collective name"], a["dtype"]] += 1
    assert counts == expected and "wait" in {a["Collective name"] for a in raw}
    assert table["time_us"].isna().all() and table["busbw_gb_per_s"].isna().all()
    assert (table["group_size"] == 1).all()


def test_ops_without_arguments_are_named_by_nccls_own_range():
    """a100_train (torch before 2.0) records ``record_param_comms`` without its arguments: the
    rows are NCCL's ranges (``nccl:all_to_all``, ``nccl:all_reduce``), with kernel time, no size.
    Its all-to-all runs as NCCL SendRecv kernels, its all-reduce as AllReduce kernels."""
    events = shared_raw_events("a100_train")
    ranges = {n: sum(e["name"] == f"nccl:{n}" for e in events) for n in ("all_to_all", "all_reduce")}
    kernels = {"all_to_all": "ncclKernel_SendRecv", "all_reduce": "ncclKernel_AllReduce"}
    time = {n: sum(e["dur"] for e in events if e.get("cat") == "kernel" and e["name"].startswith(k))
            for n, k in kernels.items()}
    table = shared_report("a100_train").collectives.set_index("collective")
    assert set(table.index) == set(ranges)
    for n in ranges:
        assert table.loc[n, "calls"] == ranges[n] and table.loc[n, "time_us"] == pytest.approx(time[n])
    assert table["bytes"].isna().all() and table["busbw_gb_per_s"].isna().all()
    assert ((table["exposed_us"] >= 0) & (table["exposed_us"] <= table["time_us"])).all()


def test_gloo_trace_gives_an_empty_table():
    """gloo records no sizes (cpu_only): no row."""
    table = shared_report("cpu_only").collectives
    assert table.empty and list(table.columns) == COLLECTIVE_COLUMNS


def test_a_live_gloo_run_has_no_rows(tmp_path):
    """gloo records its collectives as host ranges without sizes (``gloo:all_reduce``): no row,
    the communication table has their time."""
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            dist.all_reduce(torch.ones(1000))
        prof.export_chrome_trace(str(tmp_path / "gloo.json"))
    finally:
        dist.destroy_process_group()
    report = nbprofiler.load(tmp_path / "gloo.json")
    assert "gloo:all_reduce" in set(report.table.names)
    assert report.collectives.empty and list(report.collectives.columns) == COLLECTIVE_COLUMNS
