"""Put modules and optimizers back as they were after the measuring tools ran the user's steps.

Measuring runs real training steps: without this the model would leave the
measurement trained a little further, at batch sizes or settings the user never
chose.
"""
from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Iterator, Sequence

import torch

Restorable = torch.nn.Module | torch.optim.Optimizer


@contextmanager
def states_restored(objects: Sequence[Restorable]) -> Iterator[None]:
    """Copy each object's ``state_dict`` now and load it back on exit, also when the block raises."""
    saved = [copy.deepcopy(obj.state_dict()) for obj in objects]
    try:
        yield
    finally:
        for obj, state in zip(objects, saved):
            obj.load_state_dict(state)
