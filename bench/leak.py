"""RSS growth over 50 profiled training cells in one IPython shell.

Each cell trains a small conv net for 12 steps under ``%%torchprofile`` (default
schedule) and its report is displayed in full (text, HTML with charts, payload),
as a notebook would. RSS is read after a ``gc.collect()``; growth is measured
from the end of the first run, so one-off costs (imports, the first profiler
start, caches) do not count. Every fifth cell raises, as a real session would.
Target: growth < 50 MB. Exits 1 when the target is missed.

    .venv/bin/python bench/leak.py [RUNS]
"""
from __future__ import annotations

import gc
import shutil
import sys
import tempfile
import time
import weakref
from pathlib import Path

import psutil
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import conv_training_setup  # noqa: E402 - bench/ is on sys.path when run as a script

TARGET_BYTES = 50e6
SETUP = conv_training_setup(384)
CELL = """%%torchprofile
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
FAILING_CELL = CELL + "raise ValueError('a failing cell')\n"


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def main(runs: int = 50) -> int:
    import nbprofiler

    shell = start_ipython()
    private = tempfile.mkdtemp(prefix="nbprofiler-leak-")  # count only this bench's temp trace files
    tempfile.tempdir = private
    shell.run_line_magic("load_ext", "nbprofiler")
    shell.display_formatter.active_types = ["text/plain", "text/html", "application/vnd.nbprofiler.report+json"]
    shell.run_cell(SETUP).raise_error()
    reports: list[weakref.ref] = []
    samples: list[int] = []
    t0 = time.perf_counter()
    for i in range(runs):
        with capture_output():
            shell.run_cell(FAILING_CELL if i % 5 == 4 else CELL)
        reports.append(weakref.ref(nbprofiler.last()))
        samples.append(rss())
        if i == 0 or (i + 1) % 10 == 0:
            print(f"run {i + 1:3d}: RSS {samples[-1] / 1e6:7.1f} MB")
    wall = time.perf_counter() - t0
    growth = samples[-1] - samples[0]
    alive = sum(ref() is not None for ref in reports)
    left = list(Path(private).glob("nbprofiler-*.json"))
    tempfile.tempdir = None
    shutil.rmtree(private, ignore_errors=True)
    print(f"{runs} runs in {wall:.1f} s; RSS growth after the first run: {growth / 1e6:.1f} MB "
          f"(target < {TARGET_BYTES / 1e6:.0f} MB); max over the runs {(max(samples) - samples[0]) / 1e6:.1f} MB")
    print(f"reports still alive: {alive} (nbprofiler.last() and the last failure's traceback keep up to 2)")
    print(f"nbprofiler temp trace files left: {len(left)}")
    return 0 if growth < TARGET_BYTES and alive <= 2 and not left else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
