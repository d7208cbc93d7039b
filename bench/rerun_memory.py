"""The kernel's memory over re-runs of one training cell: plain, then under ``%%torchprofile``.

A real ipykernel, driven as JupyterLab drives it (bench/leak.py's ``widget_kernel``: the report
is shown as the explorer widget), trains AdamW over Linear(1024, 2048) + ReLU +
Linear(2048, 1024) at batch 128 for 6 steps per cell. The cell is re-run RUNS times plain,
then RUNS times profiled, in place as a user re-runs a cell. After each run the kernel
reports, after a ``gc.collect()``:

- its RSS;
- the C heap in use and free (glibc's ``mallinfo2``): what the process holds is the heap in
  use; free heap is resident too unless it was handed back (``malloc_trim``);
- nbprofiler's objects still alive: Reports, their event tables, and the bytes of those tables.

What the product keeps is bounded: ``nbprofiler.last()`` and each of the last few cells'
latest Report (for ``--compare``), the explorer of the cell's latest output. So the count
of Reports must not grow with re-runs, and RSS should stay flat within the allocator's noise.

    .venv/bin/python bench/rerun_memory.py [RUNS]
"""
from __future__ import annotations

import ast
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from leak import Kernel, widget_kernel

SETUP = """
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024))
opt = torch.optim.AdamW(model.parameters())
x, y = torch.randn(128, 1024), torch.randn(128, 1024)
"""
CELL = """
for _ in range(6):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
# Evaluated in the kernel: RSS, C heap in use and free, and nbprofiler's live objects.
PROBE = """(lambda gc, psutil, json: (
    gc.collect(),
    json.dumps(dict(
        rss=psutil.Process().memory_info().rss,
        heap=__import__('nbprofiler.capture.heap', fromlist=['_']).heap_usage(),
        reports=sum(type(o).__name__ == 'Report' for o in gc.get_objects()),
        tables=sum(type(o).__name__ == 'EventTable' for o in gc.get_objects()),
    )))[1])(__import__('gc'), __import__('psutil'), __import__('json'))"""


def probe(kernel: Kernel) -> dict:
    """The kernel's figures after a collection, read by a request of no cell."""
    content = {"code": "", "silent": False, "store_history": False, "allow_stdin": True,
               "stop_on_error": True, "user_expressions": {"probe": PROBE}}
    msg = kernel.client.session.msg("execute_request", content)
    kernel.client.shell_channel.send(msg)
    reply = kernel._reply(msg, 60)["user_expressions"]["probe"]
    if reply["status"] != "ok":
        raise RuntimeError(f"the probe failed: {reply}")
    return json.loads(ast.literal_eval(reply["data"]["text/plain"]))  # the repr of the JSON text


def line(label: str, run: int, figures: dict) -> str:
    heap = figures["heap"]
    heap_text = (f"heap in use {heap[0] / 2**20:6.1f} MiB, free {heap[1] / 2**20:5.1f} MiB"
                 if heap is not None else "heap n/a")
    return (f"{label:9s} run {run}: RSS {figures['rss'] / 2**20:6.1f} MiB, {heap_text}, "
            f"Reports alive {figures['reports']}, event tables {figures['tables']}")


def main(runs: int = 8) -> int:
    t0 = time.perf_counter()
    rows: dict[str, list[dict]] = {}
    with widget_kernel() as kernel:
        kernel.execute(SETUP, cell_id="setup")
        for label, cell in (("plain", CELL), ("profiled", f"%%torchprofile\n{CELL}")):
            rows[label] = []
            for i in range(runs):
                kernel.execute(cell, cell_id=f"{label}-cell")
                rows[label].append(probe(kernel))
                print(line(label, i + 1, rows[label][-1]), flush=True)
    for label, figures in rows.items():
        rss = [f["rss"] / 2**20 for f in figures]
        print(f"{label}: RSS {rss[0]:.1f} -> {rss[-1]:.1f} MiB over {runs} runs "
              f"(growth after the first run {rss[-1] - rss[0]:+.1f} MiB, range {max(rss) - min(rss):.1f} MiB); "
              f"Reports alive after the last run {figures[-1]['reports']}")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 8))
