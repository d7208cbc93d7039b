"""A Comparison rendered as a Report is: static HTML, the compare view, the bundle; and the
suggestion cards' "Try it" markup. Real traces throughout: the two V100 runs (num_workers 0
and 4), and a real A100 trace with an operator and a kernel renamed to hostile names."""
from __future__ import annotations

import gzip
import html
import json
import re

import pytest

from conftest import front_end, shared_report, shared_trace
from nbprofiler.format import fmt_pct
from nbprofiler.render import frontend, view_model
from nbprofiler.render.charts import CHART_MIME
from nbprofiler.render.compare_widget import CompareView
from nbprofiler.render.style import STYLE
from nbprofiler.render.widget import Explorer
from nbprofiler import compare

HOSTILE_OP = "<img src=x onerror=alert(1)>"
HOSTILE_KERNEL = "<script>alert(1)</script>"
TRY = re.compile(r'<button class="nbp-try" type="button" data-nbp-kind="([^"]*)"[^>]*>Try it</button>')
TRY_LINE = ('<div class="nbp-try-line">To try it: paste the code in a new cell above this one, run it, then re-run '
            "this cell with <code>%%torchprofile --compare</code>.</div>")


def walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def html_values(widget) -> list[str]:
    return [w.value for w in walk(widget) if isinstance(getattr(w, "value", None), str)]


def shown_names(table) -> list[str]:
    """The names a PagedTable draws on its page, as the browser shows them."""
    return [html.unescape(t) for t in re.findall(r'<div class="n[^"]*" title="([^"]*)"', table.body.value)]


@pytest.fixture(scope="module")
def v100():
    return compare(shared_trace("v100_resnet50_train_num_workers_0"), shared_trace("v100_resnet50_train_num_workers_4"),
                   before_label="num_workers=0", after_label="num_workers=4")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A100 AlexNet before; after, the same trace with its convolution operator and its GEMM kernel
    renamed to HTML: so the hostile names are new, and the originals vanished."""
    raw = gzip.decompress(shared_trace("a100_alexnet_small").read_bytes()).decode()
    assert '"aten::cudnn_convolution"' in raw and '"ampere_sgemm_32x32_sliced1x4_tn"' in raw
    raw = raw.replace('"aten::cudnn_convolution"', json.dumps(HOSTILE_OP))
    raw = raw.replace('"ampere_sgemm_32x32_sliced1x4_tn"', json.dumps(HOSTILE_KERNEL))
    path = tmp_path_factory.mktemp("hostile") / "after.pt.trace.json"
    path.write_text(raw)
    return compare(shared_trace("a100_alexnet_small"), path)


def test_the_static_html_shows_verdict_side_by_side_chart_and_the_changes(v100, tmp_path):
    page = v100.to_html(tmp_path / "compare.html")
    assert page == (tmp_path / "compare.html").read_text(encoding="utf-8") and page.startswith("<!DOCTYPE html>")
    assert html.escape(v100.verdict) in page and "num_workers=0 → num_workers=4" in page
    for section in ("Summary", "Breakdown", "Operators", "Kernels", "Memory"):
        assert f"<h4>{section}" in page, section
    # One chart: both runs side by side in one vector chart, on one scale.
    assert page.count('<svg class="nbp-chart"') == 1 and view_model.of_comparison(v100).chart_svg() in page
    assert view_model.of_comparison(v100).chart_bundle()[CHART_MIME]["shared_y"]
    # The DataLoader row: both shares and what explains the change, as the comparison has them.
    row = v100.breakdown.set_index("part").loc["dataloader"]
    dataloader = re.search(r"<tr><td>DataLoader</td>.*?</tr>", page).group(0)
    for text in (fmt_pct(row.before_share), fmt_pct(row.after_share), html.escape(row.explanation)):
        assert text in dataloader
    assert html.escape(v100.method) in page
    vanished = v100.kernels[v100.kernels["status"] == "vanished"]["name"].iloc[0]
    assert re.search(rf'title="{re.escape(html.escape(vanished))}">[^<]*</td><td>vanished</td>', page)
    # Offline: no script, no external resource.
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)


def test_the_compare_view_has_its_tabs_side_by_side_charts_and_sortable_tables(v100, recording):
    view = v100.explorer()
    assert isinstance(view, CompareView)
    assert view.tab_titles == ("Summary", "Breakdown", "Operators", "Kernels", "Memory")
    assert view.operators is None  # built when first opened
    summary = " ".join(html_values(view.show_tab("Summary")))
    assert html.escape(v100.verdict) in summary and "samples / s" not in summary  # trace files count no samples
    breakdown = " ".join(html_values(view.show_tab("Breakdown")))
    outputs = [w.outputs for w in walk(view.show_tab("Breakdown")) if hasattr(w, "outputs")]
    chart = view_model.of_comparison(v100).chart_bundle()
    assert outputs == [({"output_type": "display_data", "data": chart, "metadata": {}},)]
    assert "<img" not in breakdown
    assert "what explains it" in breakdown

    view.show_tab("Operators")
    ops = view.operators
    shown = ops.table.page_frame
    assert len(shown) == min(50, len(v100.operators))
    assert shown_names(ops.table) == shown["name"].tolist()
    sizes = shown["device_self_ms_delta"].abs().tolist()  # largest change first, either way
    assert sizes == sorted(sizes, reverse=True)
    front_end(ops.status, index=[v for _, v in ops.status.options].index("new"))
    new = v100.operators[v100.operators["status"] == "new"]["name"]
    assert sorted(shown_names(ops.table)) == sorted(new) and len(new) > 0
    front_end(ops.table.filter, value="copy_")
    assert ops.table.view.empty  # aten::copy_ ran in both runs: not new

    view.show_tab("Kernels")
    kernels = view.kernels
    front_end(kernels.status, index=[v for _, v in kernels.status.options].index("vanished"))
    vanished = v100.kernels[v100.kernels["status"] == "vanished"]["name"]
    assert set(kernels.table.view["name"]) == set(vanished)
    memory = " ".join(html_values(view.show_tab("Memory")))
    assert "peak allocated" in memory


def test_the_bundle_carries_view_static_html_and_the_labextension_payload(v100, recording, monkeypatch):
    monkeypatch.setattr(frontend, "widget_frontend", lambda: True)
    data = v100._repr_mimebundle_()
    assert set(data) == {"text/plain", "text/html", frontend.COMPARISON_MIME, frontend.WIDGET_MIME}
    assert data["text/plain"] == v100.to_text()
    payload = data[frontend.COMPARISON_MIME]
    chart = view_model.of_comparison(v100).chart_spec()
    assert payload == {"version": 1, "html": data["text/html"], "verdict": v100.verdict, "chart": chart}
    # The spec draws both runs' breakdowns, in the HTML's slot that holds the static SVG of the same chart.
    assert [p["title"] for p in chart["panels"]] == [f"{v100.before_label} (before)", f"{v100.after_label} (after)"]
    assert '<div class="nbp-compare-chart"><svg' in payload["html"]
    json.dumps(payload, allow_nan=False)
    opened = [d["state"] for kind, d in recording if kind == "comm_open"]
    assert any(s.get("_model_name") == "TabModel" and "Breakdown" in s.get("titles", ()) for s in opened)
    # Without a widget front end (nbconvert, a saved notebook), the static comparison only.
    monkeypatch.setattr(frontend, "widget_frontend", lambda: False)
    assert set(v100._repr_mimebundle_()) == {"text/plain", "text/html", frontend.COMPARISON_MIME}


def test_hostile_names_are_text_in_the_html_and_the_view(hostile, recording):
    ops = hostile.operators.set_index("name")
    assert ops.loc[HOSTILE_OP, "status"] == "new" and ops.loc["aten::cudnn_convolution", "status"] == "vanished"
    assert hostile.kernels.set_index("name").loc[HOSTILE_KERNEL, "status"] == "new"
    page = hostile.to_html()
    assert html.escape(HOSTILE_OP) in page and html.escape(HOSTILE_KERNEL) in page
    assert "<img src=x" not in page and "<script" not in page

    view = CompareView(hostile)
    for title in view.tab_titles:
        view.show_tab(title)
    front_end(view.operators.table.filter, value="onerror")
    assert shown_names(view.operators.table) == [HOSTILE_OP]
    front_end(view.kernels.table.filter, value="alert")
    assert shown_names(view.kernels.table) == [HOSTILE_KERNEL]
    values = html_values(view)
    values += [d["state"]["value"] for _, d in recording if isinstance(d.get("state", {}).get("value"), str)]
    assert not any("<img src=x" in v or "<script>alert" in v for v in values)
    assert any(html.escape(HOSTILE_OP) in v for v in values) and any(html.escape(HOSTILE_KERNEL) in v for v in values)


def cards(page: str) -> list[str]:
    return re.findall(r'<div class="card .*?</pre></div>(?:<div class="nbp-try-line">.*?</div>)?</div>', page)


def test_cards_with_code_carry_try_it_and_the_line_to_run(recording):
    report = shared_report("v100_resnet50_train_num_workers_0")
    coded = [s for s in report.suggestions if s.code and not s.guidance]  # guidance has nothing to try
    assert coded
    for page in (report.to_html(), report.to_html("/dev/null"),
                 " ".join(html_values(Explorer(report).show_tab("Suggestions")))):
        assert sorted(TRY.findall(page)) == sorted(html.escape(s.kind) for s in coded)
        assert page.count(TRY_LINE) == len(coded)
        for card in cards(page):  # the button next to Copy (where there is one), the code in the card's <pre>
            assert re.search(r"(</button>)?<button class=\"nbp-try\"[^>]*>Try it</button><pre>", card)
    # Only Copy's handler runs in the page: the Try it button carries none, the labextension handles it.
    assert not re.search(r'class="nbp-try"[^>]*onclick', report.to_html("/dev/null"))


def test_cards_without_code_have_no_try_it():
    report = shared_report("a100_alexnet_small")
    assert report.suggestions and not any(s.code for s in report.suggestions)
    page = report.to_html()
    assert 'class="card' in page and "nbp-try" not in page.replace(STYLE, "")


def test_try_it_shows_only_under_the_labextension():
    rules = {selector.strip(): body for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", STYLE)}
    assert rules[".nbp .nbp-try"] == "display:none"
    assert rules[".nbp-lab .nbp .nbp-try"] == "display:inline-block"
    assert rules[".nbp-lab .nbp .nbp-try-line"] == "display:none"
