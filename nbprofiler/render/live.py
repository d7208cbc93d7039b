"""The live status line of a profiled cell: "step 4 · warmup · 0.21 s/step", then the report.

Where it runs decides its form:

- a widget front end (``frontend.widget_frontend``): a small HTML widget, whose
  value each step changes through one comm message;
- any other kernel (nbclient, papermill, a front end without widgets): a
  ``text/plain`` output updated in place through its display id;
- terminal IPython or a script: one line on stdout, rewritten with ``\\r``.

When the cell ends, ``show(report)`` puts the report in the status line's
place (the same output, through its display id), so the line turns into the
report instead of leaving an empty output above it. In a terminal the line is
erased and the report printed.

A cell that clears its output (``IPython.display.clear_output``, the usual
live-progress pattern) has removed the status line with it, and an update of
a display that is gone shows nothing: then the report is a new output, after
what the cell left. The clears are seen where they all pass, the shell's
display publisher, so the report is shown exactly once either way.
"""
from __future__ import annotations

import html
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import frontend, live_chart

if TYPE_CHECKING:
    from ..report import Report

_MIN_INTERVAL_S = 0.1  # at most ten updates a second, whatever the step rate
_CHART_INTERVAL_S = 1.0  # a run with --every shows its chart, redrawn at most once a second
_STYLE = ("font-family:system-ui,sans-serif;font-size:12px;padding:2px 0;"
          "color:var(--jp-content-font-color2,var(--vscode-descriptionForeground,#555))")


class LiveStatus:
    """Shows the progress of one profiled run; ``update`` is the run's ``on_step`` callback."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.mode: str | None = None  # "widget", "display" or "terminal", once something was shown
        self._handle: Any = None
        self._widget: Any = None
        self._last = 0.0
        self._cleared = False  # the cell cleared its output since the status line was shown
        self._publisher: Any = None  # the display publisher whose clear_output is watched
        self._publisher_hook: Any = None  # its own clear_output attribute before ours (another hook), if any

    @staticmethod
    def text(run: Any) -> str:
        per_step = run.last_step_s
        rate = f" · {per_step:.2f} s/step" if per_step is not None else ""
        every = getattr(getattr(run, "options", None), "every", None)
        cycle = f" · cycle {cycle_of(run) + 1}" if every else ""
        return f"nbprofiler: step {run.steps_done}{cycle} · {phase_text(run)}{rate}"

    def start(self, run: Any) -> None:
        """Show the line before the profiler starts: its first display (importing ipywidgets,
        opening a comm) takes up to half a second, which must not land in a profiled step."""
        if self.enabled and self.mode is None:
            self._start(self.text(run), None)
            self._last = time.monotonic()

    def update(self, run: Any) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < _MIN_INTERVAL_S:  # most steps: nothing more to do
            return
        chart = _chart(run)
        if chart is not None and now - self._last < _CHART_INTERVAL_S:
            return
        self._last = now
        text = self.text(run)
        series = chart() if chart is not None else None
        if self.mode is None:
            self._start(text, series)
        elif self.mode == "widget":
            self._widget.value = _status_html(text, series)
        elif self.mode == "display":
            self._handle.update(_status_bundle(text, series), raw=True)
        else:
            sys.stdout.write("\r\x1b[2K" + _terminal_line(text, series))
            sys.stdout.flush()

    def _start(self, text: str, series: "live_chart.LiveSeries | None") -> None:
        self._watch_clears()
        from IPython import get_ipython
        from IPython.display import display

        if frontend.widget_frontend():
            import ipywidgets  # deferred: the widget front end's optional dependency, only where it runs

            self._widget = ipywidgets.HTML(_status_html(text, series))
            self._handle = display(self._widget, display_id=True)
            self.mode = "widget"  # set last: a Ctrl-C half-way leaves the mode unset, not half-built
        elif getattr(get_ipython(), "kernel", None) is not None:
            self._handle = display(_status_bundle(text, series), raw=True, display_id=True)
            self.mode = "display"
        else:
            self.mode = "terminal"
            sys.stdout.write(_terminal_line(text, series))
            sys.stdout.flush()

    def _watch_clears(self) -> None:
        """Note each clear_output of the cell (IPython's ``clear_output`` and
        ``display(..., clear=True)`` call the shell's display publisher), until ``close``."""
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None or self._publisher is not None:
            return
        publisher = shell.display_pub
        clear = publisher.clear_output
        self._publisher_hook = vars(publisher).get("clear_output")

        def clear_output(wait: bool = False) -> None:
            self._cleared = True
            clear(wait)

        publisher.clear_output = clear_output
        self._publisher = publisher

    def close(self) -> None:
        """The run is over: blank the line (``show`` then fills its place with the report)."""
        if self._publisher is not None:
            if self._publisher_hook is None:
                del self._publisher.clear_output  # the class's method again
            else:
                self._publisher.clear_output = self._publisher_hook
            self._publisher = self._publisher_hook = None
        if self.mode == "widget":
            self._widget.value = ""
        elif self.mode == "display":
            self._handle.update({"text/plain": ""}, raw=True)
        elif self.mode == "terminal":
            sys.stdout.write("\r\x1b[2K")
            sys.stdout.flush()

    def show(self, report: "Report") -> None:
        """Display ``report`` where the status line was, or as a new output if none was
        shown or the cell cleared it."""
        try:
            if self._handle is not None and not self._cleared:
                self._handle.update(report)
            else:
                from IPython.display import display

                display(report)
        finally:  # also when Ctrl-C stopped the drawing: the line's widget is done with either way
            if self._widget is not None:
                from .widget import close_tree  # deferred: it imports ipywidgets, only here where a widget was shown

                close_tree(self._widget)  # with its layout and style, which ipywidgets keeps until closed
                self._widget = None


def phase_text(run: Any) -> str:
    """The schedule's phase as a user reads it. Outside the schedule the profiler's phase is
    "none": say instead whether profiling is yet to start (``--skip-first``) or is over."""
    phase = str(run.current_phase)
    if phase != "none":
        return phase
    skip_first = getattr(getattr(run, "options", None), "skip_first", 0)
    return "profiling starts after the skipped steps" if run.steps_done < skip_first else "profiled, the cell runs on"


def cycle_of(run: Any) -> int:
    """The profiler cycle a ``--every`` run's current step is in (0 for the first)."""
    o = run.options
    return max(run.steps_done - o.skip_first, 0) // o.cycle_length


def _chart(run: Any) -> "Callable[[], live_chart.LiveSeries] | None":
    """How to read the chart's figures, for a ``--every`` run (None for any other): deferred, so a
    status update that is too soon copies nothing."""
    options, sampler = getattr(run, "options", None), getattr(run, "sampler", None)
    if options is None or sampler is None or not getattr(options, "every", None):
        return None
    return lambda: live_chart.series_of(sampler.host_ms, sampler.mem_a, sampler.cuda, options.cycle_length,
                                        options.skip_first)


def _status_html(text: str, series: "live_chart.LiveSeries | None" = None) -> str:
    chart = live_chart.svg(series) if series is not None else ""
    return f'<div style="{_STYLE}">{html.escape(text)}{chart and "<br>" + chart}</div>' if text else ""


def _terminal_line(text: str, series: "live_chart.LiveSeries | None") -> str:
    """The line a terminal rewrites in place: the status, and the chart as text after it."""
    line = live_chart.text(series) if series is not None else ""
    return text + (f" · {line}" if line else "")


def _status_bundle(text: str, series: "live_chart.LiveSeries | None") -> dict[str, str]:
    """The line for a front end without widgets: text, and the chart as HTML beside it where it has one."""
    if series is None:
        return {"text/plain": text}
    line = live_chart.text(series)
    return {"text/plain": text + (f"\n{line}" if line else ""), "text/html": _status_html(text, series)}
