"""Which line of the cell makes the host wait for the GPU, read from the cell's source.

With ``--stack`` the trace places each sync on its cell line (``SyncLocator``).
Without it, the trace only knows the operators around the sync (``aten::item``),
yet the cell's source shows the loop's lines that copy a device value to the
host: ``.item()``, ``.cpu()`` / ``.numpy()`` / ``.tolist()``, ``print(loss)``. The
advice names that line, and where the line keeps a number only to add it up or
log it later (``total += loss.item()``, ``history.append(loss.item())``), gives
the edit that keeps it on the device instead (``.detach()``): no wait per step.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .cell_source import loop_statements, parse_cell

# What the trace calls each kind of sync (``analysis.sync.SYNC_OPS`` and copies), by the call that makes it.
_METHOD_CAUSES = {"item": "item", "cpu": "cpu", "numpy": "cpu", "tolist": "cpu"}


@dataclass(frozen=True)
class SyncLine:
    """A statement in a loop body that copies a device value to the host."""

    line: int
    end_line: int
    text: str  # the statement's lines, as written
    causes: frozenset[str]  # "item", "cpu": as ``sync_points`` names them
    fixed: str | None  # the statement keeping the value on the device, or None when no edit is safe


def sync_lines(source: str) -> list[SyncLine]:
    """The loop statements of ``source`` that sync, in line order; empty when it does not parse."""
    tree = parse_cell(source)
    if tree is None:
        return []
    lines = source.splitlines()
    assigned = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                for t in node.targets if isinstance(t, ast.Name)}
    found: dict[int, SyncLine] = {}
    for _, statement in loop_statements(tree, skip_no_grad=False):  # a sync waits under no_grad too
        if isinstance(statement, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            continue  # their bodies are statements of their own
        causes = _causes(statement, assigned)
        if causes and statement.lineno not in found:
            end = statement.end_lineno or statement.lineno
            found[statement.lineno] = SyncLine(statement.lineno, end, "\n".join(lines[statement.lineno - 1:end]),
                                               frozenset(causes), _kept_on_device(statement, lines))
    return [found[k] for k in sorted(found)]


def _causes(statement: ast.stmt, tensors: set[str]) -> set[str]:
    """The syncs a statement makes: its ``.item()``-like calls, and ``print`` of a computed value."""
    out: set[str] = set()
    for node in ast.walk(statement):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr in _METHOD_CAUSES and not node.args:
            out.add(_METHOD_CAUSES[node.func.attr])
        elif isinstance(node.func, ast.Name) and node.func.id == "print" \
                and any(isinstance(a, ast.Name) and a.id in tensors for n in node.args for a in ast.walk(n)):
            out |= {"item", "cpu"}  # printing a device tensor copies it: as a scalar, or whole
    return out


def _kept_on_device(statement: ast.stmt, lines: list[str]) -> str | None:
    """``total += loss.item()`` / ``history.append(loss.item())`` with ``.detach()`` in place of
    ``.item()``; None for any other statement (its value may be needed on the host right away)."""
    keeps = isinstance(statement, ast.AugAssign) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute) and statement.value.func.attr == "append")
    items = [(n, n.func) for n in ast.walk(statement) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "item" and not n.args]
    if not keeps or len(items) != 1 or statement.lineno != statement.end_lineno:
        return None
    call, func = items[0]
    raw = lines[statement.lineno - 1].encode()
    start, end = func.value.end_col_offset or 0, call.end_col_offset or 0
    return (raw[:start] + b".detach()" + raw[end:]).decode()
