"""Which ``optimizer.step()`` ends a loop iteration when several optimizers step in it.

A GAN steps its discriminator's optimizer and then its generator's once per loop
iteration. Ending a profiler step at each would make two steps of one iteration:
half the step time and half the samples per step the user sees. A step is one
iteration instead: it ends at the last optimizer of the cycle the loop repeats.

The cycle is learned from the order the optimizers step in: it is complete when an
optimizer that already stepped steps again, and the one that stepped just before is
the last of it. Until then the first optimizer ends the first step, as a loop with
one optimizer would, and the others do not; so the first step is a part of the
first iteration and the second the rest of it with the whole second iteration, and
every step after is one iteration. A loop with one optimizer is unchanged: each of
its steps ends one. An optimizer outside the cycle (stepped every other iteration)
never ends a step.
"""
from __future__ import annotations

from collections.abc import Callable


class OptimizerCycle:
    """One thread's optimizers in the order they step, and the one that ends an iteration."""

    def __init__(self) -> None:
        self.order: list[int] = []  # ids of the optimizers of the first cycle, in stepping order
        self.names: list[str] = []  # what to call each in a note
        self.closing: int | None = None  # id of the optimizer whose step ends an iteration, once known

    def ends_step(self, optimizer: object, name: Callable[[], str]) -> bool:
        """Whether this optimizer's step ends the current profiler step (``name``: what the user
        calls the optimizer, asked only while the cycle is learned)."""
        key = id(optimizer)
        if self.closing is not None:
            return key == self.closing
        if key in self.order:  # the cycle repeats: the optimizer that stepped last ends each iteration
            self.closing = self.order[-1]
            return key == self.closing
        self.order.append(key)
        self.names.append(name())
        return len(self.order) == 1

    @property
    def several(self) -> bool:
        """Whether more than one optimizer steps in each iteration (steps are then iterations)."""
        return len(self.order) > 1 and self.closing is not None

    @property
    def closing_name(self) -> str | None:
        return self.names[self.order.index(self.closing)] if self.closing is not None else None
