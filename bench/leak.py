"""RSS growth over 50 profiled training cells in one IPython shell, then widgets and RSS
over 30 runs of one cell in a real kernel with a widget front end.

Shell: each cell trains a small conv net for 12 steps under ``%%torchprofile`` (default
schedule) and its report is displayed in full (text, HTML with charts, payload),
as a notebook would. RSS is read after a ``gc.collect()``; growth is measured
from the end of the first run, so one-off costs (imports, the first profiler
start, caches) do not count. Every fifth cell raises, as a real session would.
Target: growth < 50 MB.

Kernel: an ipykernel started through jupyter_client, sent each cell as JupyterLab
sends it (``allow_stdin``, the cell's ``cellId`` in the request's metadata), so
the report is shown as the explorer widget. The same profiled cell runs 30
times, as a user re-running it would; after each run the kernel reports how many
ipywidgets it holds (``ipywidgets.Widget.widgets``) and its RSS. Target: as many
widgets after the last run as after the first, and RSS growth < 30 MB.

Exits 1 when a target is missed.

    .venv/bin/python bench/leak.py [RUNS] [KERNEL_RUNS]
"""
from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import conv_training_setup

from nbprofiler.render.frontend import WIDGET_MIME

TARGET_BYTES = 50e6
KERNEL_TARGET_BYTES = 30e6
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


# Evaluated in the kernel after each run: the widgets ipywidgets holds (each one until
# its .close(); Widget.widgets, deprecated in ipywidgets 8) and the process's RSS after
# a collection.
KERNEL_PROBE = ("(__import__('gc').collect(), len(__import__('ipywidgets.widgets.widget', fromlist=['_'])._instances), "
                "__import__('psutil').Process().memory_info().rss)[1:]")


@dataclass
class Executed:
    """What a front end gets back from running a cell."""

    reply: dict[str, Any]
    widgets: list[str]  # the model ids of the widgets its outputs show


class Kernel:
    """A real ipykernel driven as a widget front end drives it: every request allows stdin
    (so ``frontend.widget_frontend()`` is true there) and names its cell, as JupyterLab does."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def execute(self, code: str, cell_id: str | None = None, deleted: Sequence[str] = (), probe: bool = False,
                timeout: float = 120) -> Executed:
        """Run ``code`` as cell ``cell_id`` (``deleted``: the cells deleted since the last
        request) and wait for it; raise on an error. ``probe``: the reply's
        ``user_expressions`` hold ``KERNEL_PROBE``'s (widgets, rss)."""
        content = {"code": code, "silent": False, "store_history": True, "allow_stdin": True,
                   "stop_on_error": True, "user_expressions": {"probe": KERNEL_PROBE} if probe else {}}
        metadata = {"cellId": cell_id, "deletedCells": list(deleted)} if cell_id else {}
        msg = self.client.session.msg("execute_request", content, metadata=metadata)
        self.client.shell_channel.send(msg)
        reply = self._reply(msg, timeout)
        if reply["status"] != "ok":
            raise RuntimeError(f"the cell failed in the kernel: {reply.get('ename')}: {reply.get('evalue')}")
        shown: list[str] = []
        while True:  # its outputs, up to the kernel's idle status for it
            out = self.client.get_iopub_msg(timeout=timeout)
            if out["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                continue
            if out["msg_type"] == "status" and out["content"]["execution_state"] == "idle":
                return Executed(reply, shown)
            view = out["content"].get("data", {}).get(WIDGET_MIME)
            if view is not None:
                shown.append(view["model_id"])

    def open_widgets(self) -> set[str]:
        """The widget models whose comm is open, as a front end asks (the labextension does)."""
        msg = self.client.session.msg("comm_info_request", {"target_name": "jupyter.widget"})
        self.client.shell_channel.send(msg)
        return set(self._reply(msg, 30)["comms"])

    def _reply(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        while True:
            reply = self.client.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]

    def widgets_and_rss(self) -> tuple[int, int]:
        """(widgets the kernel holds, its RSS in bytes), read by a request of no cell."""
        data = self.execute("", probe=True).reply["user_expressions"]["probe"]["data"]["text/plain"]
        widgets, rss = data.strip("()").split(",")
        return int(widgets), int(rss)


@contextmanager
def widget_kernel() -> Iterator[Kernel]:
    """A fresh python3 kernel with nbprofiler loaded, shut down on exit. Its iopub messages
    (the widget models, the outputs) are read and dropped, as a front end would consume them."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", env={**os.environ, "OMP_NUM_THREADS": "1"},
                                       cwd=str(Path(__file__).resolve().parents[1]))
    try:
        kernel = Kernel(client)
        kernel.execute("%load_ext nbprofiler")
        yield kernel
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def kernel_runs(setup: str, cell: str, runs: int,
                on_run: Callable[[int, int, int], None] | None = None) -> list[tuple[int, int]]:
    """(widgets, RSS) after ``setup`` and after each of ``runs`` runs of ``cell``, re-run in
    place as a user re-runs a cell, in one kernel."""
    with widget_kernel() as kernel:
        kernel.execute(setup, cell_id="setup")
        samples = [kernel.widgets_and_rss()]
        for i in range(runs):
            kernel.execute(cell, cell_id="profiled-cell")
            samples.append(kernel.widgets_and_rss())
            if on_run is not None:
                on_run(i + 1, *samples[-1])
    return samples


def kernel_main(runs: int = 30) -> bool:
    """The widget front end measurement; True when the targets are met."""
    def report(run: int, widgets: int, rss_bytes: int) -> None:
        print(f"kernel run {run:3d}: widgets {widgets:5d}, RSS {rss_bytes / 1e6:7.1f} MB")

    t0 = time.perf_counter()
    samples = kernel_runs(SETUP, CELL, runs, on_run=report)
    (w0, _), (w1, r1), (wn, rn) = samples[0], samples[1], samples[-1]
    print(f"kernel: {runs} runs in {time.perf_counter() - t0:.1f} s; widgets before {w0}, after the first run {w1}, "
          f"after the last {wn}; RSS growth after the first run: {(rn - r1) / 1e6:.1f} MB "
          f"(targets: {w1} widgets, < {KERNEL_TARGET_BYTES / 1e6:.0f} MB)")
    return wn <= w1 and rn - r1 < KERNEL_TARGET_BYTES


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
    shell_ok = main(int(sys.argv[1]) if len(sys.argv) > 1 else 50) == 0
    kernel_ok = kernel_main(int(sys.argv[2]) if len(sys.argv) > 2 else 30)
    sys.exit(0 if shell_ok and kernel_ok else 1)
