"""Rebuild the user's own ``DataLoader(...)`` call, with the changed arguments marked.

A suggestion is only paste-able when it uses the user's names: their loader
variable, their dataset variable and the arguments they already pass. Each
argument we change carries a trailing ``# changed: was ...`` comment, so the
user sees exactly what differs from their code. A recorded name goes into the
code only where ``safe_names.code_name`` allows it; otherwise the code uses a
generic name and a comment asks for the user's own (``placeholders``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..records import PASSED_ON_ARGS, LoaderRecord
from .safe_names import code_name

# Arguments a snippet can show, in the order a DataLoader call usually lists them.
ARG_ORDER = ("batch_size", "shuffle", "sampler", "drop_last", "num_workers", "pin_memory", "persistent_workers",
             "prefetch_factor")
# PyTorch's defaults: an argument equal to its default is left out, unless we change it.
DEFAULTS: dict[str, Any] = {
    "batch_size": None,  # never left out: always shown
    "shuffle": False,
    "sampler": None,
    "drop_last": False,
    "num_workers": 0,
    "pin_memory": False,
    "persistent_workers": False,
    "prefetch_factor": None,
}
ONE_LINE_MAX = 100
CHANGED = "# changed: was "
# The comment above a call whose recorded name may not go into code (the name itself never does).
_PLACEHOLDER_NOTES = {
    "loader": "# the report's name for this DataLoader is not a Python name: put yours in place of `loader`",
    "dataset": "# the report's name for its dataset is not a Python name: put yours in place of `dataset`",
}
_OTHERS_NOTE = ("# this run did not record your DataLoader's other arguments: keep any your call passes "
                f"({', '.join(PASSED_ON_ARGS[:5])}...)")


@dataclass(frozen=True)
class Expr:
    """Source text shown as is (a variable name, ``train_loader.collate_fn``), not as a repr."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class LoaderArgs:
    """The parts of a DataLoader call that a snippet shows.

    ``extra`` holds further keyword arguments as source text (``collate_fn``
    pointing at the old loader's); ``others_unrecorded`` says the run did not note
    which further arguments the loader had, so the call asks to keep them.
    ``shuffle`` is None when the loader uses a sampler of its own. Arguments in
    ``unknown`` (a trace does not say how many workers a loader had) are left
    out unless changed, and then marked ``# changed`` without an old value.
    ``placeholders`` names what stands in for a recorded name that may not go into code
    (``"loader"``, ``"dataset"``): the call then says to put the user's own name there.
    """

    loader_name: str
    dataset: Expr
    batch_size: Any
    shuffle: bool | None = False
    sampler: Any = None  # only as a change: the record does not keep the sampler
    drop_last: bool = False
    num_workers: Any = 0
    pin_memory: bool = False
    persistent_workers: bool = False
    prefetch_factor: int | None = None
    extra: tuple[tuple[str, Expr], ...] = field(default_factory=tuple)
    unknown: frozenset[str] = frozenset()
    placeholders: tuple[str, ...] = ()
    others_unrecorded: bool = False

    def value(self, arg: str) -> Any:
        return getattr(self, arg)


def args_from_record(record: LoaderRecord) -> LoaderArgs:
    """What a profiled run recorded about a loader, with the user's variable names where they
    may go into code (``safe_names.code_name``), generic ones in place of those that may not.

    The arguments the record holds no value of (``LoaderRecord.passed_on``: a ``collate_fn``,
    a sampler of the user's own...) are passed on from the old loader by its name
    (``collate_fn=train_loader.collate_fn``), so the new call keeps them without the user
    retyping them. Only names of ``PASSED_ON_ARGS`` go into code, whatever a file says; a
    record that did not note them (a run saved before) gets a comment asking to keep them.
    """
    loader_name, dataset_name = code_name(record.name), code_name(record.dataset_name)
    if dataset_name:
        dataset = Expr(dataset_name)
    elif loader_name:
        dataset = Expr(f"{loader_name}.dataset")
    else:
        dataset = Expr("dataset")
    refused: tuple[str, ...] = ("loader",) if record.name and not loader_name else ()
    if dataset.text == "dataset" and (refused or record.dataset_name):
        refused += ("dataset",)
    owner = loader_name or "loader"
    passed_on = record.passed_on or ()
    return LoaderArgs(
        loader_name=owner,
        dataset=dataset,
        placeholders=refused,
        batch_size=record.batch_size,
        shuffle=record.shuffle,
        drop_last=record.drop_last,
        num_workers=record.num_workers,
        pin_memory=record.pin_memory,
        persistent_workers=record.persistent_workers,
        prefetch_factor=record.prefetch_factor if record.num_workers > 0 else None,
        extra=tuple((arg, Expr(f"{owner}.{arg}")) for arg in PASSED_ON_ARGS if arg in passed_on),
        others_unrecorded=record.passed_on is None,
    )


def measured_changes(recommended: Mapping[str, Any], current: Mapping[str, Any], persistent: bool) -> dict[str, Any]:
    """The arguments to change for a setting ``tune_dataloader`` measured faster than ``current``: those that
    differ, and ``persistent_workers=True`` where it has workers, since its timing left their start-up
    out, which a loop then pays once."""
    changes = {k: v for k, v in recommended.items() if v != current.get(k)}
    if recommended.get("num_workers", 0) > 0 and not persistent:
        changes["persistent_workers"] = True
    return changes


def dataloader_call(args: LoaderArgs, changes: Mapping[str, Any] | None = None, *, preamble: str = "") -> str:
    """``name = DataLoader(dataset, ...)`` with ``changes`` applied and marked.

    Arguments at their PyTorch default are left out unless changed. Arguments
    DataLoader would reject together are dropped: ``persistent_workers`` and
    ``prefetch_factor`` without workers, ``shuffle`` beside a new ``sampler``
    (which then says so), ``drop_last`` without a batch size. Unchanged calls
    that fit stay on one line. Generic names standing in for recorded ones that may
    not go into code are named in a comment above the call.
    """
    changes = dict(changes or {})
    bad = set(changes) - set(ARG_ORDER)
    if bad:
        raise ValueError(f"cannot change DataLoader argument(s) {sorted(bad)}; known: {', '.join(ARG_ORDER)}")
    new = {a: changes.get(a, args.value(a)) for a in ARG_ORDER}
    no_workers = new["num_workers"] == 0 and "num_workers" not in args.unknown - set(changes)
    items: list[tuple[str, str]] = [(repr(args.dataset), "")]
    for arg in ARG_ORDER:
        value, old = new[arg], args.value(arg)
        unknown = arg in args.unknown
        changed = arg in changes and (unknown or value != old)
        if no_workers and arg in ("persistent_workers", "prefetch_factor"):
            continue
        if arg == "shuffle" and (value is None or new["sampler"] is not None):
            continue  # a sampler of its own: passed on in ``extra``, kept by the user, or the new one
        if arg == "drop_last" and new["batch_size"] is None:
            continue  # no auto-batching: a batch sampler decides, drop_last goes there
        if arg == "batch_size" and not changed and "batch_sampler" in dict(args.extra):
            continue  # DataLoader rejects batch_size beside a batch_sampler
        if not changed and (unknown or (arg != "batch_size" and _is_default(arg, value))):
            continue
        note = ("# changed" if unknown else f"{CHANGED}{old!r}") if changed else ""
        if arg == "sampler" and changed and args.shuffle:
            note = "# changed: replaces shuffle=True"
        items.append((f"{arg}={value!r}", note))
    items.extend((f"{key}={expr!r}", "") for key, expr in args.extra)
    head = f"{args.loader_name} = DataLoader("
    body = _one_line(head, items) if not any(note for _, note in items) else None
    if body is None or len(body) > ONE_LINE_MAX:
        lines = [head]
        lines += [f"    {text},{'  ' + note if note else ''}" for text, note in items]
        lines.append(")")
        body = "\n".join(lines)
    notes = [_OTHERS_NOTE] * args.others_unrecorded + [_PLACEHOLDER_NOTES[name] for name in args.placeholders]
    body = "".join(f"{note}\n" for note in notes) + body
    return f"{preamble.rstrip()}\n{body}" if preamble else body


def _is_default(arg: str, value: Any) -> bool:
    # With workers, DataLoader stores its default prefetch_factor as 2 rather than None.
    return value in (None, 2) if arg == "prefetch_factor" else value == DEFAULTS[arg]


def _one_line(head: str, items: list[tuple[str, str]]) -> str:
    return head + ", ".join(text for text, _ in items) + ")"


def batch_code(record: LoaderRecord | None, new_batch: int | None, factor: float, trains: bool = True) -> str:
    """The user's DataLoader call with ``new_batch``; without one, the change in words (a comment,
    which runs when pasted: the code that batches the samples is the user's). A step that
    trains (``trains``) also gets the learning-rate reminder; inference has no learning rate."""
    if record is not None and new_batch:
        code = dataloader_call(args_from_record(record), {"batch_size": new_batch})
    else:
        code = f"# no DataLoader was seen: give each step {factor:g}× as many samples"
    if not trains:
        return code
    return code + (f"\n# keep the learning rate in step with the batch (linear rule: lr × {factor:g}) "
                   "and check convergence")
