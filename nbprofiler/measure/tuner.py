"""``tune_dataloader``: measure how fast a DataLoader delivers batches under other settings.

A suggestion estimates; this measures. For each candidate setting it builds a
fresh loader over the same dataset, sampler and collate function, times the
batches it delivers, and recommends the best *measured* setting, as code.

It leaves the process as it found it: the user's loader is never modified,
every worker process it starts is shut down, and the random number
generators that iterating advances (torch's, Python's, NumPy's and the
loader's own generators) are put back, also when it raises or is interrupted.
"""
from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd
import torch
from torch.utils.data import DataLoader, IterableDataset

from ..advice import thresholds as T
from .feedback import Progress, in_kernel, show_figure
from ..advice.loader_code import args_from_loader, dataloader_call
from ..advice.machine import usable_cpus

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RESULT_COLUMNS = ["num_workers", "pin_memory", "prefetch_factor", "batches", "seconds", "batches_per_s",
                  "samples_per_s", "startup_s", "speedup", "status"]
CANDIDATE_KEYS = ("num_workers", "pin_memory", "prefetch_factor")
# Each candidate gets at least this long, so a tight budget still measures something.
MIN_SECONDS_PER_CANDIDATE = 0.5


@dataclass(frozen=True)
class Candidate:
    num_workers: int
    pin_memory: bool
    prefetch_factor: int | None

    @classmethod
    def of(cls, spec: Mapping[str, Any], loader: DataLoader) -> "Candidate":
        bad = set(spec) - set(CANDIDATE_KEYS)
        if bad:
            raise ValueError(f"unknown candidate key(s) {sorted(bad)}; use {', '.join(CANDIDATE_KEYS)}")
        workers = int(spec.get("num_workers", loader.num_workers))
        if workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {workers}")
        prefetch = spec.get("prefetch_factor", loader.prefetch_factor if loader.num_workers > 0 else None)
        return cls(workers, bool(spec.get("pin_memory", loader.pin_memory)), None if workers == 0 else (prefetch or 2))

    def label(self) -> str:
        return f"num_workers={self.num_workers}" + (", pin_memory" if self.pin_memory else "")


def default_candidates(loader: DataLoader) -> list[dict[str, Any]]:
    """num_workers 0, 1, 2, 4, ... up to the usable CPUs (and the loader's own value);
    with and without pin_memory where CUDA is present (pinning needs a GPU to matter)."""
    limit = usable_cpus()
    workers = {0, limit, loader.num_workers}
    w = 1
    while w < limit:
        workers.add(w)
        w *= 2
    pins = (False, True) if torch.cuda.is_available() else (False,)
    return [{"num_workers": n, "pin_memory": p} for n in sorted(workers) for p in pins]


def tune_dataloader(loader: DataLoader, candidates: Sequence[Mapping[str, Any]] | None = None,
                    max_seconds: float = 30.0, *, plot: bool = True, progress: bool = True,
                    namespace: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Time ``loader``'s throughput under each candidate setting; recommend the best measured.

    ``candidates`` is a list of dicts with any of ``num_workers``, ``pin_memory``
    and ``prefetch_factor`` (default: ``default_candidates``). The budget
    ``max_seconds`` is shared among them; each builds a fresh loader over the
    same dataset and sampler, so the user's loader is left untouched.

    For each candidate, the first batch is timed separately (``startup_s``:
    worker start-up), then batches are counted for the candidate's share of the
    budget after the batches the workers prefetched while starting (those come
    out at once and would inflate the rate). ``batches_per_s`` is that steady
    rate; ``speedup`` compares it with the loader's current setting.

    The loader is measured alone: a training loop also needs the CPU, so on a
    machine with few cores the best measured setting may be more workers than
    the loop can afford. The recommendation is the fewest workers within
    ``MEASURED_TIE_SHARE`` of the best rate. It is in ``result.attrs``
    (``"recommended"``, and ``"code"``: the loader call to paste, with the
    user's names when ``namespace`` or the notebook's namespace has them).

    An error in the dataset, or KeyboardInterrupt, stops the measuring and is
    raised after the worker processes are shut down and the RNG states restored.
    """
    if not isinstance(loader, DataLoader):
        raise TypeError(f"tune_dataloader needs a torch.utils.data.DataLoader, got {type(loader).__name__}")
    if not max_seconds > 0:
        raise ValueError(f"max_seconds must be > 0, got {max_seconds!r}")
    chosen = [Candidate.of(c, loader) for c in (candidates if candidates is not None else default_candidates(loader))]
    chosen = list(dict.fromkeys(chosen))  # drop repeats, keep order
    if not chosen:
        raise ValueError("no candidate settings to measure")
    current = Candidate.of({}, loader)
    rows: list[dict[str, Any]] = []
    bar = Progress(len(chosen), "DataLoader", enabled=progress)
    deadline = time.perf_counter() + max_seconds
    try:
        with _rng_restored(loader):
            for i, cand in enumerate(chosen):
                left = deadline - time.perf_counter()
                share = left / (len(chosen) - i)
                bar.update(i, f"{cand.label()} ({max(share, 0):.1f} s)")
                if left <= 0:
                    rows.append(_row(cand, 0, 0.0, None, None, loader, "not run: time budget spent"))
                    continue
                rows.append(_measure(loader, cand, max(share, MIN_SECONDS_PER_CANDIDATE)))
            bar.update(len(chosen), "done")
    finally:
        bar.close()
    result = _finish(pd.DataFrame(rows, columns=RESULT_COLUMNS), current)
    result.attrs.update(_recommend(result, loader, current, namespace))
    if plot and in_kernel():
        fig = plot_throughput(result)
        show_figure(fig, "DataLoader throughput (batches/s) by num_workers")
    print(result.attrs["summary"])
    return result


def _measure(loader: DataLoader, cand: Candidate, seconds: float) -> dict[str, Any]:
    """One candidate: start-up, then the steady rate, for ``seconds`` at most."""
    trial = _clone(loader, cand)
    start = time.perf_counter()
    iterator = iter(trial)
    try:
        try:
            next(iterator)
        except StopIteration:
            return _row(cand, 0, 0.0, None, None, loader, "empty: the loader yielded no batch")
        first = time.perf_counter()
        skip = cand.num_workers * (cand.prefetch_factor or 0)
        counted, t0, end = 0, first, first + max(seconds - (first - start), 0.0)
        fetched = 0
        for _ in iterator:
            fetched += 1
            now = time.perf_counter()
            if fetched == skip:
                t0 = now  # the prefetched batches are out: the steady rate starts here
            elif fetched > skip:
                counted += 1
            if now >= end and counted >= 1:
                break
        if counted == 0:  # the epoch ended inside the prefetched batches: count them all
            counted, t0 = fetched, first
        elapsed = time.perf_counter() - t0
        return _row(cand, counted, elapsed, counted / elapsed if elapsed > 0 else None, first - start, loader, "ok")
    finally:
        _shutdown(iterator)


def _shutdown(iterator: Any) -> None:
    """Stop an iterator's worker processes (and pin-memory thread) now, not at garbage collection."""
    stop = getattr(iterator, "_shutdown_workers", None)
    if stop is not None:
        stop()


def _clone(loader: DataLoader, cand: Candidate) -> DataLoader:
    """A loader over the same dataset, sampling and collation, with the candidate's settings."""
    kwargs: dict[str, Any] = {
        "num_workers": cand.num_workers,
        "pin_memory": cand.pin_memory,
        "collate_fn": loader.collate_fn,
        "timeout": loader.timeout,
        "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context if cand.num_workers > 0 else None,
        "generator": loader.generator,
        "persistent_workers": False,  # one pass per candidate; shut down right after
    }
    if cand.num_workers > 0:
        kwargs["prefetch_factor"] = cand.prefetch_factor
    if hasattr(loader, "in_order"):
        kwargs["in_order"] = loader.in_order
    if isinstance(loader.dataset, IterableDataset):
        return DataLoader(loader.dataset, batch_size=loader.batch_size, drop_last=loader.drop_last, **kwargs)
    if loader.batch_size is None:
        return DataLoader(loader.dataset, batch_size=None, sampler=loader.sampler, **kwargs)
    return DataLoader(loader.dataset, batch_sampler=loader.batch_sampler, **kwargs)


class _rng_restored:
    """Puts back every RNG state that iterating a loader advances."""

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


def _row(cand: Candidate, batches: int, seconds: float, rate: float | None, startup: float | None,
         loader: DataLoader, status: str) -> dict[str, Any]:
    per_batch = loader.batch_size or 1
    return {
        "num_workers": cand.num_workers,
        "pin_memory": cand.pin_memory,
        "prefetch_factor": cand.prefetch_factor,
        "batches": batches,
        "seconds": seconds,
        "batches_per_s": rate,
        "samples_per_s": None if rate is None else rate * per_batch,
        "startup_s": startup,
        "speedup": None,
        "status": status,
    }


def _finish(result: pd.DataFrame, current: Candidate) -> pd.DataFrame:
    """Fill ``speedup``: each rate over the current setting's (or the slowest measured)."""
    for col in ("batches_per_s", "samples_per_s", "startup_s", "speedup"):
        result[col] = pd.to_numeric(result[col], errors="coerce").astype("float64")
    ok = result[result["status"] == "ok"]
    base = ok[(ok["num_workers"] == current.num_workers) & (ok["pin_memory"] == current.pin_memory)]
    reference: float | None  # None when nothing was measured
    if len(base):
        reference = float(base["batches_per_s"].iloc[0])
    else:
        reference = float(ok["batches_per_s"].min()) if len(ok) else None
    if reference:
        result["speedup"] = result["batches_per_s"] / reference
    return result


def _recommend(result: pd.DataFrame, loader: DataLoader, current: Candidate,
               namespace: Mapping[str, Any] | None) -> dict[str, Any]:
    ok = result[(result["status"] == "ok") & result["batches_per_s"].notna()]
    if ok.empty:
        return {"recommended": None, "code": None,
                "summary": "No setting could be measured: raise max_seconds, or check that the loader yields batches."}
    best = float(ok["batches_per_s"].max())
    close = ok[ok["batches_per_s"] >= T.MEASURED_TIE_SHARE * best]
    pick = close.sort_values(["num_workers", "pin_memory"], kind="stable").iloc[0]
    recommended = {"num_workers": int(pick["num_workers"]), "pin_memory": bool(pick["pin_memory"])}
    if pick["num_workers"] > 0 and pd.notna(pick["prefetch_factor"]) and int(pick["prefetch_factor"]) != 2:
        recommended["prefetch_factor"] = int(pick["prefetch_factor"])
    ns = namespace if namespace is not None else _notebook_namespace()
    args = args_from_loader(loader, ns)
    changes = {k: v for k, v in recommended.items() if v != getattr(current, k)}
    code = dataloader_call(args, changes)
    rate = float(pick["batches_per_s"])
    speed = f" ({pick['speedup']:.2f}× the current setting)" if pd.notna(pick["speedup"]) else ""
    what = ", ".join(f"{k}={v}" for k, v in recommended.items())
    if not changes:
        summary = f"Best measured: your current setting ({what}), {rate:.1f} batches/s."
    else:
        summary = f"Best measured: {what}, {rate:.1f} batches/s{speed}. Paste:\n{code}"
    return {"recommended": recommended, "code": code, "summary": summary}


def _notebook_namespace() -> Mapping[str, Any] | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell.user_ns if shell is not None else None


def plot_throughput(result: pd.DataFrame) -> "Figure":
    """Batches/s against num_workers, one line per pin_memory setting, the pick marked."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    ok = result[(result["status"] == "ok") & result["batches_per_s"].notna()]
    for pinned, rows in ok.groupby("pin_memory", sort=True):
        rows = rows.sort_values("num_workers")
        ax.plot(rows["num_workers"], rows["batches_per_s"], marker="o",
                label="pin_memory=True" if pinned else "pin_memory=False")
    pick = result.attrs.get("recommended")
    if pick:
        row = ok[(ok["num_workers"] == pick["num_workers"]) & (ok["pin_memory"] == pick["pin_memory"])]
        if len(row):
            ax.scatter(row["num_workers"], row["batches_per_s"], s=160, facecolors="none", edgecolors="black",
                       zorder=3, label="recommended")
    ax.set_xlabel("num_workers (worker processes)")
    ax.set_ylabel("throughput (batches/s)")
    ax.set_title("DataLoader throughput by setting")
    ax.set_xticks(sorted(ok["num_workers"].unique()))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
