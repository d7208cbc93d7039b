"""Hostile and broken trace files: ``nbprofiler.load`` returns a Report or raises
``TraceError`` naming the file, never another exception, never hangs, never runs code;
and every table and rendering of a Report it returns works.

test_trace_files.py covers the plain cases (missing, empty, not JSON, truncated JSON
and gzip, a JSON list, an oversized file under a small limit, a few malformed events).
Here: the rest of the hostile inputs, by name, then hypothesis mutating the shared
traces at the byte level, the gzip level and the JSON level.

The number of examples comes from a hypothesis settings profile: ``nbprofiler-ci``
(few, for CI) unless ``NBPROFILER_FUZZ_PROFILE`` names another; bench/fuzz.py runs
``nbprofiler-bench`` (thousands) through the same tests.
"""
from __future__ import annotations

import builtins
import gzip
import json
import math
import os
import pickle
import resource
import time
import zlib
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbprofiler
from conftest import shared_trace
from nbprofiler.report.report import Report

SMALL_TRACES = ("mi250_rocm_toy_train.pt.trace.json.gz", "cpu_only.pt.trace.json.gz",
                "a100_alexnet_small.pt.trace.json.gz")
HOSTILE_NAME = "<img src=x onerror=alert(1)></script>"

# A profile's max_examples is a base that each property test scales by its weight: byte
# mutations are cheap (most are refused at once), a trace that loads costs a full
# rendering (~0.3 s with its charts). CI: about 125 examples; the bench: about 2,500.
_COMMON: dict[str, Any] = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("nbprofiler-ci", max_examples=40, derandomize=True, **_COMMON)  # the same cases each run
settings.register_profile("nbprofiler-bench", max_examples=800, **_COMMON)
PROFILE = os.environ.get("NBPROFILER_FUZZ_PROFILE", "nbprofiler-ci")


def fuzz(weight: float) -> settings:
    """The profile's settings with ``weight`` times its base number of examples."""
    base = settings.get_profile(PROFILE)
    return settings(base, max_examples=max(1, round(base.max_examples * weight)))

HANG_LIMIT_S = 30.0  # a small trace that takes this long is a hang in all but name


# -- what every outcome must satisfy ------------------------------------------------------

class Outcome:
    """Counts what the checks saw (bench/fuzz.py prints it)."""

    cases = 0
    loaded = 0
    refused = 0


def report_tables() -> list[str]:
    """Every property and cached property of Report, found at run time, so a table
    added later is fuzzed too."""
    return [name for name, attr in vars(Report).items() if isinstance(attr, (property, cached_property))]


def exercise(report: Report) -> None:
    """Compute every table and rendering a user can reach; any exception is a bug."""
    for name in report_tables():
        getattr(report, name)
    report.operators_by_shape()
    report.to_text()
    report.to_html()
    repr(report)
    bundle = report._repr_mimebundle_()
    json.dumps(bundle["application/vnd.nbprofiler.report+json"], allow_nan=False)  # the front end's JSON


def check_load(path: Path) -> Report | None:
    """Load ``path``: a Report that fully renders, or a one-line TraceError naming the file."""
    Outcome.cases += 1
    start = time.perf_counter()
    try:
        report = nbprofiler.load(path)
    except nbprofiler.TraceError as exc:
        message = str(exc)
        assert str(path) in message and "\n" not in message, message
        Outcome.refused += 1
        return None
    finally:
        assert time.perf_counter() - start < HANG_LIMIT_S
    exercise(report)
    assert time.perf_counter() - start < HANG_LIMIT_S
    Outcome.loaded += 1
    return report


@cache
def raw_trace(name: str) -> bytes:
    return gzip.decompress(shared_trace(name).read_bytes())


def trace_dict(name: str = SMALL_TRACES[0]) -> dict[str, Any]:
    return json.loads(raw_trace(name))


def dumps(obj: Any) -> bytes:
    """JSON with ``Raw`` tokens written verbatim (numbers Python's json cannot write)."""
    text = json.dumps(obj, default=lambda o: f"\x00RAW{o.token}\x00")
    return text.replace('"\\u0000RAW', "").replace('\\u0000"', "").encode()


class Raw:
    def __init__(self, token: str) -> None:
        self.token = token


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# -- named hostile inputs -------------------------------------------------------------------

def _with_first_op(change) -> bytes:
    trace = trace_dict()
    event = next(e for e in trace["traceEvents"] if e.get("cat") == "cpu_op")
    change(event)
    return dumps(trace)


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


NAMED: dict[str, tuple[Any, str]] = {
    # name: (bytes, or a function giving them; "loads" / "refused" / "either")
    "missing ph": (lambda: _with_first_op(lambda e: e.pop("ph")), "loads"),
    "missing name": (lambda: _with_first_op(lambda e: e.pop("name")), "loads"),
    "missing ts": (lambda: _with_first_op(lambda e: e.pop("ts")), "loads"),
    "missing dur": (lambda: _with_first_op(lambda e: e.pop("dur")), "loads"),
    "missing pid and tid": (lambda: _with_first_op(lambda e: (e.pop("pid"), e.pop("tid"))), "loads"),
    "missing args": (lambda: _with_first_op(lambda e: e.pop("args", None)), "loads"),
    "every event only a ph": (lambda: dumps({"traceEvents": [{"ph": "X"}] * 50}), "either"),
    "NaN duration as a string": (lambda: _with_first_op(lambda e: e.update(dur="NaN")), "loads"),
    "NaN literal (not JSON)": (lambda: _with_first_op(lambda e: e.update(dur=Raw("NaN"))), "refused"),
    "Infinity literal (not JSON)": (lambda: _with_first_op(lambda e: e.update(ts=Raw("Infinity"))), "refused"),
    "negative duration": (lambda: _with_first_op(lambda e: e.update(dur=-250)), "loads"),
    "ends before it starts": (lambda: _with_first_op(lambda e: e.update(ts=e["ts"] + 1e6, dur=-1e6 - 1)), "loads"),
    "duration 1e400": (lambda: _with_first_op(lambda e: e.update(dur=Raw("1e400"))), "loads"),
    "timestamp -1e400": (lambda: _with_first_op(lambda e: e.update(ts=Raw("-1e400"))), "loads"),
    "timestamp 2**70": (lambda: _with_first_op(lambda e: e.update(ts=2**70)), "loads"),
    "pid, tid, ids 2**70": (lambda: _with_first_op(lambda e: e.update(
        pid=2**70, tid=-(2**70), args={"External id": 2**70, "correlation": 2**70, "Sequence number": 2**200})),
        "loads"),
    "integer with 5000 digits": (lambda: _with_first_op(lambda e: e.update(dur=Raw("9" * 5000))), "either"),
    "non-UTF-8 bytes in a name": (
        lambda: raw_trace(SMALL_TRACES[0]).replace(b"aten::", b"aten\xff\xfe::", 1), "either"),
    "non-UTF-8 file (Latin-1)": (
        lambda: raw_trace(SMALL_TRACES[0]).replace(b'"name": "', b'"name": "\xe9', 5), "either"),
    "UTF-16 file": (lambda: raw_trace(SMALL_TRACES[1]).decode().encode("utf-16"), "refused"),
    "NUL bytes": (lambda: b"\x00" * 4096, "refused"),
    "args nested 100k levels": (lambda: raw_trace(SMALL_TRACES[0]).replace(
        b'"args": {', b'"args": {"deep": ' + _deep(100_000).encode() + b", ", 1), "refused"),
    "Input Dims nested 100k levels": (lambda: raw_trace(SMALL_TRACES[0]).replace(
        b'"args": {', b'"args": {"Input Dims": ' + _deep(100_000).encode() + b", ", 1), "refused"),
    "objects nested 100k levels at the top": (
        lambda: b'{"x": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 + b', "traceEvents": []}', "refused"),
    "traceEvents is an object": (b'{"traceEvents": {"ph": "X"}}', "refused"),
    "traceEvents holds scalars": (b'{"traceEvents": [1, "x", null, true, [], {}]}', "refused"),
    "only metadata events": (lambda: dumps({"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1,
                                                              "args": {"name": HOSTILE_NAME}}]}), "refused"),
    "deviceProperties garbage": (lambda: dumps({**trace_dict(), "deviceProperties": [
        {"id": 2**70, "name": 7, "totalGlobalMem": -1, "computeMajor": 1e300, "computeMinor": "x", "numSms": []}]}),
        "either"),
    "distributedInfo garbage": (lambda: dumps({**trace_dict(), "distributedInfo": {"rank": 2**70, "world_size": -3,
                                                                                    "backend": {"a": 1}}}), "either"),
    "a JSON string": (b'"traceEvents"', "refused"),
    "a JSON number": (b"1e400", "refused"),
    "trailing garbage": (lambda: raw_trace(SMALL_TRACES[1]) + b"\n{\"traceEvents\": []}", "refused"),
    "truncated mid-number": (
        lambda: raw_trace(SMALL_TRACES[1])[: raw_trace(SMALL_TRACES[1]).find(b'"ts": ') + 8], "refused"),
}


@pytest.mark.parametrize("case", NAMED)
def test_named_hostile_input(case, scratch):
    data, expected = NAMED[case]
    path = scratch / "named.pt.trace.json"
    path.write_bytes(data() if callable(data) else data)
    report = check_load(path)
    if expected != "either":
        assert ("loads" if report is not None else "refused") == expected


def test_profiler_step_number_past_int64(scratch):
    """Found by bench/fuzz.py: a step number too long for int64 is no step, not a crash."""
    trace = trace_dict()
    next(e for e in trace["traceEvents"] if str(e.get("name")).startswith("ProfilerStep#"))["name"] = (
        "ProfilerStep#99999999999999999999")
    path = scratch / "step.pt.trace.json"
    path.write_bytes(dumps(trace))
    check_load(path)


def test_truncated_gzip_at_every_tenth(scratch):
    data = shared_trace(SMALL_TRACES[2]).read_bytes()
    path = scratch / "cut.pt.trace.json.gz"
    for cut in range(1, 10):
        path.write_bytes(data[: len(data) * cut // 10])
        assert check_load(path) is None


def test_gzip_bomb_is_refused_at_the_limit(scratch, monkeypatch):
    """A trace's opening and 64 MiB of blanks in about 64 KiB of gzip, under a 16 MiB limit: refused
    while decompressing. (The message gives sizes in decimal units, as the limit's variable is in
    bytes: 16.8 MB.)"""
    monkeypatch.setenv("NBPROFILER_MAX_TRACE_BYTES", str(16 << 20))
    path = scratch / "bomb.pt.trace.json.gz"
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as fh:
        fh.write(deflate.compress(b'{"traceEvents": ['))
        block = b" " * (1 << 20)
        for _ in range(64):
            fh.write(deflate.compress(block))
        fh.write(deflate.flush())
    with pytest.raises(nbprofiler.TraceError, match="decompresses to more than the 16.8 MB limit; profile fewer steps"):
        nbprofiler.load(path)


def test_2gb_file_in_a_directory_is_refused_up_front(tmp_path):
    """Sparse, so it costs no disk; refused from its size, before a byte is read."""
    (tmp_path / "small.txt").write_text("not a trace")
    big = tmp_path / "rank0.pt.trace.json"
    with big.open("wb") as fh:
        fh.truncate(2 * 10**9 + 1)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(nbprofiler.TraceError) as info:
        nbprofiler.load(tmp_path)
    assert time.perf_counter() - start < 2
    grew_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert grew_kb < 100_000, f"the refusal read {grew_kb} kB"
    message = str(info.value)
    assert str(big) in message and "2.0 GB" in message and "limit" in message and "profile fewer steps" in message
    assert "\n" not in message


def test_fifo_and_symlink_loop_do_not_hang(tmp_path):
    """Opening a FIFO for reading blocks forever; a symlink loop recurses forever."""
    os.mkfifo(tmp_path / "pipe.pt.trace.json")
    (tmp_path / "loop").symlink_to(tmp_path)
    start = time.perf_counter()
    with pytest.raises(nbprofiler.TraceError, match="no trace files"):
        nbprofiler.load(tmp_path)
    with pytest.raises(nbprofiler.TraceError, match="not a regular file or a directory"):
        nbprofiler.load(tmp_path / "pipe.pt.trace.json")
    assert time.perf_counter() - start < 5


def test_loading_runs_no_code(scratch, monkeypatch):
    """Strings that would run code if anything evaluated or unpickled them."""
    marker = scratch / "pwned"
    payload = f"__import__('os').system('touch {marker}')"
    trace = trace_dict()
    for event in trace["traceEvents"][:20]:
        event["name"] = payload
        event.setdefault("args", {}).update({"Call stack": payload, "Input Dims": payload, "py/object": "os.system"})
    trace["__reduce__"] = payload
    trace["pickle"] = pickle.dumps(os.system).decode("latin-1")
    path = scratch / "code.pt.trace.json"
    path.write_bytes(dumps(trace))
    check_load(path)  # imports everything the analyses use, before the traps are set

    def trap(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"loading a trace called an unpickler or a shell: {args[:1]}")

    def guard(original):  # eval/exec of nbprofiler's own code (a namedtuple class) is fine; of trace text, not
        def checked(source: Any, *args: Any, **kwargs: Any) -> Any:
            assert "__import__" not in str(source), f"trace text reached {original.__name__}: {source!r}"
            return original(source, *args, **kwargs)
        return checked

    for target, name in ((pickle, "loads"), (pickle, "load"), (os, "system"), (os, "popen")):
        monkeypatch.setattr(target, name, trap)
    for name in ("eval", "exec"):
        monkeypatch.setattr(builtins, name, guard(getattr(builtins, name)))
    check_load(path)
    assert not marker.exists()


# -- property tests: mutations of the shared traces -----------------------------------------

positions = st.floats(min_value=0, max_value=1, allow_nan=False)
byte_edits = st.one_of(
    st.tuples(st.just("flip"), positions, st.integers(0, 255)),
    st.tuples(st.just("truncate"), positions, st.just(0)),
    st.tuples(st.just("insert"), positions, st.sampled_from([b"{", b"}", b"[", b"]", b",", b'"', b"\\", b"\xff",
                                                             b"\x00", b"1e400", b"-", b":", b"null", b"\\ud800"])),
    st.tuples(st.just("delete"), positions, st.integers(1, 64)),
    st.tuples(st.just("repeat"), positions, st.integers(1, 256)),
)


def apply_byte_edits(data: bytes, edits: list[tuple[str, float, Any]]) -> bytes:
    buf = bytearray(data)
    for kind, where, arg in edits:
        if not buf:
            break
        i = min(int(where * len(buf)), len(buf) - 1)
        if kind == "flip":
            buf[i] = arg
        elif kind == "truncate":
            del buf[i:]
        elif kind == "insert":
            buf[i:i] = arg
        elif kind == "delete":
            del buf[i:i + arg]
        else:
            buf[i:i] = buf[i:i + arg]
    return bytes(buf)


@fuzz(2)
@given(name=st.sampled_from(SMALL_TRACES), edits=st.lists(byte_edits, min_size=1, max_size=6),
       gzipped=st.booleans())
def test_byte_level_mutations(scratch, name, edits, gzipped):
    """Bytes of the JSON (written plain), or of the gzip stream itself."""
    if gzipped:
        data, path = apply_byte_edits(shared_trace(name).read_bytes(), edits), scratch / "bytes.pt.trace.json.gz"
    else:
        data, path = apply_byte_edits(raw_trace(name), edits), scratch / "bytes.pt.trace.json"
    path.write_bytes(data)
    check_load(path)


FIELDS = ("ph", "name", "cat", "ts", "dur", "pid", "tid", "id", "args")
ARG_KEYS = ("External id", "external id", "correlation", "device", "stream", "Input Dims", "Call stack",
            "Total Allocated", "Total Reserved", "Bytes", "Addr", "Device Type", "Device Id", "Fwd thread id",
            "Sequence number", "Python id", "Python parent id", "Module Hierarchy", "blocks per SM",
            "est. achieved occupancy %", "name")
CATEGORIES = ("cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
              "python_function", "gpu_user_annotation", "cuda_sync", "Trace", "ac2g", "Kernel", "Operator", "Runtime")
EXTREMES: list[Any] = [None, True, False, 0, -1, 1, 2**31, 2**63, 2**70, -(2**70), 0.5, -1e-9, 1e308, -1e308, 5e-324,
            Raw("1e400"), Raw("-1e400"), Raw("1E-400"), Raw("-0"), "", "x", "123", "-5", "0x1f", "NaN", "inf", "1e400",
            "ProfilerStep#3", "ProfilerStep#99999999999999999999", "ProfilerStep#-1", "[memory]", HOSTILE_NAME,
            "\u202e\u0000\ud7ff", "a" * 5000, [], [1, 2], [[[[[]]]]], {}, {"a": 1}, {"ph": "X"}]
# Names the analyses classify events by: a renamed event changes what it is taken for.
TRICKY_NAMES = ["ProfilerStep#99999999999999999999", "ProfilerStep#-1", "ProfilerStep#", "ProfilerStep#1",
                "ProfilerStep#\u0663", "[memory]", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad",
                "autograd::engine::evaluate_function: AddmmBackward0", "nccl:all_reduce", "gloo:all_reduce",
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "cudaLaunchKernel", "cudaDeviceSynchronize",
                "cudaStreamSynchronize", "cudaMemcpyAsync", "hipLaunchKernel", "aten::addmm", "nn.Module: Linear_0",
                "Torch-Compiled Region", "", HOSTILE_NAME, "x" * 3000]
values = st.one_of(st.sampled_from(EXTREMES), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=12), st.sampled_from(CATEGORIES), st.sampled_from(["X", "i", "I", "M", "B", "E",
                                                                                        "s", "f", "C", "b", "e"]))
event_edits = st.one_of(
    st.tuples(st.just("set"), positions, st.sampled_from(FIELDS), values),
    st.tuples(st.just("remove"), positions, st.sampled_from(FIELDS), st.none()),
    st.tuples(st.just("set_arg"), positions, st.sampled_from(ARG_KEYS), values),
    st.tuples(st.just("swap_cat"), positions, st.sampled_from(CATEGORIES), st.none()),
    st.tuples(st.just("rename"), positions, st.none(), st.sampled_from(TRICKY_NAMES)),
    st.tuples(st.just("rename_step"), positions, st.none(), st.sampled_from(TRICKY_NAMES)),
    st.tuples(st.just("end_before_start"), positions, st.none(), st.floats(1, 1e9)),
    st.tuples(st.just("duplicate"), positions, st.none(), st.none()),
    st.tuples(st.just("drop"), positions, st.none(), st.none()),
    st.tuples(st.just("replace"), positions, st.none(), values),
    st.tuples(st.just("top"), positions, st.sampled_from(["deviceProperties", "distributedInfo", "schemaVersion",
                                                          "baseTimeNanoseconds", "displayTimeUnit"]),
              st.one_of(values, st.lists(st.dictionaries(st.sampled_from(["id", "name", "totalGlobalMem",
                                                                          "computeMajor", "computeMinor", "numSms",
                                                                          "rank", "world_size"]), values),
                                         max_size=3))),
)


def apply_event_edits(trace: dict[str, Any], edits: list[tuple[str, float, Any, Any]]) -> dict[str, Any]:
    """``edits`` in order: ``top`` sets a top-level field, ``rename_step`` renames a step range,
    and the other kinds change the event at ``where`` (a fraction of the list); once no event
    is left, the edits stop."""
    events = trace["traceEvents"]
    for kind, where, key, value in edits:
        if kind == "top":
            trace[key] = value
        elif not events:
            break
        elif kind == "rename_step":
            _rename_step(events, where, value)
        else:
            _edit_event(events, min(int(where * len(events)), len(events) - 1), kind, key, value)
    return trace


def _rename_step(events: list[Any], where: float, name: Any) -> None:
    """Rename one of the ProfilerStep#N ranges, if any is left: the steps decide how every other event is counted."""
    steps = [e for e in events if isinstance(e, dict) and str(e.get("name", "")).startswith("ProfilerStep#")]
    if steps:
        steps[min(int(where * len(steps)), len(steps) - 1)]["name"] = name


def _edit_event(events: list[Any], i: int, kind: str, key: Any, value: Any) -> None:
    """Replace, duplicate or drop ``events[i]``, or change its fields; an event that is not an
    object can only be replaced."""
    event = events[i]
    if kind == "replace" or not isinstance(event, dict):
        events[i] = value
    elif kind == "duplicate":
        events.insert(i, dict(event))
    elif kind == "drop":
        del events[i]
    else:
        _edit_fields(event, kind, key, value)


def _edit_fields(event: dict[str, Any], kind: str, key: Any, value: Any) -> None:
    """Change one event's fields: set or remove one, set an arg, swap its category, rename it,
    or make it end before it starts."""
    if kind == "set":
        event[key] = value
    elif kind == "remove":
        event.pop(key, None)
    elif kind == "set_arg":
        args = event.get("args")
        event["args"] = {**(args if isinstance(args, dict) else {}), key: value}
    elif kind == "swap_cat":
        event["cat"] = key
    elif kind == "rename":
        event["name"] = value
    elif kind == "end_before_start":
        ts = event.get("ts")
        event["ts"] = (ts if isinstance(ts, (int, float)) and math.isfinite(ts) else 0) + value
        event["dur"] = -value - 1


@fuzz(0.75)
@given(name=st.sampled_from(SMALL_TRACES), edits=st.lists(event_edits, min_size=1, max_size=12))
def test_json_level_mutations(scratch, name, edits):
    """Events with types swapped, fields removed, values extreme: loads and renders, or TraceError."""
    path = scratch / "events.pt.trace.json"
    path.write_bytes(dumps(apply_event_edits(trace_dict(name), edits)))
    check_load(path)


@fuzz(0.4)
@given(name=st.sampled_from(SMALL_TRACES),
       edits=st.lists(st.tuples(st.just("set"), positions, st.sampled_from(["ts", "dur"]),
                                st.one_of(st.floats(-1e12, 1e12), st.integers(-(2**53), 2**53))),
                      min_size=5, max_size=60))
def test_timing_mutations_still_load(scratch, name, edits):
    """Only timestamps and durations moved: the trace must still load (bad events are
    skipped, not fatal), so every analysis meets overlapping, reversed and far-off ranges."""
    path = scratch / "timing.pt.trace.json"
    path.write_bytes(dumps(apply_event_edits(trace_dict(name), edits)))
    assert check_load(path) is not None
