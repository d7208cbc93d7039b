"""A Report never changes after it is built: the tables it hands out are the user's to change."""
from __future__ import annotations

import torch

import nbprofiler
from conftest import shared_report


def test_changing_a_handed_out_table_leaves_the_report_as_it_was():
    report = shared_report("v100_resnet50_train_num_workers_4")
    before = report.operators
    ops = report.operators
    del ops["name"]  # a user tidying "their" table in place
    steps = report.breakdown
    steps.loc[0, "kernel"] = -1.0
    summary = report.summary
    summary["avg_step_us"] = 0.0
    assert report.operators.equals(before) and len(before) > 0
    assert report.breakdown.loc[0, "kernel"] >= 0
    assert report.summary["avg_step_us"] > 0
    assert "aten::" in report.to_text()  # renderers read the tables as the analysis made them


def test_a_live_runs_steps_are_not_changed_through_the_report():
    with nbprofiler.profile(step_on="manual", wait=0, warmup=0, active=2) as run:
        for _ in range(3):
            torch.ones(64).sum()
            nbprofiler.step()
    report = run.report
    steps = report.steps
    steps["wall_ms"] = 0.0
    assert (report.steps["wall_ms"] > 0).all() and (report.run.steps["wall_ms"] > 0).all()
