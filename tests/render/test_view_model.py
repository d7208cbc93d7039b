"""render/ keeps one memory of the reports it shows, the view model, which every view reads:
each chart, the timeline, the "Try it" token and the first-written time are made once per
report there, and nowhere else in render/."""
from __future__ import annotations

import ast

from import_graph import PACKAGE


def _per_object_memories(path) -> list[str]:
    """The module-level names of ``path`` bound to a ``WeakKeyDictionary``: memories kept per object."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if value is not None and "WeakKeyDictionary" in ast.unparse(value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [ast.unparse(t) for t in targets]
    return found


def test_render_keeps_one_memory_of_its_reports_the_view_model():
    memories = {path.name: names for path in sorted((PACKAGE / "render").glob("*.py"))
                if (names := _per_object_memories(path))}
    assert memories == {"view_model.py": ["_made"]}
