"""Multiclass labels (``--oaa K``): a line's label read as one of the classes.

The parsers read every label as a number (VW text and svmlight alike); with
``--oaa K`` the label must be a class, an integer from 0 to K, as VW's
multiclass label parser takes it (``label [importance] ['tag]|...``; no label:
an example to predict only): the classes are 0..K-1 or 1..K, as ``--indexing``
says or, as VW, the first learned label 0 or K decides
(:func:`streamlearn.learners.oaa.decided`).  :func:`check_classes` marks the
other rows malformed, so they are skipped and reported with ``file:line`` like
any bad line, on every pass.  Where VW differs (it stops reading at a label
that is not an integer, reads ``-1`` as no label, learns a label above K as
class K), see ``docs/input-formats.md``; ``sl vw`` reads ``-1`` as VW does.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io.batch import Batch

NOT_A_CLASS = 16
CLASS_WITH_BASE = 17


def check_classes(batch: Batch, k: int, vw: bool = False) -> int:
    """Mark the rows whose label is not a class 0..``k``, or that carry a base, malformed.

    Returns how many rows were marked.  Unlabeled rows stay usable (predicted only).
    ``vw``: labels read as VW's multiclass reader reads them (``sl vw``): a label ``-1``
    is no label (VW's unsigned reading wraps it to its unlabeled marker), a row to predict;
    an integer above K is no class (learned as VW learns it: -1 for every class).
    """
    ok = batch.status == 0
    y = batch.labels
    if vw:
        y[ok & (y == -1.0) & (batch.bases == 0.0)] = np.nan
    top = 4294967295.0 if vw else k  # (VW: a larger class is no class, every one learns -1)
    with np.errstate(invalid="ignore"):
        good = np.isnan(y) | ((y >= 0.0) & (y <= top) & (y == np.floor(y)))
    not_class = ok & ~good
    with_base = ok & good & (batch.bases != 0.0)
    batch.status[not_class] = NOT_A_CLASS
    batch.status[with_base] = CLASS_WITH_BASE
    return int(not_class.sum() + with_base.sum())
