"""Report.save and nbprofiler.load(".nbprof"): a report comes back equal in every table.

A live run's report is built from its trace and what the run measured besides it
(steps, loaders, cell lines, notes); the saved file must keep both, or the loaded
report's steps, suggestions and line view would quietly differ from the original.
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import json
import textwrap
import time
import zipfile

import numpy as np
import pandas as pd
import pytest
from conftest import shared_trace
from IPython.utils.capture import capture_output

import nbprofiler

TABLES = ("steps", "trace_steps", "operators", "lines", "modules", "phases", "memory", "memory_steps",
          "memory_by_operator", "memory_growth", "communication", "rank_comparison", "stretched_steps",
          "breakdown", "kernels", "syncs", "idle")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def assert_same_report(loaded: nbprofiler.Report, saved: nbprofiler.Report) -> None:
    """Everything a user reads off a report: every table, the summary, suggestions, notes, title."""
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(saved, name), obj=f"report.{name}")
    assert loaded.summary == saved.summary
    assert [s.as_dict() for s in loaded.suggestions] == [s.as_dict() for s in saved.suggestions]
    assert loaded.notes == saved.notes
    assert repr(loaded) == repr(saved)


class SlowDataset:
    """A map-style dataset that takes 3 ms per sample, so the loop waits on its DataLoader."""

    def __init__(self, n: int) -> None:
        import torch

        torch.manual_seed(0)
        self.x, self.y = torch.randn(n, 20), torch.randint(0, 4, (n,))

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        time.sleep(0.003)
        return self.x[i], self.y[i]


@pytest.fixture(scope="module")
def live_report(tmp_path_factory) -> nbprofiler.Report:
    """A small real CPU training loop over a slow DataLoader, profiled with modules; its
    --trace copy cannot be written (its folder is a file), which the run notes."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # 8 batches, 24 ms of loading each; a map-style dataset by its __getitem__ and __len__, as DataLoader reads it
    loader: DataLoader = DataLoader(SlowDataset(64), batch_size=8)  # type: ignore[arg-type]
    not_a_folder = tmp_path_factory.mktemp("out") / "file"
    not_a_folder.write_text("")
    with nbprofiler.profile(stack=False, modules=True, wait=1, warmup=1, active=3,
                            trace=str(not_a_folder / "trace.json")) as run:
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run.report


def test_a_live_run_comes_back_equal_in_every_table(live_report, tmp_path):
    report = live_report
    # What the run measured besides the trace is all in play: the sampler's columns, the
    # loader behind the DataLoader suggestion, the modules.
    assert {"batches", "samples", "rss_bytes"} <= set(report.steps.columns) and report.steps["samples"].sum() == 64
    assert report.run.loaders and "dataloader" in {s.kind for s in report.suggestions}
    assert len(report.modules) and len(report.memory_steps) == len(report.steps)
    assert any(n.startswith("--trace ") for n in report.notes)

    path = report.save(tmp_path / "run1.nbprof")
    assert path == tmp_path / "run1.nbprof" and not list(tmp_path.glob("*.partial"))
    loaded = nbprofiler.load(path)
    assert loaded.run is not None and loaded is not report
    assert_same_report(loaded, report)
    assert report.steps.dtypes.to_dict() == loaded.steps.dtypes.to_dict()


def test_every_field_of_the_run_record_comes_back(live_report, tmp_path):
    """Field by field, so a field added to RunRecord and not saved fails here."""
    loaded = nbprofiler.load(live_report.save(tmp_path / "run.nbprof")).run
    for f in dataclasses.fields(loaded):
        before, after = getattr(live_report.run, f.name), getattr(loaded, f.name)
        if isinstance(before, pd.DataFrame):
            pd.testing.assert_frame_equal(after, before)
        else:
            assert after == before, f.name
    assert loaded.cpu_count == live_report.run.cpu_count and loaded.loaders[0].wait_ms > 0
    assert loaded.intra_op_threads == live_report.run.intra_op_threads >= 1


def test_the_archive_holds_the_trace_as_recorded_and_a_json_document(live_report, tmp_path):
    path = live_report.save(tmp_path / "run.nbprof")
    with zipfile.ZipFile(path) as zf:
        assert zf.read("trace.json") == live_report.raw_trace  # unzipped, it opens in Perfetto
        doc = json.loads(zf.read("nbprofiler.json"))
    assert (doc["format"], doc["version"], doc["nbprofiler"]) == ("nbprofiler.report", 1, nbprofiler.__version__)
    assert doc["report"]["run"]["options"]["modules"] is True
    out = nbprofiler.load(path).export_chrome_trace(tmp_path / "again.json")
    assert out.read_bytes() == live_report.raw_trace


def test_the_cell_line_view_comes_back(ip, tmp_path):
    """--stack in a real IPython cell: ``lines`` needs the line marks and the cell's source."""
    ip.run_cell("import torch\nbig = torch.randn(256, 256)\nsmall = torch.randn(8, 8)").raise_error()
    cell = textwrap.dedent("""
        a = small + 1
        c = big @ big @ big
        d = small.relu()
    """).strip("\n")
    with capture_output():
        ip.run_cell_magic("torchprofile", "--stack --wait 0 --warmup 0 --active 3 -n 3 -q -o stack_run", cell)
    report = ip.user_ns["stack_run"]
    assert report.lines["line"].iloc[0] == 2 and report.run.line_marks is not None

    loaded = nbprofiler.load(report.save(tmp_path / "stack.nbprof"))
    assert_same_report(loaded, report)
    assert loaded.lines["source"].iloc[0] == "c = big @ big @ big"
    np.testing.assert_array_equal(loaded.run.line_marks.times_ns, report.run.line_marks.times_ns)


def test_a_run_that_recorded_no_trace_comes_back_with_its_steps(tmp_path):
    import torch

    with nbprofiler.profile(wait=5, warmup=0, active=1, step_on="manual") as run:
        for _ in range(2):
            torch.ones(8).sum()
            nbprofiler.step()
    report = run.report
    assert report.raw_trace is None and not report.has_trace
    loaded = nbprofiler.load(report.save(tmp_path / "short.nbprof"))
    assert not loaded.has_trace and any("no step was profiled" in n for n in loaded.notes)
    assert_same_report(loaded, report)


def test_a_trace_file_report_comes_back(tmp_path):
    source = shared_trace("v100_resnet50_train_num_workers_0")
    report = nbprofiler.load(source)
    loaded = nbprofiler.load(report.save(tmp_path / "v100.nbprof"))
    assert loaded.run is None and loaded.source_path == str(source)
    assert "dataloader" in {s.kind for s in loaded.suggestions} and len(loaded.kernels)
    assert_same_report(loaded, report)
    assert loaded.export_chrome_trace(tmp_path / "t.json").read_bytes() == gzip.decompress(source.read_bytes())


def test_a_distributed_load_comes_back_with_its_ranks_and_notes(tmp_path):
    d = tmp_path / "ranks"
    d.mkdir()
    for name, shared in {"rank0.100": "a100_nccl_distributed", "rank0.200": "a100_nccl_distributed",
                         "rank3.200": "a100_train"}.items():
        (d / f"{name}.pt.trace.json.gz").write_bytes(shared_trace(shared).read_bytes())
    report = nbprofiler.load(d)
    path = report.save(tmp_path / "ddp.nbprof")
    with zipfile.ZipFile(path) as zf:  # rank 0 is the report itself: its trace is stored once
        assert sorted(zf.namelist()) == ["nbprofiler.json", "ranks/3/trace.json", "trace.json"]
    loaded = nbprofiler.load(path)
    assert sorted(loaded.ranks) == [0, 3] and any("profiling cycles" in n for n in loaded.notes)
    assert_same_report(loaded, report)
    for rank in (0, 3):
        assert loaded.ranks[rank].source_path == report.ranks[rank].source_path
        pd.testing.assert_frame_equal(loaded.ranks[rank].breakdown, report.ranks[rank].breakdown)


# -- files that are not (whole) saved reports: one line naming the file ------------------------------

def _load_error(path, match: str) -> str:
    with pytest.raises(nbprofiler.TraceError, match=match) as info:
        nbprofiler.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


@pytest.fixture(scope="module")
def saved_bytes(tmp_path_factory) -> bytes:
    """A small trace file's report, saved."""
    path = tmp_path_factory.mktemp("saved") / "cpu.nbprof"
    nbprofiler.load(shared_trace("cpu_only")).save(path)
    return path.read_bytes()


def test_a_truncated_file(tmp_path, saved_bytes):
    (tmp_path / "t.nbprof").write_bytes(saved_bytes[: len(saved_bytes) // 2])
    _load_error(tmp_path / "t.nbprof", "truncated or corrupt")


def test_a_corrupt_file(tmp_path, saved_bytes):
    start = saved_bytes.index(b"trace.json") + 100  # inside the trace's compressed data
    damaged = saved_bytes[:start] + bytes(b ^ 0xFF for b in saved_bytes[start:start + 64]) + saved_bytes[start + 64:]
    (tmp_path / "c.nbprof").write_bytes(damaged)
    _load_error(tmp_path / "c.nbprof", "truncated or corrupt")


def test_foreign_files_with_the_extension(tmp_path):
    (tmp_path / "text.nbprof").write_text("hello, world")
    _load_error(tmp_path / "text.nbprof", "not a report saved by nbprofiler")
    with zipfile.ZipFile(tmp_path / "other.nbprof", "w") as zf:
        zf.writestr("readme.txt", "some other archive")
    _load_error(tmp_path / "other.nbprof", "a zip archive, but not a report saved by nbprofiler")
    with zipfile.ZipFile(tmp_path / "json.nbprof", "w") as zf:
        zf.writestr("nbprofiler.json", '{"hello": "world"}')
    _load_error(tmp_path / "json.nbprof", "not an nbprofiler report")


def _rewritten(tmp_path, saved_bytes, change) -> str:
    """The saved report with its document changed by ``change``."""
    (tmp_path / "orig.nbprof").write_bytes(saved_bytes)
    path = tmp_path / "changed.nbprof"
    with zipfile.ZipFile(tmp_path / "orig.nbprof") as src, zipfile.ZipFile(path, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "nbprofiler.json":
                doc = json.loads(data)
                change(doc)
                data = json.dumps(doc).encode()
            dst.writestr(name, data)
    return path


def test_a_file_from_a_newer_format_version(tmp_path, saved_bytes):
    path = _rewritten(tmp_path, saved_bytes, lambda doc: doc.update(version=2, nbprofiler="9.0.0"))
    _load_error(path, r"saved by a newer nbprofiler \(9.0.0, format version 2\); this one reads up to version 1: "
                      "upgrade nbprofiler")


def test_a_document_missing_a_field(tmp_path, saved_bytes):
    path = _rewritten(tmp_path, saved_bytes, lambda doc: doc["report"].pop("load_notes"))
    _load_error(path, "a malformed saved report")


def test_the_trace_size_limit_holds_inside(tmp_path, saved_bytes, monkeypatch):
    (tmp_path / "big.nbprof").write_bytes(saved_bytes)
    monkeypatch.setenv("NBPROFILER_MAX_TRACE_BYTES", "1000")
    _load_error(tmp_path / "big.nbprof", "limit; profile fewer steps")


def test_line_marks_must_be_plain_integers_never_pickles(tmp_path, live_report):
    """A file from someone else cannot make load unpickle: an object array is refused."""
    path = tmp_path / "marks.nbprof"
    with zipfile.ZipFile(path, "w") as zf:
        buffer = io.BytesIO()
        np.save(buffer, np.array([object()], dtype=object), allow_pickle=True)
        zf.writestr("lines/times_ns.npy", buffer.getvalue())
        zf.writestr("lines/lines.npy", buffer.getvalue())
        run = json.loads(zipfile.ZipFile(live_report.save(tmp_path / "live.nbprof")).read("nbprofiler.json"))
        run["report"]["run"]["line_marks"] = {"times_ns": "lines/times_ns.npy", "lines": "lines/lines.npy"}
        run["report"]["trace"] = None
        zf.writestr("nbprofiler.json", json.dumps(run))
    _load_error(path, "a malformed saved report .*is not one int64 value per line mark")


def test_a_trace_file_report_whose_file_is_gone_is_not_saved_half(tmp_path):
    source = tmp_path / "cpu.pt.trace.json.gz"
    source.write_bytes(shared_trace("cpu_only").read_bytes())
    report = nbprofiler.load(source)
    source.unlink()
    with pytest.raises(nbprofiler.TraceError, match="trace file is gone"):
        report.save(tmp_path / "cpu.nbprof")
    assert not list(tmp_path.iterdir())


def test_save_wants_the_extension_load_knows(tmp_path):
    with pytest.raises(ValueError, match=r"must end in \.nbprof"):
        nbprofiler.load(shared_trace("cpu_only")).save(tmp_path / "run.zip")
    assert not list(tmp_path.iterdir())
