"""Tools that run the user's code to measure the alternatives a suggestion estimates.

``report.suggestions`` estimate from one profiled run; ``tune_dataloader`` times
a DataLoader under other settings and ``batch_size_curve`` runs a step at
several batch sizes. They import torch and run the user's objects, so they
live apart from ``advice``, whose modules only turn analysis into suggestions.
"""
from __future__ import annotations

from .batch_curve import batch_size_curve
from .tuner import tune_dataloader

__all__ = ["tune_dataloader", "batch_size_curve"]
