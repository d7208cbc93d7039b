"""Kernel launches: how long each launch call took, how long its work waited, and the queues.

Every kernel, copy and memset a stream runs was put there by a runtime call on
the host (``cudaLaunchKernel``, ``cudaMemcpyAsync``...), which carries the same
``correlation`` id (``links.launching_runtime`` pairs them). Three questions
follow from the pairs, and they are the ones Holistic Trace Analysis (HTA)
asks, with its definitions, so that a user can check one tool against the other:

* **Launch delay** (HTA ``get_cuda_kernel_launch_stats``): activity start −
  (call start + call duration), clipped at 0. A long delay means the stream
  was still busy with earlier work when the call returned: the host runs ahead
  of the device, which is what a GPU-bound loop looks like. Delays near 0 on
  every launch mean the device waits for the host instead.
* **GPU shorter than CPU**: activities that ran for less time than the call
  that launched them took. When most are, the device cannot be kept busy by
  one host thread however fast the rest of the loop is: fewer, larger kernels
  (fusion, ``torch.compile``, CUDA graphs) are the cure.
* **Queue length** (HTA ``get_queue_length_summary``): per stream, the launches
  not yet started, counted +1 at each launch call's start and −1 at each
  activity's start, in time order. The summary is over the values after each
  change, not weighted by time, as HTA's is.

What counts as a launch: the calls below that create one activity each on a
stream. HTA's launch statistics count ``cudaLaunchKernel``,
``cudaLaunchKernelExC``, ``cudaMemcpyAsync`` and ``cudaMemsetAsync``; its queue
length adds ``cuLaunchKernel`` and the ROCm calls. Here both use the union, so
the two figures describe the same launches; the driver calls matter because
Triton kernels (``torch.compile``) are launched with ``cuLaunchKernel``.
``cudaGraphLaunch`` is left out by both: one call puts many kernels on the
stream, so neither a per-launch delay nor a +1 per kernel describes it.

Where the figures differ from HTA's, on the same trace:

* HTA (``include_last_profiler_step=False``, its default) drops every host
  event from the start of the last ``ProfilerStep`` on, and the device work
  they launched. Here the whole trace counts, so on the shared traces the
  launch counts are higher by about one step's launches, and the queues hold
  that step too. Restricted to the runtime calls HTA keeps, the counts agree.
* HTA rounds fractional (ns) timestamps to whole µs (start up, end down), so
  on such traces its durations are up to 2 µs shorter and its delays up to
  1 µs longer; counts against a threshold may move by a few launches.
* HTA's launch statistics leave out the ROCm calls (a ROCm trace has no
  launches there, while its queue length counts them); here they are launches.
* A device activity whose launch call is not in the trace (the profiler
  started after the call, or dropped it) cannot be paired, here as in HTA: it
  is neither a launch nor in a queue. So is an activity of another call
  (``cudaMemcpy``, ``cudaGraphLaunch``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.table import DEVICE_WORK_KINDS, EventTable, Kind
from .event_kinds import of_kind
from .links import launching_runtime

# The runtime and driver calls that put one kernel, copy or memset on a stream (see the module doc).
LAUNCH_CALLS = (
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
    "cudaMemcpyAsync", "cudaMemsetAsync",
    "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
    "hipMemcpyAsync", "hipMemsetAsync", "hipMemcpyWithStream",
)

LAUNCH_COLUMNS = ("kind", "name", "stream", "runtime_us", "kernel_us", "launch_delay_us", "device", "start_us",
                  "runtime")
QUEUE_COLUMNS = ("device", "stream", "mean", "max", "p25", "p50", "p75")
# HTA's ``launch_delay_cutoff``: a launch that waited longer than this (µs) to start counts as delayed.
DELAY_THRESHOLD_US = 100.0

# (activity, launch call) event indices of every launched activity, by activity start: ``launch_pairs``.
LaunchPairs = tuple[np.ndarray, np.ndarray]

_KIND_LABEL = np.full(max(Kind) + 1, "", dtype=object)
_KIND_LABEL[[Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET]] = ["kernel", "memcpy", "memset"]


def launch_pairs(table: EventTable) -> LaunchPairs:
    """(activity, launch call) event indices of every launched activity, by activity start.

    Ties keep the table's order (a stable sort), so the result is the same on every call.
    The launch table and the queue lengths both start from it: a report computes it once.
    """
    work = np.flatnonzero(of_kind(table.kind, DEVICE_WORK_KINDS))
    call = launching_runtime(table, work)
    is_launch = np.isin(table.names, np.array(LAUNCH_CALLS, dtype=object))
    paired = call >= 0
    keep = paired.copy()
    keep[paired] = is_launch[table.name_code[call[paired]]]
    work, call = work[keep], call[keep]
    order = np.argsort(table["ts"][work], kind="stable")
    return work[order], call[order]


def launch_table(table: EventTable, pairs: LaunchPairs | None = None) -> pd.DataFrame:
    """One row per launched activity, in order of start (module doc: what counts).

    ``runtime_us`` is the launch call's duration, ``kernel_us`` the activity's (a
    copy's or memset's too), ``launch_delay_us`` HTA's launch delay: activity start
    − call end, clipped at 0 (a trace's clocks can put the start a little before
    the call's end). ``start_us`` is the activity's start on the trace clock,
    ``runtime`` the launch call's name. Names are the trace's text. ``pairs``:
    ``launch_pairs(table)``, where the caller has it.
    """
    work, call = launch_pairs(table) if pairs is None else pairs
    ts, dur = table["ts"], table["dur"]
    delay = np.maximum(ts[work] - (ts[call] + dur[call]), 0.0)
    return pd.DataFrame({
        "kind": _KIND_LABEL[table.kind[work]],
        "name": table.names[table.name_code[work]],
        "stream": table["stream"][work],
        "runtime_us": dur[call],
        "kernel_us": dur[work],
        "launch_delay_us": delay,
        "device": table["device"][work],
        "start_us": ts[work],
        "runtime": table.names[table.name_code[call]],
    }, columns=list(LAUNCH_COLUMNS))


def _queue_steps(table: EventTable, pairs: LaunchPairs | None = None) -> dict[str, np.ndarray]:
    """Every change of every stream's queue: ``device, stream, ts, outstanding`` as arrays
    (read as arrays, never as a frame), grouped by stream, in time order within each.

    Each launch is two events on its activity's stream: +1 at the call's start and −1
    at the activity's start. At equal times the +1 goes first (HTA leaves such ties
    to an unstable sort): work is launched before it starts. Every stream holds as
    many +1 as −1, so one running sum over the streams one after another starts each
    stream at 0.
    """
    work, call = launch_pairs(table) if pairs is None else pairs
    device = np.tile(table["device"][work], 2)
    stream = np.tile(table["stream"][work], 2)
    ts = np.concatenate([table["ts"][call], table["ts"][work]])
    delta = np.repeat(np.array([1, -1], dtype=np.int64), len(work))
    order = np.lexsort((-delta, ts, stream, device))
    return {"device": device[order], "stream": stream[order], "ts": ts[order], "outstanding": np.cumsum(delta[order])}


def queue_length(table: EventTable, pairs: LaunchPairs | None = None) -> pd.DataFrame:
    """Per device and stream, the launches waiting to start (module doc: HTA's queue length):
    the mean, the maximum and the quartiles of the count after each change.

    A mean in the tens to hundreds means the host is far ahead and the device is the
    bottleneck; a mean below 1 means every launch starts almost at once, and the
    device waits for the host. Not weighted by time: a quick burst of launches counts
    as much as a long wait, as in HTA. ``pairs``: ``launch_pairs(table)``, where the caller has it.
    """
    steps = _queue_steps(table, pairs)
    if len(steps["ts"]) == 0:
        return pd.DataFrame({c: pd.Series(dtype=np.int64 if c in ("device", "stream", "max") else np.float64)
                             for c in QUEUE_COLUMNS})
    # The steps come sorted by (device, stream): each stream is one run of rows, summarised in
    # numpy (a groupby's quantiles cost ten times more on a million-event trace).
    device, stream, count = steps["device"], steps["stream"], steps["outstanding"]
    starts = np.flatnonzero(np.concatenate(([True], (device[1:] != device[:-1]) | (stream[1:] != stream[:-1]))))
    rows = []
    for a, b in zip(starts, np.append(starts[1:], len(count))):
        p25, p50, p75 = np.percentile(count[a:b], (25, 50, 75))  # linear interpolation, as pandas' quantile
        rows.append((int(device[a]), int(stream[a]), float(count[a:b].mean()), int(count[a:b].max()),
                     float(p25), float(p50), float(p75)))
    return pd.DataFrame(rows, columns=list(QUEUE_COLUMNS))


def queue_length_series(table: EventTable, device: int, stream: int) -> pd.DataFrame:
    """One stream's queue length over time (``ts``, trace clock; ``outstanding``): a step
    function that holds each value until the next row, for a chart."""
    steps = _queue_steps(table)
    mine = (steps["device"] == device) & (steps["stream"] == stream)
    return pd.DataFrame({"ts": steps["ts"][mine], "outstanding": steps["outstanding"][mine]})


@dataclass(frozen=True)
class LaunchSummary:
    """The launch table in the figures HTA reports (``get_cuda_kernel_launch_stats``).

    ``delayed`` counts launch delays over the threshold (HTA's ``launch_delay_cutoff``,
    100 µs by default); ``gpu_shorter_than_cpu`` activities shorter than their launch
    call. HTA's chart of short kernels also keeps only calls of at most 50 µs (its
    ``runtime_cutoff``); this count has no such cut, so it can be larger. The delay
    figures are None when nothing was launched.
    """

    launches: int
    delayed: int
    gpu_shorter_than_cpu: int
    mean_delay_us: float | None
    median_delay_us: float | None
    p95_delay_us: float | None


def launch_summary(launches: pd.DataFrame, delay_threshold_us: float = DELAY_THRESHOLD_US) -> LaunchSummary:
    """Counts and delay statistics of a ``launch_table`` (see ``LaunchSummary``)."""
    delay = launches["launch_delay_us"].to_numpy(dtype=np.float64)
    shorter = launches["kernel_us"].to_numpy(dtype=np.float64) < launches["runtime_us"].to_numpy(dtype=np.float64)
    has = len(delay) > 0
    return LaunchSummary(
        launches=len(delay),
        delayed=int((delay > delay_threshold_us).sum()),
        gpu_shorter_than_cpu=int(shorter.sum()),
        mean_delay_us=float(delay.mean()) if has else None,
        median_delay_us=float(np.median(delay)) if has else None,
        p95_delay_us=float(np.quantile(delay, 0.95)) if has else None,
    )


def kernel_launch_delay(launches: pd.DataFrame) -> pd.DataFrame:
    """Per kernel name over a ``launch_table``'s kernels: ``name, mean_launch_delay_us``. Kernels
    the trace holds no launch call of have no row: the Kernels views join this by name and leave
    them blank, never a guess."""
    kernels = launches[launches["kind"] == "kernel"]
    # Names as objects: hashed twice as fast as the str column (a million-event trace has 1e5 kernels).
    code, names = pd.factorize(kernels["name"].to_numpy(dtype=object))
    delay = kernels["launch_delay_us"].to_numpy(dtype=np.float64)
    mean = np.bincount(code, weights=delay, minlength=len(names)) / np.bincount(code, minlength=len(names))
    return pd.DataFrame({"name": pd.Index(names, dtype=object), "mean_launch_delay_us": mean})
