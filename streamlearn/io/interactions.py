"""VW's feature interactions (``-q``, ``--cubic``, ``--interactions``) and namespace filters.

Interactions are generated on the parser thread: each example's row gets
the crossed features appended after its own, by the VW parse kernel itself
as each row ends (:func:`~streamlearn.io.crosses.cross_row`, for interactions without wildcards,
filters or n-grams, while the block's arrays have room), else by one numba
call per batch after the block is parsed (:func:`~streamlearn.io.crosses.expand_batch`, which copies
each row into new arrays to append its crosses); so every learner sees
them as ordinary features (learned, regularised and stored like any other),
and a learner that reads a row twice reads the crosses generated once.  An
example with namespaces of sizes n1, n2 costs O(n1 n2) for ``-q``.

VW's rules, checked against ``vw --audit`` (VW 9.11):

* A namespace is named by the first byte of its name (``|user`` and
  ``|used`` are both ``u``, in the order their features appear); the default
  namespace is ``' '``; the constant is never crossed.  ``:`` is a wildcard
  for every namespace of the example.
* The slot of a cross of features with (masked) hashes h1, h2, ... is
  ``acc & mask`` with ``acc = h1`` then ``acc = (FNV_PRIME * acc) ^ h_next``
  for each further term (VW's 64-bit arithmetic, FNV_PRIME = 16777619; the
  low 32 bits, all a slot uses, are computed exactly mod 2^32); its value is
  the product of the values.
* The list of interactions is sorted (shorter first, then bytewise, ``:``
  as its byte), interactions equal up to order are dropped (the first kept:
  ``-q ab -q ba`` is ``-q ab``), and one that holds a repeated and a
  different namespace is sorted (``--cubic bab`` is ``abb``, ``--cubic a::``
  is ``::a``).  A repeated namespace crosses *combinations*: in ``-q aa`` the
  pairs (i, j) with j >= i, each feature with itself included.
* ``:`` is a wildcard, expanded for each example over its namespaces in
  byte order: two wildcards as all pairs (i <= j), any other number as VW's
  combinations with repetition; the list is then sorted and deduplicated
  again, as above.
* ``--ignore A`` drops namespace A's features everywhere, ``--keep A`` keeps
  only the namespaces named (the constant stays), ``--ignore_linear A`` drops
  A's own features but keeps them in interactions.
* ``--leave_duplicate_interactions`` keeps interactions equal up to order
  (the list is still sorted, and ``::`` then crosses every ordered pair).

N-grams and ``--sort_features`` (:mod:`streamlearn.io.grams`) are compiled
here too and applied first, so that the crosses see the grams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from streamlearn.io._scan import CONSTANT_NS
from streamlearn.io.crosses import (
    CCB_ID_NS,
    CROSS_BUDGET,
    MAX_TERMS,
    WILDCARD,
    has_filters,
    has_wildcard,
    left_sorted,
    used_namespaces,
)
from streamlearn.io.grams import NO_LIMIT, compile_grams, compile_limits

MAX_CROSSES = 1 << 25
"""The most crosses one example may make (``--max-crosses``); above it the line is
skipped as malformed (:data:`TOO_MANY_CROSSES`): 33.5 M crosses, 400 MB of
batch, far past any real example's (``-q tt`` on a 4,000-word document makes
8 M) but short of what one hostile line can ask (``--cubic fff`` on 1,000
features: 167 M)."""


@dataclass(frozen=True)
class Interactions:
    """What to cross and what to drop, resolved once for a run (kernel arrays).

    ``terms[i, :lengths[i]]`` are the namespace bytes of interaction i (58, the
    byte of ``:``, is the wildcard); ``drop[c]`` removes namespace c everywhere,
    ``drop_linear[c]`` only from the example's own features.  ``dedupe``:
    interactions equal up to order are dropped (VW's default).  ``gram_ptr``,
    ``gram_masks``, ``gram_lengths``: the n-grams of each namespace
    (:func:`~streamlearn.io.grams.compile_grams`); ``sort``: ``--sort_features``.
    """

    terms: np.ndarray
    lengths: np.ndarray
    drop: np.ndarray
    drop_linear: np.ndarray
    dedupe: bool = True
    gram_ptr: np.ndarray = field(default_factory=lambda: np.zeros(258, dtype=np.int64))
    gram_masks: np.ndarray = field(default_factory=lambda: np.zeros((0, 16), dtype=np.int64))
    gram_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sort: bool = False
    hash_all: bool = False
    """VW's ``--hash all``: the parser hashes all-digit names too (not an interaction, but
    a parsing option that travels with the others)."""
    f32: bool = False
    """Crosses' values as float32 products (for the learners that compute in float32)."""
    max_crosses: int = MAX_CROSSES
    """The most crosses one example may make; a line past it is malformed."""
    vw_numbers: bool = False
    """Numbers read as VW reads them (:mod:`streamlearn.io.vwfloat`; ``sl vw``), not correctly
    rounded: a parsing option that travels with the others, as ``hash_all``."""
    hash_seed: int = 0
    """VW's ``--hash_seed``: the seed of the namespaces' hashes (0: VW's default)."""
    chain_hash: bool = False
    """VW's ``--chain_hash`` for JSON input (:mod:`streamlearn.io.vwjson`), travelling with the
    other parsing options."""
    label_kind: int = 0
    """The label format (:mod:`streamlearn.io.labels`: 0 VW's simple label, read by the parse
    kernel; any other kind leaves the label part to that module's label kernel)."""
    named: object = field(default=None, compare=False)
    """VW's ``--named_labels`` with ``--oaa``: the :class:`~streamlearn.io.named.NamedLabels`
    the label part is read with (``label_kind`` 1: the parse kernel leaves it alone)."""
    cs_classes: int = 0
    """VW's ``--csoaa K``: K; the label part is read as cost-sensitive entries after the parse
    (:func:`streamlearn.io.cslabels.cs_batch`; ``named`` then maps the classes' names)."""
    ml_classes: int = 0
    """VW's ``--multilabel_oaa K``: K; the label part is read as classes after the parse
    (:func:`streamlearn.io.multilabels.ml_batch`)."""
    csv: object = field(default=None, compare=False)
    """VW's ``--csv``: the run's :class:`~streamlearn.io.csv.CsvReader` (options, each
    source's header), a parsing option that travels with the others."""
    limits: np.ndarray = field(default_factory=lambda: np.full(257, NO_LIMIT, dtype=np.int64))
    """VW's ``--feature_limit``: each namespace's most features (:mod:`streamlearn.io.grams`)."""
    permutations: bool = False
    """VW's ``--permutations``: a namespace crossed with itself makes every ordered pair
    (tuple) of its features, not their combinations."""
    affix: np.ndarray | None = field(default=None, compare=False)
    """VW's ``--affix``: each namespace's affix codes (:func:`streamlearn.io.affix.affix_table`),
    added to the parsed rows by :func:`streamlearn.io.affix.with_affixes`; None: none."""
    spell: np.ndarray | None = field(default=None, compare=False)
    """VW's ``--spelling``: 1 for each namespace byte whose features are spelled
    (:func:`spelling_table`), made by :func:`streamlearn.io.affix.with_affixes`; None: none."""
    redefine: np.ndarray | None = field(default=None, compare=False)
    """VW's ``--redefine N:=S``: each namespace byte's new byte (:func:`redefine_table`), applied
    to VW text's parsed rows before anything else reads their namespaces; None: none."""

    @property
    def cross_mode(self) -> int:
        """What the cross kernels are told: 1 for float32 products, 2 for permutations."""
        return int(self.f32) | (2 if self.permutations else 0)

    @property
    def active(self) -> bool:
        """Anything to do to a parsed batch."""
        return self.crosses_or_filters or self.regroups

    @cached_property
    def crosses_or_filters(self) -> bool:
        # cached (the arrays are not changed after compile_interactions): asked per parsed
        # block, and its two reductions were ~1.5 µs of a one-line partial_fit's ~35 µs
        return self.lengths.shape[0] > 0 or bool(self.drop.any() or self.drop_linear.any())

    @cached_property
    def regroups(self) -> bool:
        """N-grams, sorted features, affixes or redefined namespaces: rows are rebuilt
        namespace by namespace (after the affixes are made from the line's order)."""
        return (self.sort or self.gram_lengths.shape[0] > 0 or self.redefine is not None
                or self.affix is not None or self.spell is not None
                or bool((self.limits < NO_LIMIT).any()))  # fmt: skip


def _bytes(spec: str, option: str) -> list[int]:
    out = []
    for ch in spec:
        if ch == ":":
            out.append(WILDCARD)
            continue
        b = ch.encode("utf-8")
        if len(b) != 1:
            raise ValueError(f"{option} {spec!r}: namespaces are named by one ASCII character")
        out.append(b[0])
    return out


def capped(inter: Interactions | None, max_crosses: int) -> Interactions | None:
    """``inter`` with another cap on one example's crosses (``--max-crosses``)."""
    if inter is None or max_crosses == inter.max_crosses:
        return inter
    import dataclasses

    return dataclasses.replace(inter, max_crosses=int(max_crosses))


def compile_interactions(
    quadratic: tuple[str, ...] = (),
    cubic: tuple[str, ...] = (),
    interactions: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    ignore_linear: tuple[str, ...] = (),
    keep: tuple[str, ...] = (),
    ngram: tuple[str, ...] = (),
    skips: tuple[str, ...] = (),
    sort_features: bool = False,
    leave_duplicate_interactions: bool = False,
    hash_all: bool = False,
    f32: bool = False,
    max_crosses: int = MAX_CROSSES,
    vw_numbers: bool = False,
    hash_seed: int = 0,
    chain_hash: bool = False,
    permutations: bool = False,
    feature_limit: tuple[str, ...] = (),
    redefine: tuple[str, ...] = (),
    spelling: tuple[str, ...] = (),
) -> Interactions:
    """Resolve the options into :class:`Interactions` (ValueError for a bad spec).

    >>> spec = compile_interactions(quadratic=("ba", "ab"), cubic=("bab", "cba"))
    >>> spec.terms[:, :4].tolist(), spec.lengths.tolist()
    ([[97, 98, -1, -1], [97, 98, 98, -1], [99, 98, 97, -1]], [2, 3, 3])
    """
    rows = _rows(quadratic, cubic, interactions)
    if permutations and leave_duplicate_interactions and any(
            t.count(WILDCARD) and len(t) > 2 for t in rows):  # fmt: skip
        raise ValueError("--permutations with --leave_duplicate_interactions: wildcards in "
                         "interactions of more than two namespaces are not expanded as VW "
                         "yet")  # fmt: skip
    terms = _term_array(rows, leave_duplicate_interactions)[0]
    drop = np.zeros(257, dtype=np.bool_)
    drop_linear = np.zeros(257, dtype=np.bool_)
    for spec in ignore:
        for c in _bytes(spec, "--ignore"):
            drop[c] = True
    for spec in ignore_linear:
        for c in _bytes(spec, "--ignore_linear"):
            drop_linear[c] = True
    if keep:
        kept = {c for spec in keep for c in _bytes(spec, "--keep")}
        drop[:256] = True
        for c in kept:
            drop[c] = False
    drop[CONSTANT_NS] = False
    if ngram and sort_features:
        raise ValueError("--ngram does not go with --sort_features (as in VW)")
    gram_ptr, gram_masks, gram_lengths = compile_grams(tuple(ngram), tuple(skips))
    return Interactions(terms, np.sum(terms >= 0, axis=1).astype(np.int64), drop, drop_linear,
                        not leave_duplicate_interactions, gram_ptr, gram_masks, gram_lengths,
                        bool(sort_features), bool(hash_all), bool(f32),
                        int(max_crosses), bool(vw_numbers), int(hash_seed),
                        bool(chain_hash), limits=compile_limits(tuple(feature_limit)),
                        permutations=bool(permutations),
                        redefine=redefine_table(tuple(redefine)) if redefine else None,
                        spell=spelling_table(tuple(spelling)) if spelling else None)  # fmt: skip


def spelling_table(specs: tuple[str, ...]) -> np.ndarray:
    """VW's ``--spelling`` namespaces as a uint8[256] (1: spelled): each spec's first byte,
    ``_`` for the default namespace (ValueError for an empty spec).

    >>> np.flatnonzero(spelling_table(("w", "_", "word"))).tolist()
    [32, 119]
    """
    table = np.zeros(256, dtype=np.uint8)
    for spec in specs:
        raw = spec.encode("utf-8", "surrogateescape")
        if not raw:
            raise ValueError("--spelling: a namespace (its first character, _ for the default "
                             "namespace) is expected")  # fmt: skip
        table[32 if raw[0] == ord("_") else raw[0]] = 1
    return table


def redefine_table(specs: tuple[str, ...]) -> np.ndarray:
    """VW's ``--redefine`` table: ``table[c]`` is the namespace a namespace named with first
    byte c becomes (ValueError for a malformed spec).

    Each spec is ``N:=S``: every namespace whose first byte is in S becomes N (``:`` in S:
    every namespace); an empty N is the default namespace ``' '``; later specs win.  As VW's
    text reader, the anonymous namespace (``| f``) is never redefined, whatever S says (VW's
    help reads an empty S as it, but its reader never looks it up), nor the constant.

    >>> t = redefine_table(("y:=:", "x:=arma"))
    >>> chr(t[ord("u")]), chr(t[ord("a")]), chr(t[ord("r")]), chr(t[ord(" ")])
    ('y', 'x', 'x', ' ')
    """
    table = np.arange(256, dtype=np.uint8)
    for spec in specs:
        raw = spec.encode("utf-8", "surrogateescape")
        at = raw.find(b":=")
        if at < 0:
            raise ValueError(f"--redefine {spec!r}: expected N:=S, :=S or N:=")
        # (VW: N's first byte, the rest of N ignored with a warning; VW reads "y:=" as ":=",
        # which only redefines the anonymous namespace, as "y:=" would: never looked up)
        target = raw[0] if at > 0 else ord(" ")
        source = raw[at + 2:]
        if b":" in source:  # the wildcard: every namespace
            table[:] = target
        else:
            table[list(source)] = target
    table[ord(" ")] = ord(" ")
    table[CONSTANT_NS] = CONSTANT_NS
    return table


def _rows(quadratic: tuple[str, ...], cubic: tuple[str, ...],
          interactions: tuple[str, ...]) -> list[list[int]]:  # fmt: skip
    """The interactions' namespace bytes, as given (ValueError for a bad spec)."""
    rows = []
    for specs, size, option in ((quadratic, 2, "--quadratic"), (cubic, 3, "--cubic")):
        for spec in specs:
            t = _bytes(spec, option)
            if len(t) != size:
                raise ValueError(f"{option} {spec!r}: expected {size} namespace characters")
            rows.append(t)
    for spec in interactions:
        t = _bytes(spec, "--interactions")
        if not 2 <= len(t) <= MAX_TERMS:
            raise ValueError(
                f"--interactions {spec!r}: 2 to {MAX_TERMS} namespace characters expected"
            )
        rows.append(t)
    return rows


def rewritten(quadratic: tuple[str, ...] = (), cubic: tuple[str, ...] = (),
              interactions: tuple[str, ...] = (),
              leave_duplicate_interactions: bool = False) -> tuple[int, int]:  # fmt: skip
    """How many interactions VW drops as duplicates and how many it counts as sorted
    (``sort_and_filter_duplicate_interactions``'s counts, which its warnings say).

    >>> rewritten(quadratic=("ab", "ba"), interactions=("aab",))
    (1, 1)
    """
    _, removed, ordered = _term_array(_rows(quadratic, cubic, interactions),
                                      leave_duplicate_interactions)  # fmt: skip
    return removed, ordered


def _term_array(rows: list[list[int]],
                leave_duplicate_interactions: bool) -> tuple[np.ndarray, int, int]:  # fmt: skip
    """VW's list of interactions as an array (rows padded with -1): sorted (shorter
    first, then bytewise, ':' as its byte), duplicates equal up to order dropped (the
    first kept), and an interaction with a repeated and a different namespace ('aab',
    'bab') sorted so its repeats are adjacent; with the counts of those dropped and
    of those VW counts as sorted (every 'aab' kind, sorted already or not)."""
    key = rows
    order = sorted(range(len(rows)), key=lambda i: (len(key[i]), key[i]))
    kept: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    ordered = 0
    for i in order:
        k = tuple(sorted(key[i]))
        if k in seen and not leave_duplicate_interactions:
            continue
        seen.add(k)
        t = rows[i]
        if left_sorted(np.array(t, dtype=np.int64), len(t), np.empty(MAX_TERMS, np.int64)):
            t = sorted(t)
            ordered += 1
        kept.append(t)
    terms = np.full((len(kept), MAX_TERMS), -1, dtype=np.int64)
    for i, t in enumerate(kept):
        terms[i, : len(t)] = t
    return terms, len(rows) - len(kept), ordered


def with_ccb_slot_index(inter: Interactions | None) -> Interactions:
    """``inter`` with the interactions VW's ``--ccb_explore_adf`` adds once it has seen
    an example of several slots (``insert_ccb_interactions``): each interaction also
    crossed with the slot index namespace, and every namespace (``:``) crossed with it."""
    import dataclasses

    if inter is None:
        inter = compile_interactions()
    rows = [inter.terms[i, : inter.lengths[i]].tolist() for i in range(inter.terms.shape[0])]
    if any(len(t) >= MAX_TERMS for t in rows):
        raise ValueError(f"--ccb_explore_adf: an interaction of {MAX_TERMS} namespaces cannot "
                         "be crossed with the slot index")  # fmt: skip
    extra = [[*t, CCB_ID_NS] for t in rows] + [[WILDCARD, CCB_ID_NS]]
    terms = _term_array(rows + extra, not inter.dedupe)[0]
    lengths = np.sum(terms >= 0, axis=1).astype(np.int64)
    return dataclasses.replace(inter, terms=terms, lengths=lengths)


# ---------------------------------------------------------------------------
# the crosses the VW parse kernel writes (io.crosses.cross_row) after a row's own features


def row_crosser(inter: Interactions | None, mask: np.uint64, budget: int = CROSS_BUDGET,
                group: bool = True) -> tuple:  # fmt: skip
    """The arguments of :func:`~streamlearn.io.crosses.cross_row` for ``inter``: its
    crosses written by the parse kernel, row by row, where :func:`fuses` says they can be,
    in the block's first ``budget`` entries at most (as
    :func:`~streamlearn.io.crosses.expand_batch`'s parts); else a crosser that writes none
    (the same types: one compiled kernel either way).  ``group``: the kernel puts each row's
    features in VW's order (:func:`~streamlearn.io.crosses.group_row`); off where a later
    pass needs the line's order (``--affix``'s, which groups after it).

    A crosser that writes none is made once per mask, budget and grouping and shared (the
    kernel never writes into it: it has no term): a block of one line, as a server or
    ``partial_fit(lines=[line])`` parses, paid ~5 µs of its ~15 µs making it."""
    if not fuses(inter):
        key = (int(mask), int(budget), bool(group))
        crosser = _NO_CROSSER.get(key)
        if crosser is None:
            crosser = _NO_CROSSER[key] = _row_crosser(None, mask, budget, group)
        return crosser
    return _row_crosser(inter, mask, budget, group)


_NO_CROSSER: dict[tuple[int, int, bool], tuple] = {}


def _row_crosser(inter: Interactions | None, mask: np.uint64, budget: int,
                 group: bool = True) -> tuple:  # fmt: skip
    nt = inter.terms.shape[0] if fuses(inter) else 0
    terms = inter.terms if nt else np.empty((0, MAX_TERMS), dtype=np.int64)
    lengths = inter.lengths if nt else np.empty(0, dtype=np.int64)
    used = used_namespaces(terms, lengths, False)
    limits = np.array([nt, int(mask), nt and inter.cross_mode, nt and inter.max_crosses, budget,
                       int(group)], dtype=np.int64)  # fmt: skip
    return (terms, lengths, used, np.zeros((3, 257), dtype=np.int64), limits,
            np.zeros((3, MAX_TERMS), dtype=np.int64), np.zeros(MAX_TERMS, dtype=np.uint64),
            np.zeros(MAX_TERMS, dtype=np.float64))  # fmt: skip


def fuses(inter: Interactions | None) -> bool:
    """Whether the VW parse kernel can write ``inter``'s crosses itself
    (:func:`~streamlearn.io.crosses.cross_row`): interactions without wildcards, no
    namespace dropped, no n-grams, sorting or affixes."""
    return (
        inter is not None
        and inter.lengths.shape[0] > 0
        and not inter.regroups
        and inter.affix is None
        and not has_filters(inter.drop, inter.drop_linear)
        and not has_wildcard(inter.terms, inter.lengths)
    )
