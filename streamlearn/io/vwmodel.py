"""Vowpal Wabbit's binary model files: bytes to a header and arrays, and back.

The byte codec only: what the options mean for sl (learner, table columns,
counters) is :mod:`streamlearn.model`'s business (``model_vw``).  Facts below
were read from VW 9.11's ``parse_regressor.cc`` (the header), ``gd.cc``
(``save_load``, ``save_load_online_state_gd``) and ``io_buf.h``; every
integer and float is little-endian.

Header (``save_load_header``)::

    u32 n, n bytes     version string with its NUL ("9.11.9\\0")
    u32 n, n bytes     id with its NUL (from 8.0.3)
    'm'                one byte
    f32 f32            the label range seen (min, max)
    u32                bits
    u32                lda (0 for a linear model)
    u32 k, k x 3 bytes --ngram definitions ("2", "a2"), NUL-padded
    u32 k, k x 3 bytes --skips definitions
    u32 n, n bytes     the options VW keeps with the model (" --oaa 3 --quadratic ab"),
                       with its NUL
    u32 4, u32         checksum (from 8.0.1): murmur3_32 chained over each field read
                       after the version, seeded with the previous field's hash
                       (8.0.2 on; 8.0.1: one murmur3 over the header's bytes)

7.10.2 files hold their interactions in the header (pairs, triples, then a
list) instead of the options; they are read, and returned as ``--quadratic``,
``--cubic`` and ``--interactions`` options.

The learner's part (gd and ftrl: ``save_load``) is one byte, ``resume``, then
either the weights (``--predict_only_model``: records ``u32 slot, f32 w``)
or the resume state (:data:`RESUME_FIELDS`, some repeated per model with
``--per_model_save_load``) followed by records ``u32 slot, f32 x k`` where k
is what the learner keeps (gd: 1 to 3, ftrl 3, pistol 4, coin 6), to the end
of the file.  With ``-b`` of 31 or more a slot is a u64 (sl stops at 30).

Every length read is checked against the bytes that remain before anything
is allocated from it, so a corrupt or crafted file is one ValueError saying
what is wrong.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import mmh3
import numpy as np

WRITES = "9.0.0"
"""The format version sl writes: the layout of gd's and ftrl's state has not changed
since 9.0.0 (l1 and l2 state in the resume state), so every VW 9 reads it without
warning (VW warns about a model newer than itself)."""
OLDEST = (7, 10, 2)
"""The oldest version read (VW itself reads back to 7.6.0, with other layouts)."""
MAX_OPTIONS = 100 << 20
"""VW's own bound on the options string (100 MB)."""
MAX_RECORD = 8 + 4 * 6
"""The largest record of a slot (a u64 slot and coin's six floats)."""
MAX_FIELD = 4096
"""The longest version or id string read (VW reads at most 512 bytes)."""

_U32 = struct.Struct("<I")

RESUME_FIELDS = (
    ("initial_t", "f"), ("norm", "d*"), ("t", "d"), ("sum_loss", "d"),
    ("sum_loss_since_last_dump", "d"), ("dump_interval", "f"), ("min_label", "f"),
    ("max_label", "f"), ("weighted_labeled_examples", "d"), ("weighted_labels", "d"),
    ("weighted_unlabeled_examples", "d"), ("example_number", "Q"), ("total_features", "Q"),
    ("total_weight", "d*"), ("old_weighted_labeled_examples", "d"), ("current_pass", "Q"),
    ("l1_state", "d"), ("l2_state", "d"),
)  # fmt: skip
"""gd's resume state in file order (``save_load_online_state_gd``): ``*`` fields come once
per model with ``--per_model_save_load``, else once.  Before 9.0.0 the l1 and l2 state
are absent."""


def version_of(text: str) -> tuple[int, int, int]:
    """``"9.11.9"`` as (9, 11, 9); ValueError when it is not a version."""
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts):
        raise ValueError(f"its version {text[:40]!r} is not a VW version")
    return int(parts[0]), int(parts[1]), int(parts[2])


def sniff(prefix: bytes) -> bool:
    """Whether ``prefix`` (a file's first bytes, 8 or more) starts as a VW model: the
    length of a short version string, then its digit and dot."""
    if len(prefix) < 6:
        return False
    (n,) = _U32.unpack_from(prefix)
    return 6 <= n <= 16 and prefix[4:5].isdigit() and prefix[5:6] in b".0123456789"


@dataclass
class Header:
    """A VW model's header (:func:`read_header`, :func:`encode_header`)."""

    version: str = WRITES
    id: str = ""
    min_label: float = 0.0
    max_label: float = 0.0
    bits: int = 18
    lda: int = 0
    ngram: tuple[str, ...] = ()
    skips: tuple[str, ...] = ()
    options: str = ""
    """The options VW keeps, as one command line (" --oaa 3 --quadratic ab")."""
    end: int = 0
    """Where the learner's part starts (the header's length)."""

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        return version_of(self.version)


@dataclass
class Body:
    """The learner's part: resume state (or None) and the stored slots' floats."""

    resume: dict | None
    slots: np.ndarray
    """uint32[m], increasing."""
    values: np.ndarray
    """float32[m, k]."""
    repeats: int = 0
    """Slots the file gave more than once (the last kept, as VW)."""


class _Reader:
    """Fields read one at a time from ``data``, each checked against what remains."""

    def __init__(self, data: bytes, pos: int = 0, chained: bool = False) -> None:
        self.data = data
        self.pos = pos
        self.chained = chained
        self.hash = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"it ends inside its {what} (truncated)")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        if self.chained and n:
            self.hash = mmh3.hash(out, self.hash, signed=False)
        return out

    def u32(self, what: str) -> int:
        return _U32.unpack(self.take(4, what))[0]

    def f32(self, what: str) -> float:
        return struct.unpack("<f", self.take(4, what))[0]

    def string(self, what: str, limit: int) -> str:
        n = self.u32(what)
        if n > limit or n > len(self.data) - self.pos:
            why = "more than the file holds (truncated?)" if n <= limit else "(corrupt)"
            raise ValueError(f"its {what} claims {n} bytes, {why}")
        raw = self.take(n, what)
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def read_header(data: bytes) -> Header:
    """The header of the VW model in ``data``; ValueError says what is wrong."""
    r = _Reader(data)
    version = r.string("version", 512)
    ver = version_of(version)
    if ver < OLDEST:
        raise ValueError(f"it is a VW {version} model; sl reads VW models from "
                         f"{'.'.join(map(str, OLDEST))} on")  # fmt: skip
    h = Header(version=version)
    r.chained = ver >= (8, 0, 2)
    if ver >= (8, 0, 3):
        h.id = r.string("id", MAX_FIELD)
    if r.take(1, "model mark") != b"m":
        raise ValueError("it is not a VW model file (no model mark)")
    h.min_label = r.f32("label range")
    h.max_label = r.f32("label range")
    h.bits = r.u32("bits")
    extra = []
    if ver < (7, 10, 3):  # interactions in the header, not in the options
        for width, what in ((2, "pairs"), (3, "triples")):
            n = r.u32(what)
            if n * width > len(data) - r.pos:
                raise ValueError(f"its {what} claim more bytes than the file holds")
            for _ in range(n):
                extra.append(("--quadratic" if width == 2 else "--cubic",
                              r.take(width, what)))  # fmt: skip
        n = r.u32("interactions")
        if n * 4 > len(data) - r.pos:
            raise ValueError("its interactions claim more bytes than the file holds")
        for _ in range(n):
            k = r.u32("interaction")
            if k > 256:
                raise ValueError(f"an interaction of {k} namespaces (corrupt)")
            extra.append(("--interactions", r.take(k, "interaction")))
    h.lda = r.u32("lda")
    for attr in ("ngram", "skips"):
        n = r.u32(attr)
        if n * 3 > len(data) - r.pos:
            raise ValueError(f"its {attr} claim more bytes than the file holds (truncated?)")
        setattr(h, attr, tuple(r.take(3, attr).split(b"\0", 1)[0].decode("latin-1")
                                for _ in range(n)))  # fmt: skip
    h.options = r.string("options", MAX_OPTIONS)
    for flag, names in extra:
        if b"\0" in names or any(c <= 0x20 for c in names):
            raise ValueError("its header's interactions name unusual namespaces (unsupported)")
        h.options += f" {flag} {names.decode('latin-1')}"
    if ver >= (8, 0, 1):
        expected = r.hash if r.chained else mmh3.hash(data[: r.pos], 0, signed=False)
        if r.u32("checksum") != 4:
            raise ValueError("its checksum is not 4 bytes long (corrupt)")
        (saved,) = _U32.unpack(r.take(4, "checksum"))
        if saved != expected:
            raise ValueError("its header's checksum does not match (corrupt)")
    h.end = r.pos
    return h


def encode_header(h: Header) -> bytes:
    """The bytes of header ``h`` (written as ``h.version``, 8.0.3 or later)."""
    if version_of(h.version) < (8, 0, 3):
        raise ValueError("sl writes VW's header from 8.0.3 on")
    parts: list[bytes] = []

    def field_(raw: bytes) -> None:
        parts.append(raw)

    def string(text: str) -> None:
        raw = text.encode("utf-8") + b"\0"
        field_(_U32.pack(len(raw)))
        field_(raw)

    version = h.version.encode() + b"\0"
    head = _U32.pack(len(version)) + version
    string(h.id)
    field_(b"m")
    field_(struct.pack("<f", h.min_label))
    field_(struct.pack("<f", h.max_label))
    field_(_U32.pack(h.bits))
    field_(_U32.pack(h.lda))
    for defs in (h.ngram, h.skips):
        field_(_U32.pack(len(defs)))
        for d in defs:
            raw = d.encode("latin-1")
            if len(raw) > 3:
                raise ValueError(f"an n-gram or skip definition of more than 3 bytes: {d!r}")
            field_(raw.ljust(3, b"\0"))
    string(h.options)
    digest = 0
    for p in parts:
        digest = mmh3.hash(p, digest, signed=False)
    return head + b"".join(parts) + _U32.pack(4) + _U32.pack(digest)


def _resume_struct(models: int, version: tuple[int, int, int]) -> tuple[struct.Struct, list]:
    fmt, names = "<", []
    for name, code in RESUME_FIELDS:
        if name in ("l1_state", "l2_state") and version < (9, 0, 0):
            continue
        if code.endswith("*"):
            fmt += code[0] * models
            names += [(name, i) for i in range(models)]
        else:
            fmt += code
            names.append((name, None))
    return struct.Struct(fmt), names


def resume_size(models: int, version: tuple[int, int, int]) -> int:
    """The bytes of gd's resume state before its records."""
    return _resume_struct(models, version)[0].size


def read_body(data: bytes, h: Header, cols: int, models: int = 1) -> Body:
    """The learner's part of a gd or ftrl model after header ``h``: ``cols`` floats per
    slot in the resume state, ``models`` normalizer states (``--per_model_save_load``)."""
    pos = h.end
    if pos >= len(data):
        raise ValueError("it ends before its weights (truncated)")
    resume = data[pos] != 0
    if data[pos] not in (0, 1):
        raise ValueError(f"its resume flag is {data[pos]}, not 0 or 1 (corrupt)")
    pos += 1
    state = None
    if resume:
        s, names = _resume_struct(models, h.version_tuple)
        if pos + s.size > len(data):
            raise ValueError("it ends inside its resume state (truncated)")
        state = {}
        for (name, i), v in zip(names, s.unpack_from(data, pos), strict=True):
            if i is None:
                state[name] = v
            else:
                state.setdefault(name, []).append(v)
        pos += s.size
    else:
        cols = 1
    if h.bits > 30:
        raise ValueError(f"it has {h.bits} bits (sl's tables have 30 at most)")
    rec = np.dtype([("slot", "<u4"), ("v", "<f4", (cols,))])
    size = len(data) - pos
    if size % rec.itemsize:
        raise ValueError(f"its weights end inside a record of {rec.itemsize} bytes: truncated, "
                         f"or not the learner its options name")  # fmt: skip
    recs = np.frombuffer(data, dtype=rec, count=size // rec.itemsize, offset=pos)
    slots = recs["slot"].astype(np.uint32)
    values = recs["v"].reshape(-1, cols).astype(np.float32)
    if slots.size and int(slots.max()) >= 1 << h.bits:
        raise ValueError(f"it holds slot {int(slots.max())}, beyond its 2^{h.bits} slots (corrupt)")
    repeats = 0
    if slots.size > 1 and np.any(np.diff(slots.astype(np.int64)) <= 0):
        # VW writes slots in order; a reader keeps the last value of a slot given twice
        last = slots.size - 1 - np.unique(slots[::-1], return_index=True)[1]
        repeats = int(slots.size - last.size)
        slots, values = slots[last], values[last]
    return Body(resume=state, slots=slots, values=values, repeats=repeats)


def encode_body(resume: dict | None, slots: np.ndarray, values: np.ndarray,
                version: str = WRITES) -> list:  # fmt: skip
    """The learner's part: the resume flag, the state (``resume``, every field of
    :data:`RESUME_FIELDS`; per-model ones as lists), then a record per slot."""
    parts: list = []
    if resume is None:
        parts.append(b"\0")
        values = values[:, :1]
    else:
        models = len(resume["norm"])
        s, names = _resume_struct(models, version_of(version))
        flat = [resume[n] if i is None else resume[n][i] for n, i in names]
        parts.append(b"\1" + s.pack(*flat))
    cols = values.shape[1]
    rec = np.zeros(slots.shape[0], dtype=[("slot", "<u4"), ("v", "<f4", (cols,))])
    rec["slot"] = slots
    rec["v"] = values
    if rec.nbytes:
        parts.append(memoryview(rec).cast("B"))
    return parts


SHORT = {"q": "quadratic", "b": "bit_precision", "l": "learning_rate", "C": "constant"}
"""VW's short spellings of the options a model may keep (VW writes the long ones)."""


def split_options(text: str) -> list[tuple[str, str | None]]:
    """``" --oaa 3 --quadratic ab --noconstant"`` as [("oaa", "3"), ("quadratic", "ab"),
    ("noconstant", None)]: VW writes each kept option as ``--name`` and its value, if it
    has one, as the next word (which never starts with ``--``).

    >>> split_options(" --oaa 3 --noconstant --l1_state -0.5")
    [('oaa', '3'), ('noconstant', None), ('l1_state', '-0.5')]
    """
    return [(name, value) for name, value, _ in option_items(text)]


_LAST = ("ignore", "ignore_linear", "keep", "random_seed")


def vw_order(text: str) -> str:
    """An options string as VW writes it in a model: the options by name (a repeated one's
    values in their order), then the namespace filters, then the generator's state.

    >>> vw_order("--random_seed 3 --quadratic ab --ignore c --binary --quadratic aa")
    ' --binary --quadratic ab --quadratic aa --ignore c --random_seed 3'
    """
    items = split_options(text)
    items.sort(key=lambda kv: (_LAST.index(kv[0]) + 1 if kv[0] in _LAST else 0, kv[0]))
    return "".join(f" --{name}" + (f" {v}" if v is not None else "") for name, v in items)


def _is_option(word: str) -> bool:
    """Whether a word of an options string starts an option: ``--name``, or ``-x`` of a
    letter (``-0.5`` and ``-.5`` are numbers, ``-`` alone a value), as VW's parser reads it."""
    return word.startswith("--") or (len(word) >= 2 and word[0] == "-"
                                     and not (word[1].isdigit() or word[1] == "."))  # fmt: skip


def option_items(text: str) -> list[tuple[str, str | None, str]]:
    """:func:`split_options` with each option as it is spelled (``-f``, ``--final_regressor``),
    for messages: [(name, value, spelling)].  A word that starts an option is never taken
    as the value of the one before it (``--squarecb -f x`` is two options).

    >>> option_items(" -q ab --squarecb -f x")
    [('quadratic', 'ab', '-q'), ('squarecb', None, '--squarecb'), ('f', 'x', '-f')]
    """
    words = text.split()
    out: list[tuple[str, str | None, str]] = []
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if w.startswith("--"):
            name, eq, value = w[2:].partition("=")
            spelled = "--" + name
        elif _is_option(w):
            name, value = SHORT.get(w[1], w[1]), w[2:]
            eq = "=" if value else ""
            spelled = w[:2]
        else:
            raise ValueError(f"its options hold a stray word {w[:40]!r}")
        if not eq and i < len(words) and not _is_option(words[i]):
            value, eq = words[i], "="
            i += 1
        out.append((name, value if eq else None, spelled))
    return out
