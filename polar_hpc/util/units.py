"""Numbers for people: durations in µs / ms / s / min / h, counts with thousands separators."""

from __future__ import annotations

import math


def duration(seconds: float | None) -> str:
    """``0.0043`` -> ``4.3 ms``; ``75`` -> ``1.2 min``; ``None``/NaN -> ``n/a``."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    s = abs(seconds)
    if s == 0:
        return "0 s"
    for limit, unit, scale in ((1e-3, "µs", 1e6), (1.0, "ms", 1e3), (60.0, "s", 1.0), (3600.0, "min", 1 / 60)):
        if s < limit:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds / 3600:.3g} h"


def count(n: float) -> str:
    """Thousands separators; below 100 a fraction keeps 3 significant digits, above it is rounded."""
    if float(n).is_integer() or abs(n) >= 100:
        return f"{round(n):,}"
    return f"{n:.3g}"
