"""The DataLoader rule: a loader that keeps the steps waiting, and the settings that stop it.

The decisions are ``dataloader_plan``'s (how many workers the cores allow, whether one run can
tell); this module puts a plan in words and code: the user's own DataLoader call with the
changes, the figures behind it, and the claim each change can make (a true bound where compute
keeps its cores, an estimate where it gives some up, the measurement to make where one run
cannot tell).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...format import fmt_bytes, fmt_ms, fmt_rate
from ...records import LoaderRecord
from .. import measures as M
from .. import thresholds as T
from ..dataloader_plan import LoaderPlan, measure_waiting, plan
from ..loader_code import Expr, LoaderArgs, args_from_record, dataloader_call
from ..safe_names import code_name
from ..suggestion import (Suggestion, Verdict, amdahl, estimate_words, fired, not_run, passed,
                          severity_for as _severity)
from .checks import DATA_LOADING

if TYPE_CHECKING:
    from .facts import Facts


_CORES_PREAMBLE = ("import os\n# CPU cores this process may use, shared by the ranks on this machine\n"
                   'cores = len(os.sched_getaffinity(0)) // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))')


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
    why = (f"the loop waits {fmt_ms(w.steady_ms / w.batches)} for each batch, and taking a batch from a "
           f"worker process costs the loop up to {fmt_ms(T.WORKER_HANDOVER_MS)} of its own (measured), which a run "
           "without workers cannot show" if p.handover else
           "the loading waits on I/O, but its computing part does not fit on the cores compute leaves free"
           if p.io_bound else f"compute's {p.cores.compute} intra-op thread(s) use all {p.cores.per_rank} core(s) "
                              "this process may use")
    assumes = (f"between each batch's hand-over from the worker costing up to {fmt_ms(T.WORKER_HANDOVER_MS)} and "
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


def loader_plans(f: Facts) -> list[tuple[LoaderPlan, LoaderRecord | None]]:
    """A plan for each loader that keeps the steps waiting.

    Live runs judge each recorded loader by its own waiting; a trace (which has
    no loader records) is judged by its DataLoader time, with generic code.
    The one-time start-up of persistent workers does not count: no setting
    removes it, and over a whole training run it is negligible.
    """
    total = f.data_wait
    if total is None:
        return []
    loaders = f.report.loaders
    pairs = [(M.loader_wait(f.report, r), r) for r in loaders] if loaders else [(total, None)]
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


def loader_suggestion(f: Facts, p: LoaderPlan, record: LoaderRecord | None) -> Suggestion | None:
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
    steps = f.report.sampled_steps
    stepped = float(steps["wall_ms"].sum()) if steps is not None and "wall_ms" in steps else 0.0
    run = f.report.run  # the live run the loader's record is of: it timed the whole cell
    total = max(run.wall_s * 1e3 if run is not None else 0.0, stepped)
    removable = min(sum(record.wait_ms_by_step.values()) + total - stepped, 0.99 * total)
    bound = total / (total - removable) if total > 0 else 1.0
    text = (f"at most {bound:.2f}× over the cell's {fmt_ms(total)}, if the {fmt_ms(removable)} it spent waiting for "
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
        text = (f"at most {p.gain:.2f}× step time ({fmt_ms(wait.step_ms)} → {fmt_ms(wait.step_ms / p.gain)} per step), "
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
    facts = [f"data wait: {wait.share:.0%} of the step, {fmt_ms(wait.wait_ms)} of {fmt_ms(wait.step_ms)} ({f.step})",
             f"compute: {fmt_ms(w.compute_ms)} per step"]
    if w.batches != 1:
        facts.append(f"each step consumed {w.batches:g} batches: {fmt_ms(wait.wait_ms / w.batches)} of waiting "
                     "per batch")
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
        facts.append(f"worker start-up: {fmt_ms(w.startup_ms)} per step on average, counted apart from steady loading")
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
        reasons.append(f"waiting is bursty (median {fmt_ms(median)} against a mean of {fmt_ms(mean)}): deeper "
                       "prefetching absorbs slow batches")
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
    per_batch = f" ({fmt_ms(p.load_ms / w.batches)} to load a batch)" if p.workers == 0 else ""
    who = f"{p.num_workers} worker processes deliver" if p.num_workers != 1 else "1 worker process delivers"
    what = "a batch" if w.batches == 1 else f"a step's {w.batches:g} batches"
    io = (": the loading waits on I/O, and waiting workers need no CPU cores of their own, so more of them than "
          "cores overlap the waits" if p.io_bound else "")
    return (f"{who} {what} every {fmt_ms(p.load_ms / p.num_workers)} or faster{per_batch}, "
            f"against {fmt_ms(w.compute_ms)} of compute per step{io}")


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
