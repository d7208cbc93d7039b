"""Whether a CPU step's fixed cost passes the batch rule's threshold, judged over every
profiled step with the spread between them, never from one step.

One step's share moves with the machine's load: two optimizers in one loop profiled 8 times
unchanged read 0.31 to 0.73 from the first quartile of 3 steps, around a 0.50 threshold, and
the suggestion came and went. Here the share is the median of the steps' shares (a step the
machine preempted reads near 0 or 1), with a distribution-free interval over the steps; a threshold
inside the interval is no decision, and the verdict says how many steps would make one.

The Python that may grow with the batch (``CpuOverhead.loose_by_step``) is never counted as
fixed: where only it could carry the share past the threshold, one batch size cannot tell,
and the verdict says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from . import thresholds as T

# "fixed": the fixed cost alone passes the threshold; "small": even with all the loose Python
# counted as fixed it does not; "loose": only the loose Python could carry it past; "unsure": an
# interval holds the threshold, so more steps are needed.
Outcome = Literal["fixed", "small", "loose", "unsure"]


@dataclass(frozen=True)
class Interval:
    """A share of the step (the median over steps) and its interval."""

    low: float
    share: float
    high: float

    def holds(self, threshold: float) -> bool:
        return self.low <= threshold < self.high


@dataclass(frozen=True)
class FixedShareDecision:
    outcome: Outcome
    fixed: Interval  # the cost known not to grow with the batch
    possible: Interval  # that and the loose Python: the most that could be fixed
    steps: int  # profiled steps judged (those the machine did not pause)
    steps_needed: int | None  # for "unsure": about how many steps would tell


def median_interval(shares: np.ndarray, level: float = T.FIXED_SHARE_LEVEL) -> Interval:
    """The median of the steps' ``shares``, with the distribution-free interval that holds the
    true median at least ``level`` of the time (the order statistics ``j`` from each end, by the
    binomial law of how many steps fall under the median): of 3 steps, all 3, so a decision needs
    them all on one side; of 10, the 3rd to the 8th. Under ``FIXED_SHARE_MIN_STEPS`` steps no
    interval does: it is the whole range, and nothing is decided."""
    x = np.sort(np.asarray(shares, dtype=np.float64))
    n = len(x)
    share = float(np.median(x))
    if n < T.FIXED_SHARE_MIN_STEPS:
        return Interval(0.0, share, 1.0)
    below = np.cumsum([math.comb(n, i) for i in range(n + 1)]) / 2.0 ** n  # P(at most i steps under the median)
    j = 1
    while j + 1 <= n // 2 and 1.0 - 2.0 * below[j] >= level:  # the (j+1)-th from each end still holds it
        j += 1
    return Interval(float(x[j - 1]), share, float(x[n - j]))


def decide(fixed: np.ndarray, loose: np.ndarray, compute: np.ndarray, needed: float) -> FixedShareDecision:
    """The batch rule's decision from each profiled step's fixed µs, loose Python µs and
    compute µs, against the share ``needed``; steps the machine paused
    (``PREEMPTED_STEP_FACTOR``) are left out."""
    compute = np.asarray(compute, dtype=np.float64)
    quiet = compute <= T.PREEMPTED_STEP_FACTOR * compute.min()
    fixed, loose, compute = np.asarray(fixed)[quiet], np.asarray(loose)[quiet], compute[quiet]
    f = median_interval(fixed / compute)
    p = median_interval((fixed + loose) / compute)
    n = len(compute)
    if f.low > needed:
        return FixedShareDecision("fixed", f, p, n, None)
    if p.high <= needed:
        return FixedShareDecision("small", f, p, n, None)
    if f.high <= needed < p.low:
        return FixedShareDecision("loose", f, p, n, None)
    return FixedShareDecision("unsure", f, p, n, steps_to_tell(f if f.holds(needed) else p, needed, n))


def steps_to_tell(interval: Interval, threshold: float, steps: int) -> int:
    """About how many steps would narrow ``interval`` (from ``steps``) to leave ``threshold``
    outside: its width falls as 1/sqrt(steps). At least one more than ``steps``."""
    half = (interval.high - interval.low) / 2
    distance = abs(interval.share - threshold)
    if distance <= 0:
        return T.FIXED_SHARE_MAX_STEPS
    needed = max(math.ceil(steps * (half / distance) ** 2), steps + 1, T.FIXED_SHARE_MIN_STEPS)
    return int(min(needed, T.FIXED_SHARE_MAX_STEPS))
