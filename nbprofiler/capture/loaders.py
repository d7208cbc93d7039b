"""What nbprofiler records about each DataLoader a profiled cell iterates.

The suggestions rebuild the user's own loader call from this, so it keeps the
constructor arguments that matter for speed, as the loader really had them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoaderRecord:
    """One DataLoader seen during the run; ``wait_ms_by_step`` fills in as it is iterated."""

    loader_id: int
    batch_size: int | None
    num_workers: int
    pin_memory: bool
    persistent_workers: bool
    prefetch_factor: int | None
    drop_last: bool
    shuffle: bool | None
    dataset_type: str
    dataset_length: int | None
    dataset_repr: str
    name: str | None = None
    dataset_name: str | None = None
    iterations_started: int = 0
    batches: int = 0
    wait_ms_by_step: dict[int, float] = field(default_factory=dict)

    @classmethod
    def of(cls, loader: Any) -> "LoaderRecord":
        dataset = loader.dataset
        try:
            length: int | None = len(dataset)
        except Exception:  # IterableDataset without __len__, or a broken __len__
            length = None
        sampler_name = type(getattr(loader, "sampler", None)).__name__
        shuffle = {"RandomSampler": True, "SequentialSampler": False}.get(sampler_name)
        return cls(
            loader_id=id(loader),
            batch_size=loader.batch_size,
            num_workers=int(loader.num_workers),
            pin_memory=bool(loader.pin_memory),
            persistent_workers=bool(getattr(loader, "persistent_workers", False)),
            prefetch_factor=getattr(loader, "prefetch_factor", None),
            drop_last=bool(loader.drop_last),
            shuffle=shuffle,
            dataset_type=type(dataset).__name__,
            dataset_length=length,
            dataset_repr=type(dataset).__name__,
        )

    @property
    def wait_ms(self) -> float:
        return float(sum(self.wait_ms_by_step.values()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dataset_name": self.dataset_name,
            "batch_size": self.batch_size,
            "num_workers": self.num_workers,
            "pin_memory": self.pin_memory,
            "persistent_workers": self.persistent_workers,
            "prefetch_factor": self.prefetch_factor,
            "drop_last": self.drop_last,
            "shuffle": self.shuffle,
            "dataset_type": self.dataset_type,
            "dataset_length": self.dataset_length,
            "iterations_started": self.iterations_started,
            "batches": self.batches,
            "wait_ms": self.wait_ms,
        }


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
    import torch

    if isinstance(batch, torch.Tensor):
        return batch
    if depth >= 3:
        return None
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (tuple, list)) else ()
    for item in items:
        found = _first_tensor(item, depth + 1)
        if found is not None:
            return found
    return None


def name_in(namespace: dict[str, Any] | None, obj: object) -> str | None:
    """The user's variable name for ``obj``, if a public one refers to it."""
    if not namespace:
        return None
    for key, value in list(namespace.items()):
        if value is obj and not key.startswith("_"):
            return key
    return None
