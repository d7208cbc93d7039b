"""The report as plain JSON data (schema ``nbprofiler.report/1``) for the labextension.

The JupyterLab extension draws a saved report from this when no kernel holds
the explorer any more, so its keys are a contract: ``schema, title, source,
partial, notes, device, summary, breakdown{kind,columns,rows},
operators{columns,rows}, steps{columns,rows}, suggestions[...]``. Keys may be
added; none is renamed or removed within schema version 1.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .text import operator_view, render_summary_line
from .views import breakdown_parts, headline, ranked_suggestions

if TYPE_CHECKING:
    from ..report import Report

SCHEMA = "nbprofiler.report/1"
MAX_OPERATOR_ROWS = 200
MAX_STEP_ROWS = 5000


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
    return {"columns": [str(c) for c in df.columns],
            "rows": [[_clean(v) for v in row] for row in df.itertuples(index=False)]}


def report_payload(report: "Report") -> dict[str, Any]:
    kind, parts = breakdown_parts(report)
    h = headline(report)
    return {
        "schema": SCHEMA,
        "title": render_summary_line(report),
        "source": "live" if report.run is not None else (report.source_path or "trace"),
        "partial": report.partial,
        "notes": list(report.notes),
        "device": report.device.as_dict(),
        "summary": {k: _clean(v) for k, v in h.items()},
        "breakdown": {"kind": kind, **table_payload(parts)},
        # A live run shows what --sort/--top asked for; a trace file its top rows.
        "operators": table_payload(operator_view(report, None if report.run is not None else MAX_OPERATOR_ROWS)),
        "steps": table_payload(report.steps.head(MAX_STEP_ROWS)),
        "suggestions": [_json(s.as_dict()) for s in ranked_suggestions(report)],
    }
