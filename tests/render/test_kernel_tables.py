"""The Kernels tables on a real A100 trace with templated kernel names: one line a kernel by its
short name, the whole name on hover, sideways scrolling instead of cut-off columns; the
explorer's grid as an ARIA grid whose sort control and sorted header agree."""
from __future__ import annotations

import html
import re

from conftest import shared_report
from test_widget import click_header, header_cells

from nbprofiler.format import shorten
from nbprofiler.render import html as static_html, view_model
from nbprofiler.render.style import STYLE, WIDGET_STYLE
from nbprofiler.render.widget import Explorer

TRACE = "a100_train"


def css_rules(css: str) -> dict[str, str]:
    return {selector.strip(): body for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css)}


def test_the_static_kernel_table_shows_short_names_with_the_whole_name_on_hover() -> None:
    report = shared_report(TRACE)
    section = static_html.kernels_section(report)
    kernels = view_model.of(report).kernels.head(static_html.TOP_KERNELS)
    cells = re.findall(r'<td class="n" title="([^"]*)">([^<]*)</td>', section)
    shown = [(html.unescape(title), html.unescape(text)) for title, text in cells[::2]]  # kernel, then "launched by"
    # The cell holds the short name (cut to 60 characters, as every name cell of the static tables).
    assert shown == [(name, shorten(short, 60)) for name, short in zip(kernels["name"], kernels["short_name"],
                                                                        strict=True)]
    assert any(len(name) > 200 for name, _ in shown)
    # The table scrolls sideways in its own box, and a name cell never wraps.
    assert '<div class="nbp-scroll"><table>' in section
    rules = css_rules(STYLE)
    assert "overflow-x:auto" in rules[".nbp .nbp-scroll"]
    assert "white-space:normal" not in rules[".nbp td.n,.nbp th.n"]
    assert "text-overflow:ellipsis" in rules[".nbp td.n,.nbp th.n"]


def test_the_explorer_kernel_grid_is_one_line_a_kernel_and_scrolls_sideways() -> None:
    report = shared_report(TRACE)
    e = Explorer(report)
    e.show_tab("Kernels")
    assert e.kernels is not None
    body = e.kernels.body.value
    assert '<div class="nbp-scroll"><div class="nbp-grid pick" role="grid" aria-label="kernels"' in body
    page = e.kernels.page_frame
    titles = [html.unescape(t) for t in re.findall(r'<div class="n c[^"]*" title="([^"]*)" role="gridcell"', body)]
    assert titles[::2] == list(page["name"])
    rules = css_rules(WIDGET_STYLE)
    assert "white-space:nowrap" in rules[".nbp-grid>div>div"]
    assert "white-space" not in rules[".nbp-grid>div>div.n"]
    assert "width:max-content" in rules[".nbp-grid"]
    # Name columns are capped, so one long name cannot push the figures out of reach.
    template = re.search(r"grid-template-columns:([^\"]*)\"", body)
    assert template is not None and "minmax(160px,480px)" in template.group(1)


def test_the_sort_control_and_the_sorted_header_say_the_same_order() -> None:
    e = Explorer(shared_report(TRACE))
    e.show_tab("Kernels")
    table = e.kernels
    assert table is not None
    click_header(table, "calls")
    assert table.descending.description == "descending"
    assert 'role="columnheader" aria-sort="descending"' in table.body.value
    click_header(table, "calls")
    calls = list(table.page_frame["calls"])
    assert calls == sorted(calls)
    assert table.descending.description == "ascending" and table.descending.icon == "sort-amount-asc"
    sorted_header = [label for label, _ in header_cells(table) if label.startswith("calls")]
    assert sorted_header == ["calls ▲"]
    assert re.search(r'data-pick="sort:calls" role="columnheader" aria-sort="ascending"', table.body.value)
    # Rows are ARIA rows of grid cells under one header row.
    assert table.body.value.count('role="row"') == len(table.page_frame) + 1
