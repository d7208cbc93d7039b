"""Suggestions a user can paste, and the tools that measure them.

``report.suggestions`` (``rules.suggest``) estimates from one profiled run;
``tune_dataloader`` and ``batch_size_curve`` measure the alternatives.
"""
from .batch_curve import batch_size_curve
from .rules import suggest
from .suggestion import Suggestion
from .tuner import tune_dataloader

__all__ = ["Suggestion", "suggest", "tune_dataloader", "batch_size_curve"]
