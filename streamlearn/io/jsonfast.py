"""The compiled path of VW's JSON lines for contextual bandits (``--json``, ``--dsjson`` with
``--cb_adf``, ``--cb_explore_adf``...): a line translated into VW text in a kernel.

:func:`streamlearn.io.vwjson.translate` writes each JSON line as the VW text lines that
give the same examples (:mod:`streamlearn.io.jsonreader`, in Python: about 100,000
features a second).  Most lines of a contextual-bandit log have one shape: a record
(DSJSON: ``_label_*``, ``_labelIndex``, ``a``, ``p`` around the context ``c``) whose
context holds features (strings, numbers, booleans), namespaces (objects, nested) and
``_multi``, the actions.  :func:`translate_block` translates those lines here, byte for
byte into the text the Python reader writes up to how numbers are spelled, and marks every
other line :data:`SLOW` for the Python reader, which gives its text or VW's reason:

* a string with an escape (``\\``) or a control byte, a name VW text cannot hold (a space,
  ``:``, ``|``, empty), a namespace whose name starts with a byte ``>= 0x80``;
* arrays in the context, ``_text``, ``_tag``, ``_slots``, any key starting with ``_``
  other than ``_multi`` and the label's (``_label_Cost``, ``_label_Probability``,
  ``_label_Action``, ``_labelIndex``) at the context's top, a ``_label`` object;
* a DSJSON record's ``pdrop``, ``_skipLearn``, ``_outcomes``, an ``a`` that is not a
  non-empty array; a line that is not strict JSON (Python's reader gives the reason);
* a number the text would not read back as the float32 VW keeps (below), or beyond a float32.

**Numbers.**  VW keeps a JSON number as ``float32(double(token))``.  The Python reader
writes that float32's shortest spelling; here the token is written as it came when the text
reader (VW's arithmetic, :func:`~streamlearn.io.vwfloat.vw_number`) gives back the same
float32, else with ``e+0`` appended when ``strtof`` does (VW's reader then takes its
correctly rounded path), else the line is SLOW.  So the text differs from the Python
reader's only in how numbers are spelled and the examples are the same
(``tests/io/test_jsonfast.py`` checks the parsed arrays of both on random records).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.io._words import find_byte
from streamlearn.io.jsonscan import (
    MAX_DEPTH,
    key_part_ok,
    literal,
    name_ok,
    number_end,
    number_token,
    same,
    same_lower,
    skip_value,
    skip_ws,
    string_end,
)
from streamlearn.system.jit import jit, jit_inline, jit_noalloc

FAST = 0
"""A line translated here."""
SKIP = 1
"""A line that gives no example (blank; under ``--dsjson``, one not starting with ``{``)."""
SLOW = 2
"""A line for the Python reader."""

FAST_LINE = 1 << 20
"""Longer lines go to the Python reader (the kernel's scratch is sized by the longest)."""
KERNEL_LINE = 64 << 10
"""Longer JSON lines are read in Python by a run (``vwjson``, ``jsondirect``): the kernel's
scratch is sized by a block's longest line (~40 bytes per byte of it), the Python reader's
memory by each line (~11x)."""
_FLT_MAX = float(np.finfo(np.float32).max)


def _word(b: bytes) -> np.ndarray:
    """A key word as the kernel compares it."""
    return np.frombuffer(b, dtype=np.uint8).copy()


# key words, as byte arrays for the kernel
_W_C = _word(b"c")
_W_A = _word(b"a")
_W_MULTI = _word(b"_multi")
_W_LABEL = _word(b"_label")
_W_SKIP = _word(b"_skipLearn")
_W_OUTCOMES = _word(b"_outcomes")
_W_COST = _word(b"cost")
_W_PROB = _word(b"probability")
_W_ACTION = _word(b"action")
_W_INDEX = _word(b"index")
_W_SHARED = _word(b"shared")
_W_PDROP = _word(b"pdrop")


# --------------------------------------------------------------------------- output


@jit_inline
def _put(out: np.ndarray, o: int, c: int) -> int:
    if o < 0 or o >= out.shape[0]:
        return -1
    out[o] = c
    return o + 1


@jit_inline
def _put_span(out: np.ndarray, o: int, buf: np.ndarray, s: int, e: int) -> int:
    if o < 0 or o + (e - s) > out.shape[0]:
        return -1
    for q in range(s, e):
        out[o] = buf[q]
        o += 1
    return o


@jit_inline
def _put_value(out: np.ndarray, o: int, buf: np.ndarray, s: int, e: int, sfx: int) -> int:
    """A number token, with ``e+0`` when ``sfx``."""
    o = _put_span(out, o, buf, s, e)
    if sfx == 1:
        o = _put(out, o, 101)
        o = _put(out, o, 43)
        o = _put(out, o, 48)
    return o


@jit_inline
def _put_uint(out: np.ndarray, o: int, v: int) -> int:
    n = 1
    t = v // 10
    while t > 0:
        n += 1
        t //= 10
    if o < 0 or o + n > out.shape[0]:
        return -1
    for k in range(n - 1, -1, -1):
        out[o + k] = 48 + v % 10
        v //= 10
    return o + n


# --------------------------------------------------------------------------- a line

# the cb label's fields in ``label``: found, action, cost (start, end, how), probability
# (start, end, how), _labelIndex; then the same as the context closed (VW's finish)
_FOUND, _ACTION, _CS, _CE, _CHOW, _PS, _PE, _PHOW, _INDEX = 0, 1, 2, 3, 4, 5, 6, 7, 8
_AT_CLOSE = 9


@jit_inline
def _open_ns(nss: np.ndarray, nn: int, frames: np.ndarray, depth: int, s: int, e: int,
             group: int) -> None:  # fmt: skip
    """Namespace ``nn`` (name ``buf[s:e]``, -1: the root ``" "``) opens the object of frame
    ``depth``."""
    nss[nn, 0] = s
    nss[nn, 1] = e
    nss[nn, 2] = group
    nss[nn, 3] = 0
    frames[depth, 0] = 0
    frames[depth, 1] = nn


@jit_inline
def _next_member(buf: np.ndarray, p: int, le: int) -> int:
    """After a value at ``p``: past the ``,`` before the next, or -1."""
    if buf[p] != 44:
        return -1
    p = skip_ws(buf, p + 1, le)
    return p if p < le else -1


@jit_noalloc
def _line(buf: np.ndarray, ls: int, le: int, dsjson: bool, text: bool, ints: np.ndarray,
          fv: np.ndarray, nss: np.ndarray, exs: np.ndarray, closes: np.ndarray,
          frames: np.ndarray, label: np.ndarray) -> tuple[int, int, int, int]:  # fmt: skip
    """Read the JSON line ``buf[ls:le]`` into the scratch: ``(code, namespace closes,
    examples, the labelled example)``; the examples are then written as text
    (:func:`_text`, ``text``) or as rows (:mod:`streamlearn.io.jsondirect`: numbers need not
    be spelled in VW text, :func:`~streamlearn.io.jsonscan.number_token`).

    Scratch (sized by the caller for the longest line): ``ints`` the features (example,
    group, namespace, key start, key end, string value start, end, number start, end, e+0,
    next of the example), ``fv`` each feature's value (VW's float32, 1 without a number),
    ``nss`` the namespaces (name start, end: -1 for the root ``" "``; group, features),
    ``exs`` the examples (first feature, last), ``closes`` (example, group) in the order
    namespaces closed with features (VW's namespace order), ``frames`` (kind: 0 an object
    of features, 1 ``_multi``, 2 the DSJSON record; its namespace), ``label`` the cb
    label's tokens.  The labelled example is -1 when there is none.
    """
    p = skip_ws(buf, ls, le)
    if p >= le:
        return SKIP, 0, 0, -1
    if buf[p] != 123:
        return (SKIP, 0, 0, -1) if dsjson else (SLOW, 0, 0, -1)
    nf = 0  # features
    nn = 0  # namespaces
    nx = 1  # examples (0: the shared one)
    nc = 0  # namespace closes
    exs[0, 0] = -1
    exs[0, 1] = -1
    for k in range(label.shape[0]):
        label[k] = -1
    label[_FOUND] = 0
    label[_ACTION] = 0
    label[_AT_CLOSE + _FOUND] = 0
    multi_seen = False
    actions_seen = not dsjson
    context_done = False
    depth = 0
    cur = 0  # the example features go to
    if dsjson:
        frames[0, 0] = 2
        frames[0, 1] = -1
    else:
        _open_ns(nss, 0, frames, 0, -1, -1, 32)
        nn = 1
    p += 1
    first = True  # the frame's first member: no ',' before it
    while True:
        p = skip_ws(buf, p, le)
        if p >= le:
            return SLOW, 0, 0, -1
        kind = frames[depth, 0]
        c = buf[p]
        # ---- a frame's end, or the ',' before its next member
        if kind == 1:  # the _multi array
            if c == 93:  # ]
                p += 1
                depth -= 1
                cur = 0
                first = False
                continue
            if not first:
                p = _next_member(buf, p, le)
                if p < 0:
                    return SLOW, 0, 0, -1
                c = buf[p]
            first = False
            lk, q = literal(buf, p, le)
            if lk == 2:  # null: no action
                p = q
                continue
            if c != 123 or depth + 1 > MAX_DEPTH or nx >= exs.shape[0] \
                    or nn >= nss.shape[0]:  # fmt: skip
                return SLOW, 0, 0, -1
            cur = nx
            exs[nx, 0] = -1
            exs[nx, 1] = -1
            nx += 1
            depth += 1
            _open_ns(nss, nn, frames, depth, -1, -1, 32)  # the action's root namespace " "
            nn += 1
            p += 1
            first = True
            continue
        if c == 125:  # }
            p += 1
            if kind == 2:
                break  # the DSJSON record ends
            ns = frames[depth, 1]
            if nss[ns, 3] > 0:
                if nc >= closes.shape[0]:
                    return SLOW, 0, 0, -1
                closes[nc, 0] = cur
                closes[nc, 1] = nss[ns, 2]
                nc += 1
            depth -= 1
            first = False
            if depth < 0 or (depth == 0 and dsjson):  # the context ends: VW's finish
                context_done = True
                for k in range(_AT_CLOSE):
                    label[_AT_CLOSE + k] = label[k]
                label[_FOUND] = 0  # (label keys after the context change nothing)
                if depth < 0:
                    break
            continue
        if not first:
            p = _next_member(buf, p, le)
            if p < 0:
                return SLOW, 0, 0, -1
        first = False
        # ---- a member: its key, then its value at p
        if buf[p] != 34:
            return SLOW, 0, 0, -1
        ks = p + 1
        ke = string_end(buf, p, le)
        if ke < 0:
            return SLOW, 0, 0, -1
        p = skip_ws(buf, ke + 1, le)
        if p >= le or buf[p] != 58:
            return SLOW, 0, 0, -1
        p = skip_ws(buf, p + 1, le)
        if p >= le:
            return SLOW, 0, 0, -1
        c = buf[p]
        vw_key = ke > ks and buf[ks] == 95  # _
        is_label = vw_key and same(buf, ks, min(ke, ks + 6), _W_LABEL)
        if kind == 2:  # a DSJSON record's own key
            if same(buf, ks, ke, _W_C):
                if c != 123 or context_done or nn >= nss.shape[0]:
                    return SLOW, 0, 0, -1
                depth += 1
                _open_ns(nss, nn, frames, depth, -1, -1, 32)
                nn += 1
                p += 1
                first = True
                continue
            if same(buf, ks, ke, _W_A):
                q = skip_ws(buf, p + 1, le)
                if c != 91 or q >= le or buf[q] == 93:  # (none taken: VW reads on)
                    return SLOW, 0, 0, -1
                actions_seen = True
            elif same(buf, ks, ke, _W_PDROP) or same(buf, ks, ke, _W_SKIP) \
                    or same(buf, ks, ke, _W_OUTCOMES):  # fmt: skip
                return SLOW, 0, 0, -1
            if not is_label:
                p = skip_value(buf, p, le)
                if p < 0:
                    return SLOW, 0, 0, -1
                continue
        elif vw_key:
            top = depth == 0 or (depth == 1 and dsjson)  # the context's own keys
            if not top:
                return SLOW, 0, 0, -1
            if same(buf, ks, ke, _W_MULTI):
                if multi_seen or c != 91 or depth + 1 > MAX_DEPTH:
                    return SLOW, 0, 0, -1
                multi_seen = True
                depth += 1
                frames[depth, 0] = 1
                frames[depth, 1] = -1
                p += 1
                first = True
                continue
            if not is_label:
                return SLOW, 0, 0, -1
        if is_label:  # _label_<property>, _labelIndex (VW's label_object_state)
            if same_lower(buf, ks + 6, ke, _W_INDEX):
                q = number_end(buf, p, le)
                if q < 0:
                    return SLOW, 0, 0, -1
                v = 0
                for r in range(p, q):
                    d = np.int64(buf[r]) - 48
                    if d < 0 or d > 9 or v > 4294967295:  # a sign, a fraction: Python's
                        return SLOW, 0, 0, -1
                    v = v * 10 + d
                if v > 4294967295:
                    return SLOW, 0, 0, -1
                label[_INDEX] = v
                p = q
                continue
            if ke - ks <= 7 or buf[ks + 6] != 95:
                return SLOW, 0, 0, -1  # _label, _labelX...: the Python reader's
            lk, q = literal(buf, p, le)
            if lk == 2:  # null: nothing
                p = q
                continue
            q = number_end(buf, p, le)
            if q < 0:
                return SLOW, 0, 0, -1
            how, f = number_token(buf, p, q, text)
            if how < 0:
                return SLOW, 0, 0, -1
            if same_lower(buf, ks + 7, ke, _W_COST):
                if f == _FLT_MAX:
                    return SLOW, 0, 0, -1
                label[_CS] = p
                label[_CE] = q
                label[_CHOW] = how
            elif same_lower(buf, ks + 7, ke, _W_PROB):
                if buf[p] == 45:  # a negative probability: Python's refusal
                    return SLOW, 0, 0, -1
                label[_PS] = p
                label[_PE] = q
                label[_PHOW] = how
            elif same_lower(buf, ks + 7, ke, _W_ACTION):
                if f < 0.0 or f >= 4294967296.0 or f != math.floor(f):
                    return SLOW, 0, 0, -1
                label[_ACTION] = np.int64(f)
            else:
                return SLOW, 0, 0, -1
            label[_FOUND] = 1
            p = q
            continue
        # ---- a feature, or a namespace
        ns = frames[depth, 1]
        if c == 123:  # a namespace
            if not name_ok(buf, ks, ke) or buf[ks] >= 128 or depth + 1 > MAX_DEPTH \
                    or nn >= nss.shape[0]:  # fmt: skip
                return SLOW, 0, 0, -1
            depth += 1
            _open_ns(nss, nn, frames, depth, ks, ke, buf[ks])
            nn += 1
            p += 1
            first = True
            continue
        vs = -1
        ve = -1
        ts = -1
        te = -1
        how = 0
        value = 1.0
        if c == 34:  # "k": "v" is the feature kv
            vs = p + 1
            ve = string_end(buf, p, le)
            if ve < 0 or not key_part_ok(buf, ks, ke) or (ke == ks and ve == vs):
                return SLOW, 0, 0, -1
            p = ve + 1
        elif c == 45 or 48 <= c <= 57:  # "k": number is k with that value (0: nothing)
            q = number_end(buf, p, le)
            if q < 0:
                return SLOW, 0, 0, -1
            how, f = number_token(buf, p, q, text)
            if how < 0 or not name_ok(buf, ks, ke):
                return SLOW, 0, 0, -1
            if f == 0.0:
                p = q
                continue
            if f != 1.0:
                ts = p
                te = q
                value = f
            p = q
        else:  # true is k; false, null nothing
            lk, q = literal(buf, p, le)
            if lk < 0:
                return SLOW, 0, 0, -1  # an array, or not JSON
            p = q
            if lk != 1:
                continue
            if not name_ok(buf, ks, ke):
                return SLOW, 0, 0, -1
        if nf >= ints.shape[0]:
            return SLOW, 0, 0, -1
        ints[nf, 0] = cur
        ints[nf, 1] = nss[ns, 2]
        ints[nf, 2] = ns
        ints[nf, 3] = ks
        ints[nf, 4] = ke
        ints[nf, 5] = vs
        ints[nf, 6] = ve
        ints[nf, 7] = ts
        ints[nf, 8] = te
        ints[nf, 9] = how
        ints[nf, 10] = -1
        fv[nf] = value
        if exs[cur, 0] < 0:
            exs[cur, 0] = nf
        else:
            ints[exs[cur, 1], 10] = nf
        exs[cur, 1] = nf
        nss[ns, 3] += 1
        nf += 1
    # ---- the line has ended: only whitespace may follow
    if skip_ws(buf, p, le) != le:
        return SLOW, 0, 0, -1
    if not multi_seen or nx < 2 or not actions_seen or not context_done:
        return SLOW, 0, 0, -1
    # VW's finish: the cb label goes on the action _labelIndex
    at = _AT_CLOSE
    target = -1
    if label[at + _FOUND] == 1:
        if label[at + _INDEX] < 0:  # (a label on the shared example: Python's refusal)
            return SLOW, 0, 0, -1
        target = label[at + _INDEX] + 1
        if target >= nx:
            return SLOW, 0, 0, -1
        if label[at + _CS] >= 0 and label[at + _PS] < 0:  # a cost without a probability
            return SLOW, 0, 0, -1
    return FAST, nc, nx, target


@jit_noalloc
def order(buf: np.ndarray, ints: np.ndarray, nss: np.ndarray, exs: np.ndarray,
          closes: np.ndarray, nc: int, nx: int, seen: np.ndarray, out: np.ndarray,
          xptr: np.ndarray) -> None:  # fmt: skip
    """The features :func:`_line` read, example by example, in VW's order: by namespace
    group as the groups closed, each group's features in the line's order.

    Example x's are ``out[xptr[x]:xptr[x + 1], 0]``; ``out[j, 1]`` is 1 where a feature's
    namespace begins a ``|`` segment of the text (the first of its group, or a namespace
    of another name than the one before it).  ``seen``: 256 flags of scratch.
    """
    j = 0
    for x in range(nx):
        xptr[x] = j
        for k in range(nc):  # (the groups this example may mark, unmarked)
            seen[closes[k, 1]] = False
        for k in range(nc):
            if closes[k, 0] != x:
                continue
            g = closes[k, 1]
            if seen[g]:
                continue
            seen[g] = True
            last = -2  # the namespace last written in this group
            f_ = exs[x, 0]
            while f_ >= 0:
                if ints[f_, 1] == g:
                    ns = ints[f_, 2]
                    out[j, 0] = f_
                    out[j, 1] = 0
                    if last == -2 or not _same_name(buf, nss, last, ns):
                        out[j, 1] = 1
                        last = ns
                    j += 1
                f_ = ints[f_, 10]
    xptr[nx] = j


@jit_noalloc
def _text(buf: np.ndarray, out: np.ndarray, o: int, ints: np.ndarray, nss: np.ndarray,
          feats: np.ndarray, xptr: np.ndarray, nx: int, target: int,
          label: np.ndarray) -> int:  # fmt: skip
    """A record's VW text: the shared line, each action's, a blank line (``vwjson._render``);
    ``feats``, ``xptr``: :func:`order`'s."""
    at = _AT_CLOSE
    for x in range(nx):
        if x == 0:
            for k in range(_W_SHARED.shape[0]):
                o = _put(out, o, _W_SHARED[k])
        elif x == target:
            o = _put_uint(out, o, label[at + _ACTION])
            if label[at + _CS] >= 0:
                o = _put(out, o, 58)
                o = _put_value(out, o, buf, label[at + _CS], label[at + _CE], label[at + _CHOW])
                o = _put(out, o, 58)
                o = _put_value(out, o, buf, label[at + _PS], label[at + _PE], label[at + _PHOW])
        head = x == 0 or x == target
        wrote = False
        for j in range(xptr[x], xptr[x + 1]):
            f_ = feats[j, 0]
            if feats[j, 1] == 1:
                ns = ints[f_, 2]
                if head or wrote:
                    o = _put(out, o, 32)
                o = _put(out, o, 124)
                if nss[ns, 0] >= 0:
                    o = _put_span(out, o, buf, nss[ns, 0], nss[ns, 1])
                wrote = True
            o = _put(out, o, 32)
            o = _put_span(out, o, buf, ints[f_, 3], ints[f_, 4])
            if ints[f_, 5] >= 0:  # a string value, VW's escape
                for q in range(ints[f_, 5], ints[f_, 6]):
                    b = buf[q]
                    if b == 32 or b == 58 or b == 124:
                        b = 95
                    o = _put(out, o, b)
            if ints[f_, 7] >= 0:
                o = _put(out, o, 58)
                o = _put_value(out, o, buf, ints[f_, 7], ints[f_, 8], ints[f_, 9])
        if not wrote:  # an example without features: " |"
            if head:
                o = _put(out, o, 32)
            o = _put(out, o, 124)
        o = _put(out, o, 10)
    return _put(out, o, 10)


@jit_inline
def _same_name(buf: np.ndarray, nss: np.ndarray, a: int, b: int) -> bool:
    """Whether namespaces ``a`` and ``b`` are written under the same text name."""
    sa, ea, sb, eb = nss[a, 0], nss[a, 1], nss[b, 0], nss[b, 1]
    if sa < 0 or sb < 0:
        return sa < 0 and sb < 0
    if ea - sa != eb - sb:
        return False
    for q in range(ea - sa):
        if buf[sa + q] != buf[sb + q]:
            return False
    return True


@jit_inline
def split_lines(buf: np.ndarray, seg: np.ndarray) -> tuple[int, int]:
    """Each line of ``buf`` (split at ``\\n``, as ``bytes.split``) as ``seg[k, 1:3]`` (start,
    end); returns the lines (-1: more than ``seg`` has rows) and the longest line's length,
    up to :data:`FAST_LINE`.  Each newline is found 8 bytes a step."""
    n = buf.shape[0]
    nl = 0
    longest = 0
    s = 0
    while True:
        i = find_byte(buf, s, n, 10, True)
        if nl >= seg.shape[0]:
            return -1, 0
        seg[nl, 1] = s
        seg[nl, 2] = i
        nl += 1
        if i - s > longest:
            longest = i - s
        if i >= n:
            break
        s = i + 1
    return nl, min(longest, FAST_LINE)


@jit_inline
def scratch(longest: int) -> tuple:
    """:func:`_line`'s scratch for lines of up to ``longest`` bytes: ``ints``, ``fv``,
    ``nss``, ``exs``, ``closes``, ``label``, ``frames``, and :func:`order`'s ``feats``,
    ``xptr`` and ``seen``."""
    # each feature takes 6 bytes of JSON at least ("k":1,), a namespace 3 (an action: {},)
    # (beyond: the line is SLOW)
    ints = np.empty((longest // 6 + 8, 11), dtype=np.int64)
    fv = np.empty(longest // 6 + 8, dtype=np.float64)
    nss = np.empty((longest // 3 + 8, 4), dtype=np.int64)
    exs = np.empty((longest // 3 + 8, 2), dtype=np.int64)
    closes = np.empty((longest // 3 + 8, 2), dtype=np.int64)
    label = np.empty(2 * _AT_CLOSE, dtype=np.int64)
    frames = np.empty((MAX_DEPTH + 2, 2), dtype=np.int64)
    feats = np.empty((longest // 6 + 8, 2), dtype=np.int64)
    xptr = np.empty(longest // 3 + 9, dtype=np.int64)
    seen = np.zeros(256, dtype=np.bool_)
    return ints, fv, nss, exs, closes, label, frames, feats, xptr, seen


@jit
def translate_block(buf: np.ndarray, dsjson: bool, out: np.ndarray,
                    seg: np.ndarray) -> int:  # fmt: skip
    """Translate each line of ``buf`` (split at ``\\n``, as ``bytes.split``) into ``out``.

    ``seg[k]`` gets line k's (code, text start, text end, text lines); returns the number
    of lines, or -1 when ``out`` is too small (the caller then reads the block in Python).
    """
    nl, longest = split_lines(buf, seg)
    if nl < 0:
        return -1
    ints, fv, nss, exs, closes, label, frames, feats, xptr, seen = scratch(longest)
    o = 0
    for k in range(nl):
        ls = seg[k, 1]
        le = seg[k, 2]
        if le - ls > FAST_LINE:
            code, o2, lines = SLOW, o, 0
        else:
            code, nc, nx, target = _line(buf, ls, le, dsjson, True, ints, fv, nss, exs,
                                         closes, frames, label)  # fmt: skip
            o2 = o
            lines = 0
            if code == FAST:
                order(buf, ints, nss, exs, closes, nc, nx, seen, feats, xptr)
                o2 = _text(buf, out, o, ints, nss, feats, xptr, nx, target, label)
                lines = nx + 1
        if o2 < 0:
            return -1
        seg[k, 0] = code
        if code == FAST:
            seg[k, 1] = o
            seg[k, 2] = o2
            seg[k, 3] = lines
            o = o2
        else:
            seg[k, 1] = o
            seg[k, 2] = o
            seg[k, 3] = 0
    return nl
