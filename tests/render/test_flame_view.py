"""The flame graph as the views draw it: the static HTML's SVG, the cap, the payload and the explorer's tab."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from conftest import shared_report
from nbprofiler.analysis.flame import FLAME_COLUMNS
from nbprofiler.render import view_model
from nbprofiler.render.flame import FLAME_MIME, SVG_WIDTH, FlameView, capped, flame_svg
from nbprofiler.render.widget import Explorer

HOSTILE = "<img src=x onerror=alert(1)>"


def test_static_html_draws_an_icicle_per_time_with_each_box_named_and_timed_on_hover():
    report = shared_report("a100_alexnet_small")
    html = report.to_html()
    svgs = re.findall(r'<svg class="nbp-chart nbp-flame" data-metric="(\w+)"[^>]*>(.*?)</svg>', html, re.S)
    assert [m for m, _ in svgs] == ["device", "host"]
    device_svg = svgs[0][1]
    assert "<script" not in html
    # The root spans the width; the largest top-level operator's box says its name and device time.
    assert re.search(rf'<rect x="0.00" y="0" width="{SVG_WIDTH - 0.5:.2f}"', device_svg)
    nodes = report.flame
    top = nodes[nodes["depth"] == 1].sort_values("device_us").iloc[-1]
    share = top["device_us"] / nodes.iloc[0]["device_us"]
    assert f"<title>{top['name']}\ndevice " in device_svg
    assert f"({share:.1%} of all)</title>" in device_svg


def test_names_are_text_in_the_svg():
    nodes = pd.DataFrame([[0, -1, 0, "all", "root", 10.0, 0.0], [1, 0, 1, HOSTILE, "operator", 10.0, 0.0]],
                         columns=FLAME_COLUMNS)
    svg = flame_svg(FlameView(nodes, 2, 0, False), "host_us")
    assert HOSTILE not in svg and "&lt;img src=x onerror=alert(1)&gt;" in svg


def paths(nodes: pd.DataFrame) -> list[str]:
    """Each node's path of (kind, name) from the root: what names a box across a cap."""
    out: list[str] = []
    for r in nodes.itertuples(index=False):
        out.append(f"{out[r.parent] if r.parent >= 0 else ''}/{r.kind}:{r.name}")
    return out


def test_the_cap_keeps_the_largest_boxes_and_merges_the_rest_into_other_under_each_parent():
    nodes = shared_report("a100_train").flame
    shown, merged = capped(nodes, 100)
    kept = shown[shown["kind"] != "other"]
    assert len(kept) == 100 and merged == len(nodes) - 100
    others = shown[shown["kind"] == "other"]
    assert len(others) and others["name"].str.match(r"other \([\d,]+ smaller box(es)?\)").all()
    # Each kept box keeps its time, and its children (an "other" among them) hold what its children held.
    old = nodes.assign(path=paths(nodes)).set_index("path")
    new = shown.assign(path=paths(shown))
    for metric in ("host_us", "device_us"):
        assert (new.loc[new["kind"] != "other", metric].to_numpy()
                == old.loc[new.loc[new["kind"] != "other", "path"], metric].to_numpy()).all()
        below_new = shown[shown["parent"] >= 0].groupby("parent")[metric].sum()
        below_old = nodes[nodes["parent"] >= 0].groupby("parent")[metric].sum()
        old_id = old.loc[new["path"].iloc[below_new.index], "id"].to_numpy()
        assert below_new.to_numpy() == pytest.approx(below_old.loc[old_id].to_numpy())


def test_payload_and_explorer_tab_carry_the_capped_tree():
    report = shared_report("a100_alexnet_small")
    payload = report._repr_mimebundle_()["application/vnd.nbprofiler.report+json"]["flame"]
    assert payload["columns"] == FLAME_COLUMNS and payload["merged"] == 0
    assert payload["rows"][0][5] == pytest.approx(report.operators["host_self_us"].sum())
    assert len(payload["rows"]) == len(report.flame)
    tab = Explorer(report).show_tab("Flame graph")
    drawn = tab.children[0].children[1]
    bundle = drawn.outputs[0]["data"]
    assert bundle[FLAME_MIME] == view_model.of(report).flame_payload()
    assert 'class="nbp-chart nbp-flame"' in bundle["text/html"]
