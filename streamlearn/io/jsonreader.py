"""VW's JSON reader: the examples of one decoded JSON line, their features as VW text.

:class:`JsonReader` walks a line's value (:func:`streamlearn.io.jsondecode.decode_line`) as
VW's ``json_parser/src/parse_example_json.cc`` reads it (VW 9.11; recursive instead of
event-driven) and gives its :class:`Example` objects: the label read, and each feature
written as VW text the moment it is read, so that the text parser hashes it as VW does:

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
  ``_multi``, ``_slots``, ``_a``/``_p``); any other such key is skipped with its value.
* **Exact hashes.**  A feature whose name cannot be written in VW text (it holds
  a space, ``:`` or ``|``, or is chain-hashed) is written as a decimal name:
  VW hashes a name of digits as its value plus the namespace's hash, so the
  decimal ``(h - hash(ns)) mod 2^32`` gives exactly the hash ``h``.  Values are
  written so that the reader gets the same float32 (:func:`value_text`: ``e+0``
  forces VW's exact path where its fast reader would round differently).
* **Labels.**  ``_label`` (a number, a text label, or an object with
  ``Label``/``Weight``/``Initial`` or ``Action``/``Cost``/``Probability``) and
  ``_label_<Property>`` keys; the cb label goes on the action ``_labelIndex``
  (0-based among the actions) when the line ends.  ``_tag`` sets the tag.  CCB and
  slates records (``--ccb_explore_adf``, ``--slates``): ``_slots``, a slot's outcome
  (``_a``, ``_p``), ``_inc``, ``_slot_id``.

The label line of each example is :func:`streamlearn.io.vwjson.read_record`'s.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from streamlearn.hashing import hashstring_py as _hashstring
from streamlearn.io.jsondecode import JsonLineError, JsonObject, number_f32, string_bytes

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
M32 = 0xFFFFFFFF
_ESCAPE = bytes.maketrans(b" \t|:", b"____")
_TEXT_ESCAPE = bytes.maketrans(b":|", b"__")


# --------------------------------------------------------------------------- numbers as text


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


class Example:
    """One example of a line: its label, and its features already written as VW text.

    ``feats``: group -> [the group's text so far (each namespace switch a ``" |name"``,
    each feature a ``" token"``), the text namespace last written]; ``groups`` the
    groups in VW's order.  :meth:`seal` joins them into ``body`` once the example's
    object is closed, so that a record of many actions keeps little more than its text.
    """

    __slots__ = ("feats", "groups", "body", "shared", "costs", "simple", "label_text", "tag",
                 "role", "out_cost", "out_actions", "out_probs", "include", "slot_id",
                 "labeled", "named")  # fmt: skip

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
        self.named: dict[int, list] | list | None = None  # JsonReader(named=True): VW's names

    def seal(self) -> None:
        """Join the features' text into ``body`` (no feature comes after); the names, when
        read, into one list in VW's order (its namespaces', then each one's)."""
        if self.body is None:
            feats = self.feats or {}
            groups = self.groups or ()
            if isinstance(self.named, dict):
                self.named = [f for g in groups for f in self.named.get(g, ())]
            self.body = b"".join([bytes(feats[g][0]) for g in groups]) if groups else b" |"
            self.feats = self.groups = None


@functools.lru_cache(maxsize=1 << 16)
def expressible(name: bytes) -> bool:
    """Whether ``name`` can stand in VW text as it is: no space, control byte, ``:`` or
    ``|``, and not empty (remembered: a log's names repeat)."""
    return len(name) > 0 and all(c > 0x20 and c not in (0x3A, 0x7C) for c in name)


@functools.lru_cache(maxsize=1 << 16)
def hashstring_py(name: bytes, seed: int) -> int:
    """VW's hash of ``name`` under ``seed`` (:func:`streamlearn.hashing.hashstring_py`),
    remembered: a log's names and namespaces repeat, and hashing them in Python was a third
    of the time of reading DSJSON."""
    return _hashstring(name, seed)


class JsonReader:
    """VW's JSON state machine, over a parsed line (recursive instead of event-driven)."""

    def __init__(self, kind: str, chain_hash: bool, hash_seed: int, numbers: str = "vw",
                 named: bool = False) -> None:  # fmt: skip
        self.kind = kind
        self.chain = chain_hash
        self.seed = hash_seed
        self.numbers = numbers
        self.named = named
        """Keep each example's features as VW names them too (``Example.named``: its 32-bit
        hash, ``ns^name`` as VW's audit and ``--invert_hash`` print it, its namespace's
        byte, its value), for ``--audit`` and ``--invert_hash`` of JSON input."""
        self.examples: list[Example] = [Example()]
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

    def add(self, h: int, value: float, natural: bytes | None, name: bytes | None = None,
            str_value: bytes | None = None) -> None:  # fmt: skip
        """The feature of hash ``h``, written now: ``natural`` (its name) where VW text
        hashes it to ``h``, else the decimal that does (module docstring); ``name`` (and a
        chain-hashed string's ``str_value``): VW's name of it (kept with :attr:`named`)."""
        ns = self.path[-1]
        if ns.group >= 0x80:
            # VW indexes its namespaces by a signed char: a name starting with a non-ASCII
            # byte writes its features before the example's arrays, and they are never read
            return
        if self.named:
            self._name(ns, h, value, name if name is not None else natural, str_value)
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

    def _name(self, ns: _Ns, h: int, value: float, name: bytes | None,
              str_value: bytes | None) -> None:  # fmt: skip
        """Keep the feature as VW names it: ``ns^name`` (the default namespace's without
        it), ``^str_value`` after a chain-hashed string's, which its n-grams leave out."""
        ex = self.ex
        if ex.named is None:
            ex.named = {}
        base = name or b""
        if ns.name != b" ":
            base = ns.name + b"^" + base
        full = base + b"^" + str_value if str_value is not None else base
        ex.named.setdefault(ns.group, []).append(
            (h & M32, full.decode("utf-8", "surrogateescape"), ns.group, float(value),
             base.decode("utf-8", "surrogateescape")))  # fmt: skip

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
        f = number_f32(v)
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

    def label_end(self, ex: Example) -> None:
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
        if not isinstance(obj, JsonObject):
            raise JsonLineError("_label object expected")
        self.ex.costs = None
        self.ex.simple = None
        for k, v in obj:
            if isinstance(v, JsonObject | list):
                raise JsonLineError("nested value in a _label object")
            self.label_property(k, v)
        self.label_end(self.ex)

    def label(self, v: object) -> None:
        if isinstance(v, JsonObject):
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
                self.ex.label_text = value_text(number_f32(v))
            elif self.kind == "multiclass":
                self.ex.label_text = str(int(number_f32(v)) & M32)
            else:
                raise JsonLineError(f"a numeric _label does not apply to {self.kind} labels")
        else:
            raise JsonLineError("_label must be a number, a string or an object")

    # -- objects, as VW's DefaultState
    def obj(self, pairs: JsonObject, name: bytes) -> None:
        self.push(name)
        for key, v in pairs:
            self.member(key, v)
        self.pop()

    def member(self, key: str, v: object) -> None:
        kb = string_bytes(key)
        if kb.startswith(b"_"):
            self.special(key, kb, v)
            return
        if v is None:
            return
        if isinstance(v, bool):
            if v:
                ns = self.path[-1]
                self.add(hashstring_py(kb, ns.hash), 1.0, kb if expressible(kb) else None, kb)
            return
        if isinstance(v, str):
            vb = string_bytes(v).translate(_ESCAPE)
            ns = self.path[-1]
            if self.chain:
                h = hashstring_py(vb, hashstring_py(kb, ns.hash))
                self.add(h, 1.0, None, kb, vb)
            else:
                name = kb + vb
                self.add(hashstring_py(name, ns.hash), 1.0, name if expressible(name) else None,
                         name)  # fmt: skip
            return
        if isinstance(v, int | float):
            f = number_f32(v)
            if f != 0.0:
                ns = self.path[-1]
                self.add(hashstring_py(kb, ns.hash), f, kb if expressible(kb) else None, kb)
            return
        if isinstance(v, JsonObject):
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
            if isinstance(it, JsonObject):
                self.obj(it, self.path[-1].name)
                continue
            if isinstance(it, list):
                raise JsonLineError("nested arrays are not supported")
            f = number_f32(it)
            if f != 0.0:
                self.add(base + i, f, str(i).encode(), b"[%d]" % i)
            i += 1
        items.clear()  # (read: its text is kept, its numbers go)
        self.pop()

    def special(self, key: str, kb: bytes, v: object) -> None:
        if kb.startswith(b"_label"):
            if len(kb) >= 7 and kb[6:7] == b"_":
                if isinstance(v, JsonObject):
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
            for word in string_bytes(v).translate(_TEXT_ESCAPE).replace(b"\t", b" ").split(b" "):
                if word:
                    ok = expressible(word)
                    self.add(hashstring_py(word, ns.hash), 1.0, word if ok else None, word)
            return
        if key == "_multi":
            self.multi(v)
            return
        if key.lower() == "_tag":
            if not isinstance(v, str):
                raise JsonLineError("_tag must be a string")
            self.ex.tag += string_bytes(v)
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
        self.ex.out_probs = [number_f32(x) for x in vals]

    def slots(self, v: object) -> None:
        """``_slots``: one slot example per object (CCB, slates)."""
        if not isinstance(v, list):
            raise JsonLineError("_slots must be an array of objects")
        shared = self.ex
        for k, item in enumerate(v):
            if item is None:
                continue
            if not isinstance(item, JsonObject):
                raise JsonLineError("_slots must be an array of objects")
            self.ex = Example(role="slot")
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
            if not isinstance(item, JsonObject):
                raise JsonLineError("_multi must be an array of objects")
            self.ex = Example(role="action" if self.kind in ("ccb", "slates") else "")
            self.examples.append(self.ex)
            self.obj(item, b" ")
            self.ex.seal()
            v[k] = None  # (read: its text is kept, its objects go)
        self.ex = shared

    # -- a whole line
    def root(self, pairs: JsonObject) -> None:
        self.obj(pairs, b" ")
        self.finish()

    def finish(self) -> None:
        if self.kind in ("ccb", "slates"):
            # VW: a CCB record with a cb label and no slots is one slot with that outcome
            if (self.kind == "ccb" and self.found_cb
                    and not any(ex.role == "slot" for ex in self.examples)):  # fmt: skip
                slot = Example(role="slot", out_cost=self.cb[1],
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


def _text_ns(name: bytes, group: int, seed: int) -> tuple[bytes, int]:
    """The text namespace that writes features of namespace ``name`` and its hash."""
    if name == b" " or group == 0x20:
        return b"", 0
    if expressible(name):
        return name, hashstring_py(name, seed)
    if group <= 0x20 or group in (0x3A, 0x7C):
        raise JsonLineError(f"namespace name {name!r} cannot be written in VW text")
    g = bytes([group])
    return g, hashstring_py(g, seed)
