"""The Kernels tables' achieved FLOP/s and bound, and the roofline scatter of the Hardware view.

A kernel has no FLOP count of its own in a trace: it reads the roofline row of the FLOP operator
that launched it. The check recomputes which operator that is from the raw JSON (the launch call's
enclosing ops on its thread, by time), independently of the operator tree. The scatter is checked
against ``report.roofline`` and ``report.device_spec``, the tables a user reads it against.
"""
from __future__ import annotations

import html
import math
import re
from collections import defaultdict

import ipywidgets as widgets
import pandas as pd
import pytest
from conftest import shared_raw_events, shared_report
from test_hardware_view import HOSTILE, LAUNCH_CALLS, rows_as_dicts

from nbprofiler.format import fmt_si
from nbprofiler.render.chart_svg import svg_from_spec
from nbprofiler.render import view_model
from nbprofiler.render.charts import CHART_MIME, roofline_spec
from nbprofiler.render.hardware import KERNEL_ROOFLINE_HELP
from nbprofiler.render.html import render_html
from nbprofiler.render.payload import report_payload
from nbprofiler.render.widget import Explorer
from nbprofiler.report import Report

V100 = "v100_resnet50_train_num_workers_0"


def launching_flop_operator(trace: str, flop_names: set[str]) -> dict[str, str | None]:
    """Per kernel name, from the raw events: the outermost op named in ``flop_names`` around the
    kernel's launch call on its thread, the one whose launches took most of the kernel's time
    (categories as old and new profilers spell them)."""
    events = shared_raw_events(trace)
    ops = defaultdict(list)
    for e in events:
        if e.get("cat", "").lower() in ("cpu_op", "operator"):
            ops[(e["pid"], e["tid"])].append(e)
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat", "").lower() in ("cuda_runtime", "runtime") and e["name"] in LAUNCH_CALLS
             and "correlation" in e.get("args", {})}
    outer: dict[int, str | None] = {}
    for key, thread_ops in ops.items():
        thread_calls = sorted((c for c in calls.values() if (c["pid"], c["tid"]) == key), key=lambda c: c["ts"])
        thread_ops.sort(key=lambda o: (o["ts"], -o["dur"]))
        stack: list[dict] = []
        i = 0
        for call in thread_calls:
            while i < len(thread_ops) and thread_ops[i]["ts"] <= call["ts"]:
                while stack and stack[-1]["ts"] + stack[-1]["dur"] < thread_ops[i]["ts"]:
                    stack.pop()
                stack.append(thread_ops[i])
                i += 1
            around = [o for o in stack if o["ts"] + o["dur"] >= call["ts"] + call["dur"]]
            outer[call["args"]["correlation"]] = next((o["name"] for o in around if o["name"] in flop_names), None)
    time: dict[str, dict[str | None, float]] = defaultdict(lambda: defaultdict(float))
    for e in events:
        if e.get("cat", "").lower() == "kernel":
            time[e["name"]][outer.get(e.get("args", {}).get("correlation"))] += e["dur"]
    return {name: max(by_op, key=lambda op: by_op[op]) for name, by_op in time.items()}


def test_each_kernel_reads_the_roofline_row_of_the_flop_operator_that_launched_it():
    report = shared_report(V100)
    roofline = report.roofline.set_index("operator")
    launcher = launching_flop_operator(V100, set(roofline.index))
    kernels = rows_as_dicts(report_payload(report)["kernels"])
    assert sum(k["achieved_flops_per_s"] is not None for k in kernels) > 20
    for k in kernels:
        op = launcher[k["name"]]
        if op is None:
            assert (k["achieved_flops_per_s"], k["bound"]) == (None, ""), k["name"]
        else:
            row = roofline.loc[op]
            assert k["achieved_flops_per_s"] == pytest.approx(row["achieved_flops_per_s"]), k["name"]
            assert k["bound"] == ("" if row["bound"] == "unknown" else row["bound"]), k["name"]


def test_the_v100_conv_kernels_are_compute_bound_and_the_fc_gemm_memory_bound():
    """What a user checks: cuDNN's convolution kernels at most of the fp32 peak, the classifier's
    small gemm (its addmm, batch 32 x 2048 x 1000) under the ridge."""
    report = shared_report(V100)
    kernels = pd.DataFrame(rows_as_dicts(report_payload(report)["kernels"]))
    peak = report.device_spec.peak_flops("fp32")
    conv = kernels[kernels["operator"].str.startswith("aten::cudnn_convolution", na=False)]
    assert len(conv) > 10 and set(conv["bound"]) == {"compute-bound"}
    assert ((conv["achieved_flops_per_s"] > 0.6 * peak) & (conv["achieved_flops_per_s"] < peak)).all()
    fc = kernels[(kernels["operator"] == "aten::addmm") & kernels["name"].str.contains("gemm")]
    assert len(fc) and set(fc["bound"]) == {"memory-bound"}
    norm = kernels[kernels["operator"].str.contains("batch_norm", na=False)]
    assert len(norm) and norm["achieved_flops_per_s"].isna().all() and set(norm["bound"]) == {""}


def test_every_view_shows_the_kernel_columns_with_what_they_are():
    report = shared_report(V100)
    payload = report_payload(report)
    assert payload["kernels"]["help"] == KERNEL_ROOFLINE_HELP
    assert "launched the kernel" in KERNEL_ROOFLINE_HELP["achieved_flops_per_s"]
    first = rows_as_dicts(payload["kernels"])[0]
    page = render_html(report)
    kernels = page[page.index("<h4>Kernels</h4>"):page.index("<h4>Hardware</h4>")]
    assert f'title="{html.escape(KERNEL_ROOFLINE_HELP["achieved_flops_per_s"])}">achieved FLOP/s</th>' in kernels
    assert f"<td>{fmt_si(first['achieved_flops_per_s'], 'FLOP/s')}</td><td>{first['bound']}</td>" in kernels
    e = Explorer(report)
    e.show_tab("Kernels")
    grid = html.unescape(e.kernels.body.value)
    assert "achieved FLOP/s" in grid and KERNEL_ROOFLINE_HELP["bound"] in grid
    assert fmt_si(first["achieved_flops_per_s"], "FLOP/s") in grid


def test_the_scatter_has_a_point_per_roofline_row_under_the_devices_roof():
    report = shared_report(V100)
    spec = view_model.of(report).chart_spec("roofline")
    roof = report.roofline
    (panel,) = spec["panels"]
    assert (spec["kind"], spec["version"]) == ("scatter", 2)
    assert [p["label"] for p in panel["points"]] == list(roof["operator"])
    assert panel["x"] == pytest.approx(list(roof["intensity"]))
    for i, (_, row) in enumerate(roof.iterrows()):
        (value,) = [s["values"][i] for s in panel["series"] if s["values"][i] is not None]
        assert value == pytest.approx(row["achieved_flops_per_s"])
        assert (panel["points"][i]["bound"], panel["points"][i]["dtype"]) == (row["bound"], row["dtype"])
    spec_sheet = report.device_spec
    (fp32,) = panel["roofs"]
    assert fp32["ridge"] == pytest.approx(spec_sheet.fp32_tflops * 1e12 / (spec_sheet.memory_gb_per_s * 1e9))
    assert fp32["ridge"] == pytest.approx(roof["ridge"].iloc[0])
    lo, hi = spec["x"]["domain"]
    assert lo <= min(panel["x"]) and max(panel["x"]) <= hi and lo <= fp32["ridge"] <= hi
    assert spec["y"]["domain"][1] >= fp32["peak_flops_per_s"]


def test_the_scatter_svg_names_each_point_and_says_what_it_is():
    report = shared_report(V100)
    svg = html.unescape(svg_from_spec(view_model.of(report).chart_spec("roofline")))
    titles = re.findall(r'<g class="nbp-point"><circle [^>]*><title>(.*?)</title>', svg)
    assert len(titles) == len(report.roofline)
    for title, (_, row) in zip(titles, report.roofline.iterrows()):
        assert title == " · ".join([row["operator"], f"dtype: {row['dtype']}",
                                    f"intensity: {fmt_si(row['intensity'], 'FLOP/byte')}",
                                    f"achieved: {fmt_si(row['achieved_flops_per_s'], 'FLOP/s')}",
                                    f"bound: {row['bound']}"])
    assert len(re.findall(r"<path data-roof=\"fp32\"", svg)) == 1


def test_operator_names_are_escaped_in_the_scatter(monkeypatch):
    report = shared_report(V100)
    hostile = report.roofline.assign(operator=[HOSTILE + str(i) for i in range(len(report.roofline))])
    monkeypatch.setattr(Report, "roofline", property(lambda self: hostile))
    svg = svg_from_spec(roofline_spec(view_model.of(report)))
    assert "<img" not in svg and svg.count(f"<title>{html.escape(HOSTILE)}") == len(hostile)


def test_each_view_draws_the_scatter_at_the_top_of_the_roofline_section():
    report = shared_report(V100)
    payload = report_payload(report)
    roofline = next(s for s in payload["hardware"]["sections"] if s["key"] == "roofline")
    assert roofline["chart"] == "roofline"
    assert payload["charts"]["roofline"] == view_model.of(report).chart_spec("roofline")
    page = render_html(report)
    section = page[page.index("<h4>Roofline</h4>"):]
    assert section.index('<svg class="nbp-chart"') < section.index("<table>")
    tab = Explorer(report).show_tab("Hardware")
    outputs = [w for w in tab.children[0].children if isinstance(w, widgets.Output)]
    assert [o.outputs[0]["data"][CHART_MIME]["name"] for o in outputs] == ["roofline"]


@pytest.mark.parametrize("trace", ["cpu_only", "mi250_rocm_toy_train"])
def test_no_scatter_without_a_roofline_or_the_devices_figures(trace):
    """A CPU run has no roofline; the MI250 trace's device is not in the spec table (no peak, no bandwidth)."""
    report = shared_report(trace)
    assert view_model.of(report).chart_spec("roofline") is None
    assert "roofline" not in report_payload(report)["charts"]
    page = render_html(report)
    assert 'aria-label="Roofline' not in page


def test_no_scatter_where_no_row_has_a_known_intensity(monkeypatch):
    report = shared_report(V100)
    unknown = report.roofline.assign(intensity=math.nan)
    monkeypatch.setattr(Report, "roofline", property(lambda self: unknown))
    assert roofline_spec(view_model.of(report)) is None
