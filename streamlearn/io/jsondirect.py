"""VW's JSON lines for contextual bandits read straight into the parser's arrays.

:mod:`streamlearn.io.jsonfast` reads a record into its scratch and writes it as VW text,
which the text kernel then parses (:func:`streamlearn.io.multiline.parse_examples`): two
passes over the same bytes, the numbers read twice.  Here the scratch becomes the rows
themselves, in one call per block: each example (the shared one, then the actions) a row
with the features the text would give -- VW's hashes of the namespaces and names
(:func:`~streamlearn.hashing.hashstring`; a string value ``"k": "v"`` is the name ``kv``
with VW's escape), the values as VW keeps them (float32), the namespaces' first bytes,
the constant last -- in the text's order (:func:`~streamlearn.io.jsonfast.order`), and
the labels as :func:`~streamlearn.io.labels.read_labels` reads the text's (``shared``, the
logged action's ``action:cost:probability``), one example per record.

A block holds the text path's examples exactly or is not read here: a line the kernel
leaves to Python (:data:`~streamlearn.io.jsonfast.SLOW`), a value beyond the run's limit,
a cost or probability the label reader refuses, or options that change the rows (n-grams,
affixes, ``--hash all``, ...) send the whole block to the text path, which gives such
lines' reasons (``tests/io/test_jsondirect.py`` holds the two equal on random records).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.hashing import CONSTANT_HASH, hashstring, murmur3_32
from streamlearn.io._scan import CONSTANT_NS, DEFAULT_NS, block_arrays
from streamlearn.io.batch import MAX_MAGNITUDE, MIN_PROBABILITY, Batch, Block
from streamlearn.io.formats import FMT_VW
from streamlearn.io.jsonfast import (
    _ACTION,
    _AT_CLOSE,
    _CE,
    _CS,
    _PE,
    _PS,
    FAST,
    KERNEL_LINE,
    SKIP,
    _line,
    number_token,
    order,
    scratch,
    split_lines,
)
from streamlearn.io.labels import LABEL_CB, ROW_SHARED, Labels
from streamlearn.system.jit import jit, jit_inline, jit_noalloc

DONE = 0
"""Every line of the block read."""
FULL = 1
"""The output arrays had no room (the caller gives larger ones)."""
TEXT = 2
"""A line for the text path: the block is read there."""

_CONSTANT = np.uint64(CONSTANT_HASH)
_COST_LIMIT = 1e18
"""io.labels' bound on a cost (beyond: a malformed row)."""


@jit_inline
def _name_hash(buf: np.ndarray, ints: np.ndarray, f: int, nsh: np.uint32,
               tmp: np.ndarray) -> np.uint32:  # fmt: skip
    """Feature ``f``'s hash in a namespace of hash ``nsh``: its key's, or with a string value
    the key and the value as one name (VW's escape: ``' '``, ``:``, ``|`` as ``_``)."""
    if ints[f, 5] < 0:
        return hashstring(buf, ints[f, 3], ints[f, 4], nsh)
    n = 0
    for q in range(ints[f, 3], ints[f, 4]):
        tmp[n] = buf[q]
        n += 1
    for q in range(ints[f, 5], ints[f, 6]):
        b = buf[q]
        if b == 32 or b == 58 or b == 124:
            b = 95
        tmp[n] = b
        n += 1
    return hashstring(tmp, 0, n, nsh)


@jit_noalloc
def _rows(buf: np.ndarray, ints: np.ndarray, fv: np.ndarray, nss: np.ndarray,
          feats: np.ndarray, xptr: np.ndarray, nx: int, target: int, label: np.ndarray,
          tmp: np.ndarray, mask: np.uint64, constant: bool, limit: float,
          hash_seed: np.uint32, default_nsh: np.uint32, line_no: int, arrays: tuple,
          labs: tuple, r: int, k: int, e: int) -> tuple[int, int, int, int]:  # fmt: skip
    """One record's rows from row ``r``, feature ``k``, label entry ``e``: ``(DONE, rows,
    features, entries)`` after them, or ``(FULL | TEXT, ...)``."""
    (
        labels, weights, bases, tag_start, tag_end, indptr, indices, values,
        status, line, line_start, err_pos, ns,
    ) = arrays  # fmt: skip
    ptr, cls, cost, prob, flags = labs
    if r + nx > labels.shape[0] or k + xptr[nx] + nx > indices.shape[0] \
            or e + 1 > cls.shape[0]:  # fmt: skip
        return FULL, r, k, e
    at = _AT_CLOSE
    c = math.nan
    pr = math.nan
    if target > 0 and label[at + _CS] >= 0:  # as io.labels reads the text's cost
        how, c = number_token(buf, label[at + _CS], label[at + _CE], False)
        how2, pr = number_token(buf, label[at + _PS], label[at + _PE], False)
        if how < 0 or how2 < 0 or abs(c) > _COST_LIMIT \
                or not (pr >= MIN_PROBABILITY and pr <= 1.0):  # fmt: skip
            return TEXT, r, k, e
    nsh = default_nsh
    nsb = DEFAULT_NS
    for x in range(nx):
        row = r + x
        for j in range(xptr[x], xptr[x + 1]):
            f = feats[j, 0]
            if feats[j, 1] == 1:
                s = nss[ints[f, 2], 0]
                if s < 0:
                    nsh = default_nsh
                    nsb = DEFAULT_NS
                else:
                    nsh = hashstring(buf, s, nss[ints[f, 2], 1], hash_seed)
                    nsb = buf[s]
            v = fv[f]
            if abs(v) > limit:
                return TEXT, r, k, e
            indices[k] = np.uint64(_name_hash(buf, ints, f, nsh, tmp)) & mask
            values[k] = v
            ns[k] = nsb
            k += 1
        if constant:
            indices[k] = _CONSTANT & mask
            values[k] = 1.0
            ns[k] = CONSTANT_NS
            k += 1
        labels[row] = math.nan
        weights[row] = 1.0
        bases[row] = 0.0
        tag_start[row] = 0
        tag_end[row] = 0
        status[row] = 0
        line[row] = line_no
        line_start[row] = 0
        err_pos[row] = -1
        indptr[row + 1] = k
        flags[row] = ROW_SHARED if x == 0 else 0
        if x == target:
            cls[e] = label[at + _ACTION]
            cost[e] = c
            prob[e] = pr
            e += 1
        ptr[row + 1] = e
    return DONE, r + nx, k, e


@jit
def read_block(buf: np.ndarray, dsjson: bool, first_line: int, mask: np.uint64,
               constant: bool, limit: float, hash_seed: np.uint32, max_line: int,
               seg: np.ndarray, arrays: tuple, labs: tuple, ex_ptr: np.ndarray,
               counts: np.ndarray) -> int:  # fmt: skip
    """Read the JSON lines of ``buf`` into ``arrays`` (:func:`~streamlearn.io._scan.block_arrays`),
    ``labs`` (a :class:`~streamlearn.io.labels.Labels`' arrays) and ``ex_ptr``: :data:`DONE`
    with ``counts`` = (rows, features, label entries, examples), :data:`FULL` or
    :data:`TEXT` (also for a line longer than ``max_line``: the kernel's scratch is sized by
    the longest line).  ``seg``: a row per line of ``buf`` at least (scratch)."""
    nl, longest = split_lines(buf, seg)
    if nl < 0:
        return FULL
    ints, fv, nss, exs, closes, label, frames, feats, xptr, seen = scratch(longest)
    tmp = np.empty(longest + 8, dtype=np.uint8)
    default_nsh = np.uint32(0) if hash_seed == 0 else murmur3_32(buf, 0, 0, hash_seed)
    r = 0
    k = 0
    e = 0
    m = 0
    arrays[5][0] = 0
    labs[0][0] = 0
    for j in range(nl):
        ls = seg[j, 1]
        le = seg[j, 2]
        if le - ls > max_line:
            return TEXT
        code, nc, nx, target = _line(buf, ls, le, dsjson, False, ints, fv, nss, exs, closes,
                                     frames, label)  # fmt: skip
        if code == SKIP:
            continue
        if code != FAST:
            return TEXT
        if m + 1 >= ex_ptr.shape[0]:
            return FULL
        order(buf, ints, nss, exs, closes, nc, nx, seen, feats, xptr)
        got, r2, k, e = _rows(buf, ints, fv, nss, feats, xptr, nx, target, label, tmp, mask,
                              constant, limit, hash_seed, default_nsh, first_line + j, arrays,
                              labs, r, k, e)  # fmt: skip
        if got != DONE:
            return got
        ex_ptr[m] = r
        m += 1
        r = r2
    ex_ptr[m] = r
    counts[0] = r
    counts[1] = k
    counts[2] = e
    counts[3] = m
    return DONE


def usable(inter: object, kind: int) -> bool:
    """Whether multiline examples of label kind ``kind`` parsed with options ``inter`` (an
    :class:`~streamlearn.io.interactions.Interactions`) may be read here: contextual-bandit
    labels, VW's numbers, and nothing that changes a row after the parse kernel."""
    from streamlearn.system.jit import INTERPRETED

    return (
        not INTERPRETED
        and kind == LABEL_CB
        and inter is not None
        and getattr(inter, "label_kind", 0) == LABEL_CB
        and inter.vw_numbers
        and not inter.hash_all
        and not inter.chain_hash
        and inter.affix is None
        and inter.named is None
        and not inter.cs_classes
        and not inter.ml_classes
        and inter.csv is None
        and not inter.regroups
        and not inter.crosses_or_filters
    )


def read_examples(block: Block, dsjson: bool, bits: int, constant: bool, inter: object,
                  kind: int = LABEL_CB):  # noqa: ANN201 - an io.multiline.Examples, or None
    """``block``'s JSON records as :func:`streamlearn.io.multiline.parse_examples` gives the
    text :func:`streamlearn.io.vwjson.json_block` makes of them (after
    :func:`~streamlearn.io.vwjson.restore_examples`), or None when the block is for that
    path (the module's docstring)."""
    from streamlearn.io.multiline import Examples

    if block.long_lines or not usable(inter, kind) or not 1 <= bits <= 32:
        return None
    buf = block.data
    if buf.dtype != np.uint8 or not buf.flags.c_contiguous:
        buf = np.ascontiguousarray(buf, dtype=np.uint8)
    n = buf.shape[0]
    lines = (block.newlines if block.newlines >= 0 else int(np.count_nonzero(buf == 10))) + 1
    seg = np.empty((lines, 4), dtype=np.int64)
    mask = np.uint64((1 << bits) - 1)
    rows = n // 24 + 64
    while True:
        # (a feature takes 6 bytes of JSON at least, a row 3: room for the rows' constants)
        arrays = block_arrays(rows, n // 6 + 2 * rows + 64)
        labs = (np.empty(rows + 1, dtype=np.int64), np.empty(rows, dtype=np.int64),
                np.empty(rows), np.empty(rows), np.empty(rows, dtype=np.int64))  # fmt: skip
        ex_ptr = np.empty(rows + 1, dtype=np.int64)
        counts = np.zeros(4, dtype=np.int64)
        got = read_block(buf, dsjson, int(block.first_line), mask, bool(constant),
                         float(MAX_MAGNITUDE), np.uint32(inter.hash_seed), KERNEL_LINE, seg,
                         arrays, labs, ex_ptr, counts)  # fmt: skip
        if got == TEXT:
            return None
        if got == DONE:
            break
        if rows > n:
            raise RuntimeError(f"{block.source}: more JSON examples in a block than its bytes")
        rows *= 4
    r, k, e, m = (int(c) for c in counts)
    (
        labels, weights, bases, tag_start, tag_end, indptr, indices, values,
        status, line, line_start, err_pos, ns,
    ) = arrays  # fmt: skip
    text = Block(_NO_TEXT, block.source, 1, live=block.live, newlines=0)
    batch = Batch(
        labels=labels[:r], weights=weights[:r], bases=bases[:r], tag_start=tag_start[:r],
        tag_end=tag_end[:r], indptr=indptr[: r + 1], indices=indices[:k], values=values[:k],
        status=status[:r], line=line[:r], block=text,
        line_start=line_start[:r], err_pos=err_pos[:r], fmt=FMT_VW, ns=ns[:k],
    )  # fmt: skip
    ptr, cls, cost, prob, flags = labs
    labels_ = Labels(ptr[: r + 1], cls[:e], cost[:e], prob[:e], flags[:r])
    return Examples(batch, labels_, ex_ptr[: m + 1])


_NO_TEXT = np.zeros(0, dtype=np.uint8)
"""The rows' block holds no text (their tags are empty; nothing reads their lines)."""
