"""The report's colours come from the theme, with literal fallbacks that read in static HTML.

Every colour of the Python renderers' CSS is a ``var(--jp-*, var(--vscode-*, literal))``
chain (style.py), so JupyterLab's and VS Code's light, dark and high-contrast themes
decide it; nbconvert's static HTML defines neither and gets the literals, whose
text/background pairs must reach 4.5:1 there too. The browser test
(test_browser_theme.py) measures the themed pairs in a real JupyterLab.
"""
from __future__ import annotations

import re

import pytest

from nbprofiler.render import live
from nbprofiler.render.compare_html import COMPARE_STYLE
from nbprofiler.render.html import heat_bar
from nbprofiler.render.style import STYLE, THEME, WIDGET_STYLE

HEX = re.compile(r"#[0-9a-fA-F]{3,6}\b")
CHAIN = re.compile(r"var\(--jp-[\w-]+,\s*var\(--vscode-[\w-]+,\s*(#[0-9a-fA-F]{3,6})\)\)")


def _fallbacks() -> dict[str, str]:
    """Each ``--nbp-*`` property of THEME with the literal a page without theme variables gets."""
    found = {}
    for name, value in re.findall(r"(--nbp-[\w-]+):([^;]+);?", THEME):
        chain = CHAIN.fullmatch(value.strip().rstrip("}").strip())
        assert chain, f"{name} is not a --jp-* then --vscode-* then literal chain: {value}"
        found[name] = chain.group(1)
    return found


def _luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    channels = [int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("css", [STYLE, WIDGET_STYLE, COMPARE_STYLE, live._STYLE, heat_bar(0.5)],
                         ids=["STYLE", "WIDGET_STYLE", "COMPARE_STYLE", "status line", "heat bar"])
def test_every_colour_literal_is_the_last_fallback_of_a_theme_variable(css):
    """No colour is set outside a theme chain: each literal sits at the end of var(--jp-…, var(--vscode-…, #…))."""
    chained = len(CHAIN.findall(css))
    assert len(HEX.findall(css)) == chained
    assert not re.search(r"(?<![\w-])(color|background|border[\w-]*):\s*(white|black|red|gray|grey)\b", css)


def test_static_html_text_reads_on_its_backgrounds():
    """Without theme variables (nbconvert, GitHub), the fallbacks' text/background pairs reach 4.5:1."""
    c = _fallbacks()
    page = "#ffffff"
    pairs = {
        "text on the page": (c["--nbp-fg"], page),
        "secondary text on the page": (c["--nbp-muted"], page),
        "table header": (c["--nbp-fg"], c["--nbp-head-bg"]),
        "striped row": (c["--nbp-fg"], c["--nbp-stripe"]),
        "code block": (c["--nbp-fg"], c["--nbp-code-bg"]),
        "button": (c["--nbp-button-fg"], c["--nbp-button-bg"]),
    }
    ratios = {what: round(contrast(*pair), 2) for what, pair in pairs.items()}
    print(ratios)
    assert all(r >= 4.5 for r in ratios.values()), ratios


def test_text_is_never_drawn_in_a_severity_colour():
    """Error and warning colours mark borders only: their contrast is not guaranteed in every theme."""
    for rule in re.findall(r"[^{}]+\{[^}]*\}", STYLE + COMPARE_STYLE):
        assert not re.search(r"(?<![-\w])color:\s*var\(--nbp-(error|warn|ok|low|accent)\)", rule), rule


def test_code_is_monospace_everywhere():
    """Suggested code (``pre``) and inline code use the theme's code font, then a monospace one,
    also in static HTML, whose own CSS may give ``pre`` a proportional font."""
    rule = re.search(r"\.nbp pre,\.nbp code,\.nbp pre code\{font-family:([^}]*)\}", STYLE)
    assert rule and rule.group(1).startswith("var(--jp-code-font-family,") and "monospace" in rule.group(1)
