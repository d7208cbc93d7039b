"""Tutorials 02 (DataLoader bottleneck) and 04 (batch size) run headless and show what they promise:
the suggestion, the measurement, and the change compared with the run before it. Their run time is
bench/notebook_times.py's figure, never a test's."""
from __future__ import annotations

import html
import os
import re

import pytest

from conftest import ROOT, cell_outputs, execute_notebook
from nbprofiler.render.frontend import COMPARISON_MIME

pytestmark = pytest.mark.slow
CELL_TIMEOUT_S = 300  # a hang guard for one cell, not a speed target
WIDGET = "application/vnd.jupyter.widget-view+json"


def _run(name: str):
    """Execute with the repository importable in the kernel: the notebooks themselves only
    ``import nbprofiler``, as a user's would, whether or not the package is installed."""
    with pytest.MonkeyPatch.context() as mp:
        path = os.environ.get("PYTHONPATH")
        mp.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + path if path else ""))
        return execute_notebook(name, timeout=CELL_TIMEOUT_S)


def _text(outputs: list[dict]) -> str:
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append(out["text"])
        elif "data" in out:
            parts.append(out["data"].get("text/plain", ""))
    return "\n".join(parts)


def _has_image(outputs: list[dict]) -> bool:
    return any("image/png" in out.get("data", {}) for out in outputs)


@pytest.fixture(scope="module")
def dataloader_tutorial():
    return _run("02_dataloader_bottleneck.ipynb")


@pytest.fixture(scope="module")
def batch_tutorial():
    return _run("04_batch_size.ipynb")


def test_02_profile_suggests_workers_for_the_users_loader(dataloader_tutorial):
    nb = dataloader_tutorial
    text = _text(cell_outputs(nb, "for s in before.suggestions"))
    assert "DataLoader `train_loader` keeps each step waiting" in text
    assert "train_loader = DataLoader(\n        train_ds,\n        batch_size=32,\n        shuffle=True," in text
    assert "num_workers=" in text and "# changed: was 0" in text
    assert "at most 1/(1-" in text


def test_02_tuner_measures_plots_and_recommends(dataloader_tutorial):
    nb = dataloader_tutorial
    outputs = cell_outputs(nb, "def train_step(batch)")
    assert _has_image(outputs)
    text = _text(outputs)
    assert "Measured the training loop (step= ran on every batch)" in text and "loop_speedup" in text
    assert "× your current setting's loop speed" in text and "persistent_workers=True,  # changed: was False" in text


# A changed verdict ends with a warning when other programs' load moved between the runs.
VERDICT = re.compile(r"^(?:(?P<factor>[\d.]+)× (?P<way>faster|slower)|no measurable change) "
                     r"\((?P<low>[\d.]+)–(?P<high>[\d.]+)\)(?:, but the machine's load changed between the runs)?$")


def _verdict(line: str) -> tuple[str, float, float]:
    """A verdict's words ("faster", "slower" or "no change") and its interval, checked against each
    other: "no measurable change" exactly when the interval holds 1, the factor inside its interval.
    (A slow-down is quoted as a factor above 1, with its interval.)"""
    found = VERDICT.match(line)
    assert found, line
    words = found["way"] or "no change"
    low, high = float(found["low"]), float(found["high"])
    assert (words == "no change") == (low <= 1 <= high), line
    if found["factor"]:
        assert low <= float(found["factor"]) <= high, line
    return words, low, high


def test_02_the_comparison_is_shown_as_it_renders(dataloader_tutorial):
    """Headless, ``comparison`` in a cell shows the static comparison: text, HTML, and the
    payload the JupyterLab extension draws; no widget, which needs a front end."""
    nb = dataloader_tutorial
    (shown,) = [o["data"] for o in cell_outputs(nb, "comparison = nbprofiler.compare(") if "data" in o]
    verdict = shown[COMPARISON_MIME]["verdict"]
    _verdict(verdict)
    assert shown["text/plain"].startswith(f"nbprofiler comparison — before → after: {verdict}")
    # The HTML's verdict reads, once the browser decodes it, as the payload's: whatever the
    # verdict says of the machine's load, its apostrophe escaped in the markup.
    (marked,) = re.findall(r'<div class="verdict [^"]*">([^<]*)</div>', shown["text/html"])
    assert html.unescape(marked) == verdict and "DataLoader" in shown["text/html"]
    assert WIDGET not in shown


def test_02_compare_measures_the_change_against_the_claim(dataloader_tutorial):
    """The printed verdict agrees with its interval; the claim is beside the measured speed-up,
    said to be within, below or beyond it as the figures say; the steps no longer wait for data."""
    nb = dataloader_tutorial
    verdict, stated, method, loader = _text(cell_outputs(nb, "print(comparison.verdict)")).splitlines()[:4]
    words, low, high = _verdict(verdict)
    assert "bootstrap" in method and "step" in method  # the interval says how it was made
    claim = re.search(r"stated: at most ([\d.]+)× · measured: ([\d.]+)× \(([\d.]+)–([\d.]+)\): "
                      r"(?:measured )?(within|below|above) the (?:claim|stated bound)", stated)
    assert claim, stated
    bound, measured, m_low, m_high = map(float, claim.groups()[:4])
    assert m_low <= measured <= m_high
    assert (words == "faster") == (m_low > 1) and (words == "slower") == (m_high < 1), (verdict, stated)
    # "at most" allows speed-ups from 1 (no gain) up to the bound
    assert claim[5] == ("below" if m_high < 1 else "above" if m_low > bound else "within"), stated
    share = re.search(r"DataLoader: [\d.]+ → [\d.]+ ms per step, (\d+)% → (\d+)% of the step: (.+)", loader)
    assert share, loader
    before, after = int(share[1]), int(share[2])
    assert before > 10 and after < before / 2, loader  # the workers load while the model computes
    assert "DataLoader" in share[3] and "target" in share[3], loader  # the change made explains the move


def test_02_the_same_loop_profiled_again_gets_a_verdict_that_agrees_with_its_interval(dataloader_tutorial):
    """Nothing changed between ``after`` and the last run: the magic shows the comparison under the
    report, and the printed verdict and sentence agree with its interval, whichever way the machine moved."""
    nb = dataloader_tutorial
    shown = [o["data"] for o in cell_outputs(nb, "%%torchprofile --compare after") if "data" in o]
    assert "nbprofiler report" in shown[0]["text/plain"]
    (comparison,) = [b for b in shown if COMPARISON_MIME in b]
    assert comparison["text/plain"].startswith("nbprofiler comparison — after → ")
    verdict, sentence = _text(cell_outputs(nb, "same = nbprofiler.last_comparison()")).splitlines()[:2]
    assert verdict == comparison[COMPARISON_MIME]["verdict"]
    words, _, _ = _verdict(verdict)
    assert sentence == ("The interval holds 1." if words == "no change" else
                        "The interval excludes 1: with no change made, the machine's load moved between the runs.")



def test_04_tiny_batch_gets_a_larger_batch_suggestion(batch_tutorial):
    nb = batch_tutorial
    text = _text(cell_outputs(nb, "advice = next("))
    assert "Fixed per-step cost is" in text and "batch_size=8,  # changed: was 2" in text


def test_04_curve_is_measured_plotted_and_applied(batch_tutorial):
    nb = batch_tutorial
    outputs = cell_outputs(nb, "def train_step")
    assert _has_image(outputs)
    assert "Recommended batch_size=" in _text(outputs)
    text = _text(cell_outputs(nb, "def samples_per_s"))
    before, after = map(float, re.search(r"Throughput: (\d+) -> (\d+) samples/s", text).groups())
    assert after > 2 * before
