"""Which line of the cell keeps tensors alive from one step to the next, and its edit.

Memory that grows step after step is nearly always a tensor that carries its
autograd graph, kept in something that outlives the loop body: a list it is
appended to, a running total it is added to, a dict it is stored in. The graph
holds every activation of the forward pass that made it, so each step leaves
megabytes behind. A generic cheat sheet cannot be pasted (its names are not the
cell's), so the advice needs the cell's own statement.

Two sources say which statement it is:

* the cell's source (``kept_values``): statements in a loop body that add a
  value with a graph to a holder defined outside the loop body. Without
  running anything this is a judgement on names and calls, so it is a
  candidate, not a proof;
* the trace with ``--stack`` line marks (``kept_bytes_by_line``): the cell
  line running when each allocation was made that was never freed by the end
  of the profiled steps. A line that leaves such bytes behind in step after
  step is where the kept tensors come from: that confirms (or overrules) the
  candidate.

``fixed_statement`` gives the edit, in the cell's names and indentation, so it
can replace the statement as it stands.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pandas as pd

from ..records import NOT_IN_CELL, LineMarks
from ..trace.table import EventTable
from .cell_source import call_name, loop_statements, own_lines, parse_cell, uses_name
from .lines import line_at
from .memory import allocation_lifetimes
from .steps import step_of

KEPT_LINE_COLUMNS = ["line", "steps", "kept_bytes"]
# Calls whose result holds no graph: Python numbers, detached tensors, sizes.
_PLAIN_METHODS = {"item", "detach", "tolist", "numpy", "size", "numel", "dim", "argmax", "argmin"}
_PLAIN_FUNCTIONS = {"float", "int", "len", "bool", "str", "round", "range"}
# Calls whose result is one number: a loss or a reduction (unless asked for no reduction).
_SCALAR_CALLS = {"mean", "sum", "norm", "cross_entropy", "mse_loss", "nll_loss", "l1_loss", "smooth_l1_loss",
                 "huber_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits", "criterion"}
_VALIDATION_NAME = re.compile(r"(^|_)(val|valid|validation|eval|test|dev)($|_|\d)|^(val|eval|test)", re.IGNORECASE)
# Names that say they hold or make tensors with a graph.
_TENSOR_NAME = re.compile(r"^(torch|F|nn)$|model|net|loss|criterion|encoder|decoder|logits|out", re.IGNORECASE)


@dataclass(frozen=True)
class KeptValue:
    """A statement in a loop body that keeps a value, with its graph, beyond the iteration."""

    line: int  # first line of the statement, 1-based in the cell
    end_line: int
    how: str  # "adds to" (``+=``), "appends to", "stores in"
    holder: str  # the name that keeps it
    value: str  # the kept expression, as written
    validation: bool  # computed on validation data: it needs no graph at all
    scalar: bool  # a loss or a reduction: ``.item()`` keeps its number
    # Each kept value: (line, col, end_line, end_col) in UTF-8 columns, and whether it needs
    # parentheses before a method call (``a + b`` would otherwise become ``a + b.item()``).
    edits: tuple[tuple[int, int, int, int, bool], ...]
    made_on: frozenset[int]  # the lines that compute it: the statement's own, and the loop's assignments it reads
    alone: bool  # the statement has its lines to itself (not ``for x in xs: keep(x)`` or ``a(); keep(x)``)


def kept_values(source: str) -> list[KeptValue]:
    """The statements of ``source`` that keep graph-carrying values across loop iterations,
    in line order. Empty when the cell does not parse (after blanking IPython's own syntax)."""
    tree = parse_cell(source)
    if tree is None:
        return []
    found: dict[int, KeptValue] = {}
    for loop, statement in loop_statements(tree):
        kept = _kept(loop, statement, source)
        if kept is not None:
            found.setdefault(kept.line, kept)
    return [found[k] for k in sorted(found)]


def fixed_statement(source: str, kept: KeptValue, on_device: bool) -> str:
    """The statement's lines rewritten so that nothing with a graph is kept, indented as in the cell.

    A validation value is computed under ``torch.no_grad()`` (no graph is built at
    all); anything else is kept as ``.item()`` (a loss: its number; on a GPU
    ``.detach()``, as ``.item()`` would wait for the GPU every step) or ``.detach()``.
    """
    lines = source.splitlines()
    if kept.validation and kept.alone:  # a block around a line shared with other statements would take them in
        statement = lines[kept.line - 1:kept.end_line]
        indent = re.match(r"\s*", statement[0]).group(0)  # type: ignore[union-attr]  # always matches
        head = [f"{indent}import torch"] if not uses_name(source, "torch") else []
        return "\n".join([*head, f"{indent}with torch.no_grad():", *("    " + s for s in statement)])
    suffix = ".item()" if kept.scalar and not on_device else ".detach()"
    raw = [s.encode() for s in lines]
    for line, col, end_line, end_col, parens in sorted(kept.edits, reverse=True):  # last first: columns hold
        close = (b")" if parens else b"") + suffix.encode()
        raw[end_line - 1] = raw[end_line - 1][:end_col] + close + raw[end_line - 1][end_col:]
        if parens:
            raw[line - 1] = raw[line - 1][:col] + b"(" + raw[line - 1][col:]
    return "\n".join(s.decode() for s in raw[kept.line - 1:kept.end_line])


def kept_bytes_by_line(table: EventTable, steps: pd.DataFrame, marks: LineMarks) -> pd.DataFrame:
    """Per cell line: ``line, steps, kept_bytes``, the bytes allocated on that line in a
    profiled step (all but the last) and never freed by the end of the last one, and
    in how many steps that happened. A gradient or an activation is freed within the
    next step; only what the loop keeps survives. Most steps first, then most bytes."""
    empty = pd.DataFrame({c: pd.Series(dtype="int64") for c in KEPT_LINE_COLUMNS})
    if len(steps) < 2:
        return empty
    events, free_ts = allocation_lifetimes(table)
    ts = table["ts"][events]
    step = step_of(ts, steps)
    last_end = float(steps["end_us"].iloc[-1])
    last = int(steps["step"].iloc[-1])
    kept = (step >= 0) & (step != last) & ~(free_ts < last_end)
    line = line_at(marks, ts[kept], table.meta.base_time_ns)
    frame = pd.DataFrame({"line": line, "step": step[kept], "bytes": np.nan_to_num(table["bytes"][events[kept]])})
    frame = frame[frame["line"] != NOT_IN_CELL]
    if frame.empty:
        return empty
    out = frame.groupby("line").agg(steps=("step", "nunique"), kept_bytes=("bytes", "sum")).reset_index()
    out = out.astype("int64")
    return out.sort_values(["steps", "kept_bytes"], ascending=False, kind="stable").reset_index(drop=True)


def _kept(loop: ast.stmt, statement: ast.stmt, source: str) -> KeptValue | None:
    """The statement as a ``KeptValue`` when it keeps a graph beyond the iteration."""
    rebound = _bound_in(loop)
    assigned = _assignments(loop)
    holder, how, values = _holder_and_values(statement)
    if holder is None or holder in rebound:
        return None
    data = _target_names(loop.target) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    values = [v for v in values if _has_graph(v, assigned, set()) and _from_tensors(v, assigned, data)]
    if not values:
        return None
    text = ", ".join(ast.get_source_segment(source, v) or "" for v in values)
    names = {n for v in values for n in _names(v, assigned, set())}
    made_on = {*range(statement.lineno, (statement.end_lineno or statement.lineno) + 1)}
    for made in (assigned[n] for n in names if n in assigned):
        made_on |= {*range(made.lineno, (made.end_lineno or made.lineno) + 1)}
    return KeptValue(
        line=statement.lineno, end_line=statement.end_lineno or statement.lineno, how=how, holder=holder,
        value=text, validation=any(_VALIDATION_NAME.search(n) for n in names),
        scalar=all(_scalar(v, assigned) for v in values),
        edits=tuple((v.lineno, v.col_offset, v.end_lineno or v.lineno, v.end_col_offset or 0,
                     not isinstance(v, (ast.Name, ast.Call, ast.Attribute, ast.Subscript))) for v in values),
        made_on=frozenset(made_on),
        alone=own_lines(statement, source.splitlines()),
    )


def _holder_and_values(statement: ast.stmt) -> tuple[str | None, str, list[ast.expr]]:
    """What a statement keeps its values in, how, and the values; (None, "", []) for other statements."""
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) \
            and isinstance(statement.op, ast.Add):
        return statement.target.id, "adds to", _elements(statement.value)
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], ast.Subscript) and isinstance(statement.targets[0].value, ast.Name):
        return statement.targets[0].value.id, "stores in", _elements(statement.value)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.attr in ("append", "extend", "insert") and call.args:
            return func.value.id, "appends to", _elements(call.args[-1])
    return None, "", []


def _elements(value: ast.expr) -> list[ast.expr]:
    """The values a container literal holds (each is kept on its own), or the value itself."""
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return list(value.elts)
    if isinstance(value, ast.Dict):
        return list(value.values)
    return [value]


def _bound_in(loop: ast.stmt) -> set[str]:
    """Names the loop body binds afresh (``x = ...``, loop targets): they do not outlive an iteration."""
    out: set[str] = set()
    for node in ast.walk(loop):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets = [node.target]
        for t in targets:
            out |= _target_names(t)
    return out


def _target_names(target: ast.expr) -> set[str]:
    """The names an assignment target binds: ``a``, ``a, (b, c)``; not ``a[i]`` or ``a.b`` (they mutate ``a``)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for e in target.elts for n in _target_names(e)}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _assignments(loop: ast.stmt) -> dict[str, ast.expr]:
    """Plain ``name = value`` in the loop, so that a kept name can be traced to what made it."""
    return {t.id: node.value for node in ast.walk(loop) if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def _has_graph(value: ast.expr, assigned: dict[str, ast.expr], seen: set[str]) -> bool:
    """Whether ``value`` can carry an autograd graph: it calls something that computes
    tensors, and does not end in ``.item()`` / ``.detach()`` / ``float(...)`` and the like."""
    if isinstance(value, ast.Call):
        name = call_name(value.func)
        if name in _PLAIN_METHODS or name in _PLAIN_FUNCTIONS:
            return False
        return True
    if isinstance(value, ast.Name):
        made = assigned.get(value.id)
        if made is None or value.id in seen:
            return False
        return _has_graph(made, assigned, seen | {value.id})
    if isinstance(value, ast.BinOp):
        return _has_graph(value.left, assigned, seen) or _has_graph(value.right, assigned, seen)
    if isinstance(value, ast.UnaryOp):
        return _has_graph(value.operand, assigned, seen)
    if isinstance(value, ast.Subscript):  # a slice of a tensor keeps its graph; ``.shape``, ``.data`` do not
        return _has_graph(value.value, assigned, seen)
    return False


def _from_tensors(value: ast.expr, assigned: dict[str, ast.expr], data: set[str]) -> bool:
    """Whether ``value`` computes on tensors: it reads the loop's batch (``data``), validation
    data, torch itself or a model or loss; not ``time.perf_counter() - t0`` or ``sched.get_last_lr()``."""
    return any(n in data or _VALIDATION_NAME.search(n) or _TENSOR_NAME.search(n)
               for n in _names(value, assigned, set()))


def _scalar(value: ast.expr, assigned: dict[str, ast.expr]) -> bool:
    """A loss or a full reduction: one number, so ``.item()`` keeps all of it."""
    if isinstance(value, ast.Name):
        made = assigned.get(value.id)
        return "loss" in value.id.lower() if made is None else _scalar(made, assigned)
    if isinstance(value, ast.BinOp):
        return _scalar(value.left, assigned) and _scalar(value.right, assigned) \
            or isinstance(value.right, ast.Constant) and _scalar(value.left, assigned)
    if not isinstance(value, ast.Call):
        return False
    name = call_name(value.func) or ""
    reduces = not any(k.arg == "reduction" and not (isinstance(k.value, ast.Constant) and k.value.value in
                                                    ("mean", "sum")) for k in value.keywords)
    whole = not (name in ("mean", "sum", "norm") and (value.args or value.keywords))
    return reduces and whole and (name in _SCALAR_CALLS or "loss" in name.lower())


def _names(value: ast.expr, assigned: dict[str, ast.expr], seen: set[str]) -> Iterator[str]:
    """Every name ``value`` reads, following the loop's plain assignments."""
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and node.id not in seen:
            yield node.id
            if node.id in assigned:
                yield from _names(assigned[node.id], assigned, seen | {node.id})


@dataclass(frozen=True)
class LeakLine:
    """The cell statement that keeps the growing tensors, and what shows it."""

    line: int
    text: str  # the statement's lines, as written
    kept: KeptValue | None  # what the source shows it keeping; None when only the trace points at it
    made_line: int | None  # the line the trace shows making the kept bytes (the statement's, or one it reads)
    kept_bytes: int | None  # from the trace: bytes made on ``made_line``, in earlier steps, never freed
    steps: int | None  # in how many profiled steps it left such bytes


def leak_line(source: str, by_line: pd.DataFrame) -> LeakLine | None:
    """The line that keeps tensors across steps. With the trace (``kept_bytes_by_line``): the
    statement of the source that keeps what the line leaving bytes behind in two steps or more
    makes (``loss = ...`` makes it, ``total += loss`` keeps it), or that line itself when the
    source shows no such statement. Without it: the first statement the source shows keeping a graph."""
    candidates = kept_values(source)
    lines = source.splitlines()
    traced = by_line[by_line["steps"] >= 2]
    if len(traced):
        top = traced.iloc[0]
        n = int(top["line"])
        kept = next((k for k in candidates if k.line <= n <= k.end_line), None) \
            or next((k for k in candidates if n in k.made_on), None)
        first, last = (kept.line, kept.end_line) if kept is not None else (n, n)
        return LeakLine(first, "\n".join(lines[first - 1:last]), kept, n, int(top["kept_bytes"]), int(top["steps"]))
    if candidates:
        k = candidates[0]
        return LeakLine(k.line, "\n".join(lines[k.line - 1:k.end_line]), k, None, None, None)
    return None
