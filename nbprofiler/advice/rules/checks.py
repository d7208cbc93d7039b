"""The checks as "nothing to improve" lists them, and why a check could not run.

Rules that need the same measurement name the same check and give the same reason when it is
missing, so that "nothing to improve" lists a missing measurement once, not once per rule; and a
GPU check on a CPU run gives no verdict at all, as it does not apply.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import measures as M
from .. import thresholds as T
from ..suggestion import Verdict, not_run

if TYPE_CHECKING:
    from .facts import Facts


# The checks as "nothing to improve" names them. Rules that need the same measurement name
# the same check, so a measurement that is missing is listed once, not once per rule.
DATA_LOADING = "data loading"
SYNCS = "host-device syncs"
GPU_IDLE = "GPU idle time and batch size"
DEVICE_MEMORY = "device memory and batch size"
KERNELS = "tensor cores and cuDNN settings"
TF32 = "TF32 for fp32 matmuls"
FP8 = "FP8 for large matmuls"
CPU_BATCH = "the CPU batch size"
SMALL_OPS = "many small operators on CPU"
GROWTH = "memory growth"
DRIFT = "drift across the run's cycles"
NO_DEVICE_TIME = "no device activity was recorded in the profiled steps"
NO_ABSOLUTE_MEMORY = "the trace has no absolute device memory figures"
NO_KERNELS = "no kernel was recorded in the profiled steps"


def gpu_not_run(f: Facts, check: str, reason: str) -> list[Verdict]:
    """A GPU check that could not run; on a CPU run it does not apply, so it has no verdict."""
    return [not_run(check, reason)] if f.on_gpu else []


def why_not_timed(f: Facts) -> str | None:
    """Why the checks that judge the GPU's idle time within steps cannot run, or None when they can."""
    dt = f.device_time
    if dt is None or dt.span_us <= 0:
        return NO_DEVICE_TIME
    return why_no_steps(f) or _why_too_few_steps(f, dt)


def why_no_kernels(f: Facts) -> str | None:
    """Why the kernel checks (tensor cores, cuDNN) cannot run, or None when they can."""
    kind = f.report.device.kind
    if kind != "cuda":
        return f"these checks know CUDA devices only, not {kind.upper()}"
    return None if f.kernel_mix is not None and f.device_time is not None else NO_KERNELS


def why_no_architecture(f: Facts) -> str | None:
    """Why the number-format checks, which need the kernels and the GPU's compute capability,
    cannot run, or None when they can."""
    return why_no_kernels(f) or (None if f.report.device.compute_capability
                                  else "the trace does not give the GPU's compute capability")


def why_no_steps(f: Facts) -> str | None:
    """Why checks that judge time within steps cannot run at all, or None when they can."""
    steps = f.report.trace_steps
    if steps.empty:
        return "no step was recorded in the trace"
    if bool(steps["synthetic"].iloc[0]):
        return "the trace has no ProfilerStep ranges, so there are no steps to judge"
    return None


def _why_too_few_steps(f: Facts, dt: M.DeviceTime) -> str | None:
    """Why the GPU idle-time checks cannot judge the steps there are, or None when they can."""
    if dt.steps >= T.MIN_STEPS_FOR_IDLE:
        return None
    profiled = len(f.report.trace_steps)
    counted = (f"only {dt.steps} of the {profiled} profiled steps is in the breakdown, as the notes say"
               if profiled > dt.steps else f"only {dt.steps} step was profiled")
    return (f"{counted}, and one step's idle time is mostly start-up: profile at least {T.MIN_STEPS_FOR_IDLE + 1} "
            f"steps (--active {T.MIN_STEPS_FOR_IDLE + 1})")
