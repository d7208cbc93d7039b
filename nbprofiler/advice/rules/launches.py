"""The torch.compile rules: a GPU that waits on the host's launches, and CPU steps of many small operators.

Both propose compiling: on a GPU that the host (Python, dispatch, launch calls) cannot keep
busy, fused kernels or CUDA graphs; on CPU, in a step that does not train, the model the cell
calls, where what compiled code removes from its calls pays. Each is an estimate with its
range, and says what compiling costs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...analysis.model_time import ModelTime, model_times
from ...format import fmt_ms, fmt_us
from .. import measures as M
from .. import thresholds as T
from ..cell_names import COMPILE_COST, compile_code, model_code, model_name, module_name
from ..compile_gain import compile_gain
from ..suggestion import Suggestion, Verdict, amdahl, estimate_words, fired, not_run, passed, severity_for as _severity
from .checks import GPU_IDLE, NO_DEVICE_TIME, SMALL_OPS, gpu_not_run, why_no_steps, why_not_timed

if TYPE_CHECKING:
    from .facts import Facts


def launch_bound_rule(f: Facts) -> list[Verdict]:
    """GPU idle waiting on the host for more than ``LAUNCH_IDLE_SHARE`` of the step, with
    data waiting and syncs taken out (those have their own suggestions)."""
    dt, why = f.device_time, why_not_timed(f)
    if dt is None or why is not None:
        return gpu_not_run(f, GPU_IDLE, why or NO_DEVICE_TIME)
    idle = max(dt.host_wait_us - dt.dataloader_us - M.sync_idle_us(f.syncs), 0.0)
    share = idle / dt.span_us
    if share <= T.LAUNCH_IDLE_SHARE:
        return [passed(GPU_IDLE, f"the GPU is busy {dt.utilization:.0%} of the step and waits on the host under "
                                 f"{T.LAUNCH_IDLE_SHARE:.0%} of it", gpu_utilization=round(dt.utilization, 4))]
    return [fired(GPU_IDLE, [_fuse_kernels(f, dt, idle, share)])]


def _fuse_kernels(f: Facts, dt: M.DeviceTime, idle: float, share: float) -> Suggestion:
    """torch.compile, blamed on tiny kernels or on slow host code, whichever the kernels show;
    with CUDA graphs (``mode="reduce-overhead"``) where most launches run shorter on the GPU
    than their launch call takes on the host: then launches, not kernels, set the pace."""
    mix = f.kernel_mix
    tiny = mix.tiny_share if mix is not None else 0.0
    low, gain, high = compile_estimate(share)
    many_tiny = tiny >= T.TINY_KERNEL_SHARE
    launches = f.report.launch_summary()
    shorter = launches.gpu_shorter_than_cpu / launches.launches if launches.launches else 0.0
    graphs = shorter >= T.TINY_KERNEL_SHARE
    name = model_name(f.report.cell_source)
    if graphs:
        code = (model_code(name, 'torch.compile({}, mode="reduce-overhead")',
                           "CUDA graphs: the step's kernels replayed with one launch; " + COMPILE_COST) + "\n"
                "# shapes that change from step to step (a last smaller batch, varying lengths) re-record the "
                "graphs:\n# there, plain torch.compile(...) fuses kernels without them")
    else:
        code = (compile_code(name, "fuses small kernels: fewer launches; " + COMPILE_COST) + "\n"
                "# static shapes: replay the whole step as CUDA graphs, one launch per graph:\n"
                f"# {name or 'model'} = torch.compile({name or 'model'}, mode=\"reduce-overhead\")")
    why = (f"{tiny:.0%} of kernels run under {T.TINY_KERNEL_US:g} µs, shorter than a launch takes"
           if many_tiny else "the host (Python, operator dispatch) is slower than the GPU it feeds")
    if graphs:
        why += ("; most launches run shorter on the GPU than their launch call on the host, so CUDA graphs, "
                "which launch a whole step's kernels at once, remove the most")
    launch_facts = [f"{launches.gpu_shorter_than_cpu:,} of {launches.launches:,} launches in the trace ran shorter "
                    f"on the GPU than their launch call on the host ({shorter:.0%})"] if launches.launches else []
    return Suggestion(
        kind="launch_bound",
        title=(f"The GPU waits on the host {share:.0%} of the step: "
               + ("launch it as CUDA graphs with torch.compile" if graphs else "fuse kernels with torch.compile")),
        severity=_severity(gain),
        evidence={"host_wait_share": round(share, 4), "gpu_utilization": round(dt.utilization, 4),
                  "tiny_kernel_share": round(tiny, 4),
                  "kernels_per_step": round(mix.kernels / dt.steps, 1) if mix is not None else None,
                  "shorter_than_launch_share": round(shorter, 4), "cuda_graphs": graphs},
        facts=(f"the GPU waits on the host {fmt_ms(idle / dt.steps / 1e3)} per step: {share:.0%} of the step "
               f"({f.step}), not counting data waiting and syncs",
               f"GPU busy {dt.utilization:.0%} of the step",
               *([f"{mix.kernels / dt.steps:,.0f} kernels per step, {tiny:.0%} of them under {T.TINY_KERNEL_US:g} µs"]
                 if mix is not None else []),
               *launch_facts),
        expected_gain=estimate_words(
            low, gain, high, "step time",
            f"compiled code halves the host's time the GPU waits on ({share:.0%} of the step); the high end removes "
            f"all of it and runs the GPU's work up to {T.COMPILE_FUSION_SPEEDUP_MAX:g}× faster (fused kernels), the "
            f"low end is no gain (graph breaks, recompiles). {COMPILE_COST[0].upper()}{COMPILE_COST[1:]}"),
        gain=gain,
        claim="estimate",
        gain_low=low,
        gain_high=high,
        code=code,
        detail=why,
    )


def compile_estimate(share: float) -> tuple[float, float, float]:
    """(low, estimate, high) step speed-up of torch.compile where the GPU waits on the host for
    ``share`` of the step: the estimate halves the wait (``COMPILE_FIXED_CUT_TYPICAL``), the high
    end removes it and runs the GPU's work up to ``COMPILE_FUSION_SPEEDUP_MAX`` faster, the low
    end is no gain."""
    return 1.0, amdahl(share, T.COMPILE_FIXED_CUT_TYPICAL), T.COMPILE_FUSION_SPEEDUP_MAX * amdahl(share)


# -- many small ops on CPU -------------------------------------------------------------------------
def compile_rule(f: Facts) -> list[Verdict]:
    """On CPU, in a step that does not train: torch.compile of the ``nn.Module`` the cell calls, where
    what compiled code removes from the time inside its calls (``compile_gain``) makes the step at least
    ``COMPILE_MIN_GAIN`` faster, and at the low end no slower than ``SHOWN_MIN_LOW``."""
    if f.report.device.kind != "cpu":
        return []
    co = f.cpu
    if co is None:
        return [not_run(SMALL_OPS, why_no_steps(f) or "no operator call on the step thread to measure")]
    if co.optimizer_us > 0:
        return [passed(SMALL_OPS, "the step trains (an optimizer steps in it): compiled, a small Transformer's "
                                  "training step of small operators ran no faster (0.93×), so torch.compile is "
                                  "proposed for inference steps only")]
    models = model_times(f.report.table, f.report.operator_tree, f.report.trace_steps)
    if not models:
        return [not_run(SMALL_OPS, "no call of an nn.Module that the cell calls by name was timed in the steps "
                                   "(a live run times each one that exists when the cell starts)")]
    m = models[0]
    low, gain, high = compile_gain(m, co.fixed_cost_us)
    seen = (f"the model's calls are {m.share:.0%} of the step; compiled, about {gain:.2f}× "
            f"({low:.2f}–{high:.2f}×) on the whole step")
    evidence = {"model_share": round(m.share, 4), "compile_gain": round(gain, 3), "compile_gain_low": round(low, 3),
                "compile_gain_high": round(high, 3)}
    if gain < T.COMPILE_MIN_GAIN:
        return [passed(SMALL_OPS, f"{seen}: under {T.COMPILE_MIN_GAIN:g}×, not worth a compile", **evidence)]
    if low < T.SHOWN_MIN_LOW:
        return [passed(SMALL_OPS, f"{seen}, but its low end is a slowdown: measure it, timing a few passes of the "
                                  "loop with the model compiled against as it is, leaving out the first pass (it "
                                  "compiles)", **evidence)]
    return [fired(SMALL_OPS, [_compile_small_ops(f, co, models, (low, gain, high))])]


def _compile_small_ops(f: Facts, co: M.CpuOverhead, models: list[ModelTime],
                       estimate: tuple[float, float, float]) -> Suggestion:
    """torch.compile of the model with the most time (``models[0]``), in the cell's name for it where
    the run recorded that name as a module's; otherwise the change in words."""
    m, (low, gain, high) = models[0], estimate
    name = module_name(f.report.cell_source, f.report.cell_modules, {t.name: float(t.model_us.sum()) for t in models})
    model_us, step_us, python_us, light_us, light_calls, heavy_us, heavy_calls = (float(a.mean()) for a in (
        m.model_us, m.step_us, m.python_us, m.light_us, m.light_calls, m.heavy_us, m.heavy_calls))
    per_call = light_us / max(light_calls, 1.0)
    what = name or "the nn.Module your loop calls"
    return Suggestion(
        kind="compile",
        title=f"Compile {what} with torch.compile: its calls are {m.share:.0%} of the step on CPU",
        severity=_severity(gain),
        evidence={"model": name, "model_share": round(m.share, 4), "model_us_per_step": round(model_us, 1),
                  "step_us": round(step_us, 1), "python_us_per_step": round(python_us, 1),
                  "heavy_op_us_per_step": round(heavy_us, 1), "light_op_us_per_step": round(light_us, 1),
                  "light_op_calls_per_step": round(light_calls, 1),
                  "fixed_cost_per_call_us": round(co.fixed_cost_us, 2)},
        facts=(f"inside the model's calls: {fmt_ms(model_us / 1e3)} of the step's {fmt_ms(step_us / 1e3)} "
               f"({m.share:.0%}; {f.step}), the rest of the step is not compiled",
               f"of it: {fmt_ms(python_us / 1e3)} Python (forward, submodule calls), {light_calls:.0f} elementwise, "
               f"norm and other light operator calls taking {fmt_ms(light_us / 1e3)} ({fmt_us(per_call)} each, about "
               f"{co.fixed_cost_us:.1f} µs of it fixed cost per call), {heavy_calls:.0f} matmul/conv calls "
               f"taking {fmt_ms(heavy_us / 1e3)}"),
        expected_gain=estimate_words(
            low, gain, high, "step time after compiling",
            f"compiled code removes the model's Python and its light operators' fixed cost, and fuses their work "
            f"into loops that pass over memory once (half of it left; the low end: none saved, the high end: a "
            f"quarter left), runs convolutions with weights packed once, in channels-last (a quarter faster; the "
            f"low end: as they are), and leaves matmuls as they are (the low end: 10% slower). "
            f"{COMPILE_COST[0].upper()}{COMPILE_COST[1:]}, so it pays off over many steps"),
        gain=gain,
        claim="estimate",
        gain_low=low,
        gain_high=high,
        code=(f"{name} = torch.compile({name})  # {COMPILE_COST}" if name is not None else
              f"# compile the nn.Module your loop calls, once, before the loop: <name> = torch.compile(<name>)\n"
              f"# ({COMPILE_COST})"),
        detail=("each operator call pays dispatch, allocation and Python around it whatever its size; compiled "
                "code fuses the small ops into a few loops and calls them at once; only the model is compiled, "
                "so preprocessing outside it gains nothing"),
    )
