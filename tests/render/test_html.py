"""The static HTML report (and the text and JSON renderings beside it): complete, offline, escaped."""
from __future__ import annotations

import json
import re
import textwrap

import pytest
from IPython.utils.capture import capture_output

import nbprofiler
from conftest import shared_trace
from nbprofiler.format import fmt_us
from nbprofiler.render.frontend import MIME_TYPE
from nbprofiler.render.payload import report_payload

HOSTILE_SCRIPT = "<script>alert(1)</script>"
HOSTILE_IMG = "<img src=x onerror=alert(1)>"
HOSTILE_CLOSE = "</script><b>bold</b>"

CELL = textwrap.dedent(f"""
    for x, y in train_loader:
        with torch.profiler.record_function({HOSTILE_SCRIPT!r}):
            out = model(x)
        with torch.profiler.record_function({HOSTILE_IMG!r}):
            loss = F.cross_entropy(out, y)  # {HOSTILE_CLOSE}
        opt.zero_grad(); loss.backward(); opt.step()
""").strip("\n")


@pytest.fixture(scope="module")
def hostile(ip):
    from conftest import SETUP_CELL

    ip.run_cell(SETUP_CELL).raise_error()
    with capture_output():
        ip.run_cell_magic("torchprofile", "--stack --modules -q -o hostile_run", CELL)
    return ip.user_ns["hostile_run"]


def charts(page: str) -> list[str]:
    """The inline SVG charts of a page, by their titles."""
    return re.findall(r'<svg class="nbp-chart"[^>]* aria-label="([^"]*)"', page)


def test_the_written_file_is_a_complete_offline_report(hostile, tmp_path):
    path = tmp_path / "report.html"
    returned = hostile.to_html(path)
    page = path.read_text(encoding="utf-8")
    assert page == returned and page.startswith("<!DOCTYPE html>")
    for section in ("Overview", "Suggestions", "Steps", "Top operators", "Cell lines", "Modules", "Memory"):
        assert f"<h4>{section}" in page, section
    assert page.count("<table") >= 6
    # Vector charts: the breakdown, memory over every step, memory through the profiled steps; no image.
    assert len(charts(page)) == 3 and "<img" not in page
    # No network: no external script, style sheet or image, and no script element at all.
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<link" not in page and "<script" not in page


def test_hostile_names_are_text(hostile):
    ops = set(hostile.operators["name"])
    assert HOSTILE_SCRIPT in ops and HOSTILE_IMG in ops  # a real trace holding them
    page = hostile.to_html()
    assert "<script" not in page and "<img src=x" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page  # from the cell's own source, in Cell lines
    assert 'class="nbp-copy-code"' not in page  # inside a notebook the fragment carries no handlers


def test_cell_lines_and_modules_sections(hostile):
    page = hostile.to_html()
    lines = page[page.index("<h4>Cell lines"):page.index("<h4>Modules")]
    assert lines.count("<tr><td>") == len(CELL.splitlines())  # every line of the cell, with or without time
    assert "opt.zero_grad(); loss.backward(); opt.step()" in lines
    modules = page[page.index("<h4>Modules"):page.index("<h4>Memory")]
    # Qualified names (the last part shown, with the class), the full name as the row's title.
    assert 'title="model.2"' in modules and '2<span class="mt"> Linear</span>' in modules
    assert "<details open>" in modules


def test_gpu_trace_has_kernels_a_pie_and_the_device_breakdown(tmp_path):
    report = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz"))
    page = report.to_html()
    assert "<h4>Kernels" in page
    kernels = page[page.index("<h4>Kernels"):page.index("<h4>Memory")]
    assert charts(kernels) == [f"Kernel time by category (total {fmt_us(report.kernels['total_us'].sum())})"]
    # breakdown, kernel time by category, memory over steps, memory timeline, roofline
    assert len(charts(page)) == 5 and charts(page)[-1] == f"Roofline on {report.device.name}"
    assert "GPU utilization" in page and "Tesla V100-DGXS-32GB" in page
    coded = sum(1 for s in report.suggestions if s.code)
    assert coded >= 1 and 'class="nbp-copy-code"' not in page
    assert report.to_html(tmp_path / "gpu.html").count('class="nbp-copy-code"') == coded  # one Copy per snippet
    payload = report_payload(report)
    assert payload["breakdown"]["kind"] == "device"
    assert payload["breakdown"]["columns"][:2] == ["step", "kernel"]
    assert 0 < payload["summary"]["gpu_utilization"] < 1


def test_text_report_has_every_section_and_the_largest_gain_first():
    report = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz"))
    text = report.to_text()
    for heading in ("Step time by device activity", "Suggestions (largest expected gain first)",
                    "Top operators", "Top kernels", "Memory on cuda:0"):
        assert heading in text, heading
    listed = re.findall(r"^\d+\. \[\w+\] (.+)$", text, flags=re.M)
    by_gain = sorted(report.suggestions, key=lambda s: -s.gain)
    assert listed == [s.title for s in by_gain] and len(listed) >= 2


def test_payload_keys_are_the_labextension_contract(hostile):
    payload = report_payload(hostile)
    assert set(payload) == {"schema", "title", "source", "partial", "notes", "device", "summary", "breakdown",
                            "operators", "steps", "memory", "suggestions", "charts", "timeline", "kernels", "lines",
                            "modules", "flame", "saved_from", "hardware", "distributed", "cycles", "tabs", "more_views",
                            "made_here", "report_token", "origin"}
    assert payload["breakdown"]["kind"] == "phases"  # a CPU run
    assert payload["breakdown"]["columns"] == ["step", "dataloader", "forward", "backward", "optimizer", "other"]
    assert payload["summary"]["batch_size"] == 8 and payload["summary"]["samples_per_s"] > 0
    assert {"title", "evidence", "expected_gain", "code", "severity"} <= set(payload["suggestions"][0])


def test_terminal_ipython_gets_text_only(hostile, ip):
    before = list(ip.display_formatter.active_types)
    ip.display_formatter.active_types = ["text/plain"]
    try:
        assert set(hostile._repr_mimebundle_()) == {"text/plain"}
    finally:
        ip.display_formatter.active_types = before
    assert {"text/plain", "text/html", MIME_TYPE} <= set(hostile._repr_mimebundle_())


def test_hundreds_of_steps_still_chart_every_step():
    """300 profiled steps: the breakdown is drawn as stacked bands (not 300 slivers of bars), with
    a readable number of step labels, and the static report carries it as inline SVG."""
    from nbprofiler.render import chart_svg, view_model
    from nbprofiler.report import Report
    from nbprofiler.trace.parser import parse_trace

    events = []
    for step in range(300):
        t = step * 100.0
        events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "ts": t, "dur": 90,
                    "pid": 1, "tid": 1},
                   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": t + 5, "dur": 40 + step % 7,
                    "pid": 1, "tid": 1}]
    report = Report.from_trace(parse_trace(json.dumps({"traceEvents": events}).encode(), "many"), "many")
    assert len(report.phases) == 300
    spec = view_model.of(report).chart_spec("breakdown")
    assert spec["panels"][0]["x"] == list(range(300))
    svg = view_model.of(report).chart_svg("breakdown")
    assert "<polygon" in svg and "<rect class=\"nbp-f-" not in svg.split("nbp-legend-entry")[0]  # bands, not bars
    labels = re.findall(r'text-anchor="middle" class="nbp-muted">(\d+)</text>', svg)  # the x axis's
    assert 3 <= len(labels) <= chart_svg.MAX_X_LABELS and labels[0] == "0"
    assert svg in report.to_html()
