"""What a front end is shown: the MIME types of nbprofiler's outputs, which front end runs the
cell, and the display bundle of a Report or a Comparison around the widget it shows.

The bundle holds the explorer, static HTML, text and the report data, in one output.

Why one output: a notebook saved with it shows the report wherever it is
opened. With a live kernel, JupyterLab shows the explorer widget (the
labextension's renderer for ``MIME_TYPE`` ranks first and hands over to the
widget renderer while the widget's comm is open). Reopened without a kernel,
the labextension draws the report from ``MIME_TYPE``; nbconvert, GitHub and
VS Code without a kernel fall back to ``text/html``; a terminal gets
``text/plain``. None of them shows "Error displaying widget: model not found".

The widget goes in only where a person runs the cell in a widget front end:
an ipykernel with comm support, running a request that allows stdin. nbclient,
papermill and ``nbconvert --execute`` send no stdin, and there a widget would
only leave saved widget state behind, which makes nbconvert's HTML export show
an empty widget instead of the static report.

The widget is the caller's (``show``: its widget-view data, once it is displayed,
``TabbedView.displayed``): a new one from the Report's display (``bundle``), the widget
itself where the explorer is displayed. So this module imports no widget, and the widgets
read it.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from functools import cache
from typing import TYPE_CHECKING, Any

from . import background, view_model
from .compare_html import render_compare_html
from .html import render_html
from .payload import report_payload
from .text import render_text

if TYPE_CHECKING:
    from ..report import Report
    from ..report.comparison import Comparison

MIME_TYPE = "application/vnd.nbprofiler.report+json"
# A comparison's static HTML and verdict, which the labextension shows without a kernel.
COMPARISON_MIME = "application/vnd.nbprofiler.comparison+json"
COMPARISON_VERSION = 1
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# Displays a widget and gives its ``WIDGET_MIME`` data.
Show = Callable[[], dict[str, Any]]


def widget_frontend() -> bool:
    """True inside an ipykernel, with comms, serving an interactive front end."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None or getattr(kernel, "comm_manager", None) is None:
        return False
    if not getattr(kernel, "_allow_stdin", True):
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def rich_output() -> bool:
    """False in terminal IPython, whose display shows only ``text/plain``."""
    try:
        from IPython import get_ipython
    except ImportError:
        return True
    shell = get_ipython()
    return shell is None or "text/html" in shell.display_formatter.active_types


def report_bundle(report: "Report", include: Collection[str] | None, exclude: Collection[str] | None,
                  show: Show) -> dict[str, Any]:
    """The bundle for ``display(report)``, honouring IPython's ``include``/``exclude``; ``show``
    displays the explorer."""
    return _bundle(lambda: render_text(report), lambda: render_html(report), MIME_TYPE,
                   lambda: report_payload(report), show, include, exclude, lambda: background.start(report))


def comparison_bundle(comparison: "Comparison", include: Collection[str] | None, exclude: Collection[str] | None,
                      show: Show) -> dict[str, Any]:
    """The bundle for ``display(comparison)``, as ``report_bundle`` is for a Report: the compare
    view where a widget front end runs the cell; the static comparison everywhere else, and in
    ``COMPARISON_MIME`` for the labextension (``{version, html, verdict, chart}``: ``chart`` is the
    side-by-side chart's spec, which the extension draws interactive in the HTML's chart slot)."""
    page = cache(lambda: render_compare_html(comparison))  # text/html and the payload hold the same page

    def payload() -> dict[str, Any]:
        return {"version": COMPARISON_VERSION, "html": page(), "verdict": comparison.verdict,
                "chart": view_model.of_comparison(comparison).chart_spec()}

    return _bundle(comparison.to_text, page, COMPARISON_MIME, payload, show, include, exclude)


def _bundle(text: Callable[[], str], html: Callable[[], str], data_mime: str, data: Callable[[], Any],
            show: Show, include: Collection[str] | None, exclude: Collection[str] | None,
            start_data: Callable[[], None] | None = None) -> dict[str, Any]:
    """Text always; where the front end shows more, each wanted type, the widget only in a
    widget front end. Each is made only when wanted: the HTML draws charts, the view builds widgets.
    ``start_data``, when the data is wanted, begins the part of it that can be built alongside."""
    def wanted(mime: str) -> bool:
        return (include is None or mime in include) and not (exclude and mime in exclude)

    rich = rich_output()
    if rich and start_data is not None and wanted(data_mime):
        start_data()
    bundle: dict[str, Any] = {"text/plain": text()}
    if not rich:
        return bundle
    if wanted("text/html"):
        bundle["text/html"] = html()
    if wanted(data_mime):
        bundle[data_mime] = data()
    if wanted(WIDGET_MIME) and widget_frontend():
        bundle[WIDGET_MIME] = show()
    return bundle
