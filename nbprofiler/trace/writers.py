"""Trace files written out: a plain copy, and the layout of ``tensorboard_trace_handler``.

One writer of each, shared by a live run (``--trace``, ``--tensorboard``) and by a
Report (``export_chrome_trace``, ``export_tensorboard``), so a directory written
either way reads the same in TensorBoard and in ``nbprofiler.load``.

A file an export writes never replaces another unasked: ``free_path`` gives the next free
name, and ``holds_traces`` says when a folder already holds this layout's trace files (a
second one would make it two runs).
"""
from __future__ import annotations

import gzip
import os
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path

# Longest first: the suffix a free name keeps at its end, so "t.json.gz" becomes "t-2.json.gz".
_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".nbprof", ".html", ".json", ".gz")
_TRACE_FILE = re.compile(r"\.pt\.trace\.json(\.gz)?$")


def write_trace(raw: bytes, path: str | os.PathLike[str]) -> Path:
    """Write trace JSON bytes to ``path``, gzipped when it ends in ``.gz`` (with no time stamp
    in the gzip header, so one trace always gives the same file)."""
    p = Path(path).expanduser()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(gzip.compress(raw, compresslevel=5, mtime=0) if p.name.endswith(".gz") else raw)
    return p


def write_tensorboard(raw: bytes, directory: str | os.PathLike[str]) -> Path:
    """Write a trace where ``tensorboard_trace_handler`` would: ``DIR/<host>_<pid>.<ns>.pt.trace.json``
    (torch's handler names its files by ``time.time_ns()``).

    torch allows one export per recorded cycle, so the bytes already exported
    for the report are written again here instead of calling the handler.
    """
    worker = f"{socket.gethostname()}_{os.getpid()}"
    return write_trace(raw, Path(directory).expanduser() / f"{worker}.{time.time_ns()}.pt.trace.json")


def file_suffix(name: str) -> str:
    """The suffix of a file name an export keeps at its end: ``.pt.trace.json.gz`` whole, not ``.gz``."""
    return next((s for s in _SUFFIXES if name.endswith(s) and len(name) > len(s)), Path(name).suffix)


def holds_traces(directory: Path) -> bool:
    """Whether ``directory`` already holds TensorBoard trace files (a second one would make it two runs)."""
    return directory.is_dir() and any(_TRACE_FILE.search(f.name) for f in directory.iterdir() if f.is_file())


def trace_files_in(directory: Path) -> list[Path]:
    """The TensorBoard trace files directly in ``directory``."""
    return sorted(f for f in directory.iterdir() if f.is_file() and _TRACE_FILE.search(f.name))


def free_path(path: Path, taken: Callable[[Path], bool] = os.path.lexists, folder: bool = False) -> Path:
    """``path`` if nothing is there, else the first of ``<stem>-2<suffix>``, ``-3`` ... that is free.

    ``taken`` says what counts as occupied: for a TensorBoard folder, one that already holds
    traces. A ``folder``'s name has no suffix ("runs/v1.5" becomes "runs/v1.5-2").
    """
    if not taken(path):
        return path
    suffix = "" if folder else file_suffix(path.name)
    stem = path.name[:len(path.name) - len(suffix)] if suffix else path.name
    n = 2
    while taken(candidate := path.with_name(f"{stem}-{n}{suffix}")):
        n += 1
    return candidate
