"""``sl vw --cbify K --cbify_reg``: regression examples played as a continuous-action
bandit (VW's ``cbify.cc``, its regression part), a loop of its own as ``--cbzo``'s.

Per line ``y |x`` (VW's ``predict_or_learn_regression``):

1. CATS predicts (:mod:`streamlearn.learners.cats_tree`): the tree's action, its pdf (a
   density ``1/(2b)`` around the action's centre, smoothed with ``--epsilon``), an action
   drawn from it with VW's generator (``--random_seed``);
2. its cost: ``--loss_option`` 0 ``(y - a)²/r²``, 1 ``|y - a|/r``, 2 ``|y - a| > ratio·r``
   (``r = max_value - min_value``);
3. learning (a labeled line), CATS predicts once more (another draw: VW's ``cats::learn``,
   whose prediction is dropped), and the tree learns the label ``a:cost:pdf`` (VW's
   ``pmf_to_pdf::learn``: the leaves within the tree bandwidth of the action's).

With ``--cb_discrete --cats_tree K`` (VW's ``predict_or_learn_regression_discrete``):
``cb_explore``'s epsilon-greedy over the tree's action, an action index ``i`` drawn as
``--cbify`` K's (``uniform_hash("vw") + n``), played as ``min + i·r/K``, and the tree learns
``i+1:cost:p``.

The progress table shows the label and the action played; the loss is the cost
(``--loss_report 1``: times ``r``, or ``r²``, in the label's units); VW's weighted label sum
adds the actions (1-based under ``--cb_discrete``), its best constant is that sum over the
examples; a line without a label is played, not learned, its cost counted with the
held-out ones (VW's test example).  ``-p`` writes ``action:cost:pdf_value`` per line (VW's
defaults of C++ streams; nothing under ``--cb_discrete``, as VW).
After the summary, unless quiet, VW's "Learn() count per node" line (the first 16 nodes).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from streamlearn.errors import NoExamples, UsageError
from streamlearn.run.cbzo import shortest

F32 = np.float32
FLT_MAX = F32(3.4028234663852886e38)
DM = 2  # (learners.cb_adf.DM)


def _g(x: float) -> str:
    """A float32 as C++'s default stream writes it (6 significant digits)."""
    v = float(F32(x))
    if v != v:
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    text = f"{v:g}"
    return text


class State:
    """A run's tree, table and generator."""

    def __init__(self, ml, cfg) -> None:  # noqa: ANN001
        from streamlearn.learners import cb_algs
        from streamlearn.learners.base import fresh_table
        from streamlearn.learners.cats_tree import SMALL_DRAW, build_tree, tree_bandwidth
        from streamlearn.learners.csoaa_ldf import BASES, COLUMNS, G_BASE, G_MODEL

        self.k = ml.cbify or ml.cats_k or ml.cats_pdf
        self.lo, self.hi = F32(ml.min_value), F32(ml.max_value)
        self.discrete = bool(ml.cb_discrete)
        half = F32(F32(F32(self.hi - self.lo) / F32(self.k)) / F32(2.0))
        self.bandwidth_given = ml.bandwidth is not None
        self.bw = F32(ml.bandwidth) if ml.bandwidth is not None else half
        self.tree_bw = 0 if self.discrete else tree_bandwidth(self.k, self.lo, self.hi, self.bw)
        self.eps = F32(0.05 if ml.epsilon is None else ml.epsilon)
        self.nodes, self.depth = build_tree(self.k, self.tree_bw)
        self.counts = np.zeros(max(1, self.nodes.shape[0]), dtype=np.int64)
        internal = max(1, self.k - 1)
        self.width = 1 << max(internal - 1, 0).bit_length()
        self.params = cfg.params()
        self.loss_id = cfg.loss_id
        algo = cfg.algo if cfg.algo in BASES else "gd"
        self.table = fresh_table(cfg.bits, (0.0,) * COLUMNS[algo], np.float32)
        self.gstate = cb_algs.init_gstate(self.params, self.width)
        self.gstate[G_BASE] = BASES[algo]
        if algo != "gd":  # (the ftrl family's normalizer sums start at 0, not at t0)
            self.gstate[G_MODEL] = self.gstate[G_MODEL + 1] = 0.0
        self.rng = np.array([cfg.seed], dtype=np.uint64)
        self.counter = 0
        self.small_draw = SMALL_DRAW
        self.lims = np.zeros(8, dtype=np.float32)
        self.probs = np.zeros(8, dtype=np.float32)
        self.pmf = np.zeros(self.k, dtype=np.float32)
        self.legacy = None
        self.numbered = False
        self.quiet = False
        if self.discrete and not ml.cats_tree:
            self.legacy = _legacy(ml, cfg, algo)

    @functools.cached_property
    def rule(self) -> tuple:
        """gd's rule of the run, its float32 constants as float32 (a compiled ``rule_of``
        hands them back as Python floats, which the tree's kernels would then type as
        float64: off VW by an ulp).  Made when first asked: ``--cats``'s block kernel
        makes its own."""
        from streamlearn.learners import gd

        return tuple(F32(v) if isinstance(v, float) else v for v in gd.rule_of(self.params))

    @property
    def truncate(self) -> bool:
        return bool(self.rule[9] > F32(0.0))

    # ------------------------------------------------------------------ the stack

    def _tree(self, b, lo: int, hi: int) -> int:
        from streamlearn.learners.cats_tree import tree_predict

        return int(tree_predict(self.table, self.gstate, self.params, self.loss_id, b.indices,
                                b.values, lo, hi, self.width, self.truncate,
                                self.nodes))  # fmt: skip

    def _learn_tree(self, b, lo: int, hi: int, slots, first: int, last: int, cost, prob) -> None:  # noqa: ANN001
        from streamlearn.learners.cats_tree import tree_learn

        tree_learn(self.table, self.gstate, self.params, self.loss_id, self.rule, slots,
                   b.indices, b.values, lo, hi, self.width, self.truncate, self.nodes,
                   self.depth, self.counts, first, last, F32(cost), F32(prob),
                   self.small_draw)  # fmt: skip

    def pdf(self, b, lo: int, hi: int) -> int:
        """CATS's pdf of line ``lo:hi`` in ``lims``/``probs``; returns its segments
        (VW's ``cats_pdf`` prediction)."""
        from streamlearn.learners.cats_tree import explore_pdf, pmf_to_pdf

        a = self._tree(b, lo, hi)
        m = pmf_to_pdf(a - 1, self.k, self.lo, self.hi, self.bw, self.lims, self.probs)
        explore_pdf(self.probs, m, self.eps, self.lo, self.hi)
        return m

    def sample(self, b, lo: int, hi: int) -> tuple:
        from streamlearn.learners.cats_tree import sample_pdf

        m = self.pdf(b, lo, hi)
        return sample_pdf(self.rng, self.lims, self.probs, m)

    def _cost(self, ml, action: np.float32, y: np.float32) -> np.float32:
        with np.errstate(all="ignore"):  # (a line without label: FLT_MAX's, as VW's)
            return self._cost_of(ml, action, y)

    def _cost_of(self, ml, action: np.float32, y: np.float32) -> np.float32:
        diff = F32(y - action)
        r = F32(self.hi - self.lo)
        if ml.loss_option == 0:
            return F32(F32(diff * diff) / F32(r * r))
        if ml.loss_option == 1:
            return F32(abs(diff) / r)
        return F32(0.0) if abs(diff) <= F32(F32(ml.loss_01_ratio) * r) else F32(1.0)

    def _reported(self, ml, cost: np.float32) -> np.float32:
        with np.errstate(all="ignore"):
            return self._reported_of(ml, cost)

    def _reported_of(self, ml, cost: np.float32) -> np.float32:
        if ml.loss_report != 1:
            return cost
        r = F32(self.hi - self.lo)
        if ml.loss_option == 0:
            return F32(F32(cost * r) * r)
        if ml.loss_option == 1:
            return F32(cost * r)
        return cost

    def play(self, ml, b, r: int, slots, learn: bool) -> tuple:  # noqa: ANN001
        """Line ``r`` of batch ``b`` played: (the action, its reported cost, its density,
        the action's weight in VW's label sum)."""
        lo, hi = int(b.indptr[r]), int(b.indptr[r + 1])
        y = F32(b.labels[r]) if not math.isnan(b.labels[r]) else FLT_MAX
        if self.discrete:
            return self._play_discrete(ml, b, lo, hi, y, slots, learn)
        action, pdf = self.sample(b, lo, hi)
        action, pdf = F32(action), F32(pdf)
        cost = self._cost(ml, action, y)
        if learn:
            self.sample(b, lo, hi)  # (cats::learn predicts again: a second draw)
            self.learn_label(b, lo, hi, slots, action, cost, pdf)
        return action, self._reported(ml, cost), pdf, float(action)

    def learn_label(self, b, lo: int, hi: int, slots, action, cost, pdf) -> None:  # noqa: ANN001
        """VW's ``pmf_to_pdf::learn``: the label ``action:cost:pdf`` given to the tree over
        the leaves within the tree bandwidth of the action's leaf."""
        k, rng = self.k, F32(self.hi - self.lo)
        unit = F32(rng / F32(k))
        ac = F32(F32(action - self.lo) / unit)
        seg = min(k - 1, int(math.floor(ac)))
        if not F32(self.lo + F32(F32(seg) * unit)) <= action:
            seg -= 1
        if not action < F32(self.lo + F32(F32(seg + 1) * unit)):
            seg += 1
        tb = self.tree_bw
        first = max(0, seg - tb)
        last = min(k - 1, seg + tb)
        width = 1 if tb == 0 else 2 * tb
        prob = F32(F32(F32(pdf * F32(width)) * rng) / F32(k))
        self._learn_tree(b, lo, hi, slots, first + 1, last + 1, cost, prob)

    def _play_discrete(self, ml, b, lo: int, hi: int, y, slots, learn: bool) -> tuple:  # noqa: ANN001
        from streamlearn.learners.explore import APP_SEED, sample_after_normalizing

        line = None
        if self.legacy is not None:
            line = (np.array([0, hi - lo], dtype=np.int64), b.indices[lo:hi], b.values[lo:hi])
            pmf = self.legacy.predict(line)
        else:
            a = self._tree(b, lo, hi)
            pmf = self.pmf
            prob = F32(self.eps / F32(self.k))
            pmf[:] = prob
            pmf[a - 1] += F32(F32(1.0) - self.eps)
        chosen = int(sample_after_normalizing(np.uint64(APP_SEED + self.counter), pmf))
        self.counter += 1
        p = F32(pmf[chosen])
        rng = F32(self.hi - self.lo)
        action = F32(self.lo + F32(F32(F32(chosen) * rng) / F32(self.k)))
        cost = self._cost(ml, action, y)
        if learn and line is not None:
            if not self.numbered and self.legacy.lg.cb_type != DM:
                self.numbered = True  # (VW's csoaa, at the first label naming class K)
                if not self.quiet:
                    from streamlearn.run.vwconsole import vw_log

                    vw_log(f"[info] label {self.k} found -- labels are now considered "
                           "1-indexed.\n")  # fmt: skip
            self.legacy.learn(line, chosen + 1, float(cost), float(p))
        elif learn:
            self._learn_tree(b, lo, hi, slots, chosen + 1, chosen + 1, cost, p)
        return action, self._reported(ml, cost), p, float(chosen + 1)

    def learn_counts(self) -> str | None:
        """VW's ``tree_stats_to_string``: the learns of the first internal nodes (< 16)."""
        if self.legacy is not None:
            return None
        parts = []
        for node in range(self.nodes.shape[0]):
            if self.nodes[node, 5] or node >= 16:
                break
            parts.append(f"id={node}, #l={int(self.counts[node])}; ")
        return "Learn() count per node: " + "".join(parts)


def _header(ml, cfg, inputs, outputs, say, step: float, legacy: bool):  # noqa: ANN001, ANN202
    """VW's header (:func:`streamlearn.run.mlconsole.vw_header`'s; cb_algs says its
    ``cb_type`` before the learners); the progress table to fill."""
    from streamlearn.run import mlconsole, vwconsole

    if not legacy:
        return mlconsole.vw_header(ml, cfg, inputs, outputs, say, step=step)
    vwconsole.say_notes(cfg, outputs)
    lines = mlconsole.header(ml, cfg, inputs, outputs, None, list(inputs.sources or ["-"]))
    lines = lines.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Enabled learners"))
    lines.insert(at, f"cb_type = {ml.cb_type}")
    say("\n".join(lines))
    return mlconsole.Progress(say, False, step=step)


def _legacy(ml, cfg, algo: str):  # noqa: ANN001, ANN202
    """``--cb_discrete`` without ``--cats_tree``: VW's cb_explore K (epsilon-greedy) over
    cb_algs over csoaa, ``--cbify K``'s legacy learner (:mod:`streamlearn.run.cbify`) on
    the base ``algo``."""
    from streamlearn.learners.base import fresh_table
    from streamlearn.learners.csoaa_ldf import BASES, COLUMNS, G_BASE, G_MODEL
    from streamlearn.run.cbify import LegacyLearner

    below = dataclasses.replace(ml, actions=ml.cbify, reduction="cb", explore="greedy",
                                legacy=True)  # fmt: skip
    lg = LegacyLearner(below, cfg)
    lg.lg.table = fresh_table(cfg.bits, (0.0,) * COLUMNS[algo], np.float32)
    lg.lg.gstate[G_BASE] = BASES[algo]
    if algo != "gd":  # (the ftrl family's normalizer sums start at 0, not at t0)
        lg.lg.gstate[G_MODEL] = lg.lg.gstate[G_MODEL + 1] = 0.0
    return lg


def _blocks(inputs, cfg):  # noqa: ANN001, ANN202
    """Each block of the inputs parsed as VW's text with simple labels."""
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.parse import FMT_VW, parse_block
    from streamlearn.io.reader import iter_blocks

    inter = dataclasses.replace(cfg.namespaces() or compile_interactions(), f32=True,
                                vw_numbers=True)  # fmt: skip
    for block in iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                             inputs.flat_text(cfg)):  # fmt: skip
        yield parse_block(block, FMT_VW, cfg.bits, cfg.constant, inter)


class _Labels:
    """VW's ``count_label``: the first two labels seen, and whether a third came."""

    def __init__(self) -> None:
        self.labels: list[float] = []
        self.more_than_two = False

    def see(self, y: float) -> None:
        if math.isnan(y) or self.more_than_two:
            return
        y = float(F32(y))
        if y in self.labels:
            return
        if len(self.labels) < 2:
            self.labels.append(y)
        else:
            self.more_than_two = True


def run(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Play ``inputs.sources`` (``--cbify K --cbify_reg``); the summary."""
    from streamlearn.learners.base import G_N
    from streamlearn.reductions.options import config_of
    from streamlearn.run import mlconsole
    from streamlearn.run.mlpasses import report_block
    from streamlearn.run.mlsummary import write_text
    from streamlearn.run.vwconsole import vw_log
    from streamlearn.system.outputs import staging

    cfg = config_of(learn, bases=True)
    if cfg.passes > 1:
        raise UsageError("--cbify_reg with --passes: not supported by sl yet")
    st = State(ml, cfg)
    quiet = getattr(outputs, "vw_quiet", False)
    st.quiet = quiet
    say = console.say if not quiet else (lambda *a: None)
    step = getattr(console, "progress", 0.0)
    if getattr(outputs, "vw_format", False) and not quiet:
        progress = _header(ml, cfg, inputs, outputs, say, step, st.legacy is not None)
    else:
        progress = mlconsole.Progress(say, False, quiet=quiet, step=step)
    if not st.bandwidth_given and not st.discrete and not quiet:
        note = ("[info] Bandwidth was not supplied, setting default to half the continuous "
                f"action unit range: {shortest(st.bw)}\n")  # fmt: skip
        vw_log(note + note)  # (cats's, then pmf_to_pdf's)
    training = not cfg.test_only
    preds: list[str] = []
    seen = _Labels()
    label_sum = 0.0
    malformed = 0
    read = 0
    for b in _blocks(inputs, cfg):
        malformed = report_block(b, malformed, inputs.strict, say)
        rows = np.flatnonzero(b.status == 0)
        m = rows.shape[0]
        if not m:
            continue
        read += m
        slots = np.empty(b.indices.shape[0], dtype=np.uint32)
        loss = np.zeros(m)
        labeled = np.ones(m, dtype=np.bool_)
        shown: list[tuple] = []
        for e, r in enumerate(rows.tolist()):
            y = float(b.labels[r])
            seen.see(y)
            has = not math.isnan(y)
            action, cost, pdf, weight = st.play(ml, b, r, slots, training and has)
            st.gstate[G_N] += 1.0  # (VW's t: every example)
            loss[e] = float(cost)
            if has:
                label_sum += weight
            shown.append((y, action))
            if outputs.predictions and not st.discrete:  # (VW writes none under it)
                preds.append(f"{_g(action)}:{_g(cost)}:{_g(pdf)}\n")
        feats = np.diff(b.indptr)[rows]

        def label_of(e: int, shown=shown) -> str:  # noqa: ANN001
            y = shown[e][0]
            return "unknown" if math.isnan(y) else f"{float(F32(y)):.4f}"

        def pred_of(e: int, shown=shown) -> str:  # noqa: ANN001
            return f"{float(shown[e][1]):.4f}"

        # (a line without a label is VW's test example: its cost in the holdout sums)
        held = np.isnan(b.labels[rows])
        progress.batch(0, labeled, held, loss, feats, feats, label_of, pred_of)
    if not read and not inputs.allow_empty:
        raise NoExamples("no usable example in the input (nothing written)")
    p = progress
    summary = {"examples": p.example_number, "per_pass": p.example_number, "passes": 1,
               "best_holdout": None, "loss": p.sum_loss / p.wlab if p.wlab else None,
               "malformed": malformed, "weighted_labels": label_sum}  # fmt: skip
    with staging() as stage:
        if outputs.predictions:
            write_text(outputs.predictions, "".join(preds))
        from streamlearn.learners.base import G_LABEL_MAX, G_LABEL_MIN

        label_range = (st.gstate[G_LABEL_MIN], st.gstate[G_LABEL_MAX])
        _summary(say, summary, p, seen, label_sum, label_range)
        if not quiet and st.learn_counts() is not None:
            say(st.learn_counts())
        stage.write()
        stage.commit()
    return summary


def _summary(say, s: dict, p, seen: _Labels, label_sum: float, label_range: tuple) -> None:  # noqa: ANN001
    """VW's summary of the run: its best constant (the actions' sum over the examples) and
    that constant's squared loss over the first two labels seen (``get_best_constant``),
    beyond the label range ``label_range`` as VW's ``squaredloss::get_loss`` (the range
    the tree's nodes widened: their labels are -1 and 1)."""
    weighted = p.wlab + p.wunl
    say("")
    say("finished run")
    say(f"number of examples = {p.example_number}")
    say(f"weighted example sum = {weighted:.6f}")
    say(f"weighted label sum = {label_sum:.6f}")
    say("average loss = n.a." if s["loss"] is None else f"average loss = {s['loss']:.6f}")
    for line in _best_constant(seen, label_sum, p.wlab, label_range):
        say(line)
    say(f"total feature number = {p.total_features}")


def _best_constant(seen: _Labels, wl: float, wlab: float, label_range: tuple) -> list[str]:
    """VW's ``get_best_constant`` lines for the squared loss, in float32."""
    if not seen.labels:
        return []
    l1 = F32(seen.labels[0])
    l2 = F32(seen.labels[1]) if len(seen.labels) > 1 else F32(0.0)
    if l1 == l2:
        return []
    lo, hi = min(l1, l2), max(l1, l2)
    lo_cnt = F32((wl - float(hi) * wlab) / float(lo - hi))
    hi_cnt = F32(F32(wlab) - lo_cnt)
    if lo_cnt + hi_cnt <= F32(0.0):
        return []
    best = F32(F32(wl) / F32(wlab))
    out = [f"best constant = {float(best):.6f}"]
    if not seen.more_than_two:
        total = F32(0.0)
        for y, cnt in ((lo, lo_cnt), (hi, hi_cnt)):
            if cnt > 0:
                total = F32(total + F32(_squared(best, y, *label_range) * cnt))
        out.append(f"best constant's loss = {float(F32(total / F32(lo_cnt + hi_cnt))):.6f}")
    return out


def _squared(p: np.float32, y: np.float32, lo: float, hi: float) -> np.float32:
    """VW's ``squaredloss::get_loss``: linear beyond the label range ``[lo, hi]``."""
    lo, hi = F32(lo), F32(hi)
    if lo <= p <= hi:
        return F32((p - y) * (p - y))
    if p < lo:
        if y == lo:
            return F32(0.0)
        d = float(y - lo)
        return F32(d * d + 2.0 * d * float(lo - p))
    if y == hi:
        return F32(0.0)
    d = float(hi - y)
    return F32(d * d + 2.0 * d * float(p - hi))
