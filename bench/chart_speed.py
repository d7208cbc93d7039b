"""How long a report's charts take to build: spec and static SVG of every chart, tables already computed.

Before the charts were specs, matplotlib drew each as a PNG in about 0.8 s. Prints,
per report, the median of 20 builds in ms. Run: ``.venv/bin/python bench/chart_speed.py``.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import nbprofiler
from nbprofiler.render import charts, view_model

TRACES = Path(__file__).resolve().parents[1] / "tests/data/traces"


def build_all(report) -> None:
    """Every chart's spec and SVG, made now (a report's view model makes them once and keeps them;
    what they read of it, the breakdown and the memory device, is kept after the first build)."""
    for name in charts.CHART_NAMES:
        charts.svg(charts.build(view_model.of(report), name))


def median_ms(report, repeat: int = 20) -> float:
    build_all(report)  # the report's tables, computed once as any renderer would
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        build_all(report)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


SMALL_RUN = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(96, 20), torch.randint(0, 4, (96,))), batch_size=8)
"""
TRAIN = """
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def small_live_run():
    """A real %%torchprofile run of a small training loop (12 steps, 3 profiled) in an IPython shell."""
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    shell.run_cell(SMALL_RUN).raise_error()
    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o run", TRAIN)
    return shell.user_ns["run"]


def main() -> None:
    report = small_live_run()
    drawn = [n for n in charts.CHART_NAMES if charts.build(view_model.of(report), n) is not None]
    print(f"small live CPU run: {median_ms(report):.1f} ms for {len(drawn)} charts ({', '.join(drawn)})")
    for name in ("cpu_only", "v100_resnet50_train_num_workers_0", "a100_train"):
        report = nbprofiler.load(TRACES / f"{name}.pt.trace.json.gz")
        drawn = [n for n in charts.CHART_NAMES if charts.build(view_model.of(report), n) is not None]
        print(f"{name}: {median_ms(report):.1f} ms for {len(drawn)} charts ({', '.join(drawn)})")


if __name__ == "__main__":
    main()
