"""``nbprofiler.batch_size_curve`` and ``nbprofiler.tune_dataloader``: each measurement, kept for later profiles.

``measure/`` runs the user's code and returns what it measured; here that result is also kept in
the history (``history.measurements``), tied to what it measured: the profiled cell it follows
(the latest report's, as the card that asked for it names), the modules it trained, the loader it
tuned, the device and torch. A later profile of that cell or set-up quotes it (``profile._report``
finds them). A ``tune_dataloader`` of the loader
alone (no ``step=``) measured no loop, whose speed-up the advice states: it is not kept.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
import torch
from torch import nn

from ..capture.session import live_device
from ..history.measurements import SetUp, keep_measurement, measured_now
from ..measure import batch_size_curve as measure_batch_size_curve
from ..measure import tune_dataloader as measure_tune_dataloader
from ..records import LoaderRecord, StoredMeasurement, source_fingerprint
from . import profile
from .profile import fingerprints


@functools.wraps(measure_batch_size_curve)
def batch_size_curve(step_fn: Callable[[int], Any], batch_sizes: Any, *args: Any, **kwargs: Any) -> pd.DataFrame:
    result = measure_batch_size_curve(step_fn, batch_sizes, *args, **kwargs)
    models = _modules(step_fn, kwargs.get("restore", ()))
    keep_measurement(_curve(result), _set_up(models, None))
    return result


@functools.wraps(measure_tune_dataloader)
def tune_dataloader(loader: Any, *args: Any, **kwargs: Any) -> pd.DataFrame:
    result = measure_tune_dataloader(loader, *args, **kwargs)
    if result.attrs.get("loop"):
        models = _modules(kwargs.get("step"), kwargs.get("restore", ()))
        keep_measurement(_tuned(result), _set_up(models, LoaderRecord.of(loader).setup_name))
    return result


def _set_up(models: list[nn.Module], loader: str | None) -> SetUp:
    """What a measurement measured: the profiled cell the latest report is of, and this process's device
    (the modules' own, CUDA where their parameters are)."""
    last = profile.last_report()
    cell = last.cell_key if last is not None else None
    source = last.cell_source if last is not None else None
    cuda = any(p.is_cuda for m in models for p in m.parameters())
    return SetUp(cell=cell, cell_source=source_fingerprint(source) if source else None,
                 device=live_device(cuda).name, torch=torch.__version__, models=fingerprints(models), loader=loader)


def _modules(fn: Any, restore: Iterable[Any]) -> list[nn.Module]:
    """The modules a measurement trained: those it restores, and those ``fn`` names (its closure, and the
    globals its code reads), outermost only (a module inside another is the other's)."""
    found = [m for m in restore if isinstance(m, nn.Module)]
    code = getattr(fn, "__code__", None)
    if code is not None:
        cells = [c.cell_contents for c in getattr(fn, "__closure__", None) or () if _filled(c)]
        named = [getattr(fn, "__globals__", {}).get(name) for name in code.co_names]
        found += [m for m in cells + named if isinstance(m, nn.Module)]
    inner = {id(sub) for m in found for sub in m.modules() if sub is not m}
    return [m for m in found if id(m) not in inner]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty closure cell raises here
    except ValueError:
        return False
    return True


def _curve(result: pd.DataFrame) -> StoredMeasurement:
    best = result.attrs.get("recommended")
    row = result[result["batch_size"] == best].iloc[0] if best is not None else None
    return _measurement("batch_size_curve", result, f"batch_size={result.attrs.get('reference')}",
                        None if best is None else f"batch_size={int(best)}", None if best is None else int(best),
                        None, row, "speedup")


def _tuned(result: pd.DataFrame) -> StoredMeasurement:
    """A loop measurement: its recommendation, unless it keeps the current setting (then no ``best``)."""
    settings = result.attrs.get("recommended") if result.attrs.get("code") is not None else None
    row = None
    if settings is not None:
        chosen = result[(result["num_workers"] == settings["num_workers"])
                        & (result["pin_memory"] == settings["pin_memory"])]
        row = chosen.iloc[0] if len(chosen) else None
    best = None if settings is None else ", ".join(f"{k}={v}" for k, v in settings.items())
    return _measurement("tune_dataloader", result, str(result.attrs.get("reference")), best,
                        None if settings is None else int(settings["num_workers"]),
                        None if settings is None else bool(settings["pin_memory"]), row, "loop_speedup")


def _measurement(kind: str, result: pd.DataFrame, reference: str, best: str | None, value: int | None,
                 pin_memory: bool | None, row: pd.Series | None, column: str) -> StoredMeasurement:
    rounds = result["rounds"].dropna()
    return StoredMeasurement(
        kind=kind, measured_at=measured_now(), rounds=int(rounds.iloc[0]) if len(rounds) else 0,
        reference=reference, best=best, best_value=value, pin_memory=pin_memory,
        speedup=_number(row, column), speedup_low=_number(row, f"{column}_low"),
        speedup_high=_number(row, f"{column}_high"))


def _number(row: pd.Series | None, column: str) -> float | None:
    value = None if row is None else row.get(column)
    return None if value is None or not math.isfinite(float(value)) else float(value)
