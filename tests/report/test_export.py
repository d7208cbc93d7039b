"""Exports: each run in a folder of its own that loads back, nothing written over silently, a
download link in the page, and the Export tab's buttons saying why they are disabled."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import TRAIN_CELL, front_end, shared_trace
from IPython.utils.capture import capture_output
from test_saved_report import assert_same_report
from test_widget import click

import nbprofiler
from nbprofiler.render import export_tab
from nbprofiler.render.widget import Explorer
from nbprofiler.report import Report
from nbprofiler.report.export_names import EXPORT_ROOT

# What a trace alone gives back: the tables and figures computed from it. A live run's own
# measurements (its steps, loaders, samples) come back only from the whole report, ``.nbprof``.
TRACE_TABLES = ("trace_steps", "operators", "memory", "memory_by_operator", "communication", "breakdown",
                "kernels", "syncs", "idle")
NOTEBOOK = "work/My Notebook: <v2> é.ipynb"  # as a server names it; nothing a file system would refuse survives

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def assert_same_trace_tables(loaded: Report, report: Report) -> None:
    for name in TRACE_TABLES:
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(report, name), obj=f"report.{name}")
    from_run = {"batches_per_step", "samples_per_step", "samples_per_s"}  # what the DataLoader hooks counted
    assert {k: v for k, v in loaded.summary.items() if k not in from_run} == \
        {k: v for k, v in report.summary.items() if k not in from_run}


def profile_cell(shell, monkeypatch, cell_id: str) -> Report:
    """Run the training cell with %%torchprofile as JupyterLab would: a notebook path and a cell id."""
    monkeypatch.setitem(shell.user_ns, "__session__", NOTEBOOK)
    monkeypatch.setattr(shell, "get_parent", lambda: {"metadata": {"cellId": cell_id}}, raising=False)
    with capture_output():
        shell.run_cell_magic("torchprofile", "-q --wait 0 --warmup 1 --active 2", TRAIN_CELL)
    report = nbprofiler.last()
    assert report is not None and report.run is not None
    assert report.run.notebook == NOTEBOOK and report.run.cell_key == cell_id
    return report


def status_of(tab) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", tab.status.value))


def test_two_runs_exported_with_defaults_land_in_their_own_folders_and_load_back(shell, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    first = profile_cell(shell, monkeypatch, "5f1c2ab7-0d4e-4a8e-9a51-0c1d2e3f4a5b")
    second = profile_cell(shell, monkeypatch, "5f1c2ab7-0d4e-4a8e-9a51-0c1d2e3f4a5b")  # the same cell, run again

    folders = [r.export_tensorboard().parent for r in (first, second)]
    assert folders[0] != folders[1] and {f.parent for f in folders} == {Path(EXPORT_ROOT)}
    for folder, report in zip(folders, (first, second)):
        assert re.fullmatch(r"My_Notebook_v2_cell5f1c2ab7_\d{8}-\d{6}(-\d+)?", folder.name), folder.name
        assert_same_trace_tables(nbprofiler.load(folder), report)
        # The report's other exports go to the same folder; the whole report loads back equal.
        saved = report.save()
        assert saved.parent == folder and saved.name == f"{folder.name}.nbprof"
        assert_same_report(nbprofiler.load(saved), report)
        trace = report.export_chrome_trace()
        assert trace.parent == folder and trace.name == f"{folder.name}.json.gz"
        assert_same_trace_tables(nbprofiler.load(folder), report)  # the Chrome trace beside it changes nothing


def test_a_gpu_trace_file_report_exports_to_a_folder_named_by_its_file_and_loads_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = nbprofiler.load(shared_trace("a100_train"))
    assert len(report.kernels)
    written = report.export_tensorboard()
    assert re.fullmatch(r"a100_train_\d{8}-\d{6}(-\d+)?", written.parent.name)
    loaded = nbprofiler.load(written.parent)
    assert_same_trace_tables(loaded, report)
    assert [s.as_dict() for s in loaded.suggestions] == [s.as_dict() for s in report.suggestions]
    # Exported again: the folder holds a trace, so the second goes to a folder of its own.
    again = report.export_tensorboard()
    assert again.parent == written.parent.with_name(written.parent.name + "-2")
    assert_same_trace_tables(nbprofiler.load(again.parent), report)


@pytest.fixture(scope="module")
def live_report() -> Report:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    with nbprofiler.profile(wait=0, warmup=1, active=2) as run:
        for _ in range(3):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run.report


def test_a_second_save_to_the_same_name_keeps_the_first_and_says_so(live_report, recording, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    e = Explorer(live_report)
    e.show_tab("Export")
    x = e.export
    click(x.save_trace)
    first = tmp_path / x.trace_path.value
    first_bytes = first.read_bytes()
    assert "already existed" not in status_of(x)
    first.write_bytes(b"the user's own edits")
    click(x.save_trace)
    second = first.with_name(first.name.replace(".json.gz", "-2.json.gz"))
    assert first.read_bytes() == b"the user's own edits" and second.read_bytes() == first_bytes
    assert f"{x.trace_path.value} already existed, so this is a new name" in status_of(x)
    assert str(second) in status_of(x)

    click(x.save_tb)
    click(x.save_tb)
    folder = tmp_path / x.tb_dir.value
    assert len(list(folder.glob("*.pt.trace.json"))) == 1
    assert len(list(folder.with_name(folder.name + "-2").glob("*.pt.trace.json"))) == 1
    assert "already held a trace, so this is a new name" in status_of(x)
    assert_same_trace_tables(nbprofiler.load(folder.with_name(folder.name + "-2")), live_report)

    # Replacing is a visible choice, and the status says it replaced.
    front_end(x.replace, value=True)
    click(x.save_trace)
    assert first.read_bytes() == first_bytes and "It replaced what was at" in status_of(x)
    click(x.save_tb)
    assert len(list(folder.glob("*.pt.trace.json"))) == 1 and "It replaced" in status_of(x)
    assert_same_trace_tables(nbprofiler.load(folder), live_report)


def test_the_download_link_carries_the_file_itself(live_report, recording, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    e = Explorer(live_report)
    e.show_tab("Export")
    x = e.export
    for button, field in ((x.save_trace, x.trace_path), (x.save_html, x.html_path), (x.save_report, x.saved_path)):
        click(button)
        path = tmp_path / field.value
        link = re.search(r'<a download="([^"]+)" href="data:([^;"]+);base64,([A-Za-z0-9+/=]+)"', x.status.value)
        assert link, x.status.value
        assert html.unescape(link[1]) == path.name
        assert base64.b64decode(link[3]) == path.read_bytes()
    assert link[2] == "application/zip" and nbprofiler.load(x.saved_path.value).run is not None

    monkeypatch.setattr(export_tab, "DOWNLOAD_CAP_BYTES", 100)
    click(x.save_html)
    assert "<a download" not in x.status.value
    assert "is more than a download link here carries (100 B)" in status_of(x)
    assert str(tmp_path / x.html_path.value.replace(".html", "-2.html")) in status_of(x)


def test_the_status_escapes_a_hostile_path(live_report, recording, tmp_path):
    e = Explorer(live_report)
    e.show_tab("Export")
    x = e.export
    hostile = tmp_path / "<img src=x onerror=alert(1)>" / "r<b>.html"
    front_end(x.html_path, value=str(hostile))
    click(x.save_html)
    assert hostile.is_file()
    assert "<img" not in x.status.value and "<b>" not in x.status.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in x.status.value and 'download="r&lt;b&gt;.html"' in x.status.value
    front_end(x.html_path, value=str(tmp_path / "<img src=y onerror=alert(2)>.html" / "sub" / "r.html"))
    (tmp_path / "<img src=y onerror=alert(2)>.html").write_text("a file, not a folder")
    click(x.save_html)
    assert "Could not save the HTML report" in status_of(x) and "<img" not in x.status.value


def test_a_report_without_a_trace_says_why_its_trace_buttons_are_disabled(recording, tmp_path, monkeypatch):
    import torch

    monkeypatch.chdir(tmp_path)
    with nbprofiler.profile(wait=5, warmup=0, active=1, step_on="manual") as run:
        for _ in range(2):
            torch.ones(8).sum()
            nbprofiler.step()
    report = run.report
    e = Explorer(report)
    e.show_tab("Export")
    x = e.export
    reason = "No trace to save: the run ended before any active step, so no trace was recorded."
    for button in (x.save_trace, x.save_tb):
        assert button.disabled and button.tooltip == reason
    assert "the run ended before any active step" in " ".join(w.value for w in x.box.children
                                                                  if isinstance(getattr(w, "value", None), str))
    with pytest.raises(ValueError, match="no trace to export: the run ended before any active step"):
        report.export_chrome_trace()
    assert not x.save_html.disabled and not x.save_report.disabled
    click(x.save_report)
    assert_same_report(nbprofiler.load(x.saved_path.value), report)


def test_an_explicit_path_is_written_as_given(live_report, tmp_path):
    """The Python API keeps writing where it is told, as it always did."""
    target = tmp_path / "t.json"
    target.write_text("old")
    assert live_report.export_chrome_trace(target) == target and target.read_bytes() == live_report.raw_trace
