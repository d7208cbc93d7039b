"""The hardware tables as a user reads them from a Report: launches and queues, copies, stream
idle and kernel overlap, and the device's spec-sheet figures."""
from __future__ import annotations

import math

import pandas as pd
from conftest import shared_report, shared_trace
from test_streams import live_cpu_report

import nbprofiler
from nbprofiler.format import fmt_pct, fmt_rate, fmt_si
from nbprofiler.analysis.copies import copy_table
from nbprofiler.analysis.device_specs import device_spec
from nbprofiler.analysis.launches import launch_table, queue_length
from nbprofiler.analysis.streams import kernel_overlap, stream_idle

TABLES = ("launches", "queue_length", "copies", "stream_idle", "kernel_overlap")


def test_a_gpu_reports_tables_are_the_analyses_of_its_trace_and_its_own_device():
    r = nbprofiler.load(shared_trace("a100_train"))
    spec = device_spec(r.device.name)
    assert r.device_spec == spec and spec is not None and spec.host_link_gb_per_s > 0
    expected = {"launches": launch_table(r.table), "queue_length": queue_length(r.table),
                "copies": copy_table(r.table, spec), "stream_idle": stream_idle(r.table, r.stretched_steps),
                "kernel_overlap": kernel_overlap(r.table, r.stretched_steps)}
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(getattr(r, name), frame)
    summary = r.launch_summary()
    assert summary.launches == len(r.launches) and summary.delayed == int((r.launches["launch_delay_us"] > 100).sum())
    assert r.launch_summary(delay_threshold_us=0.0).delayed >= summary.delayed


def test_a_users_change_to_a_table_never_reaches_the_report():
    r = shared_report("v100_resnet50_train_num_workers_0")
    for name in TABLES:
        mine = getattr(r, name)
        assert len(mine), name
        before = mine.copy()
        mine.loc[0, mine.select_dtypes("number").columns[-1]] = -1  # the user's copy only
        pd.testing.assert_frame_equal(getattr(r, name), before)


def test_a_live_cpu_run_has_the_tables_empty_and_no_device_figures():
    r = live_cpu_report()
    for name in TABLES:
        assert getattr(r, name).empty, name
    assert r.device_spec is None
    summary = r.launch_summary()
    assert summary.launches == 0 and summary.mean_delay_us is None
    assert not any("host-to-device" in fact for s in r.suggestions for fact in s.facts)


def test_pin_memory_advice_cites_the_pageable_copies_rate_against_the_host_link():
    r = shared_report("v100_resnet50_train_num_workers_0")
    (row,) = r.copies.to_dict("records")
    cited = [s for s in r.suggestions if "h2d_copies_pageable" in s.evidence]
    assert cited, "the V100 sample copies every batch from pageable memory"
    evidence = cited[0].evidence
    assert evidence["h2d_copies_pageable"] == row["copies"] == 12
    assert math.isclose(evidence["h2d_pageable_gb_per_s"], row["gb_per_s"], abs_tol=0.005)
    assert evidence["host_link_gb_per_s"] == row["link_gb_per_s"] == 16.0
    # Byte rates in the binary units of every byte figure: 16 GB/s is 14.9 GiB/s.
    assert any(f"{fmt_rate(row['gb_per_s'])} of the 14.9 GiB/s" in fact for fact in cited[0].facts)


def test_the_overview_shows_mfu_in_every_renderer_with_what_it_is_over():
    from nbprofiler.render.html import render_html
    from nbprofiler.render.payload import report_payload

    r = shared_report("v100_resnet50_train_num_workers_0")
    summary = r.summary
    assert 0.2 < summary["mfu"] < 0.4 and summary["mfu_dtype"] == "fp32"  # the independent ~0.28
    detail = f"{fmt_si(summary['achieved_flops_per_s'], 'FLOP/s')} of the fp32 peak"
    assert f"MFU {fmt_pct(summary['mfu'])} ({detail})" in r.to_text()
    assert f"<span>MFU</span><b>{fmt_pct(summary['mfu'])}</b><span>{detail}</span>" in render_html(r)
    saved = report_payload(r)["summary"]
    assert saved["mfu"] == summary["mfu"] and saved["mfu_detail"] == detail
    # Without FLOPs (a trace without shapes) there is no MFU to show.
    assert "MFU" not in shared_report("a100_nccl_distributed").to_text()
