"""The Hardware view's data: what the device is, and how the run used it.

One source for the three views that show it (the explorer's Hardware tab in
``widget.py``, the static HTML's Hardware section in ``html.py``, the saved
report's ``hardware`` key in ``payload.py``), so they show the same figures:

* the device with its spec-sheet figures (``report.device_spec``), or that the
  spec table does not know it;
* launches (``report.launch_summary()``) and each stream's queue
  (``report.queue_length``);
* each stream's busy and idle time (``report.stream_idle``) and how long the
  kinds of device work ran at once (``report.kernel_overlap``);
* copies per direction and host memory against the host link (``report.copies``);
* roofline and collectives, only where they have rows (``optional_table``); the
  roofline section names its chart (``charts.roofline_spec``), which each view
  draws at its top where the chart has data;
* the Kernels tables' per-kernel figures (``with_kernel_figures``): the mean
  launch delay (``report.kernel_launch_delay``), and the achieved FLOP/s and
  bound of the operator that launched each kernel (``report.kernel_roofline``).

A section appears only when its table has rows: a view never shows an empty
placeholder. A run without device work gets one line (``NO_DEVICE_WORK``)
instead of the sections.

Tables keep their raw values (the saved view sorts and formats them itself);
``UNITS`` says per column how a value reads, and ``cell_text`` writes it for the
Python views. Names in the tables come from traces and are text only: the
views escape them.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis.device_specs import DTYPES
from ..analysis.kernel_kinds import kernel_kinds
from ..analysis.kernel_names import short_kernel_names
from ..analysis.launches import DELAY_THRESHOLD_US
from ..analysis.streams import KERNEL_WAIT_US
from ..format import fmt_bytes, fmt_pct, fmt_rate, fmt_si, fmt_us

if TYPE_CHECKING:
    from ..report import Report

NO_DEVICE_WORK = "This run has no device work to show: no kernel, copy or memset ran on a GPU."
NOT_IN_SPEC_TABLE = "not in the spec table, so there are no spec-sheet figures to compare with"
HOW = ("The device and its spec-sheet figures; how the host launched work (a launch delay is how long work waited "
       "on its stream after the launch call returned) and how many launches each stream held; each stream's busy "
       "and idle time; how long kinds of device work ran at once; and copies against the host link.")
# Per column: how its values read ("text", "count", "us", "bytes", "share", "gb_per_s", "flops", "flops_per_s",
# "number"); columns not named here read by their name's suffix (``unit_of``).
UNITS = {
    "device": "count", "stream": "count", "activities": "count", "copies": "count", "mean": "number",
    "max": "count", "direction": "text", "host_memory": "text", "type": "text", "gb_per_s": "gb_per_s",
    "link_gb_per_s": "gb_per_s", "share_of_link": "share", "bytes": "bytes",
}
LABELS = {
    "device": "device", "stream": "stream", "mean": "mean queued", "max": "most queued", "activities": "activities",
    "busy_us": "busy", "idle_us": "idle", "kernel_wait_us": "kernel wait", "host_wait_us": "host wait",
    "other_us": "other idle", "type": "kind of work", "compute": "with compute",
    "communication": "with communication", "memory": "with memory work", "direction": "direction",
    "host_memory": "host memory", "copies": "copies", "bytes": "bytes", "time_us": "time", "gb_per_s": "rate",
    "share_of_link": "share of host link", "mean_launch_delay_us": "launch delay", "operator": "operator",
    "flops": "FLOPs", "intensity": "FLOPs per byte", "ridge": "ridge point", "achieved_flops_per_s": "achieved",
    "latency_us": "latency", "algbw_gb_per_s": "algorithm bandwidth", "busbw_gb_per_s": "bus bandwidth",
    "exposed_us": "exposed", "exposed_share": "exposed share",
}

# The tables other analyses add to the Report: (attribute, title, how to read it, the chart on top or None).
OPTIONAL_SECTIONS = (
    ("roofline", "Roofline", "The operators doing the most FLOPs: FLOPs per byte against the device's ridge point, "
                             "achieved FLOP/s, and what bounds them.", "roofline"),
    ("collectives", "Collectives", "Per collective, dtype and group size: calls, bytes, kernel time, latency, "
                                   "nccl-tests' algorithm and bus bandwidth, and the time no compute hid.", None),
)
# The Kernels tables' columns taken from the launching operator's roofline row, with what each one is
# (the header's hover text in every view): a kernel has no FLOP count of its own in a trace.
KERNEL_ROOFLINE_HELP = {
    "achieved_flops_per_s": "The achieved FLOP/s of the operator that launched the kernel (its FLOPs over its "
                            "calls' device time, as the Hardware view's roofline counts them), not the kernel's "
                            "own rate; blank where no FLOP operator of the roofline (those with the most device "
                            "time) launched it.",
    "bound": "What bounds the launching operator on this device: compute-bound at or above the ridge point (peak "
             "FLOP/s over memory bandwidth), memory-bound below it; blank where it is not known.",
}


@dataclass(frozen=True)
class Section:
    """One table of the view: ``key`` names it in the payload, ``how`` says how to read it."""

    key: str
    title: str
    how: str
    table: pd.DataFrame
    chart: str | None = None  # the chart (``charts.build`` name) drawn at the section's top, where it has data

    def units(self) -> list[str]:
        return [unit_of(c, self.table[c]) for c in self.table.columns]

    def labels(self) -> list[str]:
        return [LABELS.get(c, re.sub(r"_(us|bytes)$", "", c).replace("_", " ")) for c in self.table.columns]


@dataclass(frozen=True)
class HardwareView:
    """``absent`` is the one line of a run without device work (then nothing else is set);
    ``device`` the device's name, ``device_facts`` its spec-sheet figures as (label, text),
    ``launch_facts`` the launch summary as (label, text), ``sections`` the tables with rows."""

    absent: str | None
    device: str
    device_facts: list[tuple[str, str]]
    launch_facts: list[tuple[str, str]]
    sections: list[Section]


def unit_of(column: str, values: pd.Series) -> str:
    """How a column's values read: its entry in ``UNITS``, else by its name's suffix, else by its dtype."""
    if column in UNITS:
        return UNITS[column]
    if column.endswith("_us") or column in ("compute", "communication", "memory"):
        return "us"
    if column.endswith("_bytes"):
        return "bytes"
    if column.endswith("share") or column.startswith("share"):
        return "share"
    if column.endswith("gb_per_s"):
        return "gb_per_s"
    if column.endswith("flops_per_s"):
        return "flops_per_s"
    if column == "flops" or column.endswith("_flops"):
        return "flops"
    if pd.api.types.is_integer_dtype(values):
        return "count"
    return "number" if pd.api.types.is_numeric_dtype(values) else "text"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


FORMATS: dict[str, Callable[[Any], str]] = {
    "text": lambda v: str(v) or "–",
    "count": lambda v: f"{int(v):,}",
    "us": fmt_us,
    "bytes": fmt_bytes,
    "share": fmt_pct,
    "gb_per_s": lambda v: fmt_rate(float(v)),
    "flops": lambda v: fmt_si(float(v), "FLOP"),
    "flops_per_s": lambda v: fmt_si(float(v), "FLOP/s"),
    "number": lambda v: f"{float(v):,.1f}",
}


def cell_text(unit: str, value: Any) -> str:
    """A table value as the Python views write it ("–" where it is missing)."""
    return "–" if _missing(value) else FORMATS[unit](value)


def has_device_work(report: "Report") -> bool:
    """Whether any kernel, copy or memset ran (what the view has to show)."""
    return not (report.launches.empty and report.stream_idle.empty)


def device_facts(report: "Report") -> list[tuple[str, str]]:
    """The device's spec-sheet figures, or one fact saying the spec table does not know it."""
    spec = report.device_spec
    if spec is None:
        return [("spec sheet", NOT_IN_SPEC_TABLE)]
    peaks = [f"{dtype} {tflops:,g}" for dtype in DTYPES
             if (tflops := getattr(spec, f"{dtype}_tflops")) is not None]
    return [("memory bandwidth", fmt_rate(spec.memory_gb_per_s)),
            ("host link", f"{spec.host_link}, {fmt_rate(spec.host_link_gb_per_s)} per direction"),
            ("dense peak (TFLOP/s)", ", ".join(peaks)),
            ("figures from", spec.source)]


def launch_facts(report: "Report") -> list[tuple[str, str]]:
    """``report.launch_summary()`` in words: the counts and the delay statistics."""
    s = report.launch_summary(DELAY_THRESHOLD_US)
    if s.launches == 0:
        return []
    return [("launches", f"{s.launches:,}"),
            (f"delayed over {fmt_us(DELAY_THRESHOLD_US)}", f"{s.delayed:,} ({fmt_pct(s.delayed / s.launches)})"),
            ("shorter than their launch call",
             f"{s.gpu_shorter_than_cpu:,} ({fmt_pct(s.gpu_shorter_than_cpu / s.launches)})"),
            ("mean launch delay", fmt_us(s.mean_delay_us)),
            ("median launch delay", fmt_us(s.median_delay_us)),
            ("p95 launch delay", fmt_us(s.p95_delay_us))]


def with_kernel_figures(kernels: pd.DataFrame, report: "Report") -> pd.DataFrame:
    """``kernels`` (a kernel table by name) with the columns the Kernels tables add by kernel name:
    ``mean_launch_delay_us`` (``report.kernel_launch_delay``), ``achieved_flops_per_s`` and ``bound``
    (``report.kernel_roofline``: the launching FLOP operator's)."""
    delay = report.kernel_launch_delay.set_index("name")["mean_launch_delay_us"]
    roof = report.kernel_roofline.set_index("name")
    names = kernels["name"]
    bound = names.map(roof["bound"]).to_numpy(dtype=object)
    return kernels.assign(mean_launch_delay_us=names.map(delay).astype(np.float64),
                          achieved_flops_per_s=names.map(roof["achieved_flops_per_s"]).astype(np.float64),
                          bound=np.where(pd.isna(bound), "", bound).astype(object))


def kernel_rows(report: "Report") -> pd.DataFrame:
    """Every kernel by total time as the Kernels tables show it: with its ``short_name``
    (``kernel_names``: one line in a table, the whole ``name`` on hover), its ``category``
    (``kernel_kinds``) and the figures ``with_kernel_figures`` adds."""
    kernels = report.kernels
    named = kernels.assign(short_name=short_kernel_names(kernels["name"]), category=kernel_kinds(kernels["name"]))
    return with_kernel_figures(named, report)


def optional_table(report: "Report", name: str) -> pd.DataFrame | None:
    """A table of the Report that may have no rows (roofline, collectives: none on a CPU, none
    kept of a run reloaded from the history), when it has rows; else None. A name the Report
    does not have raises: a misspelt name must not read as "no table"."""
    if not hasattr(type(report), name):
        raise AttributeError(f"a Report has no table {name!r}")
    if name in report.lacks:
        return None
    table = getattr(report, name)
    return table if isinstance(table, pd.DataFrame) and not table.empty else None


def sections(report: "Report") -> list[Section]:
    """The view's tables, each only when it has rows."""
    out = [
        Section("queues", "Queued launches per stream",
                "Launches waiting on each stream (+1 at a launch call, −1 when its work starts), over the changes "
                "of the count, as HTA counts them. A long queue means the host runs ahead of the device.",
                report.queue_length[["device", "stream", "mean", "max"]]),
        Section("stream_idle", "Idle time per stream",
                "Each stream's busy and idle time in the profiled steps; idle split into kernel wait (gaps under "
                f"{KERNEL_WAIT_US:g} µs between back-to-back work), host wait (the stream waited for a launch) and "
                "other idle.",
                report.stream_idle[["device", "stream", "activities", "busy_us", "idle_us", "kernel_wait_us",
                                    "host_wait_us", "other_us"]]),
        Section("overlap", "Device work running at once",
                "Per device, how long each pair of kinds of work ran at the same time; the diagonal is each "
                "kind's busy time. Communication under compute is hidden; the rest is exposed.",
                report.kernel_overlap),
        Section("copies", "Copies",
                "Copies per direction and host memory kind, their rate, and that rate's share of the host link "
                "(the spec sheet's per-direction figure). Pageable host memory copies slower than pinned.",
                report.copies[["direction", "host_memory", "copies", "bytes", "time_us", "gb_per_s",
                               "share_of_link"]]),
    ]
    for key, title, how, chart in OPTIONAL_SECTIONS:
        table = optional_table(report, key)
        if table is not None:
            out.append(Section(key, title, how, table, chart))
    return [s for s in out if not s.table.empty]


def hardware_view(report: "Report") -> HardwareView:
    """Everything the Hardware view shows (module doc), or its one line for a run without device work."""
    if not has_device_work(report):
        return HardwareView(NO_DEVICE_WORK, report.device.name, [], [], [])
    return HardwareView(None, report.device.name, device_facts(report), launch_facts(report), sections(report))
