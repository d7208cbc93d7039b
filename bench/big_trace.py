"""A trace of 5 million events: analysed within 3x its JSON size, or refused clearly.

1. Stream-writes a current-schema trace of ``--events`` events to a temp file (the
   realistic mix of ``bench/analysis_speed.py``: nested cpu_ops, launches, kernels,
   flows, memory instants, DataLoader and ProfilerStep ranges), so the generator
   never holds it in memory.
2. In a fresh interpreter: ``nbprofiler.load`` and every table of the Report
   (each ``cached_property`` and ``read_only_table``), then the text and HTML renderings. Prints the time
   and the peak RSS rise over the RSS before the load (``VmHWM`` after resetting
   it), as a multiple of the JSON size. Target: <= 3x.
3. With ``NBPROFILER_MAX_TRACE_BYTES`` below the file size: the load must be
   refused up front with a one-line message naming the limit and how to profile
   fewer steps, and must not read the file (peak rise well under its size).

    .venv/bin/python bench/big_trace.py [--events 5000000] [--gzip]

Exits 1 if a target is missed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from analysis_speed import synthetic_trace  # noqa: E402 - the one generator of realistic traces
from workload import RSS_PRELUDE  # noqa: E402

TARGET_RATIO = 3.0

_PROBE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from functools import cached_property
import nbprofiler
from nbprofiler.report.read_only import read_only_table
from nbprofiler.report.report import Report

""" + RSS_PRELUDE + r"""
before = status("VmRSS:")
t0 = time.perf_counter()
try:
    report = nbprofiler.load(sys.argv[1])
except nbprofiler.TraceError as exc:
    print(json.dumps({"refused": str(exc), "before": before, "peak": status("VmHWM:"),
                      "seconds": time.perf_counter() - t0}))
    sys.exit(0)
t_load = time.perf_counter() - t0
tables = [name for name, attr in vars(Report).items() if isinstance(attr, (cached_property, read_only_table))]
for name in tables:
    getattr(report, name)
report.to_text()
report.to_html()
print(json.dumps({"events": len(report.table), "tables": tables, "before": before, "peak": status("VmHWM:"),
                  "load_s": t_load, "seconds": time.perf_counter() - t0}))
"""


def probe(path: Path, env: dict[str, str] | None = None) -> dict:
    """Load and analyse ``path`` in a fresh interpreter; its figures as a dict."""
    out = subprocess.run([sys.executable, "-c", _PROBE, str(path), str(ROOT)], capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"the probe failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--gzip", action="store_true", help="also load a .json.gz copy (decompressed in memory)")
    args = parser.parse_args()
    ok = True
    tmp = Path(tempfile.mkdtemp(prefix="nbprofiler-big-"))
    try:
        path = tmp / "big.pt.trace.json"
        t0 = time.perf_counter()
        count = synthetic_trace(path, args.events)
        size = path.stat().st_size
        print(f"generated {count:,} events, {size / 1e6:.0f} MB JSON in {time.perf_counter() - t0:.0f} s")

        paths = [path]
        if args.gzip:
            gz = tmp / "big.pt.trace.json.gz"
            with path.open("rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 24)
            paths.append(gz)
        for p in paths:
            r = probe(p, {"NBPROFILER_MAX_TRACE_BYTES": str(max(size + 1, 1 << 30))})
            rise = r["peak"] - r["before"]
            ratio = rise / size
            ok &= ratio <= TARGET_RATIO
            print(f"{p.name}: {r['events']:,} events kept; load {r['load_s']:.1f} s, load + {len(r['tables'])} tables "
                  f"+ text + HTML {r['seconds']:.1f} s; peak RSS rise {rise / 1e6:.0f} MB "
                  f"over {r['before'] / 1e6:.0f} MB before = {ratio:.2f}x the JSON size (target <= {TARGET_RATIO:g}x)")

        limit = size // 2
        r = probe(path, {"NBPROFILER_MAX_TRACE_BYTES": str(limit)})
        message = r.get("refused", "")
        rise = r["peak"] - r["before"]
        clear = "\n" not in message and "limit" in message and "profile fewer steps" in message and str(path) in message
        ok &= clear and rise < size / 10
        print(f"with a {limit / 1e6:.0f} MB limit: refused in {r['seconds'] * 1e3:.0f} ms, peak RSS rise "
              f"{rise / 1e6:.0f} MB; message: {message or '(none: it loaded)'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("OK" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
