"""VW's conditional contextual bandit labels (``--ccb_explore_adf``, ``ccb_label.cc``) and
slates labels (``--slates``, ``slates_label.cc``), read from a parsed block's label parts.

A CCB example is a blank-line-separated group of lines, each labeled:

* ``ccb shared`` -- the context (one, first);
* ``ccb action`` -- one line per action (0-based ids in the order of the lines);
* ``ccb slot [a:cost:p[,a:p...]] [i,j,...]`` -- one line per slot, in order: the
  logged outcome (the chosen action ``a``, its cost, its probability, then optionally
  the other actions' probabilities, which must add up to 1 with it) and the ids of
  the actions the slot may choose from (all when none are given).

A slates example (``slates_label.cc``): ``slates shared [cost]`` (the slate's global
cost), ``slates action <slot>`` (the slot the action belongs to), ``slates slot
[a:p[,a:p...]]`` (the chosen action, its index among the slot's actions, and its
probability).

VW throws on most malformed labels and clamps a probability above 1; sl skips the whole
example with a reason and ``file:line`` (``batch.REASONS`` codes 40-47), as it does a
cb line whose probability is not in (0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from streamlearn.io.batch import MIN_PROBABILITY

SHARED = 0
ACTION = 1
SLOT = 2

BAD_LABEL = 40
BAD_PROBABILITY = 21
UNKNOWN_ACTION = 41
OUT_OF_ORDER = 42
NO_SHARED = 43
MORE_SLOTS = 44
NOT_ONE = 45
BAD_SLOT_ID = 46
SLOT_WITHOUT_LABEL = 47


@dataclass
class RowLabel:
    """One line's CCB or slates label."""

    kind: int
    action: int = -1  # the logged action (-1: none)
    cost: float = 0.0
    prob: float = 0.0
    include: list[int] = field(default_factory=list)  # ccb: explicit included actions
    slot: int = -1  # slates action: its slot
    has_cost: bool = False  # slates shared: a cost given


class LabelError(ValueError):
    """A label VW cannot read (``code``: a ``batch.REASONS`` key)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _float(text: str) -> float:
    """A label's number as VW's ``float_of_string`` reads it (its ``parse_float``: the
    digits accumulated in float32, not C's correctly rounded ``strtof``: 0.466667 is
    one unit in the last place apart)."""
    from streamlearn.io.vwfloat import vw_parse_float

    try:
        v = vw_parse_float(text)
    except ValueError:
        raise LabelError(BAD_LABEL) from None
    if math.isnan(v) or math.isinf(v):
        raise LabelError(BAD_LABEL)
    return v


def _int(text: str) -> int:
    if not text.isdigit():
        raise LabelError(BAD_LABEL)
    return int(text)


def _prob(text: str) -> float:
    p = _float(text)
    if not MIN_PROBABILITY <= p <= 1.0:  # (an importance weight 1/p of at most 1e18)
        raise LabelError(BAD_PROBABILITY)
    return p


def _other_prob(text: str) -> float:
    p = _float(text)
    if not 0.0 <= p <= 1.0:
        raise LabelError(BAD_PROBABILITY)
    return p


def parse_ccb(words: list[str], check_sum: bool = True) -> RowLabel:
    """A ``ccb ...`` label (its words); :class:`LabelError` when VW cannot read it.
    ``check_sum``: VW's text reader wants a slot's probabilities to add up to 1 (its
    JSON reader does not)."""
    if len(words) < 2 or words[0] != "ccb":
        raise LabelError(BAD_LABEL)
    kind = words[1]
    if kind in ("shared", "action"):
        if len(words) > 2:
            raise LabelError(BAD_LABEL)
        return RowLabel(SHARED if kind == "shared" else ACTION)
    if kind != "slot" or len(words) > 4:
        raise LabelError(BAD_LABEL)
    out = RowLabel(SLOT)
    for w in words[2:]:
        if ":" in w:
            if out.action >= 0:
                raise LabelError(BAD_LABEL)
            parts = w.split(",")
            first = parts[0].split(":")
            if len(first) != 3:
                raise LabelError(BAD_LABEL)
            out.action = _int(first[0])
            out.cost = _float(first[1])
            out.prob = _prob(first[2])
            total = np.float32(out.prob)
            for p in parts[1:]:
                ap = p.split(":")
                if len(ap) != 2:
                    raise LabelError(BAD_LABEL)
                _int(ap[0])
                total = np.float32(total + np.float32(_other_prob(ap[1])))
            # VW's are_same(total, 1.f): within float epsilon
            if check_sum and len(parts) > 1 and abs(float(total) - 1.0) > 1.1920929e-07:
                raise LabelError(NOT_ONE)
        else:
            out.include.extend(_int(t) for t in w.split(",") if t != "")
    return out


def parse_slates(words: list[str], check_sum: bool = True) -> RowLabel:
    """A ``slates ...`` label (its words); :class:`LabelError` when VW cannot read it."""
    if len(words) < 2 or words[0] != "slates":
        raise LabelError(BAD_LABEL)
    kind = words[1]
    if kind == "shared":
        if len(words) > 3:
            raise LabelError(BAD_LABEL)
        out = RowLabel(SHARED)
        if len(words) == 3:
            out.cost = _float(words[2])
            out.has_cost = True
        return out
    if kind == "action":
        if len(words) != 3:
            raise LabelError(BAD_LABEL)
        return RowLabel(ACTION, slot=_int(words[2]))
    if kind != "slot" or len(words) > 3:
        raise LabelError(BAD_LABEL)
    out = RowLabel(SLOT)
    if len(words) == 3:
        parts = words[2].split(",")
        first = parts[0].split(":")
        if len(first) != 2:
            raise LabelError(BAD_LABEL)
        out.action = _int(first[0])
        out.prob = _prob(first[1])
        total = np.float32(out.prob)
        for p in parts[1:]:
            ap = p.split(":")
            if len(ap) != 2:
                raise LabelError(BAD_LABEL)
            _int(ap[0])
            total = np.float32(total + np.float32(_prob(ap[1])))
        if check_sum and len(parts) > 1 and abs(float(total) - 1.0) > 1.1920929e-07:
            raise LabelError(NOT_ONE)
    return out


def row_words(batch, r: int) -> list[str]:  # noqa: ANN001
    """The words of row ``r``'s label part (the tag left out)."""
    from streamlearn.io.labels import _label_span

    buf = batch.block.data
    s, e = _label_span(buf, int(batch.line_start[r]), buf.shape[0], int(batch.tag_start[r]),
                       int(batch.tag_end[r]))  # fmt: skip
    return buf[s:e].tobytes().decode("utf-8", "replace").split()


def read_rows(batch, slates: bool, check_sum: bool = True) -> list[RowLabel | None]:  # noqa: ANN001
    """Each row's label (None for a row already malformed or whose label is; its status
    and reason are set in ``batch.status``).  ``check_sum``: see :func:`parse_ccb`."""
    parse = parse_slates if slates else parse_ccb
    out: list[RowLabel | None] = []
    for r in range(batch.n):
        if batch.status[r] != 0:
            out.append(None)
            continue
        try:
            out.append(parse(row_words(batch, r), check_sum))
        except LabelError as err:
            batch.status[r] = err.code
            batch.err_pos[r] = -1
            out.append(None)
    return out


def check_example(labels: list[RowLabel], slates: bool) -> tuple[int, int]:
    """(code, offending row within the example) of a CCB/slates example VW cannot learn
    from, or (0, -1): one shared line first, then the actions, then the slots; no more
    slots than actions (ccb); each logged action among the example's actions."""
    if not labels or labels[0].kind != SHARED:
        return NO_SHARED, 0
    n_act = 0
    n_slot = 0
    for i, lab in enumerate(labels[1:], 1):
        if lab.kind == SHARED:
            return OUT_OF_ORDER, i
        if lab.kind == ACTION:
            if n_slot:
                return OUT_OF_ORDER, i
            n_act += 1
        else:
            n_slot += 1
    if not slates and n_slot > n_act:
        return MORE_SLOTS, len(labels) - 1
    if slates:
        if labels[0].has_cost:
            for j, lab in enumerate(labels[1 + n_act :]):
                if lab.action < 0:
                    return SLOT_WITHOUT_LABEL, 1 + n_act + j
        per_slot = [0] * n_slot
        for i, lab in enumerate(labels[1 : 1 + n_act], 1):
            if not 0 <= lab.slot < n_slot:
                return BAD_SLOT_ID, i
            per_slot[lab.slot] += 1
        for j, lab in enumerate(labels[1 + n_act :]):
            if lab.action >= 0 and lab.action >= per_slot[j]:
                return UNKNOWN_ACTION, 1 + n_act + j
    else:
        for j, lab in enumerate(labels[1 + n_act :]):
            if lab.action >= n_act:
                return UNKNOWN_ACTION, 1 + n_act + j
    return 0, -1


__all__ = ["ACTION", "SHARED", "SLOT", "LabelError", "RowLabel", "check_example", "parse_ccb",
           "parse_slates", "read_rows"]  # fmt: skip
