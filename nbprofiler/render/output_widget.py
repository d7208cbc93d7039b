"""A MIME bundle shown inside the ipywidgets explorer, drawn by the front end's own renderers.

An ``Output`` widget whose ``outputs`` hold the bundle as one ``display_data``:
JupyterLab draws it with the extension's renderer (the interactive chart), and a
front end without the extension falls back to the bundle's ``text/html`` (the
static SVG). Nothing is printed through the kernel's display machinery, so the
widget can be built at any time, not only while a cell runs.
"""
from __future__ import annotations

from typing import Any

import ipywidgets as widgets


def bundle_output(bundle: dict[str, Any] | None) -> widgets.Output | None:
    """An ``Output`` showing ``bundle``, or None for no bundle (a chart without data)."""
    if bundle is None:
        return None
    out = widgets.Output()
    out.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)
    return out
