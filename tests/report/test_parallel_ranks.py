"""A distributed run's directory loaded in parallel: the same tables as one file after another,
any ``concurrent.futures`` executor (a thread pool, a Dask cluster), bad rank files named in
the notes, and each rank's whole Report on demand.

The directories are the real 2-rank NCCL trace as ranks 0, 1, 2 of one run (``bench/many_ranks.py``
writes them), rank 1 a straggler whose whole timeline runs 1.5x slower.
"""
from __future__ import annotations

import gzip
import math
import pickle
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import nbprofiler
import nbprofiler.report.load as load_module
from nbprofiler.report.rank_summary import RankSummary

from conftest import ROOT, shared_trace

sys.path.insert(0, str(ROOT / "bench"))
from many_ranks import write_ranks  # the benchmark's own generator

RANKS = 3
STRAGGLER = 1


@pytest.fixture(scope="module")
def ranks_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ranks")
    write_ranks(shared_trace("a100_nccl_distributed"), out, RANKS, STRAGGLER)
    return out


def _load(directory: Path, monkeypatch, cores: int, **kwargs) -> nbprofiler.Report:
    """``load`` as on a machine with ``cores`` usable cores: 1 parses in this process, one file
    after another; more starts the default process pool."""
    monkeypatch.setattr(load_module, "process_cpus", lambda: cores)
    return nbprofiler.load(directory, **kwargs)


@pytest.fixture(scope="module")
def serial(ranks_dir) -> nbprofiler.Report:
    with pytest.MonkeyPatch.context() as mp:
        return _load(ranks_dir, mp, cores=1)


def _same_ranks(a: nbprofiler.Report, b: nbprofiler.Report) -> None:
    """The rank comparison and every rank's tables, equal to the last bit."""
    pd.testing.assert_frame_equal(a.rank_comparison, b.rank_comparison)
    assert sorted(a.ranks) == sorted(b.ranks) == list(range(RANKS))
    for n in a.ranks:
        x, y = a.ranks[n], b.ranks[n]
        pd.testing.assert_frame_equal(x.breakdown, y.breakdown)
        pd.testing.assert_frame_equal(x.communication, y.communication)
        assert x.summary.keys() == y.summary.keys()
        for key, value in x.summary.items():
            other = y.summary[key]
            both_nan = isinstance(value, float) and isinstance(other, float) and math.isnan(value) and math.isnan(other)
            assert both_nan or value == other, key
        assert (x.source_path, x.device, x.meta, x.load_notes) == (y.source_path, y.device, y.meta, y.load_notes)
    assert a.notes == b.notes


def _stragglers(report: nbprofiler.Report) -> dict[int, str]:
    cmp = report.rank_comparison
    return dict(zip(cmp.loc[cmp["straggler"], "rank"], cmp.loc[cmp["straggler"], "reason"]))


def test_the_straggler_is_flagged_with_its_reason(serial):
    flagged = _stragglers(serial)
    assert list(flagged) == [STRAGGLER]
    assert "step time" in flagged[STRAGGLER] and "compute" in flagged[STRAGGLER]
    cmp = serial.rank_comparison.set_index("rank")
    assert cmp.loc[STRAGGLER, "step_us"] == pytest.approx(1.5 * cmp.loc[0, "step_us"], rel=0.02)


def test_a_process_pool_gives_the_same_tables_and_straggler(ranks_dir, serial, monkeypatch):
    parallel = _load(ranks_dir, monkeypatch, cores=3)
    _same_ranks(parallel, serial)
    assert _stragglers(parallel) == _stragglers(serial)
    assert parallel.table.meta.rank == 0 and parallel.source_path == serial.source_path
    pd.testing.assert_frame_equal(parallel.operators, serial.operators)


def test_a_thread_pool_executor(ranks_dir, serial):
    with ThreadPoolExecutor(max_workers=2) as pool:
        _same_ranks(nbprofiler.load(ranks_dir, executor=pool), serial)


def test_a_dask_cluster_executor(ranks_dir, serial):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        report = nbprofiler.load(ranks_dir, executor=client.get_executor())
    _same_ranks(report, serial)
    assert _stragglers(report) == {STRAGGLER: _stragglers(serial)[STRAGGLER]}


def test_the_default_pool_has_a_worker_per_core_and_no_more_than_files(ranks_dir, monkeypatch):
    sizes = []

    class Recording(ThreadPoolExecutor):
        def __init__(self, max_workers: int) -> None:
            sizes.append(max_workers)
            super().__init__(max_workers)

    monkeypatch.setattr(load_module, "ProcessPoolExecutor", Recording)
    for cores in (16, 2, 1):
        _load(ranks_dir, monkeypatch, cores)
    assert sizes == [RANKS, 2]  # one core: the files are parsed here, one after another
    # In a daemon process (a multiprocessing or Dask worker calling load), which may not start processes.
    monkeypatch.setattr(load_module.multiprocessing, "current_process", lambda: SimpleNamespace(daemon=True))
    assert sorted(_load(ranks_dir, monkeypatch, 16).ranks) == list(range(RANKS)) and sizes == [RANKS, 2]


def test_only_the_summaries_are_kept_per_rank(serial, ranks_dir):
    """Memory grows with ranks x tables: a rank's summary is a few kB against MBs of trace."""
    trace_bytes = (ranks_dir / "rank1.1700000000000000000.pt.trace.json").stat().st_size
    for rank in serial.ranks.values():
        assert isinstance(rank, RankSummary)
        assert len(pickle.dumps(rank)) < trace_bytes / 100
    summary = serial.ranks[1]
    changed = summary.breakdown
    changed.loc[:, "total"] = -1.0  # the user's copy, never the summary
    assert (summary.breakdown["total"] > 0).all()
    with pytest.raises(AttributeError):
        summary.rank = 5  # type: ignore[misc]


def test_each_rank_file_is_parsed_once(ranks_dir, serial, monkeypatch):
    """The lowest rank is the report itself: its events come back from where it was parsed,
    rather than be parsed a second time (a large trace takes seconds to parse)."""
    parsed = []
    real = load_module.parse_file
    monkeypatch.setattr(load_module, "parse_file", lambda path: parsed.append(Path(path).name) or real(path))
    report = _load(ranks_dir, monkeypatch, cores=1)
    assert sorted(parsed) == sorted(p.name for p in ranks_dir.iterdir())
    assert report.table.meta.rank == 0 and not report.table.kind.flags.writeable
    pd.testing.assert_frame_equal(report.operators, serial.operators)


def test_rank_gives_the_whole_report_of_that_file(serial, ranks_dir):
    assert serial.rank(0) is serial
    path = Path(serial.ranks[2].source_path)
    alone = nbprofiler.load(path)
    whole = serial.rank(2)
    assert whole is serial.rank(2)  # parsed once
    assert whole.source_path == str(path) and whole.table.meta.rank == 2
    for table in ("operators", "kernels", "breakdown", "communication", "memory"):
        pd.testing.assert_frame_equal(getattr(whole, table), getattr(alone, table))
    assert whole.notes == alone.notes
    with pytest.raises(ValueError, match=r"^no rank 7 in this report: it holds ranks 0, 1, 2$"):
        serial.rank(7)
    with pytest.raises(ValueError, match="it holds one trace, not several ranks"):
        alone.rank(1)


def test_broken_rank_files_are_named_and_the_others_load(ranks_dir, tmp_path, monkeypatch):
    d = tmp_path / "broken"
    shutil.copytree(ranks_dir, d)
    good = (d / "rank2.1700000000000000000.pt.trace.json").read_bytes()
    (d / "rank2.1700000000000000000.pt.trace.json").write_bytes(good[: len(good) // 2])  # cut short
    (d / "rank5.1700000000000000000.pt.trace.json.gz").write_bytes(gzip.compress(good)[:5000])  # truncated gzip
    for cores in (1, 3):
        report = _load(d, monkeypatch, cores)
        assert sorted(report.ranks) == [0, 1]
        (note,) = [n for n in report.notes if "could not be read" in n]
        assert note.startswith(f"{d}: skipped 2 file(s) that could not be read (rank2.1700000000000000000.pt"
                               ".trace.json: ") and "rank5.1700000000000000000.pt.trace.json.gz: " in note
        assert note.endswith("loaded the other 2 file(s).") and "\n" not in note
        assert list(_stragglers(report)) == [STRAGGLER]


def test_a_directory_of_broken_files_raises_the_first_ones_error(tmp_path):
    (tmp_path / "rank0.1.pt.trace.json").write_text('{"traceEvents": [')
    (tmp_path / "rank1.1.pt.trace.json").write_text("not json")
    with pytest.raises(nbprofiler.TraceError) as info:
        nbprofiler.load(tmp_path)
    with pytest.raises(nbprofiler.TraceError) as alone:
        nbprofiler.load(tmp_path / "rank0.1.pt.trace.json")
    assert str(info.value) == str(alone.value)


def test_a_saved_distributed_report_reopens_its_ranks_without_their_files(serial, ranks_dir, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(ranks_dir, d)
    report = nbprofiler.load(d)
    saved = report.save(tmp_path / "ranks.nbprof")
    shutil.rmtree(d)  # the traces are in the archive now
    loaded = nbprofiler.load(saved)
    pd.testing.assert_frame_equal(loaded.rank_comparison, serial.rank_comparison)
    whole = loaded.rank(2)
    assert whole.source_path == str(d / "rank2.1700000000000000000.pt.trace.json")
    pd.testing.assert_frame_equal(whole.operators, serial.rank(2).operators)
    assert loaded.save(tmp_path / "again.nbprof").is_file()  # saved again, its ranks from its archive
    pd.testing.assert_frame_equal(nbprofiler.load(tmp_path / "again.nbprof").rank_comparison, serial.rank_comparison)


def test_ctrl_c_during_a_parallel_load_drops_the_files_not_started(ranks_dir, monkeypatch):
    """A Ctrl-C while the workers parse reaches the user at once: the pool is shut down without
    waiting, its files not yet started cancelled, instead of parsing every rank to the end."""
    shutdowns = []

    class Interrupted(ThreadPoolExecutor):
        def map(self, fn, *iterables, **kwargs):
            super().map(fn, *iterables, **kwargs)  # the files are handed to the workers...
            raise KeyboardInterrupt  # ...and the user presses Ctrl-C while they run

        def shutdown(self, wait=True, *, cancel_futures=False):
            shutdowns.append((wait, cancel_futures))
            super().shutdown(wait=wait, cancel_futures=cancel_futures)

    monkeypatch.setattr(load_module, "ProcessPoolExecutor", lambda max_workers: Interrupted(max_workers))
    with pytest.raises(KeyboardInterrupt):
        _load(ranks_dir, monkeypatch, cores=2)
    assert shutdowns == [(False, True)]
