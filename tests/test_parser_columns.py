"""The event table holds every arg the trace wrote, read back independently with ``json``.

The parser reads each arg only on the kinds of event that carry it, decodes events
by phase, and decodes small traces in one pass and large ones in batches; these
tests check that none of that loses or changes a value on the real traces.
"""
from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
import torch

from conftest import GPU_TRACE_FILES, shared_trace
from nbprofiler.trace import parser
from nbprofiler.trace.parser import parse_trace
from nbprofiler.trace.table import MISSING

TRACES = [*GPU_TRACE_FILES, "cpu_only.pt.trace.json.gz"]
# JSON arg -> the column it lands in.
NUMERIC_ARGS = {
    "correlation": "correlation", "External id": "external_id", "external id": "external_id",
    "device": "device", "stream": "stream", "bytes": "bytes", "Bytes": "bytes",
    "blocks per SM": "blocks_per_sm", "est. achieved occupancy %": "occupancy",
    "Total Allocated": "total_allocated", "Total Reserved": "total_reserved",
    "Sequence number": "seq", "Fwd thread id": "fwd_thread", "Python id": "python_id",
    "Python parent id": "python_parent_id", "Device Type": "mem_device_type", "Device Id": "mem_device_id",
    "Addr": "addr", "flops": "flops", "In msg nelems": "msg_in_nelems", "Out msg nelems": "msg_out_nelems",
    "Group size": "group_size",
}
JSON_ARGS = {"Input Dims": "input_dims", "Input type": "input_types", "Concrete Inputs": "concrete_inputs"}
TEXT_ARGS = {"Call stack": "call_stack", "Collective name": "collective", "dtype": "comm_dtype"}


def _check_every_arg(data: bytes) -> int:
    """Assert each arg of each kept event is in its column; return how many values were checked."""
    kept = [e for e in json.loads(data)["traceEvents"] if e.get("ph") in ("X", "i", "I")]
    table = parse_trace(data, "trace")
    assert table.meta.skipped_events == 0 and len(table) == len(kept)
    checked = 0
    for key, column in NUMERIC_ARGS.items():
        rows = [i for i, e in enumerate(kept) if _number((e.get("args") or {}).get(key))]
        if rows:
            assert table[column][rows].tolist() == pytest.approx([kept[i]["args"][key] for i in rows]), key
            checked += len(rows)
    for key, column in {**JSON_ARGS, **TEXT_ARGS}.items():
        rows = [i for i, e in enumerate(kept) if (e.get("args") or {}).get(key) not in (None, "", [])]
        values = getattr(table, column)
        if not rows:
            assert values is None or all(v is None for v in values), key
            continue
        got = [json.loads(values[i]) if key in JSON_ARGS else values[i] for i in rows]
        assert got == [kept[i]["args"][key] for i in rows], key
        checked += len(rows)
    return checked


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@pytest.mark.parametrize("name", TRACES)
def test_every_arg_of_a_shared_trace_reaches_its_column(name):
    checked = _check_every_arg(gzip.decompress(shared_trace(name).read_bytes()))
    assert checked > 50


def test_every_arg_of_a_live_trace_reaches_its_column(tmp_path):
    """torch's own current schema, with shapes, argument values, stacks, memory and FLOPs."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10))
    x = torch.randn(4, 3, 16, 16)
    with torch.profiler.profile(record_shapes=True, profile_memory=True, with_stack=True, with_flops=True) as prof:
        model(x).sum().backward()
    path = tmp_path / "live.json"
    prof.export_chrome_trace(str(path))
    data = path.read_bytes()
    kept = [e for e in json.loads(data)["traceEvents"] if e.get("ph") in ("X", "i", "I")]
    for arg in ("Concrete Inputs", "Python id", "Addr"):  # the cases this test is for
        assert any(arg in (e.get("args") or {}) for e in kept), arg
    assert _check_every_arg(data) > 100


def test_one_pass_and_batched_decodes_give_the_same_table(monkeypatch):
    """Traces of up to ONE_PASS_MAX_EVENTS events are decoded in one pass, larger ones in batches."""
    data = gzip.decompress(shared_trace("a100_nccl_distributed.pt.trace.json.gz").read_bytes())
    assert len(json.loads(data)["traceEvents"]) <= parser.ONE_PASS_MAX_EVENTS
    one_pass = parse_trace(data, "trace")
    monkeypatch.setattr(parser, "ONE_PASS_MAX_EVENTS", -1)
    monkeypatch.setattr(parser, "BATCH", 997)  # many batches, each of a different mix of kinds
    batched = parse_trace(data, "trace")
    assert one_pass.meta == batched.meta and list(one_pass.names) == list(batched.names)
    assert np.array_equal(one_pass.kind, batched.kind) and np.array_equal(one_pass.name_code, batched.name_code)
    for column, values in one_pass.columns.items():
        assert np.array_equal(values, batched[column], equal_nan=values.dtype.kind == "f"), column
    for column in (*JSON_ARGS.values(), *TEXT_ARGS.values()):
        a, b = getattr(one_pass, column), getattr(batched, column)
        assert (a is None and b is None) or list(a) == list(b), column


@pytest.mark.parametrize("one_pass", [True, False])
def test_events_of_other_phases_are_dropped_and_not_counted_as_malformed(one_pass, monkeypatch):
    """Flow arrows, duration pairs, a phase outside the format and an event without one are
    not kept, and only the kept event that is broken counts as malformed."""
    if not one_pass:
        monkeypatch.setattr(parser, "ONE_PASS_MAX_EVENTS", -1)
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "trainer"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"External id": 4, "Sequence number": 9}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 11},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 12, "bp": "e"},
        {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": 13},
        {"ph": "Z", "name": "not a phase", "pid": 1, "tid": 1, "ts": 14},
        {"name": "no phase", "pid": 1, "tid": 1, "ts": 15},
        {"ph": "X", "cat": "my_tool", "name": "custom", "pid": 1, "tid": 1, "ts": 16, "dur": 1,
         "args": {"correlation": 77, "External id": 5}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::broken", "pid": 1, "tid": 1, "ts": 20, "dur": 1, "args": [1]},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 21,
         "args": {"Bytes": 512, "Total Allocated": 1024, "Addr": 99, "Device Type": 0, "Device Id": -1}},
    ]
    table = parse_trace(json.dumps({"schemaVersion": 1, "traceEvents": events}).encode(), "t.json")
    assert list(table.name) == ["aten::mm", "custom", "[memory]"]
    assert table.meta.skipped_events == 1  # aten::broken
    assert table.meta.thread_names == ((1, "trainer"),)
    assert table["seq"].tolist() == [9, MISSING, MISSING]
    # An event of a category nbprofiler does not know keeps every arg it has.
    assert table["correlation"].tolist() == [MISSING, 77, MISSING]
    assert table["external_id"].tolist() == [4, 5, MISSING]
    assert table["bytes"][2] == 512 and table["addr"][2] == 99 and table["total_allocated"][2] == 1024
