"""nbprofiler.load on the real shared GPU traces, and on files that are not traces."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import nbprofiler
from conftest import GPU_TRACE_FILES, shared_raw_events, shared_report, shared_trace

GPU_TRACES = GPU_TRACE_FILES


@pytest.mark.parametrize("name", GPU_TRACES)
def test_every_gpu_trace_loads_with_device_time_on_operators(name):
    report = nbprofiler.load(shared_trace(name))
    ops = report.operators
    assert report.table.meta.skipped_events == 0
    assert ops["device_self_us"].sum() > 0
    # All device work that has a launching operator lands on one: the table's
    # device self time equals the kernel+memcpy+memset time that was attributed.
    tree = report.operator_tree
    attributed = report.table["dur"][tree.device_events][tree.launcher >= 0].sum()
    assert ops["device_self_us"].sum() == pytest.approx(attributed)
    # Nearly all device work is attributed (the rest was launched outside any operator).
    assert (tree.launcher >= 0).mean() > 0.95
    assert report.device.kind in ("cuda", "rocm")


def test_title_and_overview_agree_on_the_average_step():
    """On a GPU trace the average step is over steps stretched to cover their device work
    (longer than the host's ProfilerStep ranges); title, overview and text say the same."""
    report = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz"))
    avg_ms = report.summary["avg_step_us"] / 1e3
    assert avg_ms > report.steps["wall_ms"].mean()  # the GPU runs behind the host
    text = report.to_text()
    assert text.splitlines()[0].endswith(f"avg step {avg_ms:.1f} ms")
    assert f"Overview: avg step {avg_ms:.1f} ms" in text


def test_old_and_new_schemas_are_both_read():
    old = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz"))
    new = nbprofiler.load(shared_trace("v100_resnet_ns_timestamps.pt.trace.json.gz"))
    assert old.table.meta.schema == "2021" and new.table.meta.schema == "current"
    assert list(old.trace_steps["step"]) == [5, 6, 7, 8, 9, 10]
    assert len(new.trace_steps) == 5
    assert old.device.name == "Tesla V100-DGXS-32GB" and old.device.compute_capability == (7, 0)


def test_kernels_reach_the_operator_that_launched_them():
    report = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz"))
    ops = report.operators.set_index("name")
    # Convolutions dominate ResNet-50 device time; their host wrappers own no kernels themselves.
    assert ops.loc["aten::cudnn_convolution", "device_self_us"] > 0
    assert ops.loc["aten::conv2d", "device_self_us"] == 0
    assert ops.loc["aten::conv2d", "device_total_us"] >= ops.loc["aten::cudnn_convolution", "device_self_us"]
    top = report.operators.iloc[0]
    assert top["name"].startswith("aten::cudnn_convolution")


def test_rocm_trace_is_a_rocm_device():
    report = nbprofiler.load(shared_trace("mi250_rocm_toy_train.pt.trace.json.gz"))
    assert report.device.kind == "rocm" and report.device.total_memory_bytes == 68702699520


def test_trace_without_steps_is_one_step_and_says_so():
    report = nbprofiler.load(shared_trace("a100_alexnet_small.pt.trace.json.gz"))
    assert len(report.trace_steps) == 1 and bool(report.trace_steps["synthetic"].iloc[0])
    assert any("no ProfilerStep" in n for n in report.notes)


def test_cpu_only_trace_with_huge_process_group_list():
    report = nbprofiler.load(shared_trace("cpu_only.pt.trace.json.gz"))
    assert report.table.meta.rank == 34 and report.table.meta.world_size == 300
    assert report.device.kind == "cpu"
    assert "gloo:all_reduce" in set(report.operators["name"])


def test_report_text_and_html_render_for_a_loaded_trace():
    report = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_4.pt.trace.json.gz"))
    assert "Tesla V100" in report.to_text()
    assert "aten::cudnn_convolution" in report.to_html()


def test_export_chrome_trace_of_a_loaded_file(tmp_path):
    report = nbprofiler.load(shared_trace("mi250_rocm_toy_train.pt.trace.json.gz"))
    out = report.export_chrome_trace(tmp_path / "copy.json")
    assert json.loads(out.read_text())["traceEvents"]


# -- bad input: always a TraceError naming the file -------------------------------------------

def _trace_error(path, fragment):
    with pytest.raises(nbprofiler.TraceError) as info:
        nbprofiler.load(path)
    message = str(info.value)
    assert str(path) in message and fragment in message and "\n" not in message
    assert isinstance(info.value, ValueError)


def test_missing_file(tmp_path):
    _trace_error(tmp_path / "nope.json", "no such file")


def test_empty_file(tmp_path):
    (tmp_path / "e.json").write_bytes(b"")
    _trace_error(tmp_path / "e.json", "empty")


def test_not_json(tmp_path):
    (tmp_path / "x.json").write_text("hello, world")
    _trace_error(tmp_path / "x.json", "not valid JSON")


def test_truncated_json(tmp_path):
    data = gzip.decompress(shared_trace("mi250_rocm_toy_train.pt.trace.json.gz").read_bytes())
    (tmp_path / "t.json").write_bytes(data[: len(data) // 2])
    _trace_error(tmp_path / "t.json", "truncated")


def test_truncated_gzip(tmp_path):
    data = shared_trace("mi250_rocm_toy_train.pt.trace.json.gz").read_bytes()
    (tmp_path / "t.json.gz").write_bytes(data[: len(data) // 2])
    _trace_error(tmp_path / "t.json.gz", "truncated gzip")


def test_json_list_and_foreign_json(tmp_path):
    (tmp_path / "l.json").write_text("[1, 2, 3]")
    _trace_error(tmp_path / "l.json", "JSON list")
    (tmp_path / "o.json").write_text('{"hello": "world"}')
    _trace_error(tmp_path / "o.json", "traceEvents")


def test_directory_without_traces(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    _trace_error(tmp_path, "no trace files")


def test_oversized_file_is_refused_up_front(tmp_path, monkeypatch):
    monkeypatch.setenv("NBPROFILER_MAX_TRACE_BYTES", "1000")
    path = tmp_path / "big.json"
    path.write_bytes(b'{"traceEvents": [' + b'{"ph": "X"},' * 200 + b'{}]}')
    _trace_error(path, "limit; profile fewer steps")


def test_malformed_events_are_skipped_and_counted(tmp_path):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::good", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "aten::negative", "pid": 1, "tid": 1, "ts": 20, "dur": -5},
        {"ph": "X", "cat": "cpu_op", "name": "aten::nan", "pid": 1, "tid": 1, "ts": "NaN", "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::bad_args", "pid": 1, "tid": 1, "ts": 30, "dur": 1, "args": [1]},
    ]
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"traceEvents": events}))
    report = nbprofiler.load(path)
    assert list(report.operators["name"]) == ["aten::good"]
    assert report.table.meta.skipped_events == 3
    assert any("3 malformed" in n for n in report.notes)


def test_a_byte_order_mark_is_accepted(tmp_path):
    data = gzip.decompress(shared_trace("mi250_rocm_toy_train.pt.trace.json.gz").read_bytes())
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + data)
    with_bom = nbprofiler.load(tmp_path / "bom.json").operators
    plain = nbprofiler.load(shared_trace("mi250_rocm_toy_train.pt.trace.json.gz")).operators
    assert with_bom.equals(plain)


# -- tensorboard_trace_handler directories: cycles, ranks, and unrelated runs -----------------------

def _handler_dir(tmp_path, files: dict[str, str]):
    """A directory named as ``tensorboard_trace_handler`` writes it: ``<worker>.<time>.pt.trace.json.gz``."""
    for name, shared in files.items():
        (tmp_path / f"{name}.pt.trace.json.gz").write_bytes(shared_trace(f"{shared}.pt.trace.json.gz").read_bytes())
    return tmp_path


def test_several_cycles_of_one_worker_load_the_latest_and_say_so(tmp_path):
    d = _handler_dir(tmp_path, {"host_7.1700000000000000100": "v100_resnet50_train_num_workers_0",
                                "host_7.1700000000000000200": "mi250_rocm_toy_train"})
    report = nbprofiler.load(d)
    assert report.source_path.endswith("host_7.1700000000000000200.pt.trace.json.gz")
    assert report.device.kind == "rocm" and not report.ranks and report.rank_comparison.empty
    note = next(n for n in report.notes if "profiling cycles" in n)
    assert "host_7.1700000000000000200.pt.trace.json.gz, the latest of 2 cycles" in note
    assert "The other 1 file(s) are earlier cycles: pass one's path to nbprofiler.load" in note


def test_cycles_of_several_ranks_are_cycles_not_ranks(tmp_path):
    d = _handler_dir(tmp_path, {"rank0.100": "a100_nccl_distributed", "rank0.200": "a100_nccl_distributed",
                                "rank3.100": "a100_train", "rank3.200": "a100_train"})
    report = nbprofiler.load(d)
    assert sorted(report.ranks) == [0, 3] and len(report.rank_comparison) == 2
    assert report.ranks[0].source_path.endswith("rank0.200.pt.trace.json.gz")
    assert report.ranks[3].source_path.endswith("rank3.200.pt.trace.json.gz")
    note = next(n for n in report.notes if "profiling cycles" in n)
    assert "rank 0: rank0.200.pt.trace.json.gz, the latest of 2 cycles" in note
    assert "rank 3: rank3.200.pt.trace.json.gz" in note and "The other 2 file(s) are earlier cycles" in note


def test_unrelated_single_process_traces_are_refused_not_compared_as_ranks(tmp_path):
    d = _handler_dir(tmp_path, {"hostA_1.100": "v100_resnet50_train_num_workers_0",
                                "hostB_2.100": "v100_resnet50_train_num_workers_4"})
    _trace_error(d, "2 processes wrote traces here")
    with pytest.raises(nbprofiler.TraceError, match="no distributedInfo, so they are separate runs, not ranks of "
                                                    "one; pass one file's path to nbprofiler.load"):
        nbprofiler.load(d)
    one = d / "hostA_1.100.pt.trace.json.gz"
    assert nbprofiler.load(one).source_path == str(one)


def test_two_runs_claiming_the_same_rank_are_refused(tmp_path):
    d = _handler_dir(tmp_path, {"hostA_1.100": "a100_nccl_distributed", "hostB_2.100": "v100_resnet_ns_timestamps"})
    _trace_error(d, "two trace files claim rank 0")


def test_a_report_and_a_live_run_write_tensorboard_directories_alike(tmp_path):
    """One writer: a Report's export_tensorboard and a run's --tensorboard name files as torch's
    handler does (``<host>_<pid>.<time in ns>.pt.trace.json``), and load back the same."""
    import re

    import torch

    report = nbprofiler.load(shared_trace("cpu_only"))
    written = report.export_tensorboard(tmp_path / "from_report")
    with nbprofiler.profile(wait=0, warmup=0, active=1, step_on="manual", tensorboard=str(tmp_path / "live")):
        torch.ones(8).sum()
        nbprofiler.step()
    (live,) = (tmp_path / "live").iterdir()
    for path in (written, live):
        assert re.fullmatch(r".+_\d+\.\d{19}\.pt\.trace\.json", path.name), path.name
    assert nbprofiler.load(written.parent).operators.equals(report.operators)


def test_a_collectives_op_keeps_what_it_moved_and_among_how_many_ranks():
    """record_param_comms carries each collective's name, element counts, group size and dtype:
    the table keeps them as the trace has them, for the collectives table."""
    name = "a100_nccl_distributed"
    table = shared_report(name).table
    raw = [e for e in shared_raw_events(name) if (e.get("args") or {}).get("Collective name") is not None]
    assert raw, "the trace records its collectives"
    rows = np.flatnonzero(table.collective != None)  # noqa: E711 - an object column
    assert len(rows) == len(raw)
    kept = sorted(zip(table["ts"][rows].tolist(), table.collective[rows].tolist(), table.comm_dtype[rows].tolist(),
                      table["msg_in_nelems"][rows].tolist(), table["msg_out_nelems"][rows].tolist(),
                      table["group_size"][rows].tolist()))
    expected = sorted((float(e["ts"]), e["args"]["Collective name"], e["args"]["dtype"],
                       float(e["args"]["In msg nelems"]), float(e["args"]["Out msg nelems"]),
                       float(e["args"]["Group size"])) for e in raw)
    assert kept == expected


def test_input_types_are_kept_beside_input_dims():
    table = shared_report("v100_resnet50_train_num_workers_0").table
    both = [(d, t) for d, t in zip(table.input_dims, table.input_types) if d is not None]
    assert both and all(t is not None for _, t in both)
    assert any(b'"float"' in t.lower() for _, t in both)  # "float" in the 2021 schema, "Float" later
