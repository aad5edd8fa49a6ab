"""VW's JSON inputs (``--json``, ``--dsjson``), translated line by line into VW text.

Each JSON line is read as VW's ``json_parser/src/parse_example_json.cc`` reads it
(VW 9.11) and written out as the VW text lines that give the *same examples*:
the same label, the same namespaces in the same order, the same hashed features
in the same order with the same float32 values.  The text then goes through
the ordinary parser (multiline examples: a ``shared`` line, one line per
action, a blank line).

What VW's reader does, and how the text keeps it:

* **Namespaces.**  An object under key ``k`` is a namespace named ``k``: its
  group is the first byte of ``k``, its hash ``hashstring(k)``; the root object
  (and each ``_multi`` action) is the default namespace ``" "`` (hash 0).  A
  group joins the example's namespace list when a namespace of that group with
  features *closes* (so nested objects list the inner group first); features
  of one group keep their order.  The text writes each group's features
  together, groups in that order.
* **Features.**  ``"k": "v"`` is the feature ``k`` + ``v`` (value 1), with the
  spaces, tabs, ``:`` and ``|`` of ``v`` replaced by ``_``; under
  ``--chain_hash`` it is hashed as ``hashstring(v, hashstring(k, ns))``.
  ``"k": number`` is the feature ``k`` with that value as a float32 (0 drops
  it); ``"k": true`` is ``k`` (``false`` nothing); ``"k": [numbers]`` opens a
  namespace ``k`` whose i-th number has index ``hash(k) + i`` (objects in the
  array are namespaces named ``k``); ``"_text": "a b"`` adds a feature per word.
  A namespace whose name starts with a non-ASCII byte loses its features, as in
  VW (which indexes namespaces by a signed char).  Keys starting with ``_`` are
  VW's (``_label``, ``_label_Cost``..., ``_labelIndex``, ``_text``, ``_tag``,
  ``_multi``, ``_a``/``_p``); any other such key is skipped with its value.
* **Exact hashes.**  A feature whose name cannot be written in VW text (it holds
  a space, ``:`` or ``|``, or is chain-hashed) is written as a decimal name:
  VW hashes a name of digits as its value plus the namespace's hash, so the
  decimal ``(h - hash(ns)) mod 2^32`` gives exactly the hash ``h``.  Values are
  written so that the reader gets the same float32 (``e+0`` forces VW's exact
  path where its fast reader would round differently).
* **Labels.**  ``_label`` (a number, a text label, or an object with
  ``Label``/``Weight``/``Initial`` or ``Action``/``Cost``/``Probability``) and
  ``_label_<Property>`` keys; the cb label goes on the action ``_labelIndex``
  (0-based among the actions) when the line ends.  ``_tag`` sets the tag.
* **DSJSON** (decision-service records): the context is under ``c``; top-level
  ``_label_*``, ``_labelIndex``, ``a`` (the actions taken, required), ``p``,
  ``pdrop`` (the example's weight becomes ``1/(1 - pdrop)``; 1 is refused),
  ``_skipLearn`` (the line is dropped), ``EventId``, ``Timestamp``; lines not
  starting with ``{`` are passed over silently, as VW does.

A line VW cannot read (not JSON, a string in a numeric array, an unknown
``_label_`` property, ``_labelIndex`` past the actions...) is reported with its
reason and skipped; VW stops at such a line under ``--json`` and skips it under
``--dsjson``.  So is a line VW reads but sl does not (``docs/input-formats.md``):
one nested deeper than :data:`MAX_DEPTH` objects and arrays.  A ``\\u`` escape of a
lone UTF-16 surrogate is refused as by VW's reader; other bytes are bytes: a line
that is not UTF-8 keeps its bytes in names and values, as in VW.

Memory: each feature is written out as VW text when it is read (nothing per
feature is kept but its text), and each action of a multiline record keeps only
its text and label, so a line costs about its parsed JSON (Python's objects,
~6-15x its bytes) plus its text (:func:`read_record`; ``docs/input-formats.md``,
"Memory per example").
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from dataclasses import dataclass

import numpy as np

from streamlearn.hashing import hashstring_py
from streamlearn.io.batch import BAD_JSON, LONG_LINE, Batch, Block

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
_F32_INF = 2.0**128 - 2.0**103  # the least double that float32 rounds to infinity
_DBL_MAX = float(np.finfo(np.float64).max)
M32 = 0xFFFFFFFF
_ESCAPE = bytes.maketrans(b" \t|:", b"____")
_TEXT_ESCAPE = bytes.maketrans(b":|", b"__")

LABEL_KINDS = ("simple", "multiclass", "cb", "cs")


class JsonLineError(ValueError):
    """A JSON line VW's reader refuses; the message is the reason."""


class _Obj(tuple):
    """A JSON object as its (key, value) pairs, in order, duplicates kept."""

    __slots__ = ()


MAX_DEPTH = 100
"""The deepest nesting of objects and arrays read (the line itself is depth 1); a
deeper line is refused (VW reads any depth)."""

_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_ESCAPE_SEQ = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def _depth_over(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``raw`` nests objects and arrays deeper than ``limit`` (strings skipped).

    Its memory is ~2 bytes per byte of ``raw`` plus 8 per ``"`` and bracket.
    """
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return False
    b = np.frombuffer(raw, dtype=np.uint8)
    quotes = np.flatnonzero(b == 0x22)
    if quotes.size and b"\\" in raw:  # a quote after an odd run of backslashes is escaped
        after = quotes[quotes > 0]
        after = after[b[after - 1] == 0x5C]
        escaped = [q for q in after.tolist() if _odd_run(raw, q)]
        if escaped:
            quotes = np.setdiff1d(quotes, np.array(escaped, dtype=np.int64), assume_unique=True)
    opening = (b == 0x5B) | (b == 0x7B)
    at = np.flatnonzero(opening | (b == 0x5D) | (b == 0x7D))
    at = at[(np.searchsorted(quotes, at) & 1) == 0]  # outside strings: after an even count
    steps = np.where(opening[at], 1, -1).astype(np.int32)
    return steps.size > 0 and int(np.cumsum(steps, dtype=np.int32).max()) > limit


def _odd_run(raw: bytes, q: int) -> bool:
    """Whether an odd number of backslashes comes just before ``raw[q]``."""
    k = q - 1
    while k >= 0 and raw[k] == 0x5C:
        k -= 1
    return (q - 1 - k) % 2 == 1


def _lone_surrogate(raw: bytes) -> bool:
    """Whether a ``\\u`` escape of ``raw`` is a UTF-16 surrogate without its other half."""
    if _SURROGATE.search(raw) is None:
        return False
    pending = -1  # where a high surrogate's escape ended, waiting for its low half
    for m in _ESCAPE_SEQ.finditer(raw):
        cp = int(m.group(1), 16) if m.group(1) else -1
        if pending >= 0:
            if m.start() != pending or not 0xDC00 <= cp <= 0xDFFF:
                return True
            pending = -1
        elif 0xD800 <= cp <= 0xDBFF:
            pending = m.end()
        elif 0xDC00 <= cp <= 0xDFFF:
            return True
    return pending >= 0


def _refuse_constant(name: str) -> object:
    raise JsonLineError(f"{name} is not a JSON value")


def _loads(text: str) -> object:
    return json.loads(text, object_pairs_hook=_Obj, parse_constant=_refuse_constant)


def _decode(raw: bytes) -> object:
    """The JSON value of one line, as VW's reader takes it (:class:`JsonLineError` if not)."""
    if _depth_over(raw):
        raise JsonLineError(f"nested deeper than {MAX_DEPTH} objects and arrays")
    if _lone_surrogate(raw):
        raise JsonLineError("a lone surrogate (\\uD800-\\uDFFF escape without its pair)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")  # bytes are bytes, as in VW
    try:
        return _loads(text)
    except JsonLineError:
        raise
    except (ValueError, RecursionError) as e:
        raise JsonLineError(f"not JSON ({_printable(str(e))})") from None


def _b(s: str) -> bytes:
    """A JSON string's bytes (a line that was not UTF-8 keeps its own bytes)."""
    return s.encode("utf-8", "surrogateescape")


def _printable(s: str) -> str:
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


# --------------------------------------------------------------------------- numbers


def _f32(v: object) -> float:
    """A JSON number as VW keeps it: ``static_cast<float>`` of rapidjson's value.

    A number beyond a double (``1e999``, 400 digits) is refused, as by rapidjson.
    """
    if -_F32_INF < v < _F32_INF or v != v:
        return float(F32(v))
    if isinstance(v, float) and math.isinf(v) or abs(v) > _DBL_MAX:
        raise JsonLineError("a number too big to be stored in a double")
    return math.copysign(math.inf, v)  # (what float32 gives, without numpy's warning)


def value_text(v: float, numbers: str = "vw") -> str:
    """A float32 written so that sl's reader (``numbers`` mode) gets it back exactly.

    >>> value_text(0.5), value_text(0.125), value_text(0.03965697064995766)
    ('0.5', '0.125e+0', '0.03965697e+0')
    """
    v = float(F32(v))
    if v == 0.0 or v != v:
        return _value_text(v, numbers)  # (the cache would take -0.0 for 0.0)
    return _value_text_cached(v, numbers)


def _value_text(v: float, numbers: str) -> str:
    s = np.format_float_positional(F32(v), unique=True, trim="-")
    if "e" in s or len(s) > 24:
        s = np.format_float_scientific(F32(v), unique=True, trim="-")
    if numbers != "vw" or _vw_reads(s) == v:
        return s
    return s + ("e+0" if "e" not in s else "")


_value_text_cached = functools.lru_cache(maxsize=1 << 14)(_value_text)
_POW10: list[float] = []


def _vw_reads(s: str) -> float:
    """:func:`~streamlearn.io.vwfloat.vw_parse_float` of ``s`` (a number as
    :func:`value_text` writes it), without its float32 loop when the digits fit a float32
    exactly (then VW's value is ``digits * pow10[-fraction digits]``, one rounding).
    """
    from streamlearn.io.vwfloat import VW_POW10, vw_parse_float

    body = s[1:] if s.startswith("-") else s
    whole, _, frac = body.partition(".")
    digits = whole + frac
    if not digits.isdigit() or not digits.isascii() or len(frac) > 35 or len(digits) > 8:
        return vw_parse_float(s)
    d = int(digits)
    if d + 48 >= 1 << 24:  # VW's accumulator (digit codes added) would round
        return vw_parse_float(s)
    if not _POW10:
        _POW10.extend(float(x) for x in VW_POW10)
    v = float(F32(d * _POW10[37 - len(frac)]))  # exact product of two float32, rounded once
    return -v if s.startswith("-") else v


# --------------------------------------------------------------------------- the example model


@dataclass(slots=True)
class _Ns:
    name: bytes
    hash: int
    group: int
    count: int = 0
    text: tuple[bytes, int] | None = None  # the text namespace writing it (:func:`_text_ns`)


class _Example:
    """One example of a line: its label, and its features already written as VW text.

    ``feats``: group -> [the group's text so far (each namespace switch a ``" |name"``,
    each feature a ``" token"``), the text namespace last written]; ``groups`` the
    groups in VW's order.  :meth:`seal` joins them into ``body`` once the example's
    object is closed, so that a record of many actions keeps little more than its text.
    """

    __slots__ = ("feats", "groups", "body", "shared", "costs", "simple", "label_text", "tag",
                 "role", "out_cost", "out_actions", "out_probs", "include", "slot_id",
                 "labeled")  # fmt: skip

    def __init__(self, role: str = "", out_cost: float = 0.0, out_actions: list[int] | None = None,
                 out_probs: list[float] | None = None) -> None:  # fmt: skip
        self.feats: dict[int, list] | None = None
        self.groups: list[int] | None = None
        self.body: bytes | None = None
        self.shared = False
        self.costs: list[tuple[int, float, float]] | None = None
        self.simple: list[float | None] | None = None  # label, weight, initial
        self.label_text: str | None = None
        self.tag = b""
        self.role = role  # --ccb_explore_adf/--slates: "shared", "action" or "slot"
        self.out_cost = out_cost  # a slot's outcome: cost, actions, probabilities
        self.out_actions: list[int] | tuple = out_actions if out_actions is not None else ()
        self.out_probs: list[float] | tuple = out_probs if out_probs is not None else ()
        self.include: list[int] | tuple = ()  # ccb: _inc
        self.slot_id = 0  # slates: _slot_id
        self.labeled = False  # slates: the shared line's cost (out_cost) given

    def seal(self) -> None:
        """Join the features' text into ``body`` (no feature comes after)."""
        if self.body is None:
            feats = self.feats or {}
            groups = self.groups or ()
            self.body = b"".join([bytes(feats[g][0]) for g in groups]) if groups else b" |"
            self.feats = self.groups = None


def _expressible(name: bytes) -> bool:
    return len(name) > 0 and all(c > 0x20 and c not in (0x3A, 0x7C) for c in name)


class _Reader:
    """VW's JSON state machine, over a parsed line (recursive instead of event-driven)."""

    def __init__(self, kind: str, chain_hash: bool, hash_seed: int, numbers: str = "vw") -> None:
        self.kind = kind
        self.chain = chain_hash
        self.seed = hash_seed
        self.numbers = numbers
        self.examples: list[_Example] = [_Example()]
        self.ex = self.examples[0]
        self.path: list[_Ns] = []
        # VW's label_object_state: a cb label built from _label_* keys
        self.cb = [0, FLT_MAX, -1.0]
        self.found_cb = False
        self.label_index = -1
        if kind in ("ccb", "slates"):
            self.ex.role = "shared"

    # -- namespaces
    def push(self, name: bytes) -> None:
        h = hashstring_py(name, self.seed)
        self.path.append(_Ns(name, h, name[0] if name else 0))

    def pop(self) -> None:
        ns = self.path.pop()
        if ns.count > 0:
            if self.ex.groups is None:
                self.ex.groups = []
            if ns.group not in self.ex.groups:
                self.ex.groups.append(ns.group)

    def add(self, h: int, value: float, natural: bytes | None) -> None:
        """The feature of hash ``h``, written now: ``natural`` (its name) where VW text
        hashes it to ``h``, else the decimal that does (module docstring)."""
        ns = self.path[-1]
        if ns.group >= 0x80:
            # VW indexes its namespaces by a signed char: a name starting with a non-ASCII
            # byte writes its features before the example's arrays, and they are never read
            return
        if ns.text is None:
            ns.text = _text_ns(ns.name, ns.group, self.seed)
        tname, th = ns.text
        ex = self.ex
        if ex.feats is None:
            ex.feats = {}
        part = ex.feats.get(ns.group)
        if part is None:
            part = ex.feats[ns.group] = [bytearray(), None]
        buf = part[0]
        if part[1] != tname:
            buf += b" |" + tname
            part[1] = tname
        if natural is None or not (tname == ns.name or (tname == b"" and ns.name == b" ")):
            natural = str((h - th) & M32).encode()
        buf += b" " + natural
        if value != 1.0:
            buf += b":" + value_text(value, self.numbers).encode()
        ns.count += 1

    # -- the label object (_label: {...} and _label_* keys)
    def label_property(self, key: str, v: object) -> None:
        k = key.lower()
        if isinstance(v, str):
            if v.lower() != "nan":
                raise JsonLineError(f"unsupported label property '{key}' (a string other than NaN)")
            v = math.nan
        elif v is None:
            return
        elif isinstance(v, bool) or not isinstance(v, int | float):
            raise JsonLineError(f"label property '{key}' is not a number")
        f = _f32(v)
        if self.ex.role == "slot" and k == "cost":  # a CCB slot's (or outcome's) cost
            self.ex.out_cost = f
            return
        if k in ("label", "initial", "weight"):
            if self.kind not in ("simple",):
                raise JsonLineError(f"label property '{key}' needs a simple label")
            if self.ex.simple is None:
                self.ex.simple = [None, None, None]
            self.ex.simple[("label", "weight", "initial").index(k)] = f
        elif k == "action" and not isinstance(v, str):
            if math.isnan(f):
                raise JsonLineError("label Action is NaN")
            self.cb[0] = int(f) & M32
            self.found_cb = True
        elif k == "cost":
            self.cb[1] = f
            self.found_cb = True
        elif k == "probability":
            self.cb[2] = f
            self.found_cb = True
        else:
            raise JsonLineError(f"unsupported label property '{key}'")

    def label_end(self, ex: _Example) -> None:
        if self.kind in ("ccb", "slates"):
            return  # a cb label becomes a slot's outcome (finish)
        if self.found_cb:
            if self.kind != "cb":
                raise JsonLineError("a cb label (Action, Cost, Probability) needs a cb reduction")
            if ex.costs is None:
                ex.costs = []
            ex.costs.append((self.cb[0], self.cb[1], self.cb[2]))
            self.found_cb = False
            self.cb = [0, FLT_MAX, -1.0]

    def label_object(self, obj: object) -> None:
        if not isinstance(obj, _Obj):
            raise JsonLineError("_label object expected")
        self.ex.costs = None
        self.ex.simple = None
        for k, v in obj:
            if isinstance(v, _Obj | list):
                raise JsonLineError("nested value in a _label object")
            self.label_property(k, v)
        self.label_end(self.ex)

    def label(self, v: object) -> None:
        if isinstance(v, _Obj):
            self.label_object(v)
        elif isinstance(v, str):
            if "|" in v or "\n" in v:
                raise JsonLineError("a _label string holding '|' or a newline")
            self.ex.label_text = v
        elif isinstance(v, bool) or v is None:
            if v is None:
                return
            raise JsonLineError("_label is a bool")
        elif isinstance(v, int | float):
            if self.kind == "simple":
                self.ex.label_text = value_text(_f32(v))
            elif self.kind == "multiclass":
                self.ex.label_text = str(int(_f32(v)) & M32)
            else:
                raise JsonLineError(f"a numeric _label does not apply to {self.kind} labels")
        else:
            raise JsonLineError("_label must be a number, a string or an object")

    # -- objects, as VW's DefaultState
    def obj(self, pairs: _Obj, name: bytes) -> None:
        self.push(name)
        for key, v in pairs:
            self.member(key, v)
        self.pop()

    def member(self, key: str, v: object) -> None:
        kb = _b(key)
        if kb.startswith(b"_"):
            self.special(key, kb, v)
            return
        if v is None:
            return
        if isinstance(v, bool):
            if v:
                ns = self.path[-1]
                self.add(hashstring_py(kb, ns.hash), 1.0, kb if _expressible(kb) else None)
            return
        if isinstance(v, str):
            vb = _b(v).translate(_ESCAPE)
            ns = self.path[-1]
            if self.chain:
                h = hashstring_py(vb, hashstring_py(kb, ns.hash))
                self.add(h, 1.0, None)
            else:
                name = kb + vb
                self.add(hashstring_py(name, ns.hash), 1.0, name if _expressible(name) else None)
            return
        if isinstance(v, int | float):
            f = _f32(v)
            if f != 0.0:
                ns = self.path[-1]
                self.add(hashstring_py(kb, ns.hash), f, kb if _expressible(kb) else None)
            return
        if isinstance(v, _Obj):
            self.obj(v, kb)
            return
        if isinstance(v, list):
            self.array(v, kb)
            return
        raise JsonLineError(f"unexpected value under '{key}'")

    def array(self, items: list, name: bytes) -> None:
        self.push(name)
        base = self.path[-1].hash
        i = 0
        for it in items:
            if it is None:
                continue
            if isinstance(it, bool) or isinstance(it, str):
                raise JsonLineError(
                    f"a {type(it).__name__} in the array '{name.decode(errors='replace')}'"
                )
            if isinstance(it, _Obj):
                self.obj(it, self.path[-1].name)
                continue
            if isinstance(it, list):
                raise JsonLineError("nested arrays are not supported")
            f = _f32(it)
            if f != 0.0:
                self.add(base + i, f, str(i).encode())
            i += 1
        items.clear()  # (read: its text is kept, its numbers go)
        self.pop()

    def special(self, key: str, kb: bytes, v: object) -> None:
        if kb.startswith(b"_label"):
            if len(kb) >= 7 and kb[6:7] == b"_":
                if isinstance(v, _Obj):
                    self.label_object(v)
                else:
                    self.label_property(key[7:], v)
                return
            if len(kb) == 6:
                self.label(v)
                return
            if key.lower() == "_labelindex":
                self.label_index_value(v)
                return
            raise JsonLineError(f"unsupported key '{key}'")
        if key == "_text":
            if not isinstance(v, str):
                raise JsonLineError("_text must be a string")
            ns = self.path[-1]
            for word in _b(v).translate(_TEXT_ESCAPE).replace(b"\t", b" ").split(b" "):
                if word:
                    ok = _expressible(word)
                    self.add(hashstring_py(word, ns.hash), 1.0, word if ok else None)
            return
        if key == "_multi":
            self.multi(v)
            return
        if key.lower() == "_tag":
            if not isinstance(v, str):
                raise JsonLineError("_tag must be a string")
            self.ex.tag += _b(v)
            return
        ccb = self.kind in ("ccb", "slates")
        if key == "_slots" and ccb:
            self.slots(v)
            return
        if key == "_inc" and self.kind == "ccb" and self.ex.role == "slot":
            self.ex.include = self.uints(v, key)
            return
        if key == "_slot_id" and self.kind == "slates" and self.ex.role == "action":
            ids = self.uints(v if isinstance(v, list) else [v], key)
            self.ex.slot_id = ids[0] if ids else 0
            return
        if key in ("_a", "_p") and ccb and self.ex.role == "slot":
            self.outcome_part(key, v)
            return
        if key in ("_slots", "_graph", "_slot_id", "__aid", "_inc", "_definitely_bad"):
            raise JsonLineError(f"'{key}' (conditional bandits, slates, graphs) is not supported")
        # _a, _p (CCB outcomes) and any other key starting with '_': skipped with its value

    def label_index_value(self, v: object) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > M32:
            raise JsonLineError("_labelIndex must be a non-negative integer")
        self.label_index = v

    @staticmethod
    def uints(v: object, key: str) -> list[int]:
        bad = not isinstance(v, list) or any(
            isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= M32 for x in v
        )
        if bad:
            raise JsonLineError(f"{key} must be an array of non-negative integers")
        return list(v)

    def outcome_part(self, key: str, v: object) -> None:
        """A CCB slot's ``_a`` (actions, the chosen first) or ``_p`` (their probabilities)."""
        if key == "_a":
            self.ex.out_actions = self.uints(v if isinstance(v, list) else [v], key)
            return
        vals = v if isinstance(v, list) else [v]
        if any(isinstance(x, bool) or not isinstance(x, int | float) for x in vals):
            raise JsonLineError("_p must be an array of numbers")
        self.ex.out_probs = [_f32(x) for x in vals]

    def slots(self, v: object) -> None:
        """``_slots``: one slot example per object (CCB, slates)."""
        if not isinstance(v, list):
            raise JsonLineError("_slots must be an array of objects")
        shared = self.ex
        for k, item in enumerate(v):
            if item is None:
                continue
            if not isinstance(item, _Obj):
                raise JsonLineError("_slots must be an array of objects")
            self.ex = _Example(role="slot")
            self.examples.append(self.ex)
            self.obj(item, b" ")
            self.ex.seal()
            v[k] = None  # (read: its text is kept, its objects go)
        self.ex = shared

    def slates_cost(self) -> None:
        """A slates record's ``_label_cost``: the slate's cost, on the shared line."""
        shared = self.examples[0]
        shared.labeled = True
        shared.out_cost = self.cb[1]

    def outcomes(self, v: object) -> None:
        """DSJSON ``_outcomes``: the n-th object is the n-th slot's outcome."""
        if not isinstance(v, list):
            raise JsonLineError("_outcomes must be an array of objects")
        slots = [ex for ex in self.examples if ex.role == "slot"]
        if not slots:
            raise JsonLineError("_outcomes without _slots")
        for k, item in enumerate(x for x in v if x is not None):
            if not isinstance(item, _Obj):
                raise JsonLineError("_outcomes must be an array of objects")
            if k >= len(slots):
                raise JsonLineError("more _outcomes than _slots")
            saved = self.ex
            self.ex = slots[k]
            for key, val in item:
                if key.lower() == "_label_cost":
                    self.label_property("cost", val)
                elif key in ("_a", "_p"):
                    self.outcome_part(key, val)
                elif key == "_inc" and self.kind == "ccb":
                    self.ex.include = self.uints(val, key)
            self.ex = saved

    def multi(self, v: object) -> None:
        if len(self.examples) > 1:
            raise JsonLineError("nested _multi is not supported")
        if self.kind not in ("cb", "ccb", "slates"):
            raise JsonLineError("_multi needs a cb reduction (--cb_adf, --cb_explore_adf)")
        if not isinstance(v, list):
            raise JsonLineError("_multi must be an array of objects")
        shared = self.ex
        shared.shared = True
        for k, item in enumerate(v):
            if item is None:
                continue
            if not isinstance(item, _Obj):
                raise JsonLineError("_multi must be an array of objects")
            self.ex = _Example(role="action" if self.kind in ("ccb", "slates") else "")
            self.examples.append(self.ex)
            self.obj(item, b" ")
            self.ex.seal()
            v[k] = None  # (read: its text is kept, its objects go)
        self.ex = shared

    # -- a whole line
    def root(self, pairs: _Obj) -> None:
        self.obj(pairs, b" ")
        self.finish()

    def finish(self) -> None:
        if self.kind in ("ccb", "slates"):
            # VW: a CCB record with a cb label and no slots is one slot with that outcome
            if (self.kind == "ccb" and self.found_cb
                    and not any(ex.role == "slot" for ex in self.examples)):  # fmt: skip
                slot = _Example(role="slot", out_cost=self.cb[1],
                                out_actions=[(self.cb[0] - 1) & M32],
                                out_probs=[self.cb[2]])  # fmt: skip
                self.examples.append(slot)
            if self.kind == "slates" and self.found_cb:
                self.slates_cost()
            self.found_cb = False
            return
        target = self.ex
        if self.label_index >= 0:
            idx = self.label_index + 1
            if idx >= len(self.examples):
                raise JsonLineError(
                    f"_labelIndex {self.label_index} is not an action (the line has "
                    f"{len(self.examples) - 1} actions)"
                )
            target = self.examples[idx]
            self.label_index = -1
        self.label_end(target)


@dataclass
class JsonRecord:
    """What one JSON line gives: VW text lines (a multiline example ends in ``b""``)."""

    lines: list[bytes]
    weight: float = 1.0
    """The examples' importance weight (``1/(1 - pdrop)`` for a DSJSON record)."""


@dataclass
class JsonOptions:
    """How to read JSON lines: ``dsjson``, ``chain_hash``, the label kind, VW's numbers."""

    dsjson: bool = False
    chain_hash: bool = False
    kind: str = "cb"
    numbers: str = "vw"
    hash_seed: int = 0


def _text_ns(name: bytes, group: int, seed: int) -> tuple[bytes, int]:
    """The text namespace that writes features of namespace ``name`` and its hash."""
    if name == b" " or group == 0x20:
        return b"", 0
    if _expressible(name):
        return name, hashstring_py(name, seed)
    if group <= 0x20 or group in (0x3A, 0x7C):
        raise JsonLineError(f"namespace name {name!r} cannot be written in VW text")
    g = bytes([group])
    return g, hashstring_py(g, seed)


def _ccb_head(ex: _Example, opts: JsonOptions) -> bytes:
    """The CCB or slates label of a translated example."""
    word = "ccb" if opts.kind == "ccb" else "slates"
    if ex.role == "shared":
        if ex.labeled:
            return f"slates shared {value_text(ex.out_cost, opts.numbers)}".encode()
        return f"{word} shared".encode()
    if ex.role == "action":
        return f"{word} action{f' {ex.slot_id}' if opts.kind == 'slates' else ''}".encode()
    head = f"{word} slot"
    if ex.out_actions or ex.out_probs:
        if len(ex.out_actions) != len(ex.out_probs):
            raise JsonLineError("a slot's _a and _p must be the same length")
        a, p = ex.out_actions, [value_text(x, opts.numbers) for x in ex.out_probs]
        if opts.kind == "ccb":
            first = f"{a[0]}:{value_text(ex.out_cost, opts.numbers)}:{p[0]}"
        else:
            first = f"{a[0]}:{p[0]}"
        head += " " + ",".join([first] + [f"{x}:{q}" for x, q in zip(a[1:], p[1:], strict=True)])
    if ex.include:
        head += " " + ",".join(str(i) for i in ex.include)
    return head.encode()


def _render(ex: _Example, opts: JsonOptions) -> bytes:
    if ex.role:
        head = _ccb_head(ex, opts)
    elif ex.shared:
        if ex.costs:
            raise JsonLineError("a cb label on the shared example (give _labelIndex)")
        head = b"shared"
    elif ex.label_text is not None:
        head = _b(ex.label_text)
    elif ex.costs:
        parts = []
        for a, c, p in ex.costs:
            if c == FLT_MAX:
                parts.append(str(a))
            else:
                if p < 0.0:
                    raise JsonLineError("a cb label with a cost but no probability")
                parts.append(f"{a}:{value_text(c, opts.numbers)}:{value_text(p, opts.numbers)}")
        head = " ".join(parts).encode()
    elif ex.simple is not None and ex.simple[0] is not None:
        lab, w, init = ex.simple
        toks = [value_text(lab, opts.numbers)]
        if w is not None or init is not None:
            toks.append(value_text(1.0 if w is None else w, opts.numbers))
        if init is not None:
            toks.append(value_text(init, opts.numbers))
        head = " ".join(toks).encode()
    else:
        head = b""
    if ex.tag and _expressible(ex.tag) and not ex.tag.startswith(b"'"):
        head = head + (b" '" if head else b"'") + ex.tag
    ex.seal()
    return head + ex.body if head else ex.body[1:]


def read_record(line: bytes, opts: JsonOptions) -> JsonRecord | None:
    """VW text lines for one JSON line; ``None`` for a line VW passes over in silence.

    Raises :class:`JsonLineError` with VW's reason for a line it cannot read.

    >>> o = JsonOptions(dsjson=True)
    >>> r = read_record(b'{"_label_cost":-1,"_label_probability":0.5,"_labelIndex":1,'
    ...                 b'"a":[2,1],"c":{"shared":{"f":"1"},"_multi":[{"action":{"f":"1"}},'
    ...                 b'{"action":{"f":"2"}}]},"p":[0.5,0.5]}', o)
    >>> r.lines
    [b'shared |shared f1', b'|action f1', b'0:-1:0.5 |action f2', b'']
    """
    try:
        return _read_record(line, opts)
    except RecursionError:  # (MAX_DEPTH keeps the reader's recursion far from the limit)
        raise JsonLineError(f"nested deeper than {MAX_DEPTH} objects and arrays") from None


def _read_record(line: bytes, opts: JsonOptions) -> JsonRecord | None:
    stripped = line.strip()
    if not stripped:
        return None
    if opts.dsjson and not stripped.startswith(b"{"):
        return None
    doc = _decode(stripped)
    if not isinstance(doc, _Obj):
        raise JsonLineError("a JSON line must be an object")
    rd = _Reader(opts.kind, opts.chain_hash, opts.hash_seed, opts.numbers)
    weight = 1.0
    if opts.dsjson:
        actions: list = []
        skip = False
        outcomes = None
        pdrop = 0.0
        seen_c = False
        for key, v in doc:
            if key == "c":
                if not isinstance(v, _Obj):
                    raise JsonLineError("'c' must be an object")
                rd.root(v)
                seen_c = True
            elif key == "a":
                actions = v if isinstance(v, list) else [v]
            elif key == "pdrop":
                if isinstance(v, int | float) and not isinstance(v, bool):
                    pdrop = _f32(v)
            elif key == "_skipLearn":
                skip = v is True
            elif key == "_outcomes" and opts.kind in ("ccb", "slates"):
                outcomes = v
            elif key.startswith("_label"):
                if len(key) >= 7 and key[6] == "_":
                    if isinstance(v, _Obj):
                        rd.label_object(v)
                    else:
                        rd.label_property(key[7:], v)
                elif len(key) == 6:
                    rd.label(v)
                elif key.lower() == "_labelindex":
                    rd.label_index_value(v)
        if pdrop == 1.0:
            raise JsonLineError("examples with pdrop==1 are not supported")
        if skip or (not actions and opts.kind == "cb"):
            return None  # VW reads on: _skipLearn, or a record without actions taken
        if not seen_c:
            raise JsonLineError("a DSJSON record without its context 'c'")
        if outcomes is not None:
            rd.outcomes(outcomes)
        if opts.kind == "slates" and rd.found_cb:  # (a _label_cost after 'c')
            rd.slates_cost()
        taken = any(ex.out_actions and ex.out_probs for ex in rd.examples if ex.role == "slot")
        if opts.kind == "slates":
            # VW's slates reader: the slots are labeled when the record has a _label_cost
            taken = rd.examples[0].labeled
        if opts.kind in ("ccb", "slates") and not actions and not taken:
            # VW reads on past a record without actions taken: for CCB and slates
            # records, the first action of each slot's outcome (or 'a')
            return None
        if pdrop != 0.0 and opts.kind in ("ccb", "slates"):
            raise JsonLineError("pdrop with --ccb_explore_adf/--slates: not supported yet")
        weight = float(F32(1.0) / (F32(1.0) - F32(pdrop)))
    else:
        rd.root(doc)
    lines = []
    for k, ex in enumerate(rd.examples):
        lines.append(_render(ex, opts))
        rd.examples[k] = None  # type: ignore[call-overload]
    if len(rd.examples) > 1 or opts.kind in ("ccb", "slates"):
        lines.append(b"")
    return JsonRecord(lines, weight)


@dataclass
class Translated:
    """A block of JSON lines as VW text, with where each text line came from."""

    data: bytes
    lines: np.ndarray
    """int64: the source line number of each text line."""
    weights: np.ndarray
    """float64: the importance weight of each text line (DSJSON's pdrop)."""
    errors: list[tuple[int, str, bytes]]
    """(line number, reason, the line's first bytes) of the lines refused."""
    status: np.ndarray | None = None
    """int32: the status a text line's row must take (0: the parser's; :func:`json_block`)."""


def translate(data: bytes, first_line: int, opts: JsonOptions) -> Translated:
    """Every JSON line of ``data`` (whole lines, the first numbered ``first_line``) as VW text."""
    out: list[bytes] = []
    where: list[int] = []
    weights: list[float] = []
    errors: list[tuple[int, str, bytes]] = []
    for k, raw in enumerate(data.split(b"\n")):
        if not raw.strip():
            continue
        n = first_line + k
        try:
            rec = read_record(raw, opts)
        except JsonLineError as e:
            errors.append((n, _printable(str(e)), raw[:60]))
            continue
        if rec is None:
            continue
        out.extend(rec.lines)
        where.extend([n] * len(rec.lines))
        weights.extend([rec.weight] * len(rec.lines))
    text = b"\n".join(out) + (b"\n" if out else b"")
    return Translated(text, np.array(where, dtype=np.int64), np.array(weights), errors)


# --------------------------------------------------------------------------- blocks


def _label_kind(inter: object) -> str:
    """The label kind the run reads (the parse options' ``label_kind``; simple without one)."""
    code = getattr(inter, "label_kind", 0)
    if isinstance(code, str):
        return code
    return {0: "simple", 1: "cs", 2: "cb"}.get(int(code), "simple")


def json_block(block: Block, dsjson: bool, inter: object = None) -> tuple[Block, Translated]:
    """``block``'s JSON lines as a block of VW text (first line 1), and where each line came from.

    A refused line (and a line the reader skipped for its length) stands in the text as
    one line VW's text reader refuses, so that it is a malformed row of the batch; its
    status and line number are put right by :func:`restore`.
    """
    opts = JsonOptions(
        dsjson=dsjson,
        chain_hash=bool(getattr(inter, "chain_hash", False)),
        kind=_label_kind(inter),
        numbers="vw" if getattr(inter, "vw_numbers", False) else "exact",
        hash_seed=int(getattr(inter, "hash_seed", 0)),
    )
    data = bytes(block.data)
    tr = translate(data, block.first_line, opts)
    long = {n: (length, head) for n, length, head in block.long_lines}
    errors = [(n, reason, head) for n, reason, head in tr.errors]
    errors += [(n, "line longer than --max-line-bytes", head) for n, (_, head) in long.items()]
    if errors:
        # put the stand-ins where their lines were
        rows: list[tuple[int, int, bytes, float, int]] = []
        text_lines = tr.data.split(b"\n")[:-1] if tr.data else []
        for k, (n, line) in enumerate(zip(tr.lines.tolist(), text_lines, strict=True)):
            rows.append((n, k, line, float(tr.weights[k]), 0))
        sep = [b""] if opts.kind in ("cb", "ccb", "slates") else []
        for j, (n, reason, head) in enumerate(sorted(errors)):
            code = LONG_LINE if n in long else BAD_JSON
            stand_in = b"json-error: " + reason.encode(errors="replace") + b": " + head
            stand_in = stand_in.replace(b"\n", b" ").replace(b"\r", b" ")
            rows.append((n, -1 - j, stand_in, 1.0, code))
            for s in sep:
                rows.append((n, -1 - j, s, 1.0, 0))
        rows.sort(key=lambda r: (r[0], r[1] >= 0, abs(r[1])))
        text = b"".join(r[2] + b"\n" for r in rows)
        tr = Translated(text, np.array([r[0] for r in rows], dtype=np.int64),
                        np.array([r[3] for r in rows]), tr.errors)  # fmt: skip
        tr.status = np.array([r[4] for r in rows], dtype=np.int32)
    else:
        tr.status = np.zeros(tr.lines.shape[0], dtype=np.int32)
    buf = np.frombuffer(tr.data, dtype=np.uint8) if tr.data else np.zeros(0, dtype=np.uint8)
    out = Block(buf, block.source, 1, live=block.live, newlines=tr.data.count(b"\n"))
    return out, tr


def restore(batch: Batch, tr: Translated, fmt: int) -> Batch:
    """A batch of translated text with the JSON lines' numbers, statuses and weights."""
    if batch.n == 0:
        return dataclasses.replace(batch, fmt=fmt)
    k = batch.line - 1
    line = tr.lines[k]
    status = batch.status.copy()
    forced = tr.status[k]
    status[forced != 0] = forced[forced != 0]
    weights = batch.weights * np.where(status == 0, tr.weights[k], 1.0)
    return dataclasses.replace(batch, line=line, status=status, weights=weights, fmt=fmt)


def parse_json_block(block: Block, dsjson: bool, bits: int, constant: bool, inter: object,
                     words: bool, limit: float, budget: int | None):  # fmt: skip
    """:func:`~streamlearn.io.parse.parse_block_parts` for a block of JSON lines."""
    from streamlearn.io.parse import FMT_DSJSON, FMT_JSON, FMT_VW, parse_block_parts

    fmt = FMT_DSJSON if dsjson else FMT_JSON
    text, tr = json_block(block, dsjson, inter)
    first, rest = parse_block_parts(text, FMT_VW, bits, constant, inter, words, limit, budget)
    if rest is None:
        return restore(first, tr, fmt), None

    def more():  # noqa: ANN202
        for b in rest():
            yield restore(b, tr, fmt)

    return restore(first, tr, fmt), more


def restore_examples(ex, tr: Translated):  # noqa: ANN001, ANN201
    """:func:`restore` for multiline examples (:func:`streamlearn.io.multiline.parse_examples`)."""
    b = ex.batch
    if b.n == 0:
        return ex
    k = b.line - 1
    forced = tr.status[k]
    b.status[forced != 0] = forced[forced != 0]
    b.line = tr.lines[k]
    return ex
