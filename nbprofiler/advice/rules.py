"""The suggestion rules: each reads measured figures and proposes one change.

``suggest(report)`` runs every rule and orders what they find by ``gain``,
largest first, so the change that can help most is read first. A rule fires
only past its threshold in ``thresholds.py``; below it, it says nothing (a
loader that keeps up gets no DataLoader advice). A run where no rule fires
gets one ``nothing_to_improve`` result that lists what was checked and what
could not be (and why), so a renderer never shows an empty, ambiguous section.

Each rule returns its verdicts (``Verdict``): fired, with its suggestions;
passed, with the figures it saw; or not run, with the reason. "Nothing to
improve" is built from those alone, so a check is listed as passed only when its
own rule ran and did not fire. ``verdicts(report)`` gives them all.

A ``gain`` is a claim (``Suggestion.claim``): "at most" where it is Amdahl's law on
a measured share of the step that a change can at best remove (data waiting, GPU
idle after syncs), a true bound; an estimate with its range where it extrapolates
(a larger batch, tensor cores, cuDNN's algorithms, torch.compile), with what it assumes.
"""
from __future__ import annotations

import math
import re
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pandas as pd

from ..analysis.memory import GROWTH_MIN_STEADY_STEPS, GROWTH_MIN_STEPS, relative_devices, series_label
from ..analysis.retention import KEPT_LINE_COLUMNS, LeakLine, fixed_statement, kept_bytes_by_line, leak_line
from ..analysis.sync_source import SyncLine, sync_lines
from ..records import LoaderRecord
from ..format import fmt_bytes, fmt_rate, fmt_us
from . import measures as M
from . import thresholds as T
from .code_check import compiled
from .cell_names import (COMPILE_COST, TrainingStep, compile_code, model_code, model_name, module_name,
                         training_step)
from .compile_gain import compile_gain
from ..analysis.model_time import ModelTime, model_times
from .dataloader_plan import Cores, LoaderPlan, measure_waiting, plan
from .loader_code import Expr, LoaderArgs, args_from_record, dataloader_call
from .safe_names import code_name, commented, copyable
from . import fixed_share, precision
from ..analysis.large_matmuls import large_matmuls
from .step_code import accumulation_code, replaced_lines
from ..machine import local_world_size
from .suggestion import (NOTHING_TO_IMPROVE, Severity, Suggestion, Verdict, amdahl, estimate_words, fired, not_run,
                         passed, severity_for as _severity)

if TYPE_CHECKING:
    from ..report import Report

_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}
_CORES_PREAMBLE = ("import os\n# CPU cores this process may use, shared by the ranks on this machine\n"
                   'cores = len(os.sched_getaffinity(0)) // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))')


def suggest(report: "Report") -> list[Suggestion]:
    """Every suggestion for ``report``, largest expected gain first.

    Empty when the run completed no step, or when no check fired and no step
    was profiled (then "nothing to improve" would claim what was not looked
    at; the report's notes say why). Otherwise at least one entry: the
    suggestions, or a single one of kind ``nothing_to_improve``.
    """
    checked = verdicts(report)
    found = [compiled(s) for v in checked for s in v.suggestions]
    if not found:
        return [nothing_to_improve(checked)] if checked and len(report.trace_steps) else []
    return sorted(found, key=lambda s: (-s.gain, _SEVERITY_ORDER[s.severity], s.kind))


def verdicts(report: "Report") -> list[Verdict]:
    """What every check concluded on ``report``, in the order "nothing to improve" lists
    them; none when the run completed no step, as there is nothing to judge."""
    if report.steps.empty:
        return []
    facts = Facts(report)
    return [v for rule in RULES for v in rule(facts)]


class Facts:
    """The measurements of one report, computed once and shared by the rules."""

    def __init__(self, report: "Report") -> None:
        self.report = report

    @cached_property
    def data_wait(self) -> M.DataWait | None:
        return M.data_wait(self.report)

    @cached_property
    def device_time(self) -> M.DeviceTime | None:
        return M.device_time(self.report)

    @cached_property
    def kernel_mix(self) -> M.KernelMix | None:
        return M.kernel_mix(self.report, T.TINY_KERNEL_US)

    @cached_property
    def syncs(self) -> pd.DataFrame:
        return M.sync_points(self.report)

    @cached_property
    def memory(self) -> M.DeviceMemory | None:
        return M.device_memory(self.report)

    @cached_property
    def cpu(self) -> M.CpuOverhead | None:
        return M.cpu_overhead(self.report, T.CPU_FIXED_COST_QUANTILE)

    @cached_property
    def h2d(self) -> M.H2DCopies | None:
        return M.h2d_copies(self.report)

    @cached_property
    def cell_step(self) -> TrainingStep | None:
        """The training step the cell shows; None for trace files (no cell)."""
        return training_step(self.report.run.cell_source if self.report.run is not None else None)

    @property
    def training_step(self) -> TrainingStep | None:
        """The cell's training step, for code in its own names: ``cell_step`` where the lines its
        edits copy may be copied (``may_copy``), else None (``step_not_copied`` says which)."""
        step = self.cell_step
        return step if step is not None and self.may_copy(*step.copied) else None

    @property
    def step_not_copied(self) -> bool:
        """Whether the cell shows a training step whose lines may not be copied."""
        return self.cell_step is not None and self.training_step is None

    def may_copy(self, first: int, last: int) -> bool:
        """Whether cell lines ``first`` to ``last`` may be copied into code: all of a cell this
        kernel ran (``Report.made_here``: the user's own), those ``safe_names.copyable`` allows
        of any other (a file's or the history's, written by whoever made it)."""
        source = self.report.run.cell_source if self.report.run is not None else None
        if not source:
            return False
        return self.report.made_here or copyable(source, first, last)

    @cached_property
    def main_loader(self) -> LoaderRecord | None:
        """The loader that delivered the most batches: the training loader."""
        run = self.report.run
        if run is None or not run.loaders:
            return None
        return max(run.loaders, key=lambda r: r.batches)

    @cached_property
    def cores(self) -> Cores | None:
        """The cores a live run's loader shares with its compute; None for trace files, which
        come from a machine we cannot see. Compute keeps torch's intra-op threads busy on a
        CPU run; where it runs on a GPU, or the threads were not recorded, the main process
        keeps ``CORES_KEPT_FOR_MAIN``."""
        run = self.report.run
        if run is None:
            return None
        threads = run.intra_op_threads if run.intra_op_threads and not self.on_gpu else T.CORES_KEPT_FOR_MAIN
        return Cores(run.cpu_count, local_world_size(), threads)

    @cached_property
    def loader_plans(self) -> list[tuple[LoaderPlan, LoaderRecord | None]]:
        """The plan for each loader that keeps the steps waiting, with its record (None: a trace)."""
        return _loader_plans(self)

    @cached_property
    def dataloader(self) -> list[Suggestion]:
        """The DataLoader suggestions (the sync rule needs to know whether they pin memory)."""
        return [s for p, record in self.loader_plans if (s := _loader_suggestion(self, p, record)) is not None]

    @property
    def on_gpu(self) -> bool:
        return self.report.device.kind in ("cuda", "rocm")

    @property
    def step(self) -> str:
        """The step time every suggestion quotes, named: "avg step 205 ms over the 3 profiled steps"."""
        window = self.report.step_window
        return f"avg step {_ms(window.avg_step_us / 1e3)} over {window.label}" if window.avg_step_us else window.label


# The checks as "nothing to improve" names them. Rules that need the same measurement name
# the same check, so a measurement that is missing is listed once, not once per rule.
DATA_LOADING = "data loading"
SYNCS = "host-device syncs"
GPU_IDLE = "GPU idle time and batch size"
DEVICE_MEMORY = "device memory and batch size"
KERNELS = "tensor cores and cuDNN settings"
TF32 = "TF32 for fp32 matmuls"
FP8 = "FP8 for large matmuls"
CPU_BATCH = "the CPU batch size"
SMALL_OPS = "many small operators on CPU"
GROWTH = "memory growth"
NO_DEVICE_TIME = "no device activity was recorded in the profiled steps"
NO_ABSOLUTE_MEMORY = "the trace has no absolute device memory figures"
NO_KERNELS = "no kernel was recorded in the profiled steps"


def _gpu_not_run(f: Facts, check: str, reason: str) -> list[Verdict]:
    """A GPU check that could not run; on a CPU run it does not apply, so it has no verdict."""
    return [not_run(check, reason)] if f.on_gpu else []


def _ms(value: float) -> str:
    """Milliseconds as the report's header prints them, so a quoted step time reads the same."""
    return fmt_us(value * 1e3)


# -- DataLoader ------------------------------------------------------------------------------
def dataloader_rule(f: Facts) -> list[Verdict]:
    """Loaders whose waiting exceeds ``DATALOADER_WAIT_SHARE`` of the step.

    Passed only where a DataLoader was seen: a run without one has nothing to vouch for.
    """
    if f.dataloader:
        return [fired(DATA_LOADING, f.dataloader)]
    wait = f.data_wait
    if wait is None or not M.saw_dataloader(f.report):
        return [not_run(DATA_LOADING, "no DataLoader was seen in the profiled steps")]
    waiting = measure_waiting(wait, wait.compute_ms, M.wait_per_step(f.report, None))
    after = ", not counting one-time start-up waits" if waiting.startup_ms > 0 else ""
    if waiting.steady_share > T.DATALOADER_WAIT_SHARE:
        return [passed(DATA_LOADING, f"the DataLoader keeps each step waiting {waiting.steady_share:.1%}{after}: "
                                     f"all of it gone would give at most {amdahl(waiting.steady_share):.2f}×, within "
                                     f"a loop's run-to-run noise (under {T.DATALOADER_MIN_GAIN:.2f}×), so no change "
                                     "is proposed",
                       data_wait_share=round(waiting.steady_share, 4))]
    return [passed(DATA_LOADING, f"the DataLoader keeps up (waiting {waiting.steady_share:.1%} of the step{after}, "
                                 f"under {T.DATALOADER_WAIT_SHARE:.0%})",
                   data_wait_share=round(waiting.steady_share, 4))]


def tuner_call(loader_name: str, num_workers: object = None) -> str:
    """The ``tune_dataloader`` call that measures ``num_workers`` against the loader's own setting
    in the training loop, in the user's names (``step`` is one iteration of their loop); without
    ``num_workers``, the tuner's own candidates."""
    if num_workers is None:
        return f"nbprofiler.tune_dataloader({loader_name}, step=step)"
    return (f"nbprofiler.tune_dataloader({loader_name}, [{{\"num_workers\": {num_workers!r}}}], step=step), "
            "where step(batch) runs one iteration of your loop on a batch")


def _measure_card(f: Facts, p: LoaderPlan, record: LoaderRecord | None, loader_name: str) -> Suggestion:
    """A loader that keeps the steps waiting where more workers would use cores compute uses: from
    one run, they may speed the loop up or slow it down, so the card shows no code, only the range
    and the measurement that tells."""
    assert p.cores is not None
    w, n = p.waiting, p.to_measure or 1
    low, high = p.measure_range()
    evidence, facts = _loader_figures(f, p, record, loader_name)
    evidence.update(changed=[], to_measure={"num_workers": n})
    why = (f"the loop waits {_ms(w.steady_ms / w.batches)} for each batch, and taking a batch from a "
           f"worker process costs the loop up to {_ms(T.WORKER_HANDOVER_MS)} of its own (measured), which a run "
           "without workers cannot show" if p.handover else
           "the loading waits on I/O, but its computing part does not fit on the cores compute leaves free"
           if p.io_bound else f"compute's {p.cores.compute} intra-op thread(s) use all {p.cores.per_rank} core(s) "
                              "this process may use")
    assumes = (f"between each batch's hand-over from the worker costing up to {_ms(T.WORKER_HANDOVER_MS)} and "
               "costing nothing" if p.handover else
               f"num_workers={n} takes cores from compute: between compute slowing in proportion to the cores "
               "it gives up and compute keeping its speed")
    return Suggestion(
        kind="dataloader",
        title=f"DataLoader `{loader_name}` keeps each step waiting {w.wait.share:.0%} of its time: measure "
              f"num_workers={n} in the loop",
        severity="low", evidence=evidence, facts=tuple(facts), code=None,
        detail=f"{why}, so this run cannot tell whether workers would speed the loop up or slow it down; "
               "no change is proposed until it is measured",
        claim="estimate", gain=1.0, gain_low=min(low, 1.0), gain_high=max(high, 1.0),
        expected_gain=f"between {min(low, 1.0):.2f}× and {max(high, 1.0):.2f}× step time, {assumes}: one run cannot "
                      f"tell. A measurement to make: {tuner_call(loader_name, n)}",
    )


def _loader_plans(f: Facts) -> list[tuple[LoaderPlan, LoaderRecord | None]]:
    """A plan for each loader that keeps the steps waiting.

    Live runs judge each recorded loader by its own waiting; a trace (which has
    no loader records) is judged by its DataLoader time, with generic code.
    The one-time start-up of persistent workers does not count: no setting
    removes it, and over a whole training run it is negligible.
    """
    total = f.data_wait
    if total is None:
        return []
    run = f.report.run
    pairs = ([(M.loader_wait(f.report, r), r) for r in run.loaders] if run is not None and run.loaders
             else [(total, None)])
    plans = []
    for wait, record in pairs:
        if wait is None or wait.share <= T.DATALOADER_WAIT_SHARE or amdahl(wait.share) < T.DATALOADER_MIN_GAIN:
            continue
        workers = record.num_workers if record is not None else _trace_loader_args(f)[1]
        waiting = measure_waiting(wait, total.compute_ms, M.wait_per_step(f.report, record))
        pin = f.on_gpu and not (record is not None and record.pin_memory) and f.h2d is not None
        p = plan(waiting, record, workers, f.cores, pin)
        if p is not None:
            plans.append((p, record))
    return plans


def _loader_suggestion(f: Facts, p: LoaderPlan, record: LoaderRecord | None) -> Suggestion | None:
    """One loader's plan (``dataloader_plan``) in words; where it changes nothing because one
    run cannot tell whether more workers would pay, the measurement to make (``_measure_card``)."""
    args = args_from_record(record) if record is not None else _trace_loader_args(f)[0]
    if p.contended and not p.changed:
        return _measure_card(f, p, record, args.loader_name)
    changes, preamble = _loader_changes(p, args)
    evidence, facts = _loader_figures(f, p, record, args.loader_name)
    evidence["changed"] = sorted(changes)
    reasons = _loader_reasons(p, args.loader_name)
    code = _loader_code(args, changes, preamble)
    if code is not None and record is not None and record.rebuilt_differs:
        code = None
        reasons.append(f"no code is shown: {record.rebuilt_differs}; change these settings in your own "
                       "DataLoader call")
    name = "of this trace" if record is None else (f"`{args.loader_name}`" if code_name(record.name)
                                                    else f"over {record.dataset_type}")
    return Suggestion(
        kind="dataloader",
        title=f"DataLoader {name} keeps each step waiting {p.waiting.wait.share:.0%} of its time: "
              f"{_loader_verb(changes)}",
        severity=_severity(p.bound),  # what is at stake; ``gain`` is what these settings can win
        evidence=evidence,
        facts=tuple(facts),
        code=code,
        detail="; ".join(reasons),
        **(_startup_claim(f, record, args.loader_name) if record is not None and _only_startup(p)
           else _loader_claim(p, bool(changes), args.loader_name)),
    )


def _only_startup(p: LoaderPlan) -> bool:
    """The plan keeps the workers the loader has and only stops restarting them (persistent workers),
    which removes waits the profiled steps' steady waiting leaves out: the start-ups."""
    return p.persistent and p.num_workers is None and p.split is None and bool(p.workers)


def _startup_claim(f: Facts, record: LoaderRecord, loader_name: str) -> dict[str, Any]:
    """What persistent workers can give: at most the loader's waiting in every step the cell ran
    and all the cell's time outside its steps gone (workers start before an epoch's first batch and
    stop after its last, partly outside any step), over the cell's whole time: a true bound."""
    run = f.report.run
    steps = run.steps if run is not None else None
    stepped = float(steps["wall_ms"].sum()) if steps is not None and "wall_ms" in steps else 0.0
    total = max(run.wall_s * 1e3 if run is not None else 0.0, stepped)
    removable = min(sum(record.wait_ms_by_step.values()) + total - stepped, 0.99 * total)
    bound = total / (total - removable) if total > 0 else 1.0
    text = (f"at most {bound:.2f}× over the cell's {_ms(total)}, if the {_ms(removable)} it spent waiting for "
            f"{loader_name} or outside its steps all disappeared: persistent workers remove its workers' start-ups "
            "and shut-downs, once per pass over the data")
    return dict(gain=bound, expected_gain=f"{text}. Measure it in the loop: {tuner_call(loader_name)}")


def _loader_claim(p: LoaderPlan, changed: bool, loader_name: str) -> dict[str, Any]:
    """What the settings can give. Workers on cores compute does not use: at most all data
    waiting gone (Amdahl on the measured share holds while compute keeps its cores). With a
    thread split compute may slow down, so the figure is an estimate between compute at
    its speed and compute slowed in proportion to the threads it gives up."""
    wait = p.waiting.wait
    measure = f"Measure it in the loop: {tuner_call(loader_name, p.num_workers)}"
    if p.split is not None and p.num_workers is not None:
        low, high = min(p.gain_low, p.gain), p.gain
        mid = (low + high) / 2
        assumes = (f"{p.num_workers} worker(s) load a batch as fast as the main process did, and compute on "
                   f"{p.split.threads} thread(s) instead of {p.cores.compute if p.cores else '?'} takes between the "
                   f"same time and {p.split.slowdown:.2f}× as long")
        return dict(claim="estimate", gain=mid, gain_low=low, gain_high=high,
                    expected_gain=f"{estimate_words(low, mid, high, 'step time', assumes)}. {measure}")
    if changed and p.gain < p.bound - 0.005:  # the workers' own loading speed bounds it more tightly
        text = (f"at most {p.gain:.2f}× step time ({_ms(wait.step_ms)} → {_ms(wait.step_ms / p.gain)} per step), "
                "if each worker loads a batch no faster than the loop did and compute keeps its cores; "
                f"all data waiting gone would be 1/(1-{wait.share:.2f}) = {p.bound:.2f}×")
        return dict(gain=p.gain, expected_gain=f"{text}. {measure}")
    text = (f"at most 1/(1-{wait.share:.2f}) = {p.bound:.2f}× step time if data waiting disappears "
            "and compute keeps its cores")
    return dict(gain=p.bound if changed else 1.0, expected_gain=f"{text}. {measure}")


def _loader_changes(p: LoaderPlan, args: LoaderArgs) -> tuple[dict[str, object], str]:
    """The plan as changed DataLoader arguments, and the lines the call needs before it: a
    thread split, or for a trace the cores of the machine that runs the code (not this one's)."""
    changes: dict[str, object] = {}
    preamble = ""
    if p.sampler:
        preamble = f"from torch.utils.data import BatchSampler, {p.sampler}"
        changes["batch_size"] = None
        changes["sampler"] = Expr(f"BatchSampler({p.sampler}({args.dataset!r}), batch_size={args.batch_size}, "
                                  f"drop_last={args.drop_last})")
    elif p.num_workers is not None:
        changes["num_workers"] = p.num_workers
        if p.split is not None and p.cores is not None:
            preamble = (f"import torch\ntorch.set_num_threads({p.split.threads})  "
                        f"# compute keeps {p.split.threads} of the {p.cores.per_rank} cores, "
                        f"the {p.num_workers} worker(s) the rest")
    elif p.all_cores:
        preamble = _CORES_PREAMBLE
        changes["num_workers"] = Expr(f"min({p.trace_workers}, max(1, cores - {T.CORES_KEPT_FOR_MAIN}))")
    for arg, value, wanted in (("prefetch_factor", T.PREFETCH_SUGGESTED, p.prefetch),
                               ("persistent_workers", True, p.persistent), ("pin_memory", True, p.pin)):
        if wanted:
            changes[arg] = value
    return changes, preamble


def _loader_figures(f: Facts, p: LoaderPlan, record: LoaderRecord | None,
                    loader_name: str) -> tuple[dict[str, object], list[str]]:
    """The measured figures behind the plan: as raw numbers (evidence) and in words (facts)."""
    w = p.waiting
    wait = w.wait
    evidence: dict[str, object] = {
        "wait_share": round(wait.share, 4),
        "wait_ms_per_step": round(wait.wait_ms, 3),
        "step_ms": round(wait.step_ms, 3),
        "compute_ms_per_step": round(w.compute_ms, 3),
        "steps": wait.steps,
        "batches_per_step": wait.batches,
    }
    facts = [f"data wait: {wait.share:.0%} of the step, {_ms(wait.wait_ms)} of {_ms(wait.step_ms)} ({f.step})",
             f"compute: {_ms(w.compute_ms)} per step"]
    if w.batches != 1:
        facts.append(f"each step consumed {w.batches:g} batches: {_ms(wait.wait_ms / w.batches)} of waiting per batch")
    if record is not None:
        evidence.update(loader=record.name, dataset=record.dataset_name or record.dataset_type,
                        batch_size=record.batch_size, num_workers=record.num_workers)
        if record.num_workers == 0 and record.wait_cpu_share is not None:
            evidence["loading_cpu_share"] = round(record.wait_cpu_share, 3)
            facts.append(f"while it waited for batches, the loop's thread computed {record.wait_cpu_share:.0%} of "
                         "the time" + (": the loading waits on I/O" if p.io_bound else ""))
        facts.append(f"{loader_name} = DataLoader({code_name(record.dataset_name) or record.dataset_type}, "
                     f"batch_size={record.batch_size}, num_workers={record.num_workers}, "
                     f"persistent_workers={record.persistent_workers}, pin_memory={record.pin_memory})")
    elif p.workers == 0:
        evidence["num_workers"] = "0 (the trace shows _SingleProcessDataLoaderIter)"
        facts.append("num_workers=0: the trace shows _SingleProcessDataLoaderIter")
    if f.cores is not None:
        c = f.cores
        evidence.update(usable_cpus=c.cpus, local_ranks=c.ranks, compute_threads=c.threads)
        facts.append(f"{c.cpus} CPU core(s) this process may use, shared by {c.ranks} local rank(s); compute keeps "
                     f"{c.compute} of them busy" + (f" ({c.threads} intra-op thread(s))" if not f.on_gpu else ""))
    if w.startup_ms > 0:
        evidence["startup_ms_per_step"] = round(w.startup_ms, 3)
        facts.append(f"worker start-up: {_ms(w.startup_ms)} per step on average, counted apart from steady loading")
    copies = f.h2d
    if p.pin and copies is not None:
        evidence.update(h2d_copies=copies.count, h2d_bytes=copies.bytes, h2d_copies_pageable=copies.pageable,
                        h2d_pageable_us=round(copies.pageable_us, 3))
        fact = (f"{copies.count} host-to-device copies ({fmt_bytes(copies.bytes)}) in the trace, "
                f"{copies.pageable} of them from pageable memory")
        if copies.pageable and not math.isnan(copies.pageable_gb_per_s):
            evidence["h2d_pageable_gb_per_s"] = round(copies.pageable_gb_per_s, 2)
            fact += f", at {fmt_rate(copies.pageable_gb_per_s)}"
            if not math.isnan(copies.link_gb_per_s):
                evidence["host_link_gb_per_s"] = copies.link_gb_per_s
                fact += f" of the {fmt_rate(copies.link_gb_per_s)} the host link carries one way"
        facts.append(fact)
    return evidence, facts


def _loader_reasons(p: LoaderPlan, loader_name: str) -> list[str]:
    """Why each change helps, in the order the changes are made."""
    reasons = [_more_loading_reason(p)] if p.waiting.slow else []
    if p.split is not None and p.cores is not None and p.num_workers is not None:
        reasons.append(f"{p.num_workers} worker(s) and compute's {p.cores.compute} thread(s) would compete for "
                       f"{p.cores.per_rank} core(s): torch.set_num_threads({p.split.threads}) gives the workers "
                       f"theirs, and compute may take up to {p.split.slowdown:.2f}× as long with fewer threads")
    if p.contended and p.cores is not None:
        reasons.append(f"more workers are not proposed: they would take cores compute uses ({p.cores.compute} "
                       f"thread(s) on {p.cores.per_rank} core(s)), which one run cannot tell pays; measure it: "
                       f"{tuner_call(loader_name, p.to_measure)}")
    if p.still_waits:
        reasons.append("loading a batch still takes longer than a step's compute with these workers: make each "
                       "sample cheaper to load (cache decoded data, augment on the GPU), or, if loading waits on "
                       "I/O rather than the CPU, more workers than cores help: measure with tune_dataloader")
    if p.prefetch:
        median, mean = p.prefetch
        reasons.append(f"waiting is bursty (median {_ms(median)} against a mean of {_ms(mean)}): deeper prefetching "
                       "absorbs slow batches")
    if p.persistent:
        reasons.append(f"workers were started {p.restarts} times (once per epoch); persistent workers start once"
                       if p.restarts > 1 else
                       "persistent workers are not restarted at every epoch or re-run of the cell")
    if p.pin:
        reasons.append("pinned batches copy to the GPU asynchronously with .to(device, non_blocking=True)")
    return reasons


def _more_loading_reason(p: LoaderPlan) -> str:
    """Why steady loading gets faster with the plan, or why it cannot with these cores."""
    if p.sampler:
        return ("a TensorDataset can index a whole batch at once: one indexing call per batch instead of one "
                "per sample and a collate, with no worker processes to feed")
    if p.all_cores:
        now = "has no workers" if p.workers == 0 else "already uses workers, but too few"
        return (f"the trace's loader {now}, and the trace does not say how many cores its machine has: use that "
                f"machine's cores less {T.CORES_KEPT_FOR_MAIN} for the main process, up to {p.trace_workers} workers")
    if p.num_workers is None or p.load_ms is None:
        spare = p.cores.spare if p.cores is not None else 0
        return f"num_workers={p.workers} already uses all {spare} CPU core(s) compute leaves free"
    w = p.waiting
    per_batch = f" ({_ms(p.load_ms / w.batches)} to load a batch)" if p.workers == 0 else ""
    who = f"{p.num_workers} worker processes deliver" if p.num_workers != 1 else "1 worker process delivers"
    what = "a batch" if w.batches == 1 else f"a step's {w.batches:g} batches"
    io = (": the loading waits on I/O, and waiting workers need no CPU cores of their own, so more of them than "
          "cores overlap the waits" if p.io_bound else "")
    return (f"{who} {what} every {_ms(p.load_ms / p.num_workers)} or faster{per_batch}, "
            f"against {_ms(w.compute_ms)} of compute per step{io}")


def _loader_verb(changes: dict[str, object]) -> str:
    """The title's change: the one that matters most."""
    if "sampler" in changes:
        return "index whole batches with a BatchSampler"
    if "num_workers" in changes:
        return f"use num_workers={changes['num_workers']!r}"
    return "use " + ", ".join(f"{k}={v!r}" for k, v in changes.items()) if changes else "the loader is at its limit"


def _loader_code(args: LoaderArgs, changes: dict[str, object], preamble: str) -> str | None:
    """The user's DataLoader call with the changes; moving batches with non_blocking goes with pinning."""
    if not changes:
        return None
    code = dataloader_call(args, changes, preamble=preamble)
    if "pin_memory" in changes:
        code += "\n# in the training loop:\nx, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)"
    return code


def _trace_loader_args(f: Facts) -> tuple[LoaderArgs, int | None]:
    """Generic loader arguments for a trace, and its worker count (None: some, unknown).

    Pageable host-to-device copies show the loader did not pin memory; without
    workers there is nothing to persist or prefetch. The rest the trace cannot say.
    """
    workers = 0 if M.trace_loader_workers(f.report) == "none" else None
    unknown = {"prefetch_factor"}
    if workers is None:
        unknown |= {"num_workers", "persistent_workers"}
    if f.h2d is None or f.h2d.pageable == 0:
        unknown.add("pin_memory")
    args = LoaderArgs(loader_name="loader", dataset=Expr("dataset"), batch_size=Expr("batch_size"), shuffle=None,
                      num_workers=0 if workers == 0 else Expr("num_workers"), unknown=frozenset(unknown))
    return args, workers


# -- batch size --------------------------------------------------------------------------------
def batch_size_up_rule(f: Facts) -> list[Verdict]:
    """GPU busy under ``LOW_GPU_UTILIZATION`` of the non-waiting time, with memory to spare."""
    dt, mem, why = f.device_time, f.memory, _why_not_timed(f)
    if dt is None or why is not None:
        return _gpu_not_run(f, GPU_IDLE, why or NO_DEVICE_TIME)
    if mem is None or mem.activations <= 0:
        return _gpu_not_run(f, DEVICE_MEMORY, NO_ABSOLUTE_MEMORY if mem is None else
                            "no activation memory was measured within a step")
    util = dt.utilization_without_data_wait
    if util >= T.LOW_GPU_UTILIZATION:
        return [passed(GPU_IDLE, f"the GPU is busy {util:.0%} of the time it does not wait for data")]
    found = _larger_batch(f, util, mem)
    return ([fired(GPU_IDLE, [found])] if found is not None else
            [passed(DEVICE_MEMORY, f"memory has no room for a batch {T.MIN_BATCH_GROWTH}× as large")])


def _larger_batch(f: Facts, util: float, mem: M.DeviceMemory) -> Suggestion | None:
    """The largest batch that fits ``MEMORY_TARGET_SHARE`` of the device, or None when it
    is not ``MIN_BATCH_GROWTH`` times the current one."""
    room = T.MEMORY_TARGET_SHARE * mem.total - mem.static
    record = f.main_loader
    batch = record.batch_size if record is not None else None
    if batch:
        per_sample = mem.activations / batch
        new_batch = M.largest_power_of_two(room / per_sample)
        factor = new_batch / batch
    else:
        per_sample = None
        factor = float(M.largest_power_of_two(room / mem.activations))
        new_batch = None
    if factor < T.MIN_BATCH_GROWTH:
        return None
    gain = max(1.0, min(1.0 / max(util, 1e-9), factor))
    peak = mem.static + mem.activations * factor
    evidence = {
        "gpu_utilization": round(util, 4),
        "peak_bytes": mem.peak,
        "static_bytes": mem.static,
        "activation_bytes_per_step": mem.activations,
        "device_memory_bytes": mem.total,
        "batch_size": batch,
    }
    facts = [f"GPU busy {util:.0%} of the step once data waiting is taken out ({f.step})",
             f"peak memory {fmt_bytes(mem.peak)} of {fmt_bytes(mem.total)}: {fmt_bytes(mem.static)} held between steps "
             f"(parameters, gradients, optimizer state) and {fmt_bytes(mem.activations)} more within a step"]
    if per_sample is not None:
        evidence["activation_bytes_per_sample"] = per_sample
        facts.append(f"{fmt_bytes(per_sample)} of activations per sample at batch size {batch}")
    code = _batch_code(record, new_batch, factor)
    size = f"batch_size={new_batch}" if new_batch else f"a {int(factor)}× larger batch"
    assumes = (f"the host's work per step stays the same and the GPU's per sample too (min(1/{util:.2f} GPU "
               f"utilization, {factor:g}× batch)); up to the batch's {factor:g}× where the GPU's per-sample time "
               "falls with the batch, no gain where the host's work grows with it")
    return Suggestion(
        kind="batch_size",
        title=f"The GPU is busy only {util:.0%} of the step and memory allows {size}",
        severity=_severity(gain),
        evidence=evidence,
        facts=tuple(facts),
        expected_gain=(estimate_words(1.0, gain, factor, "samples/s", assumes)
                       + f"; estimated peak {fmt_bytes(peak)} of {fmt_bytes(mem.total)} "
                       f"({T.MEMORY_TARGET_SHARE:.0%} target). "
                       "Measure it: nbprofiler.batch_size_curve(step_fn, sizes)"),
        gain=gain,
        claim="estimate",
        gain_low=1.0,
        gain_high=float(factor),
        code=code,
        detail=(f"activation memory {fmt_bytes(mem.activations)} per step (peak {fmt_bytes(mem.peak)} minus "
                f"{fmt_bytes(mem.static)} of parameters, gradients and optimizer state)"),
    )


def memory_near_limit_rule(f: Facts) -> list[Verdict]:
    """Peak allocated memory above ``MEMORY_NEAR_LIMIT_SHARE`` of the device."""
    mem = f.memory
    if mem is None:
        return _gpu_not_run(f, DEVICE_MEMORY, NO_ABSOLUTE_MEMORY)
    if mem.peak_share < T.MEMORY_NEAR_LIMIT_SHARE:
        return [passed(DEVICE_MEMORY, f"peak memory is {mem.peak_share:.0%} of the device",
                       peak_memory_share=round(mem.peak_share, 4))]
    return [fired(DEVICE_MEMORY, [_accumulation(f, mem)])]


def _accumulation(f: Facts, mem: M.DeviceMemory) -> Suggestion:
    """Half the micro-batch with gradient accumulation: the same effective batch, less memory."""
    record = f.main_loader
    batch = record.batch_size if record is not None else None
    half = batch // 2 if batch and batch >= 2 else None
    loader = None
    if record is not None and half:
        call = dataloader_call(args_from_record(record), {"batch_size": half},
                               preamble="from torch.utils.data import DataLoader")
        loader = (code_name(record.name) or "", call)
    code, lines = accumulation_code(f.training_step, loader, 2, f.step_not_copied)
    code += ("\n# or keep the batch and recompute activations in backward instead of storing them:\n"
             "# from torch.utils.checkpoint import checkpoint\n"
             "# out = checkpoint(block, x, use_reentrant=False)")
    saved = mem.activations / 2
    return Suggestion(
        kind="memory_near_limit",
        title=f"Peak memory is {mem.peak_share:.0%} of the device: one larger batch from out-of-memory",
        severity="high" if mem.peak_share >= T.MEMORY_CRITICAL_SHARE else "medium",
        evidence={"peak_bytes": mem.peak, "device_memory_bytes": mem.total, "peak_share": round(mem.peak_share, 4),
                  "activation_bytes_per_step": mem.activations, "reserved_peak_bytes": mem.reserved_peak,
                  "batch_size": batch, **lines},
        facts=(f"peak memory {fmt_bytes(mem.peak)}: {mem.peak_share:.0%} of the device's {fmt_bytes(mem.total)}",
               f"{fmt_bytes(mem.activations)} of activations and temporaries within a step, on top of "
               f"{fmt_bytes(mem.static)} held between steps",
               *([f"the allocator reserved up to {fmt_bytes(mem.reserved_peak)}"] if mem.reserved_peak else [])),
        expected_gain=(f"no speed-up: half the micro-batch with 2 accumulation steps frees about {fmt_bytes(saved)} "
                       f"of the {fmt_bytes(mem.activations)} of activations, for the same effective batch"),
        gain=1.0,
        code=code,
        detail="a longer sequence or a larger batch than the profiled ones would not fit" + replaced_lines(lines),
    )


def cpu_batch_rule(f: Facts) -> list[Verdict]:
    """On CPU: fixed per-step cost (per-operator overhead and glue, optimizer) above
    ``CPU_OVERHEAD_SHARE`` of the step (``CPU_SMALL_BATCH_OVERHEAD_SHARE`` at a small
    batch, whose per-sample cost also falls with the batch), which a larger batch shares out.
    Judged over every profiled step (``fixed_share.decide``): no decision where the steps
    disagree about the threshold's side, or where only Python that may run per sample could
    carry the share past it."""
    if f.report.device.kind != "cpu":
        return []
    co = f.cpu
    if co is None:
        return [not_run(CPU_BATCH, _why_no_steps(f) or "no operator call on the step thread to measure")]
    batch = f.main_loader.batch_size if f.main_loader is not None else None
    needed = (T.CPU_SMALL_BATCH_OVERHEAD_SHARE if batch and batch <= T.CPU_SMALL_BATCH else T.CPU_OVERHEAD_SHARE)
    loading = _loading_is_not_fixed(f, co, needed)
    if loading is not None:
        return [loading]
    d = fixed_share.decide(co.fixed_by_step, co.loose_by_step, co.compute_by_step, needed)
    at = f" at batch size {batch}" if batch else ""
    if d.outcome == "loose":
        return [not_run(CPU_BATCH, f"fixed per-step cost is {d.fixed.share:.0%} of the step (under {needed:.0%}{at}), "
                                   f"and another {co.loose_share:.0%} is Python outside operators "
                                   f"({_ms(co.loose_us / 1e3)} per step), which a larger batch shares out if it "
                                   "runs once per step and not if it runs per sample (a loop over the samples): "
                                   "one batch size cannot tell; measure it: nbprofiler.batch_size_curve(step_fn, "
                                   "sizes)")]
    if d.outcome == "unsure":
        interval = d.fixed if d.fixed.holds(needed) else d.possible
        what = "fixed per-step cost" if interval is d.fixed else "fixed per-step cost with the Python outside operators"
        return [not_run(CPU_BATCH, f"the {what} reads {interval.low:.0%}–{interval.high:.0%} of the step over "
                                   f"{d.steps} profiled steps, around the {needed:.0%} threshold{at}: about "
                                   f"{d.steps_needed} profiled steps would tell ({_more_steps(f, d.steps_needed)})")]
    found = _cpu_larger_batch(f, co, d) if d.outcome == "fixed" else None
    if found is not None and found.gain_low is not None and found.gain_low < T.SHOWN_MIN_LOW:
        change = found.title.rsplit(": ", 1)[-1]  # "use batch_size=64"
        return [not_run(CPU_BATCH, f"fixed per-step cost is {d.fixed.share:.0%} of the step{at}, but to {change} "
                                   f"is estimated at about {found.gain:.2f}× ({found.gain_low:.2f}–"
                                   f"{found.gain_high:.2f}×), a range that reaches below {T.SHOWN_MIN_LOW:g}×: the "
                                   "per-sample cost may rise with the batch, which one batch size cannot tell; "
                                   "measure it: nbprofiler.batch_size_curve(step_fn, sizes)")]
    if found is not None:
        return [fired(CPU_BATCH, [found])]
    why = (f" (under {needed:.0%}{at})" if d.outcome == "small" else
           f", but the dataset is too small for a batch {T.MIN_BATCH_GROWTH}× as large")
    return [passed(CPU_BATCH, f"fixed per-step cost is {d.fixed.share:.0%} of the step{why}",
                   cpu_fixed_share=round(d.fixed.share, 4))]


def _more_steps(f: Facts, steps: int | None) -> str:
    """How to profile ``steps`` steps: more active steps where the cell ran that many, a longer run otherwise."""
    ran = len(f.report.steps)
    if steps is not None and steps < ran:
        return f"%%torchprofile --active {steps}"
    return f"a run of more than {steps} steps with %%torchprofile --active {steps}"


def _loading_is_not_fixed(f: Facts, co: M.CpuOverhead, needed: float) -> Verdict | None:
    """Passed where the fixed cost is a large share of the step's compute but the step mostly
    waits for data. Loading a batch loads each of its samples, so the wait grows with the
    batch and a larger one shares none of it out (3 ms per sample at batch 8: 93% of the step
    waits, and batch 32 waits 4x as long). Counted against the whole step, the fixed cost may
    be under ``needed``; and where waiting is ``CPU_BATCH_MAX_WAIT_SHARE`` of the step or more,
    a larger batch can give little more than 1/(wait share) even if all compute were shared
    out (only the loader's per-batch overhead shares out too: batch 32 there measured 1.12×
    the samples/s of batch 8), less than the DataLoader fix, which comes first (the batch is
    judged again once the loader keeps up). None where the step barely waits, or the fixed
    cost still counts."""
    wait = f.data_wait
    if wait is None or wait.share <= T.DATALOADER_WAIT_SHARE:
        return None
    whole = co.share * (1.0 - wait.share)
    if whole > needed and wait.share < T.CPU_BATCH_MAX_WAIT_SHARE:
        return None
    return passed(CPU_BATCH, f"fixed per-step cost is {co.share:.0%} of the step's compute, but the step waits "
                             f"{wait.share:.0%} of its time for data, which grows with the batch: only {whole:.0%} of "
                             "the whole step is fixed, so make loading faster first",
                  cpu_fixed_share=round(co.share, 4), data_wait_share=round(wait.share, 4),
                  fixed_share_of_step=round(whole, 4))


def _cpu_larger_batch(f: Facts, co: M.CpuOverhead, d: fixed_share.FixedShareDecision) -> Suggestion | None:
    """A batch ``CPU_BATCH_GROWTH`` times larger (within the dataset), or None when the
    dataset does not hold ``MIN_BATCH_GROWTH`` such batches. The estimate counts only the
    cost known to be fixed; the Python outside operators, which may run per sample, only
    raises the high end."""
    record = f.main_loader
    batch = record.batch_size if record is not None else None
    k = T.CPU_BATCH_GROWTH
    if batch and record is not None and record.dataset_length:
        k = min(k, M.largest_power_of_two(record.dataset_length / batch))
    if k < T.MIN_BATCH_GROWTH:
        return None
    o = d.fixed.share
    low, gain, high = batch_estimate(o, k, d.possible.share)
    evidence = {
        "fixed_share": round(o, 4),
        "fixed_share_range": [round(d.fixed.low, 4), round(d.fixed.high, 4)],
        "loose_python_share": round(co.loose_share, 4),
        "steps": co.steps,
        "step_us": round(co.step_us, 1),
        "operator_us_per_step": round(co.op_us, 1),
        "operator_calls_per_step": round(co.op_calls, 1),
        "fixed_cost_per_call_us": round(co.fixed_cost_us, 2),
        "glue_per_call_us": round(co.glue_us, 2),
        "python_us_per_step": round(co.python_us, 1),
        "optimizer_us_per_step": round(co.optimizer_us, 1),
        "batch_size": batch,
    }
    code = _batch_code(record, batch * k if batch else None, k, trains=co.optimizer_us > 0)
    size = f"batch_size={batch * k}" if batch else f"a {k}× larger batch"
    assumes = (f"the fixed cost stays the same and the per-sample cost too ({k}/({o:.2f} + {k}×{1 - o:.2f})); "
               f"the range spans a per-sample cost {T.PER_SAMPLE_COST_RISE_MAX - 1:.0%} higher to "
               f"{T.PER_SAMPLE_COST_FALL_MAX:g}× lower, as it often falls with the batch (one batch size "
               "cannot show how it scales)")
    loose = (f"; {_ms(co.loose_us / 1e3)} more of Python outside operators ({co.loose_share:.0%}) is not counted: "
             "a loop over the samples grows with the batch" if co.loose_share >= 0.005 else "")
    return Suggestion(
        kind="batch_size",
        title=f"Fixed per-step cost is {o:.0%} of each step on CPU: use {size}",
        severity=_severity(gain),
        evidence=evidence,
        facts=(f"fixed cost: {o:.0%} of the profiled steps ({d.fixed.low:.0%}–{d.fixed.high:.0%} over {co.steps}), "
               f"{_ms(co.step_us / 1e3)} per step without data waiting; {f.step}",
               f"{co.op_calls:.0f} operator calls per step at about {co.fixed_cost_us:.1f} µs fixed cost and "
               f"{co.glue_us:.1f} µs of Python between calls each, and {_ms(co.optimizer_us / 1e3)} of optimizer "
               f"per step{loose}",
               f"batch size {batch}" if batch else "batch size unknown (no DataLoader was seen)"),
        expected_gain=(estimate_words(low, gain, high, f"samples/s with a {k}× batch", assumes)
                       + ". Measure it: nbprofiler.batch_size_curve(step_fn, sizes)"),
        gain=gain,
        claim="estimate",
        gain_low=low,
        gain_high=high,
        code=code,
        detail=(f"{co.op_calls:.0f} operator calls per step at about {co.fixed_cost_us + co.glue_us:.1f} µs fixed "
                f"cost each, plus {co.optimizer_us:.0f} µs of optimizer per step, the same for any batch size"),
    )


def batch_estimate(fixed_share: float, k: int, most_fixed: float | None = None) -> tuple[float, float, float]:
    """(low, estimate, high) samples/s gain of a ``k``× batch where ``fixed_share`` of the step
    does not grow with the batch: k/(o + k(1-o)r), r the change of the per-sample cost (1: the
    same, the estimate; from a rise of ``PER_SAMPLE_COST_RISE_MAX`` to a fall of
    ``PER_SAMPLE_COST_FALL_MAX``). Not a bound: the per-sample cost often falls with the batch.
    The high end takes ``most_fixed`` of the step as fixed (Python that may or may not grow
    with the batch counted as fixed), and is at least ``k``: the fixed share is measured from
    a low quantile of the cost per operator call, which undercounts it, and a step that is all
    per-call cost (tiny layers: 100 of Linear(16)+LayerNorm+GELU take the same time at batch 1
    and 64) gains the whole k."""
    def at(o: float, r: float) -> float:
        return k / (o + k * (1.0 - o) * r)
    most = fixed_share if most_fixed is None else max(most_fixed, fixed_share)
    return (at(fixed_share, T.PER_SAMPLE_COST_RISE_MAX), at(fixed_share, 1.0),
            max(float(k), at(most, 1.0 / T.PER_SAMPLE_COST_FALL_MAX)))


def _batch_code(record: LoaderRecord | None, new_batch: int | None, factor: float, trains: bool = True) -> str:
    """The user's DataLoader call with ``new_batch``; without one, the change in words (a comment,
    which runs when pasted: the code that batches the samples is the user's). A step that
    trains (``trains``) also gets the learning-rate reminder; inference has no learning rate."""
    if record is not None and new_batch:
        code = dataloader_call(args_from_record(record), {"batch_size": new_batch})
    else:
        code = f"# no DataLoader was seen: give each step {factor:g}× as many samples"
    if not trains:
        return code
    return code + (f"\n# keep the learning rate in step with the batch (linear rule: lr × {factor:g}) "
                   "and check convergence")


# -- number formats: autocast, TF32, FP8 ---------------------------------------------------------
def amp_rule(f: Facts) -> list[Verdict]:
    """Matmul/conv kernels on fp32 data, on the FMA units or (from compute capability 8.0) on
    TF32 tensor cores, for at least ``AMP_ELIGIBLE_MIN_SHARE`` of the step, on a GPU with tensor
    cores (7.0 and later); a GPU without them has nothing to check."""
    cc, mix, dt = f.report.device.compute_capability, f.kernel_mix, f.device_time
    why = _why_no_architecture(f)
    if why is not None or cc is None or mix is None or dt is None:
        return _gpu_not_run(f, KERNELS, why or NO_KERNELS)
    if cc < T.TENSOR_CORE_MIN_CC:
        return []  # no tensor cores to use: nothing to check
    fp32 = mix.fp32_share(tf32=cc >= T.BF16_MIN_CC) * dt.utilization
    if fp32 < T.AMP_ELIGIBLE_MIN_SHARE:
        half = f"; {mix.half_share:.0%} of kernel time runs on 16- or 8-bit floats" if mix.half_share else ""
        return [passed(KERNELS, f"matmul/conv kernels on fp32 data take {fp32:.0%} of the step (under "
                                f"{T.AMP_ELIGIBLE_MIN_SHARE:.0%}){half}", fp32_matmul_conv_step_share=round(fp32, 4))]
    return [fired(KERNELS, [precision.half_precision(cc, mix, dt, f.report.device_spec, f.step, f.training_step,
                                                     f.step_not_copied)])]


def tf32_rule(f: Facts) -> list[Verdict]:
    """fp32 matmul kernels on the FMA units for at least ``AMP_ELIGIBLE_MIN_SHARE`` of the step
    on a GPU with TF32 tensor cores (compute capability 8.0 and later)."""
    cc, mix, dt = f.report.device.compute_capability, f.kernel_mix, f.device_time
    if cc is not None and cc < T.TF32_MIN_CC:
        return []  # no TF32 to use
    why = _why_no_architecture(f)
    if why is not None or cc is None or mix is None or dt is None:
        return _gpu_not_run(f, TF32, why or NO_KERNELS)
    share = mix.fp32_matmul_simt_share * dt.utilization
    if share < T.AMP_ELIGIBLE_MIN_SHARE:
        return [passed(TF32, f"fp32 matmul kernels on the fp32 units take {share:.1%} of the step (under "
                             f"{T.AMP_ELIGIBLE_MIN_SHARE:.0%})", fp32_matmul_unit_step_share=round(share, 4))]
    return [fired(TF32, [precision.tf32(cc, mix, dt, f.report.device_spec, f.step)])]


def fp8_rule(f: Facts) -> list[Verdict]:
    """Linear-layer matmuls on 16-bit data with M, K and N all at least ``FP8_MIN_SIZE``, for at
    least ``AMP_ELIGIBLE_MIN_SHARE`` of the step, on a GPU with FP8 tensor cores (compute
    capability 8.9 and later)."""
    cc, dt = f.report.device.compute_capability, f.device_time
    if cc is not None and cc < T.FP8_MIN_CC:
        return []  # no FP8 to use
    why = _why_no_architecture(f)
    if why is not None or cc is None or dt is None:
        return _gpu_not_run(f, FP8, why or NO_KERNELS)
    calls = f.report.flops
    if calls.empty or not calls["input_shapes"].notna().any():
        return [not_run(FP8, "the trace has no input shapes to size the matmuls: profile with --shapes")]
    window = f.report.step_window
    large = large_matmuls(calls, window.of(f.report.stretched_steps), T.FP8_MIN_SIZE)
    large = large[large["dtype"].isin(("bf16", "fp16"))]
    share = float(large["device_us"].sum()) / max(dt.span_us, 1e-9)
    if share < T.AMP_ELIGIBLE_MIN_SHARE:
        return [passed(FP8, f"16-bit Linear-layer matmuls of at least {T.FP8_MIN_SIZE:,} on each side take "
                            f"{share:.0%} of the step (under {T.AMP_ELIGIBLE_MIN_SHARE:.0%})",
                       large_matmul_step_share=round(share, 4))]
    model = model_name(f.report.run.cell_source if f.report.run is not None else None)
    return [fired(FP8, [precision.fp8(cc, large, dt, f.report.device_spec, f.step, model)])]


# -- host-device syncs -----------------------------------------------------------------------
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
        return _gpu_not_run(f, SYNCS, NO_DEVICE_TIME)
    found = _sync_suggestion(f, dt, skip_h2d)
    if found is not None:
        return [fired(SYNCS, [found])]
    why = _why_no_steps(f)
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
        facts=(f"{per_step:.0f} syncs per step leave the GPU idle {_ms(idle / dt.steps / 1e3)} per step: "
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
    run = f.report.run
    lines = sync_lines(run.cell_source) if run is not None and run.cell_source else []
    source = (run.cell_source or "").splitlines() if run is not None else []
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


# -- launch-bound steps -----------------------------------------------------------------------
def launch_bound_rule(f: Facts) -> list[Verdict]:
    """GPU idle waiting on the host for more than ``LAUNCH_IDLE_SHARE`` of the step, with
    data waiting and syncs taken out (those have their own suggestions)."""
    dt, why = f.device_time, _why_not_timed(f)
    if dt is None or why is not None:
        return _gpu_not_run(f, GPU_IDLE, why or NO_DEVICE_TIME)
    idle = max(dt.host_wait_us - dt.dataloader_us - M.sync_idle_us(f.syncs), 0.0)
    share = idle / dt.span_us
    if share <= T.LAUNCH_IDLE_SHARE:
        return [passed(GPU_IDLE, f"the GPU is busy {dt.utilization:.0%} of the step and waits on the host under "
                                 f"{T.LAUNCH_IDLE_SHARE:.0%} of it", gpu_utilization=round(dt.utilization, 4))]
    return [fired(GPU_IDLE, [_fuse_kernels(f, dt, idle, share)])]


def _fuse_kernels(f: Facts, dt: M.DeviceTime, idle: float, share: float) -> Suggestion:
    """torch.compile, blamed on tiny kernels or on slow host code, whichever the kernels show;
    with CUDA graphs (``mode="reduce-overhead"``) where most launches run shorter on the GPU
    than their launch call takes on the host: then launches, not kernels, set the pace."""
    mix = f.kernel_mix
    tiny = mix.tiny_share if mix is not None else 0.0
    low, gain, high = compile_estimate(share)
    many_tiny = tiny >= T.TINY_KERNEL_SHARE
    launches = f.report.launch_summary()
    shorter = launches.gpu_shorter_than_cpu / launches.launches if launches.launches else 0.0
    graphs = shorter >= T.TINY_KERNEL_SHARE
    name = model_name(f.report.run.cell_source if f.report.run is not None else None)
    if graphs:
        code = (model_code(name, 'torch.compile({}, mode="reduce-overhead")',
                           "CUDA graphs: the step's kernels replayed with one launch; " + COMPILE_COST) + "\n"
                "# shapes that change from step to step (a last smaller batch, varying lengths) re-record the "
                "graphs:\n# there, plain torch.compile(...) fuses kernels without them")
    else:
        code = (compile_code(name, "fuses small kernels: fewer launches; " + COMPILE_COST) + "\n"
                "# static shapes: replay the whole step as CUDA graphs, one launch per graph:\n"
                f"# {name or 'model'} = torch.compile({name or 'model'}, mode=\"reduce-overhead\")")
    why = (f"{tiny:.0%} of kernels run under {T.TINY_KERNEL_US:g} µs, shorter than a launch takes"
           if many_tiny else "the host (Python, operator dispatch) is slower than the GPU it feeds")
    if graphs:
        why += ("; most launches run shorter on the GPU than their launch call on the host, so CUDA graphs, "
                "which launch a whole step's kernels at once, remove the most")
    launch_facts = [f"{launches.gpu_shorter_than_cpu:,} of {launches.launches:,} launches in the trace ran shorter "
                    f"on the GPU than their launch call on the host ({shorter:.0%})"] if launches.launches else []
    return Suggestion(
        kind="launch_bound",
        title=(f"The GPU waits on the host {share:.0%} of the step: "
               + ("launch it as CUDA graphs with torch.compile" if graphs else "fuse kernels with torch.compile")),
        severity=_severity(gain),
        evidence={"host_wait_share": round(share, 4), "gpu_utilization": round(dt.utilization, 4),
                  "tiny_kernel_share": round(tiny, 4),
                  "kernels_per_step": round(mix.kernels / dt.steps, 1) if mix is not None else None,
                  "shorter_than_launch_share": round(shorter, 4), "cuda_graphs": graphs},
        facts=(f"the GPU waits on the host {_ms(idle / dt.steps / 1e3)} per step: {share:.0%} of the step ({f.step}), "
               "not counting data waiting and syncs",
               f"GPU busy {dt.utilization:.0%} of the step",
               *([f"{mix.kernels / dt.steps:,.0f} kernels per step, {tiny:.0%} of them under {T.TINY_KERNEL_US:g} µs"]
                 if mix is not None else []),
               *launch_facts),
        expected_gain=estimate_words(
            low, gain, high, "step time",
            f"compiled code halves the host's time the GPU waits on ({share:.0%} of the step); the high end removes "
            f"all of it and runs the GPU's work up to {T.COMPILE_FUSION_SPEEDUP_MAX:g}× faster (fused kernels), the "
            f"low end is no gain (graph breaks, recompiles). {COMPILE_COST[0].upper()}{COMPILE_COST[1:]}"),
        gain=gain,
        claim="estimate",
        gain_low=low,
        gain_high=high,
        code=code,
        detail=why,
    )


def compile_estimate(share: float) -> tuple[float, float, float]:
    """(low, estimate, high) step speed-up of torch.compile where the GPU waits on the host for
    ``share`` of the step: the estimate halves the wait (``COMPILE_FIXED_CUT_TYPICAL``), the high
    end removes it and runs the GPU's work up to ``COMPILE_FUSION_SPEEDUP_MAX`` faster, the low
    end is no gain."""
    return 1.0, amdahl(share, T.COMPILE_FIXED_CUT_TYPICAL), T.COMPILE_FUSION_SPEEDUP_MAX * amdahl(share)


# -- many small ops on CPU ----------------------------------------------------------------------
def compile_rule(f: Facts) -> list[Verdict]:
    """On CPU, in a step that does not train: torch.compile of the ``nn.Module`` the cell calls, where
    what compiled code removes from the time inside its calls (``compile_gain``) makes the step at least
    ``COMPILE_MIN_GAIN`` faster, and at the low end no slower than ``SHOWN_MIN_LOW``."""
    if f.report.device.kind != "cpu":
        return []
    co = f.cpu
    if co is None:
        return [not_run(SMALL_OPS, _why_no_steps(f) or "no operator call on the step thread to measure")]
    if co.optimizer_us > 0:
        return [passed(SMALL_OPS, "the step trains (an optimizer steps in it): compiled, a small Transformer's "
                                  "training step of small operators ran no faster (0.93×), so torch.compile is "
                                  "proposed for inference steps only")]
    models = model_times(f.report.table, f.report.operator_tree, f.report.trace_steps)
    if not models:
        return [not_run(SMALL_OPS, "no call of an nn.Module that the cell calls by name was timed in the steps "
                                   "(a live run times each one that exists when the cell starts)")]
    m = models[0]
    low, gain, high = compile_gain(m, co.fixed_cost_us)
    seen = (f"the model's calls are {m.share:.0%} of the step; compiled, about {gain:.2f}× "
            f"({low:.2f}–{high:.2f}×) on the whole step")
    evidence = {"model_share": round(m.share, 4), "compile_gain": round(gain, 3), "compile_gain_low": round(low, 3),
                "compile_gain_high": round(high, 3)}
    if gain < T.COMPILE_MIN_GAIN:
        return [passed(SMALL_OPS, f"{seen}: under {T.COMPILE_MIN_GAIN:g}×, not worth a compile", **evidence)]
    if low < T.SHOWN_MIN_LOW:
        return [passed(SMALL_OPS, f"{seen}, but its low end is a slowdown: measure it, timing a few passes of the "
                                  "loop with the model compiled against as it is, leaving out the first pass (it "
                                  "compiles)", **evidence)]
    return [fired(SMALL_OPS, [_compile_small_ops(f, co, models, (low, gain, high))])]


def _compile_small_ops(f: Facts, co: M.CpuOverhead, models: list[ModelTime],
                       estimate: tuple[float, float, float]) -> Suggestion:
    """torch.compile of the model with the most time (``models[0]``), in the cell's name for it where
    the run recorded that name as a module's; otherwise the change in words."""
    m, (low, gain, high) = models[0], estimate
    run = f.report.run
    name = (module_name(run.cell_source, run.cell_modules, {t.name: float(t.model_us.sum()) for t in models})
            if run else None)
    model_us, step_us, python_us, light_us, light_calls, heavy_us, heavy_calls = (float(a.mean()) for a in (
        m.model_us, m.step_us, m.python_us, m.light_us, m.light_calls, m.heavy_us, m.heavy_calls))
    per_call = light_us / max(light_calls, 1.0)
    what = name or "the nn.Module your loop calls"
    return Suggestion(
        kind="compile",
        title=f"Compile {what} with torch.compile: its calls are {m.share:.0%} of the step on CPU",
        severity=_severity(gain),
        evidence={"model": name, "model_share": round(m.share, 4), "model_us_per_step": round(model_us, 1),
                  "step_us": round(step_us, 1), "python_us_per_step": round(python_us, 1),
                  "heavy_op_us_per_step": round(heavy_us, 1), "light_op_us_per_step": round(light_us, 1),
                  "light_op_calls_per_step": round(light_calls, 1),
                  "fixed_cost_per_call_us": round(co.fixed_cost_us, 2)},
        facts=(f"inside the model's calls: {_ms(model_us / 1e3)} of the step's {_ms(step_us / 1e3)} "
               f"({m.share:.0%}; {f.step}), the rest of the step is not compiled",
               f"of it: {_ms(python_us / 1e3)} Python (forward, submodule calls), {light_calls:.0f} elementwise, "
               f"norm and other light operator calls taking {_ms(light_us / 1e3)} ({fmt_us(per_call)} each, about "
               f"{co.fixed_cost_us:.1f} µs of it fixed cost per call), {heavy_calls:.0f} matmul/conv calls "
               f"taking {_ms(heavy_us / 1e3)}"),
        expected_gain=estimate_words(
            low, gain, high, "step time after compiling",
            f"compiled code removes the model's Python and its light operators' fixed cost, and fuses their work "
            f"into loops that pass over memory once (half of it left; the low end: none saved, the high end: a "
            f"quarter left), runs convolutions with weights packed once, in channels-last (a quarter faster; the "
            f"low end: as they are), and leaves matmuls as they are (the low end: 10% slower). "
            f"{COMPILE_COST[0].upper()}{COMPILE_COST[1:]}, so it pays off over many steps"),
        gain=gain,
        claim="estimate",
        gain_low=low,
        gain_high=high,
        code=(f"{name} = torch.compile({name})  # {COMPILE_COST}" if name is not None else
              f"# compile the nn.Module your loop calls, once, before the loop: <name> = torch.compile(<name>)\n"
              f"# ({COMPILE_COST})"),
        detail=("each operator call pays dispatch, allocation and Python around it whatever its size; compiled "
                "code fuses the small ops into a few loops and calls them at once; only the model is compiled, "
                "so preprocessing outside it gains nothing"),
    )


# -- conv nets on GPU ---------------------------------------------------------------------------
def conv_rule(f: Facts) -> list[Verdict]:
    """Convolutions at ``CONV_MIN_SHARE`` of kernel time or more: cudnn.benchmark, channels_last."""
    why, mix, dt = _why_no_kernels(f), f.kernel_mix, f.device_time
    if why is not None or mix is None or dt is None:
        return _gpu_not_run(f, KERNELS, why or NO_KERNELS)
    conv = mix.conv_share * dt.utilization
    if conv < T.CONV_MIN_SHARE:
        return [passed(KERNELS, f"convolutions take {conv:.0%} of the step")]
    name = model_name(f.report.run.cell_source if f.report.run is not None else None)
    return [fired(KERNELS, [_cudnn_settings(mix, dt, conv, f.step, name)])]


def _cudnn_settings(mix: M.KernelMix, dt: M.DeviceTime, conv: float, step: str, name: str | None) -> Suggestion:
    """cudnn.benchmark and channels_last, estimated from the conv kernels and layout conversions;
    ``name``: the cell's name for its model (a guarded ``model`` when the cell does not show it)."""
    transpose = mix.layout_transpose_share * dt.utilization

    def at(speedup: float) -> float:
        return 1.0 / max(1.0 - conv * (1.0 - 1.0 / speedup) - transpose, 1e-9)
    gain, high = at(T.CONV_TUNING_SPEEDUP_TYPICAL), at(T.CONV_TUNING_SPEEDUP_MAX)
    code = ("torch.backends.cudnn.benchmark = True  "
            "# fixed input shapes: cuDNN tries its algorithms once, keeps the best\n"
            + model_code(name, "{}.to(memory_format=torch.channels_last)", "NHWC, the tensor cores' native layout")
            + "\n"
            "# and in the loop, each input batch x:\n"
            "# x = x.contiguous(memory_format=torch.channels_last)")
    return Suggestion(
        kind="conv",
        title=f"Convolutions take {conv:.0%} of the step: set cudnn.benchmark and use channels_last",
        severity=_severity(gain),
        evidence={"conv_step_share": round(conv, 4), "conv_kernel_share": round(mix.conv_share, 4),
                  "layout_transpose_share": round(mix.layout_transpose_share, 4),
                  "tensor_core_share": round(mix.tensor_core_share, 4)},
        facts=(f"convolution kernels: {conv:.0%} of the step ({step}), {mix.conv_share:.0%} of kernel time",
               f"NCHW↔NHWC conversion kernels: {transpose:.1%} of the step",
               f"tensor-core kernels: {mix.tensor_core_share:.0%} of kernel time"),
        expected_gain=estimate_words(
            1.0, gain, high, "step time",
            f"conv kernels ({conv:.0%} of the step) get {T.CONV_TUNING_SPEEDUP_TYPICAL:g}× faster with the best "
            f"algorithm and the NCHW↔NHWC conversions ({transpose:.1%} of the step) go; the high end takes the conv "
            f"kernels {T.CONV_TUNING_SPEEDUP_MAX:g}× faster (channels_last on tensor cores), the low end no gain"),
        gain=gain,
        claim="estimate",
        gain_low=1.0,
        gain_high=high,
        code=code,
        detail="channels_last pays off most with tensor cores (AMP, or TF32 on Ampere and later)",
    )


# -- memory growth ---------------------------------------------------------------------------------
def memory_growth_rule(f: Facts) -> list[Verdict]:
    """Memory that rises step after step (``report.memory_growth`` flags it). Each series
    too short to judge is a check of its own that could not run."""
    growth = f.report.memory_growth
    if growth.empty:
        return [not_run(GROWTH, "no memory figures were recorded")]
    if growth["flagged"].any():
        return [fired(GROWTH, [_kept_tensors(f, growth)])]
    judged, unjudged = growth[growth["judged"]], growth[~growth["judged"]]
    what = "; ".join(f"{series_label(r.source, r.measure)} on {r.device} over {r.steps} steps"
                     for r in judged.itertuples(index=False))
    found = [passed(GROWTH, f"memory does not grow from step to step ({what})")] if len(judged) else []
    return found + [not_run(f"{GROWTH} of {series_label(r.source, r.measure)} on {r.device}",
                            f"{r.steps} step(s) to judge, it needs {_growth_steps_needed(r.source, r.measure)}")
                    for r in unjudged.itertuples(index=False)]


def _growth_steps_needed(source: str, measure: str) -> int:
    """Steps a series needs to be judged: fewer for the trace's exact allocated bytes."""
    return GROWTH_MIN_STEADY_STEPS if (source, measure) == ("trace", "allocated") else GROWTH_MIN_STEPS


def _kept_tensors(f: Facts, growth: pd.DataFrame) -> Suggestion:
    """The steepest flagged series, the usual cause (tensors kept with their graph) and its fixes."""
    flagged = growth[growth["flagged"]].sort_values(["steps", "slope_bytes_per_step"], ascending=False, kind="stable")
    row = flagged.iloc[0]
    slope = float(row["slope_bytes_per_step"])
    limit = f.report.device.total_memory_bytes
    relative = relative_devices(f.report.memory_steps)
    evidence = {"device": str(row["device"]), "source": str(row["source"]), "measure": str(row["measure"]),
                "steps": int(row["steps"]), "first_bytes": float(row["first_bytes"]),
                "last_bytes": float(row["last_bytes"]), "slope_bytes_per_step": slope,
                "rising_share": round(float(row["rising_share"]), 3)}
    facts = [growth_fact(r, relative) for r in flagged.itertuples(index=False)]
    text = "no speed-up: memory stops growing, and the run cannot fail with out-of-memory later"
    severity: Severity = "medium"
    absolute = flagged[(flagged["source"] == "sampler") | ~flagged["device"].isin(relative)]
    if limit and len(absolute):
        level = absolute.iloc[0]
        left = max(int((T.MEMORY_NEAR_LIMIT_SHARE * limit - float(level["last_bytes"]))
                       / float(level["slope_bytes_per_step"])), 0)
        evidence["steps_to_near_limit"] = left
        text += (f" (at this rate {T.MEMORY_NEAR_LIMIT_SHARE:.0%} of {fmt_bytes(limit)} is reached in about "
                 f"{left:,} steps)")
        if left < 10_000:
            severity = "high"
    leak = _leak_line(f)
    evidence.update(_leak_evidence(leak))
    held, held_fact = _largest_held(f, str(row["device"]))
    evidence.update(held)
    facts += [held_fact] if held_fact else []
    code, detail = _leak_fix(f, leak)
    where = "tensors from earlier steps are kept alive" if leak is None else \
        f"cell line {leak.line} keeps tensors from every step alive"
    return Suggestion(
        kind="memory_growth",
        title=f"Memory grows {fmt_bytes(slope)} per step on {row['device']}: {where}",
        severity=severity,
        evidence=evidence,
        facts=tuple(facts if leak is None else [_leak_fact(leak), *facts]),
        expected_gain=text,
        gain=1.0,
        code=code,
        detail=detail,
    )


def _leak_line(f: Facts) -> LeakLine | None:
    """The cell line that keeps the tensors: from the trace's line marks (``--stack``) where
    the run has them, confirmed or overruled by them, else from the cell's source."""
    run = f.report.run
    if run is None or not run.cell_source:
        return None
    by_line = pd.DataFrame(columns=KEPT_LINE_COLUMNS)
    if run.line_marks is not None and f.report.raw_trace is not None:
        by_line = kept_bytes_by_line(f.report.table, f.report.trace_steps, run.line_marks)
    return leak_line(run.cell_source, by_line)


def _largest_held(f: Facts, device: str) -> tuple[dict[str, object], str | None]:
    """The line and operator that made the most bytes still held when recording stopped, of the
    allocations made in the profiled steps on ``device`` (``report.allocations``), as evidence
    and in words; ({}, None) without them."""
    if f.report.raw_trace is None:
        return {}, None
    table = f.report.allocations
    held = table[table["freed_us"].isna() & (table["step"] >= 0) & (table["device"].astype(str) == device)]
    if held.empty:
        return {}, None
    groups = held.assign(line=held["line"].fillna(0)).groupby(["line", "operator"], observed=True).agg(
        held_bytes=("bytes", "sum"), held_allocations=("bytes", "size"), held_steps=("step", "nunique"))
    top = groups.sort_values("held_bytes", ascending=False, kind="stable").reset_index().iloc[0]
    line, operator, size = int(top["line"]) or None, str(top["operator"]), float(top["held_bytes"])
    count, steps = int(top["held_allocations"]), int(top["held_steps"])
    where = "" if line is None else f" on cell line {line}"
    fact = (f"the largest allocations still held when recording stopped were made by `{operator}`{where}: "
            f"{count} of them in {steps} profiled step(s), {fmt_bytes(size)}, never freed")
    return {"held_line": line, "held_operator": operator, "held_bytes": size, "held_allocations": count,
            "held_steps": steps}, fact


def _leak_evidence(leak: LeakLine | None) -> dict[str, object]:
    if leak is None:
        return {}
    return {"line": leak.line, "end_line": leak.line + leak.text.count("\n"), "line_source": leak.text,
            "line_found_in": "source" if leak.steps is None else "trace", "kept_bytes": leak.kept_bytes}


def _leak_fact(leak: LeakLine) -> str:
    """The line in words, with what shows it keeps the tensors."""
    head = f"cell line {leak.line}: `{leak.text.strip()}`"
    keeps = "" if leak.kept is None else \
        f" {leak.kept.how} `{leak.kept.holder}` a value that carries its autograd graph (`{leak.kept.value}`)"
    if leak.steps is None:
        return f"{head}{keeps}; found in the cell's source (profile with --stack to confirm it from the trace)"
    made = "the line" if leak.made_line in (None, leak.line) else \
        f"line {leak.made_line}, whose result it keeps,"
    return (f"{head}{keeps}; the trace confirms it: {made} made {fmt_bytes(leak.kept_bytes or 0)} in "
            f"{leak.steps} profiled steps that was never freed")


def _leak_fix(f: Facts, leak: LeakLine | None) -> tuple[str | None, str]:
    """The edit for the line, in the cell's names (to paste in place of the statement), and why it
    works; with no statement to edit, no code (generic names would not run) and the fixes in words."""
    if (leak is None or leak.kept is None or f.report.run is None or not f.report.run.cell_source
            or not f.may_copy(leak.kept.line, leak.kept.end_line)):
        where = "on this line" if leak is not None else "in the loop"
        return None, (f"tensors made {where} outlive their step; the usual cause is a tensor that carries its "
                      "autograd graph, kept across steps: a running total (`total += loss`), a list of outputs, "
                      "state carried to the next step (an RNN's hidden state). Keep `.item()` (a number) or "
                      "`.detach()` (a tensor without its history) of what is kept, and compute what needs no "
                      "gradient under `torch.no_grad()`" + ("" if leak is not None else
                                                            "; profile with --stack to find the line"))
    kept = leak.kept
    code = fixed_statement(f.report.run.cell_source, kept, on_device=f.on_gpu)
    lines = f"line {kept.line}" if kept.end_line == kept.line else f"lines {kept.line}-{kept.end_line}"
    if kept.validation and kept.alone:
        why = (f"`{kept.value}` is computed on validation data with autograd on, so each one keeps its graph "
               "(every activation of that forward pass); under `torch.no_grad()` no graph is built")
    elif ".item()" in code:
        why = (f"`.item()` keeps the number, not the graph behind it (use `.detach()` if the rest of the cell "
               f"needs `{kept.holder}` to hold tensors)")
    else:
        why = "`.detach()` keeps the tensor without the graph that made it"
    return code, f"{why}. The code replaces {lines} of the cell, as indented there"


def growth_fact(row: Any, relative: set[str]) -> str:
    """One flagged (or judged) growth series in words, with its levels and how it was judged."""
    since = " since recording began" if row.source == "trace" and row.device in relative else ""
    where = "profiled steps" if row.source == "trace" else "steps the cell ran"
    if row.measure == "rss":
        where = "steps the profiler left alone"
    rises = round(row.rising_share * (row.steps - 1)) if row.steps > 1 else 0
    return (f"{series_label(row.source, row.measure)} on {row.device}: {fmt_bytes(row.first_bytes)} → "
            f"{fmt_bytes(row.last_bytes)}{since} over {row.steps} {where}, about "
            f"{fmt_bytes(row.slope_bytes_per_step)} per step ({rises} rises in {max(row.steps - 1, 0)} changes)")


def _syncs_not_fixed_by_loader(f: Facts) -> list[Verdict]:
    """Blocking input copies are left to the DataLoader suggestion when it pins memory."""
    pins = any("pin_memory" in s.evidence.get("changed", ()) for s in f.dataloader)
    return sync_rule(f, skip_h2d=pins)


# In the order "nothing to improve" lists what they checked.
RULES: tuple[Callable[[Facts], list[Verdict]], ...] = (
    dataloader_rule, _syncs_not_fixed_by_loader, launch_bound_rule, batch_size_up_rule, memory_near_limit_rule,
    amp_rule, tf32_rule, fp8_rule, conv_rule, cpu_batch_rule, compile_rule, memory_growth_rule,
)


def nothing_to_improve(checked: Sequence[Verdict]) -> Suggestion:
    """The one result of a run where no rule fired: the checks that ran, with the figures
    they saw, and those that could not run, with why, so that "nothing to improve"
    never vouches for what was not looked at. Rules that could not run for the same
    reason are listed once."""
    passes, misses = _lines(checked, "passed"), _lines(checked, "not_run")
    evidence: dict[str, object] = {}
    for v in checked:
        evidence.update(v.evidence)
    if not misses:
        title = "Nothing to improve: every check passed"
    elif passes:
        title = (f"Nothing to improve in what could be checked: {len(misses)} of {len(passes) + len(misses)} "
                 "checks could not run")
    else:
        title = "No suggestion, but no check could run on this profile"
    parts = ([f"Passed: {'; '.join(passes)}."] if passes else []) + (
        [f"Could not check: {'; '.join(misses)}."] if misses else [])
    return Suggestion(
        kind=NOTHING_TO_IMPROVE,
        title=title,
        severity="low",
        evidence=evidence,
        expected_gain="none: the settings this profiler could judge already fit this run",
        gain=1.0,
        code=None,
        detail=" ".join(parts),
    )


def _lines(checked: Sequence[Verdict], state: str) -> list[str]:
    """The lines of the verdicts in ``state``, each once: rules that share a missing
    measurement give the same line."""
    return list(dict.fromkeys(v.line for v in checked if v.state == state))


def _why_not_timed(f: Facts) -> str | None:
    """Why the checks that judge the GPU's idle time within steps cannot run, or None when they can."""
    dt = f.device_time
    if dt is None or dt.span_us <= 0:
        return NO_DEVICE_TIME
    return _why_no_steps(f) or _why_too_few_steps(f, dt)


def _why_no_kernels(f: Facts) -> str | None:
    """Why the kernel checks (tensor cores, cuDNN) cannot run, or None when they can."""
    kind = f.report.device.kind
    if kind != "cuda":
        return f"these checks know CUDA devices only, not {kind.upper()}"
    return None if f.kernel_mix is not None and f.device_time is not None else NO_KERNELS


def _why_no_architecture(f: Facts) -> str | None:
    """Why the number-format checks, which need the kernels and the GPU's compute capability,
    cannot run, or None when they can."""
    return _why_no_kernels(f) or (None if f.report.device.compute_capability
                                  else "the trace does not give the GPU's compute capability")


def _why_no_steps(f: Facts) -> str | None:
    """Why checks that judge time within steps cannot run at all, or None when they can."""
    steps = f.report.trace_steps
    if steps.empty:
        return "no step was recorded in the trace"
    if bool(steps["synthetic"].iloc[0]):
        return "the trace has no ProfilerStep ranges, so there are no steps to judge"
    return None


def _why_too_few_steps(f: Facts, dt: M.DeviceTime) -> str | None:
    """Why the GPU idle-time checks cannot judge the steps there are, or None when they can."""
    if dt.steps >= T.MIN_STEPS_FOR_IDLE:
        return None
    profiled = len(f.report.trace_steps)
    counted = (f"only {dt.steps} of the {profiled} profiled steps is in the breakdown, as the notes say"
               if profiled > dt.steps else f"only {dt.steps} step was profiled")
    return (f"{counted}, and one step's idle time is mostly start-up: profile at least {T.MIN_STEPS_FOR_IDLE + 1} "
            f"steps (--active {T.MIN_STEPS_FOR_IDLE + 1})")
