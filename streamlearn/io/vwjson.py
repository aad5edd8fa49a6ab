"""VW's JSON inputs (``--json``, ``--dsjson``), translated line by line into VW text.

Each JSON line is read as VW's ``json_parser/src/parse_example_json.cc`` reads it
(VW 9.11) and written out as the VW text lines that give the *same examples*:
the same label, the same namespaces in the same order, the same hashed features
in the same order with the same float32 values.  The text then goes through
the ordinary parser (multiline examples: a ``shared`` line, one line per
action, a blank line): :func:`parse_json_block` hands it to the text kernels
(:func:`streamlearn.io.textparse.parse_text_block`) and gives the rows their JSON
lines' numbers back (:func:`restore`).

The steps, each in its module:

* :mod:`streamlearn.io.jsondecode`: the line decoded, within sl's limits (depth, lone
  surrogates, numbers beyond a double).
* :mod:`streamlearn.io.jsonreader`: VW's reader over the decoded line -- namespaces,
  features (each written as VW text as it is read, by a decimal name where its own
  name would not hash the same), labels, CCB and slates keys.
* :mod:`streamlearn.io.dsjson`: the decision service's record around the context.
* here: each example's label line (:func:`read_record`), the lines of a block
  (:func:`translate`, :func:`json_block`) and their batch.

A line VW cannot read (not JSON, a string in a numeric array, an unknown
``_label_`` property, ``_labelIndex`` past the actions...) is reported with its
reason and skipped; VW stops at such a line under ``--json`` and skips it under
``--dsjson``.  So is a line VW reads but sl does not (``docs/input-formats.md``):
one nested deeper than :data:`~streamlearn.io.jsondecode.MAX_DEPTH` objects and
arrays.  A ``\\u`` escape of a lone UTF-16 surrogate is refused as by VW's reader;
other bytes are bytes: a line that is not UTF-8 keeps its bytes in names and values,
as in VW.

Memory: each feature is written out as VW text when it is read (nothing per
feature is kept but its text), and each action of a multiline record keeps only
its text and label, so a line costs about its parsed JSON (Python's objects,
~6-15x its bytes) plus its text (:func:`read_record`; ``docs/input-formats.md``,
"Memory per example").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from streamlearn.io import jsonfast
from streamlearn.io.batch import BAD_JSON, LONG_LINE, Batch, Block
from streamlearn.io.dsjson import read_dsjson
from streamlearn.io.formats import FMT_DSJSON, FMT_JSON, FMT_VW
from streamlearn.io.jsondecode import (
    MAX_DEPTH,
    JsonLineError,
    JsonObject,
    decode_line,
    printable,
    string_bytes,
)
from streamlearn.io.jsonreader import FLT_MAX, Example, JsonReader, expressible, value_text
from streamlearn.io.textparse import Rest, parse_text_block

LABEL_KINDS = ("simple", "multiclass", "cb", "cs")


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


def _ccb_head(ex: Example, opts: JsonOptions) -> bytes:
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


def _render(ex: Example, opts: JsonOptions) -> bytes:
    """The VW text line of a read example: its label, its tag, its features."""
    if ex.role:
        head = _ccb_head(ex, opts)
    elif ex.shared:
        if ex.costs:
            raise JsonLineError("a cb label on the shared example (give _labelIndex)")
        head = b"shared"
    elif ex.label_text is not None:
        head = string_bytes(ex.label_text)
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
    if ex.tag and expressible(ex.tag) and not ex.tag.startswith(b"'"):
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
    read = _read(line, opts)
    if read is None:
        return None
    rd, weight = read
    lines = []
    for k, ex in enumerate(rd.examples):
        lines.append(_render(ex, opts))
        rd.examples[k] = None  # type: ignore[call-overload]
    if len(rd.examples) > 1 or opts.kind in ("ccb", "slates"):
        lines.append(b"")
    return JsonRecord(lines, weight)


def _read(line: bytes, opts: JsonOptions, named: bool = False) -> tuple[JsonReader, float] | None:
    """VW's reader over one JSON line, and its examples' weight; ``None`` for a line VW
    passes over in silence (``named``: :attr:`JsonReader.named`)."""
    stripped = line.strip()
    if not stripped:
        return None
    if opts.dsjson and not stripped.startswith(b"{"):
        return None
    doc = decode_line(stripped)
    if not isinstance(doc, JsonObject):
        raise JsonLineError("a JSON line must be an object")
    rd = JsonReader(opts.kind, opts.chain_hash, opts.hash_seed, opts.numbers, named=named)
    if opts.dsjson:
        weight = read_dsjson(doc, rd)
        if weight is None:
            return None
    else:
        rd.root(doc)
        weight = 1.0
    return rd, weight


def read_named(line: bytes, opts: JsonOptions) -> list[tuple[bool, list]] | None:
    """The examples of one JSON line with their features as VW names them (``--audit``,
    ``--invert_hash``): per example, whether it is the shared one, and its features as
    (32-bit hash, ``ns^name``, namespace byte, value, the name its n-grams take) in VW's
    order; ``None`` for a line VW passes over in silence.  Raises :class:`JsonLineError`
    as :func:`read_record`.

    >>> ex = read_named(b'{"a":[2,1],"c":{"shared":{"f":"1"},"_multi":[{"action":{"f":"1"}}]}}',
    ...                 JsonOptions(dsjson=True))
    >>> [(shared, [f[1] for f in feats]) for shared, feats in ex]
    [(True, ['shared^f1']), (False, ['action^f1'])]
    """
    try:
        read = _read(line, opts, named=True)
    except RecursionError:
        raise JsonLineError(f"nested deeper than {MAX_DEPTH} objects and arrays") from None
    if read is None:
        return None
    rd = read[0]
    out = []
    for ex in rd.examples:
        ex.seal()
        out.append((ex.shared, list(ex.named or ())))
    return out


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
    """Every JSON line of ``data`` (whole lines, the first numbered ``first_line``) as VW text.

    Contextual-bandit records under VW's numbers are translated by the kernel
    (:mod:`streamlearn.io.jsonfast`), the lines it leaves by :func:`read_record`.
    """
    from streamlearn.system.jit import INTERPRETED

    # (interpreted, on a tiny input, the kernel is 7x slower than the Python reader)
    if opts.kind == "cb" and opts.numbers == "vw" and not opts.chain_hash and not INTERPRETED:
        tr = _translate_fast(data, first_line, opts)
        if tr is not None:
            return tr
    return _translate(opts, range(first_line, first_line + data.count(b"\n") + 1),
                      data.split(b"\n"))  # fmt: skip


def _translate_fast(data: bytes, first_line: int, opts: JsonOptions) -> Translated | None:
    """:func:`translate` by the kernel, with the lines it leaves read by :func:`read_record`;
    None when its output would not fit (then every line is read in Python)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate([[0], ends + 1])
    ends = np.concatenate([ends, [len(data)]])
    long = np.flatnonzero(ends - starts > jsonfast.KERNEL_LINE).tolist()
    if not long:
        return _kernel_lines(data, first_line, opts)
    parts: list[Translated | None] = []
    pos = 0
    for k in [*long, len(starts)]:  # the runs of short lines by the kernel, the long in Python
        if pos < k:
            parts.append(_kernel_lines(data[starts[pos] : ends[k - 1]], first_line + pos, opts))
        if k < len(starts):
            parts.append(_translate(opts, [first_line + k], [data[starts[k] : ends[k]]]))
        pos = k + 1
    if any(p is None for p in parts):
        return None
    return Translated(b"".join(p.data for p in parts), np.concatenate([p.lines for p in parts]),
                      np.concatenate([p.weights for p in parts]),
                      [e for p in parts for e in p.errors])  # fmt: skip


def _kernel_lines(data: bytes, first_line: int, opts: JsonOptions) -> Translated | None:
    """:func:`_translate_fast` of lines of at most :data:`~streamlearn.io.jsonfast.KERNEL_LINE`
    bytes."""
    buf = np.frombuffer(data, dtype=np.uint8)
    n_lines = data.count(b"\n") + 1
    seg = np.empty((n_lines, 4), dtype=np.int64)
    out = np.empty(2 * len(data) + 64 * n_lines + 64, dtype=np.uint8)
    n = jsonfast.translate_block(buf, opts.dsjson, out, seg)
    if n < 0:
        return None
    seg = seg[:n]
    slow = np.flatnonzero(seg[:, 0] == jsonfast.SLOW).tolist()
    numbers = np.arange(first_line, first_line + n, dtype=np.int64)
    if not slow:
        where = np.repeat(numbers, seg[:, 3])
        return Translated(out[: int(seg[-1, 2])].tobytes(), where, np.ones(where.shape[0]), [])
    raw = data.split(b"\n")
    texts: list[bytes] = []
    wheres: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    errors: list[tuple[int, str, bytes]] = []
    pos = 0
    for k in [*slow, n]:
        if pos < k:  # the kernel's lines pos..k-1
            texts.append(out[int(seg[pos, 1]) : int(seg[k - 1, 2])].tobytes())
            w = np.repeat(numbers[pos:k], seg[pos:k, 3])
            wheres.append(w)
            weights.append(np.ones(w.shape[0]))
        if k < n:
            tr = _translate(opts, [first_line + k], [raw[k]])
            texts.append(tr.data)
            wheres.append(tr.lines)
            weights.append(tr.weights)
            errors.extend(tr.errors)
        pos = k + 1
    return Translated(b"".join(texts), np.concatenate(wheres), np.concatenate(weights), errors)


def _translate(opts: JsonOptions, numbers: Iterable[int], lines: list[bytes]) -> Translated:
    """:func:`translate` in Python: ``lines`` (a block's, split at newlines), numbered
    ``numbers``."""
    out: list[bytes] = []
    where: list[int] = []
    weights: list[float] = []
    errors: list[tuple[int, str, bytes]] = []
    for n, raw in zip(numbers, lines, strict=False):
        if not raw.strip():
            continue
        try:
            rec = read_record(raw, opts)
        except JsonLineError as e:
            errors.append((n, printable(str(e)), raw[:60]))
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
                     words: bool, limit: float,
                     budget: int | None) -> tuple[Batch, Rest | None]:  # fmt: skip
    """:func:`~streamlearn.io.parse.parse_block_parts` for a block of JSON lines: their VW
    text parsed (:func:`~streamlearn.io.textparse.parse_text_block`), each row given its
    JSON line's number, status and weight."""
    fmt = FMT_DSJSON if dsjson else FMT_JSON
    text, tr = json_block(block, dsjson, inter)
    first, rest = parse_text_block(text, FMT_VW, bits, constant, inter, words, limit, budget)
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
