"""The device-memory rules: a peak near the device's limit, and memory that grows step after step.

Neither makes a step faster; each says how close the run is to out-of-memory and what frees
memory: gradient accumulation for a peak near the limit; for growth, the cell line that keeps
tensors with their autograd graph (from the trace's line marks, or the cell's source) and its
edit.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ...analysis.memory import GROWTH_MIN_STEADY_STEPS, GROWTH_MIN_STEPS, relative_devices, series_label
from ...analysis.retention import KEPT_LINE_COLUMNS, LeakLine, fixed_statement, kept_bytes_by_line, leak_line
from ...format import fmt_bytes
from .. import measures as M
from .. import thresholds as T
from ..loader_code import args_from_record, dataloader_call
from ..safe_names import code_name
from ..step_code import accumulation_code, replaced_lines
from ..suggestion import Severity, Suggestion, Verdict, fired, not_run, passed
from .checks import DEVICE_MEMORY, GROWTH, NO_ABSOLUTE_MEMORY, gpu_not_run

if TYPE_CHECKING:
    from .facts import Facts


def memory_near_limit_rule(f: Facts) -> list[Verdict]:
    """Peak allocated memory above ``MEMORY_NEAR_LIMIT_SHARE`` of the device."""
    mem = f.memory
    if mem is None:
        return gpu_not_run(f, DEVICE_MEMORY, NO_ABSOLUTE_MEMORY)
    if mem.peak_share < T.MEMORY_NEAR_LIMIT_SHARE:
        return [passed(DEVICE_MEMORY, f"peak memory is {mem.peak_share:.0%} of the device",
                       peak_memory_share=round(mem.peak_share, 4))]
    return [fired(DEVICE_MEMORY, [_accumulation(f, mem)])]


def _accumulation(f: Facts, mem: M.DeviceMemory) -> Suggestion:
    """Half the micro-batch with gradient accumulation: the same effective batch, less memory."""
    record = f.main_loader
    batch = record.batch_size if record is not None else None
    half = batch // 2 if batch and batch >= 2 else None
    loader = None
    if record is not None and half:
        call = dataloader_call(args_from_record(record), {"batch_size": half},
                               preamble="from torch.utils.data import DataLoader")
        loader = (code_name(record.name) or "", call)
    code, lines = accumulation_code(f.training_step, loader, 2, f.step_not_copied)
    code += ("\n# or keep the batch and recompute activations in backward instead of storing them:\n"
             "# from torch.utils.checkpoint import checkpoint\n"
             "# out = checkpoint(block, x, use_reentrant=False)")
    saved = mem.activations / 2
    return Suggestion(
        kind="memory_near_limit",
        title=f"Peak memory is {mem.peak_share:.0%} of the device: one larger batch from out-of-memory",
        severity="high" if mem.peak_share >= T.MEMORY_CRITICAL_SHARE else "medium",
        evidence={"peak_bytes": mem.peak, "device_memory_bytes": mem.total, "peak_share": round(mem.peak_share, 4),
                  "activation_bytes_per_step": mem.activations, "reserved_peak_bytes": mem.reserved_peak,
                  "batch_size": batch, **lines},
        facts=(f"peak memory {fmt_bytes(mem.peak)}: {mem.peak_share:.0%} of the device's {fmt_bytes(mem.total)}",
               f"{fmt_bytes(mem.activations)} of activations and temporaries within a step, on top of "
               f"{fmt_bytes(mem.static)} held between steps",
               *([f"the allocator reserved up to {fmt_bytes(mem.reserved_peak)}"] if mem.reserved_peak else [])),
        expected_gain=(f"no speed-up: half the micro-batch with 2 accumulation steps frees about {fmt_bytes(saved)} "
                       f"of the {fmt_bytes(mem.activations)} of activations, for the same effective batch"),
        gain=1.0,
        code=code,
        detail="a longer sequence or a larger batch than the profiled ones would not fit" + replaced_lines(lines),
    )


# -- memory growth ---------------------------------------------------------------------------------
def memory_growth_rule(f: Facts) -> list[Verdict]:
    """Memory that rises step after step (``report.memory_growth`` flags it). Each series
    too short to judge is a check of its own that could not run."""
    growth = f.report.memory_growth
    if growth.empty:
        return [not_run(GROWTH, "no memory figures were recorded")]
    if growth["flagged"].any():
        return [fired(GROWTH, [_kept_tensors(f, growth)])]
    judged, unjudged = growth[growth["judged"]], growth[~growth["judged"]]
    what = "; ".join(f"{series_label(r.source, r.measure)} on {r.device} over {r.steps} steps"
                     for r in judged.itertuples(index=False))
    found = [passed(GROWTH, f"memory does not grow from step to step ({what})")] if len(judged) else []
    return found + [not_run(f"{GROWTH} of {series_label(r.source, r.measure)} on {r.device}",
                            f"{r.steps} step(s) to judge, it needs {_growth_steps_needed(r.source, r.measure)}")
                    for r in unjudged.itertuples(index=False)]


def _growth_steps_needed(source: str, measure: str) -> int:
    """Steps a series needs to be judged: fewer for the trace's exact allocated bytes."""
    return GROWTH_MIN_STEADY_STEPS if (source, measure) == ("trace", "allocated") else GROWTH_MIN_STEPS


def _kept_tensors(f: Facts, growth: pd.DataFrame) -> Suggestion:
    """The steepest flagged series, the usual cause (tensors kept with their graph) and its fixes."""
    flagged = growth[growth["flagged"]].sort_values(["steps", "slope_bytes_per_step"], ascending=False, kind="stable")
    row = flagged.iloc[0]
    slope = float(row["slope_bytes_per_step"])
    limit = f.report.device.total_memory_bytes
    relative = relative_devices(f.report.memory_steps)
    evidence = {"device": str(row["device"]), "source": str(row["source"]), "measure": str(row["measure"]),
                "steps": int(row["steps"]), "first_bytes": float(row["first_bytes"]),
                "last_bytes": float(row["last_bytes"]), "slope_bytes_per_step": slope,
                "rising_share": round(float(row["rising_share"]), 3)}
    facts = [growth_fact(r, relative) for r in flagged.itertuples(index=False)]
    text = "no speed-up: memory stops growing, and the run cannot fail with out-of-memory later"
    severity: Severity = "medium"
    absolute = flagged[(flagged["source"] == "sampler") | ~flagged["device"].isin(relative)]
    if limit and len(absolute):
        level = absolute.iloc[0]
        left = max(int((T.MEMORY_NEAR_LIMIT_SHARE * limit - float(level["last_bytes"]))
                       / float(level["slope_bytes_per_step"])), 0)
        evidence["steps_to_near_limit"] = left
        text += (f" (at this rate {T.MEMORY_NEAR_LIMIT_SHARE:.0%} of {fmt_bytes(limit)} is reached in about "
                 f"{left:,} steps)")
        if left < 10_000:
            severity = "high"
    leak = _leak_line(f)
    evidence.update(_leak_evidence(leak))
    held, held_fact = _largest_held(f, str(row["device"]))
    evidence.update(held)
    facts += [held_fact] if held_fact else []
    code, detail = _leak_fix(f, leak)
    where = "tensors from earlier steps are kept alive" if leak is None else \
        f"cell line {leak.line} keeps tensors from every step alive"
    return Suggestion(
        kind="memory_growth",
        title=f"Memory grows {fmt_bytes(slope)} per step on {row['device']}: {where}",
        severity=severity,
        evidence=evidence,
        facts=tuple(facts if leak is None else [_leak_fact(leak), *facts]),
        expected_gain=text,
        gain=1.0,
        code=code,
        detail=detail,
    )


def _leak_line(f: Facts) -> LeakLine | None:
    """The cell line that keeps the tensors: from the trace's line marks (``--stack``) where
    the run has them, confirmed or overruled by them, else from the cell's source."""
    source, marks = f.report.cell_source, f.report.line_marks
    if not source:
        return None
    by_line = pd.DataFrame(columns=KEPT_LINE_COLUMNS)
    if marks is not None and f.report.raw_trace is not None:
        by_line = kept_bytes_by_line(f.report.table, f.report.trace_steps, marks)
    return leak_line(source, by_line)


def _largest_held(f: Facts, device: str) -> tuple[dict[str, object], str | None]:
    """The line and operator that made the most bytes still held when recording stopped, of the
    allocations made in the profiled steps on ``device`` (``report.allocations``), as evidence
    and in words; ({}, None) without them."""
    if f.report.raw_trace is None:
        return {}, None
    table = f.report.allocations
    held = table[table["freed_us"].isna() & (table["step"] >= 0) & (table["device"].astype(str) == device)]
    if held.empty:
        return {}, None
    groups = held.assign(line=held["line"].fillna(0)).groupby(["line", "operator"], observed=True).agg(
        held_bytes=("bytes", "sum"), held_allocations=("bytes", "size"), held_steps=("step", "nunique"))
    top = groups.sort_values("held_bytes", ascending=False, kind="stable").reset_index().iloc[0]
    line, operator, size = int(top["line"]) or None, str(top["operator"]), float(top["held_bytes"])
    count, steps = int(top["held_allocations"]), int(top["held_steps"])
    where = "" if line is None else f" on cell line {line}"
    fact = (f"the largest allocations still held when recording stopped were made by `{operator}`{where}: "
            f"{count} of them in {steps} profiled step(s), {fmt_bytes(size)}, never freed")
    return {"held_line": line, "held_operator": operator, "held_bytes": size, "held_allocations": count,
            "held_steps": steps}, fact


def _leak_evidence(leak: LeakLine | None) -> dict[str, object]:
    if leak is None:
        return {}
    return {"line": leak.line, "end_line": leak.line + leak.text.count("\n"), "line_source": leak.text,
            "line_found_in": "source" if leak.steps is None else "trace", "kept_bytes": leak.kept_bytes}


def _leak_fact(leak: LeakLine) -> str:
    """The line in words, with what shows it keeps the tensors."""
    head = f"cell line {leak.line}: `{leak.text.strip()}`"
    keeps = "" if leak.kept is None else \
        f" {leak.kept.how} `{leak.kept.holder}` a value that carries its autograd graph (`{leak.kept.value}`)"
    if leak.steps is None:
        return f"{head}{keeps}; found in the cell's source (profile with --stack to confirm it from the trace)"
    made = "the line" if leak.made_line in (None, leak.line) else \
        f"line {leak.made_line}, whose result it keeps,"
    return (f"{head}{keeps}; the trace confirms it: {made} made {fmt_bytes(leak.kept_bytes or 0)} in "
            f"{leak.steps} profiled steps that was never freed")


def _leak_fix(f: Facts, leak: LeakLine | None) -> tuple[str | None, str]:
    """The edit for the line, in the cell's names (to paste in place of the statement), and why it
    works; with no statement to edit, no code (generic names would not run) and the fixes in words."""
    source = f.report.cell_source
    if leak is None or leak.kept is None or not source or not f.may_copy(leak.kept.line, leak.kept.end_line):
        where = "on this line" if leak is not None else "in the loop"
        return None, (f"tensors made {where} outlive their step; the usual cause is a tensor that carries its "
                      "autograd graph, kept across steps: a running total (`total += loss`), a list of outputs, "
                      "state carried to the next step (an RNN's hidden state). Keep `.item()` (a number) or "
                      "`.detach()` (a tensor without its history) of what is kept, and compute what needs no "
                      "gradient under `torch.no_grad()`" + ("" if leak is not None else
                                                            "; profile with --stack to find the line"))
    kept = leak.kept
    code = fixed_statement(source, kept, on_device=f.on_gpu)
    lines = f"line {kept.line}" if kept.end_line == kept.line else f"lines {kept.line}-{kept.end_line}"
    if kept.validation and kept.alone:
        why = (f"`{kept.value}` is computed on validation data with autograd on, so each one keeps its graph "
               "(every activation of that forward pass); under `torch.no_grad()` no graph is built")
    elif ".item()" in code:
        why = (f"`.item()` keeps the number, not the graph behind it (use `.detach()` if the rest of the cell "
               f"needs `{kept.holder}` to hold tensors)")
    else:
        why = "`.detach()` keeps the tensor without the graph that made it"
    return code, f"{why}. The code replaces {lines} of the cell, as indented there"


def growth_fact(row: Any, relative: set[str]) -> str:
    """One flagged (or judged) growth series in words, with its levels and how it was judged."""
    since = " since recording began" if row.source == "trace" and row.device in relative else ""
    where = "profiled steps" if row.source == "trace" else "steps the cell ran"
    if row.measure == "rss":
        where = "steps the profiler left alone"
    rises = round(row.rising_share * (row.steps - 1)) if row.steps > 1 else 0
    return (f"{series_label(row.source, row.measure)} on {row.device}: {fmt_bytes(row.first_bytes)} → "
            f"{fmt_bytes(row.last_bytes)}{since} over {row.steps} {where}, about "
            f"{fmt_bytes(row.slope_bytes_per_step)} per step ({rises} rises in {max(row.steps - 1, 0)} changes)")
