"""The per-kernel figures the Kernels views show are the Report's own tables: each kernel's mean
launch delay over its launches and its launching FLOP operator's roofline figures, which every
renderer reads instead of working them out again."""
from __future__ import annotations

from pathlib import Path

import pytest

import nbprofiler
from nbprofiler.render.payload import report_payload

DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_kernels_launch_delay_is_the_mean_of_its_launches_and_the_views_show_it():
    report = nbprofiler.load(DATA / "traces" / "a100_train.pt.trace.json.gz")
    launches = report.launches
    kernels = launches[launches["kind"] == "kernel"]
    name = kernels["name"].value_counts().index[0]  # the kernel launched most often
    delay = report.kernel_launch_delay.set_index("name")["mean_launch_delay_us"]
    assert delay[name] == pytest.approx(kernels.loc[kernels["name"] == name, "launch_delay_us"].mean())
    shown = report_payload(report)["kernels"]
    row = next(dict(zip(shown["columns"], r)) for r in shown["rows"] if r[shown["columns"].index("name")] == name)
    assert row["mean_launch_delay_us"] == pytest.approx(delay[name])


def test_a_kernel_reads_the_roofline_figures_of_an_operator_in_the_roofline():
    report = nbprofiler.load(DATA / "traces" / "a100_train.pt.trace.json.gz")
    figures = report.kernel_roofline
    known = figures[figures["achieved_flops_per_s"].notna()]
    assert len(known) and set(known["achieved_flops_per_s"]) <= set(report.roofline["achieved_flops_per_s"])
    assert set(known["bound"]) <= {"compute-bound", "memory-bound", ""}
    assert figures.loc[figures["achieved_flops_per_s"].isna() & figures["bound"].isna(), "name"].size

