"""Memory of a whole run watched with ``--every``: RSS after the first cycles, and at the end.

A monitored run keeps one summary row per cycle and drops each cycle's trace once reduced, so
its memory should grow with the cycles, not with the steps. A fresh interpreter runs a small
training loop over a DataLoader for STEPS steps under ``nbprofiler.profile(every=EVERY)``, and
reads its RSS (``/proc/self/statm``, through the sampler's own reader) after the first
``SETTLED_CYCLES`` cycles and after the last step, and the report's cycles. Target: growth
under 50 MB for 20,000 steps.

    .venv/bin/python bench/every_memory.py [STEPS] [EVERY]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTLED_CYCLES = 3
TARGET_MB = 50
_PROBE = r"""
import json, sys
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
sys.path.insert(0, sys.argv[3])
import nbprofiler
from nbprofiler.capture.sampler import _rss_reader

steps, every = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
torch.set_num_threads(1)
net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(4096, 32), torch.randint(0, 4, (4096,))), batch_size=16)
rss = _rss_reader()
settled = None
done = 0
with nbprofiler.profile(every=every, history=False) as run:
    while done < steps:
        for x, y in loader:
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            done += 1
            if done == every * __SETTLED__:
                settled = rss()
            if done == steps:
                break
end = rss()
print(json.dumps({"steps": len(run.report.steps), "cycles": len(run.report.cycles), "settled_bytes": settled,
                  "end_bytes": end, "growth_bytes": end - settled}))
""".replace("__SETTLED__", str(SETTLED_CYCLES))


def probe(steps: int, every: int) -> dict:
    """Run the monitored loop in a fresh interpreter; its figures as a dict."""
    out = subprocess.run([sys.executable, "-c", _PROBE, str(steps), str(every), str(ROOT)], capture_output=True,
                         text=True, env={**os.environ, "NBPROFILER_HISTORY": os.devnull}, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"the probe failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    every = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    found = probe(steps, every)
    print(f"{found['steps']:,} steps, {found['cycles']} cycles of {every}: "
          f"RSS {found['settled_bytes'] / 2**20:.1f} MiB after {SETTLED_CYCLES} cycles, "
          f"{found['end_bytes'] / 2**20:.1f} MiB at the end: growth "
          f"{found['growth_bytes'] / 1e6:.1f} MB (target < {TARGET_MB} MB)")


if __name__ == "__main__":
    main()
