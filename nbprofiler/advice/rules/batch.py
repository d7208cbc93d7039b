"""The batch-size rules: a larger batch where each step leaves room for one.

On a GPU, a device busy only part of the step with memory to spare (``batch_size_up_rule``); on
CPU, a fixed per-step cost (per-operator overhead, the optimizer) that a larger batch shares out
(``cpu_batch_rule``). Both are estimates with a range, never bounds: how the per-sample cost
scales with the batch is what one batch size cannot show, so each card ends with the
measurement that tells (``batch_size_curve``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...format import fmt_bytes, fmt_ms
from .. import fixed_share
from .. import measures as M
from .. import thresholds as T
from ..loader_code import batch_code
from ..suggestion import Suggestion, Verdict, estimate_words, fired, not_run, passed, severity_for as _severity
from .checks import (CPU_BATCH, DEVICE_MEMORY, GPU_IDLE, NO_ABSOLUTE_MEMORY, NO_DEVICE_TIME, gpu_not_run,
                     why_no_steps, why_not_timed)

if TYPE_CHECKING:
    from .facts import Facts


def batch_size_up_rule(f: Facts) -> list[Verdict]:
    """GPU busy under ``LOW_GPU_UTILIZATION`` of the non-waiting time, with memory to spare."""
    dt, mem, why = f.device_time, f.memory, why_not_timed(f)
    if dt is None or why is not None:
        return gpu_not_run(f, GPU_IDLE, why or NO_DEVICE_TIME)
    if mem is None or mem.activations <= 0:
        return gpu_not_run(f, DEVICE_MEMORY, NO_ABSOLUTE_MEMORY if mem is None else
                            "no activation memory was measured within a step")
    util = dt.utilization_without_data_wait
    if util >= T.LOW_GPU_UTILIZATION:
        return [passed(GPU_IDLE, f"the GPU is busy {util:.0%} of the time it does not wait for data")]
    found = _larger_batch(f, util, mem)
    return ([fired(GPU_IDLE, [found])] if found is not None else
            [passed(DEVICE_MEMORY, f"memory has no room for a batch {T.MIN_BATCH_GROWTH}× as large")])


def _larger_batch(f: Facts, util: float, mem: M.DeviceMemory) -> Suggestion | None:
    """The largest batch that fits ``MEMORY_TARGET_SHARE`` of the device, or None when it
    is not ``MIN_BATCH_GROWTH`` times the current one."""
    room = T.MEMORY_TARGET_SHARE * mem.total - mem.static
    record = f.main_loader
    batch = record.batch_size if record is not None else None
    if batch:
        per_sample = mem.activations / batch
        new_batch = M.largest_power_of_two(room / per_sample)
        factor = new_batch / batch
    else:
        per_sample = None
        factor = float(M.largest_power_of_two(room / mem.activations))
        new_batch = None
    if factor < T.MIN_BATCH_GROWTH:
        return None
    gain = max(1.0, min(1.0 / max(util, 1e-9), factor))
    peak = mem.static + mem.activations * factor
    evidence = {
        "gpu_utilization": round(util, 4),
        "peak_bytes": mem.peak,
        "static_bytes": mem.static,
        "activation_bytes_per_step": mem.activations,
        "device_memory_bytes": mem.total,
        "batch_size": batch,
    }
    facts = [f"GPU busy {util:.0%} of the step once data waiting is taken out ({f.step})",
             f"peak memory {fmt_bytes(mem.peak)} of {fmt_bytes(mem.total)}: {fmt_bytes(mem.static)} held between steps "
             f"(parameters, gradients, optimizer state) and {fmt_bytes(mem.activations)} more within a step"]
    if per_sample is not None:
        evidence["activation_bytes_per_sample"] = per_sample
        facts.append(f"{fmt_bytes(per_sample)} of activations per sample at batch size {batch}")
    code = batch_code(record, new_batch, factor)
    size = f"batch_size={new_batch}" if new_batch else f"a {int(factor)}× larger batch"
    assumes = (f"the host's work per step stays the same and the GPU's per sample too (min(1/{util:.2f} GPU "
               f"utilization, {factor:g}× batch)); up to the batch's {factor:g}× where the GPU's per-sample time "
               "falls with the batch, no gain where the host's work grows with it")
    return Suggestion(
        kind="batch_size",
        title=f"The GPU is busy only {util:.0%} of the step and memory allows {size}",
        severity=_severity(gain),
        evidence=evidence,
        facts=tuple(facts),
        expected_gain=(estimate_words(1.0, gain, factor, "samples/s", assumes)
                       + f"; estimated peak {fmt_bytes(peak)} of {fmt_bytes(mem.total)} "
                       f"({T.MEMORY_TARGET_SHARE:.0%} target). "
                       "Measure it: nbprofiler.batch_size_curve(step_fn, sizes)"),
        gain=gain,
        claim="estimate",
        gain_low=1.0,
        gain_high=float(factor),
        code=code,
        detail=(f"activation memory {fmt_bytes(mem.activations)} per step (peak {fmt_bytes(mem.peak)} minus "
                f"{fmt_bytes(mem.static)} of parameters, gradients and optimizer state)"),
    )


# -- on CPU ----------------------------------------------------------------------------------------
def cpu_batch_rule(f: Facts) -> list[Verdict]:
    """On CPU: fixed per-step cost (per-operator overhead and glue, optimizer) above
    ``CPU_OVERHEAD_SHARE`` of the step (``CPU_SMALL_BATCH_OVERHEAD_SHARE`` at a small
    batch, whose per-sample cost also falls with the batch), which a larger batch shares out.
    Judged over every profiled step (``fixed_share.decide``): no decision where the steps
    disagree about the threshold's side, or where only Python that may run per sample could
    carry the share past it."""
    if f.report.device.kind != "cpu":
        return []
    co = f.cpu
    if co is None:
        return [not_run(CPU_BATCH, why_no_steps(f) or "no operator call on the step thread to measure")]
    batch = f.main_loader.batch_size if f.main_loader is not None else None
    needed = (T.CPU_SMALL_BATCH_OVERHEAD_SHARE if batch and batch <= T.CPU_SMALL_BATCH else T.CPU_OVERHEAD_SHARE)
    loading = _loading_is_not_fixed(f, co, needed)
    if loading is not None:
        return [loading]
    d = fixed_share.decide(co.fixed_by_step, co.loose_by_step, co.compute_by_step, needed)
    at = f" at batch size {batch}" if batch else ""
    if d.outcome == "loose":
        return [not_run(CPU_BATCH, f"fixed per-step cost is {d.fixed.share:.0%} of the step (under {needed:.0%}{at}), "
                                   f"and another {co.loose_share:.0%} is Python outside operators "
                                   f"({fmt_ms(co.loose_us / 1e3)} per step), which a larger batch shares out if it "
                                   "runs once per step and not if it runs per sample (a loop over the samples): "
                                   "one batch size cannot tell; measure it: nbprofiler.batch_size_curve(step_fn, "
                                   "sizes)")]
    if d.outcome == "unsure":
        interval = d.fixed if d.fixed.holds(needed) else d.possible
        what = "fixed per-step cost" if interval is d.fixed else "fixed per-step cost with the Python outside operators"
        return [not_run(CPU_BATCH, f"the {what} reads {interval.low:.0%}–{interval.high:.0%} of the step over "
                                   f"{d.steps} profiled steps, around the {needed:.0%} threshold{at}: about "
                                   f"{d.steps_needed} profiled steps would tell ({_more_steps(f, d.steps_needed)})")]
    found = _cpu_larger_batch(f, co, d) if d.outcome == "fixed" else None
    if found is not None and found.gain_low is not None and found.gain_low < T.SHOWN_MIN_LOW:
        change = found.title.rsplit(": ", 1)[-1]  # "use batch_size=64"
        return [not_run(CPU_BATCH, f"fixed per-step cost is {d.fixed.share:.0%} of the step{at}, but to {change} "
                                   f"is estimated at about {found.gain:.2f}× ({found.gain_low:.2f}–"
                                   f"{found.gain_high:.2f}×), a range that reaches below {T.SHOWN_MIN_LOW:g}×: the "
                                   "per-sample cost may rise with the batch, which one batch size cannot tell; "
                                   "measure it: nbprofiler.batch_size_curve(step_fn, sizes)")]
    if found is not None:
        return [fired(CPU_BATCH, [found])]
    why = (f" (under {needed:.0%}{at})" if d.outcome == "small" else
           f", but the dataset is too small for a batch {T.MIN_BATCH_GROWTH}× as large")
    return [passed(CPU_BATCH, f"fixed per-step cost is {d.fixed.share:.0%} of the step{why}",
                   cpu_fixed_share=round(d.fixed.share, 4))]


def _more_steps(f: Facts, steps: int | None) -> str:
    """How to profile ``steps`` steps: more active steps where the cell ran that many, a longer run otherwise."""
    ran = len(f.report.steps)
    if steps is not None and steps < ran:
        return f"%%torchprofile --active {steps}"
    return f"a run of more than {steps} steps with %%torchprofile --active {steps}"


def _loading_is_not_fixed(f: Facts, co: M.CpuOverhead, needed: float) -> Verdict | None:
    """Passed where the fixed cost is a large share of the step's compute but the step mostly
    waits for data. Loading a batch loads each of its samples, so the wait grows with the
    batch and a larger one shares none of it out (3 ms per sample at batch 8: 93% of the step
    waits, and batch 32 waits 4x as long). Counted against the whole step, the fixed cost may
    be under ``needed``; and where waiting is ``CPU_BATCH_MAX_WAIT_SHARE`` of the step or more,
    a larger batch can give little more than 1/(wait share) even if all compute were shared
    out (only the loader's per-batch overhead shares out too: batch 32 there measured 1.12×
    the samples/s of batch 8), less than the DataLoader fix, which comes first (the batch is
    judged again once the loader keeps up). None where the step barely waits, or the fixed
    cost still counts."""
    wait = f.data_wait
    if wait is None or wait.share <= T.DATALOADER_WAIT_SHARE:
        return None
    whole = co.share * (1.0 - wait.share)
    if whole > needed and wait.share < T.CPU_BATCH_MAX_WAIT_SHARE:
        return None
    return passed(CPU_BATCH, f"fixed per-step cost is {co.share:.0%} of the step's compute, but the step waits "
                             f"{wait.share:.0%} of its time for data, which grows with the batch: only {whole:.0%} of "
                             "the whole step is fixed, so make loading faster first",
                  cpu_fixed_share=round(co.share, 4), data_wait_share=round(wait.share, 4),
                  fixed_share_of_step=round(whole, 4))


def _cpu_larger_batch(f: Facts, co: M.CpuOverhead, d: fixed_share.FixedShareDecision) -> Suggestion | None:
    """A batch ``CPU_BATCH_GROWTH`` times larger (within the dataset), or None when the
    dataset does not hold ``MIN_BATCH_GROWTH`` such batches. The estimate counts only the
    cost known to be fixed; the Python outside operators, which may run per sample, only
    raises the high end."""
    record = f.main_loader
    batch = record.batch_size if record is not None else None
    k = T.CPU_BATCH_GROWTH
    if batch and record is not None and record.dataset_length:
        k = min(k, M.largest_power_of_two(record.dataset_length / batch))
    if k < T.MIN_BATCH_GROWTH:
        return None
    o = d.fixed.share
    low, gain, high = batch_estimate(o, k, d.possible.share)
    evidence = {
        "fixed_share": round(o, 4),
        "fixed_share_range": [round(d.fixed.low, 4), round(d.fixed.high, 4)],
        "loose_python_share": round(co.loose_share, 4),
        "steps": co.steps,
        "step_us": round(co.step_us, 1),
        "operator_us_per_step": round(co.op_us, 1),
        "operator_calls_per_step": round(co.op_calls, 1),
        "fixed_cost_per_call_us": round(co.fixed_cost_us, 2),
        "glue_per_call_us": round(co.glue_us, 2),
        "python_us_per_step": round(co.python_us, 1),
        "optimizer_us_per_step": round(co.optimizer_us, 1),
        "batch_size": batch,
    }
    code = batch_code(record, batch * k if batch else None, k, trains=co.optimizer_us > 0)
    size = f"batch_size={batch * k}" if batch else f"a {k}× larger batch"
    assumes = (f"the fixed cost stays the same and the per-sample cost too ({k}/({o:.2f} + {k}×{1 - o:.2f})); "
               f"the range spans a per-sample cost {T.PER_SAMPLE_COST_RISE_MAX - 1:.0%} higher to "
               f"{T.PER_SAMPLE_COST_FALL_MAX:g}× lower, as it often falls with the batch (one batch size "
               "cannot show how it scales)")
    loose = (f"; {fmt_ms(co.loose_us / 1e3)} more of Python outside operators ({co.loose_share:.0%}) is not counted: "
             "a loop over the samples grows with the batch" if co.loose_share >= 0.005 else "")
    return Suggestion(
        kind="batch_size",
        title=f"Fixed per-step cost is {o:.0%} of each step on CPU: use {size}",
        severity=_severity(gain),
        evidence=evidence,
        facts=(f"fixed cost: {o:.0%} of the profiled steps ({d.fixed.low:.0%}–{d.fixed.high:.0%} over {co.steps}), "
               f"{fmt_ms(co.step_us / 1e3)} per step without data waiting; {f.step}",
               f"{co.op_calls:.0f} operator calls per step at about {co.fixed_cost_us:.1f} µs fixed cost and "
               f"{co.glue_us:.1f} µs of Python between calls each, and {fmt_ms(co.optimizer_us / 1e3)} of optimizer "
               f"per step{loose}",
               f"batch size {batch}" if batch else "batch size unknown (no DataLoader was seen)"),
        expected_gain=(estimate_words(low, gain, high, f"samples/s with a {k}× batch", assumes)
                       + ". Measure it: nbprofiler.batch_size_curve(step_fn, sizes)"),
        gain=gain,
        claim="estimate",
        gain_low=low,
        gain_high=high,
        code=code,
        detail=(f"{co.op_calls:.0f} operator calls per step at about {co.fixed_cost_us + co.glue_us:.1f} µs fixed "
                f"cost each, plus {co.optimizer_us:.0f} µs of optimizer per step, the same for any batch size"),
    )


def batch_estimate(fixed_share: float, k: int, most_fixed: float | None = None) -> tuple[float, float, float]:
    """(low, estimate, high) samples/s gain of a ``k``× batch where ``fixed_share`` of the step
    does not grow with the batch: k/(o + k(1-o)r), r the change of the per-sample cost (1: the
    same, the estimate; from a rise of ``PER_SAMPLE_COST_RISE_MAX`` to a fall of
    ``PER_SAMPLE_COST_FALL_MAX``). Not a bound: the per-sample cost often falls with the batch.
    The high end takes ``most_fixed`` of the step as fixed (Python that may or may not grow
    with the batch counted as fixed), and is at least ``k``: the fixed share is measured from
    a low quantile of the cost per operator call, which undercounts it, and a step that is all
    per-call cost (tiny layers: 100 of Linear(16)+LayerNorm+GELU take the same time at batch 1
    and 64) gains the whole k."""
    def at(o: float, r: float) -> float:
        return k / (o + k * (1.0 - o) * r)
    most = fixed_share if most_fixed is None else max(most_fixed, fixed_share)
    return (at(fixed_share, T.PER_SAMPLE_COST_RISE_MAX), at(fixed_share, 1.0),
            max(float(k), at(most, 1.0 / T.PER_SAMPLE_COST_FALL_MAX)))
