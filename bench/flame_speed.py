"""The flame graph's cost on each shared trace: the tree (``Report.flame``), the capped view, and
the static SVG and payload drawn from it, each timed after the operator tree it reads is built.

    .venv/bin/python bench/flame_speed.py

Prints events, nodes, boxes drawn and milliseconds per part; no target (the figures go in the
notes of a change).
"""
from __future__ import annotations

import time
from pathlib import Path

import nbprofiler
from nbprofiler.render import view_model

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"


def ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    print(f"{'trace':45} {'events':>8} {'nodes':>6} {'boxes':>6} {'tree ms':>8} {'view ms':>8} {'svg ms':>7} "
          f"{'payload ms':>10}")
    for path in sorted(TRACES.glob("*.pt.trace.json.gz"), key=lambda p: p.stat().st_size):
        report = nbprofiler.load(path)
        _ = report.operator_tree.launcher, report.operator_tree.host_self_us  # what the operator table built
        model = view_model.of(report)
        tree = ms(lambda r=report: r.flame)
        view = ms(lambda m=model: m.flame)
        svg = ms(lambda m=model: [m.flame_svg(k) for k in ("host_us", "device_us")])
        payload = ms(model.flame_payload)
        boxes = 0 if model.flame is None else len(model.flame.nodes)
        print(f"{path.name:45} {len(report.table):>8,} {len(report.flame):>6,} {boxes:>6,} {tree:>8.1f} {view:>8.1f} "
              f"{svg:>7.1f} {payload:>10.1f}")


if __name__ == "__main__":
    main()
