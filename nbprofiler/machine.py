"""How many CPU cores this process may really use, in one place.

``os.cpu_count()`` counts the machine's cores, not the ones a process may run
on: a container limited to 2 CPUs on a 64-core host sees 64. The DataLoader
rule and ``tune_dataloader`` both size worker counts from this module, so they
never disagree about the machine.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

# Where the cgroup CPU limits are mounted; a module constant so tests can point it at a fake tree.
CGROUP_ROOT = Path("/sys/fs/cgroup")
# cgroup v1 mounts the cpu controller under either name, depending on the distribution.
_V1_DIRS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")


def local_world_size() -> int:
    """Ranks on this machine (torchrun sets LOCAL_WORLD_SIZE); 1 when unset or unreadable."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


def process_cpus() -> int:
    """Cores this process may run on: its CPU affinity, capped by the cgroup CPU quota."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota)))
    return max(1, cpus)


def usable_cpus() -> int:
    """Cores for this process, shared among the ranks on this machine (at least 1)."""
    return max(1, process_cpus() // local_world_size())


def cgroup_cpu_quota(root: Path | None = None) -> float | None:
    """CPUs' worth of time the cgroup allows per period (quota / period); None when unlimited or unknown.

    cgroup v2 writes ``"<quota> <period>"`` (or ``"max <period>"``) to ``cpu.max``; v1 writes
    ``cpu.cfs_quota_us`` (-1 when unlimited) and ``cpu.cfs_period_us``.
    """
    base = CGROUP_ROOT if root is None else root
    v2 = _read(base / "cpu.max")
    if v2 is not None:
        parts = v2.split()
        return _ratio(parts[0], parts[1]) if len(parts) == 2 and parts[0] != "max" else None
    for name in _V1_DIRS:
        quota = _read(base / name / "cpu.cfs_quota_us")
        period = _read(base / name / "cpu.cfs_period_us")
        if quota is not None and period is not None:
            return _ratio(quota, period)
    return None


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds used so far by the whole machine and by this process with its children (the
    DataLoader workers), and when: two readings say how busy other programs kept the machine."""

    machine_busy_s: float
    own_s: float
    at_s: float  # time.perf_counter()


def cpu_use() -> CpuUse | None:
    """The machine's and this process's CPU time now; None where the OS does not tell them."""
    import psutil

    try:
        total = psutil.cpu_times()
        me = psutil.Process()
        with me.oneshot():
            times = me.cpu_times()
            own = times.user + times.system + times.children_user + times.children_system
        for pid in descendants(me):  # live workers: not in children_* until reaped
            try:
                child_times = psutil.Process(pid).cpu_times()
            except psutil.Error:  # it exited between the listing and the read
                continue
            own += child_times.user + child_times.system
    except (psutil.Error, OSError):
        return None
    idle = total.idle + getattr(total, "iowait", 0.0)
    busy = sum(total) - idle - getattr(total, "guest", 0.0) - getattr(total, "guest_nice", 0.0)
    return CpuUse(busy, own, time.perf_counter())


def descendants(process: "psutil.Process") -> list[int]:
    """The process ids of ``process``'s live children and theirs (DataLoader workers, a forkserver's).

    On Linux, read from each thread's ``/proc/PID/task/TID/children``: a few reads for a process
    and its workers, where psutil reads every process's ``stat`` on the machine (about 300
    system calls on a test machine). A ``--every`` run reads this once a cycle, on a thread
    beside the loop, and each of those calls gives the loop's GIL away and back. Elsewhere, or
    where the kernel does not list children, psutil's scan."""
    if not os.path.exists(f"/proc/{process.pid}/task/{process.pid}/children"):  # not Linux, or no such lists
        return [child.pid for child in process.children(recursive=True)]
    found: list[int] = []
    todo = [process.pid]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:  # a worker that exited since it was listed
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", "rb") as children:
                    listed = [int(child) for child in children.read().split()]
            except FileNotFoundError:  # the thread ended, or the process, since the listing
                continue
            found.extend(listed)
            todo.extend(listed)
    return found


def other_cores(start: CpuUse | None, end: CpuUse | None) -> float | None:
    """How many cores, on average, programs other than this one kept busy between two readings
    (None without both, or over too short a time to tell)."""
    if start is None or end is None or end.at_s - start.at_s < 0.05:
        return None
    other = (end.machine_busy_s - start.machine_busy_s) - (end.own_s - start.own_s)
    return max(other, 0.0) / (end.at_s - start.at_s)
