"""``Suggestion``: one change a user can make, with the numbers that call for it.

A suggestion is data, not prose: renderers (text, HTML, widget) show the same
fields, and ``gain`` orders them, so the change with the largest possible
speed-up always comes first.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = ("high", "medium", "low")

# The kind of the single result a run with nothing to improve gets.
NOTHING_TO_IMPROVE = "nothing_to_improve"


@dataclass(frozen=True)
class Suggestion:
    """A change to make, why, and how much it can help.

    ``evidence`` holds the measured numbers that triggered the rule (plain
    floats, ints and strings), for programs; ``facts`` says the same in words with
    units ("data wait: 24% of the step, 49 ms of 205 ms"), for people: renderers
    show the facts, never raw keys and ratios. ``expected_gain`` states an honest upper bound in
    words, and ``gain`` is that bound as a speed-up factor (1.0 when the change
    does not make steps faster, e.g. avoiding an out-of-memory error).
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

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}")
        if not self.gain >= 1.0:
            raise ValueError(f"gain is a speed-up factor >= 1.0, got {self.gain!r}")

    @property
    def nothing_to_improve(self) -> bool:
        return self.kind == NOTHING_TO_IMPROVE

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
            "code": self.code,
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
        if self.code:
            lines.append("  code:")
            lines.extend("    " + line for line in self.code.splitlines())
        return "\n".join(lines)

