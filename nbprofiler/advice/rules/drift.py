"""The drift rule: a ``--every N`` run whose later cycles got worse than its first ones.

``report.drift`` (``analysis.drift``) finds when it began and what moved; this card says it
in those words and what to measure next. It proposes no code: what makes a loader slow down
at step 600, or memory creep up, is in the user's data and code, which one run cannot see.
The gain is what the run would have saved had the drifted steps kept the first cycles' pace:
an estimate whose range follows the slowdown's interval, never a bound.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ...format import fmt_ms
from ..safe_names import code_name
from ..suggestion import Suggestion, Verdict, estimate_words, fired, passed, severity_for
from .checks import DRIFT
from .dataloader import tuner_call

if TYPE_CHECKING:
    from .facts import Facts


def drift_rule(f: Facts) -> list[Verdict]:
    """A drift in a run with cycles; no verdict for a run without ``--every``, where it does not apply."""
    cycles = f.report.cycles
    if cycles.empty:
        return []
    found = f.report.drift
    if found.empty:
        return [passed(DRIFT, f"the {len(cycles)} cycles kept the first ones' step time, data wait and memory",
                       cycles=len(cycles))]
    return [fired(DRIFT, [_drift_card(f, found)])]


def _drift_card(f: Facts, found: pd.DataFrame) -> Suggestion:
    rows = {str(row["measure"]): row for _, row in found.iterrows()}
    first = found.loc[found["from_cycle"].idxmin()]
    step_time, wait = rows.get("step_time"), rows.get("data_wait")
    low, gain, high = _gain(f.report.steps, step_time) if step_time is not None else (1.0, 1.0, 1.0)
    from_step = int(step_time["from_step"]) if step_time is not None else 0
    pace = fmt_ms(float(step_time["before"])) if step_time is not None else ""
    record = f.main_loader
    loader = code_name(record.name) if record is not None and record.name else None
    if wait is not None:
        measure = (f"measure the loader on the slow part of the data: {tuner_call(loader)}" if loader else
                   "measure the loader on the slow part of the data with nbprofiler.tune_dataloader")
    elif step_time is not None:
        measure = (f"profile the slow steps in full: --skip-first {from_step} records the first "
                   "drifted cycle's steps, whose operators the Operators tab then compares")
    else:
        measure = ("look for tensors kept across steps (a list of losses with their graphs, a growing cache): "
                   "the Memory tab's growth table names the operators that allocated what stayed")
    return Suggestion(
        kind="drift",
        title=f"The run drifted: from cycle {int(first['from_cycle'])} (step {int(first['from_step']):,}) "
              f"{first['change']}",
        severity=severity_for(gain) if step_time is not None else "medium",
        evidence={**{f"{row.measure}_from_cycle": int(row.from_cycle) for row in found.itertuples()},
                  **{f"{row.measure}_before": float(row.before) for row in found.itertuples()},
                  **{f"{row.measure}_after": float(row.after) for row in found.itertuples()}},
        facts=tuple(str(t) for t in found["text"]),
        detail=f"The later cycles differ from the first ones beyond the steps' noise (the statistics of a "
               f"comparison). To find why, {measure}.",
        claim="estimate", gain=gain, gain_low=low, gain_high=high,
        expected_gain=(estimate_words(low, gain, high, "for the whole run",
                                      f"the steps from step {from_step:,} on ran at the first cycles' "
                                      f"pace ({pace} a step)")
                       if step_time is not None else "none in speed: memory, which at this rate runs out"),
    )


def _gain(steps: pd.DataFrame, row: pd.Series) -> tuple[float, float, float]:
    """The run's speed-up had the steps from the drift on been the slowdown's factor faster:
    the run's time over that time, at the slowdown and at its interval's ends."""
    wall = steps["wall_ms"].to_numpy()
    total = float(wall.sum())
    drifted = float(wall[steps["step"].to_numpy() >= row["from_step"]].sum())

    def at(slowdown: float) -> float:
        return max(total / (total - drifted * (1 - 1 / max(slowdown, 1.0))), 1.0)

    slowdown = float(row["after"]) / float(row["before"])
    low, high = sorted((at(float(row["low"])), at(float(row["high"]))))
    gain = min(max(at(slowdown), low), high)
    return low, gain, high
