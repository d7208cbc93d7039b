"""A report's tables are built under locks of that report's own: two reports build the same
table at once, while one report's table is built once however many threads ask for it."""
from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

import nbprofiler
from conftest import TRACES
from nbprofiler.report import read_only

TRACE = TRACES / "cpu_only.pt.trace.json.gz"
TABLE = "operators"
ASKING = 4  # threads asking for the first report's table at once


def test_two_reports_build_a_table_at_once_and_each_builds_it_once(monkeypatch) -> None:
    first, second = nbprofiler.load(TRACE), nbprofiler.load(TRACE)
    table = vars(nbprofiler.Report)[TABLE]
    build = table.build
    builds: Counter[str] = Counter()
    first_building, second_built = threading.Event(), threading.Event()
    at_first_lock = threading.Semaphore(0)  # released by each thread as it takes first's table lock

    def held_build(report):
        """The first report's build goes on only once the second report's is done: with a lock
        shared between reports, the second would wait for the first, and neither would finish."""
        builds["first" if report is first else "second"] += 1
        if report is first:
            for _ in range(ASKING):  # every thread asking, this one too, is at first's table lock
                assert at_first_lock.acquire(timeout=60)
            first_building.set()
            assert second_built.wait(timeout=60), "the second report's table waited for the first's"
        return build(report)

    table_lock = read_only.table_lock

    def announced(cache, slot):
        if cache is vars(first) and slot == table.slot:
            at_first_lock.release()
        return table_lock(cache, slot)

    monkeypatch.setattr(table, "build", held_build)
    monkeypatch.setattr(read_only, "table_lock", announced)
    with ThreadPoolExecutor(ASKING + 1) as pool:
        firsts = [pool.submit(getattr, first, TABLE) for _ in range(ASKING)]
        assert first_building.wait(timeout=60)
        second_table = pool.submit(getattr, second, TABLE).result(timeout=120)
        second_built.set()
        first_tables = [f.result(timeout=120) for f in firsts]

    assert builds == {"first": 1, "second": 1}  # each report's table built once
    for got in first_tables:
        pd.testing.assert_frame_equal(got, second_table)
    assert len(second_table) > 0
