"""Host-device synchronisations and GPU idle time per step, against loops over the raw trace JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import shared_raw_events as raw_events, shared_report as report
import nbprofiler
from test_breakdown import hand_made_report

_DEVICE_CATS = {"Kernel", "kernel", "Memcpy", "gpu_memcpy", "Memset", "gpu_memset"}
_RUNTIME_CATS = {"Runtime", "cuda_runtime", "cuda_driver"}





def reference_idle(name: str) -> list[tuple[float, float, float]]:
    """Per stretched step: (busy, host wait, other idle), walking the device timeline in a loop."""
    events = raw_events(name)
    submitted: dict[int, float] = {}
    for e in events:
        if e.get("cat") in _RUNTIME_CATS and "correlation" in e["args"]:
            submitted.setdefault(e["args"]["correlation"], e["ts"] + e["dur"])
    work = sorted((e["ts"], submitted.get(e["args"].get("correlation"), float("nan")), e["ts"] + e["dur"])
                  for e in events if e.get("cat") in _DEVICE_CATS)
    spans = report(name).stretched_steps
    lo, hi = spans["start_us"].to_numpy(), spans["end_us"].to_numpy()
    gaps, busy = [], []  # (start, end, host_wait)
    prev_end = -float("inf")
    for start, sub, end in work:
        if start > prev_end:
            gaps.append((max(prev_end, lo[0]), start, sub > prev_end))
            busy.append([start, end])
        busy[-1][1] = max(busy[-1][1], end)
        prev_end = max(prev_end, end)
    gaps.append((prev_end, hi[-1], True))
    out = []
    for a, b in zip(lo, hi):
        host = sum(max(0.0, min(e, b) - max(s, a)) for s, e, h in gaps if h)
        other = sum(max(0.0, min(e, b) - max(s, a)) for s, e, h in gaps if not h)
        on = sum(max(0.0, min(e, b) - max(s, a)) for s, e in busy)
        out.append((on, host, other))
    return out


@pytest.mark.parametrize("name", ["v100_resnet50_train_num_workers_0", "a100_train", "v100_resnet_ns_timestamps"])
def test_idle_time_matches_the_reference(name):
    idle = report(name).idle
    assert idle["step"].tolist() == report(name).breakdown["step"].tolist()
    for row, (busy, host, other) in zip(idle.to_dict("records"), reference_idle(name)):
        assert row["busy_us"] == pytest.approx(busy, abs=0.01)
        assert row["host_wait_us"] == pytest.approx(host, abs=0.01)
        assert row["other_idle_us"] == pytest.approx(other, abs=0.01)
    total = report(name).breakdown["total"].to_numpy()
    np.testing.assert_allclose(idle["busy_us"] + idle["idle_us"], total, rtol=1e-9)
    np.testing.assert_allclose(idle["host_wait_us"] + idle["other_idle_us"], idle["idle_us"], rtol=1e-9)


def test_a_starved_gpu_waits_for_the_host():
    starved = report("v100_resnet50_train_num_workers_0").idle
    fed = report("v100_resnet50_train_num_workers_4").idle
    # With num_workers=0 the GPU idles ~40% of each step, nearly all of it waiting for the next batch.
    assert (starved["host_wait_us"] / (starved["busy_us"] + starved["idle_us"])).mean() > 0.35
    assert starved["host_wait_us"].sum() > 0.9 * starved["idle_us"].sum()
    assert starved["host_wait_us"].mean() > 2 * fed["host_wait_us"].mean()
    # A GPU-bound run never starves after its first step; its idle time is launch gaps.
    gpu_bound = report("v100_resnet_ns_timestamps").idle
    assert (gpu_bound["host_wait_us"].iloc[1:] == 0).all()
    assert (gpu_bound["other_idle_us"] > 0).all()


def test_idle_time_on_the_hand_made_trace(tmp_path):
    # Device busy [30,80], [85,90], [110,130] in step 1 ([0,130]) and [150,180], [200,210] in
    # step 2 ([130,210]). The gaps [0,30], [90,110], [130,150] end with work launched after the
    # device went idle; [80,85] and [180,200] end with work queued long before.
    idle = hand_made_report(tmp_path).idle
    assert idle[["busy_us", "idle_us", "host_wait_us", "other_idle_us"]].to_numpy().tolist() == [
        [75, 55, 50, 5], [40, 40, 20, 20]]


def test_sync_calls_match_the_raw_trace():
    r = report("a100_train")
    syncs = r.syncs
    steps = r.trace_steps
    events = raw_events("a100_train")
    for name in ("aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize"):
        for step, lo, hi in zip(steps["step"], steps["start_us"], steps["end_us"]):
            calls = [e for e in events if e["name"] == name and lo <= e["ts"] < hi]
            row = syncs[(syncs["step"] == step) & (syncs["name"] == name)]
            assert row["calls"].tolist() == [len(calls)]
            assert row["total_us"].iloc[0] == pytest.approx(sum(e["dur"] for e in calls))
    per_step = syncs.pivot(index="step", columns="name", values="calls")
    assert (per_step["aten::item"] == 5).all() and (per_step["cudaStreamSynchronize"] == 10).all()


def test_sync_calls_on_the_v100_trace_and_none_on_cpu():
    syncs = report("v100_resnet50_train_num_workers_0").syncs
    assert syncs["name"].unique().tolist() == ["cudaStreamSynchronize"]
    assert syncs["calls"].tolist() == [2] * 6
    assert report("cpu_only").syncs.empty
    assert report("cpu_only").idle.empty


def test_sync_calls_on_hand_made_traces(tmp_path):
    syncs = hand_made_report(tmp_path).syncs
    assert syncs.to_dict("records") == [
        {"step": 1, "name": "cudaStreamSynchronize", "calls": 2, "total_us": 2.5},
        {"step": 1, "name": "aten::item", "calls": 1, "total_us": 2.5},
        {"step": 1, "name": "aten::_local_scalar_dense", "calls": 1, "total_us": 1.5},
    ]
    # HIP names count too; calls outside every step do not.
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
        {"ph": "X", "cat": "cuda_runtime", "name": "hipDeviceSynchronize", "pid": 1, "tid": 1, "ts": 10, "dur": 4},
        {"ph": "X", "cat": "cuda_runtime", "name": "hipStreamSynchronize", "pid": 1, "tid": 1, "ts": 60, "dur": 4},
    ]
    path = tmp_path / "hip.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert nbprofiler.load(path).syncs.to_dict("records") == [
        {"step": 3, "name": "hipDeviceSynchronize", "calls": 1, "total_us": 4.0}]


# -- which cell line syncs: from the cell's source --------------------------------------------------
SYNCING_CELL = """total = 0.0
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    total += loss.item()
    if total > 1e9:
        print(loss)
    preds = model(x).argmax(1).cpu()
"""


def test_the_cells_syncs_are_named_with_an_edit_that_runs_in_the_cell(shell):
    """The sync rule fires on GPU runs only; on a CPU the source reading is checked here, and the
    edit pasted in place of its line runs in the cell and keeps a device value, not a float."""
    from nbprofiler.analysis.sync_source import sync_lines

    found = {s.line: s for s in sync_lines(SYNCING_CELL)}
    assert {n: (s.text.strip(), set(s.causes)) for n, s in found.items()} == {
        5: ("total += loss.item()", {"item"}), 7: ("print(loss)", {"item", "cpu"}),
        8: ("preds = model(x).argmax(1).cpu()", {"cpu"})}
    assert found[5].fixed == "    total += loss.detach()"
    assert found[7].fixed is None and found[8].fixed is None  # their values are needed on the host right away
    lines = SYNCING_CELL.splitlines()
    lines[4] = found[5].fixed
    shell.run_cell("\n".join(lines)).raise_error()
    total = shell.user_ns["total"]
    assert total.dim() == 0 and not total.requires_grad and float(total) > 0


def test_syncs_inside_a_librarys_operators_are_not_pinned_on_a_cell_line():
    """a100_train's syncs are torchrec's and fbgemm's own ``.item()`` calls inside their ranges: a cell
    that also calls ``.item()`` does not get them named on its line."""
    import pandas as pd

    from nbprofiler.options import ProfileOptions
    from nbprofiler.records import RunRecord
    from nbprofiler.report import Report

    trace = report("a100_train")
    steps = pd.DataFrame({"step": range(int(trace.trace_steps["step"].max()) + 1), "phase": "active", "wall_ms": 80.0,
                          "dataloader_ms": 0.0})
    run = RunRecord(options=ProfileOptions(), device=trace.device, steps=steps, loaders=(), step_source="optimizer",
                    cell_source=SYNCING_CELL)
    (s,) = [s for s in Report.from_live(trace.table, run, None).suggestions if s.kind == "sync"]
    assert "line" not in s.evidence and "cell line" not in s.title
    assert s.evidence["top_where"].startswith("## ")
    # No line of the cell to edit: the fix's pattern, in comments, runs when pasted (no NameError).
    assert all(line.startswith("#") for line in s.code.splitlines())
    exec(compile(s.code, "<pasted>", "exec"), {})
