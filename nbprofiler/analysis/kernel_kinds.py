"""What a GPU kernel does, read from its name: the categories of the kernel time chart.

Kernel names are library symbols (``void cudnn::detail::dgrad_engine<...>``,
``ampere_sgemm_128x64_nn``, ``at::native::vectorized_elementwise_kernel<...>``),
and the families are recognisable by a few words. The first matching rule
wins, so the specific families (communication, attention) come before the
generic ones (matmul, elementwise); an unknown name is ``other``.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
import pandas as pd

KERNEL_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("communication", re.compile(r"nccl|rccl", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|sdpa", re.I)),
    ("convolution", re.compile(r"conv|dgrad|wgrad|fprop|winograd|implicit_gemm|scudnn|cudnn::cnn", re.I)),
    ("matmul", re.compile(r"gemm|gemv|cutlass|cublas|xmma|nvjet|matmul|_mm_|bmm|^Cijk_", re.I)),
    ("optimizer", re.compile(r"multi_tensor_apply|adam|adagrad|(?<![a-z])sgd(?![a-z])|(?<![a-z])lamb(?!da)", re.I)),
    ("embedding", re.compile(r"embedding", re.I)),
    ("normalization", re.compile(r"norm|bn_fw|bn_bw|welford", re.I)),
    ("softmax", re.compile(r"softmax", re.I)),
    ("pooling", re.compile(r"pool", re.I)),
    ("reduction", re.compile(r"reduce|_sum_|sum_kernel|argmax|argmin|sort|\bmax_|\bmin_", re.I)),
    ("copy / layout", re.compile(r"copy|fill|memset|memcpy|cat|index|gather|scatter|transpose|permute|nchwTo|nhwcTo",
                                 re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|pointwise|triton_poi|activation|relu|gelu|dropout",
                               re.I)),
)
OTHER = "other"


@lru_cache(maxsize=4096)
def kernel_kind(name: str) -> str:
    """The category of one kernel name. Cached: a report's chart, Kernels tab and saved data
    each ask for the same names, and long template names make the rules costly (tens of ms
    for a few hundred kernels)."""
    for kind, pattern in KERNEL_KINDS:
        if pattern.search(name):
            return kind
    return OTHER


def time_by_kind(kernels: pd.DataFrame) -> pd.Series:
    """Kernel µs per category from a kernel table (``name``, ``total_us``), largest first."""
    if kernels.empty:
        return pd.Series(dtype=np.float64)
    return kernels["total_us"].groupby(kernel_kinds(kernels["name"])).sum().sort_values(ascending=False)


def kernel_kinds(names: Iterable[object]) -> list[str]:
    """The category of each kernel name, in order (a kernel table's ``category`` column)."""
    return [kernel_kind(str(n)) for n in names]
