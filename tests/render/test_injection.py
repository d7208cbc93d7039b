"""Names from a trace are untrusted: every HTML output and widget label must show them as text.

Two reports carry hostile names everywhere a name can come from: a live run whose
``record_function`` annotations, module names and module class are markup, and a
hand-edited trace file whose kernel, operator, thread, device and file names are.
Every HTML output (``to_html()``, the standalone file, the bundle's ``text/html``,
each tab of the explorer widget) is parsed, and must contain no element or
attribute the names could have smuggled in; the names must appear as text.
"""
from __future__ import annotations

import gzip
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import ipywidgets as widgets
import pytest
from IPython.utils.capture import capture_output

import nbprofiler
from conftest import ROOT, shared_trace

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "</script><script>alert(2)</script>"
# Elements a renderer may emit; anything else in its output came from a name.
ALLOWED_TAGS = {"html", "head", "body", "meta", "title", "style", "div", "span", "h3", "h4", "h5", "p", "b", "i",
                "em", "strong", "code", "pre", "small", "br", "hr", "table", "thead", "tbody", "tr", "th", "td",
                "ul", "ol", "li", "details", "summary", "img", "a", "button", "textarea", "label", "sup", "sub",
                # The charts' inline SVG (render/chart_svg.py).
                "svg", "g", "rect", "circle", "path", "polygon", "line", "text"}


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def assert_safe_html(markup: str, where: str) -> str:
    """No element but the renderer's own, no event handler running a name's code, no image
    but a data URI, no javascript: URL. Returns the page's text, for checking
    that the names show as text."""
    parser = _Elements()
    parser.feed(markup)
    parser.close()
    for tag, attrs in parser.tags:
        assert tag in ALLOWED_TAGS, f"{where}: unexpected <{tag}> {attrs}"
        for name, value in attrs:
            # The renderer's own handlers (the copy buttons) are fine; one holding a name's code is not.
            if name.startswith("on"):
                assert "alert" not in (value or ""), f"{where}: injected handler {name}={value!r} on <{tag}>"
            assert not (value or "").strip().lower().startswith("javascript:"), f"{where}: {name}={value!r}"
        if tag == "img":
            src = dict(attrs).get("src") or ""
            assert src.startswith("data:image/"), f"{where}: <img src={src[:60]!r}>"
    assert "</script" not in markup.lower(), f"{where}: a raw </script> would end an embedding script block"
    return "".join(parser.text)


# -- the two hostile reports ------------------------------------------------------------------

LIVE_CELL = f"""
Evil = type({IMG!r}, (nn.Module,), {{"forward": lambda self, x: torch.relu(x)}})
net = nn.Sequential()
net.add_module({IMG!r}, nn.Linear(20, 4))
net.add_module("evil", Evil())
hopt = torch.optim.SGD(net.parameters(), lr=0.1)
for i in range(5):
    with torch.profiler.record_function({IMG!r}):
        with torch.profiler.record_function({SCRIPT!r}):
            loss = net(torch.randn(8, 20)).sum()  # {IMG} in the cell's own source
    hopt.zero_grad(); loss.backward(); hopt.step()
"""


@pytest.fixture(scope="module")
def live_report(ip):
    from conftest import SETUP_CELL

    ip.run_cell(SETUP_CELL).raise_error()
    with capture_output():
        ip.run_cell_magic("torchprofile", "-q -o hostile --modules --stack --wait 0 --warmup 0 --active 3", LIVE_CELL)
    report = ip.user_ns["hostile"]
    # The names really are in the report: annotations, the module class, the cell's lines.
    assert {IMG, SCRIPT} <= set(report.operators["name"])
    assert _mentions(report.modules, IMG) and _mentions(report.lines, IMG)
    return report


def _mentions(frame, text: str) -> bool:
    return bool(frame.astype(str).apply(lambda col: col.str.contains(text, regex=False)).to_numpy().any())


@pytest.fixture(scope="module")
def file_report(tmp_path_factory):
    trace = json.loads(gzip.decompress(shared_trace("mi250_rocm_toy_train.pt.trace.json.gz").read_bytes()))
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    for e in kernels[: len(kernels) // 2]:
        e["name"] = SCRIPT + IMG
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"]
    for e in ops[::3]:
        e["name"] = IMG
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            e["args"]["name"] = SCRIPT
    for d in trace.get("deviceProperties", []):
        d["name"] = IMG
    path = tmp_path_factory.mktemp("inj") / f"{IMG}.pt.trace.json"
    path.write_text(json.dumps(trace))
    report = nbprofiler.load(path)
    assert IMG in set(report.operators["name"]) and report.device.name == IMG
    return report


REPORTS = ["live_report", "file_report"]


@pytest.mark.parametrize("which", REPORTS)
def test_static_html_escapes_every_name(which, request, tmp_path):
    report = request.getfixturevalue(which)
    outputs = {
        "to_html()": report.to_html(),
        "to_html(path)": (report.to_html(tmp_path / "r.html"), (tmp_path / "r.html").read_text())[1],
        "bundle text/html": report._repr_mimebundle_()["text/html"],
    }
    for where, markup in outputs.items():
        text = assert_safe_html(markup, f"{which} {where}")
        assert IMG in text, f"{which} {where}: the hostile operator name is not shown as text"
    if which == "file_report":
        assert Path(report.source_path).name in text or IMG in text


@pytest.mark.parametrize("which", REPORTS)
def test_text_and_payload_keep_names_as_data(which, request):
    """Plain text shows the names as they are; the payload is data the front end escapes."""
    report = request.getfixturevalue(which)
    assert IMG in report.to_text()
    payload = report._repr_mimebundle_()["application/vnd.nbprofiler.report+json"]
    assert IMG in json.dumps(payload, ensure_ascii=False)


def _walk(widget: widgets.Widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


@pytest.mark.parametrize("which", REPORTS)
def test_explorer_widget_escapes_names_and_labels_are_text(which, request):
    from nbprofiler.render.widget import Explorer

    report = request.getfixturevalue(which)
    explorer = Explorer(report)
    shown = []
    for title in explorer.tab_titles:
        explorer.show_tab(title)
    for w in _walk(explorer):
        if isinstance(w, (widgets.HTML, widgets.HTMLMath)):
            shown.append(assert_safe_html(w.value, f"{which} widget {type(w).__name__}"))
        style_html = getattr(w, "description_allow_html", False)
        assert not style_html, f"{which}: {type(w).__name__} renders its description as HTML"
        for label in getattr(w, "_options_labels", ()):  # dropdown / select labels: text nodes
            assert isinstance(label, str)
    assert any(IMG in text for text in shown), f"{which}: no widget shows the hostile name"
    if explorer.operators is not None:
        for name in (IMG, SCRIPT):
            if name in set(report.operators["name"]):
                assert_safe_html(explorer.operators.details_html(name), f"{which} operator details")


def test_labextension_builds_the_dom_from_text_only():
    """The JupyterLab renderer draws the payload without a kernel; it must never parse
    names as HTML. Its sources create elements and text nodes only."""
    sources = sorted((ROOT / "labextension" / "src").rglob("*.ts"))
    if not sources:
        pytest.skip("no labextension sources")
    sink = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|dangerouslySetInnerHTML|"
                      r"createContextualFragment|DOMParser|setAttribute\(\s*['\"]on|\beval\(|new Function\(")
    offenders = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in sources
                 for i, line in enumerate(p.read_text().splitlines(), 1) if sink.search(line)]
    assert not offenders, "\n".join(offenders)
