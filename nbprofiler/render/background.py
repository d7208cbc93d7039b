"""What a large report's bundle builds on a second thread while this one makes its tables,
text and HTML: the operator tree's nesting and launches, the Hardware view's tables, then
the timeline.

Why: on a million-event trace the bundle kept the user waiting about a second on one core.
These parts are mostly numpy sorts and searches, which release the GIL, and the tables the
first thread makes hardly need them. Built alongside, they take 0.3 s or more off the wait on
a two-core machine (``bench/report_latency.py``).

Sharing is safe by construction: what both threads read is computed here before the second
one starts; each Report table is computed once (a thread that asks for a table the other is
making waits for it: ``report.read_only_table``); the tree's parts are ``cached_property``
(each computed once on Python 3.11; from 3.12 both threads may compute the same value); the
timeline is handed over to the report's view model (``view_model``'s ``expect_timeline``), and
whoever needs it waits for it and gets any error it raised, with its traceback.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..analysis.links import launching_runtime
from . import timeline_data, view_model

if TYPE_CHECKING:
    from ..report.report import Report

# Below this many events the thread would cost more than it saves.
PARALLEL_MIN_EVENTS = 100_000
# The tree's parts the report's first tables ask for (operators, syncs, kernels): the
# second thread computes them while the first one makes the steps and the breakdown.
_TREE_PARTS = ("parent", "launcher", "host_self_us", "device_total_us", "is_call")
# The Hardware view's tables (render/hardware.py), made while the first thread makes the rest.
_HARDWARE_TABLES = ("launches", "queue_length", "stream_idle", "kernel_overlap", "copies", "flops", "roofline",
                    "collectives", "kernel_launch_delay", "kernel_roofline")
# What both threads read: computed before the second one starts.
_SHARED = ("table", "device", "device_spec", "operator_tree", "stretched_steps", "trace_steps", "memory", "step_window")

_worker: ThreadPoolExecutor | None = None


def start(report: "Report") -> None:
    """Begin building ``report``'s operator tree and timeline on a second thread (a large
    trace's, not yet built or started); the bundle then asks for them as usual."""
    global _worker
    model = view_model.of(report)
    if model.timeline_started or len(report.table) < PARALLEL_MIN_EVENTS:
        return
    for name in _SHARED:
        getattr(report, name)
    launching_runtime(report.table, report.table.thread[:0])  # the per-trace launch links, and the thread keys
    if _worker is None:
        _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nbprofiler-background")
    model.expect_timeline(_worker.submit(_tree_then_timeline, report))


def _tree_then_timeline(report: "Report") -> Any:
    tree = report.operator_tree
    for part in _TREE_PARTS:
        getattr(tree, part)
    for table in _HARDWARE_TABLES:
        getattr(report, table)
    return timeline_data.build(report, saved=True)
