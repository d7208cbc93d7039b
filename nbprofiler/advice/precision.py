"""Suggestions that change the number format of matmuls and convolutions, by GPU architecture:
16-bit autocast (fp16 before compute capability 8.0, bf16 from it), TF32 for fp32 matmuls
(8.0 and later) and FP8 for large Linear layers (8.9 and later).

Each gain is an estimate with its range: the kernels that would change, as a measured
share of the step, get a typical speed-up (the estimate), or the ratio of the two formats'
peaks on this device's spec sheet (the high end; a fixed ratio where the device is not in
the spec table), or none (the low end: casts and small shapes can eat the gain). The rules
that decide when to suggest them are in ``rules/kernels.py``; this module builds the suggestions.
"""
from __future__ import annotations

import pandas as pd

from ..analysis.device_specs import DeviceSpec
from ..format import fmt_si
from . import measures as M
from . import thresholds as T
from .cell_names import TrainingStep
from .precision_code import TF32_CODE, fp8_code
from .step_code import autocast_code, replaced_lines
from .suggestion import Suggestion, amdahl, estimate_words, severity_for


def _peaks(spec: DeviceSpec | None, faster: str, slower: str) -> tuple[float, float] | None:
    """The spec sheet's peaks of ``faster`` and ``slower`` (dtype names of ``DTYPES``), or None
    where the device or either figure is not in the spec table."""
    high = spec.peak_flops(faster) if spec is not None else None
    low = spec.peak_flops(slower) if spec is not None else None
    return (high, low) if high and low else None


def peak_ratio(spec: DeviceSpec | None, faster: str, slower: str, default: float) -> float:
    """The spec sheet's peak of ``faster`` over ``slower``, or ``default`` where it has none."""
    peaks = _peaks(spec, faster, slower)
    return peaks[0] / peaks[1] if peaks else default


def _cc(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def _peaks_fact(spec: DeviceSpec | None, faster: str, slower: str, ratio: float) -> str:
    """The peaks a high end rests on, in words, naming where the ratio comes from."""
    peaks = _peaks(spec, faster, slower)
    if spec is None or peaks is None:
        return f"{faster} peak taken as {ratio:g}× {slower}'s (this GPU's figures are not in the spec table)"
    return (f"{spec.name}: {faster} {fmt_si(peaks[0], 'FLOP/s')}, {slower} {fmt_si(peaks[1], 'FLOP/s')} "
            f"dense peak ({ratio:.3g}×)")


def half_precision(cc: tuple[int, int], mix: M.KernelMix, dt: M.DeviceTime, spec: DeviceSpec | None, step: str,
                   training: TrainingStep | None, not_copied: bool) -> Suggestion:
    """torch.autocast to bf16 where the GPU has it (8.0 and later), else fp16 with loss scaling.

    The fp32 matmul/conv kernels on the FMA units get ``TENSOR_CORE_SPEEDUP_TYPICAL`` faster,
    those already on TF32 tensor cores ``TF32_TO_HALF_SPEEDUP_TYPICAL``; the high end takes
    them at the peak ratios and the GPU's other work twice as fast on half-size values.
    ``training``: the cell's step, or None; ``not_copied``: the cell shows one whose lines may not be copied.
    """
    bf16 = cc >= T.BF16_MIN_CC
    half = "bf16" if bf16 else "fp16"
    simt = mix.fp32_simt_share * dt.utilization
    tf32 = mix.fp32_tensor_core_share * dt.utilization if bf16 else 0.0
    fp32 = simt + tf32
    rest = max(dt.utilization * (1.0 - mix.eligible_share), 0.0)
    simt_peak = peak_ratio(spec, half, "fp32",
                           T.TENSOR_CORE_SPEEDUP_MAX if bf16 else T.TENSOR_CORE_SPEEDUP_MAX_BEFORE_BF16)
    tf32_peak = peak_ratio(spec, half, "tf32", T.TF32_TO_HALF_SPEEDUP_MAX)
    gain = 1.0 / max(1.0 - simt * (1.0 - 1.0 / T.TENSOR_CORE_SPEEDUP_TYPICAL)
                     - tf32 * (1.0 - 1.0 / T.TF32_TO_HALF_SPEEDUP_TYPICAL), 1e-9)
    high = 1.0 / max(1.0 - simt * (1.0 - 1.0 / simt_peak) - tf32 * (1.0 - 1.0 / tf32_peak)
                     - rest * (1.0 - 1.0 / T.HALF_PRECISION_MEMORY_SPEEDUP), 1e-9)
    code, lines = autocast_code(training, "bfloat16" if bf16 else "float16", not_copied)
    units = (f"{simt:.0%} on the fp32 units" + (f", {tf32:.0%} on TF32 tensor cores" if tf32 > 0 else ""))
    peaks = [_peaks_fact(spec, half, "fp32", simt_peak)]
    if tf32 > 0:
        peaks.append(_peaks_fact(spec, half, "tf32", tf32_peak))
    parts = [f"the fp32-unit kernels ({simt:.0%} of the step) get {T.TENSOR_CORE_SPEEDUP_TYPICAL:g}× faster"]
    if tf32 > 0:
        parts.append(f"the TF32 ones ({tf32:.0%}) {T.TF32_TO_HALF_SPEEDUP_TYPICAL:g}×")
    return Suggestion(
        kind="amp",
        title=(f"Matmuls and convolutions run in fp32 for {fp32:.0%} of the step: run them in {half} "
               "with torch.autocast"),
        severity=severity_for(gain),
        evidence={"compute_capability": _cc(cc), "tensor_core_share": round(mix.tensor_core_share, 4),
                  "eligible_kernel_share": round(mix.eligible_share, 4), "eligible_step_share": round(fp32, 4),
                  "fp32_unit_step_share": round(simt, 4), "tf32_step_share": round(tf32, 4),
                  "half_kernel_share": round(mix.half_share, 4), "gpu_utilization": round(dt.utilization, 4),
                  **lines},
        facts=(f"compute capability {_cc(cc)}: tensor cores" + (" with bf16" if bf16 else ", fp16 only"),
               f"matmul/conv kernels on fp32 data: {fp32:.0%} of the step ({step}): {units}",
               *([f"{mix.half_share:.0%} of kernel time already runs on 16- or 8-bit floats"]
                 if mix.half_share else []),
               f"GPU busy {dt.utilization:.0%} of the step", *peaks),
        expected_gain=estimate_words(
            1.0, gain, high, "step time",
            f"{' and '.join(parts)}, as they typically do; the high end takes them at the {half} peak over theirs "
            f"and the GPU's other work ({rest:.0%} of the step) {T.HALF_PRECISION_MEMORY_SPEEDUP:g}× faster on "
            "half-size values; the low end is no gain (casts cost what they save)"),
        gain=gain,
        claim="estimate",
        gain_low=1.0,
        gain_high=max(high, gain),
        code=code,
        detail=(f"{mix.fp32_share(tf32=bf16):.0%} of kernel time is matmuls and convolutions on fp32 data; "
                f"compute capability {_cc(cc)} runs them in {half} on tensor cores"
                + ("" if bf16 else ", with loss scaling against fp16's narrow range") + replaced_lines(lines)),
    )


def tf32(cc: tuple[int, int], mix: M.KernelMix, dt: M.DeviceTime, spec: DeviceSpec | None, step: str) -> Suggestion:
    """TF32 for the fp32 matmuls that run on the FMA units (PyTorch's default since 1.12)."""
    share = mix.fp32_matmul_simt_share * dt.utilization
    peak = peak_ratio(spec, "tf32", "fp32", T.TF32_SPEEDUP_MAX)
    gain, high = amdahl(share, T.TENSOR_CORE_SPEEDUP_TYPICAL), amdahl(share, peak)
    return Suggestion(
        kind="tf32",
        title=f"fp32 matmuls run on the fp32 units for {share:.0%} of the step: let them use TF32 tensor cores",
        severity=severity_for(gain),
        evidence={"compute_capability": _cc(cc), "fp32_matmul_unit_step_share": round(share, 4),
                  "fp32_matmul_unit_kernel_share": round(mix.fp32_matmul_simt_share, 4),
                  "gpu_utilization": round(dt.utilization, 4), "kernels": list(mix.fp32_matmul_simt_kernels)},
        facts=(f"compute capability {_cc(cc)}: TF32 tensor cores",
               f"fp32 matmul kernels on the fp32 units: {mix.fp32_matmul_simt_share:.0%} of kernel time, "
               f"{share:.0%} of the step ({step})",
               *(f"kernel: {name}" for name in mix.fp32_matmul_simt_kernels),
               _peaks_fact(spec, "tf32", "fp32", peak)),
        expected_gain=estimate_words(
            1.0, gain, high, "step time",
            f"these matmuls ({share:.0%} of the step) get {T.TENSOR_CORE_SPEEDUP_TYPICAL:g}× faster on tensor cores, "
            f"as they typically do; the high end takes them at the TF32 peak ({peak:.3g}× fp32's); the low end is "
            "no gain (small matmuls are limited by memory, not arithmetic)"),
        gain=gain,
        claim="estimate",
        gain_low=1.0,
        gain_high=high,
        code=TF32_CODE,
        detail=("TF32 keeps fp32's storage and range and rounds matmul inputs to a 10-bit mantissa (about three "
                "decimal digits), which training tolerates as a rule: compare a few steps' loss with and without it. "
                "No code of the step changes"),
    )


def fp8(cc: tuple[int, int], large: pd.DataFrame, dt: M.DeviceTime, spec: DeviceSpec | None, step: str,
        model: str | None) -> Suggestion:
    """FP8 (torchao's float8 training) for the Linear layers whose matmuls are all large:
    ``large`` is ``large_matmuls``' table over the profiled steps, on 16-bit data."""
    share = float(large["device_us"].sum()) / max(dt.span_us, 1e-9)
    dtype = str(large.groupby("dtype")["device_us"].sum().idxmax())
    peak = peak_ratio(spec, "fp8", dtype, T.FP8_SPEEDUP_MAX)
    gain, high = amdahl(share, T.FP8_SPEEDUP_TYPICAL), amdahl(share, peak)
    per_step = len(large) / max(dt.steps, 1)
    smallest, largest = large[["m", "k", "n"]].min(axis=1), large[["m", "k", "n"]].max(axis=1)
    return Suggestion(
        kind="fp8",
        title=f"Large {dtype} matmuls take {share:.0%} of the step: train those Linear layers in FP8",
        severity=severity_for(gain),
        evidence={"compute_capability": _cc(cc), "large_matmul_step_share": round(share, 4),
                  "large_matmuls_per_step": round(per_step, 1), "dtype": dtype,
                  "smallest_size": int(smallest.min()), "min_size": T.FP8_MIN_SIZE},
        facts=(f"compute capability {_cc(cc)}: FP8 tensor cores",
               f"{per_step:,.0f} Linear-layer matmuls per step in {dtype} with M, K and N all at least "
               f"{T.FP8_MIN_SIZE:,}: {share:.0%} of the step ({step})",
               f"their sizes (M, K, N): from {int(smallest.min()):,} to {int(largest.max()):,} on a side",
               _peaks_fact(spec, "fp8", dtype, peak)),
        expected_gain=estimate_words(
            1.0, gain, high, "step time",
            f"these matmuls ({share:.0%} of the step) get {T.FP8_SPEEDUP_TYPICAL:g}× faster, as large ones typically "
            f"do in torchao's float8 training; the high end takes them at the fp8 peak ({peak:.3g}× {dtype}'s); the "
            "low end is no gain (the operands' scaling and casts cost what the matmuls save)"),
        gain=gain,
        claim="estimate",
        gain_low=1.0,
        gain_high=high,
        code=fp8_code(model, T.FP8_MIN_SIZE),
        detail=(f"FP8 keeps a scale per tensor and 3 (forward) or 2 (gradients) mantissa bits; torchao converts only "
                f"the Linear layers of at least {T.FP8_MIN_SIZE:,} features on each side, and the rest stays in "
                f"{dtype}: compare a few hundred steps' loss with and without it. The code installs torchao where it "
                "is missing; each torchao release supports a range of torch releases (its README lists them)"),
    )
