"""The live CUDA path of ``%%torchprofile``, checked on a real GPU in one process.

Why: the analysis is tested on traces recorded elsewhere, but the live path (CUPTI kernels
in the run's own trace, CUDA memory read per step, the report built and shown after a real
CUDA loop) only runs where a GPU is. ``bench/device_check.sh`` runs this script on the GPU
machine, in one call, so it checks everything a user would look at and writes the figures.

In a real IPython shell (``start_ipython``, as the tests' ``ip`` fixture) with the extension
loaded, two small models train for ``STEPS`` steps under ``%%torchprofile -o run --shapes`` with the
default schedule (wait 1, warmup 1, active 3): a CNN (conv, batch norm, SGD with momentum)
and a Transformer (``nn.TransformerEncoder``, AdamW, whose state appears at the first step).
Each workload runs three times from the same seed: once to warm up (cuDNN, cuBLAS), once
unprofiled with torch's own memory counters read around the loop, once profiled. Checked:

* breakdown: each step's categories add up to its total, which is the stretched step's
  span; the kernel share is above 0 (CUDA).
* kernels: the table is not empty, every kernel has device time, the breakdown's kernel
  time is at most the kernels' summed time, operators have device self time (CUDA).
* memory per step: the report's ``mem_allocated_bytes`` and ``mem_reserved_bytes`` equal
  what the cell reads itself right after ``opt.step()`` (where the step ends); the largest
  ``mem_peak_bytes`` and the last ``mem_reserved_bytes`` agree with
  ``torch.cuda.max_memory_allocated`` / ``memory_reserved`` of the unprofiled run
  (``UNPROFILED_REL``, ``UNPROFILED_ABS``); each step's peak is at least its allocated.
* the report as shown (text, HTML, data payload), its summary, and the exported trace,
  which loads back with the same breakdown.
* FLOPs (the profiled run records shapes, ``--shapes``): the summary's ``flops_per_step``
  equals torch's ``FlopCounterMode`` over one more step; MFU is known and in (0, 1] (CUDA).
* the wait for the report: ``time.perf_counter()`` taken by the cell after its loop, to the
  report's last display and to the cell's end (figures, not checks).

Without CUDA the same workloads run on the CPU, smaller; the CUDA-only checks read
"skipped: no CUDA", and per-step RSS is compared with the cell's own read instead, so the
comparison path runs here too.

    python bench/device_check.py OUT_DIR               # writes OUT_DIR/device_check.json and the traces
    python bench/device_check.py OUT_DIR --overhead 5  # bench/overhead.py, its workload on the device

Exit status 1 when a check failed.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import numpy as np  # noqa: E402 - the repository goes on sys.path first
import pandas as pd  # noqa: E402
import psutil  # noqa: E402
import torch  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
NO_CUDA = "skipped: no CUDA"
STEPS = 8  # the default schedule records steps 2-4; steps 5-7 run unrecorded, as after a user's schedule
TOP_KERNELS = 10
MIB = 1 << 20
# The cell reads torch.cuda's counters right after opt.step(), as the sampler does when the
# step ends there: nothing allocates in between, so they agree to the byte.
SAME_READ_ABS = 0
# RSS moves between the sampler's read and the cell's (the profiler starts, stops and
# exports its trace at step boundaries), so the CPU stand-in allows for that.
RSS_REL, RSS_ABS = 0.10, 64 * MIB
# The unprofiled run allocates the same tensors; the profiler allocates nothing on the
# device, so what is left is the caching allocator's rounding.
UNPROFILED_REL, UNPROFILED_ABS = 0.02, 4 * MIB

PRELUDE = """
import gc, time
import torch, torch.nn as nn, torch.nn.functional as F
for _name in ("model", "opt", "batches", "x", "y", "loss", "run"):
    globals().pop(_name, None)
gc.collect()
if torch.cuda.is_available():
    torch.cuda.empty_cache()
torch.manual_seed(0)
DEV, STEPS, _probes = {device!r}, {steps}, []
"""
LOOP = """
for i in range(STEPS):
    x, y = batches[i]
    loss = loss_fn(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    _probes.append(_probe())
_t_loop_end = time.perf_counter()
"""


def cnn_setup(cuda: bool) -> str:
    """A small CIFAR-shaped CNN with batch norm, SGD with momentum, batches already on the device."""
    width, batch = (64, 256) if cuda else (8, 16)
    return PRELUDE.format(device=DEVICE, steps=STEPS) + f"""
C, B = {width}, {batch}
model = nn.Sequential(
    nn.Conv2d(3, C, 3, padding=1), nn.BatchNorm2d(C), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(C, 2 * C, 3, padding=1), nn.BatchNorm2d(2 * C), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(2 * C, 4 * C, 3, padding=1), nn.BatchNorm2d(4 * C), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    nn.Flatten(), nn.Linear(4 * C, 10)).to(DEV)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
batches = [(torch.randn(B, 3, 32, 32, device=DEV), torch.randint(0, 10, (B,), device=DEV)) for _ in range(STEPS)]
loss_fn = F.cross_entropy
"""


def transformer_setup(cuda: bool) -> str:
    """A small token model: embedding, ``nn.TransformerEncoder``, a vocabulary head; AdamW."""
    vocab, width, heads, layers, batch, seq = (8192, 512, 8, 4, 32, 256) if cuda else (512, 64, 4, 2, 4, 32)
    return PRELUDE.format(device=DEVICE, steps=STEPS) + f"""
V, D, H, L, B, T = {vocab}, {width}, {heads}, {layers}, {batch}, {seq}
class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        layer = nn.TransformerEncoderLayer(D, H, 4 * D, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
        self.head = nn.Linear(D, V)
    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))
model = TinyLM().to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
batches = [(torch.randint(0, V, (B, T), device=DEV), torch.randint(0, V, (B, T), device=DEV)) for _ in range(STEPS)]
loss_fn = lambda logits, y: F.cross_entropy(logits.flatten(0, 1), y.flatten())
"""


WORKLOADS: dict[str, Callable[[bool], str]] = {"cnn": cnn_setup, "transformer": transformer_setup}


@dataclass
class Checks:
    """Every check's outcome, as rows for the JSON and the printed table."""

    rows: list[dict[str, str]] = field(default_factory=list)

    def add(self, workload: str, check: str, ok: bool, detail: str) -> None:
        self.rows.append({"workload": workload, "check": check, "status": "pass" if ok else "FAIL", "detail": detail})
        print(f"  [{'pass' if ok else 'FAIL'}] {check}: {detail}", flush=True)

    def skip(self, workload: str, check: str, reason: str = NO_CUDA) -> None:
        self.rows.append({"workload": workload, "check": check, "status": reason, "detail": ""})
        print(f"  [{reason}] {check}", flush=True)

    @property
    def failed(self) -> list[dict[str, str]]:
        return [r for r in self.rows if r["status"] == "FAIL"]


def probe() -> dict[str, float]:
    """What the sampler records when a step ends, read again by the cell after ``opt.step()``;
    the keys are ``report.steps`` columns."""
    if CUDA:
        return {"mem_allocated_bytes": float(torch.cuda.memory_allocated()),
                "mem_reserved_bytes": float(torch.cuda.memory_reserved())}
    return {"rss_bytes": float(psutil.Process().memory_info().rss)}


def sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def within(value: float, reference: float, rel: float, absolute: float) -> bool:
    return abs(value - reference) <= max(rel * abs(reference), absolute)


def plain(value: Any) -> Any:
    """``value`` as JSON: numpy scalars as Python numbers, NaN as null, frames as records."""
    if isinstance(value, pd.DataFrame):
        return [plain(r) for r in value.to_dict("records")]
    if isinstance(value, pd.Series):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def device_facts() -> dict[str, Any]:
    facts: dict[str, Any] = {"python": sys.version.split()[0], "torch": torch.__version__,
                             "torch_cuda": torch.version.cuda, "cuda_available": CUDA}
    if CUDA:
        props = torch.cuda.get_device_properties(0)
        facts.update(name=props.name, capability=f"{props.major}.{props.minor}", sm_count=props.multi_processor_count,
                     total_memory_bytes=props.total_memory, cudnn=torch.backends.cudnn.version())
    return facts


def unprofiled_run(shell: Any, setup: str) -> dict[str, float]:
    """The loop without the profiler, with torch's own counters read around it."""
    shell.run_cell(setup).raise_error()
    sync()
    if CUDA:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    shell.run_cell(LOOP).raise_error()
    sync()
    figures = {"loop_s": time.perf_counter() - start}
    if CUDA:
        figures.update(peak_allocated_bytes=float(torch.cuda.max_memory_allocated()),
                       reserved_bytes=float(torch.cuda.memory_reserved()))
    return figures


def profiled_run(shell: Any, setup: str) -> tuple[Any, list[dict[str, float]], dict[str, float | None], dict]:
    """The loop under ``%%torchprofile -o run`` as a notebook cell: (report, the cell's own reads
    per step, the wait from the loop's end, the bundle shown)."""
    from IPython.utils.capture import capture_output

    shell.run_cell(setup).raise_error()
    published: list[float] = []
    with capture_output() as captured:
        publisher = shell.display_pub  # capture_output's own: time each display it receives
        publish = publisher.publish

        def timed(*args: Any, **kwargs: Any) -> Any:
            result = publish(*args, **kwargs)
            published.append(time.perf_counter())
            return result

        publisher.publish = timed
        result = shell.run_cell("%%torchprofile -o run --shapes\n" + LOOP)
        done = time.perf_counter()
    if not result.success:
        print(captured.stdout, captured.stderr, sep="\n")
    result.raise_error()
    ns = shell.user_ns
    loop_end = ns["_t_loop_end"]
    wait = {"loop_end_to_report_shown_s": published[-1] - loop_end if published else None,
            "loop_end_to_cell_done_s": done - loop_end}
    bundle = captured.outputs[-1].data if captured.outputs else {}
    return ns["run"], list(ns["_probes"]), wait, bundle


def check_breakdown(checks: Checks, name: str, report: Any) -> dict[str, Any]:
    from nbprofiler.analysis.breakdown import CATEGORIES

    breakdown = report.breakdown
    total = breakdown["total"].to_numpy(dtype=float)
    gap = np.abs(breakdown[[*CATEGORIES, "other"]].sum(axis=1).to_numpy() - total)
    checks.add(name, "breakdown: categories add up to each step's total",
               len(breakdown) > 0 and bool((gap <= 1e-6 * total + 1e-3).all()),
               f"{len(breakdown)} steps, largest gap {gap.max(initial=0):.3g} µs")
    spans = report.stretched_steps
    span = (spans["end_us"] - spans["start_us"]).to_numpy(dtype=float)
    checks.add(name, "breakdown: each step's total is its span", len(span) == len(total) and np.allclose(total, span),
               f"totals {np.round(total).tolist()} µs")
    shares = report.breakdown_shares()
    if CUDA:
        checks.add(name, "breakdown: kernel share > 0", shares["kernel"] > 0, f"{shares['kernel']:.1%}")
    else:
        checks.skip(name, "breakdown: kernel share > 0")
    return {"per_step_us": plain(breakdown), "shares": plain(shares)}


def check_kernels(checks: Checks, name: str, report: Any) -> dict[str, Any]:
    kernels = report.kernels
    if not CUDA:
        for check in ("kernels: table not empty", "kernels: every kernel's device time > 0",
                      "kernels: breakdown kernel time <= summed kernel time", "operators: device self time > 0"):
            checks.skip(name, check)
        return {"rows": len(kernels)}
    summed = float(kernels["total_us"].sum())
    busy = float(report.breakdown["kernel"].sum())
    checks.add(name, "kernels: table not empty", len(kernels) > 0, f"{len(kernels)} kernel names")
    checks.add(name, "kernels: every kernel's device time > 0",
               len(kernels) > 0 and bool((kernels["total_us"] > 0).all()), f"{summed:.0f} µs in all")
    # CUPTI's timestamps are µs since the epoch (about 5.5e12) with ns fractions: float64 holds
    # them to 2**-10 µs, so each kernel's interval, clipped and merged in the breakdown, may
    # round by about 1 ns at either end (the transformer's 1,100 kernels once summed 4 ns over).
    calls = int(kernels["calls"].sum())
    rounding = 2 * 2.0**-10 * calls
    checks.add(name, "kernels: breakdown kernel time <= summed kernel time", busy <= summed + rounding,
               f"{busy:.3f} µs <= {summed:.3f} µs (+ {rounding:.3f} µs of rounding over {calls} kernels)")
    device_self = float(report.operators["device_self_us"].sum())
    checks.add(name, "operators: device self time > 0", device_self > 0, f"{device_self:.0f} µs")
    top = kernels.head(TOP_KERNELS)[["name", "calls", "total_us", "mean_us", "tensor_cores", "operator"]]
    return {"rows": len(kernels), "total_us": summed, "top": plain(top)}


def check_reads(checks: Checks, name: str, steps: pd.DataFrame, reads: list[dict[str, float]]) -> None:
    """The report's per-step memory against the cell's own reads at each step's end."""
    rel, absolute = (0.0, SAME_READ_ABS) if CUDA else (RSS_REL, RSS_ABS)
    for column in reads[0] if reads else ():
        ours = np.array([r[column] for r in reads])
        theirs = steps[column].to_numpy(dtype=float) if column in steps else np.array([])
        ok = len(theirs) == len(ours) == STEPS and all(map(within, theirs, ours, [rel] * STEPS, [absolute] * STEPS))
        gap = np.abs(theirs - ours).max() if len(theirs) == len(ours) else float("nan")
        checks.add(name, f"memory: {column} per step = the cell's read after opt.step()", ok,
                   f"{len(theirs)} steps, largest gap {gap:.0f} B (allowed {rel:.0%} or {absolute} B)")


def check_memory(checks: Checks, name: str, report: Any, reads: list[dict[str, float]],
                 unprofiled: dict[str, float]) -> dict[str, Any]:
    steps = report.steps
    check_reads(checks, name, steps, reads)
    names = ("memory: largest mem_peak_bytes ~ torch.cuda.max_memory_allocated (unprofiled run)",
             "memory: last mem_reserved_bytes ~ torch.cuda.memory_reserved (unprofiled run)",
             "memory: each step's peak >= its allocated")
    if not CUDA:
        for check in names:
            checks.skip(name, check)
        return {"steps": plain(steps), "unprofiled": plain(unprofiled)}
    peak, reserved = float(steps["mem_peak_bytes"].max()), float(steps["mem_reserved_bytes"].iloc[-1])
    allowed = f"allowed {UNPROFILED_REL:.0%} or {UNPROFILED_ABS // MIB} MiB"
    checks.add(name, names[0], within(peak, unprofiled["peak_allocated_bytes"], UNPROFILED_REL, UNPROFILED_ABS),
               f"{peak / MIB:.1f} MiB vs {unprofiled['peak_allocated_bytes'] / MIB:.1f} MiB ({allowed})")
    checks.add(name, names[1], within(reserved, unprofiled["reserved_bytes"], UNPROFILED_REL, UNPROFILED_ABS),
               f"{reserved / MIB:.1f} MiB vs {unprofiled['reserved_bytes'] / MIB:.1f} MiB ({allowed})")
    checks.add(name, names[2], bool((steps["mem_peak_bytes"] >= steps["mem_allocated_bytes"]).all()),
               f"peaks {(steps['mem_peak_bytes'] / MIB).round(1).tolist()} MiB")
    return {"steps": plain(steps), "unprofiled": plain(unprofiled)}


def check_shown(checks: Checks, name: str, report: Any, bundle: dict, trace: Path) -> None:
    """What the user sees and keeps: the bundle under the cell, and the trace saved and loaded back."""
    import nbprofiler
    from nbprofiler.render.frontend import MIME_TYPE

    shown = {"text/plain", "text/html", MIME_TYPE} <= set(bundle)
    checks.add(name, "report shown with text, HTML and its data", shown, ", ".join(sorted(bundle)))
    if CUDA:
        checks.add(name, "report's device is the GPU", report.device.kind == "cuda", str(report.device.as_dict()))
    else:
        checks.skip(name, "report's device is the GPU")
    report.export_chrome_trace(trace)
    loaded = nbprofiler.load(trace)
    same = np.allclose(loaded.breakdown["total"].to_numpy(float), report.breakdown["total"].to_numpy(float))
    checks.add(name, "exported trace loads back with the same breakdown", same,
               f"{trace.name}, {trace.stat().st_size / MIB:.2f} MiB")


# One more training step of the cell's model, counted by torch's own FlopCounterMode.
FLOP_COUNT = """
from torch.utils.flop_counter import FlopCounterMode
x, y = batches[0]
with FlopCounterMode(display=False) as _counter:
    loss = loss_fn(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
_torch_flops = _counter.get_total_flops()
"""


def check_flops(checks: Checks, name: str, report: Any, shell: Any) -> dict[str, Any]:
    """FLOPs per step (recorded with ``--shapes``) against torch's FlopCounterMode over one more
    step, and MFU against the device's spec-sheet peak where it is known (on a GPU it must be)."""
    shell.run_cell(FLOP_COUNT).raise_error()
    reference = shell.user_ns["_torch_flops"]
    summary = report.summary
    ours, mfu = summary.get("flops_per_step"), summary.get("mfu")
    checks.add(name, "flops per step = torch's FlopCounterMode over one step", ours == reference,
               f"{ours} vs {reference}")
    if CUDA:
        checks.add(name, "mfu known, 0 < mfu <= 1", mfu is not None and 0 < mfu <= 1,
                   f"{mfu} ({summary.get('mfu_dtype')}, {summary.get('achieved_flops_per_s')} FLOP/s)")
    else:
        checks.skip(name, "mfu known, 0 < mfu <= 1")
    print(f"  flops per step: {ours} (FlopCounterMode {reference}); mfu: {mfu} ({summary.get('mfu_dtype')})",
          flush=True)
    return {"flops_per_step": plain(ours), "torch_flop_counter": reference, "mfu": plain(mfu),
            "mfu_dtype": summary.get("mfu_dtype")}


def run_workload(shell: Any, name: str, setup: str, checks: Checks, out: Path) -> dict[str, Any]:
    print(f"== {name} on {DEVICE}: warm-up, unprofiled, profiled ({STEPS} steps each)", flush=True)
    shell.run_cell(setup).raise_error()
    shell.run_cell(LOOP).raise_error()  # warm-up: cuDNN/cuBLAS handles and workspaces, lazy modules
    unprofiled = unprofiled_run(shell, setup)
    report, reads, wait, bundle = profiled_run(shell, setup)
    print(f"  report wait: {plain(wait)}", flush=True)
    figures: dict[str, Any] = {"wait": plain(wait), "unprofiled_loop_s": unprofiled["loop_s"]}
    figures["breakdown"] = check_breakdown(checks, name, report)
    figures["kernels"] = check_kernels(checks, name, report)
    figures["memory"] = check_memory(checks, name, report, reads, unprofiled)
    check_shown(checks, name, report, bundle, out / f"{name}_{DEVICE}.pt.trace.json.gz")
    figures["summary"] = plain(report.summary)
    figures["flops"] = check_flops(checks, name, report, shell)
    figures["device"] = plain(report.device.as_dict())
    figures["notes"] = list(report.notes)
    figures["suggestions"] = [f"{s.kind}: {s.title}" for s in report.suggestions]
    figures["report_text"] = bundle.get("text/plain", "")
    return figures


def start_shell() -> Any:
    """A real IPython shell with the extension loaded and a notebook's output types on."""
    from IPython.testing.globalipapp import start_ipython

    from nbprofiler.render.frontend import MIME_TYPE

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    shell.display_formatter.active_types = ["text/plain", "text/html", MIME_TYPE]
    shell.user_ns["_probe"] = probe
    return shell


def check_workloads(out: Path) -> int:
    # The runs go to a history of their own, never the user's (as the tests' session_history).
    os.environ.setdefault("NBPROFILER_HISTORY", str(Path(tempfile.mkdtemp(prefix="nbprofiler-device-")) / "h.sqlite"))
    shell = start_shell()
    checks = Checks()
    results: dict[str, Any] = {"device": device_facts(), "steps": STEPS, "workloads": {}}
    print(json.dumps(results["device"]), flush=True)
    for name, setup in WORKLOADS.items():
        start = time.perf_counter()
        try:
            results["workloads"][name] = run_workload(shell, name, setup(CUDA), checks, out)
        except Exception:  # noqa: BLE001 - one workload's failure must not cost the other's figures
            traceback.print_exc()
            checks.add(name, "workload ran to its report", False, traceback.format_exc(limit=-1).strip()[-400:])
        results["workloads"].setdefault(name, {})["seconds"] = time.perf_counter() - start
        results["checks"] = checks.rows
        # Written after each workload: a step that runs out of time keeps what it measured.
        (out / "device_check.json").write_text(json.dumps(results, indent=1))
    counts = pd.Series([r["status"] for r in checks.rows]).value_counts().to_dict()
    print(f"== checks: {counts}; {out / 'device_check.json'}", flush=True)
    for row in checks.failed:
        print(f"FAILED {row['workload']}: {row['check']}: {row['detail']}")
    return 1 if checks.failed else 0


def overhead_setup() -> str:
    """bench/overhead.py's workload on this device; its hand-written profile records what the
    magic records there (CUDA activity too on a GPU)."""
    from workload import conv_training_setup

    return conv_training_setup(1024) + f"""
import torch.profiler as tp
DEV = {DEVICE!r}
ACTIVITIES = [tp.ProfilerActivity.CPU] + ([tp.ProfilerActivity.CUDA] if DEV == "cuda" else [])
model = model.to(DEV)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = DataLoader(TensorDataset(*(t.to(DEV) for t in loader.dataset.tensors)), batch_size=32)
"""


def check_overhead(runs: int, profile: int) -> int:
    """bench/overhead.py's own measurement (its ``main``), with the workload on this device;
    ``profile`` > 0 prints that many of the magic's costliest functions after it."""
    import overhead

    hand = overhead.HAND.replace("activities=[tp.ProfilerActivity.CPU]", "activities=ACTIVITIES")
    if hand == overhead.HAND:
        print("bench/overhead.py's hand-written profile no longer names its activities as expected", file=sys.stderr)
        return 1
    overhead.SETUP, overhead.HAND = overhead_setup(), hand
    print(f"== overhead on {DEVICE} (bench/overhead.py, {runs} runs of each, the model and batches on {DEVICE})",
          flush=True)
    overhead.main(runs, profile)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--overhead", type=int, metavar="RUNS", help="run bench/overhead.py's measurement instead")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="with --overhead: then print the magic's N costliest functions (cProfile)")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.overhead:
        return check_overhead(args.overhead, args.profile)
    return check_workloads(args.out_dir)


if __name__ == "__main__":
    sys.exit(main())
