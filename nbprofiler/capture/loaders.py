"""What the hooks read off the DataLoaders a profiled cell iterates: the samples in a
batch, and the user's name for a loader (the record itself is ``records.LoaderRecord``)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..records import LoaderRecord


def samples_in(batch: Any, batch_size: int | None) -> int | None:
    """How many samples a batch holds: the loader's ``batch_size``, or fewer when the
    batch's first tensor is shorter (the last batch of an epoch without ``drop_last``).

    Without a ``batch_size`` (a ``batch_sampler``, or a dataset that yields whole
    batches) the first tensor's leading dimension is all there is to go by; a
    batch with no tensor is of unknown size (None). The loader's own figure comes
    first because a collate may put the batch elsewhere than in the first dimension
    (sequence-first RNN inputs), where a leading dimension would count time steps.
    """
    tensor = _first_tensor(batch)
    leading = int(tensor.shape[0]) if tensor is not None and tensor.dim() > 0 else None
    if batch_size:
        return leading if leading is not None and leading < batch_size else batch_size
    return leading


def _first_tensor(batch: Any, depth: int = 0) -> Any:
    """The first tensor in a batch of nested tuples, lists and dicts (a few levels deep)."""
    if isinstance(batch, torch.Tensor):
        return batch
    if type(batch) in (tuple, list) and batch and isinstance(batch[0], torch.Tensor):
        return batch[0]  # the usual (inputs, targets): asked every fetch, without a call per level
    if depth >= 3:
        return None
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (tuple, list)) else ()
    for item in items:
        found = _first_tensor(item, depth + 1)
        if found is not None:
            return found
    return None


def named(record: LoaderRecord, loader: Any, namespace: Mapping[str, Any] | None) -> LoaderRecord:
    """``record`` with the user's names for ``loader`` and its dataset (None where no public name holds it)."""
    record.name = name_in(namespace, loader)
    record.dataset_name = name_in(namespace, loader.dataset)
    return record


def name_in(namespace: Mapping[str, Any] | None, obj: object) -> str | None:
    """The user's variable name for ``obj``, if a public one refers to it."""
    if not namespace:
        return None
    for key, value in list(namespace.items()):
        if value is obj and not key.startswith("_"):
            return key
    return None
