"""Does the torch.compile estimate hold? For each workload of a different shape, the compile
rule's verdict and estimate from one profiled pass, against compiled vs eager timed in
interleaved rounds.

Each workload is profiled with ``%%torchprofile -q -o report`` in a real IPython shell; the
compile card's estimate (low–high) is printed, or the rule's reason for showing none. Then
the model (``model`` in each setup) is compiled with ``torch.compile`` and its cell timed
against the eager one in interleaved rounds, in one namespace, the order alternating
(A B, then B A): each arm repeats the cell for at least ``MIN_ARM_SECONDS``, each round gives
a ratio eager/compiled time, and the measured gain is the median ratio [IQR]. The compile
itself (and a recompile for a last smaller batch) is run before the rounds and left out.

    .venv/bin/python bench/compile_gain.py [--rounds N] [--only NAME] [--skip-timing] [--skip-profile]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy_workloads import (
    _IMPORTS,
    FEATURIZE_INFERENCE,
    MLP12_INFERENCE,
    RESNET_INFERENCE,
    SMALL_OPS_INFERENCE,
    Workload,
)

MIN_ARM_SECONDS = 1.0
ROUNDS = 7

# One large matmul per step: its time is the matmul's compute, which compiling leaves as it is.
BIG_MATMUL_INFERENCE = Workload("big_matmul_inference", "inference, one Linear(1024, 1024) at batch 512", _IMPORTS + """
torch.set_num_threads(1)
model = nn.Linear(1024, 1024).eval()
test_ds = TensorDataset(torch.randn(512 * 6, 1024))
test_loader = DataLoader(test_ds, batch_size=512)
""", """\
with torch.no_grad():
    for (x,) in test_loader:
        out = model(x)
        samples += len(x)
""")
# A Python featuriser, then a model of small operators: compiling the model (not the featuriser) pays.
FEATURIZE_SMALL_OPS = Workload("featurize_small_ops", "inference, a Python featuriser, then 12 x (Linear(64) + GELU "
                               "+ LayerNorm) at batch 8", _IMPORTS + """
torch.set_num_threads(1)
import zlib
import nbprofiler
words = [f"w{i}" for i in range(500)]
texts = [" ".join(words[(7 * i + j) % 500] for j in range(60)) for i in range(8 * 100)]

def featurize(text):
    counts = [0.0] * 64
    for token in text.split():
        counts[zlib.crc32(token.encode()) % 64] += 1.0
    return torch.tensor(counts)

model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64)) for _ in range(12)]).eval()
""", """\
with torch.no_grad():
    for i in range(0, len(texts), 8):
        feats = torch.stack([featurize(t) for t in texts[i:i + 8]])
        out = model(feats)
        nbprofiler.step()
        samples += len(feats)
""")
WORKLOADS = (FEATURIZE_INFERENCE, FEATURIZE_SMALL_OPS, RESNET_INFERENCE, MLP12_INFERENCE, SMALL_OPS_INFERENCE,
             BIG_MATMUL_INFERENCE)


def arm_seconds(cell: str, ns: dict[str, Any]) -> float:
    """Seconds per pass of ``cell``, repeated for at least ``MIN_ARM_SECONDS``."""
    gc.collect()
    passes, start = 0, time.perf_counter()
    while True:
        exec(cell, ns)
        passes += 1
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_ARM_SECONDS:
            return elapsed / passes


def measured(w: Workload, rounds: int) -> tuple[list[float], float]:
    """Per-round ratios eager/compiled pass time, and the compile's seconds."""
    import torch

    torch._dynamo.reset()
    module = types.ModuleType(f"compile_gain_{w.name}")  # dynamo reads a traced class's globals from its module
    sys.modules[module.__name__] = module
    ns = module.__dict__
    exec(w.setup, ns)
    eager = ns["model"]
    compiled = torch.compile(eager)
    ns["model"] = compiled
    start = time.perf_counter()
    exec(w.cell, ns)  # compiles (and recompiles for a last smaller batch)
    exec(w.cell, ns)
    compile_s = time.perf_counter() - start
    ratios = []
    for i in range(rounds):
        order = (eager, compiled) if i % 2 == 0 else (compiled, eager)
        took = {}
        for model in order:
            ns["model"] = model
            took[model is compiled] = arm_seconds(w.cell, ns)
        ratios.append(took[False] / took[True])
    return ratios, compile_s


def estimate(shell: Any, w: Workload) -> str:
    """The compile card's estimate for one profiled pass of ``w``, or the rule's reason for none."""
    from IPython.utils.capture import capture_output

    with capture_output():
        shell.run_cell(w.setup).raise_error()
        shell.run_cell("%%torchprofile -q -o report\n" + w.cell).raise_error()
    report = shell.user_ns["report"]
    shell.run_line_magic("reset", "-f")
    cards = [s for s in report.suggestions if s.kind == "compile"]
    if cards:
        s = cards[0]
        return (f"card: {s.gain:.2f}x ({s.gain_low:.2f}–{s.gain_high:.2f}), {s.evidence}\n    code: "
                + (s.code or "").splitlines()[0])
    from nbprofiler.advice.rules import verdicts as all_verdicts
    verdicts = [v for v in all_verdicts(report) if v.check == "many small operators on CPU"]
    return "no card" + (f": {verdicts[0].figures or verdicts[0].reason} {verdicts[0].evidence}" if verdicts else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--only", help="one workload's name")
    parser.add_argument("--skip-timing", action="store_true", help="print the estimates only")
    parser.add_argument("--skip-profile", action="store_true", help="print the timings only")
    args = parser.parse_args(argv)
    workloads = [w for w in WORKLOADS if args.only in (None, w.name)]
    shell = None
    if not args.skip_profile:
        from IPython.testing.globalipapp import start_ipython
        shell = start_ipython()
        shell.run_line_magic("load_ext", "nbprofiler")
    for w in workloads:
        print(f"{w.name}: {w.what}", flush=True)
        if shell is not None:
            print("  " + estimate(shell, w), flush=True)
        if not args.skip_timing:
            ratios, compile_s = measured(w, args.rounds)
            q1, med, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
            print(f"  measured compiled: {statistics.median(ratios):.2f}x [IQR {q1:.2f}–{q3:.2f}] over "
                  f"{len(ratios)} rounds (compile {compile_s:.0f} s); ratios "
                  + " ".join(f"{r:.2f}" for r in ratios), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
