"""Where the run history lives: ``NBPROFILER_HISTORY``, else the user's data folder.

The default follows the XDG base directory convention (``$XDG_DATA_HOME``, else
``~/.local/share``), so the history outlives kernels, virtual environments and
projects, as a user's record of their runs should. The variable is read on each
use, so setting it in a notebook takes effect for the next run.
"""
from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "NBPROFILER_HISTORY"


def history_path() -> Path:
    """The SQLite file the history is kept in."""
    named = os.environ.get(ENV_VAR)
    if named:
        return Path(named).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "nbprofiler" / "history.sqlite"
