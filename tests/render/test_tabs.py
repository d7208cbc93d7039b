"""A tab shows only where it has content; the flags that would add the others are said once, in the Overview.

One rule (``render/tabs.py``) for the three renderers: the explorer's tabs, the static HTML's sections
and the saved view's tabs (the payload's ``tabs`` and ``more_views``). Real small training runs, with and
without ``--stack``/``--modules``, and a real GPU trace file (which no flag can re-run).
"""
from __future__ import annotations

import html
import re

import pytest
import torch
from conftest import shared_report
from torch import nn

import nbprofiler
from nbprofiler.render import view_model
from nbprofiler.render.payload import report_payload
from nbprofiler.report import Report

V100 = "v100_resnet50_train_num_workers_0"


def _run(**flags: bool) -> Report:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
    with nbprofiler.profile(wait=0, warmup=1, active=2, **flags) as run:
        for _ in range(3):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run.report


@pytest.fixture(scope="module")
def plain() -> Report:
    return _run()


@pytest.fixture(scope="module")
def with_modules() -> Report:
    return _run(modules=True)


def _html_text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def _text(widget) -> str:
    """The text a tab's HTML widgets show."""
    own = html.unescape(_html_text(widget.value)) if isinstance(getattr(widget, "value", None), str) else ""
    return " ".join([own, *(_text(child) for child in getattr(widget, "children", ()))])


def _overview_text(report: Report) -> str:
    return _text(report.explorer().show_tab("Overview"))


def test_a_run_without_stack_or_modules_has_no_tabs_that_only_say_re_run(plain):
    explorer = plain.explorer()
    payload = report_payload(plain)
    assert "Cell lines" not in explorer.tab_titles and "Modules" not in explorer.tab_titles
    # Every renderer shows the same tabs: the saved view reads them from the payload.
    assert list(explorer.tab_titles) == payload["tabs"]
    page = plain.to_html()
    assert "<h4>Cell lines</h4>" not in page and "<h4>Modules</h4>" not in page
    # Said once, in the Overview of each: which flag adds which view.
    line = payload["more_views"]
    assert "with --stack for Cell lines" in line and "with --modules for Modules" in line
    assert _overview_text(plain).count(line) == 1
    assert html.unescape(_html_text(page)).count(line) == 1
    # Every tab shown has content: none says to re-run.
    for title in explorer.tab_titles:
        assert "Run the cell with %%torchprofile" not in _text(explorer.show_tab(title)), title


def test_a_flag_given_fills_its_tab_and_leaves_the_more_views_line(with_modules):
    explorer = with_modules.explorer()
    payload = report_payload(with_modules)
    assert "Modules" in explorer.tab_titles and list(explorer.tab_titles) == payload["tabs"]
    assert "<h4>Modules</h4>" in with_modules.to_html()
    assert "Modules" not in payload["more_views"] and "with --stack for Cell lines" in payload["more_views"]


def test_a_trace_file_names_no_flag_and_shows_its_kernels():
    report = shared_report(V100)
    tabs = {t.name: t for t in view_model.of(report).tabs}
    explorer = report.explorer()
    assert report.lines.empty and "Cell lines" not in explorer.tab_titles
    assert "Kernels" in explorer.tab_titles and list(explorer.tab_titles) == report_payload(report)["tabs"]
    # A trace file is not re-run with flags: no "More views" line anywhere.
    assert not any(t.wanted() for t in tabs.values())
    assert report_payload(report)["more_views"] == "" and "More views" not in report.to_html()
