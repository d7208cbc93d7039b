"""Reading the profiled cell's source: its syntax tree, the statements of its loops, and
whether a statement has its lines to itself.

The advice that names a line of the cell (the leak's, the sync's) and the code written in
the cell's own names (``advice.cell_names``) read the same source the same way, so a line
one of them names is a line the others can edit.
"""
from __future__ import annotations

import ast
import re
from typing import Iterator

LOOPS = (ast.For, ast.AsyncFor, ast.While)
_NO_GRAPH_BLOCKS = {"no_grad", "inference_mode"}


def parse_cell(source: str) -> ast.Module | None:
    """The cell's syntax tree; lines of IPython syntax (``%magic``, ``!cmd``) become ``pass``
    so that every other line keeps its number. None when it still does not parse."""
    try:
        return ast.parse(source)
    except SyntaxError:
        pass
    lines = [re.sub(r"^(\s*)[%!].*$", r"\1pass", s) for s in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def loop_statements(tree: ast.AST, skip_no_grad: bool = True) -> Iterator[tuple[ast.stmt, ast.stmt]]:
    """(innermost loop, statement) for each statement in a loop body; with ``skip_no_grad``, outside
    any ``torch.no_grad()`` / ``inference_mode()`` block (there nothing keeps a graph)."""
    def walk(node: ast.AST, loop: ast.stmt | None) -> Iterator[tuple[ast.stmt, ast.stmt]]:
        for child in ast.iter_child_nodes(node):
            if skip_no_grad and isinstance(child, (ast.With, ast.AsyncWith)) \
                    and any(_no_graph(i.context_expr) for i in child.items):
                continue
            if isinstance(child, ast.stmt) and loop is not None and not isinstance(child, LOOPS):
                yield loop, child
            yield from walk(child, child if isinstance(child, LOOPS) else loop)
    return walk(tree, None)


def own_lines(statement: ast.stmt, lines: list[str]) -> bool:
    """Whether ``statement`` has its lines to itself: nothing before it on its first line, at most a
    comment after it on its last (only then can an edit replace those lines whole)."""
    first = lines[statement.lineno - 1].encode()
    last = lines[(statement.end_lineno or statement.lineno) - 1].encode()
    after = last[statement.end_col_offset or 0:].strip()  # ast's columns count UTF-8 bytes
    return not first[:statement.col_offset].strip() and (not after or after.startswith(b"#"))


def call_name(func: ast.expr) -> str | None:
    """The name a call is made by: ``f`` for ``f(...)`` and ``obj.f(...)``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def uses_name(source: str, name: str) -> bool:
    """Whether the cell reads or writes ``name`` anywhere."""
    tree = parse_cell(source)
    return tree is not None and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree))


def _no_graph(expr: ast.expr) -> bool:
    call = expr.func if isinstance(expr, ast.Call) else expr
    return call_name(call) in _NO_GRAPH_BLOCKS
