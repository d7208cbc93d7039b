"""Short names for device kernels: what a Kernels table can show on one line.

A CUDA kernel's name, as the trace records it, is its demangled C++ signature: the return type,
the template arguments and the parameter list, often 200 to 1,600 characters
(``void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,
at::detail::Array<char*, 3> >(int, ...)``). Shown whole, one name wraps over a dozen lines. The
short name drops the return type and elides the template arguments and the parameters
(``at::native::vectorized_elementwise_kernel<…>(…)``), but never merges two kernels: where two
different kernels of one table would get the same short name, both keep more of their name,
level by level (the outer template arguments, then every template argument, then the whole
name), until they differ. The whole name stays in the table for hover, copy and filter.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

ELLIPSIS = "…"
# How much of a name each level keeps: the template arguments down to this nesting depth
# (0: none), and whether the parameter list is kept. The last level is the whole name.
_LEVELS: tuple[tuple[int, bool], ...] = ((0, False), (1, False), (1_000, False))
_ANONYMOUS = "(anonymous namespace)"


def _parameters_start(name: str) -> int:
    """Where the trailing parameter list ``(...)`` starts, or -1 when the name has none.
    ``(anonymous namespace)`` is part of a qualified name, not a parameter list."""
    if not name.endswith(")"):
        return -1
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return -1 if name.startswith(_ANONYMOUS, i) else i
    return -1


def _elide_templates(name: str, keep_depth: int) -> str:
    """``name`` with every template argument list nested deeper than ``keep_depth`` written ``<…>``."""
    out: list[str] = []
    depth = 0
    for c in name:
        if c == "<":
            depth += 1
            if depth == keep_depth + 1:
                out.append("<" + ELLIPSIS)
                continue
        elif c == ">" and depth > 0:
            depth -= 1
            if depth == keep_depth:
                out.append(">")
                continue
        if depth <= keep_depth:
            out.append(c)
    return "".join(out)


def short_kernel_name(name: str, level: int = 0) -> str:
    """``name`` shortened at ``level`` (0: the most; ``len(_LEVELS)`` or more: the whole name)."""
    if level >= len(_LEVELS):
        return name
    keep_depth, keep_parameters = _LEVELS[level]
    text = name.removeprefix("void ")
    start = _parameters_start(text)
    head, parameters = (text[:start], text[start:]) if start >= 0 else (text, "")
    if parameters and not keep_parameters:
        parameters = "()" if parameters == "()" else f"({ELLIPSIS})"
    return _elide_templates(head, keep_depth) + parameters


def short_kernel_names(names: Iterable[str]) -> list[str]:
    """Each name's short name, unique among ``names``: a name whose short name another, different
    name shares keeps more of itself (the next level) until none does."""
    names = list(names)
    distinct = sorted(set(names))
    chosen: dict[str, str] = {}
    pending = distinct
    for level in range(len(_LEVELS) + 1):
        shorts = {n: short_kernel_name(n, level) for n in pending}
        taken = Counter(shorts.values())
        clashes_with_chosen = set(chosen.values())
        still = []
        for n in pending:
            short = shorts[n]
            if level == len(_LEVELS) or (taken[short] == 1 and short not in clashes_with_chosen):
                chosen[n] = short
            else:
                still.append(n)
        pending = still
        if not pending:
            break
    return [chosen[n] for n in names]
