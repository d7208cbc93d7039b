"""How long a profiled cell waits on the run history while another process holds its write lock.

A real IPython shell with the extension loaded runs a tiny CPU cell under ``%%torchprofile``
(four steps, all profiled; the history in a file of its own). The cell's wall time is taken
``--runs`` times with the history free, then ``--runs`` times while another process holds the
history's write lock (``BEGIN EXCLUSIVE``, held until the bench ends). The wait is the
difference of the medians; each locked run's note says whether it was kept. Target: about
``HISTORY_WAIT_S`` (1 s), where the history's own waits used to add up to 84 s.

Figures only: a busy machine moves them, so nothing here fails on a time.

    .venv/bin/python bench/history_lock.py [--runs 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CELL = "sum(i * i for i in range(20_000))"
LINE = "-q -o run -n 4 --wait 0 --warmup 0 --active 4"
HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cells timed with the history free, then locked")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        history = Path(folder) / "history.sqlite"
        os.environ["NBPROFILER_HISTORY"] = str(history)
        from IPython.testing.globalipapp import start_ipython

        shell = start_ipython()
        shell.run_line_magic("load_ext", "nbprofiler")
        timed_cell(shell)  # warm: imports, the history file made
        free = [timed_cell(shell)[0] for _ in range(args.runs)]
        holder = subprocess.Popen([sys.executable, "-c", HOLD, str(history)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdin is not None
        try:
            assert holder.stdout.readline() == "held\n"
            locked = [timed_cell(shell) for _ in range(args.runs)]
        finally:
            holder.stdin.close()
            holder.wait()
    from nbprofiler.history import store

    print(f"history wait budget: {getattr(store, 'HISTORY_WAIT_S', 'none')} s")
    print(f"cell, history free:   median {statistics.median(free):6.2f} s  ({', '.join(f'{t:.2f}' for t in free)})")
    times = [t for t, _ in locked]
    print(f"cell, history locked: median {statistics.median(times):6.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    print(f"wait on the lock:     {statistics.median(times) - statistics.median(free):6.2f} s")
    for _, note in locked:
        print(f"  {note}")


def timed_cell(shell) -> tuple[float, str]:
    """The profiled cell's wall time, and its run's note from the history (or that it was kept)."""
    start = time.perf_counter()
    shell.run_cell_magic("torchprofile", LINE, CELL)
    took = time.perf_counter() - start
    lost = [note for note in shell.user_ns["run"].notes if "not kept" in note]
    return took, lost[0] if lost else "kept, or lost without a note"


if __name__ == "__main__":
    main()
