"""report.allocations: every allocation's size, lifetime, operator and cell line; the leak advice names them.

The trace's table is checked against a pairing of the raw ``[memory]`` events done
here in plain Python (by device and address; by device and size, most recent first,
where the 2021 schema records no address), and a live CPU run under ``--stack`` that
keeps a tensor from every step must show the cell line that made them, in the table
and in the memory-growth suggestion.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict

import numpy as np
import pytest
from conftest import shared_report, shared_trace

from nbprofiler.analysis.allocations import ALLOCATION_COLUMNS

TRACE = "v100_resnet50_train_num_workers_0"
DEVICES = {0: "cpu", 1: "cuda"}


def _raw_allocations(name: str) -> tuple[list[tuple], dict[str, int]]:
    """(device, bytes, allocated ts, freed ts or None, live at the peak) per allocation, and the
    number of events per device, from the raw events in time order."""
    raw = json.loads(gzip.decompress(shared_trace(name).read_bytes()))["traceEvents"]
    events = sorted((e for e in raw if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    live: dict[tuple, list[int]] = defaultdict(list)
    freed_at: dict[int, int] = {}
    level: dict[str, int] = defaultdict(int)
    peak: dict[str, tuple[int, int]] = {}
    for i, e in enumerate(events):
        a = e["args"]
        kind = DEVICES[a["Device Type"]]
        device = kind if kind == "cpu" else f"{kind}:{a['Device Id']}"
        size = a["Bytes"]
        key = (device, a["Addr"]) if "Addr" in a else (device, abs(size))
        if size > 0:
            live[key].append(i)
        elif live[key]:
            freed_at[live[key].pop()] = i
        level[device] += size
        if device not in peak or level[device] > peak[device][0]:
            peak[device] = (level[device], i)
    out = []
    for i, e in enumerate(events):
        a = e["args"]
        if a["Bytes"] <= 0:
            continue
        kind = DEVICES[a["Device Type"]]
        device = kind if kind == "cpu" else f"{kind}:{a['Device Id']}"
        f = freed_at.get(i)
        at = peak[device][1]
        out.append((device, float(a["Bytes"]), float(e["ts"]), None if f is None else float(events[f]["ts"]),
                    i <= at and (f is None or f > at)))
    return out, {d: p[0] for d, p in peak.items()}


def test_lifetimes_and_the_peak_match_the_raw_memory_events():
    report = shared_report(TRACE)
    table = report.allocations
    assert list(table.columns) == ALLOCATION_COLUMNS
    raw, _ = _raw_allocations(TRACE)
    ours = sorted(zip(table["device"].astype(str), table["bytes"], table["allocated_us"],
                      [None if np.isnan(f) else f for f in table["freed_us"]], table["live_at_peak"]),
                  key=lambda r: (r[0], r[2], r[1], r[3] if r[3] is not None else np.inf, r[4]))
    ref = sorted(raw, key=lambda r: (r[0], r[2], r[1], r[3] if r[3] is not None else np.inf, r[4]))
    assert ours == ref
    held = table["freed_us"].isna()
    assert (table["lifetime_us"][~held] == (table["freed_us"] - table["allocated_us"])[~held]).all()
    assert table["lifetime_us"][held].isna().all()
    # What is live at the peak adds up to the peak's level: the trace starts with nothing recorded.
    peak = report.memory.groupby("device")["allocated_bytes"].max()
    live = table[table["live_at_peak"]].groupby("device", observed=True)["bytes"].sum()
    for device in ("cpu", "cuda:0"):
        assert live[device] == pytest.approx(peak[device])
    # Largest live at the peak first; no line without --stack.
    first = table[table["live_at_peak"]]
    assert table["live_at_peak"].iloc[:len(first)].all() and first["bytes"].is_monotonic_decreasing
    assert table["line"].isna().all()


def test_each_allocation_names_the_innermost_operator_around_it():
    """Checked for the twenty largest: the raw operator on the same thread that started last
    before the allocation and had not ended (step ranges are no operators; this trace writes
    an operator's tid as a string, a memory event's as a number)."""
    report = shared_report(TRACE)
    table = report.allocations.head(20)
    raw = json.loads(gzip.decompress(shared_trace(TRACE).read_bytes()))["traceEvents"]
    ops = [e for e in raw if e.get("ph") == "X" and e.get("cat") in ("Operator", "cpu_op", "user_annotation")
           and not e["name"].startswith("ProfilerStep#")]
    memory = {(e["ts"], e["args"]["Bytes"]): e for e in raw if e.get("name") == "[memory]"}
    for row in table.itertuples(index=False):
        event = memory[(row.allocated_us, row.bytes)]
        around = [o for o in ops if (str(o["pid"]), str(o["tid"])) == (str(event["pid"]), str(event["tid"]))
                  and o["ts"] <= event["ts"] <= o["ts"] + o["dur"]]
        innermost = max(around, key=lambda o: (o["ts"], -o["dur"]))["name"] if around else "(no operator)"
        assert row.operator == innermost


def test_a_trace_without_memory_events_has_no_rows():
    table = shared_report("a100_nccl_distributed").allocations
    assert table.empty and list(table.columns) == ALLOCATION_COLUMNS


SETUP = """
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(64 * 8, 16)), batch_size=64)
"""
# Line 3 makes 1 MiB a step (256 x 1024 floats) and line 4 keeps it: the growth is 1 MiB a step.
LEAKY = """kept = []
for (x,) in loader:
    block = torch.ones(256, 1024) * x.sum()
    kept.append(block)
"""


def test_a_live_run_names_the_line_that_allocates_what_is_kept(ip, one_torch_thread):
    ip.run_cell(SETUP).raise_error()
    ip.run_cell(f"%%torchprofile -q --wait 0 --warmup 1 --active 6 --stack -o run\n{LEAKY}").raise_error()
    report = ip.user_ns["run"]
    table = report.allocations
    held = table[table["freed_us"].isna() & (table["step"] >= 0) & (table["bytes"] == 256 * 1024 * 4)]
    # One kept block per profiled step, each made on line 3 (the kept list holds the result of the product).
    assert len(held) == report.trace_steps.shape[0] == 6
    assert set(held["line"]) == {3} and set(held["operator"]) == {"aten::mul"}
    assert table["line"].notna().any()
    growth = [s for s in report.suggestions if s.kind == "memory_growth"]
    assert len(growth) == 1
    s = growth[0]
    assert s.evidence["held_line"] == 3 and s.evidence["held_operator"] == "aten::mul"
    assert s.evidence["held_bytes"] >= 6 * 256 * 1024 * 4 and s.evidence["held_steps"] == 6
    assert any("`aten::mul` on cell line 3: 6 of them in 6 profiled step(s)" in fact for fact in s.facts)
    assert s.evidence["line"] == 4  # the statement that keeps them, as the leak line names it
