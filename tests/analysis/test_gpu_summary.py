"""GPU summary metrics and the kernel table, against loop-based references on the raw trace JSON."""
from __future__ import annotations


import pytest

from conftest import shared_raw_events as raw_events, shared_report as report
from nbprofiler.analysis.gpu import plugin_tensor_core_kernel, uses_tensor_cores
from test_breakdown import hand_made_report, reference_breakdown

GPU_TRACES = [
    "v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4", "v100_resnet_ns_timestamps",
    "a100_train", "a100_nccl_distributed", "a100_alexnet_small", "mi250_rocm_toy_train",
]
_KERNEL_CATS = {"Kernel", "kernel"}
# Kernels link to operators, not to record_function annotations (2021 traces call both "Operator").
_HOST_OP_CATS = {"Operator", "cpu_op"}





def reference_metrics(name: str) -> dict:
    """Utilization, SM efficiency, occupancy and tensor-core share, in loops over raw kernels,
    over the steps span of the reference breakdown (a trace without ProfilerSteps is one
    step: there nbprofiler's span, which the breakdown tests check, is taken)."""
    steps = reference_breakdown(name)
    if steps:
        lo, hi = steps[0]["start"], steps[-1]["end"]
    else:
        spans = report(name).stretched_steps
        lo, hi = float(spans["start_us"].iloc[0]), float(spans["end_us"].iloc[-1])
    kernels = [e for e in raw_events(name) if e.get("cat") in _KERNEL_CATS]
    total = sum(k["dur"] for k in kernels)
    # The headline share keeps the plugin's own name markers, for figures that carry over.
    tc = sum(k["dur"] for k in kernels if plugin_tensor_core_kernel(k["name"]))
    return {
        "gpu_utilization": _reference_busy(kernels, lo, hi) / (hi - lo),
        "sm_efficiency": _reference_sm_efficiency(kernels, lo, hi),
        "achieved_occupancy": _reference_occupancy(kernels, lo, hi),
        "tensor_core_share": tc / total,
    }


def _reference_busy(kernels: list[dict], lo: float, hi: float) -> float:
    """Time within ``lo..hi`` that at least one kernel ran: the kernels' union, merged in a loop."""
    busy, cur = 0.0, None
    for s, e in sorted((max(k["ts"], lo), min(k["ts"] + k["dur"], hi)) for k in kernels):
        if e <= s:
            continue
        if cur and s <= cur[1]:
            cur[1] = max(cur[1], e)
        else:
            if cur:
                busy += cur[1] - cur[0]
            cur = [s, e]
    return busy + (cur[1] - cur[0] if cur else 0.0)


def _reference_sm_efficiency(kernels: list[dict], lo: float, hi: float) -> float | None:
    """The share of ``lo..hi`` weighted by the SMs busy (blocks per SM, at most 1, summed over
    the kernels running and capped at 1), swept over the kernels' starts and ends; None
    when no kernel says how many blocks per SM it ran."""
    points = []
    for k in kernels:
        bps = k["args"].get("blocks per SM")
        if bps is not None and bps > 0:
            points += [(k["ts"], 0, min(bps, 1.0)), (k["ts"] + k["dur"], 1, -min(bps, 1.0))]
    if not points:
        return None
    points.sort()
    sm, level = 0.0, 0.0
    for (t0, _, dv), (t1, _, _) in zip(points, points[1:]):
        level += dv
        sm += min(max(level, 0.0), 1.0) * max(0.0, min(t1, hi) - max(t0, lo))
    return sm / (hi - lo)


def _reference_occupancy(kernels: list[dict], lo: float, hi: float) -> float | None:
    """The kernels' estimated achieved occupancy, weighted by their time within ``lo..hi``;
    None when no kernel has one."""
    occ_w = occ_t = 0.0
    for k in kernels:
        occ = k["args"].get("est. achieved occupancy %")
        w = max(0.0, min(k["ts"] + k["dur"], hi) - max(k["ts"], lo))
        if occ is not None and occ >= 0:
            occ_w, occ_t = occ_w + occ * w, occ_t + w
    return occ_w / occ_t / 100 if occ_t else None


@pytest.mark.parametrize("name", GPU_TRACES)
def test_summary_matches_the_reference(name):
    summary = report(name).summary
    expected = reference_metrics(name)
    for key, value in expected.items():
        if value is None:
            assert summary[key] is None, key
        else:
            assert summary[key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
    assert 0 < summary["gpu_utilization"] <= 1
    for key in ("sm_efficiency", "achieved_occupancy", "tensor_core_share"):
        assert summary[key] is None or 0 <= summary[key] <= 1
    assert summary["avg_step_us"] == pytest.approx(report(name).breakdown["total"].mean())
    # Kernels rank first in the breakdown, so the busy time behind the utilization holds the
    # breakdown's kernel time (and NCCL kernels; the span also holds any gaps between steps).
    spans, bd = report(name).stretched_steps, report(name).breakdown
    span = spans["end_us"].iloc[-1] - spans["start_us"].iloc[0]
    assert summary["gpu_utilization"] * span >= bd["kernel"].sum() - 1e-6


def test_figures_a_user_would_check_on_the_v100_traces():
    starved = report("v100_resnet50_train_num_workers_0").summary
    fed = report("v100_resnet50_train_num_workers_4").summary
    assert 0.5 < starved["gpu_utilization"] < 0.6
    assert fed["gpu_utilization"] > starved["gpu_utilization"] + 0.1
    assert starved["tensor_core_share"] == 0.0  # fp32 on Volta: no tensor-core kernel ran
    assert starved["steps"] == 6


def test_rocm_trace_has_no_sm_efficiency_instead_of_a_fake_zero():
    s = report("mi250_rocm_toy_train").summary
    assert s["gpu_utilization"] > 0
    assert s["sm_efficiency"] is None and s["achieved_occupancy"] is None


def test_cpu_only_trace_has_no_device_metrics():
    s = report("cpu_only").summary
    assert s["avg_step_us"] > 0 and s["steps"] == 1
    for key in ("gpu_utilization", "sm_efficiency", "achieved_occupancy", "tensor_core_share"):
        assert s[key] is None
    assert report("a100_alexnet_small").summary["steps"] == 1  # a synthetic step still has metrics


def test_summary_on_the_hand_made_trace(tmp_path):
    # Kernels [30,70] (0.5 blocks/SM, 50% occupancy, h884: tensor cores), NCCL [110,130] (2 blocks/SM),
    # and four 10 µs sgemms at 1 block/SM; steps span [0, 210].
    s = hand_made_report(tmp_path).summary
    assert s["avg_step_us"] == pytest.approx(105)
    assert s["gpu_utilization"] == pytest.approx(100 / 210)
    assert s["sm_efficiency"] == pytest.approx((40 * 0.5 + 20 * 1 + 40 * 1) / 210)
    assert s["achieved_occupancy"] == pytest.approx(0.5)
    assert s["tensor_core_share"] == pytest.approx(40 / 100)


@pytest.mark.parametrize("name", [
    "volta_h884gemm_64x64_ldg8_nn", "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn",
    "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>"
    "(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)",
    "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_cudnn",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>",
    "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0",
    "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS_4gemm4warp11MmaTensorOpE",
])
def test_tensor_core_kernel_names(name):
    assert uses_tensor_cores(name)


@pytest.mark.parametrize("name", [
    "volta_sgemm_128x64_nn", "ampere_sgemm_32x32_sliced1x4_tn", "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1",
    "void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>"
    "(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    "Cijk_Ailk_Bljk_SB_MT64x64x8_SN_1LDSB0_APM1_GRVW1_VW1",
])
def test_names_without_tensor_cores(name):
    assert not uses_tensor_cores(name)


# -- the kernel table --------------------------------------------------------------------
def innermost_launcher(name: str, kernel_name: str) -> str:
    """The innermost host op (on the launching thread) around the runtime call of the
    first kernel called ``kernel_name``: found by time containment, not by External id."""
    events = raw_events(name)
    kernel = next(e for e in events if e.get("cat") in _KERNEL_CATS and e["name"] == kernel_name)
    rt = next(e for e in events if e.get("cat") in {"Runtime", "cuda_runtime"}
              and e["args"].get("correlation") == kernel["args"]["correlation"])
    around = [e for e in events if e.get("cat") in _HOST_OP_CATS and e["tid"] == rt["tid"]
              and e["ts"] <= rt["ts"] and rt["ts"] + rt["dur"] <= e["ts"] + e["dur"]]
    return min(around, key=lambda e: e["dur"])["name"]


@pytest.mark.parametrize("name, kernel_prefix, operator", [
    ("v100_resnet50_train_num_workers_0", "void implicit_convolve_sgemm<float, float, 1024", "aten::cudnn_convolution"),
    ("v100_resnet50_train_num_workers_0", "void cudnn::detail::dgrad_engine", "aten::cudnn_convolution_backward_input"),
    ("v100_resnet50_train_num_workers_0", "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7",
     "aten::cudnn_convolution_backward_weight"),
    ("v100_resnet50_train_num_workers_0", "void cudnn::bn_fw_tr_1C11_kernel_NCHW", "aten::cudnn_batch_norm"),
    ("a100_alexnet_small", "sm80_xmma_fprop_implicit_gemm", "aten::cudnn_convolution"),
    ("a100_alexnet_small", "ampere_sgemm_32x32_sliced1x4_tn", "aten::addmm"),
    # The collective's kernel is launched from the op under the nccl:all_reduce annotation.
    ("a100_nccl_distributed", "ncclKernel_AllReduce", "record_param_comms"),
])
def test_kernels_are_attributed_to_the_operator_that_launched_them(name, kernel_prefix, operator):
    kernels = report(name).kernels
    row = kernels[kernels["name"].str.startswith(kernel_prefix)].iloc[0]
    assert innermost_launcher(name, row["name"]) == operator
    assert row["operator"] == operator


@pytest.mark.parametrize("name", ["v100_resnet50_train_num_workers_0", "a100_train"])
def test_kernel_table_totals_match_the_raw_kernels(name):
    kernels = report(name).kernels
    raw = [e for e in raw_events(name) if e.get("cat") in _KERNEL_CATS]
    assert kernels["calls"].sum() == len(raw)
    assert kernels["total_us"].sum() == pytest.approx(sum(e["dur"] for e in raw))
    assert kernels["total_us"].is_monotonic_decreasing
    top = kernels.iloc[0]
    durations = [e["dur"] for e in raw if e["name"] == top["name"]]
    assert (top["calls"], top["max_us"], top["min_us"]) == (len(durations), max(durations), min(durations))
    assert top["mean_us"] == pytest.approx(sum(durations) / len(durations))
    assert kernels["mean_occupancy"].dropna().between(0, 1).all()
    assert kernels["operator"].notna().mean() > 0.95


def test_kernel_table_on_the_hand_made_trace(tmp_path):
    k = hand_made_report(tmp_path).kernels.set_index("name")
    assert k.loc["volta_h884gemm_64x64_ldg8_nn", "tensor_cores"]
    assert k.loc["volta_h884gemm_64x64_ldg8_nn", "operator"] == "aten::conv2d"
    assert k.loc["volta_h884gemm_64x64_ldg8_nn", "mean_occupancy"] == pytest.approx(0.5)
    sgemm = k.loc["volta_sgemm_128x64_nn"]
    assert (sgemm["calls"], sgemm["total_us"], sgemm["operator"], sgemm["tensor_cores"]) == (4, 40, "aten::mm", False)
    assert sgemm["mean_blocks_per_sm"] == pytest.approx(1.0)
