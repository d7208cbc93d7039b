"""Suggestions a user can paste, and the tools that measure them.

``report.suggestions`` (``rules.suggest``) estimates from one profiled run;
``tune_dataloader`` and ``batch_size_curve`` measure the alternatives. Those two
run the user's code with torch, so they are imported on first use: reading a
report's suggestions (a trace file's, say) does not import torch.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .rules import suggest
from .suggestion import Suggestion

__all__ = ["Suggestion", "suggest", "tune_dataloader", "batch_size_curve"]
_MEASURING = {"tune_dataloader": ".tuner", "batch_size_curve": ".batch_curve"}


def __getattr__(name: str) -> Any:
    if name in _MEASURING:
        return getattr(import_module(_MEASURING[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
