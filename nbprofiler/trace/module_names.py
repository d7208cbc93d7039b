"""The names of the module ranges ``--modules`` writes into a trace.

Capture writes them (``nbprofiler.capture.module_ranges``) and analysis reads
them back (``nbprofiler.analysis.modules``); the format lives here, between the
two, so neither depends on the other.
"""
from __future__ import annotations

RANGE_PREFIX = "nbprofiler.module: "
_TYPE_OPEN = " ("


def range_name(path: str, type_name: str) -> str:
    """``nbprofiler.module: model.enc.0 (Block)``. The class name comes last and is
    read from the last ``" ("``, so an attribute name holding one still parses; a class
    name holding one has it replaced by a space."""
    return f"{RANGE_PREFIX}{path}{_TYPE_OPEN}{type_name.replace(_TYPE_OPEN, ' ')})"


def parse_range_name(name: str) -> tuple[str, str]:
    """``(path, class name)`` of a name made by ``range_name``; a name without the
    class (not made here) is all path."""
    path, sep, type_name = name[len(RANGE_PREFIX):-1].rpartition(_TYPE_OPEN)
    return (path, type_name) if sep else (name[len(RANGE_PREFIX):], "")


MODEL_PREFIX = "nbprofiler.model: "
"""The range around each call of a module the cell calls by its name (``capture/model_calls.py``),
``nbprofiler.model: <name>``: recorded on every run, so that the time inside the model is known
without ``--modules``."""
