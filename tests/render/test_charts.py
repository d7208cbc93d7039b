"""The report's charts: specs that hold the report's own figures, and static SVG a reader can trust.

A real small training run (live steps with their schedule phases, process RSS) and
real GPU traces. The spec is what the JupyterLab extension draws; the SVG is what
nbconvert and GitHub show: vector, no script, no network, a hover title with its
unit on every mark, a legend for every kind of mark, names escaped.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from conftest import TRAIN_CELL, shared_report
from nbprofiler.analysis.kernel_kinds import time_by_kind
from nbprofiler.render.chart_svg import COLOR_VARS, svg_from_spec
from nbprofiler.render import view_model
from nbprofiler.render.charts import CHART_MIME, CHART_NAMES
from nbprofiler.render.views import breakdown_parts, memory_device
from nbprofiler import compare

ROOT = Path(__file__).resolve().parents[2]
V100 = "v100_resnet50_train_num_workers_0"
UNIT = re.compile(r"\d (µs|ms|s|B|KiB|MiB|GiB)\b")
HOSTILE = "<img src=x onerror=alert(1)>"
MARKS = {"rect", "circle", "path", "polygon", "line"}


@pytest.fixture(scope="module")
def run(ip):
    from conftest import SETUP_CELL

    ip.run_cell(SETUP_CELL).raise_error()
    with capture_output():
        ip.run_cell_magic("torchprofile", "--wait 1 --warmup 1 --active 3 -q -o charts_run", TRAIN_CELL)
    return ip.user_ns["charts_run"]


def same(values: list, column) -> bool:
    expected = np.asarray(column, dtype=np.float64)
    return len(values) == len(expected) and all(
        (v is None and math.isnan(e)) or (v is not None and v == e) for v, e in zip(values, expected))


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - the SVG our own chart wrote


def data_marks(root: ET.Element) -> list[ET.Element]:
    """The marks that show data: everything drawn but the grid, the axes and the legend's swatches."""
    legend = {id(el) for g in root.iter("g") for el in g.iter()}
    return [el for el in root.iter() if el.tag in MARKS and id(el) not in legend
            and el.get("class") not in ("nbp-grid", "nbp-axis")]


def test_the_breakdown_spec_is_the_reports_breakdown_step_by_step(run):
    spec = view_model.of(run).chart_spec("breakdown")
    _, parts = breakdown_parts(run)
    (panel,) = spec["panels"]
    assert panel["x"] == [int(s) for s in parts["step"]] and len(panel["x"]) == 3
    assert spec["y"]["unit"] == "us" and spec["kind"] == "bars"
    drawn = [c for c in parts.columns[1:] if np.nansum(parts[c].to_numpy(np.float64)) > 0]
    assert [s["key"] for s in panel["series"]] == drawn
    for series in panel["series"]:
        assert same(series["values"], parts[series["key"]]), series["key"]
    json.dumps(spec, allow_nan=False)  # JSON-safe: what goes into a notebook


def test_the_memory_spec_has_every_step_of_the_cell_with_its_phase(run):
    spec = view_model.of(run).chart_spec("memory")
    table = run.memory_steps
    table = table[table["device"] == memory_device(run)].sort_values("step")
    rss, tensor = spec["panels"]
    assert rss["x"] == [int(s) for s in table["step"]] and len(rss["x"]) == 12  # the loader's 12 batches
    assert same(rss["series"][0]["values"], table["rss_bytes"]) and not rss["from_zero"]
    for series in tensor["series"]:
        col = {"allocated": "end_allocated_bytes", "peak": "peak_allocated_bytes"}[series["color"]]
        assert same(series["values"], table[col])
    phases = dict(zip(table["step"], table["phase"]))
    for run_ in rss["phases"]:
        assert {phases[s] for s in range(run_["start"], run_["end"] + 1)} == {run_["phase"]}
    assert [r["phase"] for r in rss["phases"]][:3] == ["wait", "warmup", "active"]


def test_every_mark_of_the_svg_has_a_hover_title_with_its_unit(run):
    for report in (run, shared_report(V100)):
        for name in CHART_NAMES:
            svg = view_model.of(report).chart_svg(name)
            if svg is None:
                continue
            marks = data_marks(parse(svg))
            assert marks, name
            for el in marks:
                title = el.find("title")
                assert title is not None, (name, el.tag, el.attrib)
                assert UNIT.search(title.text) or re.fullmatch(r"(wait|warmup|active) steps? [\d–]+", title.text), \
                    (name, title.text)


def test_the_legend_names_every_series_and_every_shaded_phase(run):
    spec = view_model.of(run).chart_spec("memory")
    root = parse(view_model.of(run).chart_svg("memory"))
    legend = [" ".join(t.itertext()) for g in root.iter("g") if g.get("class") == "nbp-legend-entry"
              for t in g.iter("text")]
    labels = {s["label"] for p in spec["panels"] for s in p["series"]}
    assert labels and labels | {"wait steps", "warmup steps", "active steps"} == set(legend)
    timeline = parse(view_model.of(shared_report(V100)).chart_svg("memory_timeline"))
    assert "step start" in [t.text for t in timeline.iter("text")]


def test_each_line_swatch_of_the_static_legend_has_its_lines_colour(run):
    """The memory chart's legend: each series' swatch is drawn with its line's colour class and literal."""
    for report in (run, shared_report(V100)):
        root = parse(view_model.of(report).chart_svg("memory"))
        entries = [g for g in root.iter("g") if g.get("class") == "nbp-legend-entry"]
        lines = {el.find("title").text.split(": ")[0]: el for el in data_marks(root) if el.tag == "path"}
        swatched = 0
        for entry in entries:
            label = "".join(entry.find("text").itertext())
            if label in lines:
                swatch = entry.find("path")
                colour = {k: swatch.get(k) for k in ("class", "stroke", "stroke-dasharray")}
                assert colour == {k: lines[label].get(k) for k in colour}, label
                swatched += 1
        assert swatched == len(lines) >= 2


def test_the_svg_is_static_themed_and_escapes_names():
    report = shared_report(V100)
    for name in CHART_NAMES:
        svg = view_model.of(report).chart_svg(name)
        assert "<script" not in svg and "http" not in svg and not re.search(r"\son\w+=", svg)
        css = svg[svg.index("<style>"):svg.index("</style>")]
        assert "var(--jp-ui-font-color1, var(--vscode-foreground, #222))" in css
        for cls in set(re.findall(r'class="nbp-f-(\w+)"', svg)):
            assert f".nbp-f-{cls}{{fill:{COLOR_VARS[cls][0]}}}" in css
        # Ticks in plain decimals, memory in binary units: never "+5.475e2".
        assert not re.search(r">[-+]?\d+(\.\d+)?e[-+]?\d+<", svg)
    assert "memory (GiB)" in view_model.of(report).chart_svg("memory_timeline")
    spec = json.loads(json.dumps(view_model.of(report).chart_spec("kernels")))
    spec["panels"][0]["x"][0] = HOSTILE
    spec["title"] = HOSTILE
    svg = svg_from_spec(spec)
    assert HOSTILE not in svg and "&lt;img src=x onerror=alert(1)&gt;" in svg
    parse(svg)


def test_kernel_time_by_category_is_bars_with_the_kernel_tables_time():
    report = shared_report(V100)
    spec = view_model.of(report).chart_spec("kernels")
    assert spec["kind"] == "hbars"
    by_kind = time_by_kind(report.kernels)
    (series,) = spec["panels"][0]["series"]
    assert sum(series["values"]) == pytest.approx(float(by_kind.sum()))
    assert spec["panels"][0]["x"][0] == by_kind.index[0] and series["values"][0] == by_kind.iloc[0]
    titles = [t.text for t in parse(view_model.of(report).chart_svg("kernels")).iter("title")]
    assert f"{by_kind.index[0]}: " in " ".join(titles)


def test_the_bundle_pairs_the_spec_with_its_svg_and_a_chartless_report_has_none():
    report = shared_report(V100)
    model = view_model.of(report)
    assert model.chart_bundle("breakdown") == {CHART_MIME: model.chart_spec("breakdown"),
                                               "text/html": model.chart_svg("breakdown")}
    cpu = shared_report("cpu_only")
    assert view_model.of(cpu).chart_spec("kernels") is None and view_model.of(cpu).chart_bundle("kernels") is None
    with pytest.raises(ValueError, match="unknown chart 'pie'"):
        view_model.of(report).chart_spec("pie")


def test_a_comparison_draws_both_runs_on_one_scale():
    c = compare(ROOT / "tests/data/traces/v100_resnet50_train_num_workers_0.pt.trace.json.gz",
                ROOT / "tests/data/traces/v100_resnet50_train_num_workers_4.pt.trace.json.gz")
    bundle = view_model.of_comparison(c).chart_bundle()
    spec = bundle[CHART_MIME]
    assert spec["shared_y"] and spec["layout"] == "columns" and len(spec["panels"]) == 2
    before, after = spec["panels"]
    assert [s["key"] for s in before["series"]] == [s["key"] for s in after["series"]]
    assert "num_workers=0" in before["title"] or "(before)" in before["title"]
    assert bundle["text/html"].count("nbp-axis") >= 2


def test_rendering_a_report_imports_no_plotting_library():
    code = f"""
import sys, nbprofiler
from nbprofiler.render.html import render_html
from nbprofiler.render.payload import report_payload
from nbprofiler.render.widget import Explorer
r = nbprofiler.load({str(ROOT / f"tests/data/traces/{V100}.pt.trace.json.gz")!r})
page = render_html(r)
assert page.count("<svg") - page.count('<svg class="nbp-chart nbp-flame"') == 5  # the charts; then the flame graphs
report_payload(r)
e = Explorer(r)
for tab in e.tab_titles:
    e.show_tab(tab)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "PIL")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_extension_draws_with_the_same_theme_palette():
    css = (ROOT / "labextension/style/charts.css").read_text(encoding="utf-8")
    for key, (chain, _) in COLOR_VARS.items():
        assert f".nbp-f-{key} {{ fill: {chain};" in css and f".nbp-s-{key} {{ stroke: {chain};" in css, key
