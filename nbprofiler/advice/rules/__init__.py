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

The rules live one family a module, each over the measurements ``facts.Facts`` computes once:
``dataloader``, ``syncs``, ``launches`` (launch-bound steps and torch.compile), ``batch``,
``memory`` and ``kernels`` (number formats and cuDNN); ``checks`` names what each one checked.
``RULES`` below is their order.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from ..code_check import compiled
from ..measured_quotes import quoted
from ..suggestion import NOTHING_TO_IMPROVE, Suggestion, Verdict
from .batch import batch_size_up_rule, cpu_batch_rule
from .dataloader import dataloader_rule
from .drift import drift_rule
from .facts import Facts
from .kernels import amp_rule, conv_rule, fp8_rule, tf32_rule
from .launches import compile_rule, launch_bound_rule
from .memory import memory_growth_rule, memory_near_limit_rule
from .syncs import syncs_not_fixed_by_loader

if TYPE_CHECKING:
    from ...report import Report


# In the order "nothing to improve" lists what they checked.
RULES: tuple[Callable[[Facts], list[Verdict]], ...] = (
    dataloader_rule, syncs_not_fixed_by_loader, launch_bound_rule, batch_size_up_rule, memory_near_limit_rule,
    amp_rule, tf32_rule, fp8_rule, conv_rule, cpu_batch_rule, compile_rule, memory_growth_rule, drift_rule,
)


_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


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
    return [quoted(facts, v) for rule in RULES for v in rule(facts)]


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
