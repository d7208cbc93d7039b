"""Where a report's exports go when the user names no path, and how an existing file is kept.

Every report once wrote to the same ``nbprofiler_trace.json.gz`` and ``nbprofiler_tb``, so
a second run replaced the first run's trace without a word and a TensorBoard folder
ended up holding two runs, which ``nbprofiler.load`` refuses to mix. Each report now
gets a folder of its own under ``nbprofiler_exports/``, named from the notebook, the
cell and the time (``<notebook>_cell<key>_<YYYYmmdd-HHMMSS>``; a trace file's report
from the file's name), and the folder is also its TensorBoard run: ``tensorboard
--logdir nbprofiler_exports`` lists every exported run by that name.

A target that already exists is never written over silently: ``trace.writers.free_path``
gives the next free name (``-2``, ``-3`` ...) and the caller says which name it used.
"""
from __future__ import annotations

import re
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..records import SOURCE_PREFIX
from ..trace.writers import file_suffix

if TYPE_CHECKING:
    from .report import Report

EXPORT_ROOT = "nbprofiler_exports"  # relative to the kernel's working folder, the notebook's own
_MAX_PART = 48  # characters kept of a notebook or file name, so paths stay well under any limit
_KEY_CHARS = 8  # characters of the cell's key: enough to tell a notebook's cells apart
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")  # dots too: a name's only dots are its suffix's
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}

_names: "weakref.WeakKeyDictionary[Report, str]" = weakref.WeakKeyDictionary()
_taken: set[str] = set()  # names given to reports of this process, so two reports never share a folder


@dataclass(frozen=True)
class ExportPaths:
    """A report's default targets, all in its own folder."""

    folder: Path  # also the TensorBoard directory
    trace: Path
    html: Path
    saved: Path


def safe_name(text: str, fallback: str = "report") -> str:
    """``text`` as a file-name part any file system takes: ASCII letters, digits, ``_`` and ``-``."""
    name = _UNSAFE.sub("_", text).strip("_-")[:_MAX_PART].strip("_-")
    if not name or name.lower() in _WINDOWS_RESERVED:
        return fallback if not name else f"{name}_"
    return name


def run_name(report: "Report") -> str:
    """The name of ``report``'s export folder, fixed the first time it is asked for, so that
    all exports of one report land together and no two reports of this process share one."""
    name = _names.get(report)
    if name is None:
        base = f"{_origin(report)}_{time.strftime('%Y%m%d-%H%M%S')}"
        name, n = base, 1
        while name in _taken or (Path(EXPORT_ROOT) / name).exists():
            n += 1
            name = f"{base}-{n}"
        _taken.add(name)
        _names[report] = name
    return name


def default_paths(report: "Report") -> ExportPaths:
    name = run_name(report)
    folder = Path(EXPORT_ROOT) / name
    return ExportPaths(folder=folder, trace=folder / f"{name}.json.gz", html=folder / f"{name}.html",
                       saved=folder / f"{name}.nbprof")


def _origin(report: "Report") -> str:
    """What the run came from: ``<notebook>_cell<key>``, a trace file's name, or ``nbprofiler``."""
    if not report.ran_live and report.source_path is not None:
        file_name = Path(report.source_path).name
        return safe_name(file_name[:-len(file_suffix(file_name))] if file_suffix(file_name) else file_name, "trace")
    notebook = safe_name(Path(report.notebook).stem, "notebook") if report.notebook else "nbprofiler"
    key = report.cell_key
    if not key:
        return notebook
    key = key.removeprefix(SOURCE_PREFIX)
    return f"{notebook}_cell{safe_name(key, 'x')[:_KEY_CHARS]}"
