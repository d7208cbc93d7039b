"""A suggestion shows code only if that code is Python: pasted code that does not even compile
is worse than none. Applied to every suggestion where they are assembled (``rules.suggest``).

Code that replaces lines of the cell is indented as they are there, so it is checked as it
reads once its common indentation is taken off (comment lines, which may start anywhere, aside).
"""
from __future__ import annotations

import textwrap
from dataclasses import replace

from .suggestion import Suggestion


def compiled(suggestion: Suggestion) -> Suggestion:
    """``suggestion`` as it is when its code compiles; otherwise without code, saying why."""
    if not suggestion.code:
        return suggestion
    try:
        compile(_dedented(suggestion.code), f"<{suggestion.kind} suggestion>", "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a null byte
        why = f"no code is shown: the code written for it is not valid Python ({type(exc).__name__}: {exc})"
        return replace(suggestion, code=None, detail="; ".join(p for p in (suggestion.detail, why) if p))
    return suggestion


def _dedented(code: str) -> str:
    """``code`` without its common indentation, comment-only lines blanked (line numbers kept)."""
    return textwrap.dedent("\n".join("" if line.lstrip().startswith("#") else line for line in code.splitlines()))
