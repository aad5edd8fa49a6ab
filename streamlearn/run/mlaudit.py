"""``sl vw --audit`` under the multiline reductions (``--csoaa_ldf m|mc``, ``--cb_adf``,
``--cb_explore_adf``'s greedy, first and softmax explorers), as VW 9.11's gd prints it.

VW's gd prints one audit each time it predicts or learns a line: the line's clipped
prediction (and its tag), then its features as ``name:slot:value:weight`` (``@`` and the
adaptive sum when gd is adaptive), in decreasing order of ``|weight x value|``, ties in
the line's order (:func:`streamlearn.run.vwaudit.feature_cells`).  A line is an action line with
the shared line merged as VW's ``shared_feature_merger`` merges it: the action's
namespaces in order, each followed by the shared features of the same namespace, its
constant, then the shared line's other namespaces; its crosses after.

Which calls a multiline example makes (VW's stack, checked against VW 9.11.9):

* ``--csoaa_ldf``: every line predicted with the weights before the example; a labeled
  example then learns its lines one after the other, each audited with the weights the
  lines before it left (its prediction clipped to the range its label widened).
* ``--cb_adf`` (mtr): every action predicted; a labeled example then learns its logged
  action with the same weights.  ``--cb_explore_adf`` predicts an unlabeled example twice
  (its learn predicts again).
* ``-t``: every line predicted once.

The kernels learn a whole example in one call: the run hands the learner one example at
a time (:meth:`Audit.split`), and :meth:`Audit.example` writes the example's audit from
the weights before the call; csoaa_ldf's learned lines are replayed with the kernel's own
line learner (:func:`streamlearn.learners.csoaa_ldf.learn_line`) on the touched weights,
which are then put back for the kernel.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from streamlearn.errors import UsageError
from streamlearn.io.examples import Source
from streamlearn.io.names import crossed_values
from streamlearn.learners.base import (
    G_CLIP,
    G_LABEL_MAX,
    G_LABEL_MIN,
    P_ADAPTIVE,
    P_CLIP_FIXED,
    P_CLIP_HI,
    P_CLIP_LO,
    P_L1,
    P_L2,
)
from streamlearn.learners.losses import LOGISTIC, POISSON
from streamlearn.run.vwaudit import feature_cells
from streamlearn.run.vwformat import fixed

F32 = np.float32

EXPLORERS = frozenset({"", "greedy", "first", "softmax", "squarecb", "synthcover"})
"""The explorers whose calls :class:`Audit` follows ("": ``--cb_adf``)."""
TWICE = frozenset({"first", "softmax", "squarecb", "synthcover"})
"""Explorers whose learn does not return the prediction: VW predicts a labeled example,
then learns it (cb_adf's learn predicting it again)."""


def check(ml, learn: dict) -> None:  # noqa: ANN001 - a reductions.Multiline
    """Refuse (exit 2, before any data) an ``--audit`` sl does not write as VW yet."""
    why = None
    fmt = learn.get("format") or "auto"
    passes = int(learn.get("passes") or 1)
    built = ("csoaa_ldf", "cb_adf", "ccb", "slates")
    if ml.reduction not in built or ml.legacy or ml.evaluate:
        why = None if ml.reduction in built else "this reduction"
    if ml.reduction in ("ccb", "slates") and ml.no_predict:
        why = "--no_predict"
    elif ml.reduction != "csoaa_ldf" and (ml.explore_eval or ml.explore not in EXPLORERS):
        why = "this explorer (each of its models audited)"
    elif ml.reduction != "csoaa_ldf" and ml.cb_type != "mtr":
        why = f"--cb_type {ml.cb_type}"
    elif (learn.get("algo") or "gd") != "gd":
        why = f"--{learn.get('algo')}"
    elif fmt not in ("auto", "vw"):
        why = f"--{fmt}"
    elif passes > 1 and (learn.get("holdout_period") != 0 and not learn.get("holdout_off")):
        why = "held-out examples (use --holdout_off)"
    elif learn.get("ignore_linear"):
        why = "--ignore_linear"
    elif learn.get("l1"):
        why = "--l1"
    elif ml.explore == "squarecb" and ml.elim:
        why = "--elim"
    if ml.reduction not in built or ml.legacy or ml.evaluate or why:
        from streamlearn.reductions.options import reduction_name

        what = why or reduction_name(ml)
        raise UsageError(f"sl vw: --audit is not written for {reduction_name(ml)} with {what} "
                         "yet (sl refuses it rather than skip it)")  # fmt: skip


def one(part, e: int):  # noqa: ANN001, ANN201 - an io.examples.Part
    """Example ``e`` of ``part`` as a part of its own."""
    mg = part.mg
    r0, r1 = int(mg.act_ptr[e]), int(mg.act_ptr[e + 1])
    k0, k1 = int(mg.indptr[r0]), int(mg.indptr[r1])
    new_mg = dataclasses.replace(
        mg, act_ptr=np.array([0, r1 - r0], dtype=mg.act_ptr.dtype),
        example=mg.example[e : e + 1], row=mg.row[r0:r1], indptr=mg.indptr[r0 : r1 + 1] - k0,
        indices=mg.indices[k0:k1], values=mg.values[k0:k1],
        ns=mg.ns[k0:k1] if mg.ns is not None else None,
    )  # fmt: skip
    rows = slice(r0, r1)
    per_row = (lambda a: a[rows] if a is not None and a.shape[0] else a)  # noqa: E731
    tags = dataclasses.replace(part.tags, start=part.tags.start[e : e + 1],
                               end=part.tags.end[e : e + 1])  # fmt: skip
    src = part.src
    if src is not None:
        src = dataclasses.replace(
            src, row_line=src.row_line[rows], tag_start=src.tag_start[rows],
            tag_end=src.tag_end[rows], head_line=src.head_line[e : e + 1],
        )  # fmt: skip
    return dataclasses.replace(
        part, mg=new_mg, chosen=part.chosen[e : e + 1], cost=part.cost[e : e + 1],
        prob=part.prob[e : e + 1], lab_n=per_row(part.lab_n), lab_cls=per_row(part.lab_cls),
        lab_cost=per_row(part.lab_cost), tags=tags, ex_lines=part.ex_lines[e : e + 1],
        bad=part.bad if e == 0 else [], sub=per_row(part.sub),
        feat_row=part.feat_row[e : e + 1] if part.feat_row is not None else None,
        feat_total=part.feat_total[e : e + 1] if part.feat_total is not None else None, src=src,
    )  # fmt: skip


class Audit:
    """Writes the audit of each example of a multiline run (``ml``, ``cfg``: its options)."""

    def __init__(self, ml, cfg, out=None) -> None:  # noqa: ANN001
        self.ml = ml
        self.cfg = cfg
        self.params = cfg.params()
        self.loss_id = cfg.loss_id
        self.inter = cfg.namespaces()
        self.bits = cfg.bits
        self.mask = (1 << cfg.bits) - 1
        self.learning = self.params[10] != 0.0  # P_LEARN
        self.adaptive = self.params[P_ADAPTIVE] != 0.0 and self.learning
        self.whole = self.params[P_L1] != 0.0 or self.params[P_L2] != 0.0
        self.out = out if out is not None else sys.stdout.buffer
        self._lines: tuple[int, list[bytes]] | None = None
        self.nameless = False  # read from a cache: VW's features have no names but Constant

    def split(self, parts, cached: bool = False):  # noqa: ANN001, ANN201
        """Each example of ``parts`` as a part of its own (one kernel call each);
        ``cached``: the parts are read from a cache (VW's cache keeps no names)."""
        self.nameless = cached
        for part in parts:
            m = part.mg.act_ptr.shape[0] - 1
            if m <= 1:
                yield part
                continue
            for e in range(m):
                yield one(part, e)

    # -- the text of the rows

    def _text(self, src: Source, line: int) -> bytes:
        return self._line_text(src.data, src.first_line, line)

    def _line_text(self, data: np.ndarray, first_line: int, line: int) -> bytes:
        """Line ``line`` of the block ``data`` whose first line is ``first_line`` (the
        block split once)."""
        key = id(data)
        if self._lines is None or self._lines[0] != key:
            self._lines = (key, data.tobytes().split(b"\n"))
        return self._lines[1][int(line) - first_line].rstrip(b"\r")

    def _feats(self, line: bytes) -> list[tuple[int, str, int, float]]:
        """(32-bit slot, name, namespace byte, value) of a line's features, grouped by
        namespace in the order each first appears (VW's example)."""
        from streamlearn.io.names import line_names, with_grams

        values: list[float] = []
        feats = line_names(line, 32, self.inter, values)
        if len(values) != len(feats):
            values = [1.0] * len(feats)
        grams = with_grams(feats, self.inter, 32)
        if len(grams) != len(feats):
            raise UsageError("sl vw: --audit with --ngram/--skips under multiline reductions: "
                             "not written yet")  # fmt: skip
        order: list[int] = []
        groups: dict[int, list] = {}
        for (slot, name, nsb), x in zip(feats, values, strict=True):
            if nsb not in groups:
                groups[nsb] = []
                order.append(nsb)
            groups[nsb].append((slot, name, nsb, x))
        return [f for nsb in order for f in groups[nsb]]

    def _merged(self, action: bytes, shared: bytes | None,
                common: list | None = None) -> list[tuple[int, str, float]]:  # fmt: skip
        """(table slot at offset 0, name, value) of an action line merged with the shared
        line (or the shared example's features ``common``: CCB's slot injects its own), in
        VW's order: linear features (namespaces kept), constant, crosses."""
        from streamlearn.hashing import CONSTANT_HASH

        own = self._feats(action)
        if common is None:
            common = self._feats(shared) if shared is not None else []
        spaces: list[int] = []
        groups: dict[int, list] = {}
        for f in own + common:
            if f[2] not in groups:
                groups[f[2]] = []
                if f in own or not any(o[2] == f[2] for o in own):
                    spaces.append(f[2])
            groups[f[2]].append(f)
        action_spaces = [s for s in spaces if any(o[2] == s for o in own)]
        shared_spaces = [s for s in spaces if s not in action_spaces]
        inter = self.inter
        mask = self.mask

        def kept(nsb: int) -> bool:
            return inter is None or not (inter.drop[nsb] or inter.drop_linear[nsb])

        out = [(slot & mask, name, x) for s in action_spaces for slot, name, _, x in groups[s]
               if kept(s)]  # fmt: skip
        if self.cfg.constant:
            out.append((CONSTANT_HASH & mask, "Constant", 1.0))
        out += [(slot & mask, name, x) for s in shared_spaces for slot, name, _, x in groups[s]
                if kept(s)]  # fmt: skip
        if inter is not None and inter.terms.shape[0]:
            feats = [(slot & mask, name, nsb, x) for s in action_spaces + shared_spaces
                     for slot, name, nsb, x in groups[s]]  # fmt: skip
            out += crossed_values(feats, inter, self.bits)
        return out

    def _tag(self, src: Source, r: int) -> bytes:
        a, b = int(src.tag_start[r]), int(src.tag_end[r])
        return (b" " + src.data[a:b].tobytes()) if b > a else b""

    # -- the numbers

    def _range(self, gstate: np.ndarray) -> tuple[float, float]:
        """The prediction range (VW's min_label, max_label) of ``gstate``."""
        p = self.params
        if p[P_CLIP_FIXED] != 0.0:
            return float(p[P_CLIP_LO]), float(p[P_CLIP_HI])
        if gstate[G_CLIP] == 0.0:
            edge = 50.0 if self.loss_id in (LOGISTIC, POISSON) else 0.0
            return -edge, edge
        return float(gstate[G_LABEL_MIN]), float(gstate[G_LABEL_MAX])

    @staticmethod
    def _clip(raw: F32, lo: float, hi: float) -> F32:
        if raw != raw:
            return F32(0.0)
        return min(max(raw, F32(lo)), F32(hi)) if F32(hi) >= F32(lo) else raw

    def _line(self, table, gstate, feats, pred: float, tag: bytes) -> bytes:  # noqa: ANN001
        from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY, trunc

        slots = np.array([s for s, _, _ in feats], dtype=np.int64)
        x = np.array([v for _, _, v in feats], dtype=F32)
        w = table[slots, 0].astype(F32) if slots.shape[0] else np.zeros(0, dtype=F32)
        grav = F32(gstate[G_GRAVITY])
        contraction = F32(gstate[G_CONTRACTION])
        shown = np.array([trunc(F32(v), grav) * contraction for v in w], dtype=F32)
        g = table[slots, 1].astype(F32) if self.adaptive and slots.shape[0] else None
        if self.adaptive and g is None:
            g = np.zeros(0, dtype=F32)
        names = [n for _, n, _ in feats]
        if self.nameless:
            names = [n if n == "Constant" else "" for n in names]
        return fixed(float(pred) + 0.0).encode("ascii") + tag + b"\n" + feature_cells(
            names, slots, x, w, shown, g)

    def score(self, table, gstate, mg, r: int) -> F32:  # noqa: ANN001
        """gd's raw prediction of merged row ``r`` (the kernels' ``line_score``, in Python)
        from ``table`` (an array, or the weights as they were: :class:`Frozen`)."""
        from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY, trunc

        grav = F32(gstate[G_GRAVITY])
        truncate = self.params[P_L1] != 0.0
        lo, hi = int(mg.indptr[r]), int(mg.indptr[r + 1])
        ws = table[mg.indices[lo:hi].astype(np.int64) & self.mask, 0]
        p = F32(0.0)
        for t in range(hi - lo):
            w = F32(ws[t])
            if truncate:
                w = trunc(w, grav)
            p = F32(p + F32(w * F32(mg.values[lo + t])))
        return F32(p * F32(gstate[G_CONTRACTION]))

    def example(self, part, table: np.ndarray, gstate: np.ndarray) -> None:  # noqa: ANN001
        """Write the audit of ``part`` (one example) from the weights before it is learned."""
        src = part.src
        mg = part.mg
        n = int(mg.act_ptr[1] - mg.act_ptr[0])
        if src is None or n == 0:
            return
        head = self._text(src, src.head_line[0])
        first = self._text(src, src.row_line[0])
        shared = head if int(src.head_line[0]) != int(src.row_line[0]) else None
        rows = [self._merged(self._text(src, src.row_line[r]) if r else first, shared)
                for r in range(n)]  # fmt: skip
        tags = [self._tag(src, r) for r in range(n)]
        if shared is not None:  # (shared_feature_merger: the shared line's tag on the first)
            tag = part.tags[0]
            tags[0] = b" " + tag if tag else b""
        lo, hi = self._range(gstate)
        scores = [self.score(table, gstate, mg, r) for r in range(n)]
        predict = [self._line(table, gstate, rows[r], self._clip(scores[r], lo, hi), tags[r])
                   for r in range(n)]  # fmt: skip
        out = list(predict)
        if self.learning and self.ml.explore in TWICE and int(part.chosen[0]) >= 0:
            out += predict  # (VW predicts, then its learn predicts again)
        if self.ml.reduction == "csoaa_ldf":
            if self.learning and not _ldf_test(part):
                out += self._ldf_learn(part, table, gstate, rows, tags)
        elif self.learning:
            c = int(part.chosen[0])
            if c >= 0:
                y = float(F32(part.cost[0]))
                lo2, hi2 = min(lo, y), max(hi, y)
                if self.params[P_CLIP_FIXED] != 0.0:
                    lo2, hi2 = lo, hi
                out.append(self._line(table, gstate, rows[c], self._clip(scores[c], lo2, hi2),
                                      tags[c]))  # fmt: skip
            elif self.ml.explore:
                out += predict  # (cb_explore_adf's learn predicts an unlabeled example again)
        self.write(out)

    def write(self, out: list[bytes]) -> None:
        """Write an example's audit lines (a reader gone: nothing more said)."""
        try:
            self.out.write(b"".join(out))
            self.out.flush()
        except BrokenPipeError:
            pass

    def _ldf_learn(self, part, table, gstate, rows, tags) -> list[bytes]:  # noqa: ANN001
        """csoaa_ldf's learned lines, each audited before its step: replayed with the
        kernel's line learner, the weights it touched put back after."""
        from streamlearn.learners import csoaa_ldf, gd

        mg = part.mg
        n = len(rows)
        ent = mg.indices.astype(np.int64) & self.mask
        saved_table = table.copy() if self.whole else table[ent].copy()
        saved_g = gstate.copy()
        rule = gd.rule_of(self.params)
        truncate = rule[9] > F32(0.0)
        mask = np.uint64(table.shape[0] - 1)
        slots = np.empty(mg.indices.shape[0], dtype=np.uint32)
        costs = [F32(part.lab_cost[r]) for r in range(n)]
        lo_c, hi_c = min(part.lab_cost[:n]), max(part.lab_cost[:n])
        out = []
        try:
            for r in range(n):
                c = costs[r]
                a, y = 1.0, c
                if self.ml.classifier:
                    if c <= F32(lo_c):
                        y, a = F32(-1.0), float(F32(hi_c) - F32(lo_c))
                    else:
                        y, a = F32(1.0), float(c - F32(lo_c))
                before = Frozen(table, ent, self.whole)
                lo, hi = np.int64(mg.indptr[r]), np.int64(mg.indptr[r + 1])
                p = csoaa_ldf.learn_line(table, gstate, self.params, self.loss_id, rule, slots,
                                         mg.indices, mg.values, lo, hi, y, a, 1, 0, mask,
                                         truncate)  # fmt: skip
                out.append(self._line(before, gstate, rows[r], p, tags[r]))
        finally:
            if self.whole:
                table[:] = saved_table
            else:
                table[ent] = saved_table
            gstate[:] = saved_g
        return out


class Frozen:
    """The weights of some slots as they were (``table[slots]`` read through it)."""

    def __init__(self, table: np.ndarray, ent: np.ndarray, whole: bool) -> None:
        self.copy = table.copy() if whole else None
        self.rows = {} if whole else {int(s): table[s].copy() for s in np.unique(ent)}

    def __getitem__(self, key):  # noqa: ANN001, ANN204
        slots, col = key
        if self.copy is not None:
            return self.copy[slots, col]
        return np.array([self.rows[int(s)][col] if int(s) in self.rows else 0.0 for s in slots],
                        dtype=F32)  # fmt: skip


def _ldf_test(part) -> bool:  # noqa: ANN001
    """csoaa_ldf's test_ldf_sequence (the kernel's): not every line one cost, or a mix."""
    n = int(part.mg.act_ptr[1])
    lab_n, cost = part.lab_n, part.lab_cost
    first_nan = cost[0] != cost[0]
    if lab_n[0] != 1 or first_nan:
        return True
    return any(lab_n[r] != 1 or (cost[r] != cost[r]) != first_nan for r in range(n))
