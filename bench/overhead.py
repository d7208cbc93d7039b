"""Overhead of %%torchprofile against a hand-written torch.profiler.profile.

Both run the same training cell with the identical schedule and options
(wait=1, warmup=1, active=3, memory on) and export one Chrome trace; the
magic also builds the Report. Prints the median wall-time ratio over 5 runs
of each, interleaved, measured in one process. Target: <= 1.05.

    .venv/bin/python bench/overhead.py [RUNS] [PROFILE]   # PROFILE: print that many costliest
                                                            # functions of one more magic run
"""
from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import time

from IPython.utils.capture import capture_output

from workload import conv_training_setup, shell_with

SETUP = conv_training_setup(1024)
BODY = """
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
HAND = """
import torch.profiler as tp
def _export(p):
    p.export_chrome_trace(TRACE_PATH)
with tp.profile(activities=[tp.ProfilerActivity.CPU], schedule=tp.schedule(wait=1, warmup=1, active=3, repeat=1),
                on_trace_ready=_export, profile_memory=True) as prof:
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        prof.step()
"""


def main(runs: int = 5, profile: int = 0) -> None:
    """Prints the medians and their ratio; with ``profile`` > 0, then runs the magic's cell once
    more under cProfile and prints its ``profile`` costliest functions by cumulative time."""
    ip, trace_path = shell_with(SETUP)
    magic, hand = [], []
    with capture_output():
        ip.run_cell_magic("torchprofile", "-q", BODY)  # warm both paths once
        ip.run_cell(HAND).raise_error()
        for _ in range(runs):
            t = time.perf_counter()
            ip.run_cell_magic("torchprofile", "-q", BODY)
            magic.append(time.perf_counter() - t)
            t = time.perf_counter()
            ip.run_cell(HAND).raise_error()
            hand.append(time.perf_counter() - t)
    os.unlink(trace_path)
    m, h = statistics.median(magic), statistics.median(hand)
    print(f"%%torchprofile median {m * 1e3:.1f} ms, hand-written torch.profiler median {h * 1e3:.1f} ms")
    print(f"overhead ratio (median of {runs}): {m / h:.3f}  (target <= 1.05)")
    if profile > 0:
        profiler = cProfile.Profile()
        with capture_output():
            profiler.runcall(ip.run_cell_magic, "torchprofile", "-q", BODY)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(profile)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, int(sys.argv[2]) if len(sys.argv) > 2 else 0)
