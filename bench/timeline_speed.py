"""How long the Timeline's payload takes, and how large it is, on real and generated traces.

For each shared trace (``tests/data/traces``) and a generated trace of ``--events``
events (``analysis_speed.synthetic_trace``, the realistic mix), after loading it and
computing the tables the payload reads (steps, memory), times
``timeline_payload`` (best of ``--repeat``, wall clock and CPU time, each on a fresh Report so the per-report
cache does not answer) and prints the payload's events, whether the cap merged
any, and its size as JSON. Target: well under 0.5 s for 1 million events.

    .venv/bin/python bench/timeline_speed.py [--events 1000000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import nbprofiler  # noqa: E402
from analysis_speed import synthetic_trace  # noqa: E402 - the one generator of realistic traces
from nbprofiler.render import view_model  # noqa: E402

TARGET_S = 0.5


def measure(path: Path, repeat: int) -> tuple[float, float, dict]:
    """Best wall and best CPU seconds of ``timeline_payload``, and the payload."""
    best, best_cpu, payload = float("inf"), float("inf"), None
    for _ in range(repeat):
        report = nbprofiler.load(path)
        report.stretched_steps, report.memory, report.step_window  # noqa: B018 - what the report has already
        t0, c0 = time.perf_counter(), time.process_time()
        payload = view_model.of(report).timeline_payload()
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
    assert payload is not None
    return best, best_cpu, payload


def line(name: str, seconds: float, cpu: float, payload: dict) -> str:
    size = len(json.dumps(payload)) / 1e6
    merged = payload["aggregated"]
    cap = "" if merged is None else f", {merged['events']} merged below {merged['below_us']:.2f} µs"
    return (f"{name:52s} {seconds * 1e3:6.1f} ms ({cpu * 1e3:6.1f} ms CPU)  {payload['total_events']:>8} events -> "
            f"{payload['events']['n']:>7}{cap}  {size:6.2f} MB JSON")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for path in sorted((ROOT / "tests" / "data" / "traces").glob("*.json.gz")):
        print(line(path.name, *measure(path, args.repeat)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.pt.trace.json"
        n = synthetic_trace(path, args.events)
        seconds, cpu, payload = measure(path, args.repeat)
        print(line(f"generated, {n} events", seconds, cpu, payload))
    print(f"target for {args.events} events: under {TARGET_S} s: {'met' if seconds < TARGET_S else 'MISSED'}")
    sys.exit(0 if seconds < TARGET_S else 1)


if __name__ == "__main__":
    main()
