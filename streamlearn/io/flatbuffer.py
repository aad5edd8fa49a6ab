"""VW's flatbuffer input (``sl vw --flatbuffer``), read as the VW text it stands for.

A flatbuffer file (VW's ``utl/flatbuffer`` converter writes them) is a sequence of
size-prefixed ``ExampleRoot`` objects of VW's schema
(``vowpalwabbit/fb_parser/schema/example.fbs``): each a 4-byte little-endian length and
that many bytes, holding one ``Example``, one ``MultiExample`` (the lines of a multiline
example) or an ``ExampleCollection`` (many of either).  :func:`flatbuffer_blocks` reads
them from an open source and gives :class:`~streamlearn.io.batch.Block` s of the VW text
lines that make the same examples, which the ordinary text path then parses
(:mod:`streamlearn.io.parse`, :mod:`streamlearn.io.multiline`), as JSON lines are
translated by :mod:`streamlearn.io.vwjson`:

* an ``Example`` is one line: its label in VW's text form for its label type (simple,
  CB, CB_EVAL, multiclass, multilabel, cost-sensitive, CCB, slates, continuous), its tag
  as ``'tag``, then one ``|c`` segment per namespace (``| `` for index 32, the default
  namespace); an example marked ``is_newline`` is an empty line;
* a ``MultiExample`` is its examples' lines and an empty line, as VW's parser ends one.

Features: VW's converter stores each feature's hashed index (``feature_hashes``, the
index VW's text parser computed, before the reductions' offsets) and no name.  An index
``h`` is written as the all-digit name ``(h - s) mod 2**32`` in a namespace whose hash
is ``s``: VW's text hashing reads an all-digit name as its value plus the namespace's
hash (:func:`streamlearn.hashing.hashstring_py`), so the parser gives back ``h`` exactly,
masked to the table as VW masks it; n-grams, interactions and namespace filters then act
on the same indices and namespace letters as VW's.  A namespace that carries only
feature names (``feature_names``) has its indices computed here as VW's flatbuffer
parser does (the name hashed with the namespace's ``full_hash``, else the hash of its
``name``, else the hash of the namespace before it) and written the same way.  Values
are written so that both of sl's number readers give back the stored float32 exactly
(an integer as it is; anything else as its exact decimal followed by ``e+0``, which VW's
reader hands to ``strtof``: :mod:`streamlearn.io.vwfloat`).  Line numbers in messages
count these text lines.

Every offset is checked against the object before it is followed, every object is
bounded by the reader's line cap (``--max-line-bytes``) before it is read, and so is
every line made: a truncated or damaged file is a :class:`FlatbufferError`, one line
naming the file and the object, never a crash or an allocation larger than the cap.
Differences from VW, which no text line can say: a feature of value 0 is dropped (VW's
converter never writes one), label weights of CB and CCB labels are 1, and a tag or a
name holding a space, ``|`` or a line break is refused.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import mmh3
import numpy as np

from streamlearn.hashing import hashstring_py
from streamlearn.io.batch import Block
from streamlearn.system.sources import Source, SourceError, describe

__all__ = ["FlatText", "FlatbufferError", "flatbuffer_blocks", "number", "root_lines"]

FLT_MAX = float(np.finfo(np.float32).max)
_M32 = 0xFFFFFFFF
_READ = 1 << 20
"""Bytes read at a time: an object's buffer grows with what arrives, never ahead of it."""


class FlatbufferError(SourceError):
    """A flatbuffer input that cannot be read: the message names the source and object."""


class _Bad(Exception):
    """A damaged object (the reader adds the source and the object's number)."""


@dataclass(frozen=True)
class FlatText:
    """How flatbuffer examples become VW text: the options that decide their hashes."""

    hash_seed: int = 0
    """VW's ``--hash_seed``: the seed of the namespaces' hashes."""


# ---------------------------------------------------------------------------
# reading the tables, every offset checked


class _View:
    """One object's bytes, read as flatbuffer tables, vectors and strings."""

    __slots__ = ("b", "n")

    def __init__(self, b: bytes) -> None:
        self.b = b
        self.n = len(b)

    def check(self, pos: int, size: int) -> None:
        if pos < 0 or size < 0 or pos + size > self.n:
            raise _Bad(f"an offset points outside the object ({pos}+{size} of {self.n} bytes)")

    def scalar(self, fmt: str, pos: int):  # noqa: ANN201 - int or float, by fmt
        self.check(pos, struct.calcsize(fmt))
        return struct.unpack_from(fmt, self.b, pos)[0]

    def table(self, pos: int) -> tuple[int, tuple[int, ...]]:
        """The table at ``pos``: its position and its fields' offsets (0: absent)."""
        vt = pos - self.scalar("<i", pos)
        vsize, tsize = self.scalar("<H", vt), self.scalar("<H", vt + 2)
        if vsize < 4 or vsize % 2 or tsize < 4:
            raise _Bad(f"a table's vtable is damaged (sizes {vsize}, {tsize})")
        self.check(vt, vsize)
        self.check(pos, tsize)
        offs = struct.unpack_from(f"<{(vsize - 4) // 2}H", self.b, vt + 4)
        if any(o and (o < 4 or o >= tsize) for o in offs):
            raise _Bad("a table's field lies outside the table")
        return pos, offs

    def field(self, t: tuple[int, tuple[int, ...]], i: int) -> int | None:
        pos, offs = t
        return pos + offs[i] if i < len(offs) and offs[i] else None

    def get(self, t: tuple[int, tuple[int, ...]], i: int, fmt: str, default=0):  # noqa: ANN001, ANN201
        p = self.field(t, i)
        return default if p is None else self.scalar(fmt, p)

    def ref(self, p: int) -> int:
        """The position an offset field at ``p`` points to."""
        return p + self.scalar("<I", p)

    def sub(self, t: tuple[int, tuple[int, ...]], i: int) -> tuple[int, tuple[int, ...]] | None:
        """The table field ``i`` of ``t`` refers to (None: absent)."""
        p = self.field(t, i)
        return None if p is None else self.table(self.ref(p))

    def vector(self, t: tuple[int, tuple[int, ...]], i: int, size: int) -> tuple[int, int] | None:
        """Field ``i`` of ``t`` as a vector of ``size``-byte items: (start, count)."""
        p = self.field(t, i)
        if p is None:
            return None
        q = self.ref(p)
        n = self.scalar("<I", q)
        self.check(q + 4, n * size)
        return q + 4, n

    def tables(self, t: tuple[int, tuple[int, ...]], i: int) -> list[tuple[int, tuple[int, ...]]]:
        """Field ``i`` of ``t`` as a vector of tables (absent: none)."""
        v = self.vector(t, i, 4)
        if v is None:
            return []
        start, n = v
        return [self.table(self.ref(start + 4 * k)) for k in range(n)]

    def array(self, t: tuple[int, tuple[int, ...]], i: int, dtype: str) -> np.ndarray | None:
        v = self.vector(t, i, np.dtype(dtype).itemsize)
        return None if v is None else np.frombuffer(self.b, dtype, v[1], v[0])

    def string(self, t: tuple[int, tuple[int, ...]], i: int) -> bytes | None:
        v = self.vector(t, i, 1)
        return None if v is None else self.b[v[0] : v[0] + v[1]]

    def strings(self, t: tuple[int, tuple[int, ...]], i: int) -> list[bytes] | None:
        v = self.vector(t, i, 4)
        if v is None:
            return None
        out = []
        for k in range(v[1]):
            q = self.ref(v[0] + 4 * k)
            n = self.scalar("<I", q)
            self.check(q + 4, n)
            out.append(self.b[q + 4 : q + 4 + n])
        return out


# ---------------------------------------------------------------------------
# numbers and labels as VW text

_FLOATS: dict[float, str] = {}


def number(x: float) -> str:
    """``x`` (a float32 value) as text that VW's reader and sl's exact one both read back
    exactly: an integer as it is, anything else as its exact decimal with ``e+0``.

    >>> number(3.0), number(0.5), number(float(np.float32(0.1)))
    ('3', '0.5e+0', '0.10000000149011612e+0')
    """
    if x == x and abs(x) < 1 << 24 and x == int(x):
        return str(int(x))
    s = _FLOATS.get(x)
    if s is None:
        if x != x or abs(x) == float("inf"):
            s = "nan" if x != x else ("inf" if x > 0 else "-inf")  # (malformed, as in text)
        else:
            s = np.format_float_positional(x, unique=True, trim="-") + "e+0"
        if len(_FLOATS) > 1 << 16:
            _FLOATS.clear()
        _FLOATS[x] = s
    return s


def _word(b: bytes, what: str) -> str:
    """A name or tag that VW text can hold as one token."""
    if not b or any(c <= 0x20 or c == 0x7C for c in b):
        raise _Bad(f"{what} {b!r} cannot be written as VW text (empty, or a space, '|' or "
                   "a control character in it)")  # fmt: skip
    return b.decode("utf-8", "surrogateescape")


def _f32(v: _View, t, i: int) -> float:  # noqa: ANN001
    return float(v.get(t, i, "<f", 0.0))


def _cb(v: _View, t) -> str:  # noqa: ANN001
    """A CBLabel's costs: ``shared``, ``a``, or ``a:cost:probability`` each."""
    words = []
    for c in v.tables(t, 1):
        cost, action, prob = _f32(v, c, 0), v.get(c, 1, "<I"), _f32(v, c, 2)
        if prob == -1.0:
            words.append("shared")
        elif cost == FLT_MAX and prob == 0.0:
            words.append(str(action))
        else:
            words.append(f"{action}:{number(cost)}:{number(prob)}")
    return " ".join(words)


def _scores(v: _View, t, i: int) -> list[tuple[int, float]]:  # noqa: ANN001
    return [(v.get(a, 0, "<I"), _f32(v, a, 1)) for a in v.tables(t, i)]


def _ccb(v: _View, t) -> str:  # noqa: ANN001
    kind = v.get(t, 0, "<b")
    if kind == 1:
        return "ccb shared"
    if kind == 2:
        return "ccb action"
    if kind != 3:
        return ""
    words = ["ccb", "slot"]
    out = v.sub(t, 1)
    if out is not None:
        probs = _scores(v, out, 1)
        if probs:
            (a0, p0), rest = probs[0], probs[1:]
            words.append(",".join([f"{a0}:{number(_f32(v, out, 0))}:{number(p0)}",
                                   *(f"{a}:{number(p)}" for a, p in rest)]))  # fmt: skip
    inc = v.array(t, 2, "<u4")
    if inc is not None and inc.size:
        words.append(",".join(map(str, inc.tolist())))
    return " ".join(words)


def _slates(v: _View, t) -> str:  # noqa: ANN001
    kind = v.get(t, 0, "<b")
    if kind == 1:
        return "slates shared" + (f" {number(_f32(v, t, 3))}" if v.get(t, 2, "<B") else "")
    if kind == 2:
        return f"slates action {v.get(t, 4, '<I')}"
    if kind == 3:
        probs = _scores(v, t, 5)
        return "slates slot" + (" " + ",".join(f"{a}:{number(p)}" for a, p in probs)
                                if probs else "")  # fmt: skip
    raise _Bad(f"a slates label of unknown type {kind}")


def _label(v: _View, ex) -> str:  # noqa: ANN001
    """An Example's label as VW text ('' for none)."""
    kind = v.get(ex, 1, "<B")
    t = v.sub(ex, 2)
    if kind in (0, 8) or t is None:  # NONE, no_label (or a label type without its table)
        return ""
    if kind == 1:  # SimpleLabel
        label, weight, initial = _f32(v, t, 0), _f32(v, t, 1), _f32(v, t, 2)
        if label == FLT_MAX:
            return ""
        words = [number(label)]
        if weight != 1.0 or initial != 0.0:
            words.append(number(weight))
        if initial != 0.0:
            words.append(number(initial))
        return " ".join(words)
    if kind == 2:  # CBLabel
        return _cb(v, t)
    if kind == 3:  # CCBLabel
        return _ccb(v, t)
    if kind == 4:  # MultiClass
        name = v.string(t, 0)
        label, weight = v.get(t, 1, "<I"), _f32(v, t, 2)
        if name:
            word = _word(name, "a named label")
        elif label == _M32:
            return ""
        else:
            word = str(label)
        return word if weight == 1.0 else f"{word} {number(weight)}"
    if kind == 5:  # MultiLabel
        labels = v.array(t, 0, "<u4")
        return "" if labels is None else ",".join(map(str, labels.tolist()))
    if kind == 6:  # CB_EVAL_Label
        event = v.sub(t, 1)
        cb = "" if event is None else _cb(v, event)
        return f"{v.get(t, 0, '<I')} {cb}".rstrip()
    if kind == 7:  # CS_Label
        costs = [(_f32(v, c, 0), v.get(c, 3, "<I")) for c in v.tables(t, 0)]
        if len(costs) == 1 and costs[0][0] == -FLT_MAX:
            return "shared"
        return " ".join(str(k) if x == FLT_MAX else f"{k}:{number(x)}" for x, k in costs)
    if kind == 9:  # Slates_Label
        return _slates(v, t)
    if kind == 10:  # ContinuousLabel
        costs = [(_f32(v, c, 0), _f32(v, c, 1), _f32(v, c, 2)) for c in v.tables(t, 0)]
        return "ca " + " ".join(f"{number(a)}:{number(c)}:{number(p)}" for a, c, p in costs)
    raise _Bad(f"an example's label has unknown type {kind}")


# ---------------------------------------------------------------------------
# examples as lines


class _Lines:
    """The text lines of a stream of examples; keeps VW's namespace-hash state."""

    def __init__(self, opts: FlatText, max_line: int) -> None:
        self.seed = opts.hash_seed & _M32
        self.max_line = max_line
        self.c_hash = 0
        """VW's current namespace hash: a namespace with neither ``full_hash`` nor ``name``
        hashes its feature names with the one before it (as VW's parser does)."""
        self.written: dict[int, tuple[str, int]] = {}

    def _segment(self, index: int) -> tuple[str, int]:
        """The text that opens namespace ``index`` and the hash sl's parser gives it."""
        seg = self.written.get(index)
        if seg is None:
            if index == 32:  # the default namespace: hash 0, or VW's hash of "" with a seed
                seg = ("| ", 0 if self.seed == 0 else mmh3.hash(b"", self.seed, signed=False))
            elif index < 0x20 or index in (0x3A, 0x7C, 0x7F):
                raise _Bad(f"a namespace of index {index} cannot be written as VW text")
            else:
                b = bytes([index])
                seg = ("|" + b.decode("utf-8", "surrogateescape") + " ",
                       hashstring_py(b, self.seed))  # fmt: skip
            self.written[index] = seg
        return seg

    def namespace(self, v: _View, t) -> str:  # noqa: ANN001
        name = v.string(t, 0)
        index = (name[0] if name else 0) if name is not None else v.get(t, 1, "<B")
        full = v.field(t, 2)
        if full is not None:
            self.c_hash = v.scalar("<Q", full) & _M32
        elif name is not None:
            self.c_hash = hashstring_py(name, self.seed)
        values = v.array(t, 4, "<f4")
        if values is None or not values.size:
            raise _Bad("a namespace has no feature values")
        hashes = v.array(t, 5, "<u8")
        names = v.strings(t, 3)
        if hashes is not None and hashes.size:
            if hashes.size != values.size:
                raise _Bad(f"a namespace has {hashes.size} feature hashes for {values.size} "
                           "values")  # fmt: skip
            idx = (hashes & np.uint64(_M32)).astype(np.int64)
        elif names:
            if len(names) != values.size:
                raise _Bad(f"a namespace has {len(names)} feature names for {values.size} "
                           "values")  # fmt: skip
            idx = np.array([hashstring_py(n, self.c_hash) for n in names], dtype=np.int64)
        else:
            raise _Bad("a namespace has neither feature hashes nor feature names")
        head, nsh = self._segment(index)
        words = ((idx - nsh) & _M32).tolist()
        if (values == 1.0).all():
            return head + " ".join(map(str, words))
        out = [str(w) if x == 1.0 else f"{w}:{number(x)}"
               for w, x in zip(words, values.tolist(), strict=True)]  # fmt: skip
        return head + " ".join(out)

    def example(self, v: _View, ex) -> str:  # noqa: ANN001
        """One Example as a line (without its newline); '' for a newline example."""
        if v.get(ex, 4, "<B"):
            return ""
        parts = [_label(v, ex)]
        tag = v.string(ex, 3)
        if tag:
            parts.append("'" + _word(tag, "a tag"))
        size = sum(map(len, parts))
        segs = []
        for ns in v.tables(ex, 0):
            seg = self.namespace(v, ns)
            size += len(seg) + 1
            if size > self.max_line:
                raise _Bad(f"an example makes a line longer than {self.max_line} bytes "
                           "(--max-line-bytes)")  # fmt: skip
            segs.append(seg)
        head = " ".join(p for p in parts if p)
        return (head + " " if head else "") + (" ".join(segs) if segs else "|")

    def root(self, v: _View) -> Iterator[list[str]]:
        """The lines of one ExampleRoot, by example (a multiline example's end with '')."""
        root = v.table(v.scalar("<I", 0))
        kind = v.get(root, 0, "<B")
        obj = v.sub(root, 1)
        if obj is None or kind not in (1, 2, 3):
            raise _Bad(f"a root holds no example (type {kind})")
        if kind == 1:
            yield [self.example(v, obj)]
        elif kind == 3:
            yield self.multi(v, obj)
        elif v.get(obj, 2, "<B"):  # a collection of multiline examples
            for m in v.tables(obj, 1):
                yield self.multi(v, m)
        else:
            for ex in v.tables(obj, 0):
                yield [self.example(v, ex)]

    def multi(self, v: _View, m) -> list[str]:  # noqa: ANN001
        return [*(self.example(v, ex) for ex in v.tables(m, 0)), ""]


def root_lines(data: bytes, opts: FlatText = FlatText(), max_line: int = 1 << 26) -> list[str]:
    """The VW text lines of one ExampleRoot's bytes (without its size prefix).

    Raises :class:`FlatbufferError` for damaged bytes.
    """
    lines = _Lines(opts, max_line)
    try:
        return [line for unit in lines.root(_View(data)) for line in unit]
    except _Bad as e:
        raise FlatbufferError(f"not a VW flatbuffer example: {e}") from None


# ---------------------------------------------------------------------------
# sources to blocks


def _read(source: Source, n: int) -> bytes:
    """Up to ``n`` bytes of ``source`` (fewer only at its end), read as they arrive."""
    buf = bytearray()
    chunk = bytearray(min(n, _READ))
    view = memoryview(chunk)
    while len(buf) < n:
        want = min(n - len(buf), _READ)
        try:
            got = source.readinto(view[:want])
        except OSError as e:
            raise SourceError(f"cannot read {source.name}: {describe(e)}") from None
        if not got:
            break
        buf += chunk[:got]
    return bytes(buf)


def flatbuffer_blocks(source: Source, block_size: int, max_line: int,
                      opts: FlatText) -> Iterator[Block]:  # fmt: skip
    """Blocks of VW text lines made from the flatbuffer objects of one open source.

    A block is handed on when it holds ``block_size`` bytes or more (after a whole
    example, so a multiline example is never split), at the end of the source, and --
    for a live source -- when no more input is waiting.  An object larger than
    ``max_line`` bytes, a truncated one, or a damaged one is a :class:`FlatbufferError`.
    """
    name = source.name
    lines = _Lines(opts, max_line)
    out: list[str] = []
    size = 0
    first_line = 1
    count = 0
    offset = 0

    def block(live: bool) -> Block:
        nonlocal out, size, first_line
        text = "\n".join(out) + "\n"
        data = np.frombuffer(text.encode("utf-8", "surrogateescape"), dtype=np.uint8)
        b = Block(data.copy(), name, first_line, live=live, newlines=len(out))
        first_line += len(out)
        out, size = [], 0
        return b

    while True:
        head = _read(source, 4)
        if not head:
            break
        count += 1
        where = f"{name}: flatbuffer object {count} (byte {offset})"
        if len(head) < 4:
            raise FlatbufferError(f"{where}: the file ends inside its size prefix (truncated?)")
        n = int.from_bytes(head, "little")
        if n > max_line:
            raise FlatbufferError(f"{where}: its size prefix says {n} bytes, more than "
                                  f"--max-line-bytes ({max_line}): not a VW flatbuffer file, "
                                  "or raise --max-line-bytes")  # fmt: skip
        data = _read(source, n)
        if len(data) < n:
            raise FlatbufferError(f"{where}: the file ends after {len(data)} of its {n} bytes "
                                  "(truncated?)")  # fmt: skip
        offset += 4 + n
        try:
            v = _View(data)
            for unit in lines.root(v):
                out.extend(unit)
                size += sum(map(len, unit)) + len(unit)
                if size >= block_size:
                    yield block(False)
        except _Bad as e:
            raise FlatbufferError(f"{where}: not a VW flatbuffer example: {e}") from None
        if out and source.live and not source.more_within(0.0):
            yield block(True)
    if out:
        yield block(False)
