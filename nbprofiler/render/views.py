"""What every renderer shows, chosen once: text, HTML, payload and widget agree.

The renderers differ in form only. Which figure is the headline, which
breakdown a run gets (device categories on GPU, host phases on CPU), which
operator rows a report shows (``--sort``, ``--top``), the cell's lines, which
device the memory views describe and in what order suggestions come: all of
it is decided here, from the Report's tables. These are builders of the view
model (``view_model``), with their siblings ``hardware`` (the Hardware view),
``charts`` (each chart's spec) and ``timeline_data`` (the Timeline's payload):
the view model makes each view once per report, the renderers read it there,
and none decides again what was decided.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis.breakdown import CATEGORIES
from ..analysis.phases import PHASES
from ..format import fmt_bytes, fmt_si

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


def operator_view(report: "Report", top: int | None = None) -> pd.DataFrame:
    """The operator rows a renderer shows: sorted by ``--sort``, cut to ``--top`` (or ``top``)."""
    ops = report.operators
    limit = 15 if top is None else top
    options = report.run_options
    if options is not None:
        limit = options.top if top is None else top
        sort = options.sort
        if sort:
            ops = ops.sort_values(sort, ascending=sort == "name", kind="stable")
    return ops.head(limit)


def line_rows(report: "Report") -> pd.DataFrame:
    """Every line of the cell, with its time (0 where none): the source as the user wrote it."""
    source = report.cell_source or ""
    text = source.splitlines()
    timed = report.lines.set_index("line")
    host = timed["host_us"].reindex(range(1, len(text) + 1), fill_value=0.0).to_numpy()
    device = timed["device_us"].reindex(range(1, len(text) + 1), fill_value=0.0).to_numpy()
    return pd.DataFrame({"line": range(1, len(text) + 1), "source": text, "host_us": host, "device_us": device})


def breakdown_parts(report: "Report", kind: str | None = None) -> tuple[str, pd.DataFrame]:
    """``("device", …)`` per-step device categories when the run has device activity,
    else ``("phases", …)`` per-step host phases: ``step`` plus one µs column per part.
    ``kind`` asks for one of the two (a comparison shows both runs the same way)."""
    if kind is None:
        kind = "device" if report.has_device_activity else "phases"
    if kind == "device":
        return "device", report.breakdown[["step", *CATEGORIES, "other"]]
    return "phases", report.phases[["step", *PHASES]]


def batch_size(report: "Report") -> int | None:
    """The batch size of the DataLoader that fed the most batches, when a live run saw one."""
    fed = [(r.batches, r.batch_size) for r in report.loaders or () if r.batch_size and r.batches]
    if not fed:
        return None
    return int(max(fed, key=lambda batches_size: batches_size[0])[1])


def headline(report: "Report") -> dict[str, Any]:
    """The overview's numbers: ``avg_step_us, steps_profiled, batch_size, batches_per_step,
    samples_per_step, samples_per_s`` and the GPU metrics (None without device activity).
    The step time is ``report.step_window``'s, the one every suggestion quotes too."""
    summary = report.summary
    return {
        "avg_step_us": summary.get("avg_step_us"),
        "steps_profiled": int(summary.get("steps") or 0),
        "step_label": report.step_window.label,
        "batch_size": batch_size(report),
        "batches_per_step": summary.get("batches_per_step"),
        "samples_per_step": summary.get("samples_per_step"),
        "samples_per_s": summary.get("samples_per_s"),
        "gpu_utilization": summary.get("gpu_utilization"),
        "sm_efficiency": summary.get("sm_efficiency"),
        "achieved_occupancy": summary.get("achieved_occupancy"),
        "tensor_core_share": summary.get("tensor_core_share"),
        "mfu": summary.get("mfu"),
        "achieved_flops_per_s": summary.get("achieved_flops_per_s"),
        "mfu_dtype": summary.get("mfu_dtype"),
        "mfu_peak_is_estimate": bool(summary.get("mfu_peak_is_estimate")),
    }


def mfu_detail(h: Mapping[str, Any]) -> str | None:
    """What the MFU of ``headline`` is over: "4.38 TFLOP/s of the fp32 peak" (the peak estimated
    from the CPU's cores, vectors and clock on a CPU run); None where MFU is unknown."""
    if h["mfu"] is None or h["achieved_flops_per_s"] is None:
        return None
    estimated = "estimated " if h["mfu_peak_is_estimate"] else ""
    return f"{fmt_si(float(h['achieved_flops_per_s']), 'FLOP/s')} of the {estimated}{h['mfu_dtype']} peak"


def throughput_detail(h: Mapping[str, Any]) -> str | None:
    """What the samples/s of ``headline`` counts: "batch size 16", or "64 samples per step:
    4 batches of 16" when steps took several batches; None when samples/s is unknown."""
    per_step = h["samples_per_step"]
    if h["samples_per_s"] is None or per_step is None:
        return None
    batches, size = h["batches_per_step"], h["batch_size"]
    if batches is None:  # counted by the loop itself: nbprofiler.step(samples=...)
        return f"{per_step:,.4g} samples per step"
    if batches is not None and abs(batches - 1) < 1e-9 and size:
        return f"batch size {size}"
    of = f" of {size}" if size else ""
    return f"{per_step:,.4g} samples per step: {batches:,.3g} batch{'es' if batches != 1 else ''}{of}"


def ranked_suggestions(report: "Report") -> list["Suggestion"]:
    """Largest expected gain first; "nothing to improve" only when it stands alone."""
    return sorted(report.suggestions, key=lambda s: (s.nothing_to_improve, -s.gain))


def memory_device(report: "Report") -> str | None:
    """The device the memory views describe: the live run's, else the busiest GPU's, else CPU."""
    table = report.memory_steps
    if table.empty:
        return None
    devices = list(dict.fromkeys(table["device"].dropna()))
    wanted = report.sampler_device  # the live run's; None for a trace file
    if wanted is not None and wanted in devices:
        return wanted
    gpus = [d for d in devices if d != "cpu"]
    if gpus:
        peaks = table[table["device"].isin(gpus)].groupby("device")["peak_allocated_bytes"].max()
        return str(peaks.idxmax()) if peaks.notna().any() else gpus[0]
    return devices[0] if devices else None


def memory_figures(report: "Report", device: str) -> list[str]:
    """The headline memory figures of ``device``, each named for what it is: "peak allocated
    1.2 GiB", or on the CPU, whose traced levels count only from the start of recording, the
    largest rise of a step's peak over the step's start, which identical runs repeat. The first
    profiled step is left out of it when there are others: torch's counter misses the frees of
    tensors made before recording (last step's gradients, say) but not their replacements."""
    steps = report.memory_steps
    steps = steps[steps["device"] == device]
    if "mem_peak_bytes" in steps and steps["mem_peak_bytes"].notna().any():
        return [f"peak allocated {fmt_bytes(float(steps['mem_peak_bytes'].max()))}"]
    out = []
    traced = steps[steps["peak_allocated_bytes"].notna()]
    if len(traced) and traced["reconstructed"].any():
        rises = traced.sort_values("step")["peak_rise_bytes"].to_numpy()
        which = "a step after the first profiled one" if len(rises) > 1 else "the profiled step"
        out.append(f"largest rise within {which}, over its starting level (traced) "
                   f"{fmt_bytes(float(rises[1:].max() if len(rises) > 1 else rises[0]))}")
    elif len(traced):
        out.append(f"peak allocated (traced) {fmt_bytes(float(traced['peak_allocated_bytes'].max()))}")
    for col, label in (("mem_reserved_bytes", "reserved"), ("rss_bytes", "process RSS")):
        if col in steps and steps[col].notna().any():
            out.append(f"{label} {fmt_bytes(float(steps[col].max()))}")
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


def lines_absent(report: "Report") -> str:
    """Why a report has no cell lines, and how to get them (plain text: every renderer says it)."""
    options = report.run_options
    if options is None:
        return "A trace file holds no cell source: line attribution needs a live %%torchprofile run."
    if not options.stack:
        return "Run the cell with %%torchprofile --stack to see which of its lines cost the time."
    if report.line_marks is None:
        return "The time per line was not recorded for this run (see the notes above)."
    return "No torch op ran from this cell's lines during the profiled steps."


def modules_absent(report: "Report") -> str:
    """Why a report has no module tree, and how to get one (plain text: every renderer says it)."""
    options = report.run_options
    if options is not None and (options.modules or options.stack):
        return ("No nn.Module ran during the profiled steps outside torch.compile'd code (modules run inside "
                "compiled code are not recorded).")
    return "Run the cell with %%torchprofile --modules to see the time per nn.Module."
