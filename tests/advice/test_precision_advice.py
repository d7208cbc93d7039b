"""Advice that knows the GPU's architecture: bf16 autocast from compute capability 8.0 even where
fp32 already runs on TF32 tensor cores, TF32 for fp32 matmuls on the fp32 units (8.0+), FP8 for
large 16-bit Linear layers (8.9+), and CUDA graphs when launches set the pace.

The figures come from real A100 and V100 traces. Each share is checked against the kernels table
as a user would read it (kernel names, their launching operator, their time), each gain against
Amdahl's law on that share, and each snippet by running it.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import nbprofiler
from conftest import shared_report, shared_trace
from nbprofiler.advice import measures
from nbprofiler.advice import thresholds as T
from nbprofiler.advice.rules import verdicts
from nbprofiler.advice.suggestion import amdahl
from nbprofiler.analysis.large_matmuls import matmul_sizes


def fired(report, check: str):
    """The suggestions of ``check`` on ``report`` (computed afresh: thresholds may be patched)."""
    return [s for v in verdicts(report) if v.check == check and v.state == "fired" for s in v.suggestions]


def verdict(report, check: str):
    return next(v for v in verdicts(report) if v.check == check)


def step_share(report, kernel_test) -> float:
    """Share of the step in matmul kernels that ``kernel_test(name, tensor_cores)`` keeps, from the
    kernels table: kernel time over all kernel time, times the GPU's busy share of the step."""
    k = report.kernels
    matmul = k["operator"].isin(["aten::mm", "aten::addmm", "aten::bmm", "aten::linear"])
    keep = [bool(m and kernel_test(n, tc)) for m, n, tc in zip(matmul, k["name"], k["tensor_cores"])]
    device = measures.device_time(report)
    assert device is not None, "the trace has device time"
    return float(k["total_us"][keep].sum() / k["total_us"].sum()) * device.utilization


# -- bf16 autocast on Ampere, where fp32 already runs on TF32 tensor cores ---------------------------
def test_bf16_autocast_fires_on_an_a100_run_in_tf32():
    report = shared_report("a100_train")
    s = next(s for s in report.suggestions if s.kind == "amp")
    # cuBLAS's TF32 kernels are CUTLASS "tensorop_s1688" (fp32 data on tensor cores); its fp32-unit
    # ones "ampere_sgemm": the two shares the estimate rests on, read from the kernel names.
    tf32 = step_share(report, lambda name, tc: "tensorop_s1688" in name)
    simt = step_share(report, lambda name, tc: "ampere_sgemm" in name)
    assert s.evidence["tf32_step_share"] == pytest.approx(tf32, abs=0.002)
    assert s.evidence["fp32_unit_step_share"] == pytest.approx(simt, abs=0.002)
    assert "dtype=torch.bfloat16" in s.code and "GradScaler" not in s.code
    assert s.claim == "estimate" and s.gain_low == 1.0
    assert s.gain == pytest.approx(1 / (1 - simt * (1 - 1 / T.TENSOR_CORE_SPEEDUP_TYPICAL)
                                        - tf32 * (1 - 1 / T.TF32_TO_HALF_SPEEDUP_TYPICAL)), rel=0.01)
    # The high end: the A100's bf16 peak is 2x its TF32 peak and 16x its fp32 one (spec sheet), and
    # the GPU's other work at most 2x faster on half-size values.
    rest = measures.device_time(report).utilization * (1 - s.evidence["eligible_kernel_share"])
    assert s.gain_high == pytest.approx(1 / (1 - simt * (1 - 1 / 16) - tf32 * (1 - 1 / 2) - rest / 2), rel=0.01)
    assert any("bf16 312 TFLOP/s, tf32 156 TFLOP/s" in fact for fact in s.facts)


def test_autocast_is_quiet_when_little_of_the_step_is_fp32_matmul():
    """The 2-rank A100 run waits on the host: its fp32 convolutions, mostly TF32, are 5% of the step."""
    report = shared_report("a100_nccl_distributed")
    assert "amp" not in [s.kind for s in report.suggestions]
    v = verdict(report, "tensor cores and cuDNN settings")
    assert v.state == "passed" and v.evidence["fp32_matmul_conv_step_share"] < T.AMP_ELIGIBLE_MIN_SHARE


# -- TF32 ----------------------------------------------------------------------------------------
def test_tf32_names_the_fp32_unit_matmuls_and_its_flags_run(monkeypatch):
    report = shared_report("a100_train")
    share = step_share(report, lambda name, tc: not tc and "sgemm" in name)
    assert 0 < share < T.AMP_ELIGIBLE_MIN_SHARE  # 2% of this step: quiet at the shipped threshold
    assert verdict(report, "TF32 for fp32 matmuls").state == "passed"
    monkeypatch.setattr(T, "AMP_ELIGIBLE_MIN_SHARE", share / 2)
    s = fired(report, "TF32 for fp32 matmuls")[0]
    assert s.kind == "tf32" and s.evidence["fp32_matmul_unit_step_share"] == pytest.approx(share, abs=0.002)
    assert s.evidence["kernels"][:2] == ["ampere_sgemm_128x128_tn", "ampere_sgemm_128x64_nn"]  # the longest first
    assert s.gain == pytest.approx(amdahl(share, T.TENSOR_CORE_SPEEDUP_TYPICAL), rel=0.01)
    assert s.gain_high == pytest.approx(amdahl(share, 156 / 19.5), rel=0.01)  # the A100's TF32 / fp32 peaks
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        exec(s.code, {})
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_tf32_is_not_offered_before_ampere_nor_for_convolutions():
    """A V100 has no TF32; and the V100 run's fp32-unit kernels are convolutions, which cuDNN runs
    on TF32 by default on an A100: the same kernels on compute capability 8.0 give no TF32 advice."""
    v100 = shared_report("v100_resnet50_train_num_workers_4")
    assert "TF32 for fp32 matmuls" not in [v.check for v in verdicts(v100)]
    mix = measures.kernel_mix(v100, T.TINY_KERNEL_US)
    assert mix.fp32_simt_share > 0.6 and mix.fp32_matmul_simt_share < 0.01


# -- FP8 -----------------------------------------------------------------------------------------
def _as_h100_bf16(tmp_path: Path) -> Path:
    """The A100 trace as an H100 run whose Linear layers ran in bf16: the same events and kernels,
    with the device's name and compute capability and the matmuls' input types changed."""
    data = json.loads(gzip.open(shared_trace("a100_train")).read())
    for device in data["deviceProperties"]:
        device.update(name="NVIDIA H100 80GB HBM3", computeMajor=9, computeMinor=0)
    for e in data["traceEvents"]:
        if e.get("name") in ("aten::linear", "aten::mm", "aten::addmm") and "Input type" in e.get("args", {}):
            e["args"]["Input type"] = ["c10::BFloat16" if t == "float" else t for t in e["args"]["Input type"]]
    path = tmp_path / "h100_bf16.pt.trace.json"
    path.write_text(json.dumps(data))
    return path


def test_fp8_sizes_the_linear_matmuls_and_fires_on_hopper(tmp_path, monkeypatch):
    report = nbprofiler.load(_as_h100_bf16(tmp_path))
    flops = report.flops
    linear = flops[flops["name"].isin(["aten::linear", "aten::mm"])]
    sizes = [matmul_sizes(n, s) for n, s in zip(linear["name"], linear["input_shapes"])]
    assert sizes[0] == (1024.0, 1705.0, 512.0)  # [1024, 1705] @ a [512, 1705] weight
    smallest = max(min(s) for s in sizes if s is not None)
    assert smallest < T.FP8_MIN_SIZE  # this model's layers are small: no FP8 at the shipped size
    v = verdict(report, "FP8 for large matmuls")
    assert v.state == "passed" and v.evidence["large_matmul_step_share"] == 0
    # Its sides of 1024 and more: 2.4% of the step. Lowered limits show what a larger model gets.
    monkeypatch.setattr(T, "FP8_MIN_SIZE", 1024)
    monkeypatch.setattr(T, "AMP_ELIGIBLE_MIN_SHARE", 0.01)
    s = fired(report, "FP8 for large matmuls")[0]
    # Independently: the bf16 Linear-type calls of the profiled steps with every side >= 1024.
    window = report.step_window.of(report.stretched_steps)
    inside = linear[(linear["start_us"] >= window["start_us"].min()) & (linear["start_us"] < window["end_us"].max())]
    big = [us for (n, sh, us) in zip(inside["name"], inside["input_shapes"], inside["device_us"])
           if (m := matmul_sizes(n, sh)) is not None and min(m) >= 1024]
    span = float((window["end_us"] - window["start_us"]).sum())
    assert big and s.evidence["large_matmul_step_share"] == pytest.approx(sum(big) / span, abs=0.002)
    assert s.evidence["dtype"] == "bf16" and s.evidence["smallest_size"] >= 1024
    assert s.gain_high == pytest.approx(amdahl(sum(big) / span, 1979 / 989.5), rel=0.01)  # H100 fp8 / bf16
    assert "min(module.in_features, module.out_features) >= 1024" in s.code


def test_fp8_is_not_offered_before_ada():
    report = shared_report("a100_train")  # compute capability 8.0
    assert "FP8 for large matmuls" not in [v.check for v in verdicts(report)]


def test_fp8_code_converts_only_the_large_linear_layers():
    pytest.importorskip("torchao")  # a test extra: installed by `make test`
    from nbprofiler.advice.precision_code import fp8_code
    from torchao.float8.float8_linear import Float8Linear

    net = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    ns = {"net": net}
    exec(fp8_code("net", 2048), ns)
    compiled = ns["net"]
    layers = compiled._orig_mod  # torch.compile wraps it; compiling happens at the first call
    assert isinstance(layers[0], Float8Linear) and type(layers[2]) is nn.Linear
    ns = {}
    exec(fp8_code(None, 2048), ns)  # no model name in the cell: guarded, no NameError
    assert "model" not in ns


# -- CUDA graphs when launches set the pace -----------------------------------------------------------
def test_launch_bound_with_short_kernels_proposes_cuda_graphs():
    report = shared_report("a100_nccl_distributed")
    s = next(s for s in report.suggestions if s.kind == "launch_bound")
    launches = report.launches
    shorter = float((launches["kernel_us"] < launches["runtime_us"]).mean())  # HTA's "GPU shorter than CPU"
    assert shorter >= T.TINY_KERNEL_SHARE
    assert s.evidence["shorter_than_launch_share"] == pytest.approx(shorter, abs=1e-3)
    assert s.evidence["cuda_graphs"] and 'mode="reduce-overhead"' in s.code and "CUDA graphs" in s.title
    ns = {"torch": torch, "model": nn.Linear(4, 4)}
    exec(s.code, ns)  # the trace names no model: guarded under `model`
    assert type(ns["model"]).__name__ == "OptimizedModule"
    exec(s.code, {"torch": torch})  # and no NameError without one
