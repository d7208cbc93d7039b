"""The report as plain JSON data (schema ``nbprofiler.report/1``) for the labextension.

The JupyterLab extension draws a saved report from this when no kernel holds
the explorer any more, so its keys are a contract: ``schema, title, source,
partial, notes, device, summary, breakdown{kind,columns,rows},
operators{columns,rows,total}, steps{columns,rows}, memory{steps{columns,rows},
growth[...]}, suggestions[...], charts{name: spec}, timeline (payload or null),
kernels{columns,rows,total}, lines{columns,rows,why}, modules{columns,rows,total,why},
flame{columns,rows,total,merged,note,how,has_device} (``flame.flame_payload``, null without operator time),
saved_from{kind,when,path}, hardware{how,absent,device,device_facts,launch_facts,sections},
distributed{ranks,straggler,verdict,chart,sections} | null, cycles{verdict,drifted,charts,sections} | null,
tabs, more_views, made_here, report_token, origin``.
Keys may be added; none is renamed or removed within schema version 1, and the extension treats every key as optional (a
payload written before ``memory`` or ``operators.total`` existed still draws).

``charts`` holds the front end's chart specs (``charts.build``) of the
charts that have data, ``timeline`` the Timeline tab's events
(``timeline_data.build``), both as the report's view model keeps them, so a
notebook reopened without a kernel shows every view the live explorer has. ``lines`` and ``modules`` carry
``why``: the reason, in words, when the run recorded none. ``tabs`` names the tabs with content, in order,
and ``more_views`` is the one line saying which flags would add the others (``tabs.py``): the saved
view shows those tabs and that line rather than deciding again. ``saved_from`` says
what the report was made from (``kind`` "live run", "trace file" or "saved
file", ``when`` as ISO time, ``path``), which the saved report's tag shows.

``operators`` holds every operator, up to ``MAX_OPERATOR_ROWS``, so the
extension's table sorts and filters the whole run rather than the ``--top``
rows the text and HTML show. Each row costs about 160 bytes of JSON, so a run
with 5,000 distinct operators would add 0.8 MB to every saved notebook; the
cap keeps it near 160 KB, the rows beyond it (the cheapest in the ``--sort``
order) are left out, and ``total`` says how many there were. ``kernels`` is
capped the same way (``MAX_KERNEL_ROWS``, by total time), and ``modules`` as
the HTML report's tree (``MAX_MODULE_ROWS``).

``made_here`` says whether this kernel made the report (``Report.made_here``), ``report_token``
is its token (``origin.issue``: null for a report made elsewhere) and ``origin`` where a report not
made here came from, in words (null for one made here): "Try it" runs a card's code only after the
kernel confirms the token, and otherwise inserts it without running, saying why.

``hardware`` is the Hardware tab (``hardware.hardware_view``): ``how`` how to read it, ``absent`` the one
line of a run without device work (null otherwise), the device's and the
launches' figures as ``[label, text]`` pairs worded by Python, and ``sections``,
each ``{key, title, how, columns, labels, units, rows}`` with raw values and the
unit each column reads in (``hardware.UNITS``), and ``chart``: the name of the chart in ``charts`` drawn at
the section's top (the roofline's), or null. Kernels carry ``mean_launch_delay_us``, joined from the
launches by kernel name, and the launching FLOP operator's ``achieved_flops_per_s`` and ``bound``
(``hardware.with_kernel_figures``), with ``help``: what those two columns are, by column.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import origin, view_model
from .charts import CHART_NAMES
from .hardware import HOW, KERNEL_ROOFLINE_HELP, Section
from .html import MAX_MODULE_ROWS
from .tabs import more_views, shown_names
from .text import render_summary_line

if TYPE_CHECKING:
    from ..report import Report

SCHEMA = "nbprofiler.report/1"
MAX_OPERATOR_ROWS = 1000
MAX_STEP_ROWS = 5000
MAX_KERNEL_ROWS = 1000
# The kernel table's columns in the order the Kernels tab shows them; ``category`` is kernel_kinds'.
KERNEL_PAYLOAD_COLUMNS = ("name", "short_name", "category", "calls", "total_us", "mean_us", "max_us", "mean_occupancy",
                          "mean_blocks_per_sm", "tensor_cores", "mean_launch_delay_us", "achieved_flops_per_s",
                          "bound", "operator")
MODULE_COLUMNS = ("module", "parent", "type", "depth", "calls", "forward_host_us", "backward_host_us",
                  "forward_device_us", "backward_device_us")
# The trace's per-step memory columns (nbprofiler.analysis.memory.STEP_COLUMNS) the extension draws.
TRACE_MEMORY_COLUMNS = ("step", "device", "end_allocated_bytes", "peak_allocated_bytes", "peak_reserved_bytes",
                        "reconstructed")


def _clean(value: Any) -> Any:
    """JSON-safe scalars: numpy to Python, NaN/inf to None."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def _json(value: Any) -> Any:
    """Nested data (a suggestion's evidence) made JSON-safe all the way down."""
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    return _clean(value)


def table_payload(df: pd.DataFrame) -> dict[str, Any]:
    """``{columns, rows}``: a DataFrame as JSON lists, row by row (the extension's table shape)."""
    return {"columns": [str(c) for c in df.columns],
            "rows": [[_clean(v) for v in row] for row in df.itertuples(index=False)]}


def memory_payload(report: "Report") -> dict[str, Any]:
    """Memory per profiled step and device from the trace, and Python's growth verdict.

    ``steps`` holds the trace's end-of-step and peak allocated bytes (the
    figures the HTML's memory chart draws for a trace file, which has no
    per-step sampler). ``growth`` holds the series ``report.memory_growth``
    flagged, with their slope, so the extension shows the same leak warning as
    the text and HTML reports instead of judging growth with a rule of its own;
    ``warnings`` those warnings as Python words them, and ``figures`` the memory
    headline (``memory_figures``) of ``device``, which the memory views describe.
    ``reconstructed`` marks levels counted from the start of recording (CPU).
    """
    steps = report.memory_steps
    traced = steps[steps["end_allocated_bytes"].notna()].head(MAX_STEP_ROWS)
    growth = report.memory_growth
    flagged = growth[growth["flagged"]].drop(columns=["flagged", "rising_share"])
    model = view_model.of(report)
    return {"steps": table_payload(traced[list(TRACE_MEMORY_COLUMNS)]),
            "growth": [{k: _clean(v) for k, v in row.items()} for row in flagged.to_dict("records")],
            "warnings": list(report.memory_warnings),
            "device": model.memory_device,
            "figures": list(model.memory_figures)}


def kernels_payload(report: "Report") -> dict[str, Any]:
    """Every kernel by total time, up to ``MAX_KERNEL_ROWS``, with its category and full name."""
    kernels = view_model.of(report).kernels.head(MAX_KERNEL_ROWS)
    return {**table_payload(kernels[list(KERNEL_PAYLOAD_COLUMNS)]), "total": len(report.kernels),
            "help": KERNEL_ROOFLINE_HELP}


def lines_payload(report: "Report") -> dict[str, Any]:
    """Every line of the cell with its time (the Cell lines tab), or why there are none."""
    if report.lines.empty:
        return {"columns": [], "rows": [], "why": view_model.of(report).lines_absent}
    return {**table_payload(view_model.of(report).lines), "why": None}


def modules_payload(report: "Report") -> dict[str, Any]:
    """The module tree's rows in call order (``parent`` names each row's parent), or why there are none."""
    modules = report.modules
    if modules.empty:
        return {"columns": [], "rows": [], "total": 0, "why": view_model.of(report).modules_absent}
    return {**table_payload(modules.head(MAX_MODULE_ROWS)[list(MODULE_COLUMNS)]), "total": len(modules),
            "why": None}


def hardware_payload(report: "Report") -> dict[str, Any]:
    """The Hardware tab's figures and tables (see the module docstring)."""
    view = view_model.of(report).hardware
    return {"how": HOW, "absent": view.absent, "device": view.device,
            "device_facts": [list(f) for f in view.device_facts],
            "launch_facts": [list(f) for f in view.launch_facts],
            "sections": [{"key": s.key, "title": s.title, "how": s.how, "labels": s.labels(), "units": s.units(),
                          "chart": s.chart, **table_payload(s.table)} for s in view.sections]}


def distributed_payload(report: "Report") -> dict[str, Any] | None:
    """The Distributed tab (``distributed.distributed_view``), None without distributed data."""
    view = view_model.of(report).distributed
    if view is None:
        return None
    return {"ranks": list(view.ranks), "straggler": list(view.straggler), "verdict": view.verdict, "chart": view.chart,
            "sections": sections_payload(view.sections)}


def cycles_payload(report: "Report") -> dict[str, Any] | None:
    """The Cycles tab (``cycles.cycles_view``), None for a run without cycles."""
    view = view_model.of(report).cycles
    if view is None:
        return None
    return {"verdict": view.verdict, "drifted": view.drifted, "charts": list(view.charts),
            "sections": sections_payload(view.sections)}


def sections_payload(sections: Sequence[Section]) -> list[dict[str, Any]]:
    """A view's tables, each with its title, how to read it, and a label and unit per column."""
    return [{"key": s.key, "title": s.title, "how": s.how, "labels": s.labels(), "units": s.units(),
             **table_payload(s.table)} for s in sections]


def saved_from(report: "Report") -> dict[str, Any]:
    """What the report was made from, for the saved report's tag: a live run (now: the payload
    is written as the run ends), a trace file (its modification time) or a run kept in a file."""
    if report.stored:
        when = report.stored.get("ran_at")
        return {"kind": "saved file", "when": str(when) if when else None, "path": None}
    if report.ran_live:
        # The first payload of a run is written as its loop ends; a later display keeps that time.
        when = view_model.of(report).first_written
        return {"kind": "live run", "when": when, "path": report.notebook}
    path = report.source_path
    when = None
    if path is not None and report.source_is_local and Path(path).exists():
        mtime = Path(path).stat().st_mtime
        when = datetime.fromtimestamp(mtime, timezone.utc).astimezone().isoformat(timespec="seconds")
    return {"kind": "trace file", "when": when, "path": path}


def charts_payload(report: "Report") -> dict[str, Any]:
    """The chart specs that have data, by name."""
    specs = {name: view_model.of(report).chart_spec(name) for name in CHART_NAMES}
    return {name: spec for name, spec in specs.items() if spec is not None}


def report_payload(report: "Report") -> dict[str, Any]:
    """The whole payload (see the module docstring for its keys)."""
    model = view_model.of(report)
    kind, parts = model.breakdown
    h = model.headline
    return {
        "schema": SCHEMA,
        "title": render_summary_line(report),
        "source": "live" if report.ran_live else (report.source_path or "trace"),
        "partial": report.partial,
        "notes": list(report.notes),
        "device": report.device.as_dict(),
        "summary": {**{k: _clean(v) for k, v in h.items()}, "throughput_detail": model.throughput_detail,
                    "mfu_detail": model.mfu_detail},
        "breakdown": {"kind": kind, **table_payload(parts)},
        # In the --sort order of a live run, cut at the cap rather than at --top.
        "operators": {**table_payload(model.operators(MAX_OPERATOR_ROWS)), "total": len(report.operators)},
        "steps": table_payload(report.steps.head(MAX_STEP_ROWS)),
        "memory": memory_payload(report),
        "suggestions": [_json(s.as_dict()) for s in model.suggestions],
        "charts": charts_payload(report),
        "timeline": model.saved_timeline_payload(),
        "kernels": kernels_payload(report),
        "lines": lines_payload(report),
        "modules": modules_payload(report),
        "flame": model.flame_payload(),
        "saved_from": saved_from(report),
        "hardware": hardware_payload(report),
        "distributed": distributed_payload(report),
        "cycles": cycles_payload(report),
        "tabs": list(shown_names(model.tabs)),
        "more_views": more_views(model.tabs),
        "made_here": report.made_here,
        "report_token": model.token,
        "origin": origin.words(report),
    }
