"""The matmuls large enough for FP8: what the FP8 advice rests on.

FP8 tensor cores (compute capability 8.9 and later; AMD's MI300) run twice as many
FLOP/s as bf16, but an FP8 matmul first scales and casts its operands, work that grows
with their size while the matmul's grows with the product of its three sizes. For small
matmuls the casts cost what the faster matmul saves, so only calls whose every size
(M, K, N) reaches a minimum count.

torchao's float8 training, what the advice proposes, converts ``nn.Linear`` layers: their
calls are ``aten::linear`` forward and ``aten::mm``/``aten::addmm`` in the backward pass
(and forward in older traces). Batched matmuls (``aten::bmm``: attention's scores) stay
as they are, so they do not count.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .flops import _MM, calls_in_steps

LINEAR_OPS = ("aten::linear", "aten::mm", "aten::addmm", "aten::matmul")


def matmul_sizes(name: str, input_shapes: object) -> tuple[float, float, float] | None:
    """(M, K, N) of one Linear-type call from its input shapes (leading dimensions of a
    Linear's input fold into M); None where the call is not one or its shapes do not parse."""
    if name not in LINEAR_OPS or not isinstance(input_shapes, str):
        return None
    try:
        dims = json.loads(input_shapes)
        if name == "aten::linear":  # input [..., K], weight [N, K]
            a, (n, k) = dims[0], dims[1]
            return float(math.prod(a[:-1])), float(k), float(n)
        i, j = _MM[name]
        a, b = dims[i], dims[j]
        if len(a) < 2 or len(b) != 2:
            return None
        return float(math.prod(a[:-1])), float(a[-1]), float(b[-1])
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def large_matmuls(calls: pd.DataFrame, spans: pd.DataFrame, min_size: float) -> pd.DataFrame:
    """The Linear-type calls of ``calls`` (``flops.flop_calls``' table) that start inside
    ``spans`` (the report's steps) and whose M, K and N are all at least ``min_size``:
    their rows with ``m, k, n`` added."""
    if calls.empty or spans.empty:
        return calls.iloc[:0].assign(m=[], k=[], n=[])
    inside = calls_in_steps(calls, spans)
    sizes = [matmul_sizes(str(name), shapes) for name, shapes in zip(inside["name"], inside["input_shapes"])]
    mkn = np.array([s if s is not None else (math.nan,) * 3 for s in sizes], dtype=np.float64).reshape(-1, 3)
    large = np.all(mkn >= min_size, axis=1)
    return inside[large].assign(m=mkn[large, 0], k=mkn[large, 1], n=mkn[large, 2])
