"""The Report's and the Comparison's display, the one door from report/ into render/: their
text, HTML, widgets and mimebundle (``frontend``), and the views a comparison's tables share
with its charts.

Nothing in render/ imports this module: the widgets display themselves through ``frontend``,
and this door makes a new widget only where one is shown, importing ipywidgets then.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from .compare_html import render_compare_html
from .compare_text import render_compare_text
from .frontend import comparison_bundle, report_bundle
from .html import render_html
from .text import render_summary_line, render_text
from .views import LABELS, breakdown_parts

__all__ = ["LABELS", "breakdown_parts", "comparison_html", "comparison_mimebundle", "comparison_text",
           "comparison_view", "explorer", "html", "mimebundle", "summary_line", "text"]

if TYPE_CHECKING:
    from ..report import Report
    from ..report.comparison import Comparison
    from .compare_widget import CompareView
    from .widget import Explorer


def text(report: "Report") -> str:
    """``Report.to_text``: the plain-text report."""
    return render_text(report)


def summary_line(report: "Report") -> str:
    """The one line ``repr(report)`` gives."""
    return render_summary_line(report)


def html(report: "Report", standalone: bool) -> str:
    """``Report.to_html``: the static HTML report, a whole page when ``standalone``."""
    return render_html(report, standalone=standalone)


def explorer(report: "Report", tab: str) -> "Explorer":
    """``Report.explorer``: the interactive explorer, opened on ``tab``."""
    from .widget import Explorer  # ipywidgets: imported only when a widget is made

    view = Explorer(report)
    view.show_tab(tab)
    return view


def comparison_text(comparison: "Comparison") -> str:
    return render_compare_text(comparison)


def comparison_html(comparison: "Comparison", standalone: bool) -> str:
    return render_compare_html(comparison, standalone=standalone)


def comparison_view(comparison: "Comparison") -> "CompareView":
    """``Comparison.explorer``: the Compare view, the two runs' charts side by side."""
    from .compare_widget import CompareView  # ipywidgets: imported only when a widget is made

    return CompareView(comparison)


def mimebundle(report: "Report", include: Collection[str] | None = None,
               exclude: Collection[str] | None = None) -> dict[str, Any]:
    """The bundle for ``display(report)`` (``frontend.report_bundle``), with a new explorer."""
    def show() -> dict[str, Any]:
        from .widget import Explorer  # ipywidgets: imported only where a widget is shown

        return Explorer(report).displayed()

    return report_bundle(report, include, exclude, show)


def comparison_mimebundle(comparison: "Comparison", include: Collection[str] | None = None,
                          exclude: Collection[str] | None = None) -> dict[str, Any]:
    """The bundle for ``display(comparison)`` (``frontend.comparison_bundle``), with a new compare view."""
    def show() -> dict[str, Any]:
        from .compare_widget import CompareView  # ipywidgets: imported only where a widget is shown

        return CompareView(comparison).displayed()

    return comparison_bundle(comparison, include, exclude, show)
