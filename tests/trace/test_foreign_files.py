"""Files that are not what ``nbprofiler.load`` expects, or are but in an unusual shape.

Other profilers' traces (Chromium's own, TensorFlow's and JAX's, a Perfetto protobuf)
are refused with one line that says what the file is and what to load instead; valid
files in unusual shapes (several gzip members, leading whitespace, an empty rank file
in a folder) load; and names torch's exporter could not write are named in a note.
"""
from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

import nbprofiler
from conftest import TRACE_FILES, shared_trace

SMALL = "mi250_rocm_toy_train.pt.trace.json.gz"


@cache
def raw_trace(name: str = SMALL) -> bytes:
    return gzip.decompress(shared_trace(name).read_bytes())


def refused(path: str | Path) -> str:
    """The message ``load`` refuses ``path`` with; it must be one line naming the file."""
    with pytest.raises(nbprofiler.TraceError) as info:
        nbprofiler.load(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- valid files in unusual shapes ----------------------------------------------------------

def test_a_gzip_file_of_several_members_loads_as_the_whole_trace(tmp_path):
    """``gzip.compress(a) + gzip.compress(b)`` is one stream to gzip and to torch."""
    data = raw_trace()
    half = len(data) // 2
    path = tmp_path / "two_members.pt.trace.json.gz"
    path.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]) + b"\0" * 16)
    assert gzip.decompress(path.read_bytes()) == data
    report = nbprofiler.load(path)
    assert report.operators.equals(nbprofiler.load(shared_trace(SMALL)).operators)


def test_an_empty_path_is_refused_not_the_current_folder_searched(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.pt.trace.json.gz").write_bytes(shared_trace(SMALL).read_bytes())
    monkeypatch.chdir(tmp_path)
    assert refused("") == "the path is empty (''); give a trace file or a directory of trace files"


def test_a_trace_after_4_kb_of_whitespace_loads(tmp_path):
    path = tmp_path / "padded.pt.trace.json"
    path.write_bytes(b" \n" * 2048 + raw_trace())
    assert nbprofiler.load(path).operators.equals(nbprofiler.load(shared_trace(SMALL)).operators)
    (tmp_path / "blank.json").write_bytes(b" \n" * 4096)
    assert refused(tmp_path / "blank.json") == (f"{tmp_path / 'blank.json'}: the file is empty; export the trace "
                                                "again (prof.export_chrome_trace or --trace)")


def test_an_empty_rank_file_is_skipped_and_named(tmp_path):
    """A rank that crashed before its export leaves a 0-byte file; the ranks that finished still load."""
    (tmp_path / "rank0.100.pt.trace.json.gz").write_bytes(shared_trace("a100_nccl_distributed.pt.trace.json.gz")
                                                          .read_bytes())
    (tmp_path / "rank3.100.pt.trace.json.gz").write_bytes(shared_trace("a100_train.pt.trace.json.gz").read_bytes())
    (tmp_path / "rank1.100.pt.trace.json").write_bytes(b"")
    report = nbprofiler.load(tmp_path)
    assert sorted(report.ranks) == [0, 3]
    assert (f"{tmp_path}: skipped rank1.100.pt.trace.json: empty (0 bytes), as when a process stops before its "
            "export or is still writing; loaded the other 2 file(s).") in report.notes


def test_an_empty_file_beside_one_trace_loads_that_trace_and_says_so(tmp_path):
    (tmp_path / "host_1.100.pt.trace.json.gz").write_bytes(shared_trace(SMALL).read_bytes())
    (tmp_path / "host_1.200.pt.trace.json.gz").write_bytes(b"")
    report = nbprofiler.load(tmp_path)
    assert report.source_path == str(tmp_path / "host_1.100.pt.trace.json.gz")
    assert any(n.startswith(f"{tmp_path}: skipped host_1.200.pt.trace.json.gz: empty (0 bytes)") for n in report.notes)


def test_a_directory_of_empty_files_names_the_first(tmp_path):
    for name in ("a.pt.trace.json", "b.pt.trace.json"):
        (tmp_path / name).write_bytes(b"")
    assert refused(tmp_path) == (f"{tmp_path / 'a.pt.trace.json'}: the file is empty; export the trace again "
                                 "(prof.export_chrome_trace or --trace)")


@pytest.mark.parametrize("name", TRACE_FILES)
def test_every_shared_trace_is_a_torch_trace_by_its_events_alone(tmp_path, name):
    """The 2021-schema V100 traces, ROCm, CPU-only: torch's categories or ProfilerStep ranges mark
    them even without the header fields (schemaVersion, deviceProperties) a foreign trace lacks."""
    trace = json.loads(raw_trace(name))
    del trace["schemaVersion"], trace["deviceProperties"]
    path = tmp_path / name.removesuffix(".gz")
    path.write_text(json.dumps(trace))
    assert len(nbprofiler.load(path).operators) > 0


# -- other profilers' traces ------------------------------------------------------------------

LOAD_TORCH = "load a trace that prof.export_chrome_trace or tensorboard_trace_handler wrote"


def chromium_trace() -> dict:
    """What chrome://tracing or DevTools' Performance panel saves: browser and renderer
    processes, events in Chromium's categories, and a metadata block."""
    meta = {"ph": "M", "cat": "__metadata", "ts": 0}
    return {
        "traceEvents": [
            {**meta, "pid": 4101, "tid": 4101, "name": "process_name", "args": {"name": "Browser"}},
            {**meta, "pid": 4101, "tid": 4123, "name": "thread_name", "args": {"name": "CrBrowserMain"}},
            {**meta, "pid": 4188, "tid": 4188, "name": "process_name", "args": {"name": "Renderer"}},
            {**meta, "pid": 4188, "tid": 1, "name": "thread_name", "args": {"name": "CrRendererMain"}},
            {"pid": 4101, "tid": 4123, "ts": 2_391_000_120, "ph": "X", "cat": "toplevel", "dur": 48, "tdur": 45,
             "tts": 9_120, "name": "ThreadControllerImpl::RunTask",
             "args": {"src_file": "../../mojo/public/cpp/system/simple_watcher.cc", "src_func": "Notify"}},
            {"pid": 4188, "tid": 1, "ts": 2_391_000_300, "ph": "X", "cat": "devtools.timeline", "dur": 1_210,
             "name": "FunctionCall", "args": {"data": {"functionName": "onClick", "url": "https://example.org/app.js"}}},
            {"pid": 4188, "tid": 1, "ts": 2_391_000_310, "ph": "X", "cat": "v8,devtools.timeline", "dur": 900,
             "name": "v8.compile", "args": {}},
            {"pid": 4188, "tid": 1, "ts": 2_391_001_600, "ph": "X", "cat": "blink,devtools.timeline", "dur": 310,
             "name": "UpdateLayoutTree", "args": {"elementCount": 42}},
            {"pid": 4188, "tid": 1, "ts": 2_391_001_950, "ph": "X",
             "cat": "disabled-by-default-devtools.timeline", "dur": 95, "name": "Layout", "args": {}},
            {"pid": 4101, "tid": 4123, "ts": 2_391_000_000, "ph": "I", "cat": "disabled-by-default-devtools.timeline",
             "s": "t", "name": "TracingStartedInBrowser", "args": {"data": {"frameTreeNodeId": 1}}},
        ],
        "metadata": {"clock-domain": "LINUX_CLOCK_MONOTONIC", "product-version": "Chrome/120.0.6099.109",
                     "trace-config": "", "num-cpus": 8},
    }


def xla_profiler_trace(ops: list[str], threads: list[str]) -> dict:
    """A trace.json.gz as TensorBoard's profile plugin serves it for TensorFlow and JAX:
    processes named /host:CPU and /device:GPU:0, thread metadata, ns display unit, and
    the empty event the plugin ends the list with."""
    events = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 1, "name": "process_sort_index", "args": {"sort_index": 1}},
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": threads[0]}},
        {"ph": "M", "pid": 701, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 701, "tid": 14, "name": "thread_name", "args": {"name": threads[1]}},
    ]
    for i, op in enumerate(ops):
        events.append({"pid": 701, "tid": 14, "ts": 6_019_503.5 + 40 * i, "dur": 31.2, "ph": "X", "name": op,
                       "args": {"long_name": op, "group_id": "3"}})
        events.append({"pid": 1, "tid": 1, "ts": 6_019_520.25 + 40 * i, "dur": 12.8, "ph": "X",
                       "name": f"{op.split(':')[-1].lower()}_kernel", "args": {"correlation_id": str(100 + i)}})
    return {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": [*events, {}]}


def test_a_chromium_trace_is_refused_as_one(tmp_path):
    path = tmp_path / "chrome_trace.json"
    path.write_text(json.dumps(chromium_trace()))
    assert refused(path) == (f"{path}: a Chromium browser trace (categories blink, devtools.timeline, toplevel), "
                             f"not a torch.profiler trace; {LOAD_TORCH}")


@pytest.mark.parametrize("profiler, ops, threads", [
    ("tensorflow", ["Op:MatMul", "Op:BiasAdd", "Op:Relu", "Op:SoftmaxCrossEntropyWithLogits"],
     ["Stream #14(Compute)", "tf_Compute"]),
    ("jax", ["jit_train_step", "fusion.12", "dot.3", "reduce.7"], ["XLA Ops", "XLA Modules"]),
])
def test_a_tensorflow_or_jax_trace_is_refused_as_one(tmp_path, profiler, ops, threads):
    path = tmp_path / f"{profiler}.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(xla_profiler_trace(ops, threads)).encode()))
    assert refused(path) == (f"{path}: a TensorFlow or JAX profiler trace (processes /device:GPU:0, /host:CPU), "
                             f"not a torch.profiler trace; {LOAD_TORCH}")


def test_a_chrome_format_trace_of_no_known_profiler_is_not_a_torch_trace(tmp_path):
    path = tmp_path / "app.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "app", "name": "handle_request", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
        {"ph": "X", "cat": "db", "name": "SELECT", "pid": 1, "tid": 1, "ts": 11, "dur": 3}]}))
    assert refused(path) == (f"{path}: not a torch.profiler trace (no schemaVersion, no torch event categories such "
                             f"as cpu_op or kernel, no ProfilerStep ranges); {LOAD_TORCH}")


def _field(number: int, wire: int, payload: bytes | int) -> bytes:
    """One protobuf field: its tag, then a varint, or a length-delimited payload."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    if isinstance(payload, int):
        return varint(number << 3 | wire) + varint(payload)
    return varint(number << 3 | wire) + varint(len(payload)) + payload


def perfetto_trace() -> bytes:
    """A Perfetto ``Trace``: ``TracePacket``s (field 1) holding a thread's track descriptor
    (field 60) and track events (field 11: name 23, type 9 begin/end, track_uuid 11) with
    timestamps (8) on one trusted sequence (10), as the Perfetto SDK writes them."""
    thread = _field(4, 2, _field(1, 0, 1234) + _field(2, 0, 5678) + _field(5, 2, b"main"))
    packets = [_field(60, 2, _field(1, 0, 49083589894) + thread) + _field(10, 0, 3903809)]
    for ts, kind, name in ((200, 1, b"train_step"), (250, 1, b"forward"), (290, 2, b""), (300, 2, b"")):
        event = _field(9, 0, kind) + _field(11, 0, 49083589894) + (_field(23, 2, name) if name else b"")
        packets.append(_field(8, 0, ts) + _field(11, 2, event) + _field(10, 0, 3903809))
    return b"".join(_field(1, 2, p) for p in packets)


def test_a_perfetto_protobuf_is_called_one_not_truncated_json(tmp_path):
    expected = ("a Perfetto protobuf trace, not a torch.profiler JSON trace; export the JSON with "
                "prof.export_chrome_trace(path) or tensorboard_trace_handler")
    path = tmp_path / "run.pftrace"
    path.write_bytes(perfetto_trace())
    assert refused(path) == f"{path}: {expected}"
    gz = tmp_path / "run.json.gz"
    gz.write_bytes(gzip.compress(perfetto_trace()))
    assert refused(gz) == f"{gz}: {expected}"


def test_truncated_json_that_starts_with_a_newline_is_still_truncated_json(tmp_path):
    """0x0a opens a Perfetto packet and a pretty-printed JSON line alike."""
    data = raw_trace()
    path = tmp_path / "cut.json"
    path.write_bytes(b"\n" + data[: len(data) // 2])
    assert "not valid JSON, or truncated" in refused(path)


# -- names torch's exporter cannot write ------------------------------------------------------

def test_names_torch_exported_as_unknown_are_named_in_a_note(tmp_path):
    """torch (2.13) writes "unknown" for any record_function name with a non-ASCII or control
    character; prof.events() keeps the real name, the JSON file does not. The report says so."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    path = tmp_path / "names.pt.trace.json"
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for name in ("résumé ✓", "tab\there", "plain"):
            with record_function(name):
                torch.ones(3) + 1
    prof.export_chrome_trace(str(path))
    assert {"résumé ✓", "tab\there"} <= {e.name for e in prof.events()}
    data = path.read_bytes()
    assert "résumé".encode() not in data and data.count(b'"name": "unknown"') == 2
    report = nbprofiler.load(path)
    assert "plain" in set(report.table.names)
    assert (f"2 record_function range(s) in {path} are named 'unknown': torch.profiler's "
            "JSON export writes that for every name with a non-ASCII or control character, such as "
            "record_function(\"résumé ✓\"), so their real names are not in the file and they share one row; use "
            "ASCII names to tell them apart.") in report.notes
    assert not any("'unknown'" in n for n in nbprofiler.load(shared_trace(SMALL)).notes)


def test_a_live_run_keeps_the_names_torchs_export_loses():
    """torch exports non-ASCII and control-character range names as "unknown"; a live run puts
    the real names back (from the profiler's own events), with stacks and memory recorded too."""
    import torch

    import nbprofiler

    names = ["résumé ✓", 'tab\there "q"', "日本"]
    with nbprofiler.profile(wait=0, warmup=0, active=2, step_on="manual", stack=True) as run:
        for _ in range(2):
            for name in names:
                with torch.profiler.record_function(name):
                    torch.ones(16).sum()
            nbprofiler.step()
    calls = run.report.operators.set_index("name")["calls"]
    assert {name: int(calls[name]) for name in names} == {name: 2 for name in names}
    assert "unknown" not in calls.index
    assert not any("named 'unknown'" in note for note in run.report.notes)  # the lost-names note
