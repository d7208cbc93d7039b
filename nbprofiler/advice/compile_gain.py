"""What torch.compile takes off a CPU inference step: an estimate grounded in what compiled code removes.

Compiled code replaces the model's forward with one call of generated code, so of the
time inside the model's calls (``analysis.model_time``) it removes:

* the Python of the forward and of each submodule's ``__call__``: gone but for what the
  compiled call costs itself (its guards and wrapper, ``COMPILE_CALL_US`` per call);
* each light operator's fixed cost per call (dispatch, allocation: the fast end of the
  step's operator durations), since the generated loops call no operator;
* part of the light operators' work: a chain of elementwise ops, normalisations and
  activations fuses into one loop that reads and writes memory once instead of once per
  op (``COMPILE_FUSED_KEPT``: the share of that work left);

and it calls the heavy operators' own kernels as eager code does, their fixed cost
included: matmuls as they are (``COMPILE_MATMUL_KEPT``), convolutions faster
(``COMPILE_CONV_KEPT``: compiled code prepacks their weights once and runs them in
channels-last, where eager code reorders each call's data to oneDNN's layout and back). The step's
speed-up is Amdahl's over the model's share: time outside the model (a Python
featuriser, the DataLoader) is not touched. Each assumption has a low, typical and
high value, which give the range.
"""
from __future__ import annotations

import numpy as np

from ..analysis.model_time import ModelTime
from . import thresholds as T


def compiled_model_us(m: ModelTime, fixed_cost_us: float, end: int) -> np.ndarray:
    """The model's time in each step compiled, at ``end`` (0: the low end of the gain, 1: the
    estimate, 2: the high end); ``fixed_cost_us``: one operator call's fixed cost."""
    light_work = np.maximum(m.light_us - m.light_calls * fixed_cost_us, 0.0)
    return ((m.heavy_us - m.conv_us) * T.COMPILE_MATMUL_KEPT[end] + m.conv_us * T.COMPILE_CONV_KEPT[end]
            + light_work * T.COMPILE_FUSED_KEPT[end] + m.python_us * T.COMPILE_PYTHON_KEPT[end]
            + m.calls * T.COMPILE_CALL_US[end])


def compile_gain(m: ModelTime, fixed_cost_us: float) -> tuple[float, float, float]:
    """(low, estimate, high) speed-up of the whole step with the model compiled: the median over the
    steps of each step's own."""
    low, gain, high = (float(np.median(m.step_us / np.maximum(
        m.step_us - m.model_us + compiled_model_us(m, fixed_cost_us, end), 1e-9))) for end in range(3))
    return low, gain, high
