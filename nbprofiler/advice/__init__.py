"""Suggestions a user can paste, each with its evidence.

``report.suggestions`` (``rules.suggest``) estimates from one profiled run,
from analysis results only; the tools that measure the alternatives by running
the user's code are in ``nbprofiler.measure``.
"""
from __future__ import annotations

from .rules import suggest
from .suggestion import Suggestion

__all__ = ["Suggestion", "suggest"]
