"""Re-running one training cell under ``%%torchprofile`` in one kernel, as a user does after
each change: its CPU memory figures repeat, and the kernel keeps no more from run to run.

The cell: AdamW over Linear(1024, 2048) + ReLU + Linear(2048, 1024), batch 128, 6 steps.
"""
from __future__ import annotations

import gc
import os

import pytest

from nbprofiler.capture.heap import heap_usage, release_free_heap

pytestmark = pytest.mark.usefixtures("one_torch_thread")

IN, HIDDEN, BATCH = 1024, 2048, 128
SETUP = f"""
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear({IN}, {HIDDEN}), nn.ReLU(), nn.Linear({HIDDEN}, {IN}))
opt = torch.optim.AdamW(model.parameters())
x, y = torch.randn({BATCH}, {IN}), torch.randn({BATCH}, {IN})
"""
CELL = """
for _ in range(6):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
MIB = 1 << 20
FLOAT = 4
PARAMETER_BYTES = FLOAT * (IN * HIDDEN + HIDDEN + HIDDEN * IN + IN)  # counted by hand: weights and biases


def instances(*types: type) -> tuple[int, ...]:
    """How many objects of each type are alive after a collection."""
    gc.collect()
    objects = gc.get_objects()
    return tuple(sum(type(o) is t for o in objects) for t in types)


def profiled_runs(ip, runs: int):
    ip.run_cell(SETUP).raise_error()
    for _ in range(runs):
        ip.run_cell_magic("torchprofile", "-q -o run", CELL)
        yield ip.user_ns["run"]


def test_identical_reruns_read_the_same_cpu_memory_and_what_the_tensors_take(ip):
    """Each profiled step's start level and peak rise (the report's CPU memory section) agree
    over identical runs, and match the tensors counted by hand. Whether torch reports the
    frees of blocks made before recording changes from run to run: five runs meet both cases."""
    figures = []
    for report in profiled_runs(ip, 5):
        steps = report.memory_steps
        traced = steps[(steps["device"] == "cpu") & steps["peak_rise_bytes"].notna()].sort_values("step")
        assert len(traced) == 3 and traced["reconstructed"].all()
        figures.append(traced[["start_allocated_bytes", "peak_rise_bytes"]].to_numpy())
        later = traced.iloc[1:]  # the first step's levels start at recording: see below
        # At a step's start the previous step's gradients are held (one per parameter, its size),
        # and the (128, 1024) float block the previous loss keeps until the next one replaces it.
        held = PARAMETER_BYTES + BATCH * IN * FLOAT
        assert later["start_allocated_bytes"].to_numpy() == pytest.approx(held, rel=0.01)
        # Within a step the level peaks in AdamW's step: its temporary of the parameters' size
        # while the new gradients have replaced the old ones.
        assert later["peak_rise_bytes"].to_numpy() == pytest.approx(PARAMETER_BYTES, rel=0.01)
        # The first step starts at the recording's start (0), and counts the gradients it makes
        # but not the freeing of the ones made before recording.
        first = traced.iloc[0]
        assert first["start_allocated_bytes"] == 0
        assert first["peak_rise_bytes"] == pytest.approx(later["peak_rise_bytes"].max() + held, rel=0.01)
    for other in figures[1:]:
        assert other == pytest.approx(figures[0], rel=0.05), [f / MIB for f in figures]


@pytest.mark.skipif(heap_usage() is None or not os.path.exists("/proc/self/statm"),
                    reason="reads glibc's heap and Linux's /proc")
def test_reruns_keep_one_report_and_the_kernel_holds_no_freed_heap(ip):
    """What a profiled run leaves behind is bounded (the latest Report, for nbprofiler.last()
    and --compare), and what the profiler and the analysis freed is not left resident: the
    kernel's RSS would otherwise climb over re-runs by tens of MiB of free heap."""
    from nbprofiler.report import Report
    from nbprofiler.trace.table import EventTable

    page = os.sysconf("SC_PAGE_SIZE")

    def resident() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * page

    alive, released = [], []
    for report in profiled_runs(ip, 4):
        before = resident()
        release_free_heap()  # what of the RSS was free heap goes back now
        released.append(before - resident())
        del report
        ip.user_ns.pop("run")
        alive.append(instances(Report, EventTable))
    assert alive == [alive[0]] * 4, alive  # the run just made replaced the one before it
    assert max(released) < 1 * MIB, [r / MIB for r in released]
