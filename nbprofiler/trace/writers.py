"""Trace files written out: a plain copy, and the layout of ``tensorboard_trace_handler``.

One writer of each, shared by a live run (``--trace``, ``--tensorboard``) and by a
Report (``export_chrome_trace``, ``export_tensorboard``), so a directory written
either way reads the same in TensorBoard and in ``nbprofiler.load``.
"""
from __future__ import annotations

import gzip
import os
import socket
import time
from pathlib import Path


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
