"""The report's own caveats: short cells, interruptions, what the capture could not do,
synthetic steps, skipped events.

A report is never empty without a word: whatever limits what it can show is
said here, once, and every renderer prints these notes. The capture records only
what happened (``RunRecord.facts``); the words are made here, so that a run saved
or kept in the history says the same when it is reopened.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.breakdown import LAST_STEP_MIN_SHARE, dropped_steps

if TYPE_CHECKING:
    from ..options import ProfileOptions
    from ..records import CaptureFacts, RunRecord
    from .report import Report


def is_partial(report: "Report") -> bool:
    run = report.run
    if run is None:
        return False
    if run.error is not None:
        return True
    needed = run.options.steps_needed
    return needed is not None and len(run.steps) < needed


def report_notes(report: "Report") -> list[str]:
    """Every note, in the order a reader needs them: the run's, the load's, then the trace's."""
    return [*_run_notes(report), *report.load_notes, *_trace_notes(report)]


def _run_notes(report: "Report") -> list[str]:
    """What the live run's end limits: an error, an unfinished schedule, no step boundary, what its
    capture could not do, an unreadable trace."""
    run = report.run
    if run is None:
        return []
    notes: list[str] = []
    if run.error is not None:
        notes.append(f"Partial report: the cell stopped with {run.error} after {len(run.steps)} completed step(s).")
    schedule = _schedule_note(run)
    if schedule is not None:
        notes.append(schedule)
    if run.step_source == "none":
        notes.append(
            "No step boundary was seen (no optimizer step, DataLoader batch or nbprofiler.step()); "
            "the whole cell counted as one unfinished step. Use -n/--iterations for cells without a loop."
        )
    notes.extend(capture_notes(run.facts, run.options))
    notes.extend(run.notes)  # added after the report was made, or a run saved before its facts were recorded
    if report.trace_problem is not None:
        notes.append(f"The recorded trace could not be read ({report.trace_problem}); "
                     "only per-step figures are shown.")
    return notes


def capture_notes(facts: "CaptureFacts", options: "ProfileOptions") -> list[str]:
    """What the capture could not record or write, and what ended the steps where that is not
    what the user may assume, each with what to do about it."""
    notes: list[str] = []
    if facts.lines_skipped:
        notes.append("another trace function (a debugger or coverage tool) was active, so the time per "
                     "cell line was not recorded")
    if facts.other_thread_steps:
        notes.append(f"{facts.other_thread_steps} step(s) ended in another thread and were not profiled: "
                     "torch.profiler records only the thread that runs the cell; run the training loop in the "
                     "cell itself")
    if facts.export_error is not None:
        notes.append(f"the trace export failed ({facts.export_error}); only per-step figures are shown. "
                     f"Make sure {facts.temp_dir} is writable and has free space (or set TMPDIR), then run again")
    if facts.loader_steps_before_optimizer:
        notes.append(f"the first {facts.loader_steps_before_optimizer} step(s) were ended by DataLoader batches, "
                     "before the first optimizer.step(); if the loop accumulates gradients over several batches, "
                     "run again with --step-on optimizer so that every step is one optimizer step")
    if facts.optimizers:
        notes.append(f"{len(facts.optimizers)} optimizers step in each loop iteration "
                     f"({', '.join(facts.optimizers)}): a step is one iteration, ended by "
                     f"{facts.closing_optimizer}.step() (the first step is part of the first iteration, the second "
                     "the rest of it and the next iteration); --step-on optimizer makes each optimizer.step() a step")
    if facts.unknown_samples:
        notes.append("samples/s is unknown: the steps took no DataLoader batch; pass the step's sample count, "
                     "nbprofiler.step(samples=len(batch))")
    if facts.cycles > 1 and options.every:
        notes.append(f"{facts.cycles} cycles were recorded (--every {options.every}): report.cycles has one row per "
                     "cycle, and the trace tables show the last cycle, as torch clears its events after each (the "
                     "step table shows every step)")
    elif facts.cycles > 1:
        notes.append(f"{facts.cycles} cycles were recorded (--repeat {options.repeat}); torch clears its events "
                     "after each, so the trace tables show the last cycle (the step table shows every step)")
    notes.extend(f"{out.flag} {out.path}: the trace was not written ({out.reason}); give a path in a writable "
                 "directory" for out in facts.unwritten)
    return notes


def _schedule_note(run: "RunRecord") -> str | None:
    """Why fewer steps than the schedule needs were profiled: none at all says how to fix the
    schedule; some says how many, unless the error note already said the cell stopped."""
    o = run.options
    done = len(run.steps)
    needed = o.steps_needed
    if needed is None or done >= needed:
        return None
    active_done = int((run.steps["phase"] == "active").sum()) if done else 0
    if active_done == 0 and run.step_source != "other thread":  # that case has its own note
        return (f"The cell ran {done} step(s) but the schedule needs {needed} "
                f"(skip_first={o.skip_first}, wait={o.wait}, warmup={o.warmup}, active={o.active}, "
                f"repeat={o.repeat}); no step was profiled. "
                "Run more steps, or lower --wait/--warmup (e.g. --wait 0 --warmup 0).")
    if run.error is None:
        return (f"The cell ended after {done} of the {needed} steps the schedule needs; "
                f"{active_done} active step(s) were profiled.")
    return None


def _trace_notes(report: "Report") -> list[str]:
    """What the trace itself limits: no step annotations, steps left out, names mended, events skipped."""
    if not report.has_trace:
        return []
    notes: list[str] = []
    steps = report.trace_steps
    if len(steps) and bool(steps["synthetic"].iloc[0]):
        notes.append("The trace has no ProfilerStep annotations, so the whole trace is treated as one step.")
    left_out = _left_out_of_breakdown(report)
    if left_out:
        notes.append(left_out)
    repaired = report.table.meta.repaired_names
    if repaired:
        notes.append(f"{repaired} event name(s) had unescaped quotes (torch writes them as they are) "
                     "and were repaired.")
    skipped = report.table.meta.skipped_events
    if skipped:
        notes.append(f"{skipped} malformed trace event(s) were skipped.")
    return notes


def _left_out_of_breakdown(report: "Report") -> str | None:
    """Why the breakdown, GPU summary and idle time count fewer steps than were profiled
    (the TensorBoard plugin's trimming, which would otherwise change the step count silently)."""
    idle, cut_short = dropped_steps(report.table, report.trace_steps)
    if not idle and not cut_short:
        return None
    why = []
    if cut_short:
        why.append(f"the last step that launched device work launched under {LAST_STEP_MIN_SHARE:.0%} of the step "
                   "before it (the profiler most likely stopped before its kernels ran)")
    if idle:
        why.append(f"{idle} step(s) at the end launched no device work")
    left_out = idle + cut_short
    return (f"{left_out} of the {len(report.trace_steps)} profiled steps {'is' if left_out == 1 else 'are'} left out "
            f"of the step breakdown, GPU summary and idle time, as in the TensorBoard plugin: {'; '.join(why)}.")
