"""Loading a distributed run's directory of rank traces serially and in parallel.

1. Writes ``--ranks`` rank traces (8 by default) from a shared GPU trace of a real NCCL
   run into a temp ``tensorboard_trace_handler`` directory: each with its own
   ``distributedInfo.rank``, and one (rank ``ranks // 2``) a straggler whose whole
   timeline runs 1.5x slower (``write_ranks``).
2. Loads the directory with ``nbprofiler.load``, each mode in a fresh interpreter so
   that each peak is its own: serially (an executor that runs each file inline, in
   this process, one after another), and in parallel (the default process pool, or
   with ``--dask`` a ``dask.distributed`` LocalCluster's ``client.get_executor()``,
   one single-threaded worker process per core; its start-up, and each worker's import of
   nbprofiler, are timed apart).
3. Prints, per mode, its best of ``--repeat`` runs (interleaved; the machine may be
   shared): the load's wall time, the peak RSS of the loading process, the
   largest peak of a worker process, the peak of the whole process tree (sampled by
   psutil every 50 ms: a sample costs ~2 ms of a core), the ranks flagged as stragglers, and the parallel speed-up.

    .venv/bin/python bench/many_ranks.py [--ranks 64] [--dask] [--repeat 3] [--trace PATH]
"""
from __future__ import annotations

import argparse
import gzip
import importlib
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, Callable

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED_TRACE = ROOT / "tests" / "data" / "traces" / "a100_nccl_distributed.pt.trace.json.gz"
SLOWDOWN = 1.5
MODES = ("serial", "parallel", "dask")


def write_ranks(source: Path, out: Path, ranks: int, straggler: int | None) -> list[Path]:
    """``ranks`` copies of the trace ``source`` as the ranks of one run, named as the handler
    names them (``rank<r>.<time>.pt.trace.json``); rank ``straggler`` is ``stretched``."""
    raw = source.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    info = doc.get("distributedInfo") or {"backend": "nccl"}
    events = doc["traceEvents"]
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        doc["distributedInfo"] = {**info, "rank": rank, "world_size": ranks}
        doc["traceEvents"] = stretched(events, SLOWDOWN) if rank == straggler else events
        path = out / f"rank{rank}.1700000000000000000.pt.trace.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def stretched(events: list[dict[str, Any]], factor: float) -> list[dict[str, Any]]:
    """The events of a rank that ran ``factor`` times slower throughout: every timestamp and
    duration stretched from the first one, so nesting, order and flows stay as recorded."""
    start = min(e["ts"] for e in events if "ts" in e)
    out = []
    for e in events:
        e = dict(e)
        if "ts" in e:
            e["ts"] = start + (e["ts"] - start) * factor
        if "dur" in e:
            e["dur"] = e["dur"] * factor
        out.append(e)
    return out


class InlineExecutor(Executor):
    """Runs each call at once in the calling thread: ``load``'s files one after another, in this process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


class TreePeak:
    """The peak total RSS of this process and all its descendants, sampled every 50 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "TreePeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:  # a worker that just ended
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(0.05)


def measure(mode: str, directory: Path) -> dict[str, Any]:
    """One mode's load of ``directory``, in this (fresh) interpreter."""
    import nbprofiler

    cluster_s = 0.0
    client = None
    executor: Executor | None = InlineExecutor() if mode == "serial" else None  # None: the default pool
    if mode == "dask":
        from dask.distributed import Client, LocalCluster

        from nbprofiler.machine import process_cpus

        t0 = time.perf_counter()
        client = Client(LocalCluster(n_workers=process_cpus(), threads_per_worker=1, processes=True,
                                     dashboard_address=None))
        client.run(importlib.import_module, "nbprofiler.report.load")  # as on a cluster that already ran it
        executor = client.get_executor()
        cluster_s = time.perf_counter() - t0
    before = psutil.Process().memory_info().rss
    with TreePeak() as tree:
        t0 = time.perf_counter()
        report = nbprofiler.load(directory, executor=executor)
        wall = time.perf_counter() - t0
    cmp = report.rank_comparison
    if client is not None:
        client.shutdown()  # the cluster too, so that its workers' peaks are in RUSAGE_CHILDREN
    kib = 1024
    return {"mode": mode, "wall_s": wall, "cluster_start_s": cluster_s, "ranks": len(report.ranks),
            "rss_before_mb": before / 2**20,
            "parent_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * kib / 2**20,
            "worker_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * kib / 2**20,
            "tree_peak_mb": tree.peak / 2**20,
            "stragglers": [int(r) for r in cmp.loc[cmp["straggler"], "rank"]]}


def run_mode(mode: str, directory: Path) -> dict[str, Any]:
    """``measure`` in a fresh interpreter, so that its peaks are its own."""
    out = subprocess.run([sys.executable, __file__, "--measure", mode, str(directory)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--dask", action="store_true", help="the parallel load on a dask.distributed LocalCluster")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode; the fastest is shown")
    parser.add_argument("--trace", type=Path, default=SHARED_TRACE, help="the GPU trace every rank is made from")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "ranks"
        paths = write_ranks(args.trace, directory, args.ranks, straggler=args.ranks // 2)
        size = sum(p.stat().st_size for p in paths)
        print(f"{args.ranks} ranks of {args.trace.name} ({size / args.ranks / 2**20:.1f} MB of JSON each, "
              f"{size / 2**20:.0f} MB in all); straggler: rank {args.ranks // 2}")
        modes = ("serial", "dask" if args.dask else "parallel")
        runs = [[run_mode(mode, directory) for mode in modes] for _ in range(args.repeat)]
    results = [min((run[i] for run in runs), key=lambda r: r["wall_s"]) for i in range(len(modes))]
    for r in results:
        extra = f" (+ {r['cluster_start_s']:.1f} s to start the cluster)" if r["mode"] == "dask" else ""
        print(f"{r['mode']:>8}: {r['wall_s']:6.2f} s{extra}; peak RSS: loading process {r['parent_peak_mb']:.0f} MB "
              f"(before the load {r['rss_before_mb']:.0f} MB), largest worker {r['worker_peak_mb']:.0f} MB, "
              f"process tree {r['tree_peak_mb']:.0f} MB; {r['ranks']} ranks, stragglers {r['stragglers']}")
    print(f"parallel speed-up: {results[0]['wall_s'] / results[1]['wall_s']:.2f}x")


if __name__ == "__main__":
    main()
