"""VW's continuous-action labels (``cb_continuous_label.cc``, ``--cbzo``), read from a
parsed block's label parts.

A label is ``ca action[:cost[:pdf_value[:x]]]``: the word ``ca``, then the logged
action, the cost it had (VW's ``FLT_MAX`` when none is given) and the density the
logging policy gave it (0 when none is given).  As VW's reader: only the word right
after ``ca`` is the logged action; ``pdf l:r:v ...`` and ``chosen_action a`` (the
segments and the action of VW's cats reductions) and any other word after it are
ignored; an empty label part (``|f a``) gives no action.  A label with no action, a
cost of ``FLT_MAX`` or a density of 0 is a test label (VW's ``is_test_label``): the
example is scored, not learned.

What VW warns about or throws on (another first word than ``ca``, a number it cannot
read, more than four parts, a negative density: VW replaces it with 0) makes the row
malformed here, skipped with its reason (``batch.REASONS`` 36 and 37), as a cb label
whose probability is not in (0, 1] is (:mod:`streamlearn.io.labels`).  So does a second
``ca`` with an action after it (VW reads it as a second entry, which only its test-label
rule looks at).

Examples
--------
>>> from streamlearn.io.parse import parse_bytes
>>> b = parse_bytes(b"ca 0.5:1.25:2 |f a\\n|f b\\nca 1 |f c\\n", labels="cb")
>>> lab = read_ca_labels(b)
>>> lab.action.tolist()[0], lab.cost.tolist()[0], lab.pdf.tolist()[0], lab.given.tolist()
(0.5, 1.25, 2.0, [True, False, True])
>>> lab.test.tolist()
[False, True, True]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.io.batch import REASONS
from streamlearn.io.labels import _label_span, _number
from streamlearn.system.jit import jit

# (their reasons join io.batch's table here: changing that module would make every parser
# kernel that imports it stale)
REASONS.update({36: "continuous-action label: ca action[:cost[:pdf_value]] expected",
                37: "continuous-action label: pdf_value below 0"})

BAD_CA_LABEL = 36
NEGATIVE_PDF = 37

FLT_MAX = float(np.finfo(np.float32).max)
"""VW's cost of an action given without one (``FLT_MAX``)."""

_CA = np.frombuffer(b"ca", dtype=np.uint8)
_PDF = np.frombuffer(b"pdf", dtype=np.uint8)
_CHOSEN = np.frombuffer(b"chosen_action", dtype=np.uint8)


@dataclass
class CaLabels:
    """Each row's logged action, cost and density (float32 values in float64), and
    whether the label gave an action (``given``); rows without one hold 0, ``FLT_MAX``, 0."""

    action: np.ndarray
    cost: np.ndarray
    pdf: np.ndarray
    given: np.ndarray

    @property
    def test(self) -> np.ndarray:
        """VW's test label: no action, no cost (``FLT_MAX``) or a density of 0."""
        return ~self.given | (self.cost == FLT_MAX) | ~(self.pdf > 0.0)

    @property
    def labeled(self) -> np.ndarray:
        """``--cbzo``'s labeled example: an action given (VW's ``is_labeled``: an action
        other than ``FLT_MAX``)."""
        return self.given & (self.action != FLT_MAX)


@jit
def _is(buf, s, e, word):
    if e - s != word.shape[0]:
        return False
    for q in range(e - s):
        if buf[s + q] != word[q]:
            return False
    return True


@jit
def _entry(buf, s, e, vw_numbers, out):
    """The parts of ``action[:cost[:pdf_value[:x]]]`` at ``buf[s:e]`` into ``out`` (action,
    cost, density); 0, or the status code of what VW could not read."""
    out[1] = FLT_MAX
    out[2] = 0.0
    part = 0
    p = s
    while True:
        q = p
        while q < e and buf[q] != 58:
            q += 1
        if part > 3:
            return BAD_CA_LABEL
        if part < 3:
            v, ok = _number(buf, p, q, vw_numbers)
            v = float(np.float32(v))
            if not ok or not np.isfinite(v):
                return BAD_CA_LABEL
            out[part] = v
        part += 1
        if q >= e:
            break
        p = q + 1
    if out[2] < 0.0:
        return NEGATIVE_PDF
    return 0


@jit
def read_ca_kernel(buf, line_start, tag_start, tag_end, status, err_pos, vw_numbers,
                   action, cost, pdf, given):  # fmt: skip
    """Read each usable row's label part into the per-row arrays; rows VW could not read
    get a status (:data:`BAD_CA_LABEL`, :data:`NEGATIVE_PDF`) and ``err_pos``."""
    n = buf.shape[0]
    out = np.zeros(3)
    for r in range(status.shape[0]):
        action[r] = 0.0
        cost[r] = FLT_MAX
        pdf[r] = 0.0
        given[r] = False
        if status[r] != 0:
            continue
        s0, e0 = _label_span(buf, line_start[r], n, tag_start[r], tag_end[r])
        p = s0
        ntok = 0
        prev_ca = False
        code = 0
        err = -1
        while p < e0 and code == 0:
            if buf[p] == 32:
                p += 1
                continue
            s = p
            while p < e0 and buf[p] != 32:
                p += 1
            ntok += 1
            if ntok == 1:
                if not _is(buf, s, p, _CA):
                    code, err = BAD_CA_LABEL, s
                prev_ca = True
                continue
            if _is(buf, s, p, _PDF) or _is(buf, s, p, _CHOSEN):
                prev_ca = False
                continue
            if prev_ca:
                if given[r]:  # (a second "ca" and an action: a second entry)
                    code, err = BAD_CA_LABEL, s
                    break
                c = _entry(buf, s, p, vw_numbers, out)
                if c != 0:
                    code, err = c, s
                    break
                action[r], cost[r], pdf[r] = out[0], out[1], out[2]
                given[r] = True
            prev_ca = _is(buf, s, p, _CA)
        if code != 0:
            status[r] = code
            err_pos[r] = err
            action[r] = 0.0
            cost[r] = FLT_MAX
            pdf[r] = 0.0
            given[r] = False


def read_ca_labels(batch, vw_numbers: bool = False) -> CaLabels:  # noqa: ANN001 - io.batch.Batch
    """The continuous-action labels of ``batch``'s rows (a batch parsed with a label kind
    set, so the parse kernel left the label parts alone); rows whose label VW could not
    read become malformed in ``batch.status``."""
    n = batch.n
    if batch.line_start is None:
        raise ValueError("read_ca_labels needs the rows' line offsets (batch.line_start)")
    if batch.err_pos is None:
        batch.err_pos = np.full(n, -1, dtype=np.int64)
    lab = CaLabels(np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.bool_))
    read_ca_kernel(batch.block.data, batch.line_start, batch.tag_start, batch.tag_end,
                   batch.status, batch.err_pos, vw_numbers, lab.action, lab.cost, lab.pdf,
                   lab.given)  # fmt: skip
    return lab
