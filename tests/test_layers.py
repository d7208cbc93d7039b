"""The package keeps the README's layout table: each module imports only from its own row and the
rows the table allows it, no module is over 600 lines, and every module sits in a row."""
from __future__ import annotations

from import_graph import PACKAGE, edges, largest_module, layer_of, layers, modules, upward

MAX_LINES = 600


def test_every_module_sits_in_a_row_of_the_table():
    table = layers()
    assert len(table) >= 10, "the README's layout table was not found"
    assert [name for name in modules() if layer_of(name, table) is None] == []


def test_no_import_runs_up_the_table():
    wrong = upward(edges(), layers())
    assert [f"{e.source} -> {e.target} (line {e.line})" for e in wrong] == []


def test_no_module_is_over_600_lines():
    sizes = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines()) for path in modules().values()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}, largest_module()
