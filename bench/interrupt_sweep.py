"""Ctrl-C at every point of a profiled cell: does the user keep their kernel, state and report?

A small real training cell (``%%torchprofile`` in an IPython shell, 12 steps, the
default schedule) runs once with a counter on the run's code path
(``nbprofiler/capture/*``, ``nbprofiler/notebook/`` magic.py, cell.py, awaiting.py,
cell_runs.py and profile.py, ``torch/profiler/profiler.py``). Then it runs again for each point, delivering Ctrl-C
the way the interpreter does: by calling the SIGINT handler in force (Python's own
raises KeyboardInterrupt there; code that holds Ctrl-C back is credited for it).

- One Ctrl-C: at every Nth line event of the path.
- Two Ctrl-C, as a user presses them: the first in the cell's loop during the active
  steps (the profiler is recording), the second at each function entry on the path
  after it (the finish, the report, keeping it: ``-o``, ``nbprofiler.last()``, the
  history). A Ctrl-C handled at a function entry is one raised before the function's
  first line, where no code of the function can hold it.

Points run in batches in worker subprocesses, so a segfault is counted, not fatal.
For each point:

- crash: the worker died by a signal (at the point, or at exit after it);
- state left: ``leftover_state()`` (tests/conftest.py) found something, a
  ``nbprofiler-*.json`` temp file remained, or the SIGINT handler in force is not
  Python's own; the cell then runs once more without
  Ctrl-C, to tell whether that next run repairs it (a full report, nothing left),
  and the worker ends, so no later point inherits it;
- report lost: steps had completed, but no report was built or it has fewer steps; with
  two Ctrl-C, also where the first alone keeps it: ``-o`` unset, ``nbprofiler.last()``
  not the report, or the run missing from the history;
- not raised: the KeyboardInterrupt did not reach the user (another exception did);
- escaped: an exception escaped IPython's ``run_cell`` instead of ending the cell;
- false claim (two Ctrl-C): the line the user reads names a place the report is not in;
- no line (two Ctrl-C): the second Ctrl-C, landing once the cell's code had ended, got no
  line saying where the report is kept (one landing as the first unwinds the cell is that
  cell's interrupt, as the first is).

Exits 1 on a crash, a hang, an interrupt that did not reach the user or escaped the
shell, or state that the next run does not repair; with two Ctrl-C, also on state left,
a report lost, a false claim or no line. One point escapes by construction, and is counted
apart ("escaped as read"): the first line event is the start of nbprofiler reading the
cell (``_awaited_if_it_awaits``, which decides whether IPython awaits the magic), and a
Ctrl-C handled before any line of a function runs can be caught by no code of it.
IPython's own transforms, which read the cell just before, escape there in the same
way; a cell without the magic runs no nbprofiler code as it is read
(tests/notebook/test_reading_cells.py).

    .venv/bin/python bench/interrupt_sweep.py [--every N] [--only once|twice]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
POINT_TIMEOUT_S = 120  # a hung point ends its worker (faulthandler) and counts as a hang
LOST = "; {done} step(s) done, report with {steps}"  # how a point that lost its report is listed
OUTCOMES = ("crash", "state left", "report lost", "not raised", "escaped", "escaped as read", "hang", "worker error")
# The one point no code can hold: before the first line of nbprofiler's reading of the cell (see above).
READING_ENTRY = "_awaited_if_it_awaits, its first line"
TWICE_OUTCOMES = (*OUTCOMES, "false claim", "no line")

SETUP = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(96, 20), torch.randint(0, 4, (96,))), batch_size=8)
done = 0
"""
# `done` counts the steps the user saw complete: the report must hold at least those.
CELL = """%%torchprofile -q -o run
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    done += 1
"""
FIRST_AT = 4  # the first of two Ctrl-C: after 4 steps, while the profiler records step 4 (active: 2, 3, 4)
TWICE_CELL = CELL + f"    if done == {FIRST_AT}:\n        press()  # the first Ctrl-C\n"


# -- worker ---------------------------------------------------------------------------------
class Injector:
    """A ``sys.settrace`` hook counting line events in the run's files; at the ``at``-th it
    delivers SIGINT through the handler in force (``at=None``: count only)."""

    def __init__(self, at: int | None) -> None:
        import torch.profiler.profiler

        from nbprofiler.notebook import awaiting, cell, cell_runs, magic, profile

        capture = str(ROOT / "nbprofiler" / "capture")
        on_path = (magic, cell, awaiting, cell_runs, profile, torch.profiler.profiler)
        self.files = {module.__file__ for module in on_path}
        self.prefix = capture + os.sep
        self.at = at
        self.count = 0
        self.fired = False
        self.where = ""  # the function the Ctrl-C landed in, and the line
        self._seen: set[Any] = set()  # the frames that had a line event

    def _watched(self, filename: str) -> bool:
        return filename in self.files or filename.startswith(self.prefix)

    def global_trace(self, frame: Any, event: str, arg: Any) -> Any:
        return self.local_trace if not self.fired and self._watched(frame.f_code.co_filename) else None

    def local_trace(self, frame: Any, event: str, arg: Any) -> Any:
        if self.fired:
            return None
        if event == "line":
            self.count += 1
            first = frame not in self._seen
            self._seen.add(frame)
            if self.count == self.at:
                self.fired = True
                self.where = f"{frame.f_code.co_name}, {'its first line' if first else f'line {frame.f_lineno}'}"
                _deliver_sigint(frame)
        return self.local_trace


class SecondInjector(Injector):
    """Counts the function entries on the run's path after the cell's first Ctrl-C
    (``press``); at the ``at``-th it delivers the second."""

    pressed = False
    after_cell = False  # whether the second came once the cell's code had ended (else: as the first unwound it)

    def press(self) -> None:
        """The first Ctrl-C, from the cell's loop."""
        self.pressed = True
        self.cell = sys._getframe(1)
        _deliver_sigint(self.cell)

    def global_trace(self, frame: Any, event: str, arg: Any) -> Any:
        if self.pressed and not self.fired and self._watched(frame.f_code.co_filename):
            self.count += 1
            if self.count == self.at:
                self.fired = True
                self.where = f"{frame.f_code.co_name}, its entry"
                self.after_cell = all(f is not self.cell for f in _stack(frame))
                _deliver_sigint(frame)  # raised here, it ends the entered function before its first line
        return None


def _stack(frame: Any) -> Iterator[Any]:
    while frame is not None:
        yield frame
        frame = frame.f_back


def _deliver_sigint(frame: Any) -> None:
    handler = signal.getsignal(signal.SIGINT)
    assert callable(handler), "the worker installs Python's handler"
    handler(signal.SIGINT, frame)


def _left(tmp: Path) -> list[str]:
    """What the cell left behind: ``leftover_state()``, temp traces, a SIGINT handler not Python's."""
    from conftest import leftover_state

    left = leftover_state()
    left += [f"temp file {p.name} ({p.stat().st_size} bytes)" for p in tmp.glob("nbprofiler-*.json")]
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        left.append(f"the SIGINT handler is {signal.getsignal(signal.SIGINT)!r}, not Python's own")
    return left


def _point(shell: Any, at: int | None, tmp: Path) -> dict[str, Any]:
    """Run the cell once with Ctrl-C at line event ``at``; what the user is left with."""
    from nbprofiler.notebook import profile

    shell.run_cell(SETUP).raise_error()
    shell.user_ns.pop("run", None)
    profile._last_report = None
    injector = Injector(at)
    sys.settrace(injector.global_trace)
    escaped = False
    try:
        error = shell.run_cell(CELL).error_in_exec
    except BaseException as exc:  # noqa: BLE001 - it escaped the shell's cell runner
        error, escaped = exc, True
    finally:
        sys.settrace(None)
    report = shell.user_ns.get("run") or profile._last_report
    done = shell.user_ns["done"]
    left = _left(tmp)
    return {
        "at": at, "lines": injector.count, "fired": injector.fired, "done": done, "left": left,
        "steps": None if report is None else len(report.steps),
        "report_lost": bool(done) and (report is None or len(report.steps) < done),
        "not_raised": injector.fired and not isinstance(error, KeyboardInterrupt),
        "escaped": escaped,
        "where": injector.where,
        "error": None if error is None else repr(error)[:200],
    }


def _twice(shell: Any, at: int | None, tmp: Path) -> dict[str, Any]:
    """Run the cell with the first Ctrl-C in its loop and the second at function entry ``at``
    after it; what the user is left with, beside what the first alone leaves them."""
    from IPython.utils.capture import capture_output

    import nbprofiler
    from nbprofiler.notebook import profile

    shell.run_cell(SETUP).raise_error()
    shell.user_ns.pop("run", None)
    profile._last_report = None
    kept_before = len(nbprofiler.history())  # type: ignore[operator]  # a callable module
    injector = SecondInjector(at)
    shell.user_ns["press"] = injector.press
    sys.settrace(injector.global_trace)
    escaped = False
    try:
        with capture_output() as said:
            error = shell.run_cell(TWICE_CELL).error_in_exec
    except BaseException as exc:  # noqa: BLE001 - it escaped the shell's cell runner
        error, escaped = exc, True
    finally:
        sys.settrace(None)
    report, last = shell.user_ns.get("run"), nbprofiler.last()
    done = shell.user_ns["done"]
    in_history = len(nbprofiler.history()) - kept_before  # type: ignore[operator]  # a callable module
    left = _left(tmp)
    text = said.stdout + said.stderr + (error._render_traceback_()[0] if hasattr(error, "_render_traceback_") else "")
    lines = [line for line in text.splitlines() if line.startswith("nbprofiler:") and "kept" in line]
    holds = {"`run`": report is not None,
             "`nbprofiler.last()`": last is not None and (report is None or last is report)}
    kept = last is report and report is not None and len(report.steps) == done == FIRST_AT
    return {
        "at": at, "lines": injector.count, "fired": injector.fired, "done": done, "left": left,
        "steps": None if report is None else len(report.steps),
        "report_lost": not kept or in_history != 1,
        "lost": [what for what, lost in (("-o", report is None), ("last()", not holds["`nbprofiler.last()`"]),
                                         ("history", in_history != 1)) if lost],
        "not_raised": not isinstance(error, KeyboardInterrupt),
        "escaped": escaped,
        "where": injector.where,
        "false_claim": any(place in line and not holds[place] for line in lines for place in holds),
        "no_line": injector.after_cell and len(lines) != 1,
        "error": None if error is None else repr(error)[:200],
    }


def worker(mode: str, points: list[int | None]) -> None:
    """Run the points in order, one JSON line each; stop after one that left state behind."""
    import faulthandler
    import tempfile
    import warnings

    warnings.simplefilter("ignore")
    # Python's own Ctrl-C handler, as in a kernel, even when this runs in the background,
    # where the shell starts it with SIGINT ignored (and Ctrl-C would do nothing).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from IPython.core.interactiveshell import InteractiveShell

    tmp = Path(tempfile.mkdtemp(prefix="interrupt-sweep-"))
    tempfile.tempdir = str(tmp)
    import torch

    torch.set_num_threads(1)
    shell = InteractiveShell.instance()
    shell.showtraceback = lambda *a, **k: None  # type: ignore[method-assign]  # the interrupts are expected: keep the output to the figures
    shell.run_line_magic("load_ext", "nbprofiler")
    point = _twice if mode == "twice" else _point
    try:
        for at in points:
            faulthandler.dump_traceback_later(POINT_TIMEOUT_S, exit=True)
            outcome = point(shell, at, tmp)
            if outcome["left"]:
                after = _point(shell, None, tmp)
                outcome["repaired"] = not after["left"] and after["steps"] == after["done"] == 12
            faulthandler.cancel_dump_traceback_later()
            print(json.dumps(outcome), flush=True)
            if outcome["left"]:
                return  # a fresh worker for the next point, so no point inherits this one's state
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- driver ---------------------------------------------------------------------------------
def _run_batch(mode: str, points: Sequence[int | None]) -> tuple[list[dict[str, Any]], int, str]:
    """Run ``points`` in one worker; the outcomes it reported, its exit status and the last
    line of its stderr (what a worker that failed said)."""
    proc = subprocess.run([sys.executable, __file__, "--worker", mode, json.dumps(points)], capture_output=True,
                          text=True, cwd=ROOT)
    outcomes = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    said = proc.stderr.strip().splitlines()
    return outcomes, proc.returncode, "Timeout" if "Timeout (" in proc.stderr else (said[-1] if said else "")


def sweep(mode: str, points: list[int], batch: int) -> list[dict[str, Any]]:
    """Every point's outcome; a worker that dies is restarted after the point it died at."""
    results: list[dict[str, Any]] = []
    todo = list(points)
    while todo:
        outcomes, rc, said = _run_batch(mode, todo[:batch])
        results += outcomes
        todo = todo[len(outcomes):]
        if rc == 0:
            continue
        # A signal is a crash; faulthandler's timeout a hang; any other exit, the worker itself failed.
        kind = "crash" if rc < 0 else "hang" if said == "Timeout" else "worker error"
        if outcomes and outcomes[-1]["left"]:  # it died at exit, after that point's report
            outcomes[-1][kind] = rc
            outcomes[-1]["said"] = said
        elif todo:
            results.append({"at": todo.pop(0), kind: rc, "left": [], "said": said})
    return results


def _flags(outcome: dict[str, Any]) -> list[str]:
    flags = [name for name in ("crash", "hang", "worker error") if outcome.get(name)]
    flags += ["state left"] * bool(outcome.get("left"))
    flags += ["report lost"] * bool(outcome.get("report_lost"))
    flags += ["not raised"] * bool(outcome.get("not_raised"))
    if outcome.get("escaped"):
        flags.append("escaped as read" if outcome.get("where") == READING_ENTRY else "escaped")
    flags += ["false claim"] * bool(outcome.get("false_claim"))
    flags += ["no line"] * bool(outcome.get("no_line"))
    return flags


def _report(mode: str, every: int, batch: int) -> int:
    """Sweep one mode and print its figures; 1 where the sweep failed."""
    t0 = time.perf_counter()
    counted, rc, said = _run_batch(mode, [None])
    if not counted or _flags(counted[0]):  # the cell alone, or with the first Ctrl-C alone: all kept
        print(f"{mode}: without the swept Ctrl-C the cell already fails (worker exit status {rc}): "
              f"{counted[0] if counted else said}")
        return 1
    total = counted[0]["lines"]
    points = list(range(1, total + 1, every))
    what = "line events on the run's path" if mode == "once" else "function entries after the cell's first Ctrl-C"
    print(f"{mode}: {total} {what}; trying every {every}th: {len(points)} points", flush=True)
    results = sweep(mode, points, batch)
    counts = Counter(flag for outcome in results for flag in _flags(outcome))
    for outcome in results:
        if _flags(outcome):
            print(f"  {'line event' if mode == 'once' else 'function entry'} {outcome['at']}"
                  f"{' (' + outcome['where'] + ')' if outcome.get('where') else ''}: {', '.join(_flags(outcome))}"
                  f"{'; ' + '; '.join(outcome['left']) if outcome.get('left') else ''}"
                  f"{'; repaired by the next run' if outcome.get('repaired') else ''}"
                  f"{LOST.format(**outcome) if outcome.get('report_lost') and mode == 'once' else ''}"
                  f"{'; lost: ' + ', '.join(outcome['lost']) if outcome.get('lost') else ''}"
                  f"{'; raised ' + str(outcome['error']) if outcome.get('not_raised') else ''}"
                  f"{'; it said: ' + outcome['said'] if outcome.get('said') else ''}")
    repaired = sum(1 for o in results if o.get("repaired"))
    names = TWICE_OUTCOMES if mode == "twice" else OUTCOMES
    print(f"{mode}: {len(results)} points in {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{counts[name]} {name}" for name in names)
          + f" ({repaired} of the {counts['state left']} with state left repaired by the next run)"
          + f", {sum(1 for o in results if not _flags(o))} clean", flush=True)
    unrepaired = counts["state left"] - repaired
    failed = ["crash", "not raised", "escaped", "hang", "worker error"]
    if mode == "twice":  # a report the first Ctrl-C alone keeps must survive the second
        failed += ["state left", "report lost", "false claim", "no line"]
    return 1 if unrepaired or any(counts[name] for name in failed) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=8, help="one Ctrl-C: try every Nth line event (default 8)")
    parser.add_argument("--every-entry", type=int, default=1,
                        help="two Ctrl-C: try every Nth function entry after the first (default 1: each)")
    parser.add_argument("--only", choices=("once", "twice"), help="run one of the two sweeps")
    parser.add_argument("--batch", type=int, default=25, help="points per worker process (default 25)")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker[0], json.loads(args.worker[1]))
        return 0
    failed = 0
    if args.only in (None, "once"):
        failed |= _report("once", args.every, args.batch)
    if args.only in (None, "twice"):
        failed |= _report("twice", args.every_entry, args.batch)
    return failed


if __name__ == "__main__":
    sys.exit(main())
