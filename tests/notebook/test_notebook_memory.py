"""notebooks/03_memory.ipynb runs headless: the leak is flagged with its line and edit, the cell with that edit
pasted in is not, their comparison shows the growth per step gone, the HTML holds both reports."""
from __future__ import annotations

import re

import pytest
from nbconvert import HTMLExporter

from conftest import cell_outputs, execute_notebook

pytestmark = pytest.mark.slow
MIME = "application/vnd.nbprofiler.report+json"
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def executed():
    return execute_notebook("03_memory.ipynb", timeout=300)


def report_bundle(nb, startswith: str) -> dict:
    bundles = [o["data"] for o in cell_outputs(nb, startswith) if MIME in o.get("data", {})]
    assert len(bundles) == 1, startswith
    return bundles[0]


def test_the_leak_is_flagged_and_the_fix_is_not(executed):
    nb = executed
    leaky = report_bundle(nb, "%%torchprofile --stack --wait 1 --warmup 1 --active 6 -o leaky")
    fixed = report_bundle(nb, "%%torchprofile --stack --wait 1 --warmup 1 --active 6 -o fixed")
    assert "Memory grows: allocated bytes (trace) on cpu" in leaky["text/html"]
    assert "Memory grows" not in fixed["text/html"]
    # Headless, there is no widget front end: the output is the static report, with no widget to lose.
    assert WIDGET not in leaky and WIDGET not in fixed


def test_the_comparison_shows_the_leaks_growth_per_step_and_none_once_fixed(executed):
    """``compare(leaky, fixed).memory`` in MiB: the allocator's bytes held grow by megabytes per
    step in the leaky run (about 4 MiB: one forward pass's activations), by nothing once fixed."""
    nb = executed
    (table,) = [o["data"]["text/plain"] for o in cell_outputs(nb, "comparison = nbprofiler.compare(leaky, fixed)")
                if "data" in o]
    assert re.search(r"\bleaky\s+fixed\s+change\n", table), table
    (growth,) = [line for line in table.splitlines() if "growth" in line and "allocated" in line]
    leaky, fixed, change = map(float, growth.split()[-3:])
    assert leaky > 2.0 and abs(fixed) < 0.1 and change < -2.0, growth


def test_the_suggestion_names_the_line_and_the_fixed_cell_is_its_code_pasted(executed):
    nb = executed
    (shown,) = cell_outputs(nb, "(leak,) = ")
    title, fact, _, *code = shown["text"].rstrip("\n").split("\n")
    assert "cell line 5 keeps tensors from every step alive" in title
    assert fact.startswith("cell line 5: `history.append(F.cross_entropy(model(x_val), y_val))`")
    assert "the trace confirms it" in fact  # --stack: the line made what was never freed
    magic = "%%torchprofile --stack --wait 1 --warmup 1 --active 6 -o "
    leaky, fixed = (next(c.source.splitlines()[1:] for c in nb.cells if c.source.startswith(magic + name))
                    for name in ("leaky", "fixed"))
    assert fixed == [*leaky[:4], *code, *leaky[5:]]  # line 5 replaced by the code, as it is
    assert "    with torch.no_grad():" in code


def test_the_memory_tab_cell_shows_the_memory_section(executed):
    nb = executed
    shown = report_bundle(nb, 'leaky.explorer(tab="Memory")')
    memory = shown["text/html"][shown["text/html"].index("<h4>Memory"):]
    assert memory.count('<svg class="nbp-chart"') == 2  # memory over all steps, and through the profiled ones
    assert "wait, warmup and active shaded" in memory and "held" in memory


def test_nbconvert_html_shows_the_reports(executed):
    nb = executed
    html, _ = HTMLExporter().from_notebook_node(nb)
    assert html.count("nbprofiler report —") >= 4 and "Memory grows: " in html
