"""Repeated use in one kernel: nothing a profiled cell makes outlives it unless kept.

The bench (bench/leak.py) runs 50 cells and measures RSS; this runs 8 and checks the
causes directly, which is robust to allocator noise: every Report, ProfileRun and
torch profiler the user did not keep is freed, no chart figure stays open, and no
temporary trace file is left. RSS is checked too, with a bound that only a real
per-run leak (the trace bytes, a kept profiler) would cross.

In a widget front end each report is an explorer of some thirty widgets, which
ipywidgets keeps, with the Report, until closed: a real kernel, driven as
JupyterLab drives it, re-runs a cell 10 times and must hold as many widgets after
the last run as after the first (bench/leak.py: 30 runs, with RSS).
"""
from __future__ import annotations

import gc
import sys
import weakref

import psutil
import pytest
from IPython.utils.capture import capture_output

import nbprofiler
from conftest import ROOT, SETUP_CELL, TRAIN_CELL, assert_nothing_left, temp_traces

pytestmark = pytest.mark.usefixtures("private_tmp", "one_torch_thread")

RUNS = 8
FAILING = (2, 5)
WIDGET_RUNS = 10
# The cell records weak references to its own run and torch profiler while they are live.
WATCHED_CELL = """
import weakref, nbprofiler
_run = nbprofiler.current_run()
watched.append((weakref.ref(_run), weakref.ref(_run._prof)))
del _run
""" + TRAIN_CELL


def _rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def test_repeated_cells_free_what_they_made(shell) -> None:
    import matplotlib.pyplot as plt

    shell.user_ns["watched"] = []
    reports: list[weakref.ref] = []
    rss: list[int] = []
    for i in range(RUNS):
        failing = i in FAILING  # a failed cell's traceback must not pin its report for good
        body = WATCHED_CELL + ("raise ValueError('boom')\n" if failing else "")
        with capture_output() as captured:
            result = shell.run_cell(f"%%torchprofile\n{body}")
        assert isinstance(result.error_in_exec, ValueError) == failing
        assert any("text/html" in o.data for o in captured.outputs)  # shown in full, charts and all
        del captured, result
        reports.append(weakref.ref(nbprofiler.last()))
        rss.append(_rss())
    assert_nothing_left([shell.user_ns["model"]])
    assert temp_traces() == []
    assert plt.get_fignums() == []
    # nbprofiler.last() keeps the latest report; IPython keeps the latest failure's
    # traceback (sys.last_traceback, for %debug) and with it that cell's frames, until
    # the next failure. Nothing else may stay alive.
    gc.collect()
    alive = [i for i, ref in enumerate(reports) if ref() is not None]
    assert alive == [FAILING[-1], RUNS - 1], f"reports of runs {alive} are still alive"
    watched = shell.user_ns["watched"]
    assert [i for i, (run, _) in enumerate(watched) if run() is not None] == [FAILING[-1]]
    assert [i for i, (_, prof) in enumerate(watched) if prof() is not None] == []
    # 50 runs must grow RSS by < 50 MB after the first: < 1 MB a run. Allocator noise on
    # 7 runs is a few MB, so 3 MB a run is the bound that still fails a per-run leak of
    # the raw trace plus its event table (several MB each on this cell).
    growth = rss[-1] - rss[0]
    assert growth < 3e6 * (RUNS - 1), (f"RSS grew {growth / 1e6:.1f} MB over {RUNS - 1} runs: "
                                       f"{[r // 10**6 for r in rss]}")


def test_a_kept_report_is_kept(shell):
    """The other side of freeing: -o VAR and nbprofiler.last() keep theirs, with the trace."""
    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o kept", TRAIN_CELL)
        shell.run_cell_magic("torchprofile", "-q", TRAIN_CELL)
    kept = shell.user_ns["kept"]
    assert kept is not nbprofiler.last() and kept.raw_trace and len(kept.operators)


def test_rerunning_a_cell_in_a_widget_front_end_keeps_the_widget_count_flat():
    """A real kernel, sent each cell as JupyterLab sends it, shows the explorer; re-running
    the cell clears its output, so the explorer it showed, and its Report, must go."""
    sys.path.insert(0, str(ROOT / "bench"))
    from leak import widget_kernel

    with widget_kernel() as kernel:
        kernel.execute(SETUP_CELL + "torch.set_num_threads(1)", cell_id="setup")
        # A run shows its status line, then the explorer in its place.
        kept_view = kernel.execute(f"%%torchprofile -o kept\n{TRAIN_CELL}", cell_id="keep").widgets[-1]
        counts, views = [], []
        for _ in range(WIDGET_RUNS):
            views.append(kernel.execute(f"%%torchprofile\n{TRAIN_CELL}", cell_id="rerun").widgets[-1])
            counts.append(kernel.widgets_and_rss()[0])
        assert counts == [counts[0]] * WIDGET_RUNS, f"widgets held after each run: {counts}"
        # Only the latest run's explorer is live; the other cell's is untouched.
        assert kernel.open_widgets() >= {kept_view, views[-1]}
        assert not kernel.open_widgets() & set(views[:-1])
        # A report kept in a variable shows a new explorer; the deleted cell's explorer goes.
        (shown_again,) = kernel.execute("kept.show()", cell_id="show", deleted=["rerun"]).widgets
        assert kernel.open_widgets() >= {kept_view, shown_again} and views[-1] not in kernel.open_widgets()
        assert kernel.widgets_and_rss()[0] == counts[-1]  # one explorer in, one out
