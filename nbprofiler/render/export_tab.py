"""The explorer's Export tab: write the trace, a TensorBoard directory, the standalone HTML
report or the whole report (``.nbprof``), each to this run's own folder by default.

A target that exists is never written over silently: the save takes the next free name and
the status says so, unless the user ticks "Replace existing files". After a save the status
shows the path on the kernel's machine and a link that downloads the file in the browser
(a ``data:`` URL, so it works in any front end, with or without the JupyterLab extension).
"""
from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import ipywidgets as widgets

from ..format import fmt_bytes
from ..trace.writers import free_path, holds_traces, trace_files_in
from .html import esc
from .tab_help import how_html

if TYPE_CHECKING:
    from ..report import Report

# The largest file a download link carries: the link holds the whole file, base64, in the
# widget's state, which travels to the browser and may be saved in the notebook.
DOWNLOAD_CAP_BYTES = 10 * 2**20
_MEDIA_TYPES = {".gz": "application/gzip", ".json": "application/json", ".html": "text/html",
                ".nbprof": "application/zip"}
_LINK_STYLE = "color:var(--jp-content-link-color,var(--vscode-textLink-foreground,#1565c0))"


@dataclass(frozen=True)
class _Target:
    """One kind of export: what it is called, where it goes, and what counts as already there."""

    what: str
    hint: str
    write: Callable[[Path], Path]  # writes to the path and returns the file written
    folder: bool = False  # a TensorBoard directory: occupied when it holds traces

    def taken(self, path: Path) -> bool:
        return holds_traces(path) if self.folder else path.exists() or path.is_symlink()


class ExportTab:
    """A path and a button per export, a visible choice to replace existing files, and a status line."""

    def __init__(self, report: "Report") -> None:
        self.report = report
        defaults = report.export_paths
        no_trace = report.no_trace_reason
        wide, field = widgets.Layout(width="230px", flex="0 0 auto"), widgets.Layout(width="auto", flex="1 1 auto")
        self.trace_path = widgets.Text(value=str(defaults.trace), description="trace file", layout=field)
        self.tb_dir = widgets.Text(value=str(defaults.folder), description="directory", layout=field)
        self.html_path = widgets.Text(value=str(defaults.html), description="HTML file", layout=field)
        self.saved_path = widgets.Text(value=str(defaults.saved), description="report file", layout=field)
        why = f"No trace to save: {no_trace}." if no_trace else ""
        self.save_trace = widgets.Button(description="Save Chrome trace", icon="download", layout=wide,
                                         disabled=no_trace is not None, tooltip=why)
        self.save_tb = widgets.Button(description="Write TensorBoard dir", icon="folder", layout=wide,
                                      disabled=no_trace is not None, tooltip=why)
        self.save_html = widgets.Button(description="Save HTML report", icon="file", layout=wide)
        self.save_report = widgets.Button(description="Save report (.nbprof)", icon="save", layout=wide)
        self.replace = widgets.Checkbox(value=False, description="Replace existing files", indent=False)
        self.status = widgets.HTML()
        targets = {
            self.save_trace: (self.trace_path, _Target("Chrome trace", "open it in https://ui.perfetto.dev or "
                                                       "chrome://tracing", report.export_chrome_trace)),
            self.save_tb: (self.tb_dir, _Target("TensorBoard trace", "nbprofiler.load() reads the directory back; "
                                                "tensorboard --logdir on its parent lists the run",
                                                report.export_tensorboard, folder=True)),
            self.save_html: (self.html_path, _Target("HTML report", "it opens offline in any browser",
                                                     self._write_html)),
            self.save_report: (self.saved_path, _Target("report", "nbprofiler.load() reads it back with every table",
                                                        report.save)),
        }
        for button, (path_field, target) in targets.items():
            button.on_click(lambda _, f=path_field, t=target: self._save(f.value, t))
        note = "" if no_trace is None else (
            f'<div class="how">No trace to save: {esc(no_trace)}; the HTML report and the report file can still '
            "be saved.</div>")
        rows = [widgets.HBox([path_field, button], layout=widgets.Layout(width="100%", max_width="1000px"))
                for button, (path_field, _) in targets.items()]
        self.box = widgets.VBox([how_html("Export"), widgets.HTML(f'<div class="nbp">{note}</div>'), *rows,
                                 self.replace, self.status])

    def _write_html(self, path: Path) -> Path:
        self.report.to_html(path)
        return path

    def _save(self, value: str, target: _Target) -> None:
        """Write ``target`` to the path typed, or to the next free name when that exists and
        replacing was not chosen; the status says which happened."""
        try:
            if not value.strip():
                raise ValueError("the path is empty; type where to save it")
            requested = Path(value).expanduser()
            existed = target.taken(requested)
            chosen = requested if self.replace.value or not existed else free_path(requested, target.taken,
                                                                                   target.folder)
            earlier = trace_files_in(requested) if existed and target.folder and self.replace.value else []
            written = Path(target.write(chosen)).resolve()
            for old in earlier:  # after the write, so a failed one loses nothing
                old.unlink(missing_ok=True)
        except (OSError, ValueError) as exc:
            self.status.value = f'<div class="nbp warn">Could not save the {esc(target.what)}: {esc(exc)}</div>'
            return
        place = written.parent if target.folder else written
        lines = [f"Saved the {esc(target.what)} to <code>{esc(place)}</code>; {esc(target.hint)}."]
        if existed and self.replace.value:
            lines.append(f"It replaced what was at <code>{esc(requested)}</code>.")
        elif existed:
            lines.append(f"<code>{esc(requested)}</code> already {'held a trace' if target.folder else 'existed'}, "
                         "so this is a new name; tick “Replace existing files” to write over it.")
        lines.append(download_html(written))
        self.status.value = '<div class="nbp">' + "".join(f"<div>{line}</div>" for line in lines) + "</div>"


def download_html(path: Path) -> str:
    """A link that downloads ``path`` in the browser, or, over the cap, a line saying where the file is."""
    size = path.stat().st_size
    if size > DOWNLOAD_CAP_BYTES:
        return (f'<span class="how">{esc(fmt_bytes(size))} is more than a download link here carries '
                f"({esc(fmt_bytes(DOWNLOAD_CAP_BYTES))}): fetch <code>{esc(path)}</code> from the machine "
                "the kernel runs on (in JupyterLab, from the file browser).</span>")
    media = _MEDIA_TYPES.get(path.suffix, "application/octet-stream")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<a download="{esc(path.name)}" href="data:{media};base64,{data}" style="{_LINK_STYLE}">'
            f"Download {esc(path.name)}</a> ({esc(fmt_bytes(size))})")
