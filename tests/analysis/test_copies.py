"""Memory copies per direction and host memory kind, against the raw trace events and the trace's
own "memory bandwidth (GB/s)" argument."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import GPU_TRACE_FILES, shared_raw_events as raw_events, shared_report as report
from nbprofiler.advice.measures import h2d_copies
from nbprofiler.analysis.copies import COPY_COLUMNS, copy_table
from nbprofiler.analysis.device_specs import device_spec
from test_streams import live_cpu_report

_COPY_CATS = {"Memcpy", "gpu_memcpy"}
GPU_TRACES = [f.split(".")[0] for f in GPU_TRACE_FILES]


def _copies(name: str):
    r = report(name)
    return copy_table(r.table, device_spec(r.device.name))


def reference_copies(name: str) -> dict[tuple[str, str], list[float]]:
    """(direction, host memory) -> [copies, bytes, µs, µs implied by the bandwidth argument], read
    from each copy's name, e.g. "Memcpy DtoH (Device -> Pageable)": the host end's kind."""
    out: dict[tuple[str, str], list[float]] = {}
    for e in raw_events(name):
        if e.get("cat") not in _COPY_CATS:
            continue
        words = e["name"].split(" ", 2)
        direction = words[1]
        src, dst = words[2].strip("()").split(" -> ")
        host = src if direction[0] == "H" else dst if direction[-1] == "H" else ""
        key = (direction, host.lower() if host in ("Pageable", "Pinned") else "")
        row = out.setdefault(key, [0, math.nan, 0.0, 0.0])
        row[0] += 1
        row[2] += e["dur"]
        if "bytes" in e["args"]:
            row[1] = (0 if math.isnan(row[1]) else row[1]) + e["args"]["bytes"]
            bandwidth = e["args"].get("memory bandwidth (GB/s)")
            row[3] += e["args"]["bytes"] / bandwidth / 1e3 if bandwidth else math.nan
    return out


@pytest.mark.parametrize("name", GPU_TRACES)
def test_copy_table_matches_the_raw_copies(name):
    table = _copies(name)
    reference = reference_copies(name)
    assert list(table.columns) == COPY_COLUMNS
    assert set(zip(table["direction"], table["host_memory"])) == set(reference)
    for row in table.to_dict("records"):
        copies, nbytes, time_us, implied_us = reference[row["direction"], row["host_memory"]]
        assert row["copies"] == copies
        assert row["time_us"] == pytest.approx(time_us, rel=1e-12)
        if math.isnan(nbytes):  # ROCm copies record no size: no rate is made up
            assert math.isnan(row["bytes"]) and math.isnan(row["gb_per_s"])
            continue
        assert row["bytes"] == nbytes
        assert row["gb_per_s"] == pytest.approx(nbytes / time_us / 1e3, rel=1e-12)
        # The profiler's own per-copy rate measures time in ns; integer-µs traces round each
        # copy's duration, by under 1 µs: the rates agree once that is allowed for.
        assert abs(implied_us - row["time_us"]) <= copies * 1.0
        if not float(row["time_us"]).is_integer():  # ns-resolution trace: the same figure
            assert row["gb_per_s"] == pytest.approx(nbytes / implied_us / 1e3, rel=1e-9)


def test_copy_figures_a_user_would_check():
    # The 2021 V100 samples copy each of their 6 steps' batch from pageable memory: 32 images of
    # 3 x 224 x 224 float32 and 32 int64 labels, over the DGX Station's PCIe 3.0 x16 (16 GB/s a way).
    v100 = _copies("v100_resnet50_train_num_workers_0")
    evidence = h2d_copies(report("v100_resnet50_train_num_workers_0"))  # what pin_memory advice cites
    assert (evidence.count, evidence.pageable, evidence.bytes) == (12, 12, 6 * (32 * 3 * 224 * 224 * 4 + 32 * 8))
    (htod,) = v100.to_dict("records")
    assert evidence.pageable_us == htod["time_us"] and htod["link_gb_per_s"] == evidence.link_gb_per_s == 16.0
    assert evidence.pageable_gb_per_s == htod["gb_per_s"]
    assert htod["share_of_link"] == pytest.approx(htod["gb_per_s"] / 16.0) and 0 < htod["share_of_link"] < 1
    # a100_train's loader pins its batches: no pageable host-to-device copy, but pinned ones.
    a100 = _copies("a100_train").set_index(["direction", "host_memory"])
    pinned = h2d_copies(report("a100_train"))
    assert pinned.pageable == 0 and pinned.pageable_us == 0.0 and math.isnan(pinned.pageable_gb_per_s)
    assert a100.loc[("HtoD", "pinned"), "copies"] > 0 and a100.loc[("HtoD", "pinned"), "link_gb_per_s"] == 32.0
    # A copy within the device does not cross the host link: no link figure for it.
    assert np.isnan(a100.loc[("DtoD", ""), "link_gb_per_s"]) and np.isnan(a100.loc[("DtoD", ""), "share_of_link"])


def test_an_unknown_device_gets_no_link_figure():
    # ROCm names the MI250's GCDs "AMD Radeon Graphics", as it does APUs: no spec, NaN, never a guess.
    r = report("mi250_rocm_toy_train")
    assert device_spec(r.device.name) is None
    table = copy_table(r.table, None)
    assert table["link_gb_per_s"].isna().all() and table["share_of_link"].isna().all()
    assert (table["direction"] == "HtoD").all() and (table["host_memory"] == "").all()  # "Host -> Device"


def test_cpu_runs_have_no_copies():
    for r in (live_cpu_report(), report("cpu_only")):
        table = copy_table(r.table, None)
        assert table.empty and list(table.columns) == COPY_COLUMNS
        assert h2d_copies(r) is None
