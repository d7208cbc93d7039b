"""The Report's tables of the device's work: the step breakdown and summary, kernels, syncs and
idle time, launches, FLOPs and the roofline, copies, streams, collectives, and the ranks'
comparison, each a function of the Report that ``Report`` declares.

A new table of the device's work is a function here and one line in ``Report``'s tables.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis import launches as launch
from ..analysis.breakdown import step_breakdown, stretched_steps as stretched
from ..analysis.collectives import collective_calls, collective_table
from ..analysis.communication import step_communication
from ..analysis.copies import copy_table
from ..analysis.device_specs import DTYPES, DeviceSpec, device_spec as spec_of
from ..analysis.flops import cpu_peak_flops, flop_calls, flop_summary, kernel_flop_calls
from ..analysis.gpu import gpu_summary, kernel_table
from ..analysis.ranks import rank_comparison as compared_ranks
from ..analysis.roofline import kernel_roofline as roofline_kernels, roofline as roofline_of
from ..analysis.step_window import StepWindow, step_window as window_of, throughput
from ..analysis.streams import kernel_overlap as overlap, stream_idle as idle_streams
from ..analysis.sync import idle_time, sync_calls
from ..machine import process_cpus

if TYPE_CHECKING:
    from .report import Report


def stretched_steps(report: "Report") -> pd.DataFrame:
    """The steps the breakdown, summary and idle tables use: host ranges stretched
    to cover the device work they launched, trailing incomplete steps dropped."""
    return stretched(report.table, report.trace_steps)


def breakdown(report: "Report") -> pd.DataFrame:
    """Per step, µs by category: ``step, kernel, memcpy, memset, communication,
    runtime, dataloader, cpu_exec, other, total``. Shares: ``breakdown_shares()``."""
    return step_breakdown(report.table, report.stretched_steps)


def step_window(report: "Report") -> StepWindow:
    """The steps every mean of the report is over, and their average time: the one
    definition of "the step" that the title, overview and suggestions share."""
    return window_of(report.stretched_steps, report.sampled_steps)


def summary(report: "Report") -> dict[str, Any]:
    """``avg_step_us, steps, gpu_utilization, sm_efficiency, achieved_occupancy,
    tensor_core_share, batches_per_step, samples_per_step, samples_per_s``; device
    metrics are None without device activity, throughput None where no DataLoader
    batch was seen (trace files). ``avg_step_us`` is ``step_window``'s. FLOPs and MFU:
    ``flops_per_step, achieved_flops_per_s, mfu, mfu_dtype, mfu_peak_is_estimate,
    flops_unknown_calls`` (``_flop_summary``)."""
    result = gpu_summary(report.table, report.stretched_steps, report.device.index)
    window = report.step_window
    result["avg_step_us"] = window.avg_step_us
    result["steps"] = len(window.steps)
    rate = throughput(window, report.sampled_steps)
    result.update(batches_per_step=rate.batches_per_step, samples_per_step=rate.samples_per_step,
                  samples_per_s=rate.samples_per_s)
    result.update(_flop_summary(report, window))
    return result


def _flop_summary(report: "Report", window: StepWindow) -> dict[str, Any]:
    """``flops_per_step, achieved_flops_per_s, mfu, mfu_dtype, mfu_peak_is_estimate,
    flops_unknown_calls`` (``analysis.flops.flop_summary``). The peak is the spec sheet's
    for the device's dtype; on a live CPU run (the CPU that ran it is this one) an
    estimate from ``/proc/cpuinfo``; None for a trace file's CPU or an unknown device."""
    spec, device = report.device_spec, report.device
    peaks: dict[str, float | None] = {} if spec is None else {d: spec.peak_flops(d) for d in DTYPES}
    if device.kind == "cpu" and report.ran_live:
        try:
            peaks = cpu_peak_flops(Path("/proc/cpuinfo").read_text(), process_cpus()) or {}
        except OSError:
            pass
    cc = device.compute_capability if device.kind == "cuda" else None
    return flop_summary(report.flops, window.of(report.stretched_steps), peaks, spec is None and bool(peaks), cc)


def kernels(report: "Report") -> pd.DataFrame:
    """Per kernel name: calls, times, blocks per SM, occupancy, tensor cores, launching operator."""
    return kernel_table(report.operator_tree)


def syncs(report: "Report") -> pd.DataFrame:
    """Per step and synchronising call (``cudaStreamSynchronize``, ``aten::item``, ...): calls and µs."""
    return sync_calls(report.table, report.trace_steps)


def idle(report: "Report") -> pd.DataFrame:
    """Per step, device idle µs split into waiting for the host and other idle time."""
    return idle_time(report.table, report.stretched_steps, report.device.index)


def launches(report: "Report") -> pd.DataFrame:
    """One row per kernel, copy and memset a runtime call launched, over the whole trace:
    ``kind, name, stream, runtime_us, kernel_us, launch_delay_us, device, start_us, runtime``,
    as Holistic Trace Analysis counts them (``analysis.launches``)."""
    return launch.launch_table(report.table, report._launch_pairs)


def queue_length(report: "Report") -> pd.DataFrame:
    """Per device and stream, the launches not yet started (HTA's queue length):
    ``device, stream, mean, max, p25, p50, p75`` over the queue's changes."""
    return launch.queue_length(report.table, report._launch_pairs)


def launch_pairs(report: "Report") -> launch.LaunchPairs:
    """``analysis.launches.launch_pairs``: the launches and the queue lengths share it."""
    return launch.launch_pairs(report.table)


def device_spec(report: "Report") -> DeviceSpec | None:
    """The device's spec-sheet figures (memory and host-link bandwidth, dense peaks per dtype),
    None for a CPU or a device the table does not know (``analysis.device_specs``)."""
    return None if report.device.kind == "cpu" else spec_of(report.device.name)


def flops(report: "Report") -> pd.DataFrame:
    """One row per counted matmul, convolution and attention call (forward and backward):
    ``name, input_shapes, dtype, flops, bytes, source, tensor_cores, start_us, device_us,
    host_us``; FLOPs from ``with_flops`` or the shapes (``--shapes``), NaN where unknown
    (``analysis.flops``)."""
    return flop_calls(report.operator_tree)


def roofline(report: "Report") -> pd.DataFrame:
    """The hot FLOP operators against the device's ridge point: ``operator, dtype, calls, flops,
    bytes, intensity, ridge, time_us, achieved_flops_per_s, bound`` ("compute-bound",
    "memory-bound", "unknown"; ``analysis.roofline.WHAT_FOLLOWS`` says what each means)."""
    device = report.device
    return roofline_of(report.flops, report.device_spec, device.compute_capability if device.kind == "cuda" else None)


def copies(report: "Report") -> pd.DataFrame:
    """Copies per direction and host memory kind over the whole trace: ``direction, host_memory,
    copies, bytes, time_us, gb_per_s, link_gb_per_s, share_of_link`` (``analysis.copies``)."""
    return copy_table(report.table, report.device_spec)


def stream_idle(report: "Report") -> pd.DataFrame:
    """Per device and stream over the profiled steps: busy and idle µs, the idle split into
    kernel wait, host wait and other as HTA splits it (``analysis.streams``)."""
    return idle_streams(report.table, report.stretched_steps)


def kernel_overlap(report: "Report") -> pd.DataFrame:
    """Per device, the µs each pair of compute, communication and memory work ran at once
    in the profiled steps; the diagonal is each one's busy time (``analysis.streams``)."""
    return overlap(report.table, report.stretched_steps)


def collectives(report: "Report") -> pd.DataFrame:
    """Per collective, dtype and group size: calls, bytes, kernel time, latency, nccl-tests'
    algorithm and bus bandwidth, and the time no compute hid (``analysis.collectives``)."""
    return collective_table(collective_calls(report.operator_tree))


def communication(report: "Report") -> pd.DataFrame:
    """Per step: NCCL/gloo collectives' count, µs, share of the step, overlap with compute."""
    return step_communication(report.table, report.stretched_steps)


def rank_comparison(report: "Report") -> pd.DataFrame:
    """One row per rank of ``ranks``: mean breakdown, communication and compute per step,
    and straggler flags with a reason (from each rank's summary: no rank's events are read).
    Empty for a single-rank report."""
    return compared_ranks({r: rep.breakdown for r, rep in report.ranks.items()},
                          {r: rep.communication for r, rep in report.ranks.items()})


def kernel_launch_delay(report: "Report") -> pd.DataFrame:
    """Per kernel name, the mean launch delay of the kernels a launch call put on a stream:
    ``name, mean_launch_delay_us`` (``analysis.launches``); the Kernels views join it by name."""
    return launch.kernel_launch_delay(report.launches)


def kernel_roofline(report: "Report") -> pd.DataFrame:
    """Per kernel name, the roofline figures of the FLOP call that launched it:
    ``name, achieved_flops_per_s, bound`` (``analysis.roofline``): a trace gives a kernel no
    FLOP count of its own; the Kernels views join it by name."""
    return roofline_kernels(report.roofline, kernel_flop_calls(report.operator_tree))
