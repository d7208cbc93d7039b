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


def _force(path: str, monkeypatch) -> None:
    """Make parse_trace take ``path``: "one pass", "chunks" (of 50 kB) or "batches"."""
    if path != "one pass":
        monkeypatch.setattr(parser, "ONE_PASS_MAX_EVENTS", -1)
        monkeypatch.setattr(parser, "CHUNK_BYTES", 50_000)
        monkeypatch.setattr(parser, "BATCH", 997)  # many batches, each of a different mix of kinds
    if path == "batches":
        monkeypatch.setattr(parser, "_build_from_chunks", lambda data, estimate: None)


def _assert_same_table(a, b) -> None:
    assert a.meta == b.meta and list(a.names) == list(b.names)
    assert np.array_equal(a.kind, b.kind) and np.array_equal(a.name_code, b.name_code)
    for column, values in a.columns.items():
        assert np.array_equal(values, b[column], equal_nan=values.dtype.kind == "f"), column
    for column in (*JSON_ARGS.values(), *TEXT_ARGS.values()):
        x, y = getattr(a, column), getattr(b, column)
        assert (x is None and y is None) or list(x) == list(y), column


@pytest.mark.parametrize("path", ["chunks", "batches"])
def test_every_decode_path_gives_the_same_table(path, monkeypatch):
    """Traces of up to ONE_PASS_MAX_EVENTS events are decoded in one pass; larger ones in
    chunks cut at line starts, or in batches of raw events where they cannot be cut."""
    data = gzip.decompress(shared_trace("a100_nccl_distributed.pt.trace.json.gz").read_bytes())
    assert len(json.loads(data)["traceEvents"]) <= parser.ONE_PASS_MAX_EVENTS
    one_pass = parse_trace(data, "trace")
    _force(path, monkeypatch)
    _assert_same_table(one_pass, parse_trace(data, "trace"))


def test_a_chunk_cut_inside_an_event_is_read_again_in_batches(monkeypatch):
    """A list of objects inside an event's args, one per line, looks like the start of an event:
    a chunk cut there does not decode, and the trace is read in batches instead."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5,
               "args": {"External id": i, "extra": [{"a": 1}, {"b": 2}]}} for i in range(50)]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1).encode()
    one_pass = parse_trace(text, "t.json")
    _force("chunks", monkeypatch)
    monkeypatch.setattr(parser, "CHUNK_BYTES", 1)
    cut = parser._EVENT_AT_LINE_START.search(text, text.index(b'"traceEvents"'))
    assert b'"b": 2' in text[cut.end():cut.end() + 20]  # the first cut falls inside the first event's args
    assert parser._build_from_chunks(text, 50) is None
    _assert_same_table(one_pass, parse_trace(text, "t.json"))
    assert list(one_pass.name)[:3] == ["op0", "op1", "op2"] and one_pass["external_id"][49] == 49


def test_a_trace_on_one_line_is_read_in_batches(monkeypatch):
    """No line breaks, no cuts: rather than one chunk of the whole list, batches of raw events."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5}
              for i in range(200)]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()
    _force("chunks", monkeypatch)
    monkeypatch.setattr(parser, "CHUNK_BYTES", 1000)
    assert parser._build_from_chunks(text, 200) is None
    assert list(parse_trace(text, "t.json").name) == [f"op{i}" for i in range(200)]


@pytest.mark.parametrize("path", ["one pass", "chunks", "batches"])
def test_events_of_other_phases_are_dropped_and_not_counted_as_malformed(path, monkeypatch):
    """Flow arrows, duration pairs, a phase outside the format and an event without one are
    not kept, and only the kept event that is broken counts as malformed."""
    _force(path, monkeypatch)
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
    table = parse_trace(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1).encode(), "t.json")
    assert list(table.name) == ["aten::mm", "custom", "[memory]"]
    assert table.meta.skipped_events == 1  # aten::broken
    assert table.meta.thread_names == ((1, "trainer"),)
    assert table["seq"].tolist() == [9, MISSING, MISSING]
    # An event of a category nbprofiler does not know keeps every arg it has.
    assert table["correlation"].tolist() == [MISSING, 77, MISSING]
    assert table["external_id"].tolist() == [4, 5, MISSING]
    assert table["bytes"][2] == 512 and table["addr"][2] == 99 and table["total_allocated"][2] == 1024
