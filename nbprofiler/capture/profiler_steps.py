"""Which loop steps must step torch's profiler: those where its schedule changes phase.

torch's ``profile.step()`` costs a loop step about 20 µs (a 2-core test machine) even where the
schedule waits: it calls the schedule, looks the transition up, and opens a ``ProfilerStep#N``
range, which nothing records while the profiler waits. A ``--every 200 --active 3`` run waits
196 steps of every 200: 0.8% of a small CNN's 2.5 ms step, for nothing, since a wait followed
by a wait changes nothing in torch. So the step that ends one wait and begins another does
not step the profiler. The step that leaves the wait first sets the profiler's step number
(``step_num``, torch's public counter) to the one it would have reached, so the schedule and
the ``ProfilerStep#N`` ranges are exactly those of stepping at every step.
"""
from __future__ import annotations

import sys

import torch
from torch.profiler import ProfilerAction


class ProfilerSteps:
    """For one run's profiler: whether a step boundary must step it, and its step number then."""

    def __init__(self, horizon: int) -> None:
        # The schedule leaves a wait within this many steps (its skip_first, wait, warmup and
        # active), or never again (its repeats are done).
        self._horizon = horizon
        self._waits_until = 0  # boundaries before the one that makes this many steps done are skipped

    def due(self, done: int) -> bool:
        """Whether the boundary that made ``done`` steps done must step the profiler."""
        return done >= self._waits_until

    def before_step(self, prof: torch.profiler.profile, done: int) -> None:
        """Give the profiler the step number stepping at every boundary would have reached."""
        prof.step_num = done - 1

    def stepped(self, prof: torch.profiler.profile, step: int) -> None:
        """The profiler is in ``step`` (started at 0, or just stepped): note the first later step
        that leaves its wait, or the next one where ``step`` is not a wait."""
        if prof.current_action is not ProfilerAction.NONE:
            self._waits_until = step + 1
            return
        self._waits_until = next((later for later in range(step + 1, step + 1 + self._horizon)
                                  if prof.schedule(later) is not ProfilerAction.NONE), sys.maxsize)
