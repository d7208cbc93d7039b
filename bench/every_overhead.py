"""What watching a whole run costs: ``%%torchprofile --every 200 --active 3`` over a 2,000-step CPU loop.

Three forms of the same training loop (a small CNN, batches of 16, ten epochs of 200 steps), in
interleaved rounds in one process, each timed by the loop itself (``time.perf_counter`` around
the loop, and at every step, as a user would time it):

- **plain**: no profiler;
- **magic**: the cell under ``%%torchprofile --every 200 --active 3`` (its live status line and
  chart included; the report made after the loop is not the loop's time);
- **hand**: a hand-written ``torch.profiler.profile`` with the same schedule
  (``wait=196, warmup=1, active=3, repeat=0``) and memory recording, exporting each cycle's
  Chrome trace in ``on_trace_ready``, as a user watching a run would write it.

Prints the median over the rounds of each form's loop time over the plain loop's (target for
the magic: at most 1.03), of its CPU time (``time.process_time``: the process's every thread,
which other programs on a shared machine disturb less than the wall time), of its mean
active-step time over the plain loop's same steps (target: the hand-written profiler's, within
the rounds' spread), and of its median unprofiled step (what the hooks cost every step).

    .venv/bin/python bench/every_overhead.py [ROUNDS] [OPTIONS]
    # OPTIONS: the magic's schedule, "--every 200 --active 3" by default
"""
from __future__ import annotations

import os
import statistics
import sys

from IPython.utils.capture import capture_output

from workload import conv_training_setup, shell_with

STEPS, EVERY, ACTIVE = 2000, 200, 3
SETUP = conv_training_setup(16 * 200).replace("batch_size=32", "batch_size=16") + """
import time
def loop(after_step=None):
    global cpu_s
    cpu_start = time.process_time()
    marks = [time.perf_counter()]
    for epoch in range(10):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if after_step is not None:
                after_step()
            marks.append(time.perf_counter())
    cpu_s = time.process_time() - cpu_start
    return marks
"""
PLAIN = "marks = loop()"
MAGIC = "marks = loop()"
HAND = f"""
import torch.profiler as tp
def _export(p):
    p.export_chrome_trace(TRACE_PATH)
with tp.profile(activities=[tp.ProfilerActivity.CPU],
                schedule=tp.schedule(wait={EVERY - 1 - ACTIVE}, warmup=1, active={ACTIVE}, repeat=0),
                on_trace_ready=_export, profile_memory=True) as prof:
    marks = loop(prof.step)
"""


def active_steps() -> list[int]:
    """The steps the schedule profiles: the last ``ACTIVE`` of each cycle of ``EVERY``."""
    return [s for s in range(STEPS) if s % EVERY >= EVERY - ACTIVE]


def figures(marks: list[float]) -> tuple[float, float, float]:
    """The loop's time, its mean active-step time, and its median unprofiled step time."""
    durations = [b - a for a, b in zip(marks, marks[1:])]
    active = set(active_steps())
    return (marks[-1] - marks[0], statistics.fmean(durations[s] for s in active),
            statistics.median(d for s, d in enumerate(durations) if s not in active and s % EVERY < EVERY - ACTIVE - 1))


def main(rounds: int = 5, options: str = f"--every {EVERY} --active {ACTIVE}") -> None:
    ip, trace_path = shell_with(SETUP)
    forms = {"plain": lambda: ip.run_cell(PLAIN).raise_error(),
             "magic": lambda: ip.run_cell_magic("torchprofile", f"--no-history {options}", MAGIC),
             "hand": lambda: ip.run_cell(HAND).raise_error()}
    loop_s: dict[str, list[float]] = {name: [] for name in forms}
    active_s: dict[str, list[float]] = {name: [] for name in forms}
    wait_s: dict[str, list[float]] = {name: [] for name in forms}
    cpu_s: dict[str, list[float]] = {name: [] for name in forms}
    with capture_output():
        for name in forms:  # warm every path once
            forms[name]()
        for r in range(rounds):
            order = list(forms)[r % 3:] + list(forms)[:r % 3]
            for name in order:
                forms[name]()
                total, active, waiting = figures(ip.user_ns["marks"])
                loop_s[name].append(total)
                active_s[name].append(active)
                wait_s[name].append(waiting)
                cpu_s[name].append(ip.user_ns["cpu_s"])
    os.unlink(trace_path)
    for name in ("magic", "hand"):
        print(f"{name:>5}: " + "; ".join(_ratio(what, values[name], values["plain"]) for what, values in (
            ("whole loop", loop_s), ("its CPU time", cpu_s), ("active steps", active_s),
            ("unprofiled steps (median)", wait_s))))
    print(f"plain loop: median {statistics.median(loop_s['plain']):.2f} s for {STEPS} steps; "
          f"target: magic whole loop <= 1.03x, active steps at the hand-written profiler's "
          f"({rounds} rounds, {options})")


def _ratio(what: str, form: list[float], plain: list[float]) -> str:
    """The median over the rounds of ``form`` over the plain loop, with the rounds' range."""
    ratios = [a / b for a, b in zip(form, plain)]
    return f"{what} {statistics.median(ratios):.3f}x (rounds {min(ratios):.3f}-{max(ratios):.3f})"


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, " ".join(sys.argv[2:]) or f"--every {EVERY} --active {ACTIVE}")
