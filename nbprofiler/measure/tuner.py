"""``tune_dataloader``: measure a DataLoader's settings, in the training loop when given the step.

A suggestion estimates; this measures. For each candidate setting it builds a
fresh loader over the same dataset, sampler and collate function. With
``step=`` it runs the user's ``step(batch)`` on every batch, so what loading in
parallel with compute buys is measured, not assumed; without it, it measures
how fast the loader alone delivers batches, and says so.

Candidates run in interleaved rounds (``rounds.py``): each candidate runs the
same number of steps once per round, in an order rotated each round, and its
speed-up is the median of its per-round ratios to the current setting, with
the quartiles as spread. A setting is recommended only when its gain exceeds
that spread.

It leaves the process as it found it: the user's loader is never modified,
every worker process it starts is shut down, and the random number
generators that iterating advances (torch's, Python's, NumPy's and the
loader's own generators) are put back, also when it raises or is interrupted.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import pandas as pd
import torch
from torch.utils.data import DataLoader

from ..advice import thresholds as T
from ..advice.loader_code import LoaderArgs, args_from_record, dataloader_call, measured_changes
from ..capture.loader_copy import copied_loader, rng_kept
from ..capture.loaders import named
from ..machine import usable_cpus
from ..records import LoaderRecord
from .feedback import Progress, in_kernel, show_figure
from .rounds import quartiles, ratio_spread, reliably_faster, rotated
from .state import Restorable, states_restored

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CANDIDATE_KEYS = ("num_workers", "pin_memory", "prefetch_factor")
# Timed steps per candidate and round: at least this many, so one slow batch does not decide a round.
MIN_STEPS_PER_ROUND = 2
# Steps each candidate runs in the warm-up round to estimate its step time (after its start-up).
CALIBRATION_STEPS = 2
_END = object()  # what next() returns at the end of an epoch (a batch may be None)


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
        prefetch = f", prefetch_factor={self.prefetch_factor}" if self.prefetch_factor not in (None, 2) else ""
        return f"num_workers={self.num_workers}" + (", pin_memory" if self.pin_memory else "") + prefetch

    @property
    def warmup_batches(self) -> int:
        """Batches before the steady state: the first (worker start-up) and those the workers
        prefetched while starting, which come out at once and would inflate the rate."""
        return max(1, self.num_workers * (self.prefetch_factor or 0))


@dataclass(frozen=True)
class Measured:
    """What the columns of the result are about: the loop (with ``step=``) or the loader alone."""

    loop: bool

    @property
    def what(self) -> str:
        return "loop" if self.loop else "loader"

    @property
    def rate(self) -> str:
        return "loop_steps_per_s" if self.loop else "loader_batches_per_s"

    @property
    def speedup(self) -> str:
        return f"{self.what}_speedup"

    def columns(self) -> list[str]:
        s = self.speedup
        wait = ["wait_share"] if self.loop else []
        return ["num_workers", "pin_memory", "prefetch_factor", s, f"{s}_low", f"{s}_high", self.rate,
                "samples_per_s", *wait, "startup_s", "steps", "rounds", "status"]


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
                    max_seconds: float = 30.0, *, step: Callable[[Any], Any] | None = None,
                    rounds: int = T.MEASURED_ROUNDS, restore: Sequence[Restorable] = (), plot: bool = True,
                    progress: bool = True, namespace: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Measure ``loader`` under each candidate setting, in the loop when ``step`` is given.

    ``step(batch)`` is the body of the user's training loop (forward, backward,
    optimizer step); it runs on every batch. Without it only the loader is
    timed: a measure of how fast batches arrive, not of the loop, which also
    needs the CPU (on a machine with few cores, workers then compete with the
    step) and hides loading behind compute. The result's columns, its
    ``attrs["measured"]`` and its summary say which was measured.

    ``candidates`` is a list of dicts with any of ``num_workers``, ``pin_memory``
    and ``prefetch_factor`` (default: ``default_candidates``); the current
    setting is always one of them. Each candidate first runs once to warm up
    and to estimate its step time; then ``rounds`` rounds follow, each running
    every candidate for the same number of steps, sized so that all of it takes
    about ``max_seconds`` (at least ``MIN_STEPS_PER_ROUND`` steps a round).

    Each run builds a fresh loader; worker start-up (and the batches prefetched
    during it) is excluded from the timed steps and reported as ``startup_s``
    (median over the rounds): with ``persistent_workers=True`` a loop pays it
    once, which is why the recommended code keeps or sets it.

    Columns (with ``step``; without it ``loader_*`` and ``loader_batches_per_s``):
    ``loop_speedup`` is the median over the rounds of the candidate's rate over
    the current setting's in the same round, ``loop_speedup_low``/``_high`` the
    quartiles of those ratios; ``loop_steps_per_s`` the median rate;
    ``wait_share`` the share of the loop spent waiting for the next batch.
    ``attrs["rounds"]`` holds every run (round, position, rate), in the order run.

    A candidate is recommended only when its gain exceeds its spread; then the
    fewest workers within ``MEASURED_TIE_SHARE`` of the best. ``attrs`` has
    ``"recommended"``, and ``"code"``: the user's loader call with every argument
    they passed, the changes marked (None when the current setting stays).

    ``restore`` takes the modules and optimizers ``step`` trains: their state is
    copied first and loaded back at the end, so measuring does not train them.
    An error in the dataset or the step, or KeyboardInterrupt, stops the
    measuring and is raised after the worker processes are shut down and the
    RNG states (and ``restore``) put back.
    """
    if not isinstance(loader, DataLoader):
        raise TypeError(f"tune_dataloader needs a torch.utils.data.DataLoader, got {type(loader).__name__}")
    if not max_seconds > 0:
        raise ValueError(f"max_seconds must be > 0, got {max_seconds!r}")
    if rounds < 2:
        raise ValueError(f"rounds must be >= 2 to have a spread, got {rounds}")
    current = Candidate.of({}, loader)
    specs = candidates if candidates is not None else default_candidates(loader)
    chosen = sorted({current, *(Candidate.of(c, loader) for c in specs)},
                    key=lambda c: (c.num_workers, c.pin_memory, c.prefetch_factor or 0))
    measured = Measured(loop=step is not None)
    bar = Progress(rounds + 1, "DataLoader", enabled=progress)
    try:
        with rng_kept(loader), states_restored(restore):
            runs = _measure_rounds(loader, chosen, step, max_seconds, rounds, bar)
    finally:
        bar.close()
    result = _table(runs, chosen, current, measured, loader)
    result.attrs.update(_recommend(result, loader, current, measured, namespace))
    result.attrs["measured"] = "the training loop (step= ran on every batch)" if measured.loop else \
        "the loader alone (no step=): not the loop"
    result.attrs["rounds"] = runs
    result.attrs["loop"] = measured.loop
    result.attrs["reference"] = current.label()
    if plot and in_kernel():
        show_figure(plot_throughput(result), f"{measured.what} speed-up by num_workers, with its spread")
    print(result.attrs["summary"])
    return result


def _measure_rounds(loader: DataLoader, chosen: list[Candidate], step: Callable[[Any], Any] | None,
                    max_seconds: float, rounds: int, bar: Progress) -> pd.DataFrame:
    """A warm-up run per candidate, then ``rounds`` interleaved rounds of the same number of steps."""
    deadline = time.perf_counter() + max_seconds
    bar.update(0, "warm-up")
    warm = {c: _run(loader, c, step, CALIBRATION_STEPS) for c in chosen}
    live = [c for c in chosen if warm[c]["steps"] > 0]
    per_round = sum(w["startup_s"] + w["warmup_s"] for c, w in warm.items() if c in live)
    per_step = sum(w["seconds"] / w["steps"] for c, w in warm.items() if c in live)
    left = max(deadline - time.perf_counter(), 0.0) / rounds - per_round
    steps = max(MIN_STEPS_PER_ROUND, math.floor(left / per_step) if per_step > 0 else MIN_STEPS_PER_ROUND)
    steps = min(steps, _epoch_steps(loader, live))
    rows = []
    for r in range(rounds):
        for position, cand in enumerate(rotated(live, r)):
            bar.update(r + 1, f"round {r + 1}/{rounds}: {cand.label()} ({steps} steps)")
            rows.append({"round": r, "position": position, **_keys(cand), **_run(loader, cand, step, steps)})
    bar.update(rounds + 1, "done")
    for cand in chosen:
        if cand not in live:
            rows.append({"round": -1, "position": -1, **_keys(cand), **warm[cand]})
    runs = pd.DataFrame(rows)
    runs["rate"] = runs["steps"] / runs["seconds"].where(runs["seconds"] > 0)
    return runs


def _keys(cand: Candidate) -> dict[str, Any]:
    return {"candidate": cand.label(), "num_workers": cand.num_workers, "pin_memory": cand.pin_memory,
            "prefetch_factor": cand.prefetch_factor}


def _epoch_steps(loader: DataLoader, live: list[Candidate]) -> int:
    """Timed steps one epoch leaves after the slowest-starting candidate's warm-up batches."""
    try:
        batches = len(loader)
    except TypeError:  # an IterableDataset without __len__
        return sys.maxsize
    longest = max((c.warmup_batches for c in live), default=1)
    return max(1, batches - longest)


def _run(loader: DataLoader, cand: Candidate, step: Callable[[Any], Any] | None, steps: int) -> dict[str, Any]:
    """One run of one candidate: start-up and warm-up batches (untimed), then up to ``steps`` timed steps."""
    trial = copied_loader(loader, cand.num_workers, cand.pin_memory, cand.prefetch_factor)
    start = time.perf_counter()
    iterator = iter(trial)
    out: dict[str, Any] = {"steps": 0, "seconds": 0.0, "wait_s": 0.0, "startup_s": float("nan"), "warmup_s": 0.0}
    try:
        for i in range(cand.warmup_batches):
            batch = next(iterator, _END)
            if batch is _END:
                return out
            if i == 0:
                out["startup_s"] = time.perf_counter() - start
            if step is not None:
                step(batch)
        t0 = time.perf_counter()
        out["warmup_s"] = t0 - start - out["startup_s"]
        for _ in range(steps):
            before = time.perf_counter()
            batch = next(iterator, _END)
            out["wait_s"] += time.perf_counter() - before
            if batch is _END:
                break
            if step is not None:
                step(batch)
            out["steps"] += 1
        out["seconds"] = time.perf_counter() - t0
        return out
    finally:
        _shutdown(iterator)


def _shutdown(iterator: Any) -> None:
    """Stop an iterator's worker processes (and pin-memory thread) now, not at garbage collection."""
    stop = getattr(iterator, "_shutdown_workers", None)
    if stop is not None:
        stop()


def _table(runs: pd.DataFrame, chosen: list[Candidate], current: Candidate, measured: Measured,
           loader: DataLoader) -> pd.DataFrame:
    """One row per candidate: the quartiles of its per-round ratios to the current setting, its median rate."""
    timed = runs[runs["round"] >= 0]
    rates = timed.pivot(index="round", columns="candidate", values="rate")
    spread = ratio_spread(rates, current.label()) if current.label() in rates.columns else None
    by = timed.groupby("candidate")
    rows = []
    for cand in chosen:
        key = cand.label()
        row: dict[str, Any] = {"num_workers": cand.num_workers, "pin_memory": cand.pin_memory,
                               "prefetch_factor": cand.prefetch_factor, "status": "empty: the loader yielded no batch"}
        if spread is not None and key in rates.columns:
            sp = measured.speedup
            row.update({sp: spread.at[key, "median"], f"{sp}_low": spread.at[key, "low"],
                        f"{sp}_high": spread.at[key, "high"], measured.rate: quartiles(rates[[key]]).at[key, "median"],
                        "startup_s": by.get_group(key)["startup_s"].median(), "steps": int(timed["steps"].max()),
                        "rounds": len(rates), "status": "ok",
                        "wait_share": by.get_group(key)["wait_s"].sum() / by.get_group(key)["seconds"].sum()})
            row["samples_per_s"] = row[measured.rate] * (loader.batch_size or 1)
        rows.append(row)
    result = pd.DataFrame(rows).reindex(columns=measured.columns())
    numeric = [c for c in measured.columns() if c not in ("num_workers", "pin_memory", "prefetch_factor", "status")]
    result[numeric] = result[numeric].apply(pd.to_numeric, errors="coerce")
    return result


def _recommend(result: pd.DataFrame, loader: DataLoader, current: Candidate, measured: Measured,
               namespace: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fewest workers among the reliably faster settings within MEASURED_TIE_SHARE of the best."""
    sp = measured.speedup
    ok = result[result["status"] == "ok"]
    what = ("Measured the training loop (step= ran on every batch)" if measured.loop else
            "Measured the loader alone (no step=), not the training loop: pass step= to measure the loop")
    if ok.empty:
        return {"recommended": None, "code": None,
                "summary": f"{what}. No setting could be measured: check that the loader yields batches."}
    how = f"{what}; {int(ok['rounds'].iloc[0])} interleaved rounds of {int(ok['steps'].iloc[0])} steps each."
    faster = ok[reliably_faster(ok[sp], ok[f"{sp}_low"], ok[f"{sp}_high"])]
    if faster.empty:
        kept = {"num_workers": current.num_workers, "pin_memory": current.pin_memory}
        return {"recommended": kept, "code": None,
                "summary": f"{how}\nNo setting is reliably faster than your current one ({current.label()}): "
                           "every gain is within the spread of its rounds. Keep it."}
    best = float(faster[sp].max())
    pick = faster[faster[sp] >= T.MEASURED_TIE_SHARE * best].sort_values(["num_workers", "pin_memory"]).iloc[0]
    recommended = {"num_workers": int(pick["num_workers"]), "pin_memory": bool(pick["pin_memory"])}
    if pick["num_workers"] > 0 and pd.notna(pick["prefetch_factor"]) and int(pick["prefetch_factor"]) != 2:
        recommended["prefetch_factor"] = int(pick["prefetch_factor"])
    changes = measured_changes(recommended, {k: getattr(current, k) for k in recommended}, loader.persistent_workers)
    ns = namespace if namespace is not None else _notebook_namespace()
    code = dataloader_call(args_from_loader(loader, ns), changes)
    label = ", ".join(f"{k}={v}" for k, v in recommended.items())
    summary = (f"{how}\n{label}: {pick[sp]:.2f}× your current setting's {measured.what} speed (middle half of the "
               f"rounds: {pick[f'{sp}_low']:.2f}–{pick[f'{sp}_high']:.2f}×), worker start-up excluded. Paste:\n{code}")
    return {"recommended": recommended, "code": code, "summary": summary}

def args_from_loader(loader: Any, namespace: Mapping[str, Any] | None = None) -> LoaderArgs:
    """A live DataLoader's arguments, as a profiled run records them (``args_from_record``);
    names come from ``namespace`` (the notebook's) when given."""
    return args_from_record(named(LoaderRecord.of(loader), loader, namespace))


def _notebook_namespace() -> Mapping[str, Any] | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell.user_ns if shell is not None else None


def plot_throughput(result: pd.DataFrame) -> "Figure":
    """Speed-up over the current setting against num_workers, the quartiles as error bars, the pick marked."""
    from matplotlib.figure import Figure

    sp = next(c for c in ("loop_speedup", "loader_speedup") if c in result.columns)
    what = "training loop" if sp == "loop_speedup" else "loader alone"
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    ok = result[(result["status"] == "ok") & result[sp].notna()]
    for pinned, rows in ok.groupby("pin_memory", sort=True):
        rows = rows.sort_values("num_workers")
        errors = [rows[sp] - rows[f"{sp}_low"], rows[f"{sp}_high"] - rows[sp]]
        ax.errorbar(rows["num_workers"], rows[sp], yerr=errors, marker="o", capsize=4,
                    label="pin_memory=True" if pinned else "pin_memory=False")
    ax.axhline(1.0, color="gray", linestyle=":", label="current setting")
    pick = result.attrs.get("recommended")
    if pick and result.attrs.get("code"):
        row = ok[(ok["num_workers"] == pick["num_workers"]) & (ok["pin_memory"] == pick["pin_memory"])]
        ax.scatter(row["num_workers"], row[sp], s=160, facecolors="none", edgecolors="black", zorder=3,
                   label="recommended")
    ax.set_xlabel("num_workers (worker processes)")
    ax.set_ylabel(f"{what} speed-up vs current")
    ax.set_title(f"DataLoader settings: {what} (median, middle half of the rounds)")
    ax.set_xticks(sorted(ok["num_workers"].unique()))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
