"""What every renderer shows, chosen once: text, HTML, payload and widget agree.

The renderers differ in form only. Which figure is the headline, which
breakdown a run gets (device categories on GPU, host phases on CPU), which
device the memory views describe and in what order suggestions come: all of
it is decided here, from the Report's tables.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis.breakdown import CATEGORIES
from ..analysis.phases import PHASES
from .format import fmt_bytes

if TYPE_CHECKING:
    from ..advice.suggestion import Suggestion
    from ..report import Report

LABELS = {
    "kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset", "communication": "Communication",
    "runtime": "Runtime", "dataloader": "DataLoader", "cpu_exec": "CPU Exec", "other": "Other",
    "forward": "Forward", "backward": "Backward", "optimizer": "Optimizer",
}
# One colour per breakdown part, the same in every chart and front end.
COLORS = {
    "kernel": "#4C72B0", "memcpy": "#DD8452", "memset": "#937860", "communication": "#8172B3",
    "runtime": "#C44E52", "dataloader": "#E5AE38", "cpu_exec": "#55A868", "other": "#B0B0B0",
    "forward": "#4C72B0", "backward": "#8172B3", "optimizer": "#55A868",
}
PHASE_SHADES = {"wait": "#e6e6e6", "warmup": "#fbe9b7", "active": "#d5ecd4"}


def breakdown_parts(report: "Report") -> tuple[str, pd.DataFrame]:
    """``("device", …)`` per-step device categories when the run has device activity,
    else ``("phases", …)`` per-step host phases: ``step`` plus one µs column per part."""
    if report.has_device_activity:
        return "device", report.breakdown[["step", *CATEGORIES, "other"]]
    return "phases", report.phases[["step", *PHASES]]


def batch_size(report: "Report") -> int | None:
    """The batch size of the DataLoader that fed the most batches, when a live run saw one."""
    if report.run is None:
        return None
    loaders = [r for r in report.run.loaders if r.batch_size and r.batches]
    if not loaders:
        return None
    return int(max(loaders, key=lambda r: r.batches).batch_size)


def headline(report: "Report") -> dict[str, Any]:
    """The overview's numbers: ``avg_step_us, steps_profiled, batch_size, samples_per_s``
    and the GPU metrics (None without device activity)."""
    summary = report.summary
    avg = summary.get("avg_step_us")
    if avg is None:
        steps = report.steps
        active = steps[steps["phase"] == "active"] if len(steps) else steps
        avg = float(active["wall_ms"].mean()) * 1e3 if len(active) else None
    batch = batch_size(report)
    return {
        "avg_step_us": avg,
        "steps_profiled": int(summary.get("steps") or 0),
        "batch_size": batch,
        "samples_per_s": batch / (avg / 1e6) if batch and avg else None,
        "gpu_utilization": summary.get("gpu_utilization"),
        "sm_efficiency": summary.get("sm_efficiency"),
        "achieved_occupancy": summary.get("achieved_occupancy"),
        "tensor_core_share": summary.get("tensor_core_share"),
    }


def ranked_suggestions(report: "Report") -> list["Suggestion"]:
    """Largest expected gain first; "nothing to improve" only when it stands alone."""
    return sorted(report.suggestions, key=lambda s: (s.nothing_to_improve, -s.gain))


def memory_device(report: "Report") -> str | None:
    """The device the memory views describe: the live run's, else the busiest GPU's, else CPU."""
    table = report.memory_steps
    if table.empty:
        return None
    devices = list(dict.fromkeys(table["device"].dropna()))
    if report.run is not None:
        from ..analysis.memory import sampler_device

        wanted = sampler_device(report.run.device)
        if wanted in devices:
            return wanted
    gpus = [d for d in devices if d != "cpu"]
    if gpus:
        peaks = table[table["device"].isin(gpus)].groupby("device")["peak_allocated_bytes"].max()
        return str(peaks.idxmax()) if peaks.notna().any() else gpus[0]
    return devices[0] if devices else None


def growth_warnings(report: "Report") -> list[str]:
    """One sentence per memory series that rises step after step."""
    out = []
    growth = report.memory_growth
    for row in growth[growth["flagged"]].itertuples(index=False):
        what = "Process RSS" if row.measure == "rss" else "Allocated memory"
        where = "every step the cell ran" if row.source == "sampler" else "the profiled steps"
        out.append(
            f"{what} on {row.device} grows by about {fmt_bytes(row.slope_bytes_per_step)} per step "
            f"({fmt_bytes(row.first_bytes)} → {fmt_bytes(row.last_bytes)} over {row.steps} steps, {where}). "
            "Something keeps tensors alive from one step to the next. The usual cause is a loss or an output "
            "kept with its graph (computed with autograd on and never backpropagated, such as a validation "
            "loss outside torch.no_grad()): keep loss.item() or loss.detach() instead."
        )
    return out


def phase_summary(steps: pd.DataFrame) -> pd.DataFrame:
    """Per schedule phase, in the order the run met them: ``phase, steps, mean_wall_ms, mean_dataloader_ms``."""
    if steps.empty:
        return pd.DataFrame(columns=["phase", "steps", "mean_wall_ms", "mean_dataloader_ms"])
    grouped = steps.groupby("phase", sort=False)
    out = pd.DataFrame({
        "steps": grouped.size(),
        "mean_wall_ms": grouped["wall_ms"].mean(),
        "mean_dataloader_ms": grouped["dataloader_ms"].mean(),
    }).reset_index()
    return out
