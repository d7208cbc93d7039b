"""The Report's mimebundle: text/plain, static text/html, and the report data.

The JSON payload (``MIME_TYPE``) is what the JupyterLab extension renders
when a saved notebook is reopened without a kernel, so it carries every table
a reader needs, already reduced to plain lists.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .html import render_html
from .payload import report_payload
from .text import render_text

if TYPE_CHECKING:
    from ..report import Report

MIME_TYPE = "application/vnd.nbprofiler.report+json"


def mimebundle(report: "Report") -> dict[str, Any]:
    return {
        "text/plain": render_text(report),
        "text/html": render_html(report),
        MIME_TYPE: report_payload(report),
    }
