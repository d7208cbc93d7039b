"""Overhead of %%torchprofile against a hand-written torch.profiler.profile.

Both run the same training cell with the identical schedule and options
(wait=1, warmup=1, active=3, memory on) and export one Chrome trace; the
magic also builds the Report. Prints the median wall-time ratio over 5 runs
of each, interleaved, measured in one process. Target: <= 1.05.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from workload import conv_training_setup

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


def main(runs: int = 5) -> None:
    ip = start_ipython()
    ip.run_line_magic("load_ext", "nbprofiler")
    ip.run_cell(SETUP).raise_error()
    fd, trace_path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    ip.user_ns["TRACE_PATH"] = trace_path
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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
