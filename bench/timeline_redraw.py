"""How fast the Timeline canvas redraws a capped payload (100k events) in Chromium.

Generates a trace of ``--events`` events (``analysis_speed.synthetic_trace``, the
realistic mix), makes its Timeline payload with ``timeline_payload`` (the cap merges
it to at most ``MAX_TIMELINE_EVENTS``), bundles the front end's timeline module with
esbuild, and runs bench/timeline_redraw.mjs: median and worst of 20 redraws (level of
detail plus drawing on a real canvas) with the whole trace in view, a tenth of it and
50 µs. A frame at 60 Hz has 16.7 ms.

    .venv/bin/python bench/timeline_redraw.py [--events 1000000]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import nbprofiler  # noqa: E402
from analysis_speed import synthetic_trace  # noqa: E402 - the one generator of realistic traces
from nbprofiler.render import view_model  # noqa: E402

LABEXT = ROOT / "labextension"


def bundle(out: Path) -> None:
    """The timeline module as one script that sets ``window.nbpTimeline``."""
    subprocess.run([str(LABEXT / "node_modules" / ".bin" / "esbuild"), "src/timeline/index.ts", "--bundle",
                    "--format=iife", "--global-name=nbpTimeline", f"--outfile={out}", "--log-level=warning"],
                   cwd=LABEXT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "synthetic.pt.trace.json"
        n = synthetic_trace(trace, args.events)
        payload = view_model.of(nbprofiler.load(trace)).timeline_payload()
        if payload is None:
            raise SystemExit("the generated trace gave no timeline")
        data = Path(tmp) / "payload.json"
        data.write_text(json.dumps(payload))
        script = Path(tmp) / "timeline.js"
        bundle(script)
        run = subprocess.run(["node", str(ROOT / "bench" / "timeline_redraw.mjs"), str(script), str(data)],  # noqa: S607 - node, as on PATH
                             capture_output=True, text=True, check=True)
        figures = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"trace: {n:,} events; payload: {figures['events']:,} events "
          f"(aggregated: {payload['aggregated']}); track {figures['width']:.0f} px")
    print(f"first render (decode, layout, draw): {figures['firstRenderMs']:.1f} ms")
    for name in ("whole", "tenth", "50us"):
        f = figures[name]
        print(f"redraw, {name:>5} in view: median {f['medianMs']:.2f} ms, worst {f['maxMs']:.2f} ms, "
              f"{f['blocks']:,} blocks drawn")


if __name__ == "__main__":
    main()
