"""The DataLoader rule's plan: which settings to change on one loader, and the figures
that justify each change, decided without a word of text.

Kept apart from the rule's wording (``rules.dataloader.dataloader_rule``) so that every decision
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
class Cores:
    """The CPU cores one rank's loader workers and its own compute share.

    ``cpus`` is what the process may use (affinity, cgroup quota), shared by ``ranks``
    local ranks; ``threads`` the cores the step's compute keeps busy: torch's intra-op
    threads on a CPU run, ``CORES_KEPT_FOR_MAIN`` where compute runs on a GPU or the
    threads were not recorded. A worker on a core compute uses slows compute down: on
    a 2-core machine with 2 threads, one worker made a 200 ms-compute step 12% slower.
    """

    cpus: int
    ranks: int
    threads: int

    @property
    def per_rank(self) -> int:
        return max(1, self.cpus // self.ranks)

    @property
    def compute(self) -> int:
        """The cores compute keeps busy (its threads, at most this rank's cores)."""
        return max(1, min(self.threads, self.per_rank))

    @property
    def spare(self) -> int:
        """Cores workers can use without taking any from compute."""
        return self.per_rank - self.compute


@dataclass(frozen=True)
class Split:
    """Workers that need cores compute now uses: ``threads`` intra-op threads for compute
    (``torch.set_num_threads``) and the rest of the rank's cores for the workers.
    ``slowdown`` is the most compute can slow down with fewer threads (it at worst scales
    with its threads: ``Cores.compute / threads``)."""

    threads: int
    slowdown: float


@dataclass(frozen=True)
class LoaderPlan:
    """The changes for one loader, with their figures; ``rules`` words them.

    ``workers`` is the loader's worker count (None: a trace's loader that has some,
    how many unknown) and ``cores`` those it shares with compute (None: a trace, whose
    machine we cannot see). Each change is a field: ``sampler`` (the sampler's order,
    for a TensorDataset that can index whole batches), ``num_workers`` (the target,
    when more workers are needed; ``load_ms`` is one process's time to load a step's
    batches), ``split`` (fewer compute threads, when those workers need cores compute
    uses), ``all_cores`` (a trace's slow loader: use the cores of the machine that runs it,
    up to ``trace_workers``); ``contended`` says more workers might help but only on
    cores compute needs, with no split that wins even if compute slows with its threads
    (or, loading that waits on I/O, whose computing part does not fit on the spare cores,
    ``to_measure`` of them; or, ``handover``, a first worker where each batch waits less than a
    worker's hand-over of a batch may cost): one run cannot tell whether they speed the loop up, so they
    are to be measured,
    ``prefetch`` (median and mean steady wait, when waiting is bursty),
    ``io_bound`` (the loading waited on I/O, so its workers are not limited to spare cores),
    ``persistent`` and ``pin``. ``loaded_wait`` is the steady wait left with these
    settings, ``new_wait`` that plus the start-up waits they keep.
    """

    waiting: Waiting
    workers: int | None
    cores: Cores | None
    sampler: str | None
    load_ms: float | None
    num_workers: int | None
    split: Split | None
    contended: bool
    to_measure: int | None
    handover: bool
    all_cores: bool
    trace_workers: int
    prefetch: tuple[float, float] | None
    io_bound: bool
    persistent: bool
    restarts: int
    pin: bool
    loaded_wait: float
    new_wait: float

    @property
    def changed(self) -> bool:
        """Some setting changes; without one, a loader that only waited once keeps up."""
        return bool(self.sampler or self.num_workers is not None or self.all_cores
                    or self.prefetch or self.persistent or self.pin)

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
        """The estimated step speed-up with these settings if compute keeps its speed,
        never above ``bound``."""
        return max(1.0, self._speedup(1.0))

    @property
    def gain_low(self) -> float:
        """The estimate if compute slows down as much as a thread split can make it."""
        return self._speedup(self.split.slowdown) if self.split is not None else self.gain

    def measure_range(self) -> tuple[float, float]:
        """For workers ``to_measure`` that would use compute's cores: the step speed-up if compute
        slows in proportion to the cores they take (the worst), and if it keeps its speed (the best,
        never above ``bound``)."""
        w, n = self.waiting, self.to_measure or 1
        if self.cores is None or w.step_ms <= 0 or self.load_ms is None:
            return 1.0, self.bound
        if self.handover:  # the worst: every batch handed over at the most it was measured to cost
            worst = w.step_ms / (w.step_ms - w.steady_ms + T.WORKER_HANDOVER_MS * w.batches)
            return worst, self.bound
        worst = w.step_ms / split_step(w, self.load_ms, n, self.cores)
        best = min(self.bound, w.step_ms / max(w.compute_ms + _shortfall(self.load_ms, n, w.compute_ms), 1e-9))
        return min(worst, best), max(worst, best)

    def _speedup(self, slowdown: float) -> float:
        step_ms = self.waiting.step_ms
        if step_ms <= 0:
            return 1.0
        compute = self.waiting.compute_ms * slowdown
        loaded = self.loaded_wait if slowdown == 1.0 else _shortfall(self.load_ms, self.num_workers, compute)
        return min(self.bound, step_ms / max(compute + loaded + self.new_wait - self.loaded_wait, 1e-9))


def measure_waiting(wait: M.DataWait, compute_ms: float, waits: np.ndarray) -> Waiting:
    """Split the per-step ``waits`` into start-up (steps far above the median: workers being
    launched) and steady loading."""
    median = float(np.median(waits)) if len(waits) else 0.0
    spikes = waits > max(median * T.STARTUP_SPIKE_FACTOR, median + T.STARTUP_MIN_MS)
    startup_ms = float((waits[spikes] - median).sum()) / max(wait.steps, 1)
    return Waiting(wait, compute_ms, startup_ms, np.where(spikes, median, waits))


def plan(waiting: Waiting, record: LoaderRecord | None, workers: int | None, cores: Cores | None,
         pin: bool) -> LoaderPlan | None:
    """The changes for one loader, or None when it keeps up: only the single start-up of
    persistent workers waited, or one slow fetch did and no setting needs changing.
    ``pin`` says the batches are copied to a GPU from pageable memory."""
    persistent_now = record is not None and record.persistent_workers
    if persistent_now and workers and not waiting.slow:
        return None  # only the single start-up of persistent workers waited
    sampler = _whole_batch_order(waiting, record, workers)
    more = _worker_changes(waiting, record, workers, cores) if waiting.slow and not sampler else _NO_MORE
    use_cores = cores is None and waiting.slow and not sampler  # a trace: the cores of its machine
    persistent = not persistent_now and (use_cores or _keeps_workers(workers, more.num_workers))
    loaded = _loaded_wait(waiting, sampler, more.load_ms, more.num_workers, use_cores)
    result = LoaderPlan(
        waiting=waiting, workers=workers, cores=cores, sampler=sampler, load_ms=more.load_ms,
        num_workers=more.num_workers, split=more.split, contended=more.contended, to_measure=more.to_measure,
        handover=more.handover,
        all_cores=use_cores,
        trace_workers=more.trace_workers, prefetch=more.prefetch, io_bound=more.io_bound, persistent=persistent,
        restarts=_restarts(record, workers), pin=pin, loaded_wait=loaded,
        new_wait=loaded + _startup_kept(waiting, persistent, workers))
    return result if result.changed or waiting.slow else None


def _whole_batch_order(waiting: Waiting, record: LoaderRecord | None, workers: int | None) -> str | None:
    """The sampler order for a slow in-memory TensorDataset without workers: it can index a
    whole batch in one call, which beats any number of workers. Not where the loader samples or
    collates in its own way: a whole-batch index would bypass it."""
    if not waiting.slow or record is None or record.dataset_type != "TensorDataset" or workers != 0:
        return None
    if set(record.passed_on or ()) & {"sampler", "batch_sampler", "collate_fn"}:
        return None
    if not record.batch_size or record.shuffle is None:
        return None
    return "RandomSampler" if record.shuffle else "SequentialSampler"


@dataclass(frozen=True)
class _MoreLoading:
    """What more loading processes can do: see ``LoaderPlan``'s fields of the same names."""

    load_ms: float | None = None
    num_workers: int | None = None
    split: Split | None = None
    contended: bool = False
    to_measure: int | None = None
    handover: bool = False
    trace_workers: int = T.TRACE_MAX_WORKERS
    prefetch: tuple[float, float] | None = None
    io_bound: bool = False


_NO_MORE = _MoreLoading()


def _worker_changes(waiting: Waiting, record: LoaderRecord | None, workers: int | None,
                    cores: Cores | None) -> _MoreLoading:
    """For loading that more processes can speed up: one process's load time per step, the
    workers to use (None: no more than now) and the thread split they need, and the bursty
    waits that call for deeper prefetching. A trace's machine is unknown: its loader uses
    that machine's cores, up to what the figures need or ``TRACE_MAX_WORKERS``."""
    load_ms = _load_ms(waiting, workers)
    needed = _needed(waiting, load_ms)
    prefetch = _bursty_prefetch(waiting, record, workers)
    if cores is None or workers is None:
        return _MoreLoading(load_ms=load_ms, trace_workers=max(needed or 0, T.TRACE_MAX_WORKERS), prefetch=prefetch)
    if workers == 0 and waiting.steady_ms / waiting.batches < T.WORKER_HANDOVER_MS:
        return _MoreLoading(load_ms=load_ms, contended=True, to_measure=1, handover=True, prefetch=prefetch,
                            io_bound=_waits_on_io(record, workers))
    if _waits_on_io(record, workers):
        target = min(T.IO_MAX_WORKERS, max(needed or T.IO_MAX_WORKERS, workers + 1))
        if not _io_fits_spare_cores(waiting, record, load_ms, target, cores):
            return _MoreLoading(load_ms=load_ms, contended=True, to_measure=target, prefetch=prefetch, io_bound=True)
        return _MoreLoading(load_ms=load_ms, num_workers=target, prefetch=prefetch, io_bound=True)
    target = min(cores.spare, max(needed or cores.spare, workers + 1))
    if target > workers:
        return _MoreLoading(load_ms=load_ms, num_workers=target, prefetch=prefetch)
    split = _thread_split(waiting, load_ms, workers, cores) if load_ms is not None else None
    if split is None:
        return _MoreLoading(load_ms=load_ms, contended=cores.per_rank > workers + 1, to_measure=workers + 1,
                            prefetch=prefetch)
    n, threads = split
    return _MoreLoading(load_ms=load_ms, num_workers=n, split=Split(threads, cores.compute / threads),
                        prefetch=prefetch)


def _waits_on_io(record: LoaderRecord | None, workers: int) -> bool:
    """The loop's thread loaded its batches (no workers) but computed for under
    ``IO_BOUND_CPU_SHARE`` of that time: the loading sleeps on I/O, and workers that sleep
    need no cores."""
    share = record.wait_cpu_share if record is not None and workers == 0 else None
    return share is not None and share < T.IO_BOUND_CPU_SHARE


def _io_fits_spare_cores(waiting: Waiting, record: LoaderRecord | None, load_ms: float | None, workers: int,
                         cores: Cores) -> bool:
    """Whether I/O-bound loading with ``workers`` cannot slow the loop: their CPU time per step (the
    share of the wait the loop's thread computed), less what the spare cores hold over the step they
    would leave, taken whole from compute at worst, still leaves a step ``SPLIT_MIN_GAIN`` faster.
    A sleeping loader computes ~1% of its wait, so it fits even where compute uses every core."""
    share = record.wait_cpu_share if record is not None else None
    if load_ms is None or share is None:
        return False
    step_ms = waiting.compute_ms + _shortfall(load_ms, workers, waiting.compute_ms)
    taken = max(load_ms * share - cores.spare * step_ms, 0.0)
    return step_ms + taken <= waiting.step_ms / T.SPLIT_MIN_GAIN


def _needed(waiting: Waiting, load_ms: float | None) -> int | None:
    """Workers that load as fast as the step computes (with ``WORKER_MARGIN``); None when unknown."""
    compute_ms = waiting.compute_ms
    if load_ms is None or compute_ms <= 0:
        return None
    return max(1, math.ceil(load_ms * T.WORKER_MARGIN / compute_ms))


def _thread_split(waiting: Waiting, load_ms: float, workers: int, cores: Cores) -> tuple[int, int] | None:
    """(workers, compute threads) for more workers than the spare cores hold: each worker
    takes a core from compute's threads. The split whose step is fastest if compute slows
    down in proportion to the threads it loses, when that still beats the step as it is;
    None when no split does (then more workers would only trade compute for loading)."""
    best: tuple[float, int] | None = None
    for n in range(workers + 1, cores.per_rank):
        step = split_step(waiting, load_ms, n, cores)
        if step < waiting.step_ms / T.SPLIT_MIN_GAIN and (best is None or step < best[0]):
            best = (step, n)
    return None if best is None else (best[1], cores.per_rank - best[1])


def split_step(waiting: Waiting, load_ms: float, workers: int, cores: Cores) -> float:
    """The steady step time with ``workers`` on the cores compute gives up, if compute slows
    down in proportion to the threads it loses (the worst a thread split does)."""
    slow = waiting.compute_ms * cores.compute / max(cores.per_rank - workers, 1)
    return slow + _shortfall(load_ms, workers, slow)


def _shortfall(load_ms: float | None, workers: int | None, compute_ms: float) -> float:
    """Steady wait per step when ``workers`` load a step's batches in ``load_ms`` each while
    the step computes for ``compute_ms``."""
    if load_ms is None or not workers:
        return 0.0
    return max(load_ms / workers - compute_ms, 0.0)


def _load_ms(waiting: Waiting, workers: int | None) -> float | None:
    """One process's time to load a step's batches: the wait itself without workers; with
    ``workers`` each delivers a step's batches every (wait + compute). None: workers unknown."""
    if workers is None:
        return None
    return waiting.steady_ms if workers == 0 else workers * (waiting.steady_ms + waiting.compute_ms)


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
                 trace: bool) -> float:
    """Steady waiting per step left with the planned settings: none once batches are indexed
    whole or a trace's loader uses the cores (``trace``), the workers' shortfall with more workers."""
    if sampler or trace:
        return 0.0
    if num_workers is not None and load_ms is not None:
        return _shortfall(load_ms, num_workers, waiting.compute_ms)
    return waiting.steady_ms
