"""Does the advice hold? Each suggestion's code, pasted into the loop it was made for,
against the gain the suggestion states; whether identical re-runs give the same advice; and
whether ``%%torchprofile --compare`` tells a 1.3x change and no change apart.

For each workload of bench/accuracy_workloads.py (CPU, deterministic seeds, fixed
thread counts): run its setup in a real IPython shell, profile the loop with
``%%torchprofile -q -o report`` and take ``report.suggestions``. Then each suggestion
with code is applied as a user pastes it: where its evidence names a cell ``line``,
the code replaces that line (the statement the fix is for); otherwise the code runs
after the setup, before the loop (``train_loader = DataLoader(...)``,
``model = torch.compile(model)``). A card whose code is only comments is guidance:
there is nothing to paste, and it is listed as such.

Speed: interleaved rounds (5, or 3 with ``--quick``), each running the loop as it was
(baseline) and with the change (applied), in the order A B then B A, each arm in a
fresh namespace (a module of its own) built from the setup. Each arm runs the loop once
untimed (a model class the setup defines anew is compiled anew), then is timed in samples/s
over whole passes of the loop (the cell counts ``samples``), and each round gives a ratio
applied/baseline.
The measured speed-up is the median ratio, its spread half the interquartile range.
A ``torch.compile`` change is run once first, with an empty inductor cache, timed as its
compile cost (stated in the table) and left out of the rounds; later fresh namespaces
reuse the compiled code where their classes are torch's own (dynamo's caches are emptied between workloads, so that one
workload's graphs never crowd out another's).

Memory: the memory-growth suggestion claims no speed-up but that memory stops
growing, so it is measured on that: after one pass of the loop, the bytes that the
autograd graphs of live tensors alone hold (saved activations, nothing owned by a
tensor without a graph), before and after the fix.

Stability: each workload is profiled R times unchanged (setup and cell re-run;
``--stability R``, 5 by default, 3 with ``--quick``); a re-run agrees when the set of its
suggestion kinds is the workload's most common set.

Compare: the cell of ``COMPARE_KNOB`` is profiled, its knob ``depth`` lowered so that a step
does about 1.3x less work, and the same cell profiled again with ``%%torchprofile -q
--compare`` (default schedule); the reading is the Comparison's own (``changed`` and
the direction of ``speedup``). Then the same with the knob unchanged. Each N times
(``--compare-runs N``, 10 by default); the pair's true speed-up is timed plainly, in
interleaved rounds, and printed beside it.

A row is flagged when the measurement falls outside its claim by more than the spread:
"at most G" when measured > G + spread, or the change made the loop slower
(measured < 1 - spread); an estimate lo–hi when measured is outside
[lo - spread, hi + spread]; code that fails when pasted, and a leak fix after which
graphs are still kept, are flagged too. Prints each workload's figures (steps, step
time, data-wait share), each suggestion's code, the table, then the summary: one
``SUMMARY name: value (target ...): met|MISSED`` line per target. Exits 1 when a target is
missed.

    .venv/bin/python bench/advice_accuracy.py [--quick] [--only NAME|compare] [--stability R]
        [--compare-runs N] [--skip-stability] [--skip-compare]
"""
from __future__ import annotations

import argparse
import gc
import itertools
import os
import shutil
import sys
import tempfile
import time
import types
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy_workloads import COMPARE_DEPTHS, COMPARE_KNOB, WORKLOADS, Workload

from nbprofiler.advice.suggestion import Suggestion
from nbprofiler.measure import rounds

ROUNDS = 5
QUICK_ROUNDS = 3
STABILITY_RUNS = 5
QUICK_STABILITY_RUNS = 3
COMPARE_RUNS = 10
MIN_ARM_SECONDS = 1.0  # each arm of a round repeats its cell until this long: a 60 ms pass is mostly noise
MAGIC = "%%torchprofile -q -o report\n"

# The targets the summary holds the product to.
SLOWER_THAN = 0.97  # a suggestion measured below this (median) made the loop slower
ESTIMATES_HELD = 0.90  # share of estimates whose range holds the measured median
STABLE_SHARE = 0.90  # share of identical re-runs that give the workload's most common suggestion kinds
COMPARE_CORRECT = 0.90  # share of --compare runs that read a 1.3x change "faster", and no change as none

Outcome = Literal["speed", "memory", "paste_failed", "guidance", "no_code", "nothing"]
Reading = Literal["faster", "slower", "no measurable change", "no comparison"]


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


def is_guidance(code: str) -> bool:
    """Whether a card's code is only comments (and blank lines): guidance in words, which
    pasted changes nothing, so there is no code to measure."""
    return all(not line.strip() or line.strip().startswith("#") for line in code.splitlines())


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


# -- the summary (pure) ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One line of the table. ``outcome`` says what was done with the suggestion; a speed row
    carries its claim and measured ``median`` with its ``noise`` (the spread), for the summary."""

    workload: str
    kind: str
    stated: str
    measured: str
    verdict: str
    flagged: bool = False
    outcome: Outcome = "speed"
    claim: str = "at_most"
    low: float = 1.0
    high: float = 1.0
    median: float | None = None
    noise: float = 0.0


@dataclass(frozen=True)
class Target:
    """One line of the summary: a figure and whether it meets its target."""

    name: str
    value: str
    target: str
    met: bool

    def line(self) -> str:
        return f"SUMMARY {self.name}: {self.value} (target {self.target}): {'met' if self.met else 'MISSED'}"


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else f"{part}/0 (none measured)"


def row_targets(rows: Sequence[Row]) -> list[Target]:
    """What the table adds up to: pasted codes that fail, changes measured slower than
    ``SLOWER_THAN``, estimates whose range holds the measured median (strictly: the spread is
    not added), "at most" bounds exceeded beyond the spread, and leak fixes that did not stop
    the growth."""
    speed = [r for r in rows if r.outcome == "speed" and r.median is not None]
    failed = sum(r.outcome == "paste_failed" for r in rows)
    slower = sum(r.median < SLOWER_THAN for r in speed if r.median is not None)
    estimates = [r for r in speed if r.claim == "estimate"]
    held = sum(r.low <= r.median <= r.high for r in estimates if r.median is not None)
    bounds = [r for r in speed if r.claim != "estimate"]
    exceeded = sum(r.median > r.high + r.noise for r in bounds if r.median is not None)
    leaks = sum(r.outcome == "memory" and r.flagged for r in rows)
    guidance = sum(r.outcome == "guidance" for r in rows)
    return [
        Target("pasted_codes_failing", f"{failed} of {failed + len(speed) + sum(r.outcome == 'memory' for r in rows)} "
               f"pasted ({guidance} guidance cards: no code to paste)", "0", failed == 0),
        Target(f"suggestions_below_{SLOWER_THAN}x", f"{slower} of {len(speed)} measured", "0", slower == 0),
        Target("estimates_holding_median", share(held, len(estimates)), f">= {ESTIMATES_HELD:.0%}",
               not estimates or held / len(estimates) >= ESTIMATES_HELD),
        Target("bounds_exceeded", f"{exceeded} of {len(bounds)} 'at most' claims", "0", exceeded == 0),
        Target("leak_fixes_still_growing", str(leaks), "0", leaks == 0),
    ]


def stability(kind_sets: Mapping[str, Sequence[frozenset[str]]]) -> tuple[int, int]:
    """(re-runs that agree, re-runs): a re-run agrees when its set of suggestion kinds is its
    workload's most common set (on a tie, the one seen first)."""
    agree = total = 0
    for sets in kind_sets.values():
        if sets:
            agree += Counter(sets).most_common(1)[0][1]
            total += len(sets)
    return agree, total


def stability_target(kind_sets: Mapping[str, Sequence[frozenset[str]]]) -> Target:
    agree, total = stability(kind_sets)
    return Target("identical_reruns_same_kinds", share(agree, total), f">= {STABLE_SHARE:.0%}",
                  total > 0 and agree / total >= STABLE_SHARE)


def reading(changed: bool, speedup: float | None) -> Reading:
    """A Comparison read as a user reads its verdict: faster or slower when its interval
    excludes 1 (``changed``), else no measurable change."""
    if not changed or speedup is None:
        return "no measurable change"
    return "faster" if speedup > 1 else "slower"


def compare_targets(change: Sequence[Reading], same: Sequence[Reading]) -> list[Target]:
    """The ``--compare`` runs on a 1.3x change that read "faster", and on an unchanged cell
    that read "no measurable change"."""
    faster = sum(r == "faster" for r in change)
    unchanged = sum(r == "no measurable change" for r in same)
    return [Target("compare_1.3x_read_faster", f"{faster} of {len(change)}", f">= {COMPARE_CORRECT:.0%}",
                   len(change) > 0 and faster / len(change) >= COMPARE_CORRECT),
            Target("compare_identical_read_no_change", f"{unchanged} of {len(same)}", f">= {COMPARE_CORRECT:.0%}",
                   len(same) > 0 and unchanged / len(same) >= COMPARE_CORRECT)]


# -- running the workloads -------------------------------------------------------------------------
_RUNS = itertools.count()  # each run's module has a name of its own


def run_loop(setup: str, before: str, cell: str, min_seconds: float = 0.0,
             warm: bool = False) -> tuple[float, dict[str, Any]]:
    """Samples/s of ``cell`` in a fresh namespace built from ``setup`` and ``before``: one pass,
    or as many as fill ``min_seconds`` (a short cell timed once is mostly noise), after one untimed
    pass where ``warm`` (a class the setup defines anew is compiled anew in each namespace); the
    namespace comes back so that a caller can look at what it kept. The namespace is a module's,
    registered in ``sys.modules`` as a notebook's ``__main__`` is: torch.compile imports the module
    of the classes it traces (a model class the setup defines)."""
    module = types.ModuleType(f"__bench{next(_RUNS)}__")
    sys.modules[module.__name__] = module
    ns: dict[str, Any] = module.__dict__
    exec(setup, ns)
    exec(before, ns)
    if warm:
        exec(cell, ns)
        ns["samples"] = 0
    gc.collect()
    start = time.perf_counter()
    exec(cell, ns)
    while time.perf_counter() - start < min_seconds:
        exec(cell, ns)
    elapsed = time.perf_counter() - start
    return ns["samples"] / elapsed, ns


def drop(ns: dict[str, Any]) -> None:
    """Let go of what a run's namespace holds (its DataLoader workers stop), keeping the module's own
    dunder names: compiled code of that run still looks its module up by them."""
    for name in [n for n in ns if not n.startswith("__")]:
        del ns[name]


def loop_rate(setup: str, before: str, cell: str) -> float:
    """``run_loop``'s samples/s over at least ``MIN_ARM_SECONDS``, after an untimed pass; the
    namespace is dropped at once, so that its DataLoader workers stop before the next run."""
    rate, ns = run_loop(setup, before, cell, MIN_ARM_SECONDS, warm=True)
    drop(ns)
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


def failed_paste(w: Workload, s: Suggestion, claim: str, why: str) -> Row:
    return Row(w.name, s.kind, claim, "—", why, True, "paste_failed")


def failure(e: BaseException) -> str:
    """A pasted code's exception in one line: its type and the last line of its message (a
    DataLoader worker's carries the worker's whole traceback)."""
    lines = [line for line in str(e).splitlines() if line.strip()]
    return f"code fails when pasted: {type(e).__name__}: {lines[-1].strip() if lines else ''}"


def speed_row(w: Workload, s: Suggestion, code: str, rounds: int) -> Row:
    """Paste the suggestion's ``code``, time it against the loop as it was, and judge its claim."""
    low, high = s.gain_range
    claim = stated(s.claim, s.gain, low, high)
    before, cell = paste(w.cell, code, s.evidence)
    mismatch = _line_mismatch(w.cell, s.evidence)
    if mismatch:
        return failed_paste(w, s, claim, mismatch)
    try:
        loop_rate(w.setup, "", w.cell)  # warm-up, untimed
        start = time.perf_counter()
        loop_rate(w.setup, before, cell)  # the first run: a compile happens here, and a failing paste shows
        first = time.perf_counter() - start
        ratios = interleaved(w, before, cell, rounds)
    except Exception as e:  # noqa: BLE001 - any failure of pasted code is the finding
        return failed_paste(w, s, claim, failure(e))
    note = f"; compile run {first:.0f} s (left out)" if "torch.compile" in code else ""
    q1, median, q3 = quartiles(ratios)
    noise = spread(ratios)
    why = broken_claim(s.claim, s.gain, low, high, median, noise)
    return Row(w.name, s.kind, claim, f"{median:.2f}× [IQR {q1:.2f}–{q3:.2f}]{note}", why or "holds",
               why is not None, "speed", s.claim, low, high, median, noise)


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
        return failed_paste(w, s, claim, mismatch)
    kept = []
    for arm_before, arm_cell in (("", w.cell), (before, cell)):
        try:
            _, ns = run_loop(w.setup, arm_before, arm_cell)
        except Exception as e:  # noqa: BLE001 - any failure of pasted code is the finding
            return failed_paste(w, s, claim, failure(e))
        kept.append(kept_graph_bytes())
        drop(ns)
        gc.collect()
    measured = (f"graphs hold {kept[0] / 1e6:.1f} MB after {steps} steps ({kept[0] / steps / 1e3:.0f} kB/step) "
                f"→ {kept[1] / 1e6:.1f} MB ({kept[1] / steps / 1e3:.0f} kB/step)")
    stopped = kept[1] <= 0.01 * kept[0]
    return Row(w.name, s.kind, claim, measured, "holds: growth stopped" if stopped else "memory still grows",
               not stopped, "memory")


def suggestion_rows(w: Workload, suggestions: Sequence[Suggestion], rounds: int, steps: int) -> list[Row]:
    """One row per suggestion: judged on speed, on memory (the leak fix), or listed."""
    rows = []
    for s in suggestions:
        claim = stated(s.claim, s.gain, *s.gain_range)
        if s.nothing_to_improve:
            rows.append(Row(w.name, "nothing to improve", "—", "—", "—", outcome="nothing"))
        elif not s.code:
            rows.append(Row(w.name, s.kind, claim, "—", "no code to paste", outcome="no_code"))
        elif is_guidance(s.code):
            rows.append(Row(w.name, s.kind, claim, "—", "guidance (comments only): no code to paste",
                            outcome="guidance"))
        elif s.kind == "memory_growth":
            rows.append(memory_row(w, s, s.code, steps))
        else:
            rows.append(speed_row(w, s, s.code, rounds))
    return rows or [Row(w.name, "(no suggestion)", "—", "—", "—", outcome="nothing")]


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


def kinds(report: Any) -> frozenset[str]:
    """The kinds of a report's suggestions ("nothing_to_improve" included): what a re-run
    should repeat."""
    return frozenset(s.kind for s in report.suggestions)


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


def distinct(suggestions: Sequence[Sequence[Suggestion]]) -> list[Suggestion]:
    """Each different suggestion (kind and code) of a workload's runs once, in the order they
    first appear: a card a re-run shows is one a user may paste."""
    seen: dict[tuple[str, str | None], Suggestion] = {}
    for run in suggestions:
        for s in run:
            seen.setdefault((s.kind, s.code), s)
    return list(seen.values())


def workload_rows(shell: Any, w: Workload, rounds: int, reruns: int) -> tuple[list[Row], list[frozenset[str]]]:
    """Profile one workload ``reruns`` times unchanged (at least once), print its figures and
    every different suggestion of its runs, and judge each of them; with the kind sets of
    every run."""
    import torch._dynamo

    torch._dynamo.reset()  # another workload's compiled graphs never count against this one's cache limit
    reports = [profile(shell, w) for _ in range(max(reruns, 1))]
    print(f"\n== {w.name}: {w.what}\n   {figures(reports[0])}", flush=True)
    sets = [kinds(r) for r in reports]
    if reruns:
        print(f"   runs' suggestion kinds: {'; '.join(', '.join(sorted(k)) or '(none)' for k in sets)}")
    suggestions = distinct([r.suggestions for r in reports])
    for s in suggestions:
        print(f"   [{s.kind}] {s.title}")
        if s.code:
            print("     " + s.code.replace("\n", "\n     "))
    found = suggestion_rows(w, suggestions, rounds, len(reports[0].steps))
    for r in found:
        print(f"   -> {r.kind}: {r.measured}: {r.verdict}", flush=True)
    return found, sets if reruns else []


# -- --compare -------------------------------------------------------------------------------------
def compare_once(shell: Any, first: int, second: int) -> tuple[Reading, str]:
    """Profile ``COMPARE_KNOB``'s cell with ``depth = first``, then the same cell with ``depth =
    second`` and ``--compare`` (this cell's previous run, default schedule); the Comparison's
    reading, and its verdict in words."""
    import nbprofiler
    from IPython.utils.capture import capture_output

    with capture_output():
        shell.run_cell(COMPARE_KNOB.setup).raise_error()
        shell.run_cell(f"depth = {first}").raise_error()
        shell.run_cell("%%torchprofile -q\n" + COMPARE_KNOB.cell).raise_error()
        shell.run_cell(f"depth = {second}").raise_error()
        shell.run_cell("%%torchprofile -q --compare\n" + COMPARE_KNOB.cell).raise_error()
    comparison = nbprofiler.last_comparison()
    after = nbprofiler.last()
    shell.run_line_magic("reset", "-f")
    gc.collect()
    if comparison is None or comparison.after is not after:  # this run made none: an earlier one is left
        return "no comparison", "no comparison was made"
    return reading(comparison.changed, comparison.speedup), comparison.verdict


def compare_section(shell: Any, runs: int, rounds: int) -> list[Target]:
    """The pair's plain speed-up, then ``runs`` comparisons of the 1.3x change and of no change."""
    deeper, shallower = COMPARE_DEPTHS
    ratios = interleaved(COMPARE_KNOB, f"depth = {shallower}", COMPARE_KNOB.cell, rounds)
    q1, median, q3 = quartiles(ratios)
    print(f"\n== --compare: {COMPARE_KNOB.what}; depth {deeper} → {shallower} measures {median:.2f}× "
          f"[IQR {q1:.2f}–{q3:.2f}] timed plainly ({rounds} interleaved rounds)", flush=True)
    change, same = [], []
    for i in range(runs):
        found, words = compare_once(shell, deeper, shallower)
        change.append(found)
        print(f"   1.3× change, run {i + 1}: {found} ({words})", flush=True)
    for i in range(runs):
        found, words = compare_once(shell, deeper, deeper)
        same.append(found)
        print(f"   identical cell, run {i + 1}: {found} ({words})", flush=True)
    print(f"SUMMARY compare_pair_speedup: {median:.2f}× [IQR {q1:.2f}–{q3:.2f}] (by construction about 1.3×)")
    return compare_targets(change, same)


@contextmanager
def bench_environment() -> Iterator[None]:
    """An empty inductor cache, so that a compile run costs what a user's first compile
    costs, not a cache hit from an earlier bench run; and a history file of its own, so
    that the bench's runs stay out of the user's history."""
    folder = tempfile.mkdtemp(prefix="advice-accuracy-")
    names = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "inductor"),
             "NBPROFILER_HISTORY": os.path.join(folder, "history.sqlite")}
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_ROUNDS} rounds instead of {ROUNDS}, {QUICK_STABILITY_RUNS} re-runs instead of "
                             f"{STABILITY_RUNS}")
    parser.add_argument("--only", metavar="NAME", choices=[w.name for w in WORKLOADS] + ["compare"],
                        help="run one workload, or only the --compare check")
    parser.add_argument("--stability", type=int, metavar="R", default=None,
                        help="profile each workload R times unchanged (at least 3 for the figure)")
    parser.add_argument("--compare-runs", type=int, metavar="N", default=COMPARE_RUNS,
                        help=f"comparisons of each kind (default {COMPARE_RUNS})")
    parser.add_argument("--skip-stability", action="store_true", help="profile each workload once")
    parser.add_argument("--skip-compare", action="store_true", help="leave out the --compare check")
    args = parser.parse_args(argv)
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    reruns = 0 if args.skip_stability else args.stability or (QUICK_STABILITY_RUNS if args.quick else STABILITY_RUNS)
    workloads = [w for w in WORKLOADS if args.only in (None, w.name)]
    started = time.perf_counter()

    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    rows: list[Row] = []
    kind_sets: dict[str, list[frozenset[str]]] = {}
    targets: list[Target] = []
    with bench_environment():
        profile(shell, COMPARE_KNOB)  # the profiler's first use in a process, which no workload should pay
        for w in workloads:
            found, kind_sets[w.name] = workload_rows(shell, w, rounds, reruns)
            rows += found
        if rows:
            print(f"\n{len(workloads)} workloads, {rounds} interleaved rounds per suggestion\n")
            print(table(rows))
            print()
            targets += row_targets(rows)
        if reruns and workloads:
            targets.append(stability_target(kind_sets))
        if not args.skip_compare and args.only in (None, "compare"):
            targets += compare_section(shell, args.compare_runs, rounds)
    for t in targets:
        print(t.line())
    missed = [t.name for t in targets if not t.met]
    print(f"\n{len(missed)} target(s) missed{': ' + ', '.join(missed) if missed else ''}; "
          f"ran {time.perf_counter() - started:.0f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
