"""The Hardware view (render/hardware.py) in the saved payload, the static HTML and the explorer.

A user reads the view against the report's own tables (``report.launch_summary()``,
``report.queue_length``, ``report.stream_idle``, ``report.copies``), so each check
takes the figure the view shows and compares it with that table; the kernels'
launch delay is recomputed from the raw trace events, independently of the
launch table.
"""
from __future__ import annotations

import html
import importlib.util
import json
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
from conftest import shared_raw_events, shared_report, shared_trace

import nbprofiler

from nbprofiler.format import fmt_bytes, fmt_us
from nbprofiler.render.hardware import HOW, NO_DEVICE_WORK, NOT_IN_SPEC_TABLE
from nbprofiler.render.html import render_html
from nbprofiler.render.payload import report_payload
from nbprofiler.render.widget import Explorer
from nbprofiler.report import Report

GPU_TRACES = ("v100_resnet50_train_num_workers_0", "a100_train")
HOSTILE = '<img src=x onerror="alert(1)">'
LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"}


def rows_as_dicts(table: dict) -> list[dict]:
    return [dict(zip(table["columns"], row)) for row in table["rows"]]


def tab_html(widget) -> str:
    """The text of every HTML widget in an explorer tab, in order, unescaped."""
    own = [widget.value] if hasattr(widget, "value") and isinstance(widget.value, str) else []
    return html.unescape("".join(own + [tab_html(child) for child in getattr(widget, "children", ())]))


def section(payload: dict, key: str) -> dict:
    return next(s for s in payload["hardware"]["sections"] if s["key"] == key)


@pytest.fixture(scope="module", params=GPU_TRACES)
def gpu(request):
    report = shared_report(request.param)
    return report, report_payload(report)


def test_launch_figures_are_the_reports_launch_summary(gpu):
    report, payload = gpu
    s = report.launch_summary()
    facts = dict(payload["hardware"]["launch_facts"])
    assert facts["launches"] == f"{s.launches:,}"
    assert facts["delayed over 100 µs"].startswith(f"{s.delayed:,} (")
    assert facts["shorter than their launch call"].startswith(f"{s.gpu_shorter_than_cpu:,} (")
    assert facts["mean launch delay"] == fmt_us(s.mean_delay_us)
    assert facts["p95 launch delay"] == fmt_us(s.p95_delay_us)


def test_stream_tables_are_the_reports(gpu):
    report, payload = gpu
    queues = rows_as_dicts(section(payload, "queues"))
    expected = report.queue_length
    assert [(q["stream"], q["max"]) for q in queues] == list(zip(expected["stream"], expected["max"]))
    assert [q["mean"] for q in queues] == pytest.approx(list(expected["mean"]))
    idle = rows_as_dicts(section(payload, "stream_idle"))
    assert [(i["stream"], i["busy_us"], i["idle_us"], i["host_wait_us"]) for i in idle] == list(
        zip(report.stream_idle["stream"], report.stream_idle["busy_us"], report.stream_idle["idle_us"],
            report.stream_idle["host_wait_us"]))
    overlap = section(payload, "overlap")
    assert len(overlap["rows"]) == len(report.kernel_overlap)


def test_copies_rows_are_the_reports_with_their_units(gpu):
    report, payload = gpu
    copies = section(payload, "copies")
    assert dict(zip(copies["columns"], copies["units"]))["bytes"] == "bytes"
    shown = rows_as_dicts(copies)
    for row, (_, want) in zip(shown, report.copies.iterrows(), strict=True):
        assert (row["direction"], row["host_memory"], row["copies"], row["bytes"]) == (
            want["direction"], want["host_memory"], want["copies"], want["bytes"])
        share = want["share_of_link"]
        assert row["share_of_link"] == (None if pd.isna(share) else pytest.approx(share))


def test_the_device_shows_its_spec_sheet_figures(gpu):
    report, payload = gpu
    spec = report.device_spec
    assert spec is not None and payload["hardware"]["device"] == report.device.name
    facts = dict(payload["hardware"]["device_facts"])
    assert facts["memory bandwidth"] == fmt_bytes(spec.memory_gb_per_s * 1e9) + "/s"
    assert facts["host link"].startswith(spec.host_link)


def test_a_device_the_spec_table_does_not_know_says_so():
    report = shared_report("mi250_rocm_toy_train")  # "AMD Radeon Graphics": never a nearest match
    assert report.device_spec is None
    assert dict(report_payload(report)["hardware"]["device_facts"]) == {"spec sheet": NOT_IN_SPEC_TABLE}


def test_kernels_carry_their_mean_launch_delay_from_the_raw_events() -> None:
    """Recomputed from the raw JSON: each kernel's start minus its launch call's end (clipped at 0), by
    correlation id, averaged per kernel name."""
    events = shared_raw_events("a100_train")
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") == "cuda_runtime" and e["name"] in LAUNCH_CALLS and "correlation" in e.get("args", {})}
    delays: dict[str, list[float]] = defaultdict(list)
    for e in events:
        call = calls.get(e.get("args", {}).get("correlation")) if e.get("cat") == "kernel" else None
        if call is not None:
            delays[e["name"]].append(max(0.0, e["ts"] - (call["ts"] + call["dur"])))
    kernels = rows_as_dicts(report_payload(shared_report("a100_train"))["kernels"])
    assert len(kernels) > 20
    for k in kernels:
        got, want = k["mean_launch_delay_us"], delays.get(k["name"])
        assert (got is None) if not want else got == pytest.approx(sum(want) / len(want)), k["name"]


def cells(table_html: str) -> list[list[str]]:
    """The text of each body row's cells of an HTML table."""
    body = table_html[table_html.index("<tbody>"):table_html.index("</tbody>")]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_static_html_shows_the_launches_and_copies():
    report = shared_report("a100_train")
    page = html.unescape(render_html(report))
    hardware = page[page.index("<h4>Hardware</h4>"):]
    assert f"<th>launches</th><td>{report.launch_summary().launches:,}</td>" in hardware
    copies = hardware[hardware.index("<h4>Copies</h4>"):]
    rows = cells(copies[:copies.index("</table>") + 8])
    assert len(rows) == len(report.copies)
    for row, (_, want) in zip(rows, report.copies.iterrows()):
        assert (row[0], row[1], row[2], row[3]) == (want["direction"], want["host_memory"] or "–",
                                                    f"{want['copies']:,}", fmt_bytes(want["bytes"]))
    kernels = page[page.index("<h4>Kernels</h4>"):page.index("<h4>Hardware</h4>")]
    assert "launch delay" in kernels


def test_the_explorer_has_a_hardware_tab_with_the_same_figures(recording):
    report = shared_report("v100_resnet50_train_num_workers_0")
    e = Explorer(report)
    assert e.tab_titles.index("Hardware") == e.tab_titles.index("Kernels") + 1
    shown = tab_html(e.show_tab("Hardware"))
    assert f"<th>launches</th><td>{report.launch_summary().launches:,}</td>" in shown
    assert report.device.name in shown and "Queued launches per stream" in shown
    kernels = e.show_tab("Kernels")
    assert kernels is not None and "launch delay" in e.kernels.body.value


def test_a_cpu_run_says_in_one_line_it_has_no_device_work(recording):
    report = shared_report("cpu_only")
    hw = report_payload(report)["hardware"]
    assert hw == {"how": HOW, "absent": NO_DEVICE_WORK, "device": report.device.name, "device_facts": [],
                  "launch_facts": [], "sections": []}
    page = html.unescape(render_html(report))
    assert page[page.index("<h4>Hardware</h4>"):].startswith(f'<h4>Hardware</h4><div class="how">{NO_DEVICE_WORK}')
    tab = tab_html(Explorer(report).show_tab("Hardware"))
    assert NO_DEVICE_WORK in tab and "Launches" not in tab


def test_roofline_and_collectives_show_only_when_they_have_rows(monkeypatch):
    """Other analyses add these tables to the Report; the view shows a table once it has rows, none before.
    Each state is a report of its own, since a report's view is made once, from the tables it had; the
    Kernels table's figures are made first, from the real roofline (it alone fills them)."""
    before, after = (nbprofiler.load(shared_trace("a100_train")) for _ in range(2))
    assert len(before.kernel_roofline) and len(after.kernel_roofline)
    report = before
    monkeypatch.setattr(Report, "roofline", property(lambda self: None), raising=False)
    monkeypatch.setattr(Report, "collectives", property(lambda self: pd.DataFrame(columns=["name", "time_us"])),
                        raising=False)
    keys = [s["key"] for s in report_payload(report)["hardware"]["sections"]]
    assert "roofline" not in keys and "collectives" not in keys
    monkeypatch.setattr(Report, "roofline", property(lambda self: pd.DataFrame(
        {"operator": [HOSTILE], "time_us": [12.0], "achieved_flops_per_s": [3.5e12]})))
    report = after
    hw = report_payload(report)["hardware"]
    keys = [s["key"] for s in hw["sections"]]
    assert "roofline" in keys and "collectives" not in keys  # no rows, no section
    roofline = section({"hardware": hw}, "roofline")
    assert roofline["rows"] == [[HOSTILE, 12.0, 3.5e12]] and roofline["units"] == ["text", "us", "flops_per_s"]
    page = render_html(report)
    assert HOSTILE not in page and html.escape(HOSTILE) in page and "3.5 TFLOP/s" in page


def test_the_extensions_hardware_fixture_is_what_python_sends():
    """labextension/test/hardware.test.ts draws this file; it must be the payload of today's code.
    Else: ``.venv/bin/python labextension/test/fixtures/make_hardware_fixture.py``."""
    fixtures = Path(__file__).resolve().parents[2] / "labextension" / "test" / "fixtures"
    spec = importlib.util.spec_from_file_location("make_hardware_fixture", fixtures / "make_hardware_fixture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    saved = json.loads((fixtures / "hardware.json").read_text(encoding="utf-8"))
    assert saved == json.loads(json.dumps(module.build(), allow_nan=False))
