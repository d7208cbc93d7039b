"""Does the advice hold? Each suggestion's code, pasted into the loop it was made for,
against the gain the suggestion states.

For each workload of bench/accuracy_workloads.py (CPU, deterministic seeds, fixed
thread counts): run its setup in a real IPython shell, profile the loop once with
``%%torchprofile -q -o report`` and take ``report.suggestions``. Then each suggestion
with code is applied as a user pastes it: where its evidence names a cell ``line``,
the code replaces that line (the statement the fix is for); otherwise the code runs
after the setup, before the loop (``train_loader = DataLoader(...)``,
``model = torch.compile(model)``).

Speed: interleaved rounds (5, or 3 with ``--quick``), each running the loop as it was
(baseline) and with the change (applied), in the order A B then B A, each arm in a
fresh namespace built from the setup. Each run is timed in samples/s over the whole
loop (the cell counts ``samples``), and each round gives a ratio applied/baseline.
The measured speed-up is the median ratio, its spread half the interquartile range.
A ``torch.compile`` change is run once first, with an empty inductor cache, timed as its
compile cost (stated in the table) and left out of the rounds; later fresh namespaces
reuse the compiled code.

Memory: the memory-growth suggestion claims no speed-up but that memory stops
growing, so it is measured on that: after one pass of the loop, the bytes that the
autograd graphs of live tensors alone hold (saved activations, nothing owned by a
tensor without a graph), before and after the fix.

A claim is flagged when the measurement falls outside it by more than the spread:
"at most G" when measured > G + spread, or the change made the loop slower
(measured < 1 - spread); an estimate lo–hi when measured is outside
[lo - spread, hi + spread]; code that fails when pasted, and a leak fix after which
graphs are still kept, are flagged too. Prints each workload's figures (steps, step
time, data-wait share), each suggestion's code, then the table. Exits 1 when any claim
is flagged.

    .venv/bin/python bench/advice_accuracy.py [--quick] [--only NAME]
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy_workloads import WORKLOADS, Workload  # noqa: E402 - bench/ is on sys.path

from nbprofiler.advice.suggestion import Suggestion  # noqa: E402 - the repository is on sys.path
from nbprofiler.measure import rounds  # noqa: E402 - the same

ROUNDS = 5
QUICK_ROUNDS = 3
MIN_ARM_SECONDS = 1.0  # each arm of a round repeats its cell until this long: a 60 ms pass is mostly noise
MAGIC = "%%torchprofile -q -o report\n"


# -- the verdict on one claim (pure) ---------------------------------------------------------------
def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile, as the measuring tools take them from their
    rounds (``nbprofiler.measure.rounds``: interpolated between measured ratios, never beyond)."""
    q = rounds.quartiles(pd.DataFrame({"ratio": list(values)})).loc["ratio"]
    return float(q["low"]), float(q["median"]), float(q["high"])


def spread(values: Sequence[float]) -> float:
    """Half the interquartile range of the per-round ratios: how far the median can move with
    machine noise, so that a claim is only called broken beyond it."""
    q1, _, q3 = quartiles(values)
    return (q3 - q1) / 2


def stated(claim: str, gain: float, low: float | None = None, high: float | None = None) -> str:
    """A suggestion's claim as the table shows it: "at most G×", or "about G× (lo–hi×)"."""
    if claim == "estimate":
        return f"about {gain:.2f}× ({low:.2f}–{high:.2f}×)"
    return f"at most {gain:.2f}×"


def broken_claim(claim: str, gain: float, low: float, high: float, measured: float, noise: float) -> str | None:
    """Why ``measured`` (the median speed-up) breaks the claim by more than ``noise`` (the
    spread), or None when the claim holds. An "at most" bound promises no slowdown either:
    a change that makes the loop slower should not have been suggested with a gain."""
    if claim == "estimate":
        if measured < low - noise:
            return f"below the estimate: {measured:.2f}× < {low:.2f}× - {noise:.2f}"
        if measured > high + noise:
            return f"above the estimate: {measured:.2f}× > {high:.2f}× + {noise:.2f}"
        return None
    if measured > gain + noise:
        return f"bound broken: {measured:.2f}× > {gain:.2f}× + {noise:.2f}"
    if measured < 1.0 - noise:
        return f"slower: {measured:.2f}× < 1 - {noise:.2f}"
    return None


def paste(cell: str, code: str, evidence: dict[str, Any]) -> tuple[str, str]:
    """The code to run before the loop and the loop, once ``code`` is pasted as a user would:
    in place of the cell line the evidence names (1-based; through ``end_line`` where given),
    indented as that line, or else above the loop."""
    line = evidence.get("line")
    if not isinstance(line, int) or isinstance(line, bool):
        return code, cell
    lines = cell.splitlines()
    end = evidence.get("end_line", line)
    old = lines[line - 1]
    indent = old[:len(old) - len(old.lstrip())]
    new = code.splitlines()
    if not new[0].startswith(indent):
        new = [indent + n if n else n for n in new]
    return "", "\n".join(lines[:line - 1] + new + lines[end:]) + "\n"


# -- running the workloads -------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One line of the table."""

    workload: str
    kind: str
    stated: str
    measured: str
    verdict: str
    flagged: bool = False


def run_loop(setup: str, before: str, cell: str, min_seconds: float = 0.0) -> tuple[float, dict[str, Any]]:
    """Samples/s of ``cell`` in a fresh namespace built from ``setup`` and ``before``: one pass,
    or as many as fill ``min_seconds`` (a short cell timed once is mostly noise); the
    namespace comes back so that a caller can look at what it kept."""
    ns: dict[str, Any] = {"__name__": "__bench__"}
    exec(setup, ns)
    exec(before, ns)
    gc.collect()
    start = time.perf_counter()
    exec(cell, ns)
    while time.perf_counter() - start < min_seconds:
        exec(cell, ns)
    elapsed = time.perf_counter() - start
    return ns["samples"] / elapsed, ns


def loop_rate(setup: str, before: str, cell: str) -> float:
    """``run_loop``'s samples/s over at least ``MIN_ARM_SECONDS``; the namespace is dropped
    at once, so that its DataLoader workers stop before the next run."""
    rate, ns = run_loop(setup, before, cell, MIN_ARM_SECONDS)
    ns.clear()
    gc.collect()
    return rate


def interleaved(w: Workload, before: str, cell: str, rounds: int) -> list[float]:
    """Per-round ratios applied/baseline, the order alternating round by round."""
    ratios = []
    for i in range(rounds):
        if i % 2 == 0:
            base = loop_rate(w.setup, "", w.cell)
            applied = loop_rate(w.setup, before, cell)
        else:
            applied = loop_rate(w.setup, before, cell)
            base = loop_rate(w.setup, "", w.cell)
        ratios.append(applied / base)
    return ratios


def speed_row(w: Workload, s: Suggestion, code: str, rounds: int) -> Row:
    """Paste the suggestion's ``code``, time it against the loop as it was, and judge its claim."""
    low, high = s.gain_range
    claim = stated(s.claim, s.gain, low, high)
    before, cell = paste(w.cell, code, s.evidence)
    mismatch = _line_mismatch(w.cell, s.evidence)
    if mismatch:
        return Row(w.name, s.kind, claim, "—", mismatch, True)
    try:
        loop_rate(w.setup, "", w.cell)  # warm-up, untimed
        start = time.perf_counter()
        loop_rate(w.setup, before, cell)  # the first run: a compile happens here, and a failing paste shows
        first = time.perf_counter() - start
    except Exception as e:  # noqa: BLE001 - any failure of pasted code is the finding
        return Row(w.name, s.kind, claim, "—", f"code fails when pasted: {type(e).__name__}: {e}", True)
    note = ""
    if "torch.compile" in code:
        note = f"; compile run {first:.0f} s (left out)"
    ratios = interleaved(w, before, cell, rounds)
    q1, median, q3 = quartiles(ratios)
    why = broken_claim(s.claim, s.gain, low, high, median, spread(ratios))
    return Row(w.name, s.kind, claim, f"{median:.2f}× [IQR {q1:.2f}–{q3:.2f}]{note}", why or "holds", why is not None)


def _line_mismatch(cell: str, evidence: dict[str, Any]) -> str:
    """A finding when the line the evidence names is not the statement it quotes."""
    line, text = evidence.get("line"), evidence.get("line_source")
    if not isinstance(line, int) or text is None:
        return ""
    lines = cell.splitlines()
    if not 1 <= line <= len(lines) or lines[line - 1].strip() != str(text).strip().splitlines()[0].strip():
        return f"evidence names line {line} as `{text}`, which is not that line of the cell"
    return ""


def kept_graph_bytes() -> int:
    """Bytes of saved tensors that the autograd graphs of live tensors alone hold (storages of
    tensors without a graph, such as parameters and data, not counted): what a loop that keeps
    its tensors with their graphs leaves behind."""
    import torch

    gc.collect()
    with warnings.catch_warnings():  # isinstance on deprecated torch module attributes warns
        warnings.simplefilter("ignore")
        tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    owned = {_storage(t)[0] for t in tensors if t.grad_fn is None}
    saved: dict[int, int] = {}
    nodes: list[Any] = [t.grad_fn for t in tensors if t.grad_fn is not None]
    seen: set[int] = set()
    held = []  # keeps visited node wrappers alive, so that their ids stay unique
    while nodes:
        node = nodes.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        held.append(node)
        for name in dir(node):
            value = _saved(node, name)
            if isinstance(value, torch.Tensor) and _storage(value)[0] not in owned:
                saved.update([_storage(value)])
        nodes.extend(n for n, _ in node.next_functions)
    return sum(saved.values())


def _storage(t: Any) -> tuple[int, int]:
    """A tensor's storage as (data pointer, bytes); (0, 0) for one without data (the fake
    tensors a torch.compile leaves in its caches)."""
    try:
        storage = t.untyped_storage()
        return storage.data_ptr(), storage.nbytes()
    except RuntimeError:
        return 0, 0


def _saved(node: Any, name: str) -> Any:
    """A node's saved tensor, or None (not a saved field, or freed by a backward pass)."""
    if not name.startswith("_saved_"):
        return None
    try:
        return getattr(node, name)
    except RuntimeError:
        return None


def memory_row(w: Workload, s: Suggestion, code: str, steps: int) -> Row:
    """The leak fix (``code``), pasted, against what it claims: after one pass of the loop (``steps``
    steps), graphs no longer hold memory (under 1% of what they held without the fix)."""
    before, cell = paste(w.cell, code, s.evidence)
    claim = "memory stops growing"
    mismatch = _line_mismatch(w.cell, s.evidence)
    if mismatch:
        return Row(w.name, s.kind, claim, "—", mismatch, True)
    kept = []
    for arm_before, arm_cell in (("", w.cell), (before, cell)):
        try:
            _, ns = run_loop(w.setup, arm_before, arm_cell)
        except Exception as e:  # noqa: BLE001 - any failure of pasted code is the finding
            return Row(w.name, s.kind, claim, "—", f"code fails when pasted: {type(e).__name__}: {e}", True)
        kept.append(kept_graph_bytes())
        ns.clear()
        gc.collect()
    measured = (f"graphs hold {kept[0] / 1e6:.1f} MB after {steps} steps ({kept[0] / steps / 1e3:.0f} kB/step) "
                f"→ {kept[1] / 1e6:.1f} MB ({kept[1] / steps / 1e3:.0f} kB/step)")
    stopped = kept[1] <= 0.01 * kept[0]
    return Row(w.name, s.kind, claim, measured, "holds: growth stopped" if stopped else "memory still grows",
               not stopped)


def suggestion_rows(w: Workload, suggestions: Sequence[Suggestion], rounds: int, steps: int) -> list[Row]:
    """One row per suggestion: judged on speed, on memory (the leak fix), or listed."""
    rows = []
    for s in suggestions:
        if s.nothing_to_improve:
            rows.append(Row(w.name, "nothing to improve", "—", "—", "—"))
        elif not s.code:
            rows.append(Row(w.name, s.kind, stated(s.claim, s.gain, *s.gain_range), "—", "no code to paste"))
        elif s.kind == "memory_growth":
            rows.append(memory_row(w, s, s.code, steps))
        else:
            rows.append(speed_row(w, s, s.code, rounds))
    return rows or [Row(w.name, "(no suggestion)", "—", "—", "—")]


def profile(shell: Any, w: Workload) -> Any:
    """The Report of one profiled pass of the loop, in the shell, after its setup."""
    from IPython.utils.capture import capture_output

    with capture_output():
        shell.run_cell(w.setup).raise_error()
        shell.run_cell(MAGIC + w.cell).raise_error()
    report = shell.user_ns["report"]
    shell.run_line_magic("reset", "-f")  # its loaders' workers stop before anything is timed
    gc.collect()
    return report


def figures(report: Any) -> str:
    """What the profile saw: steps, median step time, the share of it spent waiting for data."""
    steps = report.steps
    wait = steps["dataloader_ms"].sum() / max(steps["wall_ms"].sum(), 1e-9)
    return f"{len(steps)} steps, median step {steps['wall_ms'].median():.1f} ms, data wait {wait:.0%} of the time"


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table, flagged rows marked."""
    out = ["| workload | suggestion | stated | measured (median [IQR]) | verdict |", "|---|---|---|---|---|"]
    out += [f"| {r.workload} | {r.kind} | {r.stated} | {r.measured} | {'**FLAG** ' if r.flagged else ''}{r.verdict} |"
            for r in rows]
    return "\n".join(out)


def workload_rows(shell: Any, w: Workload, rounds: int) -> list[Row]:
    """Profile one workload, print its figures and suggestions, and judge each suggestion."""
    report = profile(shell, w)
    print(f"\n== {w.name}: {w.what}\n   {figures(report)}", flush=True)
    for s in report.suggestions:
        print(f"   [{s.kind}] {s.title}")
        if s.code:
            print("     " + s.code.replace("\n", "\n     "))
    found = suggestion_rows(w, report.suggestions, rounds, len(report.steps))
    for r in found:
        print(f"   -> {r.kind}: {r.measured}: {r.verdict}", flush=True)
    return found


@contextmanager
def cold_compile_cache() -> Iterator[None]:
    """An empty inductor cache for this run, so that a compile run costs what a user's first
    compile costs, not a cache hit from an earlier bench run."""
    folder = tempfile.mkdtemp(prefix="advice-accuracy-inductor-")
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if before is None:
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = before
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} rounds instead of {ROUNDS}")
    parser.add_argument("--only", metavar="NAME", choices=[w.name for w in WORKLOADS], help="run one workload")
    args = parser.parse_args(argv)
    rounds = QUICK_ROUNDS if args.quick else ROUNDS

    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    rows: list[Row] = []
    with cold_compile_cache():
        for w in WORKLOADS:
            if not args.only or w.name == args.only:
                rows += workload_rows(shell, w, rounds)
    print(f"\n{rounds} interleaved rounds per suggestion\n")
    print(table(rows))
    flagged = sum(r.flagged for r in rows)
    print(f"\n{flagged} claim(s) flagged" if flagged else "\nno claim broken by more than the spread")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
