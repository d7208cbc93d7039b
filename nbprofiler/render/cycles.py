"""The Cycles view's data: a ``--every N`` run's trend, cycle by cycle, with its drift marked.

One source for the three views that show it (the explorer's Cycles tab, the static HTML's
Cycles section, the saved report's ``cycles`` key), made once per report by its view model,
drawn as the Distributed view is (a verdict, charts, tables with a unit per column). A report
gets the view only when it has cycles (``report.cycles``); any other gets None and no tab.

The verdict is the drift's sentences (``report.drift``), or says the run was steady, or why
too few cycles could not tell. The charts are the chart-spec system's (``charts.py``): the step
time per cycle (the unprofiled steps', and the profiled ones'), with a marker where each drift
began, and memory per cycle. Operator names come from traces and are text only: the views escape them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis.cycles import PARTS
from ..analysis.drift import BASELINE_CYCLES, MIN_DRIFT_CYCLES
from .charts import Spec, chart_panel, chart_series, chart_spec, json_values
from .hardware import Section

if TYPE_CHECKING:
    from ..report import Report

HOW = ("One row per profiler cycle: its steps; the step time, samples/s and data wait of its unprofiled steps, "
       "which the profiler did not slow; its profiled steps' time and breakdown; memory at its peak and how much "
       "the cycle kept; MFU where known; its costliest operators. A drift is a change from the first cycles beyond "
       "the steps' noise (the comparison's bootstrap) that lasts to the run's end.")
# The fewest cycles a drift can be judged from: the first (warm-up), one that sets the pace, and a drift's least length.
JUDGED_FROM = 1 + 1 + MIN_DRIFT_CYCLES
_MEASURE_NAMES = {"step_time": "step time", "data_wait": "data wait", "memory": "memory"}


@dataclass(frozen=True)
class CyclesView:
    """``verdict`` the drift's sentences, or that the run was steady, or why it cannot be told;
    ``drifted`` whether it is a drift; ``charts`` the step-time and memory trends; ``sections``
    the cycles' table."""

    verdict: str
    drifted: bool
    charts: tuple[Spec, ...]
    sections: tuple[Section, ...]


def cycles_view(report: "Report") -> CyclesView | None:
    """The view of ``report``, or None when it has no cycles."""
    cycles = report.cycles
    if cycles.empty:
        return None
    drift = report.drift
    charts = tuple(c for c in (_time_chart(cycles, drift), _memory_chart(cycles, drift)) if c is not None)
    return CyclesView(verdict=_verdict(cycles, drift), drifted=not drift.empty, charts=charts,
                      sections=(Section("cycles", f"{len(cycles)} cycles", HOW, _table(cycles)),))


def _verdict(cycles: pd.DataFrame, drift: pd.DataFrame) -> str:
    if len(drift):
        return " ".join(f"From cycle {cycle} (step {int(rows['from_step'].iloc[0]):,}) {'; '.join(rows['change'])}."
                        for cycle, rows in drift.groupby("from_cycle", sort=True))
    if len(cycles) < JUDGED_FROM:
        return (f"{len(cycles)} cycles are too few to tell a drift: it takes {JUDGED_FROM} (the first warms up, the "
                f"next {BASELINE_CYCLES} at most set the pace, and a drift lasts {MIN_DRIFT_CYCLES}); run the loop "
                "longer.")
    return (f"Steady over its {len(cycles)} cycles: no later cycle's step time, data wait or memory moved beyond the "
            "steps' noise from the first ones.")


def _markers(drift: pd.DataFrame) -> list[dict[str, object]]:
    """Where each drift began, one marker per first step, naming what moved there: "drift: step time, data wait"."""
    return [{"at": int(step),
             "label": "drift: " + ", ".join(_MEASURE_NAMES.get(str(m), str(m)) for m in rows["measure"])}
            for step, rows in drift.groupby("from_step", sort=True)]


def _spec(name: str, title: str, y: tuple[str, str], cycles: pd.DataFrame, series: list[dict[str, Any]],
          drift: pd.DataFrame, from_zero: bool) -> Spec:
    panel = chart_panel([int(s) for s in cycles["first_step"]], series, from_zero=from_zero, markers=_markers(drift))
    return chart_spec(name, "lines", title, ("cycle's first step", "step"), y, [panel], marker_label="drift began")


def _time_chart(cycles: pd.DataFrame, drift: pd.DataFrame) -> Spec:
    series = [chart_series("step_ms", "step (unprofiled steps)", json_values(cycles["step_ms"] * 1e3), "kernel"),
              chart_series("profiled_step_ms", "profiled step", json_values(cycles["profiled_step_ms"] * 1e3), "other",
                           "dashed")]
    return _spec("cycles", "Step time per cycle", ("time per step", "us"), cycles, series, drift, True)


def _memory_chart(cycles: pd.DataFrame, drift: pd.DataFrame) -> Spec | None:
    if not cycles["mem_peak_bytes"].notna().any():
        return None
    series = [chart_series("mem_peak_bytes", "memory peak in the cycle", json_values(cycles["mem_peak_bytes"]), "peak")]
    memory = drift[drift["measure"] == "memory"]
    return _spec("cycles_memory", "Memory per cycle", ("memory", "bytes"), cycles, series, memory, False)


def _table(cycles: pd.DataFrame) -> pd.DataFrame:
    """The cycles with a unit each column's name tells (``hardware.unit_of``): the breakdown parts
    that took time in some cycle, MFU only where known."""
    table = pd.DataFrame({
        "cycle": cycles["cycle"], "first_step": cycles["first_step"], "last_step": cycles["last_step"],
        "unprofiled_step_us": cycles["step_ms"] * 1e3, "samples_per_s": cycles["samples_per_s"],
        "data_wait_share": cycles["data_wait_share"], "profiled_step_us": cycles["profiled_step_ms"] * 1e3})
    for part in PARTS:
        column = cycles[f"{part}_share"]
        if (column.fillna(0) > 0).any():
            table[f"{part}_share"] = column
    table["mem_peak_bytes"] = cycles["mem_peak_bytes"]
    table["mem_growth_bytes"] = cycles["mem_growth_bytes"]
    if cycles["mfu"].notna().any():
        table["mfu_share"] = cycles["mfu"]
    if not cycles["samples_per_s"].notna().any():
        table = table.drop(columns="samples_per_s")
    table["top_operators"] = cycles["top_operators"].fillna("")
    return table.reset_index(drop=True)
