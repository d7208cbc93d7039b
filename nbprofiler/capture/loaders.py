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


def name_in(namespace: dict[str, Any] | None, obj: object) -> str | None:
    """The user's variable name for ``obj``, if a public one refers to it."""
    if not namespace:
        return None
    for key, value in list(namespace.items()):
        if value is obj and not key.startswith("_"):
            return key
    return None
