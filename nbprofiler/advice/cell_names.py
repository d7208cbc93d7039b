"""The cell's own names for what a suggestion's code touches: its model, loss, optimizer and loop.

A suggestion's code is pasted into the cell, so it must use the cell's names:
``loss_fn(model(x), y)`` raises NameError in a cell whose loss is
``F.cross_entropy(net(x), y)``. A run records the cell's source, not which of
its names is what, so each is read from how the cell uses it:

* the model: a name whose ``.parameters()``, ``.eval()`` or ``.train()`` the
  cell calls is a module; otherwise the name the cell calls on its data,
  innermost first (``loss_fn(model(x), y)`` calls ``model`` on ``x``, and
  ``loss_fn`` on what ``model`` returned);
* the loss: the name whose ``.backward()`` the cell calls, and the statements
  of its block that compute it (the forward pass, which autocast wraps);
* the optimizer: the name whose ``.step()`` and ``.zero_grad()`` the cell calls;
* the loop: the innermost ``for`` around the backward call (its iterable is the loader).

Without a cell, or where it does not show a name, the code uses a generic name
behind a guard, or says the edit in comments, so that pasting it never raises NameError.
"""
from __future__ import annotations

import ast
import builtins

# Methods only an nn.Module has among what a training cell calls.
_MODULE_METHODS = frozenset({"parameters", "named_parameters", "modules", "named_modules", "eval", "train",
                             "state_dict", "requires_grad_"})
_BUILTINS = frozenset(dir(builtins))
COMPILE_COST = "the first call compiles: seconds to a minute, paid once per input shape and again at each recompile"


def model_name(cell_source: str | None) -> str | None:
    """The cell's name for its model, or None when the cell does not show one."""
    try:
        tree = ast.parse(cell_source or "")
    except SyntaxError:  # IPython syntax (magics, `!`): nothing to read
        return None
    local = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MODULE_METHODS
                and isinstance(node.func.value, ast.Name)):
            return node.func.value.id
    called = sorted(_called_names(tree, 0), key=lambda c: (-c[0], c[1], c[2]))
    for _, _, _, name in called:
        if name not in _BUILTINS and name not in local and not name[:1].isupper():
            return name
    return None


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
    if name is not None:
        return f"{name} = torch.compile({name})  # {comment}"
    return ("if \"model\" in globals():  # put your nn.Module's name in place of `model`\n"
            f"    model = torch.compile(model)  # {comment}")
