"""The Timeline's data (render/timeline_data.py) read back as the front end reads it: base64
arrays decoded, then checked against the report's own tables and the raw trace."""
from __future__ import annotations

import base64
import json
import shutil
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn
from conftest import shared_raw_events, shared_report, shared_trace

import nbprofiler
from nbprofiler.render import timeline_data, view_model
from nbprofiler.render.timeline_data import TIMELINE_MIME
from nbprofiler.report.report import Report
from nbprofiler.trace.table import EventTable, TraceMeta

EVENT_TYPES = {"start": "<f8", "dur": "<f4", "lane": "<u2", "depth": "<u1", "name": "<u4", "cat": "<u1",
               "count": "<u4", "busy": "<f4", "shapes": "<i4", "stack": "<i4"}
GPU_TRACES = ["v100_resnet50_train_num_workers_0", "v100_resnet_ns_timestamps", "a100_nccl_distributed"]
HOSTILE = "<script>alert(1)</script>"


class Decoded:
    """A payload's events as numpy arrays, with their names, categories and lanes as text."""

    def __init__(self, payload: dict) -> None:
        ev = payload["events"]
        self.a = {k: np.frombuffer(base64.b64decode(ev[k]), dtype=t) for k, t in EVENT_TYPES.items()}
        assert all(len(v) == ev["n"] for v in self.a.values())
        strings = np.array(payload["strings"] + [""], dtype=object)
        self.name = strings[self.a["name"]]
        self.cat = np.array(payload["categories"], dtype=object)[self.a["cat"]]
        lanes = payload["lanes"]
        assert [lane["id"] for lane in lanes] == list(range(len(lanes)))
        self.lane_kind = np.array([lane["kind"] for lane in lanes], dtype=object)[self.a["lane"]]
        self.lane_label = np.array([lane["label"] for lane in lanes], dtype=object)[self.a["lane"]]
        self.shapes = np.where(self.a["shapes"] >= 0, strings[self.a["shapes"]], None)
        self.origin = payload["origin_us"]

    def __getitem__(self, key: str) -> np.ndarray:
        return self.a[key]


def _in_window(events: list[dict], payload: dict) -> list[dict]:
    lo = payload["origin_us"] + payload["span_us"][0]
    hi = payload["origin_us"] + payload["span_us"][1]
    return [e for e in events if e["ts"] <= hi and e["ts"] + e.get("dur", 0) >= lo]


@pytest.mark.parametrize("name", GPU_TRACES)
def test_every_kernel_is_on_its_stream_lane_with_the_kernel_tables_time(name):
    report = shared_report(name)
    payload = view_model.of(report).timeline_payload()
    assert payload["aggregated"] is None
    ev = Decoded(payload)
    kernel = np.isin(ev.cat, ["kernel", "nccl"])
    assert set(ev.lane_kind[kernel]) == {"stream"}
    # Per name: the calls and total time the Kernels table gives.
    table = report.kernels.set_index("name")
    total = Counter()
    for n, d in zip(ev.name[kernel], ev["dur"][kernel].astype(np.float64)):
        total[n] += d
    assert sorted(total) == sorted(table.index)
    for n, us in total.items():
        assert us == pytest.approx(table.loc[n, "total_us"], rel=1e-5, abs=0.01), n
    assert Counter(ev.name[kernel]) == dict(zip(table.index, table["calls"]))
    # Each on the lane of its own device and stream, as the trace records them.
    raw = Counter((f"GPU {e['args']['device']} stream {e['args']['stream']}", e["name"])
                  for e in _in_window(shared_raw_events(name), payload) if e.get("cat") in ("Kernel", "kernel"))
    assert Counter(zip(ev.lane_label[kernel], ev.name[kernel])) == raw


@pytest.mark.parametrize("name", GPU_TRACES)
def test_each_flow_goes_from_a_launch_to_the_activity_with_its_correlation_id(name):
    payload = view_model.of(shared_report(name)).timeline_payload()
    ev = Decoded(payload)
    flows = payload["flows"]
    src = np.frombuffer(base64.b64decode(flows["src"]), dtype="<u4")
    dst = np.frombuffer(base64.b64decode(flows["dst"]), dtype="<u4")
    assert len(src) == len(dst) == flows["n"] > 0
    raw = _in_window(shared_raw_events(name), payload)
    launch = {e["args"]["correlation"]: e for e in raw
              if e.get("cat") in ("Runtime", "cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    work = [e for e in raw if e.get("cat") in ("Kernel", "kernel", "Memcpy", "gpu_memcpy", "Memset", "gpu_memset")]
    expected = {(launch[c]["name"], launch[c]["ts"], e["name"], e["ts"])
                for e in work if (c := e["args"].get("correlation")) in launch}
    at = (ev.origin + ev["start"]).tolist()  # Python floats: numpy's round(x, 3) scales x by 1000 and loses µs
    found = {(ev.name[s], round(at[s], 3), ev.name[d], round(at[d], 3)) for s, d in zip(src.tolist(), dst.tolist())}
    assert set(ev.cat[src]) == {"runtime"}
    assert set(ev.cat[dst]) <= {"kernel", "nccl", "memcpy", "memset"}
    assert found == {(a, round(t, 3), b, round(u, 3)) for a, t, b, u in expected}


@pytest.mark.parametrize("name", [*GPU_TRACES, "cpu_only", "mi250_rocm_toy_train"])
def test_steps_are_the_reports_profiled_steps(name):
    report = shared_report(name)
    payload = view_model.of(report).timeline_payload()
    ev = Decoded(payload)
    steps = report.stretched_steps
    assert [s["step"] for s in payload["steps"]] == list(steps["step"]) == list(report.step_window.steps)
    start = np.array([s["start"] for s in payload["steps"]]) + payload["origin_us"]
    end = np.array([s["end"] for s in payload["steps"]]) + payload["origin_us"]
    assert start == pytest.approx(steps["start_us"].to_numpy(), abs=1e-3)
    assert end == pytest.approx(steps["end_us"].to_numpy(), abs=1e-3)
    assert float(np.mean(end - start)) == pytest.approx(report.step_window.avg_step_us)
    # The steps lane draws the same boundaries.
    on_lane = ev.lane_kind == "steps"
    assert payload["lanes"][0]["kind"] == "steps"
    assert list(ev.name[on_lane]) == [f"step {s}" for s in steps["step"]]
    assert ev["start"][on_lane] + ev.origin == pytest.approx(start, abs=1e-3)


def test_operators_nest_by_depth_on_their_thread():
    """Hand-checked in the trace: ResNet-50's first convolution on the main thread is
    aten::conv2d > aten::convolution > aten::_convolution > aten::cudnn_convolution, with
    nothing around conv2d (the 2021 schema records no module ranges)."""
    payload = view_model.of(shared_report("v100_resnet50_train_num_workers_0")).timeline_payload()
    ev = Decoded(payload)
    i = int(np.flatnonzero(ev.name == "aten::cudnn_convolution")[0])
    around = np.flatnonzero((ev["lane"] == ev["lane"][i]) & (ev["start"] <= ev["start"][i])
                            & (ev["start"] + ev["dur"] >= ev["start"][i] + ev["dur"][i]))
    chain = [(int(ev["depth"][j]), ev.name[j]) for j in around]
    assert chain == [(0, "aten::conv2d"), (1, "aten::convolution"), (2, "aten::_convolution"),
                     (3, "aten::cudnn_convolution")]
    assert ev.lane_label[i] == "thread 25738 (python)" and ev.lane_kind[i] == "thread"
    # Its launches sit one level below it.
    inside = (ev["lane"] == ev["lane"][i]) & (ev["start"] > ev["start"][i]) & \
             (ev["start"] + ev["dur"] <= ev["start"][i] + ev["dur"][i]) & (ev.cat == "runtime")
    assert inside.any() and set(ev["depth"][inside]) == {4}
    # Lanes have as many rows as their deepest event needs.
    for lane in payload["lanes"]:
        on = ev["lane"] == lane["id"]
        assert lane["rows"] == (int(ev["depth"][on].max()) + 1 if on.any() else 1)


def test_a_search_by_name_counts_the_events_merged_for_drawing_as_the_kernels_table_does(monkeypatch):
    """Over the cap, short kernels are merged into "N events" aggregates; the payload's ``merged``
    triples say what each holds, so a search for a kernel's name counts what the Kernels table counts."""
    monkeypatch.setattr(timeline_data, "MAX_TIMELINE_EVENTS", 5000)
    report = nbprofiler.load(shared_trace("a100_train"))
    payload = timeline_data.build(report)
    assert payload is not None and payload["aggregated"] is not None
    ev = Decoded(payload)
    merged = payload["merged"]

    def array(key: str) -> np.ndarray:
        return np.frombuffer(base64.b64decode(merged[key]), dtype="<u4")

    of, name, count = array("event"), array("name"), array("count")
    assert int(count.sum()) == payload["aggregated"]["events"] == int(ev["count"][ev["count"] > 1].sum())
    assert (ev["count"][of] > 1).all()
    code = {s: i for i, s in enumerate(payload["strings"])}
    alone = ev["count"] == 1
    inside_total = 0
    for kernel, calls in zip(report.kernels["name"], report.kernels["calls"], strict=True):
        i = code[kernel]
        drawn_alone = int((alone & (ev["name"] == i)).sum())
        inside = int(count[name == i].sum())
        assert drawn_alone + inside == calls
        inside_total += inside
    assert inside_total > 1000  # the test means something: many kernels were merged


def test_the_saved_report_keeps_a_smaller_timeline_and_says_so(monkeypatch):
    """What the notebook file keeps is capped lower than what the live explorer draws: the live
    timeline of the A100 trace keeps all its 74,931 events; the saved one at most the saved cap."""
    from nbprofiler.render.payload import report_payload

    monkeypatch.setattr(timeline_data, "SAVED_TIMELINE_EVENTS", 5000)
    report = nbprofiler.load(shared_trace("a100_train"))
    live = view_model.of(report).timeline_payload()
    saved = report_payload(report)["timeline"]
    assert live is not None and live["aggregated"] is None and live["events"]["n"] > 5000
    assert saved["events"]["n"] <= 5000 and saved["total_events"] == live["total_events"]
    assert saved["aggregated"]["saved"] is True and saved["aggregated"]["cap"] == 5000
    assert len(json.dumps(saved)) < len(json.dumps(live)) / 4
    # Under the saved cap, the saved report keeps the live payload itself.
    monkeypatch.setattr(timeline_data, "SAVED_TIMELINE_EVENTS", 10**6)
    again = nbprofiler.load(shared_trace("a100_train"))
    assert report_payload(again)["timeline"] is view_model.of(again).timeline_payload()


def test_over_the_cap_short_events_merge_into_aggregates(monkeypatch):
    path = shared_trace("v100_resnet50_train_num_workers_0")
    full = Decoded(view_model.of(nbprofiler.load(path)).timeline_payload())
    monkeypatch.setattr(timeline_data, "MAX_TIMELINE_EVENTS", 5000)
    payload = view_model.of(nbprofiler.load(path)).timeline_payload()
    ev = Decoded(payload)
    merged = payload["aggregated"]
    assert merged is not None and payload["events"]["n"] <= 5000
    many = ev["count"] > 1
    assert many.any()
    assert int(ev["count"].sum()) == payload["total_events"] == len(full["start"])
    assert int(ev["count"][many].sum()) == merged["events"]
    assert all(n == f"{c} events" for n, c in zip(ev.name[many], ev["count"][many]))
    assert (ev["shapes"][many] == -1).all() and (ev["stack"][many] == -1).all()
    below = merged["below_us"]
    for lane in payload["lanes"]:
        on, was = ev["lane"] == lane["id"], full["lane"] == lane["id"]
        # The lane's busy time is kept...
        assert ev["busy"][on].astype(np.float64).sum() == pytest.approx(
            full["dur"][was].astype(np.float64).sum(), rel=1e-5)
        # ...and every event at least below_us long is still there on its own (compared in float64:
        # numpy would round below_us to float32 to compare it with the float32 durations).
        long_now = on & ~many & (ev["dur"].astype(np.float64) >= below)
        long_before = was & (full["dur"].astype(np.float64) >= below)
        assert Counter(zip(ev.name[long_now], ev["depth"][long_now])) \
            == Counter(zip(full.name[long_before], full["depth"][long_before]))
    # Still sorted by lane, then start.
    order = np.lexsort((ev["start"], ev["lane"]))
    assert (order == np.arange(len(order))).all()


def test_a_live_cpu_run_with_stack_and_shapes(one_torch_thread):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(x: torch.Tensor) -> None:
        with torch.profiler.record_function(HOSTILE):
            loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()

    with nbprofiler.profile(stack=True, shapes=True, wait=0, warmup=0, active=2) as run:
        for _ in range(3):
            train_step(torch.randn(4, 16))
    report = run.report
    payload = view_model.of(report).timeline_payload()
    assert payload is view_model.of(report).timeline_payload()  # built once per report
    ev = Decoded(payload)
    kinds = [lane["kind"] for lane in payload["lanes"]]
    assert kinds[0] == "steps" and "stream" not in kinds and "thread" in kinds
    assert not np.isin(ev.cat, ["kernel", "nccl", "memcpy", "memset"]).any()
    assert [s["step"] for s in payload["steps"]] == list(report.step_window.steps)
    # The first Linear's matrix multiply: its input shapes, and the stack that called it.
    addmm = np.flatnonzero(ev.name == "aten::addmm")
    assert len(addmm) == 2 * 2  # two Linear layers, two profiled steps
    assert any("[4, 16]" in str(ev.shapes[i]) for i in addmm)
    stack = payload["stacks"][int(ev["stack"][addmm[0]])]
    frames = [payload["strings"][f] for f in stack]
    here = [i for i, f in enumerate(frames) if "test_timeline_data.py" in f]
    assert [frames[i].rsplit(": ", 1)[1] for i in here] == ["test_a_live_cpu_run_with_stack_and_shapes", "train_step"]
    assert here[-1] < len(frames) - 1  # torch's own frames (Module.__call__, forward) are innermost, last
    # The user's own frames are marked: the details open at the first of them, the test runner's frames
    # before it (pytest, pluggy: installed packages) folded.
    user = set(payload["user_frames"])
    assert [i for i, f in enumerate(stack) if f in user] == here
    assert here[0] > 0 and not user & set(stack[:here[0]])
    # nbprofiler's own frames (its step hook wraps the optimizer's step) are never the user's.
    every_frame = {payload["strings"][f] for s in payload["stacks"] for f in s}
    ours = {f for f in every_frame if "nbprofiler" in f.split("(")[0] and "tests" not in f}
    assert ours and not ours & {payload["strings"][f] for f in user}
    # An untrusted name comes through as the plain string it is.
    hostile = np.flatnonzero(ev.name == HOSTILE)
    assert len(hostile) == 2 and set(ev.lane_kind[hostile]) == {"thread"}
    assert HOSTILE in payload["strings"]


def test_the_bundle_is_the_payload_and_one_escaped_line(tmp_path):
    path = tmp_path / "<img src=x onerror=alert(1)>.pt.trace.json.gz"
    shutil.copy(shared_trace("cpu_only"), path)
    report = nbprofiler.load(path)
    bundle = view_model.of(report).timeline_bundle()
    assert bundle[TIMELINE_MIME] is view_model.of(report).timeline_payload()
    assert bundle[TIMELINE_MIME]["trace_name"] == "<img src=x onerror=alert(1)>.pt.trace.json"
    html = bundle["text/html"]
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;.pt.trace.json" in html
    assert "JupyterLab extension" in html and "export_chrome_trace" in html and "ui.perfetto.dev" in html


def test_a_report_without_events_has_no_timeline():
    report = Report.from_trace(EventTable.empty(TraceMeta(source="none", schema="current")), "none")
    assert view_model.of(report).timeline_payload() is None and view_model.of(report).timeline_bundle() is None


def test_long_memory_counters_keep_their_first_point_and_every_peak_and_trough(monkeypatch):
    path = shared_trace("v100_resnet50_train_num_workers_0")

    def series(payload: dict) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
        return {(c["name"], c["device"]): (np.frombuffer(base64.b64decode(c["t"]), "<f8"),
                                           np.frombuffer(base64.b64decode(c["v"]), "<f8")) for c in payload["counters"]}

    monkeypatch.setattr(timeline_data, "MAX_COUNTER_BUCKETS", 1 << 30)
    full = series(view_model.of(nbprofiler.load(path)).timeline_payload())
    monkeypatch.setattr(timeline_data, "MAX_COUNTER_BUCKETS", 100)
    thin = series(view_model.of(nbprofiler.load(path)).timeline_payload())
    assert thin.keys() == full.keys() and all(len(t) > 200 for t, _ in full.values())
    for key, (t, v) in full.items():
        kept_t, kept_v = thin[key]
        assert 200 < len(full[key][0]) and len(kept_t) <= 3 * 100 + 1
        assert (np.diff(kept_t) >= 0).all()
        # Every kept point is a real sample, and the start level, the last level and both extremes are there.
        assert set(zip(kept_t, kept_v)) <= set(zip(t, v))
        assert (kept_t[0], kept_v[0]) == (t[0], v[0]) and (kept_t[-1], kept_v[-1]) == (t[-1], v[-1])
        assert kept_v.max() == v.max() and kept_v.min() == v.min()
        # Within each hundredth of the span, the peak and the trough are kept.
        scale = 100 / (t[-1] - t[0])
        slices, kept_slices = (np.minimum(((x - t[0]) * scale).astype(np.int64), 99) for x in (t, kept_t))
        for i in np.unique(slices):
            inside, kept_inside = slices == i, kept_slices == i
            assert kept_v[kept_inside].max() == v[inside].max() and kept_v[kept_inside].min() == v[inside].min()


def test_a_caller_and_its_only_callee_that_share_start_and_duration_draw_caller_above():
    """aten::to calls aten::_to_copy; on the A100 trace the two often start in the same µs and
    last as long. The caller is drawn one level above its callee, as the trace records them."""
    ev = Decoded(view_model.of(shared_report("a100_train")).timeline_payload())
    pairs = 0
    for i in np.flatnonzero(ev.name == "aten::to"):
        twin = np.flatnonzero((ev["lane"] == ev["lane"][i]) & (ev["start"] == ev["start"][i])
                              & (ev["dur"] == ev["dur"][i]) & (ev.name == "aten::_to_copy"))
        if len(twin):
            pairs += 1
            assert ev["depth"][twin[0]] == ev["depth"][i] + 1
    assert pairs > 50  # the trace has dozens of them


def _fresh_report(name: str) -> Report:
    return nbprofiler.load(shared_trace(name))


def test_a_large_traces_bundle_builds_its_timeline_on_a_second_thread_and_saves_the_same_one(monkeypatch):
    """Above PARALLEL_MIN_EVENTS the bundle builds the operator tree and the timeline alongside
    the other tables and the HTML: the saved data carries exactly the timeline built in order,
    and the text, HTML and tables are the ones a report built on one thread has."""
    from nbprofiler.render import background
    from nbprofiler.render.bundle import mimebundle
    from nbprofiler.render.frontend import MIME_TYPE

    serial = _fresh_report("v100_resnet50_train_num_workers_0")
    expected = timeline_data.build(serial, saved=True)
    threads = []
    build = timeline_data.build

    def recorded(report, saved=False):
        import threading

        threads.append(threading.current_thread().name)
        return build(report, saved=saved)

    monkeypatch.setattr(background, "PARALLEL_MIN_EVENTS", 1)
    monkeypatch.setattr(timeline_data, "build", recorded)
    report = _fresh_report("v100_resnet50_train_num_workers_0")
    bundle = mimebundle(report)
    assert bundle[MIME_TYPE]["timeline"] == expected
    assert threads and all(name.startswith("nbprofiler-background") for name in threads)
    assert bundle["text/plain"] == serial.to_text() and bundle["text/html"] == serial.to_html()
    for table in ("operators", "kernels", "syncs", "breakdown", "memory_by_operator"):
        pd.testing.assert_frame_equal(getattr(report, table), getattr(serial, table), check_exact=True)


def test_an_error_in_the_timeline_built_alongside_surfaces_from_the_bundle(monkeypatch):
    from nbprofiler.render import background
    from nbprofiler.render.bundle import mimebundle

    def broken(report, saved=False):
        raise ValueError("the timeline could not be built")

    monkeypatch.setattr(background, "PARALLEL_MIN_EVENTS", 1)
    monkeypatch.setattr(timeline_data, "build", broken)
    with pytest.raises(ValueError, match="could not be built"):
        mimebundle(_fresh_report("cpu_only"))
