"""VW's ``--named_labels a,b,c``: labels written as names, numbered 1..K in the order given.

VW (``named_labels.cc``, ``multiclass.cc``) reads a multiclass label part ``name
[importance]`` and looks the name up, byte for byte; a name not in the list is class 0
with a warning (``[warning] Missing named label 'x'``), which then counts as VW counts a
label 0.  ``sl vw`` does the same (VW's numbers, the warning through
:func:`streamlearn.system.notices.tell`); ``sl train`` skips the line as malformed
(:data:`MISSING_NAME`, with its reason), as sl skips what it cannot read.  The parse kernel
leaves the label part alone (``Interactions.label_kind``, :mod:`streamlearn.io.labels`);
:func:`read_named` reads it
into the batch's ``labels`` (the class, 1..K) and ``weights``.  Cost-sensitive labels
(``name:cost ...``, ``--csoaa``) are read by :func:`streamlearn.io.labels.read_labels`
and their classes mapped by :func:`class_numbers`.

>>> names = NamedLabels.of("det,noun,verb")
>>> names.k, names.name(2)
(3, 'noun')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.hashing import hashstring_py
from streamlearn.io.labels import _label_span, _number
from streamlearn.system import notices
from streamlearn.system.jit import jit

MISSING_NAME = 33
"""Status of a line whose label is not one of the names."""
LABEL_TOKENS = 5
BAD_WEIGHT = 2
NEG_WEIGHT = 3


@dataclass(frozen=True)
class NamedLabels:
    """The names, as the kernel compares them: bytes back to back, with offsets."""

    names: tuple[str, ...]
    buf: np.ndarray
    ptr: np.ndarray

    @classmethod
    def of(cls, spec: str) -> NamedLabels:
        """From VW's option value (names separated by ``,``, empty ones skipped as VW's
        ``tokenize``); a name given twice is refused, as VW refuses it."""
        names = tuple(n for n in spec.split(",") if n)
        if not names:
            raise ValueError("--named_labels: no names")
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"--named_labels: {dup!r} is given twice")
        raw = [n.encode("utf-8") for n in names]
        ptr = np.zeros(len(raw) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(r) for r in raw])
        return cls(names, np.frombuffer(b"".join(raw) or b"\0", dtype=np.uint8).copy(), ptr)

    @property
    def k(self) -> int:
        return len(self.names)

    def name(self, c: int) -> str:
        """Class ``c`` (1..K) by name; VW's ``unknown`` otherwise."""
        return self.names[c - 1] if 1 <= c <= self.k else "unknown"

    def hashes(self) -> np.ndarray:
        """VW's ``hashstring`` of each name: what a cost-sensitive entry's class holds."""
        return np.array([hashstring_py(n) for n in self.names], dtype=np.int64)


@jit
def _find(buf, s, e, names, ptr):
    for c in range(ptr.shape[0] - 1):
        if ptr[c + 1] - ptr[c] != e - s:
            continue
        same = True
        for q in range(e - s):
            if buf[s + q] != names[ptr[c] + q]:
                same = False
                break
        if same:
            return c + 1
    return 0


@jit
def read_named_kernel(buf, rows, line_start, tag_start, tag_end, status, err_pos, labels,
                      weights, names, ptr, vw_numbers, limit):  # fmt: skip
    """Each usable row's ``name [importance]`` into ``labels`` (1..K) and ``weights``."""
    n = buf.shape[0]
    for r in range(rows):
        if status[r] != 0:
            continue
        s0, e0 = _label_span(buf, line_start[r], n, tag_start[r], tag_end[r])
        p = s0
        t = 0
        code = 0
        err = -1
        while p < e0 and code == 0:
            if buf[p] == 32 or buf[p] == 9:
                p += 1
                continue
            s = p
            while p < e0 and buf[p] != 32 and buf[p] != 9:
                p += 1
            if t == 0:
                c = _find(buf, s, p, names, ptr)
                if c == 0:
                    err = s
                    if not vw_numbers:
                        code = MISSING_NAME
                labels[r] = c
            elif t == 1:
                w, ok = _number(buf, s, p, vw_numbers)
                if not ok or w != w or abs(w) > limit:
                    code = BAD_WEIGHT
                    err = s
                elif w < 0.0:
                    code = NEG_WEIGHT
                    err = s
                weights[r] = w
            else:
                code = LABEL_TOKENS
                err = s
            t += 1
        if code != 0:
            status[r] = code
            err_pos[r] = err
            labels[r] = np.nan
            weights[r] = 0.0
        elif err >= 0:
            err_pos[r] = err  # (VW's numbers) where the name not in the list starts


def read_named(data: np.ndarray, arrays: tuple, rows: int, named: NamedLabels,
               vw_numbers: bool, limit: float) -> None:  # fmt: skip
    """:func:`read_named_kernel` over a parse kernel's output ``arrays`` (its first ``rows``);
    with ``vw_numbers``, VW's warning for each name not in the list (class 0)."""
    labels, weights, _, tag_start, tag_end, _, _, _, status, _, line_start, err_pos, _ = arrays
    read_named_kernel(data, rows, line_start, tag_start, tag_end, status, err_pos, labels,
                      weights, named.buf, named.ptr, vw_numbers, limit)  # fmt: skip
    if vw_numbers:
        for r in np.flatnonzero((status[:rows] == 0) & (labels[:rows] == 0)):
            warn_missing(_token(data, int(err_pos[r])))


def _token(data: np.ndarray, s: int) -> str:
    e = s
    while e < data.shape[0] and data[e] not in (32, 9, 10, 13, 124):
        e += 1
    return bytes(data[s:e]).decode("utf-8", "replace")


def warn_missing(name: str) -> None:
    """VW's warning for a label name not in ``--named_labels`` (VW then reads class 0)."""
    notices.tell(f"[warning] Missing named label '{name}'")


def class_numbers(cls: np.ndarray, named: NamedLabels) -> np.ndarray:
    """Cost-sensitive entries' classes (``hashstring`` of their names) as 1..K, 0 for a name
    not in the list."""
    h = named.hashes()
    out = np.zeros(cls.shape[0], dtype=np.int64)
    for c in range(named.k):
        out[cls == h[c]] = c + 1
    return out
