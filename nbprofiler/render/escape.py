"""Escaping of untrusted text (names from traces, the cell's source, paths) for HTML and SVG.

A module of its own so that every renderer, the chart SVG among them, uses the same function
without importing the HTML report.
"""
from __future__ import annotations

import html


def esc(value: object) -> str:
    """Escape untrusted text for HTML text and attribute contexts."""
    return html.escape(str(value), quote=True)
