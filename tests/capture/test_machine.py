"""usable_cpus counts the cores a process may use: affinity, the cgroup quota, the local ranks."""
from __future__ import annotations

import os

import pytest

from nbprofiler import machine
from nbprofiler.machine import cgroup_cpu_quota, usable_cpus


@pytest.fixture()
def eight_cores(monkeypatch, tmp_path):
    """Affinity to 8 cores, no cgroup limit (an empty cgroup tree), one rank."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(machine, "CGROUP_ROOT", tmp_path)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    return tmp_path


def test_affinity_alone(eight_cores):
    assert cgroup_cpu_quota() is None
    assert usable_cpus() == 8


def test_cgroup_v2_quota_caps_the_affinity(eight_cores):
    (eight_cores / "cpu.max").write_text("250000 100000\n")  # 2.5 CPUs' worth of time
    assert cgroup_cpu_quota() == pytest.approx(2.5)
    assert usable_cpus() == 2
    (eight_cores / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota() is None and usable_cpus() == 8


def test_cgroup_v1_quota(eight_cores):
    (eight_cores / "cpu,cpuacct").mkdir()
    (eight_cores / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("300000\n")
    (eight_cores / "cpu,cpuacct" / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cpus() == 3
    (eight_cores / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("-1\n")
    assert usable_cpus() == 8


def test_a_small_quota_still_leaves_one_core(eight_cores):
    (eight_cores / "cpu.max").write_text("50000 100000\n")
    assert usable_cpus() == 1


def test_local_ranks_share_the_cores(eight_cores, monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert usable_cpus() == 2
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "lots")
    assert usable_cpus() == 8
