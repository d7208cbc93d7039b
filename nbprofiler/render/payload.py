"""The report as plain JSON data (schema ``nbprofiler.report/1``) for the labextension.

The JupyterLab extension draws a saved report from this when no kernel holds
the explorer any more, so its keys are a contract: ``schema, title, source,
partial, notes, device, summary, breakdown{kind,columns,rows},
operators{columns,rows,total}, steps{columns,rows}, memory{steps{columns,rows},
growth[...]}, suggestions[...]``. Keys may be added; none is renamed or removed
within schema version 1, and the extension treats every key as optional (a
payload written before ``memory`` or ``operators.total`` existed still draws).

``operators`` holds every operator, up to ``MAX_OPERATOR_ROWS``, so the
extension's table sorts and filters the whole run rather than the ``--top``
rows the text and HTML show. Each row costs about 160 bytes of JSON, so a run
with 5,000 distinct operators would add 0.8 MB to every saved notebook; the
cap keeps it near 160 KB, the rows beyond it (the cheapest in the ``--sort``
order) are left out, and ``total`` says how many there were.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .text import operator_view, render_summary_line
from .views import (breakdown_parts, growth_warnings, headline, memory_device, memory_figures, ranked_suggestions,
                    throughput_detail)

if TYPE_CHECKING:
    from ..report import Report

SCHEMA = "nbprofiler.report/1"
MAX_OPERATOR_ROWS = 1000
MAX_STEP_ROWS = 5000
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
    device = memory_device(report)
    return {"steps": table_payload(traced[list(TRACE_MEMORY_COLUMNS)]),
            "growth": [{k: _clean(v) for k, v in row.items()} for row in flagged.to_dict("records")],
            "warnings": growth_warnings(report),
            "device": device,
            "figures": memory_figures(report, device) if device is not None else []}


def report_payload(report: "Report") -> dict[str, Any]:
    """The whole payload (see the module docstring for its keys)."""
    kind, parts = breakdown_parts(report)
    h = headline(report)
    return {
        "schema": SCHEMA,
        "title": render_summary_line(report),
        "source": "live" if report.run is not None else (report.source_path or "trace"),
        "partial": report.partial,
        "notes": list(report.notes),
        "device": report.device.as_dict(),
        "summary": {**{k: _clean(v) for k, v in h.items()}, "throughput_detail": throughput_detail(h)},
        "breakdown": {"kind": kind, **table_payload(parts)},
        # In the --sort order of a live run, cut at the cap rather than at --top.
        "operators": {**table_payload(operator_view(report, MAX_OPERATOR_ROWS)), "total": len(report.operators)},
        "steps": table_payload(report.steps.head(MAX_STEP_ROWS)),
        "memory": memory_payload(report),
        "suggestions": [_json(s.as_dict()) for s in ranked_suggestions(report)],
    }
