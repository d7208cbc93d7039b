"""notebooks/01_quickstart.ipynb runs headless and shows a complete report."""
from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup, Tag
from nbconvert import HTMLExporter

from conftest import cell_outputs, execute_notebook

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quickstart():
    return execute_notebook("01_quickstart.ipynb")


def test_profiled_cell_shows_the_report(quickstart):
    outputs = cell_outputs(quickstart, "%%torchprofile")
    bundles = [o["data"] for o in outputs if "data" in o and "text/plain" in o["data"]]
    report = next(b for b in bundles if "nbprofiler report" in b["text/plain"])
    # 512 samples / batch 32 = 16 optimizer steps, 5 of them profiled.
    assert "16 steps run, 5 profiled" in report["text/plain"]
    assert "aten::convolution" in report["text/html"] or "aten::mkldnn_convolution" in report["text/html"]
    assert report["application/vnd.nbprofiler.report+json"]["schema"] == "nbprofiler.report/1"


def test_report_tables_and_reloaded_trace(quickstart):
    steps_html = cell_outputs(quickstart, "run.steps")[0]["data"]["text/html"]
    assert "warmup" in steps_html and "active" in steps_html
    reloaded = "".join(o.get("text", "") for o in cell_outputs(quickstart, "import nbprofiler"))
    assert "5 profiled steps" in reloaded


# Attributes through which HTML fetches something (a URL in any of them would need the network).
_FETCHING_ATTRS = ("src", "href", "srcset", "data", "action", "formaction", "poster", "background", "xlink:href")
_REMOTE = re.compile(r"^\s*(?:https?:|ftp:|//)", re.I)


@pytest.fixture(scope="module")
def exported_report(quickstart) -> Tag:
    """The output of the profiled cell in the page nbconvert exports (what GitHub and a browser show)."""
    html, _ = HTMLExporter().from_notebook_node(quickstart)
    title = BeautifulSoup(html, "html.parser").find("h3", string=re.compile(r"^nbprofiler report"))
    assert title is not None, "the exported page has no nbprofiler report"
    output = title.find_parent("div", class_="jp-OutputArea-output")
    assert output is not None, "the report's title is in no output area"
    return output


def _section(report: Tag, heading: str) -> list[Tag]:
    """The elements between the ``<h4>`` that starts with ``heading`` and the next ``<h4>``."""
    start = next((h for h in report.find_all("h4") if h.get_text().startswith(heading)), None)
    assert start is not None, f"no {heading!r} section in {[h.get_text() for h in report.find_all('h4')]}"
    out = []
    for el in start.find_next_siblings():
        if el.name == "h4":
            break
        out.append(el)
    return out


def _tags(section: list[Tag], name: str) -> list[Tag]:
    """The section's ``name`` elements, at its top level or nested."""
    return [t for el in section for t in (el, *el.find_all(name)) if t.name == name]


def _charts(section: list[Tag]) -> list[str]:
    """The titles of the section's inline SVG charts."""
    return [str(svg.get("aria-label", "")) for svg in _tags(section, "svg")
            if "nbp-chart" in svg.get_attribute_list("class")]


def test_nbconvert_html_holds_a_complete_report(exported_report):
    report = exported_report
    assert "16 steps run, 5 profiled" in report.h3.get_text()
    # Overview with its breakdown chart, as inline SVG.
    assert _charts(_section(report, "Overview"))[0].startswith("Step time by")
    # The operators table, with the CNN's operators and their times.
    operators = _tags(_section(report, "Top operators"), "table")[0]
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in operators.find_all("tr")[1:]]
    assert len(rows) >= 10 and any(r[0] in ("aten::convolution", "aten::mkldnn_convolution") for r in rows)
    # Memory over the steps, and within the profiled steps.
    memory = _charts(_section(report, "Memory"))
    assert len(memory) == 2 and memory[0].startswith("Memory on ") and memory[1].endswith("during the profiled steps")
    # Suggestions as cards, each with a title.
    cards = [div for div in _tags(_section(report, "Suggestions"), "div") if "card" in div.get("class", [])]
    assert cards and all(card.b and card.b.get_text().strip() for card in cards)


def test_nbconvert_report_needs_no_network(exported_report):
    report = exported_report
    assert not report.find_all(["script", "link", "iframe", "object", "embed"])
    remote = [(el.name, attr, el[attr]) for el in report.find_all(True) for attr in _FETCHING_ATTRS
              if el.has_attr(attr) and _REMOTE.search(str(el[attr]))]
    assert remote == []
    styles = " ".join([s.get_text() for s in report.find_all("style")]
                      + [el["style"] for el in report.find_all(style=True)])
    assert not re.search(r"@import|url\(\s*['\"]?(?:https?:|ftp:|//)", styles, re.I)
    # The charts are inline vector graphics, not images to fetch.
    charts = [svg for svg in report.find_all("svg") if "nbp-chart" in svg.get("class", [])]
    assert len(charts) >= 3 and not report.find_all("img")
