"""How long the user waits for the report once the training loop has ended.

1. Small CNN (``workload.conv_training_setup``, 12 batches, the default schedule:
   3 active steps), in ONE real ipykernel driven as JupyterLab drives it
   (``leak.Kernel``: every request allows stdin, so the report is shown as the
   explorer widget, with the static HTML, the text and the saved data in the
   same output). The cell takes ``time.perf_counter()`` right after its loop; a
   ``post_run_cell`` hook, which IPython calls once the cell, and so the magic
   with everything it displays, has finished, takes it again. The difference is
   the wait. The same loop under a hand-written ``torch.profiler.profile`` (same
   schedule, memory on) that prints a ``key_averages()`` table is measured the
   same way. The two cells alternate; the median of ``--runs`` of each is printed,
   with their ratio. Target: <= 0.3 s for the magic.
2. A trace of ``--events`` events (``analysis_speed.synthetic_trace``, as
   ``big_trace.py``), loaded with ``nbprofiler.load`` in the same kernel (not
   timed), then shown as a cell's value: the time from the start of that cell to
   its ``post_run_cell`` is the time to the complete bundle (text, HTML, the
   saved data with its timeline, the explorer). A fresh load for each of
   ``--big-runs`` runs (nothing cached); the median is printed. Target: <= 1 s.

3. ``--browser N``: the time from the loop's end to the report PAINTED in a real JupyterLab page
   in headless Chromium (``bench/report_paint.mjs``, with the browser tests' JupyterLab and
   browser): the small CNN's ``%%torchprofile`` cell, drawn as the explorer, against the
   hand-written profiler's printed table, alternating, N runs of each after one warm-up. Both
   ends are read from the page's clock (see the script). Target: <= 0.3 s for the magic.

``--profile N`` then runs the magic's cell once more with ``cProfile`` on from
the end of the loop to the ``post_run_cell`` hook, and prints its N costliest
functions by cumulative time.

Figures only: a busy machine moves them, so nothing here fails on a time.

    .venv/bin/python bench/report_latency.py [--runs 5] [--events 1000000] [--big-runs 3] [--profile 40]
                                             [--browser 5]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis_speed import synthetic_trace
from leak import Kernel, widget_kernel
from workload import conv_training_setup

from nbprofiler.render.frontend import MIME_TYPE, WIDGET_MIME

ROOT = Path(__file__).resolve().parents[1]
SMALL_TARGET_S = 0.3
BIG_TARGET_S = 1.0

# In the kernel: each cell that set ``_t0`` gets its wait appended to ``_waits`` by the
# post_run_cell hook, and the time to the last output it sent (a display or its value) to
# ``_shown``; ``_pr`` (a cProfile.Profile) is stopped there when a cell started it.
SETUP = conv_training_setup(384) + """
import time
_t0 = _pr = _sent = None
_waits, _shown = [], []

def _cell_done(result):
    global _t0, _pr, _sent
    if _t0 is not None:
        _waits.append(time.perf_counter() - _t0)
        _shown.append(_sent - _t0 if _sent is not None else float("nan"))
        _t0 = _sent = None
    if _pr is not None:
        _pr.disable()

def _after(send):
    def sent(*args, **kwargs):
        global _sent
        out = send(*args, **kwargs)
        if _t0 is not None:
            _sent = time.perf_counter()
        return out
    return sent

_shell = get_ipython()
_shell.display_pub.publish = _after(_shell.display_pub.publish)
_shell.displayhook.finish_displayhook = _after(_shell.displayhook.finish_displayhook)
_shell.events.register("post_run_cell", _cell_done)
"""
LOOP = """for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
MAGIC = "%%torchprofile -o run\n" + LOOP + "_t0 = time.perf_counter()\n"
HAND = """import torch.profiler as tp
with tp.profile(activities=[tp.ProfilerActivity.CPU], profile_memory=True,
                schedule=tp.schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        prof.step()
    _t0 = time.perf_counter()
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
"""
PROFILED = MAGIC + "import cProfile; _pr = cProfile.Profile(); _pr.enable()\n"


def last_wait(kernel: Kernel) -> tuple[float, float]:
    """For the cell the kernel ran last: (the time to its last output sent, the time to post_run_cell)."""
    reply = kernel.client.execute_interactive("", user_expressions={"w": "_shown[-1], _waits[-1]"}, timeout=60,
                                              output_hook=lambda msg: None)
    shown, wait = reply["content"]["user_expressions"]["w"]["data"]["text/plain"].strip("()").split(",")
    return float(shown), float(wait)


def small_cnn(kernel: Kernel, runs: int) -> tuple[list[float], list[float], list[float]]:
    """(magic's waits, hand-written profiler's waits, the magic's times to its report shown),
    interleaved, after one warm-up run of each."""
    magic: list[float] = []
    hand: list[float] = []
    shown_at: list[float] = []
    for i in range(runs + 1):
        for cell, waits in ((MAGIC, magic), (HAND, hand)):
            shown = kernel.execute(cell, cell_id="magic" if cell is MAGIC else "hand")
            if cell is MAGIC:
                assert shown.widgets, "the report was not shown as the explorer: is ipywidgets installed?"
            if i:  # the first run of each imports and warms up
                sent, wait = last_wait(kernel)
                waits.append(wait)
                if cell is MAGIC:
                    shown_at.append(sent)
    return magic, hand, shown_at


def big_report(kernel: Kernel, events: int, runs: int
               ) -> tuple[list[float], list[float], list[float], list[str], list[int]]:
    """(load times, waits for the complete bundle to post_run_cell, times to the bundle sent, the
    bundle's types, the bytes its output takes in a saved notebook) of a ``events``-event trace."""
    tmp = Path(tempfile.mkdtemp(prefix="nbprofiler-latency-"))
    loads: list[float] = []
    waits: list[float] = []
    kinds: list[str] = []
    shown_at: list[float] = []
    saved_bytes: list[int] = []
    try:
        path = tmp / "big.pt.trace.json"
        count = synthetic_trace(path, events)
        print(f"{count:,} events, {path.stat().st_size / 1e6:.0f} MB of JSON", flush=True)
        for _ in range(runs):
            t = time.perf_counter()
            kernel.execute(f"import nbprofiler\n_big = nbprofiler.load({str(path)!r})", timeout=600)
            loads.append(time.perf_counter() - t)
            weights: list[int] = []
            kinds = shown_types(kernel, "_t0 = time.perf_counter()\n_big", weights)
            saved_bytes.append(sum(weights))
            sent, wait = last_wait(kernel)
            shown_at.append(sent)
            waits.append(wait)
            kernel.execute("del _big")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return loads, waits, shown_at, kinds, saved_bytes


def shown_types(kernel: Kernel, code: str, weights: list[int] | None = None) -> list[str]:
    """The mime types of what ``code``'s cell showed (its value included); ``weights`` gets the
    bytes its outputs take in a saved notebook (their data as JSON)."""
    kinds: list[str] = []

    def keep(msg: dict[str, Any]) -> None:
        if msg["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            kinds.extend(msg["content"]["data"])
            if weights is not None:
                weights.append(len(json.dumps(msg["content"]["data"])))

    reply = kernel.client.execute_interactive(code, allow_stdin=True, timeout=600, output_hook=keep)
    assert reply["content"]["status"] == "ok", reply["content"]
    return kinds


PAINT_MARK = 'print("NBP-LOOP-END", flush=True)\n'


def browser_paint(runs: int) -> tuple[list[float], list[float]]:
    """(the magic's paint times, the hand-written profiler's), in seconds, from a real JupyterLab page."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "browser")]
    from test_browser import _run_in_lab, write_notebook  # the browser tests' JupyterLab, reused

    with tempfile.TemporaryDirectory(prefix="nbprofiler-paint-") as tmp:
        notebook = write_notebook(Path(tmp) / "paint.ipynb", "%load_ext nbprofiler\n" + conv_training_setup(384),
                                  "%%torchprofile\n" + LOOP + PAINT_MARK,
                                  HAND.replace("_t0 = time.perf_counter()\n", PAINT_MARK))
        os.environ["NBP_PAINT_RUNS"] = str(runs)
        result = _run_in_lab(Path(tmp) / "lab", ROOT / "bench" / "report_paint.mjs", notebook,
                             Path(tmp) / "shots", timeout=600)
    return [ms / 1000 for ms in result["magicMs"]], [ms / 1000 for ms in result["handMs"]]


def profile(kernel: Kernel, top: int) -> None:
    """The magic's cell once more, with cProfile from the end of the loop to the hook."""
    kernel.execute(PROFILED, cell_id="magic")
    kernel.client.execute_interactive(
        f"import pstats; pstats.Stats(_pr).sort_stats('cumulative').print_stats({top}); _pr = None",
        timeout=60, output_hook=lambda msg: print(msg["content"].get("text", ""), end=""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--events", type=int, default=1_000_000, help="0 skips the big trace")
    parser.add_argument("--big-runs", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--browser", type=int, default=0, metavar="N", help="N painted runs in JupyterLab; 0 skips")
    args = parser.parse_args()
    history = tempfile.mkdtemp(prefix="nbprofiler-latency-history-")  # the runs are kept, not in the user's
    os.environ["NBPROFILER_HISTORY"] = str(Path(history) / "history.sqlite")
    try:
        with widget_kernel() as kernel:
            kernel.execute(SETUP, cell_id="setup")
            magic, hand, shown_at = small_cnn(kernel, args.runs)
            m, h = statistics.median(magic), statistics.median(hand)
            print(f"small CNN, 3 active steps: loop end -> report complete: %%torchprofile median {m:.3f} s "
                  f"(target <= {SMALL_TARGET_S} s), hand-written torch.profiler + key_averages() median "
                  f"{h:.3f} s; ratio {m / h:.1f}x")
            print(f"  runs: magic {', '.join(f'{w:.3f}' for w in magic)}; hand {', '.join(f'{w:.3f}' for w in hand)}")
            print(f"  the magic's report sent to the front end (explorer, HTML, text, data) after a median "
                  f"{statistics.median(shown_at):.3f} s; the rest, to post_run_cell, keeps the run in the history")
            if args.profile:
                profile(kernel, args.profile)
            if args.events:
                loads, waits, shown_at, kinds, saved_bytes = big_report(kernel, args.events, args.big_runs)
                print(f"{args.events:,}-event trace: load median {statistics.median(loads):.1f} s (not counted); "
                      f"complete bundle median {statistics.median(waits):.3f} s (target <= {BIG_TARGET_S} s); "
                      f"runs {', '.join(f'{w:.3f}' for w in waits)}; sent to the front end after a median "
                      f"{statistics.median(shown_at):.3f} s")
                print(f"  shown: {', '.join(sorted(set(kinds)))}; the output weighs {saved_bytes[-1] / 1e6:.1f} MB "
                      "in a saved notebook")
                missing = {"text/plain", "text/html", MIME_TYPE, WIDGET_MIME} - set(kinds)
                if missing:
                    print(f"  MISSING from the bundle: {', '.join(sorted(missing))}")
        if args.browser:
            magic, hand = browser_paint(args.browser)
            m, h = statistics.median(magic), statistics.median(hand)
            print(f"JupyterLab in Chromium: loop end -> report painted: %%torchprofile explorer median {m:.3f} s "
                  f"(target <= {SMALL_TARGET_S} s; runs {', '.join(f'{w:.3f}' for w in magic)}), hand-written "
                  f"profiler's printed table median {h:.3f} s (runs {', '.join(f'{w:.3f}' for w in hand)})")
    finally:
        shutil.rmtree(history, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
