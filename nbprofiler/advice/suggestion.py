"""``Suggestion``: one change a user can make, with the numbers that call for it;
``Verdict``: what one check concluded, fired or not.

A suggestion is data, not prose: renderers (text, HTML, widget) show the same
fields, and ``gain`` orders them, so the change with the largest possible
speed-up always comes first. A verdict is what makes "nothing to improve"
honest: a check is listed as passed only when its own rule ran and did not fire.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from .thresholds import SEVERITY_HIGH_GAIN, SEVERITY_MEDIUM_GAIN

VerdictState = Literal["fired", "passed", "not_run"]

# What a suggestion's ``gain`` is: a true upper bound ("at most": Amdahl's law on a measured
# share), or an estimate with its range (an extrapolation, which can miss either way).
Claim = Literal["at_most", "estimate"]

Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = ("high", "medium", "low")

# The kind of the single result a run with nothing to improve gets.
NOTHING_TO_IMPROVE = "nothing_to_improve"
# Every kind of change the rules suggest (rules/, precision.py): what ``--tried KIND`` may name.
# NOTHING_TO_IMPROVE is not one, being no change to try.
SUGGESTION_KINDS = ("dataloader", "batch_size", "memory_near_limit", "sync", "launch_bound", "compile", "conv",
                    "memory_growth", "amp", "tf32", "fp8", "drift")


@dataclass(frozen=True)
class Suggestion:
    """A change to make, why, and how much it can help.

    ``evidence`` holds the measured numbers that triggered the rule (plain
    floats, ints and strings), for programs; ``facts`` says the same in words with
    units ("data wait: 24% of the step, 49 ms of 205 ms"), for people: renderers
    show the facts, never raw keys and ratios.

    ``expected_gain`` states the claim in words, and ``gain`` is it as a speed-up
    factor (1.0 when the change does not make steps faster, e.g. avoiding an
    out-of-memory error), which orders the suggestions. With ``claim`` "at_most",
    ``gain`` is a true upper bound; with "estimate", it is the central estimate,
    ``gain_low``..``gain_high`` its range, and ``expected_gain`` says what it
    assumes. ``bench/advice_accuracy.py`` holds each claim against a measurement.
    ``code`` is a snippet to paste, or None.
    """

    kind: str
    title: str
    severity: Severity
    evidence: dict[str, Any] = field(default_factory=dict)
    facts: tuple[str, ...] = ()
    expected_gain: str = ""
    gain: float = 1.0
    code: str | None = None
    detail: str = ""
    claim: Claim = "at_most"
    gain_low: float | None = None  # an estimate's range; None for a bound
    gain_high: float | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}")
        if not self.gain >= 1.0:
            raise ValueError(f"gain is a speed-up factor >= 1.0, got {self.gain!r}")
        if self.claim == "estimate":
            if self.gain_low is None or self.gain_high is None or not 0 < self.gain_low <= self.gain <= self.gain_high:
                raise ValueError(f"an estimate needs 0 < gain_low <= gain <= gain_high, got "
                                 f"{self.gain_low!r}, {self.gain!r}, {self.gain_high!r}")
        elif self.claim != "at_most" or self.gain_low is not None or self.gain_high is not None:
            raise ValueError(f"claim must be 'at_most' (no range) or 'estimate', got {self.claim!r}")

    @property
    def gain_range(self) -> tuple[float, float]:
        """The speed-ups the claim allows: up to the bound for "at most" (from no gain:
        a bound promises nothing below it), the estimate's range otherwise."""
        if self.claim == "estimate":
            assert self.gain_low is not None and self.gain_high is not None
            return self.gain_low, self.gain_high
        return 1.0, self.gain

    @property
    def nothing_to_improve(self) -> bool:
        return self.kind == NOTHING_TO_IMPROVE

    @property
    def guidance(self) -> bool:
        """Whether the card is guidance: its change is in code this profiler cannot write (the
        loop that batches samples when no DataLoader was seen), so its code is none or only
        comments, and pasting it changes nothing. Renderers label it so and offer no "Try it",
        which would re-profile the unchanged cell."""
        return not any(line.strip() and not line.lstrip().startswith("#") for line in (self.code or "").splitlines())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data, for the report payload and widgets."""
        return {
            "kind": self.kind,
            "title": self.title,
            "severity": self.severity,
            "evidence": dict(self.evidence),
            "facts": list(self.facts),
            "expected_gain": self.expected_gain,
            "gain": float(self.gain),
            "claim": self.claim,
            "gain_range": [float(g) for g in self.gain_range],
            "code": self.code,
            "guidance": self.guidance,
            "detail": self.detail,
        }

    def to_text(self) -> str:
        """The suggestion as a few plain lines, for terminals and logs."""
        lines = [f"[{self.severity}] {self.title}"]
        if self.detail:
            lines.append(f"  {self.detail}")
        if self.facts:
            lines.append("  evidence:")
            lines.extend(f"    - {fact}" for fact in self.facts)
        if self.expected_gain:
            lines.append(f"  expected gain: {self.expected_gain}")
        if self.code and self.guidance:
            lines.append("  guidance (make the change in your own code; nothing to paste or try):")
            lines.extend("    " + line for line in self.code.splitlines())
        elif self.code:
            lines.append("  code:")
            lines.extend("    " + line for line in self.code.splitlines())
        return "\n".join(lines)



def estimate_words(low: float, gain: float, high: float, what: str, assumes: str) -> str:
    """An estimate's ``expected_gain``: the figure, its range, and what it assumes, so that
    it never reads as a bound."""
    return f"about {gain:.2f}× {what} (estimate, {low:.2f}–{high:.2f}×), assuming {assumes}"


def severity_for(gain: float) -> Severity:
    """A speed-up's severity: "high" from ``SEVERITY_HIGH_GAIN``, "medium" from ``SEVERITY_MEDIUM_GAIN``."""
    if gain >= SEVERITY_HIGH_GAIN:
        return "high"
    return "medium" if gain >= SEVERITY_MEDIUM_GAIN else "low"


def amdahl(share: float, speedup: float = math.inf) -> float:
    """Step speed-up when ``share`` of the step gets ``speedup`` times faster (Amdahl's law):
    every ``gain`` is this bound on a measured share, never a promise."""
    remaining = 1.0 - share * (1.0 - 1.0 / speedup)
    return 1.0 / max(remaining, 1e-9)


@dataclass(frozen=True)
class Verdict:
    """What one check concluded on one report.

    ``fired``: its ``suggestions`` (one or more). ``passed``: the check ran and
    found nothing to change; ``figures`` says what it saw, in words, and
    ``evidence`` the same as raw numbers. ``not_run``: the check could not judge
    this report; ``reason`` says why. A check that does not apply to the device
    (a GPU check on a CPU run) has no verdict at all.
    """

    check: str
    state: VerdictState
    suggestions: tuple[Suggestion, ...] = ()
    figures: str = ""
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        needs = {"fired": bool(self.suggestions), "passed": bool(self.figures), "not_run": bool(self.reason)}
        if not needs.get(self.state, False):
            raise ValueError(f"a {self.state!r} verdict needs its suggestions, figures or reason: {self!r}")

    @property
    def line(self) -> str:
        """The verdict as "nothing to improve" lists it: the figures of a passed check,
        or the check and why it could not run."""
        return self.figures if self.state == "passed" else f"{self.check} ({self.reason})"


def fired(check: str, suggestions: list[Suggestion]) -> Verdict:
    """The check found something to change: its suggestions."""
    return Verdict(check, "fired", suggestions=tuple(suggestions))


def passed(check: str, figures: str, **evidence: Any) -> Verdict:
    """The check ran and found nothing to change: what it saw, in words and as numbers."""
    return Verdict(check, "passed", figures=figures, evidence=evidence)


def not_run(check: str, reason: str) -> Verdict:
    """The check could not judge this report, and why: it vouches for nothing."""
    return Verdict(check, "not_run", reason=reason)
