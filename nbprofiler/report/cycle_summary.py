"""One row of ``report.cycles``: what a profiler cycle of a ``--every N`` run measured.

A cycle is N steps: most unprofiled (the schedule's wait), the last few profiled. The
step time, samples/s and data wait come from the sampler's unprofiled steps, which the
profiler did not slow, and so compare from cycle to cycle as the loop itself ran; the
breakdown, the top operators and the MFU come from the cycle's trace, through the same
Report tables a single run's report shows (a Report of the cycle alone, made and dropped
here, on the capture's background thread as the loop can spare it, ``capture/cycles.py``: about
10 ms for a small CNN's cycle). Memory is the sampler's over the whole cycle: its peak, and how
much it grew from its first step to its last.
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..analysis.cycles import PARTS, step_memory
from ..options import ProfileOptions
from ..records import RunRecord
from ..trace.table import DeviceInfo
from .report import Report

TOP_OPERATORS = 3
def cycle_summary(trace: bytes, steps: pd.DataFrame, options: ProfileOptions, device: DeviceInfo) -> dict[str, Any]:
    """The cycle's row (``analysis.cycles.CYCLE_COLUMNS`` but its number and steps, which the capture adds)."""
    record = RunRecord(options=options, device=device, steps=steps, loaders=(), step_source="cycle")
    cycle = Report.from_live(None, record, raw_trace=trace)
    unprofiled = steps[steps["phase"] == "wait"]
    timed = unprofiled if len(unprofiled) else steps
    wall_ms = float(timed["wall_ms"].sum())
    samples = float(timed["samples"].sum()) if "samples" in timed else math.nan
    # MFU needs the operators' FLOPs, which need their shapes (--shapes); without them the summary,
    # a third of the cost, would only say so: this runs once a cycle beside the user's loop.
    mfu = cycle.summary.get("mfu") if options.shapes else None
    shares = cycle.breakdown_shares() if len(cycle.breakdown) else pd.Series(dtype=float)
    return {
        "step_ms": float(timed["wall_ms"].mean()),
        "samples_per_s": samples / wall_ms * 1e3 if wall_ms > 0 and samples > 0 else math.nan,
        "data_wait_share": float(timed["dataloader_ms"].sum()) / wall_ms if wall_ms > 0 else math.nan,
        "profiled_step_ms": _number(cycle.step_window.avg_step_us, 1e-3),
        **{f"{part}_share": float(shares.get(part, math.nan)) for part in PARTS},
        "mem_peak_bytes": _peak(steps),
        "mem_growth_bytes": _growth(steps),
        "mfu": _number(mfu),
        "top_operators": _top_operators(cycle),
        "problem": cycle.trace_problem,
    }


def _number(value: Any, scale: float = 1.0) -> float:
    return math.nan if value is None else float(value) * scale


def _peak(steps: pd.DataFrame) -> float:
    """The cycle's highest memory: CUDA's peak allocated bytes of its steps, or their highest memory."""
    column = "mem_peak_bytes" if "mem_peak_bytes" in steps else step_memory(steps)
    return float(steps[column].max()) if column is not None and len(steps) else math.nan


def _growth(steps: pd.DataFrame) -> float:
    """Memory at the cycle's last step less at its first: what the cycle kept."""
    column = step_memory(steps)
    return float(steps[column].iloc[-1] - steps[column].iloc[0]) if column is not None and len(steps) else math.nan


def _top_operators(cycle: Report) -> str:
    """The cycle's costliest operators with their share of the operators' time: "aten::addmm 31%; ..."."""
    ops = cycle.operators
    if ops.empty:
        return ""
    main = "device_self_us" if cycle.has_device_activity else "host_self_us"
    total = float(ops[main].sum())
    if total <= 0:
        return ""
    top = ops.nlargest(TOP_OPERATORS, main)
    return "; ".join(f"{name} {value / total:.0%}" for name, value in zip(top["name"], top[main]))
