"""The saved report's data (render/payload.py): the views the live explorer has, from the report's own tables.

A notebook reopened without a kernel draws its report from this payload alone, so
each key must hold what the report's tables hold: full kernel names with their
tensor-core use and blocks per SM, every line of the cell with its time, the
module tree, the charts, the timeline, and where the report came from.
"""
from __future__ import annotations

import json
import os
import textwrap
from datetime import datetime, timedelta

import pytest
from conftest import shared_report, shared_trace
from IPython.utils.capture import capture_output

from nbprofiler.analysis.kernel_kinds import kernel_kind
from nbprofiler.render import payload as payload_module, view_model
from nbprofiler.render.payload import report_payload

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def rows_as_dicts(table: dict) -> list[dict]:
    return [dict(zip(table["columns"], row)) for row in table["rows"]]


@pytest.fixture(scope="module")
def gpu_report():
    return shared_report("a100_train")


@pytest.fixture(scope="module")
def gpu_payload(gpu_report):
    return report_payload(gpu_report)


@pytest.fixture(scope="module")
def stack_run(ip):
    """A real cell profiled with --stack and --modules: cell lines and a module tree."""
    ip.run_cell("import torch\nfrom torch import nn\nnet = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), "
                "nn.Sequential(nn.Linear(64, 8)))\nxb = torch.randn(32, 64)").raise_error()
    cell = textwrap.dedent("""
        y = net(xb)
        z = (y @ y.T).sum()
        z.backward()
    """).strip("\n")
    with capture_output():
        ip.run_cell_magic("torchprofile", "--stack --modules --wait 0 --warmup 0 --active 3 -n 3 -q -o payload_run",
                          cell)
    return ip.user_ns["payload_run"]


def test_the_payload_is_strict_json(gpu_payload, stack_run):
    for payload in (gpu_payload, report_payload(stack_run)):
        json.dumps(payload, allow_nan=False)
        assert payload["schema"] == "nbprofiler.report/1"


def test_kernels_keep_full_names_tensor_cores_and_blocks_per_sm(gpu_report, gpu_payload):
    kernels = gpu_payload["kernels"]
    rows = rows_as_dicts(kernels)
    table = gpu_report.kernels
    assert kernels["total"] == len(table) == len(rows) > 0
    assert {"mean_blocks_per_sm", "tensor_cores", "mean_occupancy", "operator", "category"} <= set(kernels["columns"])
    assert [r["name"] for r in rows] == list(table["name"])  # whole names, in the table's order
    assert max(len(r["name"]) for r in rows) > 45
    for r, k in zip(rows, table.itertuples(index=False)):
        assert r["category"] == kernel_kind(k.name)
        assert r["calls"] == k.calls and r["total_us"] == pytest.approx(k.total_us)
        assert r["tensor_cores"] == bool(k.tensor_cores)
        assert r["mean_blocks_per_sm"] == (None if k.mean_blocks_per_sm != k.mean_blocks_per_sm
                                           else pytest.approx(k.mean_blocks_per_sm))
    assert any(r["tensor_cores"] for r in rows) or not table["tensor_cores"].any()


def test_kernels_are_capped_by_total_time_and_say_how_many_there_were(gpu_report, monkeypatch):
    monkeypatch.setattr(payload_module, "MAX_KERNEL_ROWS", 3)
    kernels = report_payload(gpu_report)["kernels"]
    assert [r[0] for r in kernels["rows"]] == list(gpu_report.kernels["name"][:3])
    assert kernels["total"] == len(gpu_report.kernels) > 3


def test_a_cpu_run_has_no_kernels(stack_run):
    kernels = report_payload(stack_run)["kernels"]
    assert kernels["rows"] == [] and kernels["total"] == 0


def test_cell_lines_hold_every_line_of_the_source_with_its_time(stack_run):
    lines = report_payload(stack_run)["lines"]
    assert lines["why"] is None
    rows = rows_as_dicts(lines)
    assert [r["source"] for r in rows] == stack_run.run.cell_source.splitlines()
    assert [r["line"] for r in rows] == [1, 2, 3]
    timed = stack_run.lines.set_index("line")["host_us"]
    for r in rows:
        assert r["host_us"] == pytest.approx(timed.get(r["line"], 0.0))
    assert rows[1]["host_us"] > 0  # the matmul line took time


def test_the_module_tree_rows_name_their_parents(stack_run):
    modules = report_payload(stack_run)["modules"]
    rows = rows_as_dicts(modules)
    assert modules["why"] is None and modules["total"] == len(stack_run.modules) == len(rows) > 1
    assert [r["module"] for r in rows] == list(stack_run.modules["module"])
    names = {r["module"] for r in rows}
    assert all(r["parent"] == "" or r["parent"] in names for r in rows)
    assert any(r["depth"] > 0 for r in rows) and any(r["type"] == "Linear" for r in rows)


def test_a_trace_file_says_why_it_has_no_lines_nor_modules_and_where_it_came_from(gpu_report, gpu_payload):
    path = shared_trace("a100_train")
    assert gpu_payload["lines"]["rows"] == [] and "--stack" not in gpu_payload["lines"]["why"]
    assert "live %%torchprofile run" in gpu_payload["lines"]["why"]
    assert "--modules" in gpu_payload["modules"]["why"]
    saved = gpu_payload["saved_from"]
    assert saved["kind"] == "trace file" and saved["path"] == gpu_report.source_path
    assert datetime.fromisoformat(saved["when"]).timestamp() == pytest.approx(int(os.stat(path).st_mtime), abs=1)


def test_a_live_run_is_tagged_with_the_time_it_ended_even_when_shown_again_later(stack_run, monkeypatch):
    """The magic writes the first payload as the loop ends; a display a day later keeps that time."""
    first = report_payload(stack_run)["saved_from"]
    assert first["kind"] == "live run"
    assert abs((datetime.fromisoformat(first["when"]) - datetime.now().astimezone()).total_seconds()) < 600

    class NextDay(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz) + timedelta(days=1)

    monkeypatch.setattr(payload_module, "datetime", NextDay)
    assert report_payload(stack_run)["saved_from"] == first


def test_charts_and_timeline_are_the_front_ends_specs(gpu_report, gpu_payload):
    charts = gpu_payload["charts"]
    assert "breakdown" in charts and "kernels" in charts
    for name, spec in charts.items():
        assert spec == json.loads(json.dumps(view_model.of(gpu_report).chart_spec(name)))
    assert gpu_payload["timeline"] == json.loads(json.dumps(view_model.of(gpu_report).saved_timeline_payload()))
    assert gpu_payload["timeline"]["events"]["n"] > 0
