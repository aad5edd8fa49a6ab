"""``sl vw --audit``: each example's prediction and features on stdout, as VW's gd prints
them.

For each example VW prints, when it predicts (before it learns from the example):
its prediction (the clipped margin, six decimals, then the tag), then one line of
its features, each ``name:slot:value:weight`` (``@`` and the adaptive sum after it
under ``--adaptive``), tab-separated, in decreasing order of ``|weight x value|``
(ties in the example's order: linear features, the constant, the crosses).  A name
is ``ns^feature`` (a feature of the default namespace: ``feature``), ``Constant``,
or ``a^x*b^y`` for a cross.

To show each example's weights as they were before it, the kernel runs one example
at a time (an audit is slow, in VW too).  Under ``--ftrl`` VW prints each example's
audit twice (it predicts, then learns by predicting again), and ``--oaa`` one per
class (its score, its slots); with ``--ignore_linear`` VW lists the ignored linear
features too, and so does sl.  ``--pistol`` and
``--coin`` print the second after a first update of their state, which the kernels
do not stop at: not VW's yet.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np

from streamlearn.hashing import CONSTANT_HASH
from streamlearn.learners.base import R_PROB, S_NROWS
from streamlearn.run.vwformat import fixed, general

F32 = np.float32


class Auditor:
    """Writes the audit lines of a run whose configuration is ``config``."""

    def __init__(self, config, out=None) -> None:  # noqa: ANN001 - a binary stream
        self.config = config
        self.inter = config.namespaces()
        self.out = out if out is not None else sys.stdout.buffer
        self.mask = (1 << config.bits) - 1
        self.constant = (CONSTANT_HASH & self.mask) if config.constant else None
        self.source = ""  # the source of the batch audited (a CSV file's header)

    def ignored_linear(self, line: bytes) -> list[tuple[int, str, float]] | None:
        """With ``--ignore_linear``: (slot, name, value) of every linear feature in VW's
        order, the ignored ones too (VW's audit lists them; the row does not hold them),
        or None when the line's namespaces are not each in one run (then sl prints the
        row's features only)."""
        from streamlearn.io.names import line_names

        inter = self.inter
        if inter is None or not inter.drop_linear.any():
            return None
        values: list[float] = []
        feats = line_names(line, self.config.bits, inter, values, self.source)
        seen: list[int] = []
        for _, _, nsb in feats:
            if not seen or seen[-1] != nsb:
                if nsb in seen:
                    return None
                seen.append(nsb)
        return [(slot, name, x) for (slot, name, nsb), x in zip(feats, values, strict=True)
                if not inter.drop[nsb]]  # fmt: skip

    def names(self, line: bytes, n: int) -> list[str | None]:
        """The names of the ``n`` features of a parsed ``line``, in the row's order, or
        None where they cannot be told (then the slot alone is printed)."""
        from streamlearn.io.names import crossed_names, line_names, with_grams

        inter = self.inter
        feats = with_grams(line_names(line, 32, inter, source=self.source), inter,
                           self.config.bits)  # fmt: skip
        linear = [name for slot, name, nsb in feats
                  if inter is None or not (inter.drop[nsb] or inter.drop_linear[nsb])]  # fmt: skip
        if self.constant is not None:
            linear.append("Constant")
        crosses = [name for _, name in crossed_names(feats, inter, self.config.bits)] \
            if inter is not None and inter.terms.shape[0] else []  # fmt: skip
        names = linear + crosses
        return names if len(names) == n else [None] * n

    def _nsb(self, line: bytes) -> list[tuple[int, str, int]]:
        from streamlearn.io.names import line_names

        return line_names(line, self.config.bits, self.inter, source=self.source)

    def _state(self, learner, slots: np.ndarray) -> tuple:  # noqa: ANN001
        """(slots, stored weights, weights as VW shows them, adaptive sums or None)."""
        from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY, trunc

        c = self.config
        table = learner.table
        w = table[slots, 0].astype(F32)
        g = table[slots, 1].astype(F32) if c.algo == "gd" and c.adaptive else None
        shown = w
        if c.algo == "gd":
            grav = F32(learner.gstate[G_GRAVITY])
            contraction = F32(learner.gstate[G_CONTRACTION])
            shown = np.array([trunc(F32(v), grav) * contraction for v in w], dtype=F32)
        return slots, w, shown, g

    def _range(self, learner) -> tuple[float, float]:  # noqa: ANN001
        """The prediction range before an example (the kernels' :func:`prediction_range`)."""
        from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN

        c = self.config
        if c.min_prediction is not None or c.max_prediction is not None:
            return -np.inf, np.inf  # fixed: the kernel's clip is the range
        g = learner.gstate
        if g[G_CLIP] == 0.0:
            edge = 50.0 if c.loss in ("logistic", "poisson") else 0.0
            return -edge, edge
        return float(g[G_LABEL_MIN]), float(g[G_LABEL_MAX])

    def run(self, learn, learner, batch, numbering=None, rows=None) -> np.ndarray:  # noqa: ANN001 - (batch) -> preds
        """``learn`` over ``batch`` one example at a time, each example's audit written
        before it is learned; the predictions of the whole batch.  ``numbering``: the run's
        :class:`~streamlearn.run.runner.ClassNumbering` (``--oaa``, ``--csoaa``), whose
        info line VW writes among the audits: before the example's (csoaa: as its label
        is read), or after them (oaa: as it learns).  ``rows``: the run's table lines, whose
        ``--multilabel_oaa`` lines name their example in the batch (each call names row 0
        of its batch of one)."""
        c = self.config
        if "--rank" in c.stack:
            return self._run_mf(learn, learner, batch)
        lines = batch.block.data.tobytes().split(b"\n")
        first_line = batch.block.first_line
        self.source = batch.block.source
        out = []
        preds = []
        raws: list[np.ndarray] = []
        for i in range(batch.n):
            lo, hi = int(batch.indptr[i]), int(batch.indptr[i + 1])
            one = row_batch(batch, i)
            feature_slots = batch.indices[lo:hi].astype(np.int64)
            x = batch.values[lo:hi].astype(F32)
            ok = batch.status[i] == 0
            names: list = [None] * (hi - lo)
            if hi > lo and self.constant is not None and (self.inter is None or not
                                                           self.inter.terms.shape[0]):
                names[-1] = "Constant"  # (the row's last, as VW names it from a cache too)
            shown_slots = None
            # (a pass read from a cache has no text: its features are shown by their slots)
            k = int(batch.line[i]) - first_line
            text = lines[k] if ok and 0 <= k < len(lines) and batch.block.data.shape[0] else None
            if text is not None:
                names = self.names(text, hi - lo)
                linear = None if c.oaa else self.ignored_linear(text)
                if linear is not None:
                    # VW lists the linear features --ignore_linear leaves out of the sums:
                    # them, then the row's constant and crosses
                    inter = self.inter
                    kept = sum(1 for _, _, nsb in self._nsb(text)
                               if not (inter.drop[nsb] or inter.drop_linear[nsb]))  # fmt: skip
                    if kept <= hi - lo:
                        shown_slots = np.concatenate(
                            [np.array([v[0] for v in linear], dtype=np.int64),
                             feature_slots[kept:]])  # fmt: skip
                        x = np.concatenate([np.array([v[2] for v in linear], dtype=F32),
                                            x[kept:]])  # fmt: skip
                        names = [v[1] for v in linear] + list(names[kept:])
            if shown_slots is not None:
                state = [self._state(learner, shown_slots)]
            else:
                classes = max(c.oaa, 1)
                step = 1 << max(c.oaa - 1, 0).bit_length() if c.oaa else 1
                state = [self._state(learner, (feature_slots * step + k) & self.mask)
                         for k in range(classes)]  # fmt: skip
            before = self._range(learner) if c.algo == "ftrl" else None
            span = self._range(learner) if c.csoaa else None
            shown = int(learner.stats[S_NROWS])
            p = learn(one)
            if c.multilabel and rows is not None:
                rows[shown : int(learner.stats[S_NROWS]), R_PROB] = i
            info = numbering.decided_in(i).encode() if numbering is not None else b""
            if info and c.csoaa:
                out.append(info)
                info = b""
            if p.ndim == 1 and p.shape[0] == 2:  # -r: the unclipped score after it
                raws.append(p[1:])
                p = p[:1]
            preds.append(p)
            if not ok:
                continue
            tag = _tag(batch, i)
            row = p.reshape(-1)
            order = range(len(state))
            if c.csoaa and int(batch.labels[i, 0]) > 0:  # VW audits the classes listed, in order
                order = _listed(batch.labels[i], row)
            costs = _costs(batch.labels[i]) if c.csoaa else None
            for n_k, k in enumerate(order):
                slots, w, shown, g = state[k]
                # --oaa: one audit per class, its score and its slots (VW's multipredict)
                score = float(row[1 + k]) if c.oaa else float(row[0])
                if c.csoaa and score != score:
                    continue  # --csoaa: a class the line does not list is not scored
                if span is not None:  # --csoaa: gd's prediction, clipped as the scorer widens
                    if costs and n_k < len(costs) and np.isfinite(costs[n_k]) and not c.test_only:
                        span = (min(span[0], costs[n_k]), max(span[1], costs[n_k]))
                    score = float(F32(min(max(score, span[0]), span[1])))
                head = fixed(score + 0.0).encode("ascii") + tag + b"\n"
                features = feature_cells(names, slots, x, w, shown, g)
                if before is not None:
                    # VW's --ftrl predicts (in the range before the label widens it), then
                    # learns by predicting again: two audits of one state
                    first = min(max(score, before[0]), before[1])
                    out.append(fixed(first + 0.0).encode("ascii") + tag + b"\n" + features)
                out.append(head + features)
            out.append(info)
        if numbering is not None:
            numbering.audited()
        self._write(out)
        return np.concatenate(preds + raws) if preds else np.empty(0)


    def _run_mf(self, learn, learner, batch) -> np.ndarray:  # noqa: ANN001
        """``--rank``'s audit, as VW's gd_mf prints it when it predicts: the prediction, then
        each feature in the example's order (``name:index(slot):value:weight``, VW's index
        the hash times its stride), then for each ``-q`` pair, rank and two features, both
        sides' latent weights and their product."""
        from streamlearn.learners.gd_mf import initial_row, rank_of, stride_shift
        from streamlearn.reductions.gd_mf import pairs_of

        c = self.config
        rank = rank_of(c.stack)
        ss = stride_shift(rank)
        wmask = ((1 << c.bits) << ss) - 1
        lines = batch.block.data.tobytes().split(b"\n")
        self.source = batch.block.source
        table = learner.table
        pairs = pairs_of(c).tolist()

        initial: dict[int, list[float]] = {}  # rows no example has read: VW's draws

        def weight(row: int, col: int) -> float:
            if table[row, -1] != 0.0:
                return float(table[row, col])
            if row not in initial:
                initial[row] = initial_row(row, ss, 2 * rank + 1)
            return initial[row][col]

        out, preds = [], []
        for i in range(batch.n):
            lo, hi = int(batch.indptr[i]), int(batch.indptr[i + 1])
            one = row_batch(batch, i)
            ns = one.ns
            cells = []
            if batch.status[i] == 0:
                text = lines[int(batch.line[i]) - batch.block.first_line]
                names = self.names(text, hi - lo)
                feats = []
                for t in range(hi - lo):
                    row = int(batch.indices[lo + t])
                    const = names[t] == "Constant" and row == self.constant
                    index = (CONSTANT_HASH if const else row) << ss
                    feats.append((names[t] or "", index, row, float(batch.values[lo + t]),
                                  int(ns[t]) if ns is not None else 32))  # fmt: skip
                for name, index, row, x, _ in feats:
                    cells.append(f"\t{name}:{index}({index & wmask}):{general(x)}:"
                                 f"{general(weight(row, 0))}")  # fmt: skip
                for a, b in pairs:
                    left = [f for f in feats if f[4] == a]
                    right = [f for f in feats if f[4] == b]
                    for k in range(1, rank + 1):
                        for n1, i1, r1, x1, _ in left:
                            for n2, i2, r2, x2, _ in right:
                                w1, w2 = weight(r1, k), weight(r2, rank + k)
                                cells.append(
                                    f"\t{n1}:{(i1 + k) & wmask}({(i1 + k) & wmask}):"
                                    f"{general(x1)}:{general(w1)}:{n2}:"
                                    f"{(i2 + k + rank) & wmask}({(i2 + k + rank) & wmask}):"
                                    f"{general(x2)}:{general(w2)}:{general(F32(w1) * F32(w2))}")
            p = learn(one)
            preds.append(p)
            if batch.status[i] != 0:
                continue
            tag = _tag(batch, i)
            out.append(fixed(float(p.reshape(-1)[0]) + 0.0).encode("ascii") + tag + b"\n"
                       + "".join(cells).encode("utf-8", "surrogateescape") + b"\n")  # fmt: skip
        self._write(out)
        return np.concatenate(preds) if preds else np.empty(0)

    def _write(self, out: list[bytes]) -> None:
        try:
            self.out.write(b"".join(out))
            self.out.flush()
        except BrokenPipeError:
            pass


def row_batch(batch, i: int) -> SimpleNamespace:  # noqa: ANN001 - an io.batch.Batch
    """Row ``i`` of ``batch`` as a batch of one (its namespace bytes too, when kept)."""
    lo, hi = int(batch.indptr[i]), int(batch.indptr[i + 1])
    ns = getattr(batch, "ns", None)
    return SimpleNamespace(
        n=1, indptr=np.array([0, hi - lo], dtype=batch.indptr.dtype),
        indices=batch.indices[lo:hi], values=batch.values[lo:hi],
        labels=batch.labels[i : i + 1], weights=batch.weights[i : i + 1],
        bases=batch.bases[i : i + 1], status=batch.status[i : i + 1],
        ns=ns[lo:hi] if ns is not None else None,
    )  # fmt: skip


def _tag(batch, i: int) -> bytes:  # noqa: ANN001 - an io.batch.Batch
    """Row ``i``'s tag as VW prints it after a prediction (a space first), or nothing."""
    a, b = int(batch.tag_start[i]), int(batch.tag_end[i])
    return (b" " + batch.block.data[a:b].tobytes()) if b > a else b""


def _costs(label: np.ndarray) -> list[float]:
    """--csoaa: the costs a line lists, in its order (inf: none given)."""
    return [float(label[2 + 2 * j]) for j in range(int(label[0]))]


def _listed(label: np.ndarray, row: np.ndarray) -> list[int]:
    """--csoaa: the 0-based classes a line lists, in its order (the classes numbered from
    0 or from 1, as the scored columns of ``row`` tell)."""
    k = row.shape[0] - 1
    listed = [int(label[1 + 2 * j]) for j in range(int(label[0]))]
    one = all(1 <= cl <= k and row[cl] == row[cl] for cl in listed)
    return [cl - 1 if one else cl for cl in listed if 0 <= (cl - 1 if one else cl) < k]


def feature_cells(names: list, slots: np.ndarray, x: np.ndarray, w: np.ndarray, shown: np.ndarray,
           g: np.ndarray | None) -> bytes:  # fmt: skip
    """One example's features line: by decreasing |w x|, ties in the row's order."""
    order = sorted(range(len(slots)), key=lambda k: -abs(float(F32(w[k] * x[k]))))
    cells = []
    for k in order:
        text = f"{names[k] or ''}:{int(slots[k])}:{general(x[k])}:{general(shown[k])}"
        if g is not None:
            text += f"@{general(g[k])}"
        cells.append("\t" + text)
    return "".join(cells).encode("utf-8", "surrogateescape") + b"\n"
