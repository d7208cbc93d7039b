"""``batch_size_curve``: run a step at several batch sizes; measure samples/s and memory.

The batch-size suggestions estimate from one batch size; this measures many.
It stops at the first batch size that runs out of memory (the larger ones
would too), frees what that attempt held, and recommends the smallest batch
that reaches ``MEASURED_TIE_SHARE`` of the best measured throughput: past that
point a larger batch costs memory, and often accuracy, for little speed.
"""
from __future__ import annotations

import copy
import gc
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pandas as pd
import psutil
import torch

from ..advice import thresholds as T
from .feedback import Progress, in_kernel, show_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CURVE_COLUMNS = ["batch_size", "samples_per_s", "step_ms", "steps", "peak_memory_bytes", "memory",
                 "efficiency", "status"]
# CPU allocation failures are RuntimeErrors, not torch.OutOfMemoryError; their messages say so.
_CPU_OOM_MESSAGES = ("can't allocate memory", "not enough memory", "out of memory")


def is_out_of_memory(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA and other devices), or a CPU allocator failure."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in _CPU_OOM_MESSAGES)


def batch_size_curve(step_fn: Callable[[int], Any], batch_sizes: Sequence[int], *, warmup: int = 1,
                     repeats: int = 3, min_seconds: float = 0.2, device: str | torch.device | None = None,
                     restore: Sequence[torch.nn.Module | torch.optim.Optimizer] = (), plot: bool = True,
                     progress: bool = True) -> pd.DataFrame:
    """Samples/s and peak memory of ``step_fn(batch_size)`` at each batch size.

    ``step_fn`` runs one training (or inference) step at the batch size it is
    given, building its own input of that size. Each size runs ``warmup``
    untimed steps, then at least ``repeats`` timed steps and at least
    ``min_seconds`` of them. On CUDA (``device="cuda"``, or by default when
    this process already uses CUDA) time is taken after a synchronize and
    memory is ``torch.cuda.max_memory_allocated``; on CPU memory is the
    process's RSS after each step, a rough peak (freed memory may stay mapped).

    Sizes run in increasing order; the first one that runs out of memory is
    recorded (``status`` "out of memory"), the rest are skipped, and the error
    does not propagate. Any other error does, after ``restore`` is applied.
    ``restore`` takes modules and optimizers whose state is copied first and
    loaded back at the end, so training steps leave no trace on the model.

    The recommendation (``result.attrs["recommended"]``) is the smallest batch
    size whose samples/s is at least ``MEASURED_TIE_SHARE`` of the best.
    """
    sizes = sorted({int(b) for b in batch_sizes})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"batch_sizes must be positive integers, got {list(batch_sizes)!r}")
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    cuda = _uses_cuda(device)
    saved = [copy.deepcopy(obj.state_dict()) for obj in restore]
    rows: list[dict[str, Any]] = []
    bar = Progress(len(sizes), "batch size", enabled=progress)
    try:
        for i, size in enumerate(sizes):
            if any(r["status"] == "out of memory" for r in rows):
                rows.append(_row(size, None, None, 0, None, cuda, "not run: a smaller batch ran out of memory"))
                continue
            bar.update(i, f"batch_size={size}")
            rows.append(_measure(step_fn, size, warmup, repeats, min_seconds, cuda))
        bar.update(len(sizes), "done")
    finally:
        bar.close()
        for obj, state in zip(restore, saved):
            obj.load_state_dict(state)
    result = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    for col in ("samples_per_s", "step_ms", "peak_memory_bytes", "efficiency"):
        result[col] = pd.to_numeric(result[col], errors="coerce").astype("float64")
    ok = result["status"] == "ok"
    if ok.any():
        result.loc[ok, "efficiency"] = result.loc[ok, "samples_per_s"] / result.loc[ok, "samples_per_s"].max()
    result.attrs.update(_recommend(result))
    if plot and in_kernel():
        show_figure(plot_batch_curve(result), "samples/s and peak memory by batch size")
    print(result.attrs["summary"])
    return result


def _uses_cuda(device: str | torch.device | None) -> bool:
    if device is None:
        return torch.cuda.is_available() and torch.cuda.is_initialized()
    return torch.device(device).type == "cuda"


def _measure(step_fn: Callable[[int], Any], size: int, warmup: int, repeats: int, min_seconds: float,
             cuda: bool) -> dict[str, Any]:
    process = psutil.Process()
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    peak_rss = process.memory_info().rss
    out_of_memory = False
    try:
        for _ in range(warmup):
            step_fn(size)
            peak_rss = max(peak_rss, process.memory_info().rss)
        if cuda:
            torch.cuda.synchronize()
        steps, start = 0, time.perf_counter()
        while steps < repeats or time.perf_counter() - start < min_seconds:
            step_fn(size)
            steps += 1
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
        return _row(size, None, None, 0, None, cuda, "out of memory")
    peak = float(torch.cuda.max_memory_allocated()) if cuda else float(peak_rss)
    return _row(size, size * steps / elapsed, elapsed / steps * 1e3, steps, peak, cuda, "ok")


def _release(cuda: bool) -> None:
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()


def _row(size: int, rate: float | None, step_ms: float | None, steps: int, peak: float | None, cuda: bool,
         status: str) -> dict[str, Any]:
    return {"batch_size": size, "samples_per_s": rate, "step_ms": step_ms, "steps": steps, "peak_memory_bytes": peak,
            "memory": "cuda_max_allocated" if cuda else "rss", "efficiency": None, "status": status}


def _recommend(result: pd.DataFrame) -> dict[str, Any]:
    ok = result[result["status"] == "ok"]
    oom = result[result["status"] == "out of memory"]
    limit = f" Batch size {int(oom['batch_size'].iloc[0])} ran out of memory." if len(oom) else ""
    if ok.empty:
        return {"recommended": None, "summary": "No batch size could be measured." + limit}
    best = ok.loc[ok["samples_per_s"].idxmax()]
    enough = ok[ok["samples_per_s"] >= T.MEASURED_TIE_SHARE * float(best["samples_per_s"])]
    pick = enough.sort_values("batch_size").iloc[0]
    size = int(pick["batch_size"])
    summary = (f"Recommended batch_size={size}: {pick['samples_per_s']:.0f} samples/s, "
               f"{pick['efficiency']:.0%} of the best measured ({best['samples_per_s']:.0f} samples/s at "
               f"batch_size={int(best['batch_size'])}).{limit}")
    return {"recommended": size, "summary": summary}


def plot_batch_curve(result: pd.DataFrame) -> "Figure":
    """Samples/s (left axis) and peak memory (right axis) against batch size, log2 scale."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    ok = result[result["status"] == "ok"]
    ax.plot(ok["batch_size"], ok["samples_per_s"], marker="o", color="tab:blue", label="samples/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size (samples per step)")
    ax.set_ylabel("throughput (samples/s)", color="tab:blue")
    ax.set_ylim(bottom=0)
    mem = ax.twinx()
    mem.plot(ok["batch_size"], ok["peak_memory_bytes"] / 2**20, marker="s", linestyle="--", color="tab:orange",
             label="peak memory")
    cuda = (ok["memory"] == "cuda_max_allocated").any()
    mem.set_ylabel("peak memory (MiB, CUDA max allocated)" if cuda else "memory (MiB, RSS)", color="tab:orange")
    pick = result.attrs.get("recommended")
    if pick is not None:
        ax.axvline(pick, color="gray", linestyle=":", label=f"recommended: {pick}")
    for size in result.loc[result["status"] == "out of memory", "batch_size"]:
        ax.axvline(size, color="tab:red", linestyle="-", alpha=0.6, label=f"out of memory: {size}")
    ax.set_title("Throughput and memory by batch size")
    ax.grid(alpha=0.3)
    handles = ax.get_legend_handles_labels()[0] + mem.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize="small", loc="lower right")
    fig.tight_layout()
    return fig
