"""A Report says where it came from in one place, ``report.origin``, and what that origin gives
(the cell, the sampler's steps, the options) through its accessors, whichever way it was made."""
from __future__ import annotations

import sys

import pandas as pd
import pytest

import nbprofiler
from nbprofiler.report.origin import Kind

from conftest import ROOT, shared_trace

sys.path.insert(0, str(ROOT / "bench"))
from many_ranks import write_ranks  # the benchmark's own generator

SAVED_RUN = ROOT / "tests" / "data" / "golden" / "loader_training.nbprof"


@pytest.fixture
def saved() -> nbprofiler.Report:
    return nbprofiler.load(SAVED_RUN)


def test_a_live_run_is_its_own_and_knows_its_cell(saved):
    live = nbprofiler.Report.from_live(None, saved.run, saved.raw_trace)
    assert live.origin.kind is Kind.LIVE and live.made_here and not live.source_is_local
    assert live.ran_live and live.cell_source == saved.run.cell_source and "for " in live.cell_source
    pd.testing.assert_frame_equal(live.sampled_steps, saved.run.steps)
    assert live.run_options == saved.run.options
    assert live.loaders == saved.run.loaders and len(live.loaders) == 1
    assert live.cell_modules == ("model",) and live.cell_filename == saved.run.cell_filename
    assert live.cell_key == saved.run.cell_key and live.cell_key.startswith("source:")


def test_a_saved_run_keeps_its_run_but_is_not_made_here(saved):
    assert saved.origin.kind is Kind.SAVED_FILE and not saved.made_here and not saved.source_is_local
    assert saved.ran_live and saved.cell_source == saved.run.cell_source


def test_a_trace_file_has_no_run_to_read():
    report = nbprofiler.load(shared_trace("a100_alexnet_small"))
    assert report.origin.kind is Kind.TRACE_FILE and report.source_is_local and not report.made_here
    assert not report.ran_live
    assert (report.cell_source, report.sampled_steps, report.line_marks, report.run_options) == (None,) * 4
    assert (report.loaders, report.cell_modules, report.cell_filename, report.cell_key, report.notebook) == (None,) * 5
    assert report.origin.source_path == report.source_path == str(shared_trace("a100_alexnet_small"))


def test_a_folder_of_ranks_and_each_rank(tmp_path):
    write_ranks(shared_trace("a100_nccl_distributed"), tmp_path, 2, None)
    report = nbprofiler.load(tmp_path)
    assert report.origin.kind is Kind.RANKS and report.source_is_local
    assert report.rank(1).origin.kind is Kind.TRACE_FILE
    reopened = nbprofiler.load(report.save(tmp_path / "ranks.nbprof"))
    assert reopened.origin.kind is Kind.SAVED_FILE and reopened.rank(1).origin.kind is Kind.SAVED_FILE


def test_a_stored_run_is_its_history_row(saved, tmp_path, monkeypatch):
    monkeypatch.setenv("NBPROFILER_HISTORY", str(tmp_path / "history.sqlite"))
    run_id = nbprofiler.history.keep(saved, cell="cell-1", notebook=None)
    stored = nbprofiler.stored_run(run_id)
    assert stored.origin.kind is Kind.STORED_RUN and "summary" in stored.stored
    assert stored.ran_live and not stored.made_here and stored.raw_trace is None
    assert stored.cell_source == saved.cell_source
