"""usable_cpus counts the cores a process may use: affinity, the cgroup quota, the local ranks."""
from __future__ import annotations

import os
import time

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


def test_the_workers_cpu_is_this_runs_own_and_found_without_scanning_every_process(monkeypatch):
    """A worker process and its own child, the child busy: the descendants are exactly what psutil's
    scan of every process finds, and the child's CPU time counts as this process's own
    (``cpu_use``), not as other programs'. Where the kernel lists no children, the scan is the answer."""
    import subprocess
    import sys

    import psutil

    busy = "import time\nwhile True: pass\n"
    nested = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {busy!r}])\n"
    worker = subprocess.Popen([sys.executable, "-c", nested])
    me = psutil.Process()
    try:
        deadline = time.perf_counter() + 60
        while len(me.children(recursive=True)) < 2 and time.perf_counter() < deadline:
            time.sleep(0.01)
        expected = sorted(child.pid for child in me.children(recursive=True))
        assert len(expected) == 2 and sorted(machine.descendants(me)) == expected
        grandchild = psutil.Process(expected[-1] if psutil.Process(expected[-1]).ppid() == worker.pid else expected[0])
        start = machine.cpu_use()
        before = after = sum(grandchild.cpu_times()[:2])
        while after - before < 0.2 and time.perf_counter() < deadline:  # however busy the machine's cores
            time.sleep(0.05)
            after = sum(grandchild.cpu_times()[:2])
        end = machine.cpu_use()
        assert start is not None and end is not None
        assert after > before and end.own_s - start.own_s >= after - before - 0.011  # clock ticks of 10 ms
        real_exists = os.path.exists
        monkeypatch.setattr(os.path, "exists", lambda path: not str(path).endswith("/children") and real_exists(path))
        assert sorted(machine.descendants(me)) == expected
    finally:
        for process in me.children(recursive=True):
            process.kill()
        worker.wait(timeout=60)
