"""The kernel rules: the GPU's matmul and convolution kernels, and the settings that run them faster.

Autocast to 16-bit, TF32 and FP8, each only on a GPU whose compute capability has the tensor
cores for it, and cuDNN's settings for convolution nets (``cudnn.benchmark``, channels_last).
They read the kernel mix and the GPU's architecture, so they share the reasons they could not
run; the number-format suggestions themselves are built in ``advice.precision``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...analysis.large_matmuls import large_matmuls
from .. import measures as M
from .. import precision
from .. import thresholds as T
from ..cell_names import model_code, model_name
from ..suggestion import Suggestion, Verdict, estimate_words, fired, not_run, passed, severity_for as _severity
from .checks import FP8, KERNELS, NO_KERNELS, TF32, gpu_not_run, why_no_architecture, why_no_kernels

if TYPE_CHECKING:
    from .facts import Facts


def amp_rule(f: Facts) -> list[Verdict]:
    """Matmul/conv kernels on fp32 data, on the FMA units or (from compute capability 8.0) on
    TF32 tensor cores, for at least ``AMP_ELIGIBLE_MIN_SHARE`` of the step, on a GPU with tensor
    cores (7.0 and later); a GPU without them has nothing to check."""
    cc, mix, dt = f.report.device.compute_capability, f.kernel_mix, f.device_time
    why = why_no_architecture(f)
    if why is not None or cc is None or mix is None or dt is None:
        return gpu_not_run(f, KERNELS, why or NO_KERNELS)
    if cc < T.TENSOR_CORE_MIN_CC:
        return []  # no tensor cores to use: nothing to check
    fp32 = mix.fp32_share(tf32=cc >= T.BF16_MIN_CC) * dt.utilization
    if fp32 < T.AMP_ELIGIBLE_MIN_SHARE:
        half = f"; {mix.half_share:.0%} of kernel time runs on 16- or 8-bit floats" if mix.half_share else ""
        return [passed(KERNELS, f"matmul/conv kernels on fp32 data take {fp32:.0%} of the step (under "
                                f"{T.AMP_ELIGIBLE_MIN_SHARE:.0%}){half}", fp32_matmul_conv_step_share=round(fp32, 4))]
    return [fired(KERNELS, [precision.half_precision(cc, mix, dt, f.report.device_spec, f.step, f.training_step,
                                                     f.step_not_copied)])]


def tf32_rule(f: Facts) -> list[Verdict]:
    """fp32 matmul kernels on the FMA units for at least ``AMP_ELIGIBLE_MIN_SHARE`` of the step
    on a GPU with TF32 tensor cores (compute capability 8.0 and later)."""
    cc, mix, dt = f.report.device.compute_capability, f.kernel_mix, f.device_time
    if cc is not None and cc < T.TF32_MIN_CC:
        return []  # no TF32 to use
    why = why_no_architecture(f)
    if why is not None or cc is None or mix is None or dt is None:
        return gpu_not_run(f, TF32, why or NO_KERNELS)
    share = mix.fp32_matmul_simt_share * dt.utilization
    if share < T.AMP_ELIGIBLE_MIN_SHARE:
        return [passed(TF32, f"fp32 matmul kernels on the fp32 units take {share:.1%} of the step (under "
                             f"{T.AMP_ELIGIBLE_MIN_SHARE:.0%})", fp32_matmul_unit_step_share=round(share, 4))]
    return [fired(TF32, [precision.tf32(cc, mix, dt, f.report.device_spec, f.step)])]


def fp8_rule(f: Facts) -> list[Verdict]:
    """Linear-layer matmuls on 16-bit data with M, K and N all at least ``FP8_MIN_SIZE``, for at
    least ``AMP_ELIGIBLE_MIN_SHARE`` of the step, on a GPU with FP8 tensor cores (compute
    capability 8.9 and later)."""
    cc, dt = f.report.device.compute_capability, f.device_time
    if cc is not None and cc < T.FP8_MIN_CC:
        return []  # no FP8 to use
    why = why_no_architecture(f)
    if why is not None or cc is None or dt is None:
        return gpu_not_run(f, FP8, why or NO_KERNELS)
    calls = f.report.flops
    if calls.empty or not calls["input_shapes"].notna().any():
        return [not_run(FP8, "the trace has no input shapes to size the matmuls: profile with --shapes")]
    window = f.report.step_window
    large = large_matmuls(calls, window.of(f.report.stretched_steps), T.FP8_MIN_SIZE)
    large = large[large["dtype"].isin(("bf16", "fp16"))]
    share = float(large["device_us"].sum()) / max(dt.span_us, 1e-9)
    if share < T.AMP_ELIGIBLE_MIN_SHARE:
        return [passed(FP8, f"16-bit Linear-layer matmuls of at least {T.FP8_MIN_SIZE:,} on each side take "
                            f"{share:.0%} of the step (under {T.AMP_ELIGIBLE_MIN_SHARE:.0%})",
                       large_matmul_step_share=round(share, 4))]
    model = model_name(f.report.cell_source)
    return [fired(FP8, [precision.fp8(cc, large, dt, f.report.device_spec, f.step, model)])]


# -- conv nets on GPU ------------------------------------------------------------------------------
def conv_rule(f: Facts) -> list[Verdict]:
    """Convolutions at ``CONV_MIN_SHARE`` of kernel time or more: cudnn.benchmark, channels_last."""
    why, mix, dt = why_no_kernels(f), f.kernel_mix, f.device_time
    if why is not None or mix is None or dt is None:
        return gpu_not_run(f, KERNELS, why or NO_KERNELS)
    conv = mix.conv_share * dt.utilization
    if conv < T.CONV_MIN_SHARE:
        return [passed(KERNELS, f"convolutions take {conv:.0%} of the step")]
    name = model_name(f.report.cell_source)
    return [fired(KERNELS, [_cudnn_settings(mix, dt, conv, f.step, name)])]


def _cudnn_settings(mix: M.KernelMix, dt: M.DeviceTime, conv: float, step: str, name: str | None) -> Suggestion:
    """cudnn.benchmark and channels_last, estimated from the conv kernels and layout conversions;
    ``name``: the cell's name for its model (a guarded ``model`` when the cell does not show it)."""
    transpose = mix.layout_transpose_share * dt.utilization

    def at(speedup: float) -> float:
        return 1.0 / max(1.0 - conv * (1.0 - 1.0 / speedup) - transpose, 1e-9)
    gain, high = at(T.CONV_TUNING_SPEEDUP_TYPICAL), at(T.CONV_TUNING_SPEEDUP_MAX)
    code = ("torch.backends.cudnn.benchmark = True  "
            "# fixed input shapes: cuDNN tries its algorithms once, keeps the best\n"
            + model_code(name, "{}.to(memory_format=torch.channels_last)", "NHWC, the tensor cores' native layout")
            + "\n"
            "# and in the loop, each input batch x:\n"
            "# x = x.contiguous(memory_format=torch.channels_last)")
    return Suggestion(
        kind="conv",
        title=f"Convolutions take {conv:.0%} of the step: set cudnn.benchmark and use channels_last",
        severity=_severity(gain),
        evidence={"conv_step_share": round(conv, 4), "conv_kernel_share": round(mix.conv_share, 4),
                  "layout_transpose_share": round(mix.layout_transpose_share, 4),
                  "tensor_core_share": round(mix.tensor_core_share, 4)},
        facts=(f"convolution kernels: {conv:.0%} of the step ({step}), {mix.conv_share:.0%} of kernel time",
               f"NCHW↔NHWC conversion kernels: {transpose:.1%} of the step",
               f"tensor-core kernels: {mix.tensor_core_share:.0%} of kernel time"),
        expected_gain=estimate_words(
            1.0, gain, high, "step time",
            f"conv kernels ({conv:.0%} of the step) get {T.CONV_TUNING_SPEEDUP_TYPICAL:g}× faster with the best "
            f"algorithm and the NCHW↔NHWC conversions ({transpose:.1%} of the step) go; the high end takes the conv "
            f"kernels {T.CONV_TUNING_SPEEDUP_MAX:g}× faster (channels_last on tensor cores), the low end no gain"),
        gain=gain,
        claim="estimate",
        gain_low=1.0,
        gain_high=high,
        code=code,
        detail="channels_last pays off most with tensor cores (AMP, or TF32 on Ampere and later)",
    )
