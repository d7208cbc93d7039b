"""The Distributed view's data: each rank's step split, the straggler and why, each rank's
collectives with their bus bandwidth, and what each rank waited on.

One source for the three views that show it (the explorer's Distributed tab, the static
HTML's Distributed section, the saved report's ``distributed`` key), made once per report by
its view model. A report gets the view only when it has distributed data: a folder of ranks,
or one rank's trace that ran collectives: whatever has rows in ``report.rank_steps``; any
other report gets None and no tab.

Tables keep their raw values, with a unit per column (``hardware.Section``), as the Hardware
view's do. Collective names come from traces and are text only: the views escape them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis.collectives import COLLECTIVE_COLUMNS
from ..analysis.distributed import rank_split, rank_waits
from ..format import fmt_us
from .charts import KIND_VERSIONS, Spec
from .hardware import Section

if TYPE_CHECKING:
    from ..report import Report

HOW = ("Each rank's step, averaged over its profiled steps, split as the TensorBoard plugin's Distributed view "
       "splits it: computation alone, computation and communication at once (overlap), communication alone, and "
       "other (neither ran: host work, launches, idle). On a GPU trace computation is the compute kernels and "
       "communication the collectives' kernels; on a CPU-only run, the host operators and the collectives' host "
       "ranges.")
WAIT_HOW = ("Each collective ends when the slowest rank arrives, so a rank that computes less waits for it there, "
            "once per step. Behind slowest = the slowest rank's compute per step minus this rank's (compute = step "
            "minus exposed communication). Exposed communication = collective time no compute hid: the whole time "
            "the rank was held in collectives, that wait included, the rest being the transfer itself.")
COLLECTIVES_HOW = ("Per rank, collective, dtype and group size: calls, bytes, kernel time and latency, nccl-tests' "
                   "algorithm bandwidth (bytes / time) and bus bandwidth (algorithm bandwidth × 2(n−1)/n for "
                   "all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce, "
                   "n ranks), and the kernel time no compute hid.")
SINGLE_RANK = ("This trace is one rank{of}: load the folder of every rank's trace (nbprofiler.load(DIR)) to compare "
               "the ranks, find a straggler and see what each rank waited for.")
ALONE = ("This run is one process (world size 1): its collectives had no other rank to wait for, so there is "
         "nothing to compare.")
# The chart's stacked parts: (column of ``rank_split`` or how to make it, label, palette colour).
PARTS = (("computation_only_us", "computation only", "kernel"), ("overlap_us", "overlap", "dataloader"),
         ("communication_only_us", "communication only", "communication"), ("other_us", "other", "other"))


@dataclass(frozen=True)
class DistributedView:
    """``ranks``: the ranks shown; ``straggler`` the straggling ranks (none where no rank stands
    out, or with a single rank) and ``verdict`` the sentence that names them and why, or says
    none was found or why ranks cannot be compared; ``chart`` the stacked bar per rank;
    ``sections`` the tables (split, waits, collectives), each only with rows."""

    ranks: tuple[int, ...]
    straggler: tuple[int, ...]
    verdict: str
    chart: Spec
    sections: tuple[Section, ...]


def distributed_view(report: "Report") -> DistributedView | None:
    """The view of ``report``, or None when it has no distributed data."""
    steps = report.rank_steps
    if steps.empty:
        return None
    # A folder's ranks, or the trace itself as its one rank.
    ranks = dict(report.ranks) if report.ranks else {int(steps["rank"].iloc[0]): report}
    split = rank_split(steps)
    comparison = report.rank_comparison
    flagged = (comparison.set_index("rank")[["straggler", "reason"]] if len(comparison)
               else pd.DataFrame({"straggler": False, "reason": ""}, index=pd.Index(list(ranks), name="rank")))
    stragglers = tuple(int(r) for r in flagged.index[flagged["straggler"].to_numpy(dtype=bool)])
    # "other" is all the step neither ran in (host work included), not the Hardware view's "other idle".
    table = split.rename(columns={"other_us": "other_time_us"}).assign(
        straggler=["straggler" if r in stragglers else "" for r in split["rank"]],
        reason=[str(flagged["reason"].get(r, "")) for r in split["rank"]])
    waits = rank_waits(comparison)
    sections = [Section("split", "Step split per rank", HOW, table),
                Section("waits", "What each rank waited on", WAIT_HOW, waits),
                Section("collectives", "Collectives per rank", COLLECTIVES_HOW, _collectives(ranks))]
    return DistributedView(ranks=tuple(sorted(ranks)), straggler=stragglers,
                           verdict=_verdict(report, comparison, stragglers), chart=_chart(split),
                           sections=tuple(s for s in sections if not s.table.empty))


def _collectives(ranks: Any) -> pd.DataFrame:
    """Every rank's ``collectives`` table, with its rank first."""
    frames = [ranks[n].collectives.assign(rank=n) for n in sorted(ranks)]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=["rank", *COLLECTIVE_COLUMNS])
    return pd.concat(frames, ignore_index=True)[["rank", *COLLECTIVE_COLUMNS]]


def _verdict(report: "Report", comparison: pd.DataFrame, stragglers: tuple[int, ...]) -> str:
    if len(comparison) < 2:
        meta = report.table.meta
        if meta.world_size == 1:
            return ALONE
        of = f" ({meta.rank} of {meta.world_size})" if meta.rank is not None and meta.world_size else ""
        return SINGLE_RANK.format(of=of)
    if not stragglers:
        return (f"No straggler: no rank's step time or compute stands out from the other {len(comparison) - 1} "
                "(more than 10% and 3 scaled MADs above their median).")
    reasons = comparison.set_index("rank")["reason"]
    return "; ".join(f"Straggler: rank {r}, {reasons[r]}" for r in stragglers) + "."


def _chart(split: pd.DataFrame) -> Spec:
    """Stacked bars, one per rank, of the parts in ``PARTS`` (µs per step)."""
    parts = split.assign(computation_only_us=np.maximum(split["computation_us"] - split["overlap_us"], 0.0),
                         communication_only_us=np.maximum(split["communication_us"] - split["overlap_us"], 0.0))
    series = [{"key": column, "label": label, "color": color, "dash": "solid",
               "values": [float(v) for v in parts[column]]} for column, label, color in PARTS]
    mean = fmt_us(float(split["step_us"].mean())) if len(split) else "–"
    return {"version": KIND_VERSIONS["bars"], "name": "distributed", "kind": "bars",
            "title": f"Step split per rank (mean step {mean})",
            "x": {"label": "rank", "unit": "category"}, "y": {"label": "time per step", "unit": "us"},
            "layout": "rows", "shared_y": False,
            "panels": [{"title": None, "x": [f"rank {int(r)}" for r in split["rank"]], "from_zero": True,
                        "series": series, "phases": [], "markers": []}]}
