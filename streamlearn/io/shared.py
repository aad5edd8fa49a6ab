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
from streamlearn.system.jit import jit

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


@jit
def merge_row(a0, a1, indices, values, ns, s_idx, s_val, s_ns, s_n, s_has, k, out_idx, out_val,
              out_ns, mark):  # noqa: ANN001, ANN201  # fmt: skip
    """Write action row entries ``a0:a1`` at ``k`` with the shared example's ``s_n``
    entries (grouped by namespace, no constant; ``s_has[c]``: namespace ``c`` is among
    them) as VW appends them; returns the next ``k``.  ``mark``: 257 False, left so."""
    plain = True
    last = -1
    for t in range(a0, a1):
        c = ns[t]
        if c == last:
            continue
        if mark[c] or s_has[c]:
            plain = False
        mark[c] = True
        last = c
    if plain:
        for t in range(a0, a1):
            out_idx[k] = indices[t]
            out_val[k] = values[t]
            out_ns[k] = ns[t]
            k += 1
    else:
        for t in range(a0, a1):
            mark[ns[t]] = False
        for t in range(a0, a1):
            c = ns[t]
            if mark[c]:
                continue
            mark[c] = True
            for u in range(t, a1):
                if ns[u] == c:
                    out_idx[k] = indices[u]
                    out_val[k] = values[u]
                    out_ns[k] = c
                    k += 1
            if s_has[c]:
                for u in range(s_n):
                    if s_ns[u] == c:
                        out_idx[k] = s_idx[u]
                        out_val[k] = s_val[u]
                        out_ns[k] = c
                        k += 1
    for u in range(s_n):
        if not mark[s_ns[u]]:
            out_idx[k] = s_idx[u]
            out_val[k] = s_val[u]
            out_ns[k] = s_ns[u]
            k += 1
    for t in range(a0, a1):
        mark[ns[t]] = False
    return k


@jit
def shared_example(row, slot, id_feature, indptr, indices, values, ns, raw_idx, raw_val, raw_ns,
                   s_idx, s_val, s_ns, s_has, mark):  # noqa: ANN001, ANN201  # fmt: skip
    """Write the shared example of ``row`` (the shared line; -1: none) and ``slot`` (a CCB
    slot's row; -1: none) into ``s_idx``/``s_val``/``s_ns`` (``raw_*``: scratch; each
    with room for their entries and one more): grouped by namespace, constants left out,
    the slot's default namespace as ``CCB_SLOT_NAMESPACE``, then ``id_feature`` (-1: none)
    in ``CCB_ID_NAMESPACE``; marks its namespaces in ``s_has`` (:func:`clear`).  Returns
    the entries written."""
    n = 0
    for r in (row, slot):
        if r < 0:
            continue
        for t in range(indptr[r], indptr[r + 1]):
            c = ns[t]
            if c == CONSTANT_NS:
                continue
            raw_idx[n] = indices[t]
            raw_val[n] = values[t]
            raw_ns[n] = SLOT_NS if (r == slot and c == DEFAULT_NS) else c
            n += 1
    group_namespaces(raw_idx, raw_val, raw_ns, n, s_idx, s_val, s_ns, mark)
    if id_feature >= 0:
        s_idx[n] = id_feature
        s_val[n] = 1.0
        s_ns[n] = ID_NS
        n += 1
    for t in range(n):
        s_has[s_ns[t]] = True
    return n


@jit
def clear(s_ns, s_n, s_has):  # noqa: ANN001, ANN201
    """Unmark the namespaces :func:`shared_example` marked."""
    for t in range(s_n):
        s_has[s_ns[t]] = False


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
    s_has = np.zeros(257, dtype=np.bool_)
    mark = np.zeros(257, dtype=np.bool_)
    s_n = 0
    out_ptr[0] = 0
    for p in range(p_action.shape[0]):
        if p == 0 or p_shared[p] != p_shared[p - 1] or p_slot[p] != p_slot[p - 1] \
                or p_id[p] != p_id[p - 1]:  # fmt: skip
            clear(s_ns, s_n, s_has)
            s_n = shared_example(p_shared[p], p_slot[p], p_id[p], indptr, indices, values, ns,
                                 raw_idx, raw_val, raw_ns, s_idx, s_val, s_ns, s_has, mark)
        r = p_action[p]
        k = merge_row(indptr[r], indptr[r + 1], indices, values, ns, s_idx, s_val, s_ns, s_n,
                      s_has, k, out_idx, out_val, out_ns, mark)  # fmt: skip
        out_ptr[p + 1] = k
    return k


__all__ = ["DEFAULT_NS", "ID_NS", "SLOT_NS", "ccb_pair_rows", "clear", "group_namespaces",
           "merge_row", "shared_example"]
