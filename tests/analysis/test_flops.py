"""FLOPs per call and MFU (analysis/flops.py): hand-computed shapes, torch's own FlopCounterMode
on a live CPU run, and the V100 ResNet-50 sample against the model's published FLOPs."""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from conftest import shared_raw_events, shared_report
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count, sdpa_backward_flop_count, sdpa_flop_count

import nbprofiler
from nbprofiler.analysis.flops import cpu_peak_flops, flop_calls
from nbprofiler.analysis.operators import OperatorTree
from nbprofiler.machine import process_cpus
from nbprofiler.trace.parser import parse_trace

V100 = "v100_resnet50_train_num_workers_0"
CLOCK = iter(range(0, 10**6, 10))


def op(name: str, dims: list, dur: float = 5, seq: int | None = None, ts: float | None = None, **args) -> dict:
    """One host op; nesting is by time, so a child gets a ``ts`` inside its parent's range."""
    args = {"Input Dims": dims, "Input type": ["float" if d else "" for d in dims], **args}
    if seq is not None:
        args["Sequence number"] = seq
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": next(CLOCK) if ts is None else ts,
            "dur": dur, "args": args}


def hand_trace() -> list[dict]:
    conv = [[2, 3, 32, 32], [8, 3, 3, 3], [8]]
    return [
        op("aten::mm", [[3, 4], [4, 5]]),
        op("aten::addmm", [[5], [3, 4], [4, 5], [], []]),
        op("aten::bmm", [[2, 3, 4], [2, 4, 5]]),
        op("aten::scaled_dot_product_attention", [[2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 8]]),
        op("aten::_scaled_dot_product_flash_attention_backward",  # grad_out, q, k, v, out
           [[2, 4, 16, 8], [2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 8], [2, 4, 16, 8]]),
        # linear > addmm: one matmul, counted at the outer op.
        op("aten::linear", [[2, 3, 8], [16, 8], [16]], dur=8, ts=500),
        op("aten::addmm", [[16], [6, 8], [8, 16], [], []], dur=2, ts=502),
        # conv2d > convolution > _convolution > cudnn_convolution: one convolution, whose output
        # size [2, 8, 16, 16] only its autograd node (same sequence number) records.
        op("aten::conv2d", conv, dur=20, seq=7, ts=600),
        op("aten::convolution", conv, dur=15, seq=7, ts=602),
        op("aten::_convolution", conv, dur=10, ts=604),
        op("aten::cudnn_convolution", conv[:2], dur=5, ts=606),
        op("ConvolutionBackward0", [[2, 8, 16, 16]], dur=20, seq=7, ts=700),
        op("aten::convolution_backward", [[2, 8, 16, 16], [2, 3, 32, 32], [8, 3, 3, 3]], dur=10, ts=705),
        # A convolution without a backward (inference): no stride is assumed, its FLOPs are unknown.
        op("aten::conv2d", conv, seq=9, ts=800),
        # with_flops' own figure wins over any estimate.
        op("aten::mul", [[10], [10]], ts=900, flops=10),
    ]


def test_hand_computed_flops_and_bytes():
    table = parse_trace(json.dumps({"traceEvents": hand_trace()}).encode(), source="hand")
    calls = flop_calls(OperatorTree(table))
    known = calls[calls["flops"].notna()]
    got = dict(zip(known["name"] + " " + known["input_shapes"], known["flops"]))
    conv_fwd = 2 * 2 * 16 * 16 * 8 * 3 * 3 * 3  # 2 N Ho Wo K C R S
    assert conv_fwd == conv_flop_count([2, 3, 32, 32], [8, 3, 3, 3], [2, 8, 16, 16])  # torch's own formulas
    q, kv = [2, 4, 16, 8], [2, 4, 32, 8]
    expected = {
        "aten::mm [[3, 4], [4, 5]]": 2 * 3 * 4 * 5,
        "aten::addmm [[5], [3, 4], [4, 5], [], []]": 2 * 3 * 4 * 5,
        "aten::bmm [[2, 3, 4], [2, 4, 5]]": 2 * 2 * 3 * 4 * 5,
        # QK^T and (softmax)V: 2 B H L S E + 2 B H L S Ev
        "aten::scaled_dot_product_attention [[2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 8]]": 2 * 8 * 16 * 32 * (8 + 8),
        "aten::_scaled_dot_product_flash_attention_backward [[2, 4, 16, 8], [2, 4, 16, 8], [2, 4, 32, 8], "
        "[2, 4, 32, 8], [2, 4, 16, 8]]": sdpa_backward_flop_count(q, q, kv, kv),
        "aten::linear [[2, 3, 8], [16, 8], [16]]": 2 * 6 * 8 * 16,
        "aten::conv2d [[2, 3, 32, 32], [8, 3, 3, 3], [8]]": conv_fwd,  # the trained one; the other is unknown
        "aten::convolution_backward [[2, 8, 16, 16], [2, 3, 32, 32], [8, 3, 3, 3]]": 2 * conv_fwd,
        "aten::mul [[10], [10]]": 10,
    }
    assert expected["aten::scaled_dot_product_attention [[2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 8]]"] == \
        sdpa_flop_count(q, kv, kv)
    assert len(calls) == 10  # each chain once; nested addmm and the conv's inner ops not again
    assert got == pytest.approx(expected)
    conv_rows = calls[calls["name"] == "aten::conv2d"]
    assert conv_rows["flops"].iloc[0] == conv_fwd and math.isnan(conv_rows["flops"].iloc[1])
    assert list(conv_rows["source"]) == ["shapes", "unknown"]
    assert calls.loc[calls["name"] == "aten::mul", "source"].item() == "recorded"
    mm = calls[calls["name"] == "aten::mm"].iloc[0]
    assert mm["bytes"] == (3 * 4 + 4 * 5 + 3 * 5) * 4 and mm["dtype"] == "fp32"


def test_cpu_peak_estimate_from_cpuinfo():
    text = "processor\t: 0\ncpu MHz\t\t: 1800.0\nflags\t\t: fpu sse2 avx avx2 fma\n" \
           "processor\t: 1\ncpu MHz\t\t: 2000.000\nflags\t\t: fpu sse2 avx avx2 fma\n"
    # 2 cores x 8 fp32 lanes x 2 (FMA) x 2 pipes x 2.0 GHz (the highest clock listed)
    assert cpu_peak_flops(text, cores=2) == {"fp32": 128e9, "fp64": 64e9}
    assert cpu_peak_flops(text.replace("avx2", "avx2 avx512f"), cores=2)["fp32"] == 256e9
    assert cpu_peak_flops("processor\t: 0\nFeatures\t: fp asimd\n", cores=4) is None  # ARM: no clock, no flags


def _model_step() -> tuple[nn.Module, torch.Tensor, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(512, 64))
    # The input takes a gradient, so the convolution's backward computes both gradients (a first
    # layer's backward without the input's: test_a_first_layer_counts_only_the_gradients_...).
    return model, torch.randn(4, 3, 16, 16, requires_grad=True), torch.optim.SGD(model.parameters(), lr=0.01)


def _train_step(model: nn.Module, x: torch.Tensor, opt: torch.optim.Optimizer) -> None:
    h = model(x).view(4, 2, 8, 4)  # [B, heads, L, E]
    # The math backend: FlopCounterMode has no formula for the CPU's fused attention kernel.
    with sdpa_kernel(SDPBackend.MATH):
        loss = F.scaled_dot_product_attention(h, h, h).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_live_cpu_run_matches_torch_flop_counter(one_torch_thread):
    model, x, opt = _model_step()
    with FlopCounterMode(display=False) as counter:
        _train_step(model, x, opt)
    with nbprofiler.profile(shapes=True, wait=0, warmup=0, active=3, history=False) as run:
        for _ in range(3):
            _train_step(model, x, opt)
    report = run.report
    summary = report.summary
    assert summary["flops_per_step"] == counter.get_total_flops()
    assert set(report.flops["source"]) == {"shapes"}
    step_s = report.step_window.avg_step_us / 1e6
    assert summary["achieved_flops_per_s"] == pytest.approx(counter.get_total_flops() / step_s)
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([0-9.]+)", cpuinfo, re.M)]
    flags = set((re.search(r"^flags\s*:(.*)$", cpuinfo, re.M) or re.match("()", "")).group(1).split())
    if not mhz or not flags:
        assert summary["mfu"] is None and not summary["mfu_peak_is_estimate"]
        return
    lanes = 16 if "avx512f" in flags else 8 if "avx" in flags else 4
    peak = process_cpus() * lanes * (2 if "fma" in flags else 1) * 2 * max(mhz) * 1e6
    assert summary["mfu_peak_is_estimate"] is True and summary["mfu_dtype"] == "fp32"
    assert summary["mfu"] == pytest.approx(summary["achieved_flops_per_s"] / peak)
    assert "of the estimated fp32 peak)" in report.to_text()  # the overview says the peak is an estimate


def test_v100_resnet50_mfu_near_the_models_known_flops():
    """ResNet-50: 4.1 GMACs = 8.2 GFLOPs forward per 224x224 image; training about 3x."""
    report = shared_report(V100)
    first_conv = next(e for e in shared_raw_events(V100) if e["name"] == "aten::conv2d")
    batch = first_conv["args"]["Input Dims"][0][0]
    assert first_conv["args"]["Input Dims"][0][1:] == [3, 224, 224]
    step_s = report.step_window.avg_step_us / 1e6
    independent = 3 * 8.2e9 * batch / step_s
    independent_mfu = independent / 15.7e12  # V100 SXM2/DGXS fp32 peak (data sheet)
    summary = report.summary
    assert independent == pytest.approx(4.4e12, rel=0.02)
    assert summary["achieved_flops_per_s"] == pytest.approx(independent, rel=0.05)
    assert summary["mfu"] == pytest.approx(independent_mfu, rel=0.05)
    assert summary["mfu_dtype"] == "fp32" and summary["mfu_peak_is_estimate"] is False
    flops = report.flops
    fwd = flops.loc[flops["name"] == "aten::conv2d", "flops"].sum()
    bwd = flops.loc[flops["name"] == "aten::cudnn_convolution_backward", "flops"].sum()
    # Backward = input and weight gradients, except the first layer's input gradient (the image needs none).
    assert 1.9 < bwd / fwd < 2.0


def test_a100_fp32_on_tensor_cores_counts_against_tf32():
    report = shared_report("a100_train")
    summary, spec = report.summary, report.device_spec
    flops = report.flops
    assert set(flops["dtype"]) == {"fp32"} and flops["tensor_cores"].any()
    achieved = summary["achieved_flops_per_s"]
    # Some calls ran as TF32, some on the fp32 units: the MFU lies between the two peaks' ratios.
    assert achieved / spec.peak_flops("tf32") < summary["mfu"] < achieved / spec.peak_flops("fp32")
    assert summary["mfu_dtype"] == "tf32"


def test_without_shapes_the_flops_are_unknown():
    summary = shared_report("v100_resnet_ns_timestamps").summary
    assert summary["flops_per_step"] is None and summary["mfu"] is None
    # ResNet-50's 53 convolutions forward and backward, its fc layer and the fc's two backward mm.
    assert summary["flops_unknown_calls"] == 53 + 53 + 1 + 2


def test_unknown_device_gives_flops_but_no_mfu():
    summary = shared_report("mi250_rocm_toy_train").summary  # "AMD Radeon Graphics": no spec sheet
    # One whole step: linear [5, 128] x [128, 128]^T forward and its weight gradient [128, 5] x [5, 128].
    assert summary["steps"] == 1
    assert summary["flops_per_step"] == 2 * (2 * 5 * 128 * 128)
    assert summary["mfu"] is None


# -- Concrete Inputs: stride, padding and dilation, and which gradients a backward computed ----------
def _conv(name: str, dims: list, concrete: list[str], ts: float, dur: float = 5) -> dict:
    inputs: dict[str, Any] = {"Concrete Inputs": concrete}  # a key no keyword argument can name
    return op(name, dims, dur=dur, ts=ts, **inputs)


def test_inference_convolutions_are_sized_from_their_arguments():
    """Without an autograd node, a convolution's output comes from its recorded stride, padding and
    dilation; text padding ("same") is read from the op inside it; a transposed one stays unknown."""
    x, w, b = [2, 3, 32, 32], [8, 3, 3, 3], [8]
    events = [
        # conv2d(stride 2, padding 1): 16x16 out
        _conv("aten::conv2d", [x, w, b, [], [], [], []], ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"], 100),
        # padding="same" with dilation 2: conv2d writes "", the aten::convolution inside has [2, 2]
        _conv("aten::conv2d", [x, w, b, [], [], [], []], ["", "", "", "[1, 1]", "", "[2, 2]", "1"], 200, 20),
        _conv("aten::convolution", [x, w, b, [], [], [], [], [], []],
              ["", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "False", "[0, 0]", "1"], 202, 10),
        # conv1d stride 3 on 20 samples, kernel 5: 6 outputs
        _conv("aten::conv1d", [[2, 3, 20], [8, 3, 5], [8], [], [], [], []],
              ["", "", "", "[3]", "[0]", "[1]", "1"], 300),
        # a transposed convolution's output is no forward formula's
        _conv("aten::convolution", [x, w, b, [], [], [], [], [], []],
              ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"], 400),
    ]
    calls = flop_calls(OperatorTree(parse_trace(json.dumps({"traceEvents": events}).encode(), source="hand")))
    assert list(calls["flops"][:3]) == [conv_flop_count(x, w, [2, 8, 16, 16]), conv_flop_count(x, w, [2, 8, 32, 32]),
                                        conv_flop_count([2, 3, 20], [8, 3, 5], [2, 8, 6])]
    assert list(calls["source"]) == ["shapes", "shapes", "shapes", "unknown"]


def _count_and_profile(step: Callable[[], None]) -> tuple[int, float]:
    """torch's FlopCounterMode count of one ``step``, and the profiled FLOPs per step of three."""
    with FlopCounterMode(display=False) as counter:
        step()
    with nbprofiler.profile(shapes=True, wait=0, warmup=0, active=3, history=False, step_on="manual") as run:
        for _ in range(3):
            step()
            nbprofiler.step()
    return counter.get_total_flops(), run.report.summary["flops_per_step"]


def test_live_inference_flops_match_torch_flop_counter(one_torch_thread):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding="same", dilation=2), nn.Flatten(), nn.Linear(512, 10)).eval()
    x = torch.randn(4, 3, 16, 16)

    def infer() -> None:
        with torch.no_grad():
            model(x)

    expected, profiled = _count_and_profile(infer)
    assert profiled == expected


def test_a_first_layer_counts_only_the_gradients_its_backward_computed(one_torch_thread):
    """The input needs no gradient: the first convolution's backward computes the weight's alone,
    which its ``output_mask`` records."""
    model, _, opt = _model_step()
    x = torch.randn(4, 3, 16, 16)  # no requires_grad

    expected, profiled = _count_and_profile(lambda: _train_step(model, x, opt))
    assert profiled == expected
