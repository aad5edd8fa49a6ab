"""What ``sl vw`` writes as Vowpal Wabbit writes it: numbers, ``-p`` and ``-r`` lines.

``sl train``/``sl predict`` write sl's own formats (9 significant digits, the
clipped margin); ``sl vw`` sets :attr:`Outputs.vw_format
<streamlearn.run.options.Outputs.vw_format>` and its files are VW 9's, byte for
byte (checked against ``vw`` by ``scripts/vw_parity.py --lines``):

* a scalar prediction (``-p``, and ``-r`` of a scalar learner) is a float32
  written with six decimals, or with none when it is a whole number (``0``,
  ``-0``, ``1``, ``-1``), VW's ``print_result_by_ref``: :func:`fixed`;
* numbers inside a line of several (``--probabilities``' ``c:p``, ``--oaa``'s
  ``-r``) are written as C++ streams write a float, six significant digits
  (``%g``): :func:`general`;
* the links are VW's float32 functions (``1/(1 + e^-p)`` ...): :func:`link32`.
"""

from __future__ import annotations

import math

import numpy as np

F32 = np.float32


def fixed(v: float) -> str:
    """VW's ``-p`` number: six decimals, or none for a whole number.

    >>> fixed(0.16503161), fixed(-0.0), fixed(1.0), fixed(0.5), fixed(float("nan"))
    ('0.165032', '-0', '1', '0.500000', 'nan')
    """
    v = float(F32(v))
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.0f}" if math.floor(v) == v else f"{v:.6f}"


def general(v: float) -> str:
    """A float as C++ streams write it by default (six significant digits).

    >>> general(0.25), general(1e-7), general(3.0), general(123456789.0)
    ('0.25', '1e-07', '3', '1.23457e+08')
    """
    v = float(F32(v))
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:g}"


def _exp32(x: np.ndarray) -> np.ndarray:
    """``expf``, correctly rounded: the exponential in double, rounded to float32."""
    with np.errstate(over="ignore"):
        return np.exp(x.astype(np.float64)).astype(F32)


def link32(preds: np.ndarray, link: str, binary: bool) -> np.ndarray:
    """What VW's scorer and ``--binary`` make of float32 margins (float32 arithmetic).

    >>> link32(np.array([0.0, 2.0]), "logistic", False).tolist()
    [0.5, 0.8807970285415649]
    """
    p = preds.astype(F32)
    one = F32(1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if link == "logistic":
            p = one / (one + _exp32(-p))
        elif link == "glf1":
            p = F32(2.0) / (one + _exp32(-p)) - one
        elif link == "poisson":
            p = _exp32(p)
    if binary:
        p = np.where(p > 0, F32(1.0), np.where(np.isnan(p), p, F32(-1.0)))
    return p


def scalar_texts(preds: np.ndarray, link: str = "identity", binary: bool = False) -> list[str]:
    """``-p`` of a scalar learner, one text per row.  A prediction clipped to VW's
    initial range [0, 0] is VW's ``min_label``, +0 (sl's kernels give -0: ``+ 0.0``
    turns it into +0 and changes no other number)."""
    if link == "identity" and not binary:  # (no float32 arithmetic but the + 0: a server's
        return [fixed(v + 0.0) for v in preds.astype(F32).tolist()]  # one line, 3 µs less)
    return [fixed(v) for v in (link32(preds, link, binary) + F32(0.0)).tolist()]


def raw_texts(preds: np.ndarray) -> list[str]:
    """``-r`` of a scalar learner: the margins."""
    return [fixed(v) for v in preds.astype(F32).tolist()]


def class_texts(preds: np.ndarray) -> list[str]:
    """``-p`` of ``--oaa`` without ``--probabilities``: the class."""
    return [fixed(v) for v in preds[:, 0].tolist()]


def labelled_texts(scores: np.ndarray, first: int | np.ndarray) -> list[str]:
    """``1:p1 2:p2 ...``: VW's ``--probabilities`` and ``--scores`` line (``first``: each
    row's first class, 0 or 1).  Each value as :func:`general` writes it: the float32 as a
    double with ``%g``, one format per row (a call per value cost 0.6 µs: 4.8 s of ``-p``
    for 800,000 rows of 8 classes, against VW's whole run of 3.4 s); a NaN as C writes it."""
    k = scores.shape[1]
    starts = np.broadcast_to(first, scores.shape[:1]).tolist()
    values = scores.astype(F32).astype(np.float64)
    if np.isnan(values).any():  # (C's sign of a NaN: -nan)
        return [" ".join(f"{c}:{general(v)}" for c, v in zip(range(f, f + k), row, strict=True))
                for f, row in zip(starts, values.tolist(), strict=True)]  # fmt: skip
    formats: dict[int, str] = {}
    out = []
    for f, row in zip(starts, values.tolist(), strict=True):
        fmt = formats.get(f)
        if fmt is None:
            fmt = formats[f] = " ".join(f"{c}:%g" for c in range(f, f + k))
        out.append(fmt % tuple(row))
    return out


def oaa_raw_texts(scores: np.ndarray, first: int | np.ndarray) -> list[str]:
    """VW's ``-r`` under ``--oaa``: `` 1:s1 2:s2 ...``, each cell after a space.  With
    classes 0..K-1 VW writes the last class's score as class 0's, then classes 1..K-1
    with the scores of classes 0..K-2 (its own order, kept byte for byte)."""
    k = scores.shape[1]
    starts = np.broadcast_to(first, scores.shape[:1]).tolist()
    out = []
    for f, row in zip(starts, scores.tolist(), strict=True):
        order = row if f else [row[-1], *row[:-1]]
        cells = zip(range(1 if f else 0, k + (1 if f else 0)), order, strict=True)
        out.append("".join(f" {c}:{general(v)}" for c, v in cells))
    return out
