"""How a reduction's figures read in VW's output: scores, labels, the table's cells.

Shared by every reduction's ``-p`` lines and progress rows (and by ``run/mlconsole.py``'s
table), so that one number prints the same way wherever VW prints it.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def fmt_float(x: float, places: int = 2) -> str:
    """VW's ``fmt_float``: fixed ``places`` decimals, trailing zeros and point dropped."""
    s = f"{float(F32(x)):.{places}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def fmt_g2(x: float) -> str:
    """A float streamed with precision 2 (VW's ``known_cost_to_str``): ``%.2g``."""
    return f"{float(F32(x)):.2g}"


def cb_label(index: int, cost: float, prob: float) -> str:
    """The ``current label`` of a labeled cb example: action index, cost, probability."""
    return f"{index}:{fmt_g2(cost)}:{fmt_g2(prob)}"


def score_text(x: float) -> str:
    """A score as VW prints it in an action list: 6 decimals, trailing zeros dropped."""
    s = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if s in ("", "-0") else s


def tag_text(tag: bytes) -> str:
    """`` tag`` after a prediction (nothing without a tag)."""
    return (" " + tag.decode("utf-8", "replace")) if tag else ""


def vw_number(x: float) -> str:
    """A float option as VW keeps it in a model's options: its float32's shortest repr."""
    return repr(float(F32(x)))
