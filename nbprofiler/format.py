"""Number and name formatting shared by the renderers and the suggestions' wording.

One place, so that the text report, the HTML, the widget and a suggestion's
facts write the same figure the same way (IEC units, one rounding rule).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any


def fmt_us(us: float | None) -> str:
    """Microseconds as a short human duration: 850 µs, 12.3 ms, 4.56 s."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "–"
    us = float(us)
    if abs(us) < 1_000:
        return f"{us:.0f} µs" if abs(us) >= 10 else f"{us:.1f} µs"
    if abs(us) < 1_000_000:
        return f"{us / 1e3:.1f} ms" if abs(us) >= 10_000 else f"{us / 1e3:.2f} ms"
    return f"{us / 1e6:.2f} s"


# Binary IEC units, each 1024 times the one before, as torch's own memory messages print them.
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
# Decimal arithmetic wide enough to hold any finite float exactly.
_EXACT = Context(prec=400)


def _fixed(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` decimals, a tie rounded away from zero on the float's exact value.

    This is JavaScript's ``Number.prototype.toFixed``, so that the JupyterLab extension
    (``labextension/src/report/format.ts``) prints the same digits; Python's own
    ``f"{x:.1f}"`` rounds a tie to even instead (1.25 -> "1.2", where toFixed gives "1.3").
    """
    step = Decimal(1).scaleb(-decimals)
    return f"{Decimal(x).quantize(step, rounding=ROUND_HALF_UP, context=_EXACT):f}"


def fmt_bytes(n: float | None) -> str:
    """Bytes in binary units: 512 B, 1.5 KiB, 38.0 MiB, 802 MiB, 31.7 GiB.

    Whole bytes; in the larger units one decimal below 100 and none from 100 on (a decimal
    there would be noise). The unit is the largest in which the *rounded* figure is at
    least 1, so 1048575 B reads 1.0 MiB, not 1024 KiB.
    ``formatBytes`` in ``labextension/src/report/format.ts`` is the same rule, and both
    are checked against one table of values (``labextension/test/fixtures/bytes.json``).
    """
    if n is None or not math.isfinite(float(n)):
        return "–"
    value, i = float(n) + 0.0, 0  # + 0.0: -0.0 reads "0 B", as in JavaScript
    text = _fixed(value, 0)
    while abs(float(text)) >= 1024 and i < len(BYTE_UNITS) - 1:
        value /= 1024
        i += 1
        text = _fixed(value, 1)
        if abs(float(text)) >= 100:
            text = _fixed(value, 0)
    return f"{text} {BYTE_UNITS[i]}"



def fmt_si(value: float, unit: str) -> str:
    """A large count in SI prefixes (FLOPs: 1.28 TFLOP, 30.7 TFLOP/s); ``formatSi`` in the
    labextension's format.ts is the same rule."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def fmt_rate(gb_per_s: float) -> str:
    """A bandwidth given in GB/s (1e9 B/s, as data sheets and the profiler count) in the binary
    units every byte figure of the report uses: 16 GB/s reads 14.9 GiB/s."""
    return f"{fmt_bytes(gb_per_s * 1e9)}/s"

def byte_axis_unit(max_bytes: float) -> tuple[str, float]:
    """The unit of a chart's byte axis whose largest value is ``max_bytes``: (label, bytes
    per unit). The largest unit in which that value is still at least 2, so the axis spans
    more than one unit and its ticks are not all fractions (1536 MiB, not 1.5 GiB).
    ``byteAxisUnit`` in ``labextension/src/report/format.ts`` is the same rule."""
    i, scale = 0, 1.0
    while max_bytes / scale >= 2048 and i < len(BYTE_UNITS) - 1:
        scale *= 1024
        i += 1
    return BYTE_UNITS[i], scale


def fmt_pct(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{100 * float(x):.1f}%"


def fmt_delta_us(us: float | None) -> str:
    """A change in duration with its sign: +12.3 ms, −166.0 ms (a true minus sign, as in print)."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "–"
    sign = "−" if us < 0 else "+"
    return sign + fmt_us(abs(float(us)))


def fmt_delta_bytes(n: float | None) -> str:
    """A change in bytes with its sign: +1.5 KiB, −6.1 MiB."""
    if n is None or not math.isfinite(float(n)):
        return "–"
    return ("−" if n < 0 else "+") + fmt_bytes(abs(float(n)))


def _missing(v: Any) -> bool:
    """None, NaN, or pandas' NA (which float() refuses): a table cell's figure shown as "–"
    (cells come from DataFrames, so any of them may be missing)."""
    if v is None:
        return True
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


def fmt_ms(ms: Any) -> str:
    """Milliseconds (a comparison's unit) written as ``fmt_us`` writes durations."""
    return "–" if _missing(ms) else fmt_us(float(ms) * 1e3)


def fmt_delta_ms(ms: Any) -> str:
    """A change in milliseconds: "+12.0 ms", "−166 ms"."""
    return fmt_delta_us(None if _missing(ms) else float(ms) * 1e3)


def fmt_calls(calls: Any) -> str:
    """Calls per step, which need not be whole (a call every other step is 0.5)."""
    return "–" if _missing(calls) else f"{float(calls):,.4g}"


def fmt_before_after(pair: tuple[object, object], fmt: Callable[[Any], str]) -> str:
    """Two runs' figures as "before → after", a missing one as "–"."""
    return " → ".join("–" if v is None else fmt(v) for v in pair)


def fmt_factor(x: float | None) -> str:
    """A speed-up factor: 1.74×."""
    if x is None or not math.isfinite(float(x)):
        return "–"
    return f"{float(x):.2f}×"


def fmt_interval(low: float, high: float) -> str:
    """An interval of factors, as a verdict quotes it after the figure: 1.52–1.96."""
    return f"{float(low):.2f}–{float(high):.2f}"


def shorten(name: str, width: int = 60) -> str:
    """Long kernel names cut in the middle, keeping both ends readable."""
    name = " ".join(str(name).split())
    if len(name) <= width:
        return name
    keep = (width - 1) // 2
    return name[:keep] + "…" + name[-(width - 1 - keep):]
