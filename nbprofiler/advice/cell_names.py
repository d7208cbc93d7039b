"""The cell's own names for what a suggestion's code touches: its model, loss, optimizer and loop.

A suggestion's code is pasted into the cell, so it must use the cell's names:
``loss_fn(model(x), y)`` raises NameError in a cell whose loss is
``F.cross_entropy(net(x), y)``. A run records the cell's source, not which of
its names is what, so each is read from how the cell uses it:

* the model: where the run recorded which names the cell calls are modules (a live
  run knows its namespace), one of those (``module_name``); otherwise a name whose
  ``.parameters()``, ``.eval()`` or ``.train()`` the cell calls is a module, else
  the name the cell calls on its data, innermost first (``loss_fn(model(x), y)``
  calls ``model`` on ``x``, and ``loss_fn`` on what ``model`` returned);
* the loss: the name whose ``.backward()`` the cell calls, and the statements
  of its block that compute it (the forward pass, which autocast wraps);
* the optimizer: the name whose ``.step()`` and ``.zero_grad()`` the cell calls;
* the loop: the innermost ``for`` around the backward call (its iterable is the loader).

Without a cell, or where it does not show a name, the code uses a generic name
behind a guard, or says the edit in comments, so that pasting it never raises NameError.
A name goes into code only as ``safe_names.code_name`` allows; ``TrainingStep.copied``
names the lines its edits copy, which ``rules.facts.Facts.may_copy`` judges.
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from ..analysis.cell_source import own_lines, parse_cell
from .safe_names import code_name

# Methods only an nn.Module has among what a training cell calls.
_MODULE_METHODS = frozenset({"parameters", "named_parameters", "modules", "named_modules", "eval", "train",
                             "state_dict", "requires_grad_"})
_BUILTINS = frozenset(dir(builtins))
# Methods that move, convert or reshape a batch: no part of the forward pass that autocast changes.
_DATA_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "long", "int", "pin_memory", "contiguous", "view",
                           "reshape", "permute", "flatten", "squeeze", "unsqueeze"})
COMPILE_COST = "the first call compiles: seconds to a minute, paid once per input shape and again at each recompile"


def model_name(cell_source: str | None) -> str | None:
    """The cell's name for its model, or None when the cell does not show one that may go into code."""
    tree = parse_cell(cell_source or "")
    if tree is None:
        return None
    local = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MODULE_METHODS
                and isinstance(node.func.value, ast.Name)):
            return code_name(node.func.value.id)
    called = sorted(_called_names(tree, 0), key=lambda c: (-c[0], c[1], c[2]))
    for _, _, _, name in called:
        if name not in _BUILTINS and name not in local and not name[:1].isupper():
            return code_name(name)
    return None


def called_names(cell_source: str | None) -> list[str]:
    """The plain names the cell calls on arguments (``model(x)``, ``featurize(t)``), each once, in the order
    of their first call; capture tells which of them are modules (``RunRecord.cell_modules``)."""
    tree = parse_cell(cell_source or "")
    if tree is None:
        return []
    calls = sorted(_called_names(tree, 0), key=lambda c: (c[1], c[2]))
    return list(dict.fromkeys(name for _, _, _, name in calls))


def module_name(cell_source: str | None, modules: tuple[str, ...] | None, timed: dict[str, float]) -> str | None:
    """The cell's name for the ``nn.Module`` it calls, for code: among the names it calls that the run recorded
    as modules (never a function it calls, whatever its nesting), the one ``timed`` gives most time, else the
    first called; None where the run recorded none, or the name may not go into code."""
    known = set(modules or ())
    called = [name for name in called_names(cell_source) if name in known]
    if not called:
        return None
    return code_name(max(called, key=lambda name: (timed.get(name, 0.0), -called.index(name))))


def _called_names(node: ast.AST, depth: int) -> list[tuple[int, int, int, str]]:
    """(call nesting depth, line, column, name) of each call of a plain name under ``node``."""
    found = []
    for child in ast.iter_child_nodes(node):
        inner = depth
        if isinstance(child, ast.Call):
            inner = depth + 1
            if isinstance(child.func, ast.Name) and child.args:
                found.append((inner, child.lineno, child.col_offset, child.func.id))
        found.extend(_called_names(child, inner))
    return found


def compile_code(name: str | None, comment: str) -> str:
    """``name = torch.compile(name)`` with ``comment``; guarded under a generic name."""
    return model_code(name, "torch.compile({})", comment)


def model_code(name: str | None, call: str, comment: str) -> str:
    """``name = call(name)`` (``call`` formats the model's name in) with ``comment``; under the
    generic ``model`` it runs only where a ``model`` exists, so pasting it never raises NameError."""
    if name is not None:
        return f"{name} = {call.format(name)}  # {comment}"
    return ("if \"model\" in globals():  # put your nn.Module's name in place of `model`\n"
            f"    model = {call.format('model')}  # {comment}")


@dataclass(frozen=True)
class TrainingStep:
    """The cell's training step, located for code that replaces its lines. Every statement
    named here has its lines to itself, so that replacing them leaves no other statement behind."""

    source: str
    names: frozenset[str]  # every name the cell reads or binds (``torch``: whether it is imported there)
    loss: str  # the name whose ``.backward()`` the cell calls
    forward: tuple[int, int]  # first and last line of the statements of its block that compute the loss
    backward: ast.Expr  # ``loss.backward()``
    optimizer: str | None  # the name whose ``.step()`` and ``.zero_grad()`` the cell calls
    loop: ast.For | None  # the innermost ``for`` around the backward call; None where its lines cannot be edited
    updates: tuple[ast.Expr, ...]  # the optimizer's ``.step()`` / ``.zero_grad()`` statements in the loop

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    @property
    def copied(self) -> tuple[int, int]:
        """The first and last cell line an edit may copy: the loop's, or without one the loss's statements."""
        return (self.loop.lineno, self.loop.end_lineno or self.loop.lineno) if self.loop else self.forward


def training_step(cell_source: str | None) -> TrainingStep | None:
    """The cell's training step, or None where the cell calls no ``name.backward()`` on a
    name its block assigns, or those statements share their lines with others."""
    tree = parse_cell(cell_source or "")
    if tree is None or not cell_source:
        return None
    found = next(((outer, block, i, name) for outer, block in _blocks(tree, (tree,))
                  for i, st in enumerate(block) if (name := _method_receiver(st, "backward")) is not None), None)
    if found is None:
        return None
    outer, block, i, loss = found
    forward = _forward(block[:i], loss)
    lines = cell_source.splitlines()
    if not forward or not all(own_lines(st, lines) for st in (forward[0], forward[-1], block[i])):
        return None
    optimizer = _optimizer(tree)
    loop = _innermost_for(outer)
    updates = tuple(st for st in ast.walk(loop) if isinstance(st, ast.Expr) and optimizer is not None
                    and _method_receiver(st, "step", "zero_grad") == optimizer) if loop is not None else ()
    if loop is not None and (loop.body[0].lineno == loop.lineno or not all(own_lines(u, lines) for u in updates)):
        loop, updates = None, ()
    names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)) | frozenset(
        (a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names)
    return TrainingStep(cell_source, names, loss, (forward[0].lineno, forward[-1].end_lineno or forward[-1].lineno),
                        block[i], optimizer, loop, updates)  # type: ignore[arg-type]  # block[i] is the Expr found


def _blocks(node: ast.AST, outer: tuple[ast.AST, ...]) -> list[tuple[tuple[ast.AST, ...], list[ast.stmt]]]:
    """Each statement list under ``node`` (bodies, ``else``, ``finally``), with the nodes around it."""
    found = [(outer, value) for _, value in ast.iter_fields(node)
             if isinstance(value, list) and value and isinstance(value[0], ast.stmt)]
    for child in ast.iter_child_nodes(node):
        found.extend(_blocks(child, (*outer, child)))
    return found


def _method_receiver(statement: ast.stmt, *methods: str) -> str | None:
    """``name`` where ``statement`` is ``name.method(...)`` for one of ``methods``."""
    if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute) and statement.value.func.attr in methods
            and isinstance(statement.value.func.value, ast.Name)):
        return statement.value.func.value.id
    return None


def _forward(before: list[ast.stmt], loss: str) -> list[ast.stmt]:
    """The first and last of the statements of ``before`` that compute ``loss``: its last assignments,
    and those of what they read, back to the first; not those that only move or reshape the data
    (``x = x.cuda()``), which autocast does not change. Empty where ``before`` does not assign ``loss``."""
    needed, kept = {loss}, []
    for st in reversed(before):
        if _assigned(st) & needed and not _moves_data(st):
            kept.append(st)
            needed |= {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return [kept[-1], kept[0]] if kept else []


def _moves_data(statement: ast.stmt) -> bool:
    calls = [n for n in ast.walk(statement) if isinstance(n, ast.Call)]
    return bool(calls) and all(isinstance(c.func, ast.Attribute) and c.func.attr in _DATA_METHODS for c in calls)


def _assigned(statement: ast.stmt) -> set[str]:
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets = [statement.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _optimizer(tree: ast.AST) -> str | None:
    """The first name (in line order) whose ``.step()`` the cell calls and whose ``.zero_grad()`` it calls too
    (a scheduler steps, but zeroes no gradients)."""
    statements = sorted((st for st in ast.walk(tree) if isinstance(st, ast.Expr)), key=lambda st: st.lineno)
    zeroed = {_method_receiver(st, "zero_grad") for st in statements}
    return next((name for st in statements if (name := _method_receiver(st, "step")) in zeroed and name), None)


def _innermost_for(outer: tuple[ast.AST, ...]) -> ast.For | None:
    """The innermost ``for`` of ``outer`` within the function (if any) that holds the statement."""
    for node in reversed(outer):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(node, ast.For):
            return node
    return None
