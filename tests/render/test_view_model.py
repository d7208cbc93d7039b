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


def test_the_hardware_view_is_made_once_for_every_view_of_a_report(monkeypatch):
    """The static HTML, the saved payload and the explorer's Hardware tab of one report show one
    Hardware view, made once: a second view reads it, as a user switching views expects the same
    figures, at no second cost."""
    import nbprofiler
    from nbprofiler.render import hardware
    from nbprofiler.render.payload import report_payload

    from conftest import shared_trace

    made = []  # the view's sections, the costly part, built by hardware_view for each report it shows
    build = hardware.sections
    monkeypatch.setattr(hardware, "sections", lambda report: made.append(report) or build(report))
    report = nbprofiler.load(shared_trace("a100_alexnet_small"))
    html, payload = report.to_html(), report_payload(report)
    report.explorer("Hardware")
    assert made == [report]
    assert "Device:" in html and payload["hardware"]["sections"]
