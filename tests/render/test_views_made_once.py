"""Each view of a report is chosen once, by its view model, however many views show it: the text,
the HTML, the saved payload and every explorer tab read the same headline, suggestions, operator
rows, memory figures, Hardware view and kernel table, made once per report (and per option)."""
from __future__ import annotations

import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import nbprofiler
from conftest import ROOT, TRACES
from nbprofiler.render import hardware, view_model, views
from nbprofiler.render.payload import report_payload

# The builders of what more than one view shows (render/views.py and render/hardware.py).
BUILDERS = {
    "views": ("headline", "throughput_detail", "mfu_detail", "breakdown_parts", "operator_view",
              "ranked_suggestions", "memory_device", "memory_figures", "line_rows", "phase_summary",
              "lines_absent", "modules_absent"),
    "hardware": ("hardware_view", "with_kernel_figures"),
}
REPORTS = {
    # A GPU trace: device breakdown, kernels, memory, the Hardware view, suggestions; no cell lines.
    "gpu trace": TRACES / "a100_train.pt.trace.json.gz",
    # A saved live CPU run: steps by schedule phase and the cell's lines.
    "live run": ROOT / "tests" / "data" / "golden" / "loader_training.nbprof",
}


def _count_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls of each builder with the report, by builder and its other arguments: the builder is
    wrapped wherever the package holds it, in its own module and every module that imported it."""
    calls: Counter[str] = Counter()
    modules = {"views": views, "hardware": hardware}
    for module_name, names in BUILDERS.items():
        for name in names:
            builder = getattr(modules[module_name], name)

            def counted(*args: Any, _name: str = name, _builder: Any = builder, **kwargs: Any) -> Any:
                options = [a for a in args if a is None or isinstance(a, (str, int))] + sorted(kwargs.items())
                calls[_name + (f"{options}" if options else "")] += 1
                return _builder(*args, **kwargs)

            for module in list(sys.modules.values()):
                if module.__name__.startswith("nbprofiler") and getattr(module, name, None) is builder:
                    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("which", list(REPORTS))
def test_every_view_of_a_report_is_made_once_for_all_its_renderers(which, monkeypatch) -> None:
    report = nbprofiler.load(REPORTS[which])
    calls = _count_calls(monkeypatch)

    text, html, payload = report.to_text(), report.to_html(), report_payload(report)
    explorer = report.explorer()
    for title in explorer.tab_titles:
        explorer.show_tab(title)
    # A second showing of the same report reads what the first one made, and shows the same.
    assert report.to_text() == text and report.to_html() == html and report_payload(report) == payload

    made_more_than_once = {view: n for view, n in calls.items() if n > 1}
    assert made_more_than_once == {}
    shown = {"headline", "throughput_detail", "breakdown_parts", "operator_view", "ranked_suggestions",
             "memory_device", "phase_summary", "hardware_view", "with_kernel_figures"}
    shown |= {"lines_absent", "modules_absent"} if which == "gpu trace" else {"line_rows", "memory_figures"}
    assert shown <= {view.split("[")[0] for view in calls}


def test_two_threads_asking_for_a_view_at_once_get_the_one_view_made_once(monkeypatch) -> None:
    """A report shown from two threads at once: the second waits for the first's view, and both
    show the same one (a large report's bundle makes some of its parts on a second thread)."""
    report = nbprofiler.load(TRACES / "cpu_only.pt.trace.json.gz")
    rank = views.ranked_suggestions
    made: Counter[int] = Counter()
    at_lock = threading.Semaphore(0)  # released by each thread as it takes the view's lock

    def held_rank(asked: Any) -> Any:
        """The first thread's build goes on only once the other thread asks for the same view."""
        made[threading.get_ident()] += 1
        for _ in range(2):  # this thread, and the other
            assert at_lock.acquire(timeout=60), "the second thread never asked for the view"
        return rank(asked)

    view_lock = view_model._ViewModel._lock

    def announced(model: Any, key: str) -> Any:
        if key == "suggestions":
            at_lock.release()
        return view_lock(model, key)

    monkeypatch.setattr(views, "ranked_suggestions", held_rank)
    monkeypatch.setattr(view_model._ViewModel, "_lock", announced)
    with ThreadPoolExecutor(2) as pool:
        shown = [f.result(timeout=120) for f in [pool.submit(lambda: view_model.of(report).suggestions)
                                                 for _ in range(2)]]

    assert sum(made.values()) == 1
    assert shown[0] is shown[1] and [s.title for s in shown[0]] == [s.title for s in rank(report)] != []
