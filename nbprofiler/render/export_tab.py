"""The explorer's Export tab: write the trace, a TensorBoard directory, or the standalone HTML report."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import ipywidgets as widgets

from .html import esc
from .tab_help import how_html

if TYPE_CHECKING:
    from ..report import Report


class ExportTab:
    """Buttons that write the trace, a TensorBoard directory, or the standalone HTML report."""

    def __init__(self, report: "Report") -> None:
        self.report = report
        has_trace = report.raw_trace is not None or (
            report.source_path is not None and Path(report.source_path).is_file())
        self.trace_path = widgets.Text(value="nbprofiler_trace.json.gz", description="trace file",
                                       layout=widgets.Layout(width="420px"))
        self.tb_dir = widgets.Text(value="nbprofiler_tb", description="directory", layout=widgets.Layout(width="420px"))
        self.html_path = widgets.Text(value="nbprofiler_report.html", description="HTML file",
                                      layout=widgets.Layout(width="420px"))
        wide = widgets.Layout(width="230px")
        self.save_trace = widgets.Button(description="Save Chrome trace", icon="download", disabled=not has_trace,
                                         layout=wide)
        self.save_tb = widgets.Button(description="Write TensorBoard dir", icon="folder", disabled=not has_trace,
                                      layout=wide)
        self.save_html = widgets.Button(description="Save HTML report", icon="file", layout=wide)
        self.status = widgets.HTML()
        self.save_trace.on_click(lambda _: self._do(lambda: report.export_chrome_trace(self.trace_path.value),
                                                    "Chrome trace", "open it in https://ui.perfetto.dev or chrome://tracing"))
        self.save_tb.on_click(lambda _: self._do(lambda: report.export_tensorboard(self.tb_dir.value),
                                                 "TensorBoard trace", "nbprofiler.load() reads the directory back"))
        self.save_html.on_click(lambda _: self._do(self._write_html, "HTML report", "it opens offline in any browser"))
        note = "" if has_trace else ('<div class="how">This report has no recorded trace (the run ended before any '
                                     "active step), so only the HTML report can be saved.</div>")
        self.box = widgets.VBox([how_html("Export"), widgets.HTML(f'<div class="nbp">{note}</div>'),
                                 widgets.HBox([self.trace_path, self.save_trace]),
                                 widgets.HBox([self.tb_dir, self.save_tb]),
                                 widgets.HBox([self.html_path, self.save_html]), self.status])

    def _write_html(self) -> Path:
        path = Path(self.html_path.value).expanduser()
        self.report.to_html(path)
        return path

    def _do(self, action: Callable[[], Path], what: str, hint: str) -> None:
        try:
            path = Path(action()).resolve()
        except (OSError, ValueError) as exc:
            self.status.value = f'<div class="nbp warn">Could not save the {esc(what)}: {esc(exc)}</div>'
            return
        self.status.value = f'<div class="nbp">Saved the {esc(what)} to <code>{esc(path)}</code>; {esc(hint)}.</div>'
