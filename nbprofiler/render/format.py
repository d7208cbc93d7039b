"""Number formatting shared by every renderer, so text, HTML and widgets agree."""
from __future__ import annotations

import math


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


def fmt_bytes(n: float | None) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "–"
    n = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def fmt_pct(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{100 * float(x):.1f}%"


def shorten(name: str, width: int = 60) -> str:
    """Long kernel names cut in the middle, keeping both ends readable."""
    name = " ".join(str(name).split())
    if len(name) <= width:
        return name
    keep = (width - 1) // 2
    return name[:keep] + "…" + name[-(width - 1 - keep):]
