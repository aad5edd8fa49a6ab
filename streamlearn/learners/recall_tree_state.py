"""VW's model section of ``--recall_tree`` (``save_load_tree``) and its readable-model lines:
the tree of :mod:`streamlearn.learners.recall_tree` (its ``gstate``) to and from VW's bytes.
No kernel here."""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.recall_tree import (
    COUNT,
    DEPTH,
    ENTROPY,
    F32,
    H_MAXC,
    H_NODE_ONLY,
    INTERNAL,
    LABEL,
    LEFT,
    NPREDS,
    ODD,
    PARENT,
    PASSES,
    RECALL,
    RIGHT,
    ROUTER,
    N,
    routers,
    views,
)


def _shortest(x: float, single: bool = False) -> str:
    """A number as VW's ``write_model_field`` writes it (fmt's shortest form)."""
    text = str(np.float32(x)) if single else repr(float(x))
    mant, e, exp = text.partition("e")
    if mant.endswith(".0"):
        mant = mant[:-2]
    return mant + (e + exp if e else "")


def _walk(data: bytes, pos: int, k: int, depth: int, into: np.ndarray | None) -> int:
    """VW's ``save_load_tree`` read from ``data[pos:]`` (into ``gstate`` when given: its
    M and D, its nodes; each node's ``recall_lbest`` is recomputed by the run, as VW's); its
    end."""
    import struct

    def take(fmt: str) -> tuple:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise ValueError("the model's --recall_tree tree is cut short")
        out = struct.unpack_from(fmt, data, pos)
        pos += size
        return out

    kk, node_only, count, cand, d = take("<I?QQQ")
    if kk != k or count != 2 * routers(depth) + 1 or d != depth or cand >= 1 << 32:
        raise ValueError(
            f"the model's --recall_tree tree ({kk} classes, {count} nodes, depth "
            f"{d}) is not the one its options name ({k} classes, depth {depth})"
        )
    head = nodes = cls = None
    if into is not None:
        head, nodes, cls = views(into, k, depth)
        head[H_NODE_ONLY], head[H_MAXC] = node_only, cand
    for j in range(count):
        row = take("<If?IIIIdddQ")
        parent, recall, internal, dep, router, left, right, n, entropy, passes, npreds = row
        if npreds > k or max(parent, left, right) >= count or router >= max(routers(depth), 1):
            raise ValueError("the model's --recall_tree tree is not one sl reads (a node with "
                             "more classes than K, or pointing outside it)")  # fmt: skip
        if nodes is not None:
            odd = 0 if math.isfinite(entropy) else 1 if entropy != entropy else (
                2 if entropy > 0 else 3)  # fmt: skip
            nodes[j, :] = (parent, recall, internal, dep, router, left, right, n,
                           entropy if odd == 0 else 0.0, passes, npreds, odd)  # fmt: skip
        for q in range(npreds):
            label, label_count = take("<Id")
            if cls is not None:
                cls[j, q, :] = (label, label_count)
    return pos


def section_end(data: bytes, pos: int, k: int, depth: int) -> int:
    """Where the tree of VW's model file at ``pos`` ends."""
    return _walk(data, pos, k, depth, None)


def read_vw_section(data: bytes, pos: int, gstate: np.ndarray, k: int, depth: int) -> int:
    """The tree of VW's model file at ``pos`` read into ``gstate``; returns its end."""
    return _walk(data, pos, k, depth, gstate)


def _fields(gstate: np.ndarray, k: int, depth: int) -> list[tuple[str, str, object]]:
    """VW's ``save_load_tree`` written: (name, struct format, value) in its order."""
    head, nodes, cls = views(gstate, k, depth)
    out: list[tuple[str, str, object]] = [
        ("k", "I", k), ("node_only", "?", bool(head[H_NODE_ONLY])),
        ("nodes", "Q", nodes.shape[0]), ("max_candidates", "Q", int(head[H_MAXC])),
        ("max_depth", "Q", depth)]  # fmt: skip
    for j in range(nodes.shape[0]):
        r = nodes[j]
        out += [("parent", "I", int(r[PARENT])), ("recall_lbest", "f", F32(r[RECALL])),
                ("internal", "?", bool(r[INTERNAL])), ("depth", "I", int(r[DEPTH])),
                ("base_router", "I", int(r[ROUTER])), ("left", "I", int(r[LEFT])),
                ("right", "I", int(r[RIGHT])), ("n", "d", float(r[N])),
                ("entropy", "d", (float(r[ENTROPY]), -math.nan, math.inf, -math.inf)[
                    int(r[ODD])]), ("passes", "d", float(r[PASSES])),
                ("n_preds", "Q", int(r[NPREDS]))]  # fmt: skip
        for q in range(int(r[NPREDS])):
            out += [("label", "I", int(cls[j, q, LABEL])),
                    ("label_count", "d", float(cls[j, q, COUNT]))]  # fmt: skip
    return out


def vw_section(gstate: np.ndarray, k: int, depth: int) -> bytes:
    """VW's ``save_load_tree``: the header, then each node and its classes."""
    import struct

    fields = _fields(gstate, k, depth)
    return struct.pack("<" + "".join(f for _, f, _ in fields), *(v for _, _, v in fields))


def section_lines(gstate: np.ndarray, k: int, depth: int) -> list[str]:
    """The readable model's lines of :func:`vw_section` (a field a line, as VW writes them)."""
    out = []
    for name, f, v in _fields(gstate, k, depth):
        if f == "?":
            text = "true" if v else "false"
        elif f in "fd" and v != v:
            text = "-nan" if math.copysign(1.0, v) < 0 else "nan"
        elif f in "fd":
            text = _shortest(v, single=f == "f")
        else:
            text = str(v)
        out.append(f"{name} = {text}\n")
    return out
