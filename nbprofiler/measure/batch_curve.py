"""``batch_size_curve``: run a step at several batch sizes; measure samples/s, its spread, and memory.

The batch-size suggestions estimate from one batch size; this measures many.
Each size first runs untimed (warm-up: allocator growth, lazy initialisation),
then the sizes run in interleaved rounds (``rounds.py``), each round every
size, in an order rotated each round, so machine noise hits all sizes alike.
Per size it gives the median samples/s over the rounds with its quartiles, and
the gain over a reference size (the current one, else the smallest) as the
median per-round ratio with its quartiles. A size is recommended only when that
gain exceeds its spread.

It stops at the first batch size that runs out of memory (the larger ones
would too), frees what that attempt held, and goes on with the smaller ones.
"""
from __future__ import annotations

import gc
import math
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pandas as pd
import psutil
import torch

from ..advice import thresholds as T
from .feedback import Progress, in_kernel, show_figure
from .rounds import quartiles, ratio_spread, reliably_faster, rotated
from .state import Restorable, states_restored

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CURVE_COLUMNS = ["batch_size", "samples_per_s", "samples_per_s_low", "samples_per_s_high", "speedup", "speedup_low",
                 "speedup_high", "step_ms", "steps", "rounds", "peak_memory_bytes", "memory_kind", "status"]
MEMORY_KINDS = {True: "cuda peak allocated", False: "process RSS"}
# CPU allocation failures are RuntimeErrors, not torch.OutOfMemoryError; their messages say so.
_CPU_OOM_MESSAGES = ("can't allocate memory", "not enough memory", "out of memory")
_OOM = "out of memory"
_SKIPPED = "not run: a smaller batch ran out of memory"


def is_out_of_memory(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA and other devices), or a CPU allocator failure."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in _CPU_OOM_MESSAGES)


def batch_size_curve(step_fn: Callable[[int], Any], batch_sizes: Sequence[int], *, current: int | None = None,
                     rounds: int = T.MEASURED_ROUNDS, warmup: int = 1, min_seconds: float = 0.2,
                     device: str | torch.device | None = None,
                     restore: Sequence[Restorable] = (), plot: bool = True,
                     progress: bool = True) -> pd.DataFrame:
    """Samples/s (median and quartiles over interleaved rounds) and peak memory of ``step_fn(batch_size)``.

    ``step_fn`` runs one training (or inference) step at the batch size it is
    given, building its own input of that size. Each size first runs ``warmup``
    untimed steps, in increasing order (which also finds the first size that
    runs out of memory); then ``rounds`` rounds follow, each running every size
    in an order rotated each round, for as many steps as fill about
    ``min_seconds / rounds`` (at least one; estimated from the warm-up).

    Columns: ``samples_per_s`` is the median over the rounds, ``_low``/``_high``
    its quartiles; ``speedup`` is the median of the per-round ratio of samples/s
    to the ``current`` batch size's in the same round (default: the smallest
    size), ``speedup_low``/``_high`` the quartiles of those ratios.
    ``peak_memory_bytes`` is, on CUDA (``device="cuda"``, or by default when this
    process already uses CUDA), ``torch.cuda.max_memory_allocated`` after a reset
    per run, with time taken after a synchronize; on CPU it is the process's RSS
    after each step, a rough peak (freed memory may stay mapped).
    ``memory_kind`` says which. ``attrs["rounds"]`` holds every run in the order run, and
    ``attrs["reference"]`` the batch size the gains are against.

    The first size that runs out of memory is recorded (``status`` "out of
    memory"), larger ones are skipped, and the error does not propagate. Any
    other error does, after ``restore`` is applied: modules and optimizers whose
    state is copied first and loaded back at the end.

    ``attrs["recommended"]`` is the smallest size within ``MEASURED_TIE_SHARE`` of
    the best among those whose gain over ``current`` exceeds its spread; None,
    and the summary says so, when no size is reliably faster.
    """
    sizes = sorted({int(b) for b in [*batch_sizes, *([current] if current is not None else [])]})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"batch_sizes must be positive integers, got {list(batch_sizes)!r}")
    if warmup < 1 or rounds < 2:
        raise ValueError(f"need warmup >= 1 and rounds >= 2 (a spread), got warmup={warmup}, rounds={rounds}")
    reference = sizes[0] if current is None else int(current)
    cuda = _uses_cuda(device)
    bar = Progress(rounds + 1, "batch size", enabled=progress)
    try:
        with states_restored(restore):
            status, steps, memory = _warm_up(step_fn, sizes, warmup, min_seconds / rounds, cuda, bar)
            runs = _rounds(step_fn, steps, rounds, cuda, status, memory, bar)
    finally:
        bar.close()
    result = _table(runs, sizes, status, memory, cuda, reference)
    result.attrs.update(_recommend(result, reference))
    result.attrs["rounds"] = runs
    result.attrs["reference"] = reference
    if plot and in_kernel():
        show_figure(plot_batch_curve(result), "samples/s (median, quartiles) and memory by batch size")
    print(result.attrs["summary"])
    return result


def _uses_cuda(device: str | torch.device | None) -> bool:
    if device is None:
        return torch.cuda.is_available() and torch.cuda.is_initialized()
    return torch.device(device).type == "cuda"


def _warm_up(step_fn: Callable[[int], Any], sizes: list[int], warmup: int, seconds: float, cuda: bool,
             bar: Progress) -> tuple[dict[int, str], dict[int, int], dict[int, float]]:
    """Each size once, smallest first, untimed for the result: status, steps per round, memory."""
    status = {size: _SKIPPED for size in sizes}
    steps: dict[int, int] = {}
    memory: dict[int, float] = {}
    for size in sizes:
        bar.update(0, f"warm-up: batch_size={size}")
        _release(cuda)  # what the previous size left is not counted against this one (once: gc takes long)
        attempt = _attempt(step_fn, size, warmup, cuda)
        if attempt is None:
            status[size] = _OOM
            break
        elapsed, memory[size] = attempt
        status[size] = "ok"
        steps[size] = max(1, math.ceil(seconds / (elapsed / warmup))) if elapsed > 0 else 1
    return status, steps, memory


def _rounds(step_fn: Callable[[int], Any], steps: dict[int, int], rounds: int, cuda: bool, status: dict[int, str],
            memory: dict[int, float], bar: Progress) -> pd.DataFrame:
    """Every size once per round, the order rotated; a size that runs out of memory leaves with the larger ones."""
    rows = []
    sizes = sorted(steps)
    for r in range(rounds):
        for position, size in enumerate(rotated(sizes, r)):
            if status[size] != "ok":
                continue
            bar.update(r + 1, f"round {r + 1}/{rounds}: batch_size={size}")
            attempt = _attempt(step_fn, size, steps[size], cuda)
            if attempt is None:
                for larger in sizes:
                    if larger >= size:
                        status[larger] = _OOM if larger == size else _SKIPPED
                continue
            elapsed, peak = attempt
            memory[size] = max(memory[size], peak)
            rate = size * steps[size] / elapsed if elapsed > 0 else math.nan
            rows.append({"round": r, "position": position, "batch_size": size, "steps": steps[size],
                         "seconds": elapsed, "samples_per_s": rate})
    bar.update(rounds + 1, "done")
    return pd.DataFrame(rows, columns=["round", "position", "batch_size", "steps", "seconds", "samples_per_s"])


def _attempt(step_fn: Callable[[int], Any], size: int, steps: int, cuda: bool) -> tuple[float, float] | None:
    """``steps`` steps at ``size``: (seconds, peak memory), or None when it ran out of memory (then freed)."""
    process = psutil.Process()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    peak_rss = process.memory_info().rss
    out_of_memory = False
    try:
        start = time.perf_counter()
        for _ in range(steps):
            step_fn(size)
            if not cuda:
                peak_rss = max(peak_rss, process.memory_info().rss)
        if cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    except (torch.OutOfMemoryError, RuntimeError) as exc:
        if not is_out_of_memory(exc):
            raise
        out_of_memory = True
    if out_of_memory:
        # Only once the except block is left are the failed step's frames, and tensors, free.
        _release(cuda)
        return None
    return elapsed, float(torch.cuda.max_memory_allocated()) if cuda else float(peak_rss)


def _release(cuda: bool) -> None:
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()


def _table(runs: pd.DataFrame, sizes: list[int], status: dict[int, str], memory: dict[int, float], cuda: bool,
           reference: int) -> pd.DataFrame:
    """One row per size, from the rounds: quartiles of samples/s and of the per-round ratio to ``reference``."""
    rates = runs.pivot(index="round", columns="batch_size", values="samples_per_s")
    ok = [s for s in sizes if status[s] == "ok" and s in rates.columns]
    rate_q = quartiles(rates[ok])
    gain = ratio_spread(rates[ok], reference) if reference in ok else None
    step_ms = (runs["seconds"] / runs["steps"] * 1e3).groupby(runs["batch_size"]).median()
    rows = []
    for size in sizes:
        row: dict[str, Any] = {"batch_size": size, "memory_kind": MEMORY_KINDS[cuda], "status": status[size]}
        if size in ok:
            row.update(samples_per_s=rate_q.at[size, "median"], samples_per_s_low=rate_q.at[size, "low"],
                       samples_per_s_high=rate_q.at[size, "high"], step_ms=step_ms[size], rounds=len(rates),
                       steps=int(runs.loc[runs["batch_size"] == size, "steps"].iloc[0]), peak_memory_bytes=memory[size])
            if gain is not None:
                row.update(speedup=gain.at[size, "median"], speedup_low=gain.at[size, "low"],
                           speedup_high=gain.at[size, "high"])
        rows.append(row)
    result = pd.DataFrame(rows).reindex(columns=CURVE_COLUMNS)
    numeric = [c for c in CURVE_COLUMNS if c not in ("batch_size", "memory_kind", "status")]
    result[numeric] = result[numeric].apply(pd.to_numeric, errors="coerce")
    return result


def _recommend(result: pd.DataFrame, reference: int) -> dict[str, Any]:
    ok = result[(result["status"] == "ok") & result["speedup"].notna()]
    oom = result[result["status"] == _OOM]
    limit = f" Batch size {int(oom['batch_size'].iloc[0])} ran out of memory." if len(oom) else ""
    if ok.empty:
        return {"recommended": None, "summary": "No batch size could be measured." + limit}
    how = f"{int(ok['rounds'].iloc[0])} interleaved rounds, each size once a round."
    faster = ok[(ok["batch_size"] != reference) & reliably_faster(ok["speedup"], ok["speedup_low"], ok["speedup_high"])]
    if faster.empty:
        return {"recommended": None, "summary": f"No batch size is reliably faster than batch_size={reference}: every "
                                               f"gain is within the spread of its rounds ({how}){limit}"}
    best = float(faster["speedup"].max())
    pick = faster[faster["speedup"] >= T.MEASURED_TIE_SHARE * best].sort_values("batch_size").iloc[0]
    size = int(pick["batch_size"])
    summary = (f"Recommended batch_size={size}: {pick['speedup']:.2f}× the samples/s of batch_size={reference} "
               f"(middle half of the rounds: {pick['speedup_low']:.2f}–{pick['speedup_high']:.2f}×), "
               f"{pick['samples_per_s']:.0f} samples/s; {how}{limit}")
    return {"recommended": size, "summary": summary}


def plot_batch_curve(result: pd.DataFrame) -> "Figure":
    """Samples/s with its quartiles as error bars (left axis) and memory (right axis) by batch size, log2 scale."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    ok = result[result["status"] == "ok"]
    errors = [ok["samples_per_s"] - ok["samples_per_s_low"], ok["samples_per_s_high"] - ok["samples_per_s"]]
    ax.errorbar(ok["batch_size"], ok["samples_per_s"], yerr=errors, marker="o", capsize=4, color="tab:blue",
                label="samples/s (median, quartiles)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size (samples per step)")
    ax.set_ylabel("throughput (samples/s)", color="tab:blue")
    ax.set_ylim(bottom=0)
    mem = ax.twinx()
    kind = ok["memory_kind"].iloc[0] if len(ok) else MEMORY_KINDS[False]
    mem.plot(ok["batch_size"], ok["peak_memory_bytes"] / 2**20, marker="s", linestyle="--", color="tab:orange",
             label=f"memory ({kind})")
    mem.set_ylabel(f"memory (MiB, {kind})", color="tab:orange")
    pick = result.attrs.get("recommended")
    if pick is not None:
        ax.axvline(pick, color="gray", linestyle=":", label=f"recommended: {pick}")
    for size in result.loc[result["status"] == _OOM, "batch_size"]:
        ax.axvline(size, color="tab:red", linestyle="-", alpha=0.6, label=f"out of memory: {size}")
    ax.set_title("Throughput and memory by batch size")
    ax.grid(alpha=0.3)
    handles = ax.get_legend_handles_labels()[0] + mem.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize="small", loc="lower right")
    fig.tight_layout()
    return fig
