"""A copy of a user's DataLoader with other worker settings, and the random number generators
that iterating one advances, put back afterwards.

Both the tuner (which times copies) and the check of a suggestion's rebuilt loader (which
compares a copy's batch with the rebuilt one's) iterate loaders the user did not ask to
iterate: a copy keeps the user's loader untouched, and the generators put back leave the
user's next epoch as it would have been.
"""
from __future__ import annotations

import random
import sys
from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset


def copied_loader(loader: DataLoader, num_workers: int, pin_memory: bool, prefetch_factor: int | None) -> DataLoader:
    """A loader over the same dataset, sampling and collation as ``loader``, with these settings
    and no persistent workers (each copy makes one pass and is shut down)."""
    kwargs: dict[str, Any] = {
        "num_workers": num_workers,
        "pin_memory": pin_memory,
        "collate_fn": loader.collate_fn,
        "timeout": loader.timeout,
        "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context if num_workers > 0 else None,
        "generator": loader.generator,
        "persistent_workers": False,
    }
    if num_workers > 0:
        kwargs["prefetch_factor"] = prefetch_factor
    if hasattr(loader, "in_order"):
        kwargs["in_order"] = loader.in_order
    if isinstance(loader.dataset, IterableDataset):
        return DataLoader(loader.dataset, batch_size=loader.batch_size, drop_last=loader.drop_last, **kwargs)
    if loader.batch_size is None:
        return DataLoader(loader.dataset, batch_size=None, sampler=loader.sampler, **kwargs)
    return DataLoader(loader.dataset, batch_sampler=loader.batch_sampler, **kwargs)


class rng_kept:  # noqa: N801 - used as a statement: ``with rng_kept(loader):``
    """Puts back every RNG state that iterating ``loader`` advances: torch's, Python's, NumPy's
    and the generators of the loader and its samplers."""

    def __init__(self, loader: DataLoader) -> None:
        self.generators = _generators(loader)

    def __enter__(self) -> None:
        self.torch_state = torch.get_rng_state()
        self.python_state = random.getstate()
        np = sys.modules.get("numpy")
        self.numpy_state = np.random.get_state() if np is not None else None
        self.generator_states = [g.get_state() for g in self.generators]

    def __exit__(self, *exc: object) -> None:
        torch.set_rng_state(self.torch_state)
        random.setstate(self.python_state)
        if self.numpy_state is not None:
            sys.modules["numpy"].random.set_state(self.numpy_state)
        for g, state in zip(self.generators, self.generator_states):
            g.set_state(state)


def _generators(loader: DataLoader) -> list[torch.Generator]:
    found: dict[int, torch.Generator] = {}
    samplers = [loader.sampler, getattr(loader.batch_sampler, "sampler", None)]
    for g in [loader.generator, *(getattr(s, "generator", None) for s in samplers)]:
        if isinstance(g, torch.Generator):
            found[id(g)] = g
    return list(found.values())
