"""The sync rule: places in the step where the host waits for the GPU, which then idles.

Each sync is named by its cause (``.item()``, a copy to the CPU, a branch on a tensor...) and
placed on a cell line, from the trace's line marks or the cell's source. The fix is the cell's
own statement kept on the device where that edit is safe, else the pattern of the fix for that
cause, in comments. Blocking input copies are left to the DataLoader suggestion where it pins
memory (``syncs_not_fixed_by_loader``), so that one change is not proposed twice.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...analysis.sync_source import SyncLine, sync_lines
from ...format import fmt_ms
from .. import measures as M
from .. import thresholds as T
from ..safe_names import commented
from ..suggestion import Suggestion, Verdict, amdahl, fired, not_run, passed, severity_for as _severity
from .checks import NO_DEVICE_TIME, SYNCS, gpu_not_run, why_no_steps

if TYPE_CHECKING:
    from .facts import Facts


_SYNC_CAUSES = {
    "item": "`.item()` (or float(), int(), print() of a tensor)",
    "cpu": "a copy to the CPU (`.cpu()`, `.numpy()`, `.tolist()`)",
    "bool": "a Python branch on a tensor (`if t:`, `while t:`)",
    "shape": "a data-dependent shape (`nonzero`, `x[mask]`, `unique`)",
    "h2d": "a blocking host-to-device copy (`.to(device)` from pageable memory)",
    "explicit": "an explicit synchronize (`torch.cuda.synchronize()`, event waits)",
}
_SYNC_FIXES = {
    "item": ("total = torch.zeros((), device=device)\n"
             "for x, y in train_loader:\n"
             "    ...\n"
             "    total += loss.detach()   # stays on the GPU: no sync\n"
             "print(total.item())         # one sync, after the loop (or every N steps)"),
    "cpu": ("outputs = []\n"
            "for x, y in train_loader:\n"
            "    ...\n"
            "    outputs.append(out.detach())  # keep it on the GPU\n"
            "outputs = torch.cat(outputs).cpu()  # one copy after the loop"),
    "bool": ("# instead of `if (x > 0).any(): x = f(x)` in the step:\n"
             "x = torch.where(x > 0, f(x), x)  # no Python branch on a device value"),
    "shape": ("# instead of `y = x[mask]` (its size must come from the GPU):\n"
              "y = torch.where(mask, x, torch.zeros_like(x))  # fixed shape, no sync"),
    "h2d": ("loader = DataLoader(dataset, batch_size=batch_size, pin_memory=True)\n"
            "x = x.to(device, non_blocking=True)"),
    "explicit": "# remove torch.cuda.synchronize() from the step: the profiler times the device without it",
}


def sync_rule(f: Facts, skip_h2d: bool = False) -> list[Verdict]:
    """Syncs inside the step after which the GPU idles at least ``SYNC_IDLE_SHARE`` of it.

    ``skip_h2d`` leaves out blocking input copies when the DataLoader suggestion
    already fixes them (pin_memory and non_blocking). Without steps to judge, no
    sync is vouched for: the check did not run.
    """
    dt = f.device_time
    if dt is None or dt.span_us <= 0:
        return gpu_not_run(f, SYNCS, NO_DEVICE_TIME)
    found = _sync_suggestion(f, dt, skip_h2d)
    if found is not None:
        return [fired(SYNCS, [found])]
    why = why_no_steps(f)
    if why is not None:
        return [not_run(SYNCS, why)]
    return [passed(SYNCS, f"no host-device sync leaves the GPU idle {T.SYNC_IDLE_SHARE:.0%} of the step or more")]


def _sync_suggestion(f: Facts, dt: M.DeviceTime, skip_h2d: bool) -> Suggestion | None:
    """The syncs that cost the most idle GPU time, with the fix for the worst, or None
    when they leave the GPU idle under ``SYNC_IDLE_SHARE`` of the step."""
    points = f.syncs
    if skip_h2d:
        points = points[points["cause"] != "h2d"]
    if points.empty:
        return None
    idle = M.sync_idle_us(points)
    share = idle / dt.span_us
    if share < T.SYNC_IDLE_SHARE:
        return None
    places = pd.DataFrame(
        [(c, w, len(g), M.sync_idle_us(g)) for (c, w), g in points.groupby(["cause", "where"], sort=False)],
        columns=["cause", "where", "calls", "idle_us"],
    ).sort_values("idle_us", ascending=False, kind="stable")
    top = places.iloc[0]
    cause, where = str(top["cause"]), str(top["where"])
    per_step = len(points) / dt.steps
    gain = amdahl(share)
    line, found_in = _sync_line(f, cause, where)
    code, detail = _sync_fix(cause, where, line, line is not None and f.may_copy(line.line, line.end_line))
    listing = [f"{_SYNC_CAUSES[r.cause]} at {r.where}: {r.calls / dt.steps:g} per step, "
               f"GPU idle {r.idle_us / dt.steps / 1e3:.2f} ms per step after it" for r in places.head(5).itertuples()]
    evidence: dict[str, Any] = {"syncs_per_step": round(per_step, 2),
                                "idle_ms_per_step": round(idle / dt.steps / 1e3, 3), "idle_share": round(share, 4),
                                "top_cause": cause, "top_where": where, "places": listing}
    named = []
    if line is not None:
        evidence.update(line=line.line, end_line=line.end_line, line_source=line.text, line_found_in=found_in)
        where = f"cell line {line.line}: {line.text.strip()}"
        if found_in == "source":
            named = [f"{where}: {_SYNC_CAUSES[cause]}, found in the cell's source (the trace places the sync at "
                     f"{evidence['top_where']}; profile with --stack to see it on its line)"]
    return Suggestion(
        kind="sync",
        title=f"The host waits for the GPU {per_step:.0f}× per step, mostly at {where}",
        severity=_severity(gain),
        evidence=evidence,
        facts=(f"{per_step:.0f} syncs per step leave the GPU idle {fmt_ms(idle / dt.steps / 1e3)} per step: "
               f"{share:.1%} of the step ({f.step})", *named, *listing),
        expected_gain=(f"at most 1/(1-{share:.3f}) = {gain:.2f}× step time: the GPU sits idle {share:.1%} of the step "
                       "after these syncs, until the host queues work again"),
        gain=gain,
        code=code,
        detail=detail,
    )


def _sync_line(f: Facts, cause: str, where: str) -> tuple[SyncLine | None, str]:
    """The cell statement of the worst sync, and what placed it there: the trace's line marks
    (``where`` is then "cell line N: ..."), else, when the sync is a torch call of its own (no
    operator or range around it: not a library's ``.item()`` inside its op), the first loop
    statement of the cell's source that makes this kind of sync. (None, "") where neither finds it."""
    cell = f.report.cell_source or ""
    lines = sync_lines(cell) if cell else []
    source = cell.splitlines()
    marked = re.match(r"cell line (\d+):", where)
    n = int(marked.group(1)) if marked is not None else 0
    if 0 < n <= len(source):  # else no line of the cell: a range the trace itself names so
        placed = next((s for s in lines if s.line <= n <= s.end_line), SyncLine(n, n, source[n - 1], frozenset(), None))
        return placed, "trace"
    if not where.startswith("aten::"):  # inside another operator or range, or in a module's file
        return None, ""
    found = next((s for s in lines if cause in s.causes), None)
    return found, "" if found is None else "source"


def _sync_fix(cause: str, where: str, line: SyncLine | None, copy: bool) -> tuple[str | None, str]:
    """The code for the worst sync and why: the cell's own statement kept on the device where
    that edit is safe (``total += loss.item()``) and its lines may be copied (``copy``), else the
    pattern for its cause, headed by the line in comments."""
    if line is not None and line.fixed is not None and cause == "item" and copy:
        span = f"line {line.line}" if line.end_line == line.line else f"lines {line.line}-{line.end_line}"
        return line.fixed, (f"`.detach()` keeps the value on the GPU, so the host does not wait for it every step; "
                            f"read it once after the loop (`float(...)`, `.item()`). The code replaces {span} of "
                            "the cell, as indented there")
    if line is None and cause == "explicit" and not (where.startswith("cell line") or ".py" in where):
        return None, f"the wait happens inside {where}, not in your code: the library synchronizes there"
    # The pattern's names are not the cell's: as comments, it shows the change and still runs when pasted.
    head = "" if line is None else commented(f"cell line {line.line}: {line.text.strip()}") + "\n"
    pattern = "\n".join(s if s.startswith("#") else f"# {s}" for s in _SYNC_FIXES[cause].splitlines())
    return head + pattern, (f"{_SYNC_CAUSES[cause]} makes the host wait until the GPU has finished all queued work; "
                            "the code is the pattern of the fix, in comments: write it with the cell's names")


def syncs_not_fixed_by_loader(f: Facts) -> list[Verdict]:
    """Blocking input copies are left to the DataLoader suggestion when it pins memory."""
    pins = any("pin_memory" in s.evidence.get("changed", ()) for s in f.dataloader)
    return sync_rule(f, skip_h2d=pins)
