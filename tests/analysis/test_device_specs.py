"""The spec-sheet table: which names it knows, that it never guesses, and that its figures hang together."""
from __future__ import annotations

import dataclasses
from operator import attrgetter

import pytest

from conftest import GPU_TRACE_FILES, shared_report as report
from nbprofiler.analysis.device_specs import _BY_NAME, DTYPES, device_spec

# Names as nvidia-smi / torch / the traces' deviceProperties spell them.
KNOWN = [
    "Tesla V100-DGXS-32GB", "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe",
    "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA L4", "NVIDIA L40S",
    "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3090", "AMD Instinct MI250X", "AMD Instinct MI300X",
    "NVIDIA A100-PG509-200",
]


@pytest.mark.parametrize("name", KNOWN)
def test_known_devices_have_their_figures(name):
    spec = device_spec(name)
    assert spec is not None
    assert spec.memory_gb_per_s > 0 and spec.host_link_gb_per_s in (16.0, 32.0, 64.0)
    assert spec.fp32_tflops is not None and spec.fp16_tflops is not None and spec.source


@pytest.mark.parametrize("name", ["NVIDIA A10", "Tesla T4", "NVIDIA H100", "NVIDIA GeForce RTX 4080", "",
                                  "AMD Radeon Graphics", "AMD Instinct MI250X / MI250", "Intel(R) Xeon(R) CPU"])
def test_unknown_or_ambiguous_names_get_nothing(name):
    assert device_spec(name) is None


def test_names_match_without_case_spacing_or_vendor_prefix():
    # Older drivers drop "NVIDIA "; the match does not depend on it, nor on case or spacing.
    expected = device_spec("NVIDIA A100-SXM4-40GB")
    assert device_spec("A100-SXM4-40GB") == expected == device_spec("nvidia  a100-sxm4-40gb")
    assert device_spec("V100-SXM2-32GB") == device_spec("Tesla V100-SXM2-32GB")


def test_the_shared_traces_devices():
    names = {report(f.split(".")[0]).device.name for f in GPU_TRACE_FILES}
    assert names == {"Tesla V100-DGXS-32GB", "Tesla V100-SXM2-32GB", "NVIDIA A100-PG509-200", "AMD Radeon Graphics"}
    # PG509-200 is a board name: the trace itself says what it is, an A100 (8.0, 108 SMs) with 40 GB,
    # the figures the table gives it.
    a100 = report("a100_train").device
    assert a100.compute_capability == (8, 0) and a100.sm_count == 108
    assert 39e9 < a100.total_memory_bytes < 43e9
    assert device_spec(a100.name) == device_spec("NVIDIA A100-SXM4-40GB")
    assert device_spec("AMD Radeon Graphics") is None


def test_figures_follow_the_data_sheets():
    # Hand-checked against the sheets: V100 SXM2 125 TFLOPS tensor, 900 GB/s, PCIe 3; A100 40GB 312 / 1,555;
    # H100 SXM 1,979 sparse -> 989.5 dense fp16, 3.35 TB/s; MI300X 1,307.4 fp16, 5.3 TB/s, PCIe 5.
    v100, a100, h100, mi300x = (device_spec(n) for n in ("Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-40GB",
                                                         "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"))
    assert (v100.fp16_tflops, v100.memory_gb_per_s, v100.host_link_gb_per_s) == (125, 900, 16.0)
    assert (a100.fp16_tflops, a100.tf32_tflops, a100.memory_gb_per_s) == (312, 156, 1555)
    assert (h100.fp16_tflops, h100.fp8_tflops, h100.memory_gb_per_s) == (989.5, 1979, 3350)
    assert (mi300x.fp16_tflops, mi300x.memory_gb_per_s, mi300x.host_link_gb_per_s) == (1307.4, 5300, 64.0)
    assert v100.bf16_tflops is None and v100.tf32_tflops is None and a100.fp8_tflops is None


@pytest.mark.parametrize("spec", sorted(set(_BY_NAME.values()), key=attrgetter("name")), ids=attrgetter("name"))
def test_every_entry_hangs_together(spec):
    # Narrower types are never slower on the same device, and bf16 runs at the fp16 rate on all of them:
    # a figure typed into the wrong column breaks one of these.
    peaks = [spec.peak_flops(d) for d in DTYPES]
    present = [p for p in peaks if p is not None]
    assert present == sorted(present)
    if spec.bf16_tflops is not None:
        assert spec.bf16_tflops == spec.fp16_tflops
    assert spec.peak_flops("fp32") == spec.fp32_tflops * 1e12
    with pytest.raises(ValueError):
        spec.peak_flops("int8")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.memory_gb_per_s = 1.0  # type: ignore[misc]
