"""Where the hot FLOP operators sit on the roofline: compute-bound or memory-bound.

An operator's arithmetic intensity is its FLOPs over the bytes it reads and writes
(``analysis.flops``: shapes and dtypes of its tensor inputs and of its output). A
device reaches its peak FLOP/s only above the ridge point, peak FLOP/s over memory
bandwidth (FLOPs per byte): an operator below the ridge is limited by memory
traffic, above it by arithmetic. The bytes count each tensor once (what the operator
must move at least), so the intensity is an upper bound: caches and re-reads only
lower it. The class is "unknown" where FLOPs or bytes are unknown, or the device's
peak or bandwidth is (a CPU, a device the spec table lacks).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .device_specs import DeviceSpec
from .flops import effective_dtype

ROOFLINE_COLUMNS = ["operator", "dtype", "calls", "flops", "bytes", "intensity", "ridge", "time_us",
                    "achieved_flops_per_s", "bound"]

# What follows from each class, one line each, for the view that shows the table.
WHAT_FOLLOWS = {
    "memory-bound": "Memory traffic limits it, not arithmetic: fuse it with the ops around it "
                    "(torch.compile) or keep tensors in lower precision to move fewer bytes.",
    "compute-bound": "Arithmetic limits it: in fp32, let it run on tensor cores (AMP with bf16/fp16, "
                     "or TF32 via torch.backends.cuda.matmul.allow_tf32 on Ampere and newer).",
    "unknown": "Its FLOPs, its bytes or the device's peak or bandwidth are not known, so it cannot be placed.",
}


def roofline(calls: pd.DataFrame, spec: DeviceSpec | None, compute_capability: tuple[int, int] | None = None,
             top: int = 20) -> pd.DataFrame:
    """The ``top`` FLOP operators by device time (host time where no device time was recorded),
    one row per operator name: ``ROOFLINE_COLUMNS``.

    ``calls`` is ``flops.flop_calls``' table. ``flops`` and ``bytes`` sum the calls whose
    counts are known; ``dtype`` is the one most of its FLOPs ran at (``effective_dtype``),
    whose peak sets ``ridge`` (FLOPs per byte); ``achieved_flops_per_s`` divides the
    FLOPs by ``time_us``, the calls' own time.
    """
    if calls.empty:
        return pd.DataFrame(columns=ROOFLINE_COLUMNS)
    time_col = "device_us" if calls["device_us"].sum() > 0 else "host_us"
    known = np.isfinite(calls["flops"].to_numpy()) & np.isfinite(calls["bytes"].to_numpy())
    frame = pd.DataFrame({
        "operator": calls["name"].to_numpy(dtype=object),
        "dtype": effective_dtype(calls, compute_capability),
        "flops": np.where(known, calls["flops"], 0.0),
        "bytes": np.where(known, calls["bytes"], 0.0),
        "known": known,
        "time_us": calls[time_col].to_numpy(dtype=np.float64),
    })
    by_dtype = frame.groupby(["operator", "dtype"], dropna=False)["flops"].sum().reset_index()
    main_dtype = by_dtype.sort_values("flops", ascending=False, kind="stable").drop_duplicates("operator")
    rows = frame.groupby("operator").agg(calls=("known", "size"), known=("known", "sum"), flops=("flops", "sum"),
                                         bytes=("bytes", "sum"), time_us=("time_us", "sum")).reset_index()
    rows = rows.merge(main_dtype[["operator", "dtype"]], on="operator", how="left")
    rows = rows.sort_values("time_us", ascending=False, kind="stable").head(top).reset_index(drop=True)
    has = rows["known"].to_numpy() > 0
    rows["flops"] = np.where(has, rows["flops"], np.nan)
    rows["bytes"] = np.where(has, rows["bytes"], np.nan)
    rows["intensity"] = rows["flops"] / rows["bytes"]
    rows["ridge"] = [ridge_point(spec, d) for d in rows["dtype"]]
    time_s = rows["time_us"].to_numpy() / 1e6
    rows["achieved_flops_per_s"] = np.where(time_s > 0, rows["flops"] / np.where(time_s > 0, time_s, 1.0), np.nan)
    intensity, ridge = rows["intensity"].to_numpy(dtype=np.float64), rows["ridge"].to_numpy(dtype=np.float64)
    rows["bound"] = np.where(np.isnan(intensity) | np.isnan(ridge), "unknown",
                             np.where(intensity >= ridge, "compute-bound", "memory-bound"))
    return rows[ROOFLINE_COLUMNS]


def ridge_point(spec: DeviceSpec | None, dtype: Any) -> float:
    """Peak FLOP/s over memory bytes/s for ``dtype`` on ``spec``, NaN where either is unknown."""
    peak = spec.peak_flops(dtype) if spec is not None and isinstance(dtype, str) else None
    return np.nan if peak is None else peak / (spec.memory_gb_per_s * 1e9)  # type: ignore[union-attr]


def kernel_roofline(table: pd.DataFrame, flop_calls: pd.Series) -> pd.DataFrame:
    """Per kernel name: ``name, achieved_flops_per_s, bound`` of the ``roofline`` row of the FLOP
    call that launched it (``flop_calls``: ``flops.kernel_flop_calls``, ``aten::conv2d`` for a
    cuDNN convolution kernel), ``bound`` "" where the roofline could not place it. A trace gives
    a kernel no FLOP count of its own, so it reads its launcher's rate; a kernel launched outside
    the roofline's FLOP operators gets none (NaN in both), never a guess."""
    roof = table.reindex(columns=["operator", "achieved_flops_per_s", "bound"]).set_index("operator")
    bound = roof["bound"].astype(object)
    roof = roof.assign(bound=bound.where(bound != "unknown", ""))
    return roof.reindex(flop_calls.to_numpy()).set_axis(flop_calls.index).reset_index()
