"""Byte figures in binary units (B, KiB, MiB, GiB, TiB: powers of 1024, as torch's own memory
messages print them), and each figure the same string in the text report, the static HTML,
the widget, the charts' axes and the JupyterLab extension's saved-report view.

The extension's side: labextension/test/units.test.ts checks its ``formatBytes`` and
``byteAxisUnit`` against labextension/test/fixtures/bytes.json, which make_fixtures.py
writes from ``fmt_bytes`` and ``byte_axis_unit``; the test here checks that the file is
what they print now.
"""
from __future__ import annotations

import importlib.util
import json
import re

import pytest

from conftest import ROOT, shared_report
from nbprofiler.render import view_model
from nbprofiler.format import byte_axis_unit, fmt_bytes
from nbprofiler.render.html import render_html
from nbprofiler.render.views import operator_view
from nbprofiler.render.widget import Explorer

FIXTURES = ROOT / "labextension" / "test" / "fixtures"
# A figure labelled in decimal-named units (1.0 MB, 23.5 GB), which no renderer may print.
DECIMAL_UNIT = re.compile(r"[\d.]+ [kKMGT]B\b")
V100 = "v100_resnet50_train_num_workers_0"


@pytest.mark.parametrize("value, text", [
    (0, "0 B"), (-0.0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (1280, "1.3 KiB"),  # a tie at the kept digit rounds away from zero, as JavaScript's toFixed does
    (102912, "101 KiB"),  # 100.5 KiB: no decimal from 100 on
    (1048575, "1.0 MiB"),  # 1023.999 KiB rounds to 1024 KiB, which is 1.0 MiB
    (802 * 2**20, "802 MiB"), (34084028416, "31.7 GiB"), (2**40, "1.0 TiB"), (2**50, "1024 TiB"),
    (-1536, "-1.5 KiB"), (None, "–"), (float("nan"), "–"), (float("inf"), "–"),
])
def test_bytes_read_in_binary_units(value, text):
    assert fmt_bytes(value) == text


@pytest.mark.parametrize("max_bytes, unit", [
    (0, ("B", 1.0)), (2047, ("B", 1.0)), (2048, ("KiB", 1024.0)),
    (1.5 * 2**30, ("MiB", 2.0**20)),  # 1536 MiB rather than an axis from 0 to 1.5 GiB
    (3 * 2**30, ("GiB", 2.0**30)), (2**60, ("TiB", 2.0**40)),
])
def test_byte_axes_take_the_largest_unit_the_top_is_at_least_2_of(max_bytes, unit):
    assert byte_axis_unit(max_bytes) == unit


def _make_fixtures():
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_extension_is_held_to_what_fmt_bytes_prints_now():
    """Else: ``.venv/bin/python labextension/test/fixtures/make_fixtures.py --bytes``."""
    assert json.loads((FIXTURES / "bytes.json").read_text()) == _make_fixtures().bytes_fixture()


def _widget_text(report) -> str:
    explorer = Explorer(report)
    for title in explorer.tab_titles:
        explorer.show_tab(title)

    def walk(widget):
        yield widget
        for child in getattr(widget, "children", ()):
            yield from walk(child)

    return " ".join(w.value for w in walk(explorer) if isinstance(getattr(w, "value", None), str))


def test_a_byte_figure_reads_the_same_in_every_renderer():
    report = shared_report(V100)
    text = report.to_text()
    page = render_html(report)
    widget = _widget_text(report)
    # The device memory each operator allocated, in the rows every renderer shows.
    allocated = [v for v in operator_view(report)["device_self_alloc_bytes"] if v > 0]
    assert len(allocated) >= 3
    for figure in map(fmt_bytes, allocated):
        assert re.fullmatch(r"[\d.]+ (KiB|MiB|GiB)", figure)
        assert figure in text and figure in page and figure in widget, figure
    # The device's memory, in the HTML and the widget, and as the extension prints it.
    memory = report.device.total_memory_bytes
    assert f"{fmt_bytes(memory)} memory" in page and fmt_bytes(memory) in widget
    extension = dict((v, s) for v, s in json.loads((FIXTURES / "bytes.json").read_text())["fmt_bytes"])
    assert extension[memory] == fmt_bytes(memory) == "31.7 GiB"
    for output in (text, page, widget):
        assert DECIMAL_UNIT.findall(output) == []


def test_memory_charts_name_their_axis_in_binary_units():
    report = shared_report(V100)
    peak = float(report.memory_steps["peak_allocated_bytes"].max())  # about 2.6 GiB on the GPU
    assert byte_axis_unit(peak)[0] == "GiB"
    for name in ("memory", "memory_timeline"):
        svg = view_model.of(report).chart_svg(name)
        assert svg is not None
        labels = re.findall(r">(memory \([^)]*\))</text>", svg)
        assert labels and all(re.fullmatch(r"memory \((B|KiB|MiB|GiB|TiB)\)", label) for label in labels)
    timeline = view_model.of(report).chart_svg("memory_timeline")
    assert re.findall(r">(memory \([^)]*\))</text>", timeline) == ["memory (GiB)"]
