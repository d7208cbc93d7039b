"""The package's import graph, read from its source, and the README's layout table as rules over it.

An import counts where it runs: at module level or inside a function alike (an import moved into a
function still ties the two modules). Imports under ``if TYPE_CHECKING:`` are left out: they are
type hints, never run. Run this file to print the figures the layer test holds:

    python tests/import_graph.py
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "nbprofiler"
README = REPO / "README.md"


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (dotted module names); ``in_function``: inside a def."""
    source: str
    target: str
    in_function: bool
    line: int


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:``."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for statement in node.body for n in ast.walk(statement))
    return inside


def _targets(name: str, node: ast.ImportFrom | ast.Import, known: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "nbprofiler")
        return
    package = name if known[name].name == "__init__.py" else name.rpartition(".")[0]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    if origin.split(".")[0] != "nbprofiler":
        return
    for alias in node.names:  # ``from . import history`` imports the module nbprofiler.history
        yield f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin


def edges() -> list[Edge]:
    """Every import of one of the package's modules by another, as it runs."""
    known = modules()
    found: list[Edge] = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = _type_only(tree)

        def visit(node: ast.AST, in_function: bool, name: str = name, type_only: set[int] = type_only) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)) and id(child) not in type_only:
                    found.extend(Edge(name, target, in_function, child.lineno)
                                 for target in sorted(set(_targets(name, child, known))) if target != name)
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

        visit(tree, False)
    return found


def largest_cycle(found: list[Edge]) -> list[str]:
    """The largest set of modules that all import one another, directly or not (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for edge in found:
        graph.setdefault(edge.source, set()).add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    largest: list[str] = []

    def connect(node: str) -> None:
        nonlocal largest
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = stack[stack.index(node):]
            del stack[stack.index(node):]
            largest = max(largest, sorted(component), key=len)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return largest


@dataclass(frozen=True)
class Layer:
    """One row of the README's layout table: the paths it holds and those it may import."""
    paths: tuple[str, ...]
    may_import: tuple[str, ...]


EVERY_ROW = "every row"


def _paths(cell: str) -> tuple[str, ...]:
    """The package paths a cell names in backquotes; "every row" names the whole package."""
    if cell.strip() == EVERY_ROW:
        return ("",)
    return tuple(p.removeprefix("nbprofiler/") for p in re.findall(r"`([^`]+)`", cell))


def layers() -> list[Layer]:
    """The package's rows of the README's layout table (its folder, and what it may import)."""
    text = README.read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| `nbprofiler")]
    return [Layer(_paths(row[0]), _paths(row[-1])) for row in rows]


def _path_of(module: str) -> str:
    return modules()[module].relative_to(PACKAGE).as_posix()


def _holds(entry: str, path: str) -> bool:
    """Whether the README's ``entry`` (a folder ending in /, a file, or "" for every row) holds ``path``."""
    return path.startswith(entry) if entry.endswith("/") or not entry else path == entry


def layer_of(module: str, table: list[Layer]) -> Layer | None:
    path = _path_of(module)
    held = [layer for layer in table if any(_holds(entry, path) for entry in layer.paths)]
    return held[0] if held else None


def upward(found: list[Edge], table: list[Layer]) -> list[Edge]:
    """The imports the table does not allow: to another row not in the importer's "may import"."""
    wrong = []
    for edge in found:
        source, target = layer_of(edge.source, table), layer_of(edge.target, table)
        if source is None or target is None or source is target:
            continue
        if not any(_holds(entry, _path_of(edge.target)) for entry in source.may_import):
            wrong.append(edge)
    return wrong


def largest_module() -> tuple[str, int]:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    name = max(sizes, key=lambda n: sizes[n])
    return name, sizes[name]


def main() -> None:
    found = edges()
    table = layers()
    wrong = upward(found, table)
    cycle = largest_cycle(found)
    print(f"modules: {len(modules())}, imports between them: {len(found)}")
    print(f"upward imports (against the README's table): {len(wrong)}")
    for edge in wrong:
        print(f"  {edge.source} -> {edge.target} (line {edge.line}{', in a function' if edge.in_function else ''})")
    print(f"function-level imports: {sum(e.in_function for e in found)}")
    print(f"largest import cycle: {len(cycle)} modules {cycle}" if len(cycle) > 1 else "largest import cycle: none")
    print("largest module: {} ({} lines)".format(*largest_module()))


if __name__ == "__main__":
    main()
