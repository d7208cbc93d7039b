"""What a live run measured besides the trace: the Report's ``run``, its DataLoaders and
its cell lines.

Capture fills these in while a cell runs; analysis, advice, the Report and its saved
form read them. They live apart from capture so that reading them (a saved report,
a test) never imports torch or the hooks.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .options import ProfileOptions
from .trace.table import DeviceInfo

NOT_IN_CELL = -1  # the line value while no frame of the cell runs


def source_fingerprint(source: str) -> str:
    """A short fingerprint of a cell's source, blind to leading and trailing blank space: what names a
    cell without a front-end id (``cell_identity``), and tells whether a cell's code changed since."""
    return hashlib.sha256(source.strip().encode("utf-8", "surrogatepass")).hexdigest()[:16]
# How a ``RunRecord.cell_key`` begins when the front end named no cell: a fingerprint of the source follows.
SOURCE_PREFIX = "source:"


@dataclass(frozen=True, eq=False)
class LineMarks:
    """A step function: from ``times_ns[i]`` on, line ``lines[i]`` of the cell runs.

    The line is that of the innermost running frame of the cell's file, so
    code in other cells or in modules counts for the cell line that called it.
    ``NOT_IN_CELL`` marks the stretches when no cell frame runs.
    """

    times_ns: np.ndarray  # int64, Unix time, non-decreasing
    lines: np.ndarray  # int32, 1-based cell lines

    def __len__(self) -> int:
        return len(self.lines)


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
    # CPU time the loop's thread used while it waited for batches: near the wait itself when
    # it loaded them (num_workers=0) by computing, near zero when loading waited on I/O.
    # None: not measured (a report saved before it was).
    wait_cpu_ms: float | None = None
    # Of that waiting, the time the loop's thread was runnable but waiting for a core (a busy
    # machine), which is neither computing nor I/O. None: not known (not Linux, or a report
    # saved before it was measured).
    wait_queued_ms: float | None = None
    # The wall time of the fetches whose thread's clock was read (``capture.hooks.CLOCKED_FIRST``
    # fetches, then one in ``CLOCKED_EVERY``), which the two figures above are of. None: every
    # fetch's was (a report saved before the clock was read on some only).
    wait_clocked_ms: float | None = None
    # The arguments of the loader's call that the fields above do not hold and that differ from
    # DataLoader's defaults (a ``collate_fn``, ``sampler``, ``worker_init_fn``...): code that rebuilds
    # the loader passes them on by the loader's name. None: not recorded (a report saved before it was).
    passed_on: tuple[str, ...] | None = None
    # Why a call rebuilt from this record does not yield the loader's batches, found by building it
    # in the notebook (``measure.loader_check``); None: it does, or it could not be checked.
    rebuilt_differs: str | None = None

    @property
    def wait_cpu_share(self) -> float | None:
        """The share of the loop's data waiting that its thread spent computing, of the time it
        had a core (None: it never waited). Low means the loading sleeps on I/O, which workers
        overlap without cores. The time spent waiting for a core is left out where known: on a
        busy machine it would make computing look like sleeping."""
        wall = self.wait_clocked_ms if self.wait_clocked_ms is not None else sum(self.wait_ms_by_step.values())
        if wall <= 0 or self.wait_cpu_ms is None:
            return None
        had_core = max(wall - (self.wait_queued_ms or 0.0), self.wait_cpu_ms)
        return min(self.wait_cpu_ms / had_core, 1.0) if had_core > 0 else None

    @classmethod
    def of(cls, loader: Any) -> "LoaderRecord":
        dataset = loader.dataset
        try:
            length: int | None = len(dataset)
        except Exception:  # noqa: BLE001 - IterableDataset without __len__, or a broken __len__
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
            passed_on=_passed_on(loader),
        )

    @property
    def setup_name(self) -> str:
        """What the loader loads, as a measurement of it is matched to a later run: "TensorDataset(16000)"."""
        return f"{self.dataset_type}({self.dataset_length if self.dataset_length is not None else '?'})"

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


# Arguments of a DataLoader call that a LoaderRecord's fields do not hold: code that rebuilds the
# loader passes them on from the old one by name (``train_loader.collate_fn``).
PASSED_ON_ARGS = ("sampler", "batch_sampler", "collate_fn", "worker_init_fn", "generator", "multiprocessing_context",
                  "timeout", "pin_memory_device", "in_order")


def _passed_on(loader: Any) -> tuple[str, ...]:
    """The ``PASSED_ON_ARGS`` that ``loader`` has away from their defaults: a sampler of its own (the
    default ones follow from ``shuffle``), a batch sampler in place of a batch size, a collate function
    other than torch's, and any other argument not at its default."""
    from torch.utils.data import RandomSampler, SequentialSampler
    from torch.utils.data._utils.collate import default_collate, default_convert

    sampler = getattr(loader, "sampler", None)
    away = {
        "sampler": not isinstance(sampler, (RandomSampler, SequentialSampler))
        and type(sampler).__name__ != "_InfiniteConstantSampler",
        "batch_sampler": loader.batch_size is None and getattr(loader, "batch_sampler", None) is not None,
        "collate_fn": loader.collate_fn not in (default_collate, default_convert),
        "worker_init_fn": loader.worker_init_fn is not None,
        "generator": loader.generator is not None,
        "multiprocessing_context": loader.multiprocessing_context is not None,
        "timeout": loader.timeout != 0,
        "pin_memory_device": getattr(loader, "pin_memory_device", "") != "",
        "in_order": getattr(loader, "in_order", True) is not True,
    }
    return tuple(arg for arg in PASSED_ON_ARGS if away[arg])


@dataclass(frozen=True)
class UnwrittenOutput:
    """A copy of the trace the user asked for that could not be written: the option (``--trace``,
    ``--tensorboard``), the path it gave, and why (``PermissionError: ...``)."""

    flag: str
    path: str
    reason: str


@dataclass(frozen=True)
class CaptureFacts:
    """What happened while the run was captured that limits or explains its report; the report
    words each as a note (``report/notes.py``). The defaults are a run where none of it happened,
    which is also what a run saved before these were recorded reads back as (its notes are
    already words, in ``RunRecord.notes``)."""

    # Another trace function (a debugger, a coverage tool) was active: no time per cell line.
    lines_skipped: bool = False
    other_thread_steps: int = 0  # steps ended in threads other than the cell's, never profiled
    # The trace export's failure (``OSError: disk full``), and the temporary folder it writes to.
    export_error: str | None = None
    temp_dir: str | None = None
    # With --step-on auto: the steps DataLoader batches ended before the first optimizer.step().
    loader_steps_before_optimizer: int = 0
    # The optimizers that step in each loop iteration, in their order, when there are several, and
    # the one whose step ends an iteration.
    optimizers: tuple[str, ...] = ()
    closing_optimizer: str | None = None
    unknown_samples: bool = False  # manual steps took no DataLoader batch and were given no sample count
    cycles: int = 0  # the profiler cycles (--repeat) whose trace was exported
    unwritten: tuple[UnwrittenOutput, ...] = ()  # in the order they were attempted


@dataclass(frozen=True)
class StoredMeasurement:
    """A ``batch_size_curve`` or ``tune_dataloader`` result the run history kept for this run's cell or
    set-up (``history/measurements.py``), as the advice quotes it: measured figures in place of an
    estimate, or, with ``stale`` set, why they no longer apply to this run.

    ``reference`` is the setting the gains are against ("batch_size=32", "num_workers=0"); ``best``
    the one measured reliably faster, in words, and ``best_value`` its batch size or worker count
    (with ``pin_memory`` for a loader), or None where none was; ``speedup`` and its quartiles over
    the rounds are ``best``'s."""

    kind: str  # "batch_size_curve" or "tune_dataloader"
    measured_at: str  # UTC, ISO 8601
    rounds: int
    reference: str
    best: str | None = None
    best_value: int | None = None
    pin_memory: bool | None = None
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    stale: str | None = None  # why it no longer applies (another device, torch version, cell code)

    @property
    def when(self) -> str:
        """The day it was measured ("2026-12-03")."""
        return self.measured_at[:10]


@dataclass
class RunRecord:
    """What a live run measured besides the trace; the Report's ``run``."""

    options: ProfileOptions
    device: DeviceInfo
    steps: pd.DataFrame
    loaders: tuple[LoaderRecord, ...]
    step_source: str  # what ended the steps: "optimizer", "dataloader", "manual", "iterations", "none", "other thread"
    error: str | None = None  # "KeyboardInterrupt", "ValueError: ..." when the code raised
    cell_source: str | None = None
    # The names the cell calls (``model(x)``) that were nn.Module instances in its namespace when the run
    # ended: the names code may compile (``capture.model_calls``); None: not recorded (a trace file).
    cell_modules: tuple[str, ...] | None = None
    cell_filename: str | None = None
    # Which cell ran, across runs: JupyterLab's cell id, else a fingerprint of the source (None
    # outside a notebook); and the notebook's path when the front end names it. The history
    # and ``--compare`` find "the previous run of this cell" by them.
    cell_key: str | None = None
    notebook: str | None = None
    line_marks: LineMarks | None = None  # with --stack in a cell: which cell line ran when
    sampler_bytes: int = 0
    cpu_count: int = 1  # CPU cores the process may use (affinity, cgroup quota)
    # torch's intra-op threads (torch.get_num_threads()) while the cell ran: the cores the step's own
    # compute keeps busy, which DataLoader workers would compete for; None where not recorded
    intra_op_threads: int | None = None
    wall_s: float = 0.0
    # Cores other programs kept busy, on average, while the cell ran (machine.other_cores): a
    # comparison of two runs says when the machine, not the change, may explain a difference.
    other_cores: float | None = None
    facts: CaptureFacts = CaptureFacts()
    # --every: one row per profiler cycle, as ``report/cycle_summary.py`` made it while the run went
    # on (``report.cycles``); None for a run without --every.
    cycles: pd.DataFrame | None = None
    # The history's measurements of this cell or its set-up, quoted by the advice (``StoredMeasurement``).
    measured: tuple[StoredMeasurement, ...] = ()
    # Notes already in words: one added after the report was made (the history could not keep the
    # run), and, in a run saved before ``facts`` were recorded, the capture's own.
    notes: list[str] = field(default_factory=list)
