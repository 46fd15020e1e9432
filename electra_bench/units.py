"""How a FLOP count is written in every sentence, table, tick label and progress line: one definition,
below every stage that prints one, and importing nothing heavy (reports and refusals stay fast)."""

from __future__ import annotations

import math


def fmt_flops(x: float | None) -> str:
    """1.2e14 style (the paper's Table 1); "-" for a missing value, "0" for none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == 0:
        return "0"
    mantissa, exp = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exp)}"
