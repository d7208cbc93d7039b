"""Check, before a DataLoader suggestion shows its code, that the loader its code rebuilds
yields batches of the same structure as the user's loader.

A suggestion rebuilds the user's ``DataLoader(...)`` call from what the run recorded
(``advice.loader_code``). Pasted, that call replaces the user's loader in the loop, so if
it loads different batches (a collate function lost, a sampler dropped, a DataLoader subclass
of the user's replaced by DataLoader) the loop breaks. This runs once, as the run ends and
before its report is made (``notebook.profile``), with the user's notebook names: it builds
the call (without workers, which change where batches load but not what they hold), loads
one batch from it and one from the user's loader (a copy without workers where it has some),
from the same random state, and compares their structure (types, nesting, tensor dtypes and
trailing shapes). The random generators are put back after, so the user's next epoch is what
it would have been. The finding goes into the loader's record (``LoaderRecord.rebuilt_differs``),
which the advice reads; the advice itself never touches user objects.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch.utils.data import DataLoader

from ..advice.loader_code import args_from_record, dataloader_call
from ..advice.thresholds import DATALOADER_WAIT_SHARE
from ..capture.loader_copy import copied_loader, rng_kept
from ..records import LoaderRecord, RunRecord

# Levels of nesting described: deeper parts of a batch are compared by type alone.
_DEPTH = 4


def check_rebuilt_loaders(run: RunRecord, namespace: Mapping[str, Any] | None) -> None:
    """Check each loader the advice may rebuild (one that waited over ``DATALOADER_WAIT_SHARE`` of
    the steps' time), before the report's advice reads its record."""
    stepped_ms = float(run.steps["wall_ms"].sum()) if "wall_ms" in run.steps else 0.0
    for loader in run.loaders:
        if loader.wait_ms > DATALOADER_WAIT_SHARE * stepped_ms:
            check_rebuilt(loader, namespace)


def check_rebuilt(record: LoaderRecord, namespace: Mapping[str, Any] | None) -> None:
    """Set ``record.rebuilt_differs`` when the call rebuilt from ``record`` loads batches unlike
    the user's loader's. Not checked (left None) where the loader has no notebook name (its code
    then says to put the user's own in), or the user's own loader cannot load a batch here."""
    if namespace is None or not record.name:
        return
    loader = namespace.get(record.name)
    args = args_from_record(record)
    if not isinstance(loader, DataLoader) or id(loader) != record.loader_id or args.placeholders:
        return
    # Without workers the user's own loader is iterated (as the loop does, a subclass's ways
    # included); with workers, a copy without them, so that no worker process starts.
    reference = loader if loader.num_workers == 0 else copied_loader(loader, 0, False, None)
    try:
        with rng_kept(loader):
            expected = structure(_first_batch(reference))
    except Exception:  # noqa: BLE001 - the user's loader fails here too: no code of ours to blame
        return
    code = dataloader_call(args, {"num_workers": 0, "pin_memory": False})
    scope: dict[str, Any] = {**namespace, "DataLoader": DataLoader}
    try:
        with rng_kept(loader):
            exec(compile(code, "<rebuilt DataLoader>", "exec"), scope)  # noqa: S102 - our call, the user's names
            got = structure(_first_batch(scope[args.loader_name]))
    except Exception as exc:  # noqa: BLE001 - what the pasted code would raise
        record.rebuilt_differs = f"the rebuilt loader raised {type(exc).__name__}: {_first_line(exc)}"
        return
    if got != expected:
        record.rebuilt_differs = f"the rebuilt loader yields {got} where {record.name} yields {expected}"


def _first_batch(loader: DataLoader) -> Any:
    iterator = iter(loader)
    return next(iterator, None)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def structure(batch: Any, depth: int = 0) -> str:
    """A batch's structure as text: containers and their nesting, each tensor's dtype and its
    shape past the first (batch) dimension. Lists and tuples read alike (a loop unpacks both)."""
    if isinstance(batch, torch.Tensor):
        return f"Tensor[{str(batch.dtype).removeprefix('torch.')}, (*, {', '.join(map(str, batch.shape[1:]))})]"
    if depth >= _DEPTH:
        return type(batch).__name__
    if isinstance(batch, Mapping):
        return "{" + ", ".join(f"{k!r}: {structure(v, depth + 1)}" for k, v in sorted(batch.items(), key=repr)) + "}"
    if isinstance(batch, (list, tuple)) and not hasattr(batch, "_fields"):
        return "(" + ", ".join(structure(item, depth + 1) for item in batch) + ")"
    return type(batch).__name__
