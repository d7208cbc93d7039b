"""The DataLoader rule's plan: which settings to change on one loader, and the figures
that justify each change, decided without a word of text.

Kept apart from the rule's wording (``rules.dataloader_rule``) so that every decision
(whole-batch indexing, how many workers, deeper prefetching, persistent workers, pinned
memory) is one small function of measured figures, and the estimate the suggestion
quotes is the one the plan computed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..records import LoaderRecord
from . import measures as M
from . import thresholds as T
from .suggestion import amdahl


@dataclass(frozen=True)
class Waiting:
    """How one loader made the profiled steps wait (milliseconds per step).

    ``startup_ms`` is the waiting of steps that launched workers (far above the
    median), which no setting but persistent workers removes; ``steady`` holds the
    per-step waits with those steps set to the median.
    """

    wait: M.DataWait
    compute_ms: float
    startup_ms: float
    steady: np.ndarray

    @property
    def step_ms(self) -> float:
        return self.wait.step_ms

    @property
    def steady_ms(self) -> float:
        return max(self.wait.wait_ms - self.startup_ms, 0.0)

    @property
    def steady_share(self) -> float:
        return self.steady_ms / self.step_ms if self.step_ms > 0 else 0.0

    @property
    def slow(self) -> bool:
        """Steady loading (not only start-up) keeps the steps waiting past the threshold."""
        return self.steady_share > T.DATALOADER_WAIT_SHARE

    @property
    def batches(self) -> float:
        return self.wait.batches if self.wait.batches else 1.0


@dataclass(frozen=True)
class LoaderPlan:
    """The changes for one loader, with their figures; ``rules`` words them.

    ``workers`` is the loader's worker count (None: a trace's loader that has some,
    how many unknown) and ``cap`` the most the CPU cores allow (None: a trace, whose
    machine we cannot see). Each change is a field: ``sampler`` (the sampler's order,
    for a TensorDataset that can index whole batches), ``num_workers`` (the target,
    when more workers are needed; ``load_ms`` is one process's time to load a step's
    batches), ``all_cores`` (a trace's loader with unknown workers: use the cores),
    ``prefetch`` (median and mean steady wait, when waiting is bursty),
    ``persistent`` and ``pin``. ``loaded_wait`` is the steady wait left with these
    settings, ``new_wait`` that plus the start-up waits they keep.
    """

    waiting: Waiting
    workers: int | None
    cap: int | None
    sampler: str | None
    load_ms: float | None
    num_workers: int | None
    all_cores: bool
    prefetch: tuple[float, float] | None
    persistent: bool
    restarts: int
    pin: bool
    loaded_wait: float
    new_wait: float

    @property
    def changed(self) -> bool:
        """Some setting changes; without one, a loader that only waited once keeps up."""
        return bool(self.sampler or self.num_workers is not None or self.all_cores or self.prefetch
                    or self.persistent or self.pin)

    @property
    def still_waits(self) -> bool:
        """Loading stays slower than compute with these settings: the samples must get cheaper."""
        return self.loaded_wait / self.waiting.step_ms > T.DATALOADER_WAIT_SHARE

    @property
    def bound(self) -> float:
        """The step speed-up if all data waiting disappeared (Amdahl's law)."""
        return amdahl(self.waiting.wait.share)

    @property
    def gain(self) -> float:
        """The estimated step speed-up with these settings, never above ``bound``."""
        step_ms = self.waiting.step_ms
        estimate = step_ms / max(self.waiting.compute_ms + self.new_wait, 1e-9) if step_ms > 0 else 1.0
        return max(1.0, min(self.bound, estimate))


def measure_waiting(wait: M.DataWait, compute_ms: float, waits: np.ndarray) -> Waiting:
    """Split the per-step ``waits`` into start-up (steps far above the median: workers being
    launched) and steady loading."""
    median = float(np.median(waits)) if len(waits) else 0.0
    spikes = waits > max(median * T.STARTUP_SPIKE_FACTOR, median + T.STARTUP_MIN_MS)
    startup_ms = float((waits[spikes] - median).sum()) / max(wait.steps, 1)
    return Waiting(wait, compute_ms, startup_ms, np.where(spikes, median, waits))


def worker_cap(cores: tuple[int, int] | None) -> int | None:
    """Workers the CPUs allow: this rank's share of the cores, less the ones the main process keeps."""
    if cores is None:
        return None
    cpus, ranks = cores
    return max(1, cpus // ranks - T.CORES_KEPT_FOR_MAIN)


def plan(waiting: Waiting, record: LoaderRecord | None, workers: int | None, cores: tuple[int, int] | None,
         pin: bool) -> LoaderPlan | None:
    """The changes for one loader, or None when it keeps up: only the single start-up of
    persistent workers waited, or one slow fetch did and no setting needs changing.
    ``pin`` says the batches are copied to a GPU from pageable memory."""
    persistent_now = record is not None and record.persistent_workers
    if persistent_now and workers and not waiting.slow:
        return None  # only the single start-up of persistent workers waited
    sampler = _whole_batch_order(waiting, record, workers)
    cap = worker_cap(cores)
    load_ms, num_workers, all_cores, prefetch = (_worker_changes(waiting, record, workers, cap)
                                                 if waiting.slow and not sampler else (None, None, False, None))
    persistent = not persistent_now and _keeps_workers(workers, num_workers)
    loaded = _loaded_wait(waiting, sampler, load_ms, num_workers, all_cores)
    result = LoaderPlan(
        waiting=waiting, workers=workers, cap=cap, sampler=sampler, load_ms=load_ms, num_workers=num_workers,
        all_cores=all_cores, prefetch=prefetch, persistent=persistent, restarts=_restarts(record, workers), pin=pin,
        loaded_wait=loaded, new_wait=loaded + _startup_kept(waiting, persistent, workers))
    return result if result.changed or waiting.slow else None


def _whole_batch_order(waiting: Waiting, record: LoaderRecord | None, workers: int | None) -> str | None:
    """The sampler order for a slow in-memory TensorDataset without workers: it can index a
    whole batch in one call, which beats any number of workers."""
    if not waiting.slow or record is None or record.dataset_type != "TensorDataset" or workers != 0:
        return None
    if not record.batch_size or record.shuffle is None:
        return None
    return "RandomSampler" if record.shuffle else "SequentialSampler"


def _worker_changes(waiting: Waiting, record: LoaderRecord | None, workers: int | None, cap: int | None
                    ) -> tuple[float | None, int | None, bool, tuple[float, float] | None]:
    """For loading that more processes can speed up: one process's load time per step, the
    workers to use (None: no more than now), whether a trace's loader with unknown workers
    should use the cores, and the bursty waits that call for deeper prefetching."""
    load_ms = _load_ms(waiting, workers)
    num_workers = _more_workers(waiting, load_ms, workers, cap)
    all_cores = num_workers is None and workers is None
    return load_ms, num_workers, all_cores, _bursty_prefetch(waiting, record, workers)


def _load_ms(waiting: Waiting, workers: int | None) -> float | None:
    """One process's time to load a step's batches: the wait itself without workers; with
    ``workers`` each delivers a step's batches every (wait + compute). None: workers unknown."""
    if workers is None:
        return None
    return waiting.steady_ms if workers == 0 else workers * (waiting.steady_ms + waiting.compute_ms)


def _more_workers(waiting: Waiting, load_ms: float | None, workers: int | None, cap: int | None) -> int | None:
    """Workers that load as fast as the step computes (with ``WORKER_MARGIN``), at least one
    more than now, within ``cap`` (without one, a trace, what the figures need); None when
    that is no more than the loader has, or its workers are unknown."""
    if workers is None or load_ms is None:
        return None
    compute_ms = waiting.compute_ms
    needed = math.ceil(load_ms * T.WORKER_MARGIN / compute_ms) if compute_ms > 0 else None
    if cap is not None:
        target = min(cap, max(needed or cap, workers + 1))
    elif needed is not None:
        target = max(needed, 1)
    else:
        return None
    return target if target > workers else None


def _bursty_prefetch(waiting: Waiting, record: LoaderRecord | None, workers: int | None) -> tuple[float, float] | None:
    """(median, mean) steady wait when workers exist and a few steps wait long while most
    do not, and prefetching is shallower than ``PREFETCH_SUGGESTED``: deeper prefetching
    absorbs such bursts."""
    steady = waiting.steady
    if not workers or len(steady) <= 1:
        return None
    median, mean = float(np.median(steady)), float(steady.mean())
    shallow = record is None or (record.prefetch_factor or 2) < T.PREFETCH_SUGGESTED
    return (median, mean) if median < T.PREFETCH_BURSTY_RATIO * mean and shallow else None


def _keeps_workers(workers: int | None, num_workers: int | None) -> bool:
    """Whether the loader has worker processes with the planned settings (a trace's
    unknown count has some): only those can persist."""
    return (workers if num_workers is None else num_workers) != 0


def _restarts(record: LoaderRecord | None, workers: int | None) -> int:
    """How many times the loader's workers were started (0: no workers, or a trace)."""
    return record.iterations_started if record is not None and workers else 0


def _startup_kept(waiting: Waiting, persistent: bool, workers: int | None) -> float:
    """Start-up waiting per step that stays: all of it, unless persistent workers replace
    workers that are now restarted."""
    return 0.0 if persistent and workers else waiting.startup_ms


def _loaded_wait(waiting: Waiting, sampler: str | None, load_ms: float | None, num_workers: int | None,
                 all_cores: bool) -> float:
    """Steady waiting per step left with the planned settings: none once batches are indexed
    whole or a trace's loader uses the cores, the workers' shortfall with more workers."""
    if sampler or all_cores:
        return 0.0
    if num_workers is not None and load_ms is not None:
        return max(load_ms / num_workers - waiting.compute_ms, 0.0)
    return waiting.steady_ms
