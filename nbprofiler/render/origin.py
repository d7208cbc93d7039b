"""Whether a report was made by this kernel, as "Try it" asks before it runs a card's code.

"Try it" (the labextension's ``try/run.ts``) inserts a card's code in a new cell and runs
it. Only a report made by this kernel (``Report.made_here``: a live run captured by this
process) has code built from the user's own names and cell; a report loaded from a file,
reloaded from the run history or read from a trace has code built from whatever its maker
wrote, and its cell is inserted without running. A flag in the card could not say which:
a notebook from someone else carries its outputs, cards included, and a live run's card
outlives its kernel in the saved notebook. So a card made here carries a random ``token``
that this process alone issued, and the extension asks the kernel (``made_here``) before
it runs anything; any other card says where its report came from (``words``), which the
extension shows when it inserts the code without running it.
"""
from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..report import Report

# Every token issued, kept for the process's life: a card outlives its Report in the notebook.
_ISSUED: set[str] = set()
_TOKEN = re.compile(r"[0-9a-f]{32}\Z")


def issue() -> str:
    """A new token, which ``made_here`` confirms for the process's life. A report made here
    gets one, once, from its view model (``view_model.of(report).token``)."""
    issued = secrets.token_hex(16)
    _ISSUED.add(issued)
    return issued


def made_here(token: str) -> bool:
    """Whether ``token`` is one this process issued: the card is of a report this kernel made."""
    return isinstance(token, str) and _TOKEN.match(token) is not None and token in _ISSUED


def words(report: "Report") -> str | None:
    """Where a report not made by this kernel came from, in words; None for one made here."""
    if report.made_here:
        return None
    if report.stored:
        return "this report was reloaded from the run history"
    if report.ran_live:
        return "this report was loaded from a saved report file"
    if report.source_path:
        return f"this report was loaded from the trace file {Path(report.source_path).name}"
    return "this report was loaded from a trace file"
