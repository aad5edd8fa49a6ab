"""A multiline example's action rows with its shared features, in the order VW's example
holds them (``shared_feature_merger``; ``conditional_contextual_bandit``'s slots).

VW's example keeps its features by namespace: each namespace once, in the order it first
appears in the line, its features in line order, the constant's last.  The shared line's
features join each action line as ``append_example_namespaces_from_example`` appends
them: a namespace the action has gets the shared features after its own, one it lacks is
added after the action's (and after its constant), in the shared line's order; the shared
line's constant is left out.  gd sums a line's features in that order, so a shared and an
action line naming the same namespace (``shared |User u`` and ``|Action a |User w``) give
VW's float32 prediction only in that order (the action's then the shared's was one unit
in the last place off, now and then).

CCB (:func:`ccb_pair_rows`) injects the slot into the shared example first
(``inject_slot_features``: the slot's namespaces appended, its default namespace as
``CCB_SLOT_NAMESPACE``) and the slot's index feature (``CCB_ID_NAMESPACE``) after them.

The kernels keep the rows' plain order where it is VW's: a row whose namespaces each come
in one run and share none with the shared line is copied as it is.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io._scan import CONSTANT_NS
from streamlearn.system.jit import jit, jit_inline

DEFAULT_NS = 32
SLOT_NS = 139  # VW's CCB_SLOT_NAMESPACE
ID_NS = 140  # VW's CCB_ID_NAMESPACE


@jit
def group_namespaces(idx, val, nsb, n, out_idx, out_val, out_ns, mark):  # noqa: ANN001, ANN201
    """Entries ``0..n-1`` of ``idx``/``val``/``nsb`` as VW's example holds them: by
    namespace, in the order each first appears (``mark``: 257 False, left so)."""
    k = 0
    for t in range(n):
        c = nsb[t]
        if mark[c]:
            continue
        mark[c] = True
        for u in range(t, n):
            if nsb[u] == c:
                out_idx[k] = idx[u]
                out_val[k] = val[u]
                out_ns[k] = c
                k += 1
    for t in range(n):
        mark[nsb[t]] = False


@jit_inline
def merge_row(a0, a1, indices, values, ns, s_idx, s_val, s_ns, s_n, s_has, s_stamp, s_bits, k,
              out_idx, out_val, out_ns, mark, stamp):  # noqa: ANN001, ANN201  # fmt: skip
    """Write action row entries ``a0:a1`` at ``k`` with the shared example's ``s_n``
    entries (grouped by namespace, no constant; namespace ``c`` is among them when
    ``s_has[c] == s_stamp``; ``s_bits``: the same as four words of bits) as VW appends
    them; returns the next ``k``.  ``mark``: the namespaces' stamps (a new ``stamp`` per
    row)."""
    # the plain row (each namespace one run, none the shared's), told in registers: a
    # namespace's bit in four words (stores to a table of marks here made the merge 2x)
    r0 = r1 = r2 = r3 = np.uint64(0)
    rep = np.uint64(0)
    last = -1
    for t in range(a0, a1):
        c = ns[t]
        if c != last:
            last = c
            b = np.uint64(1) << np.uint64(c & 63)
            w = c >> 6
            if w == 0:
                rep |= r0 & b
                r0 |= b
            elif w == 1:
                rep |= r1 & b
                r1 |= b
            elif w == 2:
                rep |= r2 & b
                r2 |= b
            else:
                rep |= r3 & b
                r3 |= b
    if rep == 0 and (r0 & s_bits[0]) | (r1 & s_bits[1]) | (r2 & s_bits[2]) | (r3 & s_bits[3]) == 0:
        for t in range(a0, a1):
            out_idx[k] = indices[t]
            out_val[k] = values[t]
            out_ns[k] = ns[t]
            k += 1
        for u in range(s_n):
            out_idx[k] = s_idx[u]
            out_val[k] = s_val[u]
            out_ns[k] = s_ns[u]
            k += 1
        return k
    seen = stamp
    for t in range(a0, a1):
        c = ns[t]
        if mark[c] == seen:
            continue
        mark[c] = seen
        for u in range(t, a1):
            if ns[u] == c:
                out_idx[k] = indices[u]
                out_val[k] = values[u]
                out_ns[k] = c
                k += 1
        if s_has[c] == s_stamp:
            for u in range(s_n):
                if s_ns[u] == c:
                    out_idx[k] = s_idx[u]
                    out_val[k] = s_val[u]
                    out_ns[k] = c
                    k += 1
    for u in range(s_n):
        if mark[s_ns[u]] != seen:
            out_idx[k] = s_idx[u]
            out_val[k] = s_val[u]
            out_ns[k] = s_ns[u]
            k += 1
    return k


@jit_inline
def shared_example(row, slot, id_feature, indptr, indices, values, ns, raw_idx, raw_val, raw_ns,
                   s_idx, s_val, s_ns, s_has, s_stamp, s_bits, grouping):  # noqa: ANN001, ANN201  # fmt: skip
    """Write the shared example of ``row`` (the shared line; -1: none) and ``slot`` (a CCB
    slot's row; -1: none) into ``s_idx``/``s_val``/``s_ns`` (``raw_*``: scratch; each
    with room for their entries and one more): grouped by namespace, constants left out,
    the slot's default namespace as ``CCB_SLOT_NAMESPACE``, then ``id_feature`` (-1: none)
    in ``CCB_ID_NAMESPACE``; stamps its namespaces ``s_stamp`` in ``s_has`` and sets their
    bits in ``s_bits`` (four words) (``grouping``: :func:`group_namespaces`'s marks).
    Returns the entries written."""
    for w in range(4):
        s_bits[w] = 0
    n = 0
    grouped = True  # (each namespace in one run: as written)
    last = -1
    for r in (row, slot):
        if r < 0:
            continue
        for t in range(indptr[r], indptr[r + 1]):
            c = ns[t]
            if c == CONSTANT_NS:
                continue
            if r == slot and c == DEFAULT_NS:
                c = SLOT_NS
            if c != last:
                if s_has[c] == s_stamp:
                    grouped = False
                s_has[c] = s_stamp
                s_bits[c >> 6] |= np.uint64(1) << np.uint64(c & 63)
                last = c
            s_idx[n] = indices[t]
            s_val[n] = values[t]
            s_ns[n] = c
            n += 1
    if not grouped:
        for t in range(n):
            raw_idx[t] = s_idx[t]
            raw_val[t] = s_val[t]
            raw_ns[t] = s_ns[t]
        group_namespaces(raw_idx, raw_val, raw_ns, n, s_idx, s_val, s_ns, grouping)
    if id_feature >= 0:
        s_idx[n] = id_feature
        s_val[n] = 1.0
        s_ns[n] = ID_NS
        s_has[ID_NS] = s_stamp
        s_bits[ID_NS >> 6] |= np.uint64(1) << np.uint64(ID_NS & 63)
        n += 1
    return n


@jit
def ccb_pair_rows(count_only, p_action, p_shared, p_slot, p_id, indptr, indices, values, ns,
                  out_ptr, out_idx, out_val, out_ns):  # noqa: ANN001, ANN201  # fmt: skip
    """Count (``count_only``) or write the rows of CCB's (slot, action) pairs; returns
    their entries.

    Pair ``p``: action row ``p_action[p]`` merged (:func:`merge_row`) with the shared
    example of the shared row ``p_shared[p]``, the slot row ``p_slot[p]`` and the slot
    index feature ``p_id[p]`` (-1: none) (:func:`shared_example`)."""
    k = 0
    if count_only:
        for p in range(p_action.shape[0]):
            k += indptr[p_action[p] + 1] - indptr[p_action[p]]
            for r in (p_shared[p], p_slot[p]):
                for t in range(indptr[r], indptr[r + 1]):
                    if ns[t] != CONSTANT_NS:
                        k += 1
            if p_id[p] >= 0:
                k += 1
        return k
    room = 1
    for p in range(p_action.shape[0]):
        n = 1 + indptr[p_shared[p] + 1] - indptr[p_shared[p]]
        n += indptr[p_slot[p] + 1] - indptr[p_slot[p]]
        room = max(room, n)
    raw_idx = np.empty(room, dtype=indices.dtype)
    raw_val = np.empty(room, dtype=values.dtype)
    raw_ns = np.empty(room, dtype=ns.dtype)
    s_idx = np.empty(room, dtype=indices.dtype)
    s_val = np.empty(room, dtype=values.dtype)
    s_ns = np.empty(room, dtype=ns.dtype)
    s_has = np.zeros(257, dtype=np.int64)
    mark = np.zeros(257, dtype=np.int64)
    grouping = np.zeros(257, dtype=np.bool_)
    s_bits = np.zeros(4, dtype=np.uint64)
    s_n = 0
    s_stamp = 0
    out_ptr[0] = 0
    for p in range(p_action.shape[0]):
        if p == 0 or p_shared[p] != p_shared[p - 1] or p_slot[p] != p_slot[p - 1] \
                or p_id[p] != p_id[p - 1]:  # fmt: skip
            s_stamp += 1
            s_n = shared_example(p_shared[p], p_slot[p], p_id[p], indptr, indices, values, ns,
                                 raw_idx, raw_val, raw_ns, s_idx, s_val, s_ns, s_has, s_stamp,
                                 s_bits, grouping)  # fmt: skip
        r = p_action[p]
        k = merge_row(indptr[r], indptr[r + 1], indices, values, ns, s_idx, s_val, s_ns, s_n,
                      s_has, s_stamp, s_bits, k, out_idx, out_val, out_ns, mark, p + 1)  # fmt: skip
        out_ptr[p + 1] = k
    return k


__all__ = ["DEFAULT_NS", "ID_NS", "SLOT_NS", "ccb_pair_rows", "group_namespaces", "merge_row",
           "shared_example"]
