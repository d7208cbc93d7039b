"""Stepping torch's profiler only where its schedule leaves a wait gives the same profile as
stepping it at every step: the same phase at every step, and the same ``ProfilerStep#N`` ranges
in each cycle's trace. Real profilers over a small real loop."""
from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile, schedule

from nbprofiler.capture.profiler_steps import ProfilerSteps
from nbprofiler.options import ProfileOptions

STEPS = 47


def _run(options: ProfileOptions, skipping: bool) -> tuple[list[ProfilerAction], list[list[str]], int]:
    """The profiler's phase at each step, each exported cycle's step ranges, and how many times
    ``step()`` was called, over ``STEPS`` steps of a small loop."""
    cycles: list[list[str]] = []

    def ready(prof: profile) -> None:
        cycles.append(sorted({e.name for e in prof.events() if e.name.startswith("ProfilerStep#")}))

    prof = profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready,
                   schedule=schedule(wait=options.wait, warmup=options.warmup, active=options.active,
                                     repeat=options.repeat, skip_first=options.skip_first))
    steps = ProfilerSteps(options.skip_first + options.cycle_length)
    calls = 0
    x = torch.ones(8, 8)
    prof.start()
    steps.stepped(prof, 0)
    phases: list[ProfilerAction] = [prof.current_action]
    for done in range(1, STEPS + 1):
        (x @ x).sum()
        if not skipping or steps.due(done):
            steps.before_step(prof, done)
            prof.step()
            calls += 1
            steps.stepped(prof, done)
        phases.append(prof.current_action if prof.step_num == done else ProfilerAction.NONE)
    prof.stop()
    return phases, cycles, calls


@pytest.mark.parametrize("options", [
    ProfileOptions(every=10, warmup=1, active=2),
    ProfileOptions(wait=3, warmup=0, active=2, repeat=0, skip_first=4),
    ProfileOptions(wait=5, warmup=2, active=1, repeat=2, skip_first=1),
    ProfileOptions(wait=0, warmup=1, active=3, repeat=0),
], ids=["every", "no-warmup-skip-first", "repeats-done", "no-wait"])
def test_skipping_the_waits_changes_no_phase_and_no_trace(options):
    every_phase, every_cycles, every_calls = _run(options, skipping=False)
    phases, cycles, calls = _run(options, skipping=True)
    assert phases == every_phase
    assert cycles == every_cycles and cycles  # each cycle's trace has the same ProfilerStep#N ranges
    waits_between = sum(1 for a, b in zip(every_phase, every_phase[1:])
                        if a is ProfilerAction.NONE and b is ProfilerAction.NONE)
    assert calls == every_calls - waits_between  # stepped exactly where a wait does not follow a wait
