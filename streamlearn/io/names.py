"""Feature names per slot, for ``--invert-hash`` and ``sl inspect``.

The parsers only emit hashed slots (names would cost memory in the hot path),
so when names are asked for, this module re-reads the lines of each batch in
Python and hashes every name with :func:`streamlearn.hashing.feature_slot`.
That is slow (an opt-in debugging aid, as in VW), and memory stays bounded by
the non-zero slots: after each batch (of every pass), slots whose weight is zero are dropped,
and each slot keeps at most :data:`MAX_NAMES` names (collisions beyond that are
counted, not listed).
"""

from __future__ import annotations

import math
import re

import mmh3
import numpy as np

from streamlearn.hashing import CONSTANT_HASH, hashstring_py, namespace_hash
from streamlearn.io.batch import Batch

MAX_NAMES = 8


_SEP = re.compile(rb"[ \t\r\n]+")
"""Separators between features, as the parsers read them (bytes, never Unicode spaces)."""


def _is_number(text: bytes) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _hash_all(s: bytes, seed: int = 0) -> int:
    """VW's ``hashall``: murmur3 of the whole name, digits or not."""
    return mmh3.hash(s, seed & 0xFFFFFFFF, signed=False)


class Valued(str):
    """A feature's name with its string value (``ns^key^value``), which knows the name its
    n-grams join (``ns^key``: VW names a gram by its terms' names, not their values)."""

    gram: str

    def __new__(cls, full: str, gram: str) -> Valued:
        self = super().__new__(cls, full)
        self.gram = gram
        return self


def _gram(name: str) -> str:
    """The name a feature's n-grams join (:class:`Valued`)."""
    return getattr(name, "gram", name)


def _name(raw: bytes) -> str:
    """A name as stored: its bytes as UTF-8, any other byte kept (surrogateescape)."""
    return raw.decode("utf-8", "surrogateescape")


def vw_names(line: bytes, bits: int, hash_all: bool = False,
             values: list[float] | None = None, hash_seed: int = 0,
             affix: np.ndarray | None = None,
             redefine: np.ndarray | None = None,
             spell: np.ndarray | None = None) -> list[tuple[int, str, int]]:  # fmt: skip
    """(slot, name, namespace byte) of every feature of a well-formed VW line
    (``hash_all``: VW's ``--hash all``); ``values``, a list: each feature's value is
    appended to it (times its namespace's scale, in float32 as the parser reads it);
    ``affix``: VW's ``--affix`` codes (:mod:`streamlearn.io.affix`), whose features come
    where the parser puts them, named as VW names them (``affix^a+2=he``); ``redefine``:
    VW's ``--redefine`` table (the namespace bytes given, the names kept); ``spell``: VW's
    ``--spelling`` namespaces (``spelling^a_Aa0``).

    Works on the line's bytes, as the parser does: a name that is not UTF-8 gets
    the slot the parser gave it, and keeps its bytes (see :func:`_name`).  The features
    come in VW's order: each namespace's together, the namespaces as they first come.
    """
    mask = (1 << bits) - 1
    h = _hash_all if hash_all else hashstring_py
    bar = line.find(b"|")
    if bar < 0:
        return []
    out = []
    affixes: list[tuple[int, str, int, float]] = []
    at = -1  # where the affixes go: before the segment that made the first
    at_s = -1  # ... the spelling features
    for segment in line[bar + 1 :].split(b"|"):
        first = len(out)
        if not segment or segment[:1] in (b" ", b"\t", b"\r", b"\n"):
            ns, rest = b"", segment
        else:
            head, _, rest = segment.partition(b" ")
            if b"\t" in head:
                head, _, more = head.partition(b"\t")
                rest = more + b" " + rest
            ns, _, scale_text = head.partition(b":")
        scale = float(np.float32(scale_text)) if ns and scale_text and _is_number(scale_text) \
            else 1.0  # fmt: skip
        if ns:
            seed = h(ns, hash_seed) if hash_all or hash_seed else namespace_hash(ns)
        else:  # the default namespace: VW's uniform hash of "" with --hash_seed
            seed = _hash_all(b"", hash_seed) if hash_seed else 0
        anon = 0  # VW's anonymous ':v' features: the namespace's hash plus their count
        for token in _SEP.split(rest):
            if not token:
                continue
            name, colon, value = token.partition(b":")
            valued = bool(colon and value and not _is_number(value))  # (a string value)
            if valued:
                slot = h(value, h(name, seed)) & mask
                shown = name + b"^" + value
            else:
                if not name:
                    slot = ((seed + anon) & 0xFFFFFFFF) & mask
                    anon += 1
                else:
                    slot = h(name, seed) & mask
                if colon and value and float(value) == 0.0:
                    continue
                shown = name
            nsb = (ns[0] if redefine is None else int(redefine[ns[0]])) if ns else 32
            full = _name(ns + b"^" + shown if ns else shown)
            if valued:  # (its n-grams take the name alone, as VW's)
                full = Valued(full, _name(ns + b"^" + name if ns else name))
            out.append((slot, full, nsb))
            x = float(value) if colon and value and _is_number(value) else 1.0
            x = float(np.float32(np.float32(x) * np.float32(scale)))
            if values is not None:
                values.append(x)
            if affix is not None and affix[nsb] and name:
                from streamlearn.io.affix import affix_features

                if at < 0:
                    at = first
                affixes += affix_features(name, seed, int(affix[nsb]), nsb, hash_all, mask, x)
            if spell is not None and spell[nsb]:
                from streamlearn.io.affix import spelling_feature

                if at_s < 0:
                    at_s = first
                affixes.append(spelling_feature(name, seed, nsb, mask, x))
    _insert_made(out, values, affixes, at, at_s)
    return _vw_order(out, values)


def _insert_made(out: list, values: list[float] | None, made: list, at: int,
                 at_s: int) -> None:  # fmt: skip
    """Put the made features (affixes and spellings, in the order they were made) before the
    segment that made the first; with both, each namespace before the segment that made its
    first (the later inserted first, so that the earlier's place is still its own), as the
    kernel (:mod:`streamlearn.io.affix`)."""
    parts = [(min(p for p in (at, at_s) if p >= 0), made)] if made else []
    if at >= 0 and at_s >= 0 and at != at_s:
        from streamlearn.io.affix import SPELLING_NS

        parts = sorted(((at, [f for f in made if f[2] != SPELLING_NS]),
                        (at_s, [f for f in made if f[2] == SPELLING_NS])), reverse=True)
    for where, feats in parts:
        out[where:where] = [(slot, name, nsb) for slot, name, nsb, _ in feats]
        if values is not None:
            values[where:where] = [x for *_, x in feats]


def _vw_order(out: list, values: list[float] | None) -> list:
    """``out`` in VW's order, as the parse kernel's rows (:func:`streamlearn.io.crosses.group_row`):
    each namespace's features together, the namespaces as they first come (``values``' last
    entries, ``out``'s, moved alike)."""
    groups: dict[int, list[int]] = {}
    for i, (_, _, nsb) in enumerate(out):
        groups.setdefault(nsb, []).append(i)
    if len(groups) > 1:
        order = [i for members in groups.values() for i in members]
        out = [out[i] for i in order]
        if values is not None:
            mine = values[len(values) - len(order):]
            values[len(values) - len(order):] = [mine[i] for i in order]
    return out


def line_names(line: bytes, bits: int, inter=None, values: list[float] | None = None,
               source: str = "") -> list[tuple[int, str, int]]:  # fmt: skip
    """:func:`vw_names`, or for a CSV run (``inter.csv``) the CSV line's features
    (:func:`streamlearn.io.csv.csv_names`, by the header ``source`` was read with)."""
    hash_all = inter is not None and inter.hash_all
    if inter is not None and inter.csv is not None:
        from streamlearn.io.csv import csv_names

        return csv_names(line, source, bits, inter.csv.opts.sep_byte, hash_all, values)
    if inter is None:
        return vw_names(line, bits, hash_all, values)
    return vw_names(line, bits, hash_all, values, inter.hash_seed, inter.affix, inter.redefine,
                    inter.spell)


def with_grams(feats: list[tuple[int, str, int]], inter, bits: int) -> list[tuple[int, str, int]]:
    """``feats`` (full 32-bit hashes, :func:`vw_names` with 32 bits) with VW's n-grams and
    skip-grams appended to each namespace (``--ngram``, ``--skips``), slots masked to
    ``bits``.  With grams, the features come grouped by namespace in the order each first
    appears, each namespace's grams after its features, as the parser writes them; a
    gram is named as VW names it, ``ns^a^b`` (the terms' names joined by ``^``).  With
    ``--sort_features``, each namespace's features sorted by slot, repeated slots dropped."""
    from streamlearn.io.grams import GRAM_CONSTANT

    mask = (1 << bits) - 1
    if inter is None or (inter.gram_masks.shape[0] == 0 and not inter.sort):
        return [(slot & mask, name, nsb) for slot, name, nsb in feats]
    groups: dict[int, list[tuple[int, str]]] = {}
    for slot, name, nsb in feats:
        groups.setdefault(nsb, []).append((slot, name))
    out = []
    for nsb, fs in groups.items():
        if inter.sort:  # (--sort_features: by slot, the first of equal slots kept)
            fs = sorted(fs, key=lambda f: f[0] & mask)
            fs = [f for i, f in enumerate(fs) if i == 0 or (fs[i - 1][0] ^ f[0]) & mask]
        out += [(slot & mask, name, nsb) for slot, name in fs]
        bare = [_gram(name) if nsb == 32 else _gram(name).split("^", 1)[-1] for _, name in fs]
        for g in range(int(inter.gram_ptr[nsb]), int(inter.gram_ptr[nsb + 1])):
            terms = inter.gram_masks[g, : int(inter.gram_lengths[g])].tolist()
            for i in range(len(fs) - terms[-1]):
                acc = fs[i][0]
                for t in terms[1:]:
                    acc = (acc * int(GRAM_CONSTANT) + fs[i + t][0]) & 0xFFFFFFFF
                name = _gram(fs[i][1]) + "".join("^" + bare[i + t] for t in terms[1:])
                out.append((acc & mask, name, nsb))
    return out


def named_with_grams(named: list[tuple], inter, bits: int) -> list[tuple[int, str, int]]:  # noqa: ANN001
    """:func:`with_grams` of features read with their names (a JSON example's:
    :func:`streamlearn.io.vwjson.read_named`, (hash, name, namespace byte, value, the name
    its n-grams take)): a chain-hashed string is named ``ns^key^value``, its grams join
    ``ns^key``."""
    if inter is None or inter.gram_masks.shape[0] == 0:
        mask = (1 << bits) - 1
        return [(h & mask, name, nsb) for h, name, nsb, _, _ in named]
    grams = with_grams([(h, gram, nsb) for h, _, nsb, _, gram in named], inter, bits)
    full: dict[int, list[str]] = {}  # (with grams: each namespace's features, then its grams)
    for f in named:
        full.setdefault(f[2], []).append(f[1])
    seen: dict[int, int] = {}
    out = []
    for slot, name, nsb in grams:
        k = seen.get(nsb, 0)
        seen[nsb] = k + 1
        out.append((slot, full[nsb][k] if k < len(full[nsb]) else name, nsb))
    return out


def svmlight_names(line: bytes, bits: int) -> list[tuple[int, str, int]]:
    mask = (1 << bits) - 1
    out = []
    for token in _SEP.split(line.split(b"#", 1)[0])[1:]:
        idx, colon, value = token.partition(b":")
        if colon and idx.isdigit() and _is_number(value) and float(value) != 0.0:
            out.append((hashstring_py(idx, 0) & mask, idx.decode("ascii"), 32))
    return out


def wildcard_ns(nsb: int) -> bool:
    """Whether a wildcard (``:``) stands for namespace byte ``nsb`` (VW's
    ``is_interaction_ns``: ``' '`` to ``'~'`` and the CCB slot's; not the constant, nor
    the CCB slot index's)."""
    from streamlearn.io.crosses import CCB_SLOT_NS

    return 32 <= nsb <= 126 or nsb == CCB_SLOT_NS


def crossed_names(feats: list[tuple[int, str, int]], inter, bits: int) -> list[tuple[int, str]]:
    """(slot, ``a^x*b^y``) of the crosses of one example's features, as VW names them
    (:func:`crossed_values`)."""
    valued = [(h, name, nsb, 1.0) for h, name, nsb in feats]
    return [(h, name) for h, name, _ in crossed_values(valued, inter, bits)]


def crossed_values(feats: list[tuple[int, str, int, float]], inter,  # noqa: ANN001
                   bits: int) -> list[tuple[int, str, float]]:  # fmt: skip
    """(slot, ``a^x*b^y``, value) of the crosses of one example's features (slot, name,
    namespace byte, value), as VW names them, the values multiplied along in float32.

    The list of interactions comes from the same kernel helper as the crosses
    themselves (wildcards, duplicates, order), the slots from VW's arithmetic.
    """
    import numpy as np

    from streamlearn.io.crosses import example_terms, terms_room
    from streamlearn.io.interactions import MAX_TERMS

    f32 = np.float32
    mask = (1 << bits) - 1
    groups: dict[int, list[tuple[int, str, float]]] = {}
    present: list[int] = []
    for slot, name, nsb, x in feats:
        if inter.drop[nsb]:
            continue
        if nsb not in groups and wildcard_ns(nsb):
            present.append(nsb)
        groups.setdefault(nsb, []).append((slot, name, x))
    room = terms_room(inter.terms, inter.lengths, len(present))
    out_terms = np.empty((max(room, 1), MAX_TERMS), dtype=np.int64)
    out_len = np.empty(out_terms.shape[0], dtype=np.int64)
    n = example_terms(inter.terms, inter.lengths, np.array(present, dtype=np.int64),
                       len(present), out_terms, out_len, inter.dedupe)  # fmt: skip
    out: list[tuple[int, str, float]] = []
    perm = inter.permutations

    def walk(term: list[int], lists: list, lvl: int, start: int, acc: int, names: list[str],
             v: float) -> None:  # fmt: skip
        """The crosses in VW's order (the first namespace's features outermost)."""
        for i in range(start, len(lists[lvl])):
            slot, name, x = lists[lvl][i]
            h = slot if lvl == 0 else ((16777619 * acc) & 0xFFFFFFFF) ^ slot
            vx = f32(x) if lvl == 0 else f32(v * f32(x))
            if lvl == len(term) - 1:
                out.append((h & mask, "*".join([*names, name]), float(vx)))
            else:
                nxt = i if term[lvl + 1] == term[lvl] and not perm else 0
                walk(term, lists, lvl + 1, nxt, h, [*names, name], vx)

    for t in range(n):
        term = out_terms[t, : out_len[t]].tolist()
        walk(term, [groups.get(c, []) for c in term], 0, 0, 0, [], f32(1.0))
    return out


def class_slots(slot: int, bits: int, classes: int) -> tuple[list[int], int]:
    """With ``--oaa K``: the feature slots whose class ``c`` weight is at table ``slot``, and c.

    Class c of feature slot h is at ``(h·s + c) mod 2^b`` (``s`` = K rounded up to a
    power of 2, VW's layout), so ``slot`` holds class ``slot mod s`` of every h with
    ``h·s ≡ slot − c``: ``s`` feature slots, ``2^b / s`` apart.
    """
    s = 1 << max(classes - 1, 0).bit_length()
    c = slot % s
    span = (1 << bits) // s
    first = (slot - c) // s
    return [first + t * span for t in range(s)], c


def slot_names(names: dict[int, list[str]], slot: int, bits: int, classes: int = 0) -> list[str]:
    """The feature names seen for table ``slot`` (``names`` keyed by feature slot); with
    ``--oaa K`` each carries its class as VW's ``--invert_hash`` writes it (``a^x[2]``;
    class 0 plain)."""
    if not classes:
        return names.get(slot, [])
    hs, c = class_slots(slot, bits, classes)
    suffix = f"[{c}]" if c else ""
    return [n + suffix for h in hs for n in names.get(h, [])]


class NameCollector:
    """slot -> names seen, kept only for slots whose weight is non-zero.

    The slots are feature slots (as parsed); with ``classes`` = K (``--oaa K``) a
    feature slot is live while any of its K class slots has a non-zero weight.
    """

    def __init__(self, bits: int, fmt: str, constant: bool, inter=None, classes: int = 0) -> None:
        self.bits = bits
        self.classes = classes
        self.inter = inter  # interactions and namespace filters, or None
        self.fmt = fmt  # 'vw', 'svmlight' or 'auto' (decided on the first batch)
        self.names: dict[int, list[str]] = {}
        self.dropped = 0
        self.constant = CONSTANT_HASH & ((1 << bits) - 1) if constant else None
        if constant:
            self.names[self.constant] = ["Constant"]

    def add(self, batch: Batch) -> None:
        """Name the slots of ``batch``'s usable lines; nothing for a batch replayed from the
        parsed cache, which keeps no line text."""
        from streamlearn.io.cache import CachedBatch

        if self.constant is not None:  # every example has it (pruned while its weight was 0)
            self.names.setdefault(self.constant, ["Constant"])
        if isinstance(batch, CachedBatch):
            return
        lines = batch.block.data.tobytes().split(b"\n")
        first = batch.block.first_line
        if self.fmt == "auto":
            from streamlearn.io import FMT_SVMLIGHT, detect_format

            head = next((ln for ln in lines if ln.strip()), b"")
            self.fmt = "svmlight" if detect_format(head) == FMT_SVMLIGHT else "vw"
        for i in np.flatnonzero(batch.status == 0):
            line = lines[int(batch.line[i]) - first]
            if self.fmt == "svmlight":
                feats = svmlight_names(line, self.bits)
            else:
                feats = with_grams(line_names(line, 32, self.inter, source=batch.block.source),
                                   self.inter, self.bits)  # fmt: skip
            named = [(slot, name) for slot, name, _ in feats]
            if self.inter is not None:
                named += crossed_names(feats, self.inter, self.bits)
            for slot, name in named:
                known = self.names.setdefault(slot, [])
                if name not in known:
                    if len(known) < MAX_NAMES:
                        known.append(name)
                    else:
                        self.dropped += 1

    def prune(self, primaries: list[np.ndarray]) -> None:
        """Forget slots whose primary state (column 0 of the table) is zero in every table.

        Called after each batch of every pass: a weight becomes non-zero only
        in a batch that touches its slot, and that batch's names are added
        first, so every slot non-zero at the end keeps the names it was seen with.
        """
        if not self.names:
            return
        slots = np.fromiter(self.names, dtype=np.int64, count=len(self.names))
        live = np.zeros(slots.size, dtype=bool)
        if self.classes:
            s = 1 << max(self.classes - 1, 0).bit_length()
            mask = (1 << self.bits) - 1
            table_slots = [(slots * s + c) & mask for c in range(self.classes)]
        else:
            table_slots = [slots]
        for primary in primaries:
            for at in table_slots:
                live |= primary[at] != 0.0
        if not live.all():
            self.names = {s: self.names[s] for s in slots[live].tolist()}


def write_readable(path: str, model, with_names: bool) -> None:
    """``slot<TAB>weight[<TAB>names]`` for every non-zero weight, after a header.

    Names are written as the input's bytes (a name that is not UTF-8 included).
    """
    c = model.config
    lines = [
        f"# sl readable model: algo {c.algo}, loss {c.loss}, bits {c.bits}, "
        f"non-zero weights {model.nnz}"
        + (f"; {c.oaa} classes: class c of feature slot h at slot h*{c.oaa_stride} + c"
           if c.oaa else ""),  # fmt: skip
        "# slot\tweight"
        + ("\tnames (space-separated; ^ joins namespace and feature)" if with_names else ""),
    ]
    for slot, w in zip(model.slots.tolist(), model.weights.tolist(), strict=True):
        if w == 0.0 or not math.isfinite(w):
            continue
        row = f"{slot}\t{w:.9g}"
        if with_names:
            row += "\t" + " ".join(slot_names(model.names, slot, c.bits, c.class_problems))
        lines.append(row)
    from streamlearn.system.outputs import write_bytes

    what = "invert-hash model" if with_names else "readable model"
    write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"), what)
