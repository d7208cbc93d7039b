"""``Comparison``: two reports side by side (``nbprofiler.compare`` makes one from reports,
paths or run ids).

Like a Report it never changes: each figure is computed on first access by the pure
functions of ``nbprofiler.analysis.compare`` and cached, and each table is handed out
as a copy of its own.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis import compare as cmp
from ..analysis.memory import series_label
from ..render import bundle
from ..trace.table import DeviceInfo
from .read_only import read_only_table
from .report import Report

if TYPE_CHECKING:
    from ..advice.suggestion import Suggestion
    from .rank_summary import RankSummary

@dataclass(frozen=True, eq=False)
class Comparison:
    """Two runs compared: the speed-up with its interval, a verdict in words, and the
    breakdown, operators, kernels, memory and set-up that changed between them."""

    before: Report
    after: Report
    before_label: str = "before"
    after_label: str = "after"
    tried: str | None = None

    # -- the step ----------------------------------------------------------------------------
    @cached_property
    def _steps(self) -> tuple[cmp.Steps, cmp.Steps]:
        return cmp.compared_steps(_step_source(self.before), _step_source(self.after))

    @property
    def step_samples(self) -> tuple[np.ndarray, np.ndarray]:
        """Each run's per-step times (ms) that the speed-up and its interval are over."""
        b, a = self._steps
        return b.ms.copy(), a.ms.copy()

    @property
    def steps_compared(self) -> tuple[str, str]:
        """Which steps of each run the speed-up is over, in words: every step the sampler timed
        when both runs are live (less the cell's first), else the profiled ones."""
        b, a = self._steps
        return b.label, a.label

    @cached_property
    def speedup(self) -> float | None:
        """mean(before step ms) / mean(after step ms), the throughput's ratio: above 1 when the
        after run is faster."""
        b, a = self._steps
        return cmp.speedup(b.ms, a.ms)

    @cached_property
    def speedup_ci(self) -> tuple[float, float] | None:
        """The speed-up's interval (``method``); None when a side has fewer than 2 steps."""
        b, a = self._steps
        return cmp.speedup_interval(b.ms, a.ms, drift=self._drift)

    @cached_property
    def _drift(self) -> float:
        """The interval's allowance for the machine's load moving between the runs."""
        return cmp.run_drift((_other_cores(self.before), _other_cores(self.after)))

    @property
    def method(self) -> str:
        """How the speed-up and its interval were made, in words."""
        return cmp.method(self._drift)

    @cached_property
    def step_ms(self) -> tuple[float | None, float | None]:
        """Each report's own headline average step (ms), as its overview shows it."""
        return _avg_ms(self.before), _avg_ms(self.after)

    @cached_property
    def mean_step_ms(self) -> tuple[float | None, float | None]:
        """Each run's mean step (ms) over the steps compared (``steps_compared``)."""
        return tuple(float(s.ms.mean()) if len(s.ms) else None for s in self._steps)  # type: ignore[return-value]

    @cached_property
    def samples_per_s(self) -> tuple[float | None, float | None]:
        return self.before.summary.get("samples_per_s"), self.after.summary.get("samples_per_s")

    @cached_property
    def verdict(self) -> str:
        """"1.74× faster (1.52–1.96)", "1.20× slower (1.10–1.31)", "no measurable change (0.97–1.04)";
        a change measured while other programs' load moved says so (``notes`` give the figures)."""
        words = cmp.verdict(self.speedup, self.speedup_ci)
        if self.changed and self._load_note is not None:
            return f"{words}, but the machine's load changed between the runs"
        return words

    @cached_property
    def _load_note(self) -> str | None:
        return cmp.load_note((_other_cores(self.before), _other_cores(self.after)),
                             (self.before_label, self.after_label))

    @property
    def changed(self) -> bool:
        """Whether the interval excludes 1 (False without an interval)."""
        ci = self.speedup_ci
        return ci is not None and cmp.excludes_one(ci)

    # -- where the time went -------------------------------------------------------------------
    @cached_property
    def breakdown_kind(self) -> str:
        """"device" (GPU categories) when both runs have device activity, else "phases" (host)."""
        kinds = {breakdown_kind(r) for r in (self.before, self.after)}
        return "device" if kinds == {"device"} else "phases"

    @read_only_table
    def breakdown(self) -> pd.DataFrame:
        """Per part, ms per step before, after and delta with the delta's interval
        (``delta_low_ms``, ``delta_high_ms``), each run's shares, and an ``explanation``."""
        before, after = (_parts(r, self.breakdown_kind) for r in (self.before, self.after))
        return cmp.breakdown_diff(before, after, bundle.LABELS, self._targets)

    @cached_property
    def _setup(self) -> tuple[cmp.SetupChange, ...] | None:
        return cmp.setup_changes(self.before.run, self.after.run, self._devices)

    @cached_property
    def _targets(self) -> tuple[cmp.SetupChange, ...] | None:
        """The changes whose targets explain the breakdown: the set-up's, with the tried
        suggestion's own target added (known even between trace files)."""
        tried: tuple[cmp.SetupChange, ...] = ()
        if self.tried is not None:
            tried = (cmp.SetupChange(f"tried: {self.tried}", _tried_name(self.tried),
                                     cmp.SUGGESTION_TARGETS.get(self.tried)),)
        if self._setup is None:
            return tried or None
        return self._setup + tried

    @property
    def _devices(self) -> tuple[DeviceInfo, DeviceInfo]:
        return self.before.device, self.after.device

    @read_only_table
    def operators(self) -> pd.DataFrame:
        """Per operator name, per profiled step: calls, host and device self ms, before,
        after and delta, with ``status`` new / vanished / both; largest change first."""
        return cmp.operator_diff(self.before.operators, self.after.operators, self._profiled_steps,
                                 self.operator_time == "device")

    @property
    def operator_time(self) -> str:
        """The operators' main time, which orders them: "device" self time when either run has
        device activity, else "host"."""
        return "device" if self.before.has_device_activity or self.after.has_device_activity else "host"

    @read_only_table
    def kernels(self) -> pd.DataFrame:
        """Per kernel name, per profiled step: calls and total ms before, after and delta."""
        return cmp.kernel_diff(self.before.kernels, self.after.kernels, self._profiled_steps)

    @property
    def _profiled_steps(self) -> tuple[int, int]:
        """Each side's profiled steps, the operators' and kernels' divisor (a run reloaded from the
        history kept its step window, not the trace's steps)."""
        return (len(self.before.trace_steps) or len(self.before.stretched_steps),
                len(self.after.trace_steps) or len(self.after.stretched_steps))

    @read_only_table
    def memory(self) -> pd.DataFrame:
        """Per measure and device: peaks and growth per step, before, after and delta (bytes)."""
        sides = [cmp.memory_measures(r.memory_steps, r.memory_growth, series_label) for r in (self.before, self.after)]
        return cmp.memory_diff(*sides)

    # -- set-up, claims, ranks, notes ----------------------------------------------------------
    @cached_property
    def changes(self) -> tuple[str, ...]:
        """What differs in set-up, in words; for a trace file, that it is unknown."""
        if self._setup is None:
            return (cmp.UNKNOWN_SETUP, *(c.text for c in cmp.device_change(self._devices)))
        return tuple(c.text for c in self._setup)

    @cached_property
    def tried_suggestion(self) -> "Suggestion | None":
        """The before run's suggestion of the ``tried`` kind, when it made one."""
        return next((s for s in self.before.suggestions if s.kind == self.tried), None)

    @cached_property
    def stated_vs_measured(self) -> str | None:
        """With ``tried``: the before run's claim for that suggestion beside the measured speed-up
        of the same quantity (samples/s for a claim in samples/s, step time otherwise)."""
        if self.tried is None:
            return None
        b, a = self._steps
        s = self.tried_suggestion
        if s is None:
            return cmp.stated_vs_measured(None, f"no '{self.tried}' suggestion in the {self.before_label} run",
                                          self.speedup, self.speedup_ci, bound=False)
        stated = (f"at most {s.gain:.2f}×" if s.claim == "at_most"
                  else f"about {s.gain:.2f}× (estimate, {s.gain_range[0]:.2f}–{s.gain_range[1]:.2f}×)")
        gain, interval, quantity = self.speedup, self.speedup_ci, "step time"
        if s.kind in cmp.PER_SAMPLE_KINDS:
            quantity = "samples/s"
            counted = all(len(x.samples) and np.isfinite(x.samples).all() and x.samples.sum() > 0 for x in (b, a))
            gain, interval = ((cmp.speedup(b.ms, a.ms, b.samples, a.samples),
                               cmp.speedup_interval(b.ms, a.ms, b.samples, a.samples, drift=self._drift))
                              if counted else (None, None))
        return cmp.stated_vs_measured(s.gain_range, stated, gain, interval, bound=s.claim == "at_most",
                                      steps=(len(b.ms), len(a.ms)), quantity=quantity, drift=self._drift)

    @read_only_table
    def ranks(self) -> pd.DataFrame:
        """Per rank both runs have (distributed directories): mean step ms and speed-up."""
        return cmp.rank_speedups({k: _avg_ms(r) for k, r in self.before.ranks.items()},
                                 {k: _avg_ms(r) for k, r in self.after.ranks.items()})

    @cached_property
    def notes(self) -> tuple[str, ...]:
        """What to keep in mind when reading the comparison."""
        return tuple(_notes(self))

    # -- output ----------------------------------------------------------------------------------
    def to_text(self) -> str:
        return bundle.comparison_text(self)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The standalone static HTML comparison; written to ``path`` when given."""
        html = bundle.comparison_html(self, standalone=path is not None)
        if path is not None:
            Path(path).expanduser().write_text(html, encoding="utf-8")
        return html

    def explorer(self) -> Any:
        """The Compare view (an ipywidgets widget): the two runs' charts side by side."""
        return bundle.comparison_view(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle.comparison_mimebundle(self, include, exclude)

    def __repr__(self) -> str:
        return f"<nbprofiler.Comparison {self.before_label} → {self.after_label}: {self.verdict}>"


def _step_source(report: Report) -> cmp.StepSource:
    return cmp.StepSource(report.step_window.steps, report.stretched_steps, report.sampled_steps)


def _other_cores(report: Report) -> float | None:
    return getattr(report.run, "other_cores", None)  # measured by a live run only


def _avg_ms(report: "Report | RankSummary") -> float | None:
    """The mean step time in ms, of a report or of a rank's summary (``ranks``)."""
    avg = report.summary.get("avg_step_us")
    return None if avg is None else float(avg) / 1e3


def _parts(report: Report, kind: str) -> pd.DataFrame:
    """The report's per-step parts of ``kind``, over the steps its figures are over."""
    parts = bundle.breakdown_parts(report, kind)[1]
    return report.step_window.of(parts) if len(parts) else parts


def _tried_name(kind: str) -> str:
    return {"dataloader": "DataLoader", "amp": "mixed precision", "compile": "torch.compile",
            "launch_bound": "torch.compile", "tf32": "TF32 matmuls", "fp8": "FP8 Linear layers"}.get(kind, kind)


def _notes(c: Comparison) -> list[str]:
    sides = ((c.before_label, c.before), (c.after_label, c.after))
    out = []
    if cmp.different_devices(c._devices):
        out.append(f"The runs ran on different devices ({c.before.device.name}, {c.after.device.name}): the "
                   "speed-up is the devices' as much as the change's.")
    if any(change.what == "schedule" for change in c._setup or ()):
        out.append("The schedules differ, so the runs profiled different steps of the loop.")
    if len({breakdown_kind(r) for _, r in sides}) > 1:
        out.append("One run has device activity and the other none: the breakdown compares host phases for both.")
    for label, report in sides:
        if not report.has_trace:
            out.append(f"The {label} run has no trace: its operators, kernels and breakdown are empty.")
        if "operators" in report.stored:
            out.append(f"The {label} run is from the history, which keeps only its largest operators and kernels: "
                       "a name new or vanished beside it may only have been below them.")
        if report.partial:
            out.append(f"The {label} run is partial (it raised, was interrupted, or stopped before its schedule "
                       "ended): its steps may not be typical.")
    if c._load_note is not None:
        out.append(c._load_note)
    return out + _step_notes(c)


def _step_notes(c: Comparison) -> list[str]:
    """Which steps the speed-up is over, and whether there were enough of them."""
    b, a = c._steps
    if b.label == a.label:
        out = [f"The speed-up is over {b.label}, in each run."]
    else:
        out = [f"The speed-up is over {b.label} in the {c.before_label} run and {a.label} in the "
               f"{c.after_label} run."]
    out += cmp.more_steps_note(c.speedup_ci, b, a, c._drift)
    if min(len(b.ms), len(a.ms)) == 1:
        out.append(cmp.ONE_STEP[0].upper() + cmp.ONE_STEP[1:] + ".")
    return out


def breakdown_kind(report: Report) -> str:
    return bundle.breakdown_parts(report)[0]
