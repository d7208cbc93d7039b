"""The report as plain JSON data (schema ``nbprofiler.report/1``) for the labextension."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .text import operator_view, render_summary_line

if TYPE_CHECKING:
    from ..report import Report

SCHEMA = "nbprofiler.report/1"
MAX_OPERATOR_ROWS = 200


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


def table_payload(df: pd.DataFrame) -> dict[str, Any]:
    return {"columns": [str(c) for c in df.columns],
            "rows": [[_clean(v) for v in row] for row in df.itertuples(index=False)]}


def report_payload(report: "Report") -> dict[str, Any]:
    ops = report.operators.head(MAX_OPERATOR_ROWS) if report.run is None else operator_view(report).head(MAX_OPERATOR_ROWS)
    return {
        "schema": SCHEMA,
        "title": render_summary_line(report),
        "source": "live" if report.run is not None else (report.source_path or "trace"),
        "partial": report.partial,
        "notes": list(report.notes),
        "device": report.device.as_dict(),
        "operators": table_payload(ops),
        "steps": table_payload(report.steps),
    }
