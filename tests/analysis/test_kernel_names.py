"""Short kernel names (nbprofiler.analysis.kernel_names) on the kernels of real GPU traces: one
line a kernel, never two kernels under one name, and the name still says which kernel it is."""
from __future__ import annotations

import pytest
from conftest import shared_report

from nbprofiler.analysis.kernel_names import ELLIPSIS, short_kernel_name, short_kernel_names

TRACES = ["a100_train", "a100_nccl_distributed", "v100_resnet50_train_num_workers_0", "v100_resnet_ns_timestamps",
          "mi250_rocm_toy_train"]


@pytest.mark.parametrize("trace", TRACES)
def test_distinct_kernels_keep_distinct_short_names(trace: str) -> None:
    names = list(shared_report(trace).kernels["name"])
    shorts = short_kernel_names(names)
    assert len(shorts) == len(names)
    assert len(set(shorts)) == len(set(names))
    for name, short in zip(names, shorts, strict=True):
        assert len(short) <= len(name)
        # What is kept starts the kernel's own name: the short name up to its first "…" begins the whole one.
        kept = short.split(ELLIPSIS, 1)[0].rstrip("<(")
        assert kept and name.removeprefix("void ").startswith(kept)


def test_template_arguments_and_parameters_are_elided_on_the_a100_trace() -> None:
    names = list(shared_report("a100_train").kernels["name"])
    shorts = dict(zip(names, short_kernel_names(names), strict=True))
    templated = [n for n in names if n.startswith("void ") and "<" in n]
    assert templated
    # Half the kernels or more fit a one-line cell (80 characters) once shortened; none did before.
    assert sum(len(shorts[n]) <= 80 for n in templated) >= len(templated) / 2
    assert not any(len(n) <= 80 for n in templated)
    assert all(not shorts[n].startswith("void ") for n in templated)


def test_the_rules_on_known_names() -> None:
    add = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")
    mul = add.replace("CUDAFunctor_add", "CUDAFunctor_mul")
    assert short_kernel_name(add) == f"at::native::vectorized_elementwise_kernel<{ELLIPSIS}>({ELLIPSIS})"
    # Two kernels alike at the first level keep their outer template arguments.
    assert short_kernel_names([add, mul]) == [
        f"at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<{ELLIPSIS}>, "
        f"at::detail::Array<{ELLIPSIS}> >({ELLIPSIS})",
        f"at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_mul<{ELLIPSIS}>, "
        f"at::detail::Array<{ELLIPSIS}> >({ELLIPSIS})"]
    # An anonymous namespace is part of the name, not a parameter list; plain names stay as they are.
    anon = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, int)"
    assert short_kernel_name(anon) == f"at::native::(anonymous namespace)::CatArrayBatchedCopy<{ELLIPSIS}>({ELLIPSIS})"
    assert short_kernel_name("ampere_sgemm_32x32_sliced1x4_tn") == "ampere_sgemm_32x32_sliced1x4_tn"
    assert short_kernel_names(["k(int)", "k(float)"]) == ["k(int)", "k(float)"]
    assert short_kernel_names([add, add]) == [short_kernel_name(add)] * 2
