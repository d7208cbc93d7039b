"""The ipywidgets explorer, driven through its traitlets and a recording comm, as a front end would."""
from __future__ import annotations

import html
import json
import re

import pytest
import torch
from conftest import front_end
from ipywidgets.widgets.widget import _instances as live_widgets  # Widget.widgets, deprecated in 8
from torch import nn

import nbprofiler
from nbprofiler.render import bundle, frontend, view_model
from nbprofiler.render.live import LiveStatus
from nbprofiler.render.paged_table import PAGE_ROWS
from nbprofiler.render.widget import Explorer
from nbprofiler.report import Report
from nbprofiler.trace.parser import parse_trace

HOSTILE = "<script>alert(1)</script>"
HOSTILE_IMG = "<img src=x onerror=alert(1)>"


def click(button) -> None:
    button.comm.handle_msg({"content": {"data": {"method": "custom", "content": {"event": "click"}}}, "buffers": []})


def names_in(page_html: str) -> list[str]:
    """The operator names drawn in a page of the table, as the browser would show them."""
    return [html.unescape(t) for t in re.findall(r'<div class="n[^"]*" title="([^"]*)"', page_html)]


def body_names(table) -> list[str]:
    return names_in(table.body.value)


def header_cells(table) -> list[tuple[str, str]]:
    """(label, what a click on it sends) of each header cell, in the grid the rows are in."""
    cells = re.findall(r'<div class="h[^"]*" data-pick="([^"]*)"[^>]*>([^<]*)</div>', table.body.value)
    return [(html.unescape(label), pick) for pick, label in cells]


def header_label(table, start: str) -> str:
    return next(label for label, _ in header_cells(table) if label.startswith(start))


_clicks = iter(range(1, 1_000_000))


def grid_click(table, pick: str) -> None:
    """A click on a grid cell as the browser sends it: its data-pick and a counter, into the hidden Text."""
    assert f'data-pick="{pick}"' in table.body.value, pick
    front_end(table.clicks, value=f"{pick} {next(_clicks)}")


def click_header(table, start: str) -> None:
    grid_click(table, next(pick for label, pick in header_cells(table) if label.startswith(start)))


def row_picks(table) -> list[str]:
    """The data-pick of each row on the page, in order."""
    return list(dict.fromkeys(re.findall(r'class="[^"]*\bc\b[^"]*"[^>]*data-pick="(row:[^"]*)"', table.body.value)))


@pytest.fixture(scope="module")
def live_report() -> Report:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
    with nbprofiler.profile(modules=True, stack=True, shapes=True, wait=0, warmup=1, active=2) as run:
        for _ in range(3):
            with torch.profiler.record_function(HOSTILE):
                loss = nn.functional.cross_entropy(model(x), y)
            with torch.profiler.record_function(HOSTILE_IMG):
                opt.zero_grad()
            loss.backward()
            opt.step()
    return run.report


def test_tabs_are_present_and_built_when_opened(live_report, recording):
    e = Explorer(live_report)
    # A with block has no cell source, so no Cell lines tab (a tab shows only with content: test_tabs.py).
    assert e.tab_titles == ("Overview", "Operators", "Hardware", "Memory", "Modules", "Flame graph", "Timeline",
                            "Suggestions", "Export")
    assert e.tabs.titles == e.tab_titles
    # The front end got the widget models, the tab titles among them.
    opened = [d["state"] for kind, d in recording if kind == "comm_open"]
    assert any(s.get("_model_name") == "TabModel" and tuple(s.get("titles", ())) == e.tab_titles for s in opened)
    assert e.operators is None  # built on first view only
    front_end(e.tabs, selected_index=1)
    assert e.operators is not None and len(e.operators.table.page_frame) > 0
    for title in e.tab_titles:
        content = e.show_tab(title)
        assert content.children, title
    every_html = " ".join(w.value for w in _walk(e) if hasattr(w, "value") and isinstance(w.value, str))
    for how in ("One row per operator", "Each nn.Module", "largest expected gain first"):
        assert how in every_html


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_sorting_and_filtering_change_the_rows(live_report, recording):
    e = Explorer(live_report)
    ops = e.operators or (e.show_tab("Operators") and e.operators)
    table = ops.table
    by_self = body_names(table)
    assert by_self == [str(n) for n in table.page_frame["name"]]
    # A click on the "calls" header sorts by calls, largest first; a second click flips the order.
    click_header(table, "calls")
    calls = table.page_frame["calls"].tolist()
    assert calls == sorted(calls, reverse=True) and body_names(table) != by_self
    assert header_label(table, "calls") == "calls ▼"
    click_header(table, "calls")
    assert table.page_frame["calls"].tolist() == sorted(calls)
    # The sort control does the same as the header.
    front_end(table.sort, index=[o[1] for o in table.sort.options].index("host_total_us"))
    totals = table.page_frame["host_total_us"].tolist()
    assert totals == sorted(totals) or totals == sorted(totals, reverse=True)
    # Filtering keeps the matching names, case-insensitively, and says how many.
    front_end(table.filter, value="ATEN::ADDMM")
    assert body_names(table) == ["aten::addmm"] and "of 1 shown" in table.status.value
    front_end(table.filter, value="no such op")
    assert body_names(table) == [] and "No operators match" in table.body.value


def test_the_top_n_slider_sets_the_row_count(live_report, recording):
    e = Explorer(live_report)
    table = e.show_tab("Operators") and e.operators.table
    n = len(table.frame)
    assert len(table.view) == min(n, 100)
    front_end(table.top, value=5)
    assert len(table.view) == 5 and len(body_names(table)) == 5
    # The new page went to the front end as one HTML value.
    updates = [d["state"]["value"] for kind, d in recording if kind == "comm_msg" and "value" in d.get("state", {})]
    assert any(len(names_in(v)) == 5 for v in updates if isinstance(v, str) and "nbp-grid" in v)


def test_host_device_switch_grouping_and_drill_down(live_report, recording):
    e = Explorer(live_report)
    e.show_tab("Operators")
    ops = e.operators
    assert ops.time.disabled and ops.time.value == "host"  # a CPU run has no device time to show
    held = len(live_widgets)
    front_end(ops.group, index=1)  # name + input shape
    assert "input_shapes" in ops.table.frame.columns
    assert any(label.startswith("input shapes") for label, _ in header_cells(ops.table))
    front_end(ops.group, index=0)
    assert len(live_widgets) == held  # a regrouping makes no widget
    addmm = next(v for label, v in ops.pick.options if label.endswith("aten::addmm"))
    front_end(ops.pick, index=[v for _, v in ops.pick.options].index(addmm))
    assert "<h4>aten::addmm</h4>" in ops.details.value
    assert "test_widget.py" in ops.details.value  # called from this file (profiled with Python stacks)


def test_gpu_trace_has_kernels_and_a_device_time_switch(recording):
    """A real V100 trace: the Kernels tab with its chart of time by category and its table, and host/device time."""
    from conftest import front_end, shared_trace

    report = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_4.pt.trace.json.gz"))
    e = Explorer(report)
    assert "Kernels" in e.tab_titles
    shown = [w.value for w in _walk(e.show_tab("Kernels")) if isinstance(getattr(w, "value", None), str)]
    charts = [w.outputs for w in _walk(e.show_tab("Kernels")) if hasattr(w, "outputs")]
    chart = view_model.of(report).chart_bundle("kernels")
    assert charts == [({"output_type": "display_data", "data": chart, "metadata": {}},)]
    assert not any("<img" in v for v in shown)
    totals = e.kernels.page_frame["total_us"].tolist()
    assert totals == sorted(totals, reverse=True) and len(totals) == min(len(report.kernels), PAGE_ROWS)
    assert body_names(e.kernels)[0] == report.kernels["name"].iloc[0]
    e.show_tab("Operators")
    ops = e.operators
    assert not ops.time.disabled and ops.time.value == "device"  # device time leads on a GPU run
    device_order = body_names(ops.table)
    assert device_order[0] == report.operators.sort_values("device_self_us", ascending=False)["name"].iloc[0]
    front_end(ops.time, index=[o[1] for o in ops.time.options].index("host"))
    host_self = ops.table.page_frame["host_self_us"].tolist()
    assert host_self == sorted(host_self, reverse=True) and body_names(ops.table) != device_order
    assert any(label.startswith("host self") for label, _ in header_cells(ops.table))


def test_hostile_names_are_escaped_everywhere(live_report, recording):
    e = Explorer(live_report)
    for title in e.tab_titles:
        e.show_tab(title)
    ops = e.operators
    front_end(ops.table.filter, value="alert")
    assert sorted(body_names(ops.table)) == sorted([HOSTILE, HOSTILE_IMG])
    pick = next(v for label, v in ops.pick.options if HOSTILE in label)  # a text label: shown as typed
    front_end(ops.pick, index=[v for _, v in ops.pick.options].index(pick))
    values = [w.value for w in _walk(e) if isinstance(getattr(w, "value", None), str)]
    values += [d["state"]["value"] for kind, d in recording if isinstance(d.get("state", {}).get("value"), str)]
    for value in values:
        assert "<script>alert" not in value and "<img src=x" not in value
    assert any("&lt;script&gt;alert(1)&lt;/script&gt;" in v for v in values)
    assert not any(getattr(w, "description_allow_html", False) for w in _walk(e))


def synthetic_report(n_ops: int) -> Report:
    """One step with ``n_ops`` distinct operators, each called (i % 7) + 1 times."""
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 10 * n_ops * 8 + 10,
               "pid": 1, "tid": 1}]
    ts = 1
    for i in range(n_ops):
        for _ in range(i % 7 + 1):
            events.append({"ph": "X", "cat": "cpu_op", "name": f"custom::op_{i:05d}", "ts": ts, "dur": 1 + i % 13,
                           "pid": 1, "tid": 1})
            ts += 10
    return Report.from_trace(parse_trace(json.dumps({"traceEvents": events}).encode(), "synthetic"), "synthetic")


def test_five_thousand_operators_stay_paged_and_quick(recording):
    report = synthetic_report(5000)
    assert len(report.operators) == 5000
    e = Explorer(report)
    e.show_tab("Operators")
    table = e.operators.table
    front_end(table.top, value=5000)
    assert len(table.view) == 5000 and len(table.page_frame) == PAGE_ROWS
    assert len(body_names(table)) == PAGE_ROWS
    assert "page 1 of 100" in table.status.value
    # A handful of widgets whatever the size: controls and header cells, never one per row.
    assert sum(1 for _ in _walk(e.operators.box)) < 40
    click(table.next)
    front_end(table.filter, value="op_04")
    assert len(table.view) == 1000 and table.page == 0  # op_04000 ... op_04999
    click_header(table, "calls")
    front_end(table.filter, value="")
    assert table.page == 0 and len(table.page_frame) == PAGE_ROWS
    click(table.next)
    assert table.page == 1 and body_names(table)[0] == str(table.view["name"].iloc[PAGE_ROWS])


def test_the_bundle_carries_explorer_and_static_report(live_report, recording, monkeypatch):
    monkeypatch.setattr(frontend, "widget_frontend", lambda: True)
    data = bundle.mimebundle(live_report)
    assert set(data) == {"text/plain", "text/html", frontend.MIME_TYPE, frontend.WIDGET_MIME}
    model_id = data[frontend.WIDGET_MIME]["model_id"]
    opened = [(d.get("state", {}).get("_model_name"), d) for kind, d in recording if kind == "comm_open"]
    assert any(name == "VBoxModel" for name, _ in opened) and model_id
    assert "<table" in data["text/html"] and data[frontend.MIME_TYPE]["schema"] == "nbprofiler.report/1"
    # Where IPython asks for some types only, the explorer is not built.
    monkeypatch.setattr(frontend, "widget_frontend", lambda: pytest.fail("asked for a widget"))
    assert set(bundle.mimebundle(live_report, include={"text/plain", "text/html"})) == {"text/plain", "text/html"}


class FakeKernel:
    comm_manager = object()

    def __init__(self, allow_stdin: bool) -> None:
        self._allow_stdin = allow_stdin


class FakeShell:
    def __init__(self, kernel) -> None:
        self.kernel = kernel


def test_widget_front_end_detection(monkeypatch):
    import IPython

    assert not frontend.widget_frontend()  # pytest: no kernel
    monkeypatch.setattr(IPython, "get_ipython", lambda: FakeShell(FakeKernel(allow_stdin=True)))
    assert frontend.widget_frontend()
    # nbclient, papermill, nbconvert --execute: no stdin, nobody to click, saved widget state would hide the HTML.
    monkeypatch.setattr(IPython, "get_ipython", lambda: FakeShell(FakeKernel(allow_stdin=False)))
    assert not frontend.widget_frontend()


def test_export_buttons_write_trace_tensorboard_and_html(live_report, recording, tmp_path):
    e = Explorer(live_report)
    e.show_tab("Export")
    x = e.export
    front_end(x.trace_path, value=str(tmp_path / "t.json.gz"))
    front_end(x.tb_dir, value=str(tmp_path / "tb"))
    front_end(x.html_path, value=str(tmp_path / "r.html"))
    for button in (x.save_trace, x.save_tb, x.save_html):
        click(button)
    assert (tmp_path / "t.json.gz").stat().st_size > 0 and (tmp_path / "r.html").stat().st_size > 0
    assert nbprofiler.load(tmp_path / "tb").operators["name"].str.contains("addmm").any()
    assert "Saved the HTML report" in x.status.value
    (tmp_path / "a-file").write_text("")
    front_end(x.html_path, value=str(tmp_path / "a-file" / "sub" / "r.html"))
    click(x.save_html)
    assert "Could not save" in x.status.value


class FakeRun:
    steps_done, current_phase, last_step_s = 4, "warmup", 0.21


def test_live_status_text_in_a_terminal(capsys):
    status = LiveStatus()
    status.update(FakeRun())
    assert status.mode == "terminal"
    assert capsys.readouterr().out == "nbprofiler: step 4 · warmup · 0.21 s/step"
    status.close()
    assert capsys.readouterr().out == "\r\x1b[2K"


class FakeHandle:
    def __init__(self) -> None:
        self.shown: list[object] = []

    def update(self, obj, raw=False) -> None:
        self.shown.append(obj)


def test_live_status_widget_turns_into_the_report(live_report, recording, monkeypatch):
    import IPython.display

    handle = FakeHandle()
    monkeypatch.setattr(frontend, "widget_frontend", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: handle.shown.append(obj) or handle)
    status = LiveStatus()
    status.update(FakeRun())
    assert status.mode == "widget" and "step 4 · warmup · 0.21 s/step" in status._widget.value
    widget = status._widget
    status.close()
    status.show(live_report)
    assert handle.shown[-1] is live_report  # the status output now holds the report
    assert widget.comm is None  # the status widget is closed


class ParentKernel:
    """A kernel whose current request is ``parent`` (its header and metadata)."""

    comm_manager = object()
    _allow_stdin = True

    def __init__(self) -> None:
        self.parent: dict = {}

    def run(self, msg_id: str, cell_id: str | None = None) -> None:
        self.parent = {"header": {"msg_id": msg_id}, "metadata": {"cellId": cell_id} if cell_id else {}}

    def get_parent(self) -> dict:
        return self.parent


def test_explorers_are_closed_when_their_output_is_gone(live_report, recording, monkeypatch):
    """Re-running a cell closes what its last run showed, a cell showing two keeps both, and
    past MAX_LIVE_CELLS cells (front ends that send no cell id: each run) the oldest go."""
    import IPython

    from nbprofiler.render import widget

    kernel = ParentKernel()
    monkeypatch.setattr(IPython, "get_ipython", lambda: FakeShell(kernel))
    monkeypatch.setattr(widget, "_shown", [])

    def show(msg_id: str, cell_id: str | None = None) -> Explorer:
        kernel.run(msg_id, cell_id)
        e = Explorer(live_report)
        widget.shown(e)  # what displaying it does (TabbedView.displayed)
        return e

    first, second = show("run-1", "cell-a"), show("run-1", "cell-a")
    other = show("run-2", "cell-b")
    assert first.comm is not None and second.comm is not None
    again = show("run-3", "cell-a")
    assert first.comm is None and second.comm is None  # cell-a's output was replaced
    assert again.comm is not None and other.comm is not None
    unnamed = [show(f"run-{i}") for i in range(4, 4 + widget.MAX_LIVE_CELLS)]
    assert again.comm is None and other.comm is None  # the two oldest cells
    assert all(e.comm is not None for e in unnamed)
    assert all(w.comm is None for w in _walk(first))  # with its tabs, controls, layouts


def test_kernels_show_short_names_tensor_cores_blocks_per_sm_and_details_on_click(recording):
    """A real V100 trace: every kernel on one line by its short name, the whole name on hover,
    the tensor-core and blocks-per-SM columns of ``report.kernels``, and a row click shows that
    kernel's details with its whole name."""
    from conftest import shared_trace

    report = nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_4.pt.trace.json.gz"))
    e = Explorer(report)
    e.show_tab("Kernels")
    table = e.kernels
    labels = [label for label, _ in header_cells(table)]
    assert any(label.startswith("blocks per SM") for label in labels)
    assert any(label.startswith("tensor cores") for label in labels)
    page = table.page_frame
    longest = max(page["name"], key=len)
    assert len(longest) > 45
    short = page["short_name"][page["name"] == longest].iloc[0]
    assert len(short) < len(longest)
    # The short name is the cell's text, the whole name its hover text.
    at = page.index[list(page["name"]).index(longest)]
    assert f'title="{html.escape(longest)}" role="gridcell" data-pick="row:{at}">{html.escape(short)}</div>' \
        in table.body.value
    # Each row's new figures, as report.kernels has them.
    blocks_at = [c.key for c in table._columns].index("mean_blocks_per_sm")
    for label, row in page.iterrows():
        cells = re.findall(rf'data-pick="row:{label}">([^<]*)</div>', table.body.value)
        assert cells[blocks_at] == f"{row['mean_blocks_per_sm']:.1f}"
        assert cells[blocks_at + 1] == ("yes" if row["tensor_cores"] else "no")
    # A click on the row of the longest name shows that kernel.
    label = page.index[list(page["name"]).index(longest)]
    grid_click(table, f"row:{label}")
    details = e.show_tab("Kernels").children[0].children[-1].value
    assert html.escape(longest) in details and "blocks per SM" in details and "launched mostly by" in details
    assert table.picked == label and 'picked" title' in table.body.value


def test_a_row_click_selects_the_operator_and_shows_its_details(live_report, recording):
    e = Explorer(live_report)
    e.show_tab("Operators")
    ops = e.operators
    names = body_names(ops.table)
    row = row_picks(ops.table)[names.index("aten::addmm")]
    grid_click(ops.table, row)
    label = int(row.split(":")[1])
    assert ops.pick.value == label and ops.table.frame.loc[label, "name"] == "aten::addmm"
    assert "<h4>aten::addmm</h4>" in ops.details.value
    # The same click twice (the counter makes it a change) keeps it selected.
    grid_click(ops.table, row)
    assert ops.pick.value == label
    # Grouped by shape, a click picks that shape group.
    front_end(ops.group, index=1)
    grouped = ops.table.page_frame
    first = row_picks(ops.table)[0]
    grid_click(ops.table, first)
    assert ops.pick.value == grouped.index[0]
    assert f"<h4>{html.escape(str(grouped['name'].iloc[0]))}</h4>" in ops.details.value


def test_grouping_by_shape_shows_the_rows_of_the_grouping(live_report, recording):
    """The top N follows the grouping: a grouping with more rows shows them, and rows past a
    chosen top N are counted, with a button that shows them all."""
    e = Explorer(live_report)
    e.show_tab("Operators")
    ops = e.operators
    by_name = len(ops.table.frame)
    assert len(ops.table.view) == by_name and ops.table.show_all.layout.display == "none"
    front_end(ops.group, index=1)
    by_shape = len(ops.table.frame)
    assert by_name < by_shape <= 100  # the default top N shows every row of both groupings
    assert len(ops.table.view) == by_shape and ops.table.top.value == by_shape
    front_end(ops.table.top, value=5)
    assert len(ops.table.view) == 5
    assert f"{by_shape - 5:,} more hidden by top N" in ops.table.status.value
    assert ops.table.show_all.layout.display == "" and ops.table.show_all.description == f"show all {by_shape}"
    front_end(ops.group, index=0)  # the chosen 5 holds in the other grouping
    assert len(ops.table.view) == 5
    click(ops.table.show_all)
    assert len(ops.table.view) == by_name and "hidden" not in ops.table.status.value


def test_disabled_controls_say_why(live_report, recording):
    e = Explorer(live_report)  # a CPU run: no device time
    e.show_tab("Operators")
    ops = e.operators
    assert ops.time.disabled and "no device activity" in ops.time.tooltip
    assert "no device activity" in ops.why_disabled.value
    assert not ops.group.disabled and "--shapes" not in ops.why_disabled.value  # recorded with shapes
    assert ops.table.prev.disabled and ops.table.prev.tooltip == "already on the first page"
    plain = Explorer(synthetic_report(120))  # a trace without input shapes, three pages at the default top N
    plain.show_tab("Operators")
    group = plain.operators.group
    assert group.disabled and "--shapes" in group.tooltip and "--shapes" in plain.operators.why_disabled.value
    table = plain.operators.table
    assert not table.next.disabled and table.next.tooltip == "the next page"
    click(table.next)
    click(table.next)
    assert table.next.disabled and table.next.tooltip == "already on the last page"


def test_live_status_names_the_phase_outside_the_schedule():
    """Past the schedule the profiler's phase is "none": the status line says profiling is over."""
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with nbprofiler.profile(wait=0, warmup=1, active=1) as run:
        for _ in range(4):
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
        assert run.current_phase == "none"
        line = LiveStatus.text(run)
    assert "none" not in line and "profiled, the cell runs on" in line
