"""``--epsilon_decay``: several epsilon-greedy models over cb_adf, the champion's pmf shown, a
challenger promoted when its confidence bound beats the champion's (VW's
``reductions/epsilon_decay.cc``, stacked above ``cb_explore_adf_greedy``; ``--explore_eval``
above it).

Models ``0 .. M-1`` (``--model_count``, 3) each have a weight offset
(:mod:`streamlearn.learners.epsilon_decay`); model ``M-1`` is the champion.  A labeled
example is learned by every model, the champion first, model ``i`` with epsilon
``--initial_epsilon · (n_i + 1)^(-1/3)`` (``n_i`` its estimator's updates; with
``--constant_epsilon`` the explorer's ``--epsilon``), and each model's estimators
(:class:`~streamlearn.learners.conf_seq.ConfSeq`, ``[i][0..i]``) see the reward ``-cost``
(``--reward_as_cost``: the cost; clamped to [0, 1] with VW's warning) weighted by the
model's probability of the logged action over the logged probability (a challenger's: 1
when the action is its greedy one, unless ``--challenger_epsilon``).  Then, as VW's
``check_estimator_bounds``, the highest challenger whose lower bound passes the
champion's upper bound on its own scope (after ``--min_champ_examples``) becomes the
champion, the models below it moving up, and the lowest ones start afresh; and as
``check_horizon_bounds``, a challenger ``i`` whose updates pass ``--min_scope`` and
``n_champ^((i+1+s)/(M+s))`` (``s``: ``--shift_model_bounds``) is dropped for a fresh
model 0.  An unlabeled example (and every example under ``-t``) is the champion's pmf.

``-f`` with ``--predict_only_model`` writes VW's "spin off": the champion alone, in a
table W times smaller (VW's header loses ``log2 W`` bits and the reduction's options);
its full model (the estimators), ``-i`` of one, ``--readable_model``/``--invert_hash`` and
``--epsilon_decay_audit`` are refused for now (one line), as are cb types other than mtr,
ips and dm, explorers other than epsilon-greedy and ``--cb K``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.base import Reduction, Seen, Weights
from streamlearn.reductions.vwoptions import Command, VWOption, integer, number, stack_field

if TYPE_CHECKING:
    from streamlearn.io.examples import Part

F32 = np.float32

OPTIONS = (
    ("epsilon_decay", "bool", False),
    ("model_count", "int", 3),
    ("min_scope", "int", 100),
    ("ed_significance", "float | None", None),  # --epsilon_decay_significance_level
    ("ed_audit", "str", ""),  # --epsilon_decay_audit (refused)
    ("constant_epsilon", "bool", False),
    ("bonferroni_denominator", "int", 0),
    ("min_champ_examples", "int", 0),
    ("initial_epsilon", "float", 1.0),
    ("shift_model_bounds", "int", 0),
    ("reward_as_cost", "bool", False),
    ("tol_x", "float", 1e-6),
    ("opt_func", "str", "bisect"),
    ("challenger_epsilon", "bool", False),
    ("ed_spin_off", "bool", False),  # -f with --predict_only_model: the champion alone
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`."""


def _count(name: str, text: str) -> int:
    k = integer(name, text)
    if k < 0:
        raise VWUsage(f"--{name} {text}: a count of at least 0 is expected")
    return k


VW_OPTIONS = {
    "epsilon_decay": VWOption(None, False, stack_field("epsilon_decay")),
    "model_count": VWOption(None, True, stack_field("model_count", _count)),
    "min_scope": VWOption(None, True, stack_field("min_scope", _count)),
    "epsilon_decay_significance_level": VWOption(
        None, True, stack_field("ed_significance", number)
    ),
    "epsilon_decay_audit": VWOption(None, True, stack_field("ed_audit")),
    "constant_epsilon": VWOption(None, False, stack_field("constant_epsilon")),
    "bonferroni_denominator": VWOption(None, True, stack_field("bonferroni_denominator", _count)),
    "min_champ_examples": VWOption(None, True, stack_field("min_champ_examples", _count)),
    "initial_epsilon": VWOption(None, True, stack_field("initial_epsilon", number)),
    "shift_model_bounds": VWOption(None, True, stack_field("shift_model_bounds", _count)),
    "reward_as_cost": VWOption(None, False, stack_field("reward_as_cost")),
    "tol_x": VWOption(None, True, stack_field("tol_x", number)),
    "opt_func": VWOption(None, True, stack_field("opt_func")),
    "challenger_epsilon": VWOption(None, False, stack_field("challenger_epsilon")),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""

_OWN = tuple(VW_OPTIONS)


def settle(t: Command) -> None:
    """What runs with ``--epsilon_decay`` (one line for the rest); its options without it
    are VW's to ignore."""
    ml = t.multiline
    if not ml.get("epsilon_decay"):
        return
    if ml.get("reduction") != "cb_adf" or not ml.get("explore"):
        raise VWUsage("--epsilon_decay runs over --cb_explore_adf (or --explore_eval) in sl; "
                      "--cb K, --cbify, --ccb_explore_adf and --cb_adf alone: not yet")  # fmt: skip
    if ml.get("explore") != "greedy":
        raise VWUsage(f"--epsilon_decay with --{ml['explore']}: not yet (VW decays only the "
                      "epsilon-greedy explorer's epsilon)")  # fmt: skip
    if ml.get("cb_type", "mtr") not in ("mtr", "ips", "dm"):
        raise VWUsage(f"--epsilon_decay with --cb_type {ml['cb_type']}: not yet (mtr, ips, dm)")
    if ml.get("opt_func", "bisect") not in ("bisect", "brentq"):
        raise VWUsage(f"--opt_func {ml['opt_func']}: bisect or brentq")
    if ml.get("model_count", 3) < 1:
        raise VWUsage("--model_count: Model count must be 1 or greater")
    if ml.get("ed_audit"):
        raise VWUsage("--epsilon_decay_audit: not yet")
    if ml.get("cb_dro"):
        raise VWUsage("--epsilon_decay with --cb_dro: not yet")
    if "initial_model" in t.inputs:
        raise VWUsage("--epsilon_decay with -i (a model's estimators): not yet")
    if t.outputs.get("readable_model") or t.outputs.get("invert_hash"):
        raise VWUsage("--epsilon_decay with --readable_model/--invert_hash: not yet")
    spin = t.outputs.get("model_format") == "vw_predict_only"
    if t.outputs.get("final_model") and not spin:
        raise VWUsage("--epsilon_decay with -f: only with --predict_only_model (the champion "
                      "alone) yet, not its estimators")  # fmt: skip
    if spin:
        ml["ed_spin_off"] = True


def width_of(model_count: int) -> int:
    """VW's total feature width: the power of 2 at least ``model_count``."""
    w = 1
    while w < model_count:
        w *= 2
    return w


def decayed(initial: float, count: int) -> F32:
    """VW's ``decayed_epsilon``: ``initial · (count + 1)^(-1/3)`` in float32."""
    return F32(F32(initial) * F32(math.pow(float(count + 1), float(F32(-1.0) / F32(3.0)))))


def _float_text(x: float) -> str:
    """A float32 as VW's ``fmt`` writes ``{}``: its shortest digits."""
    x32 = F32(x)
    if x32 == 0 or 1e-4 <= abs(x32) < 1e16:
        return np.format_float_positional(x32, unique=True, trim="-")
    return np.format_float_scientific(x32, unique=True, trim="-", exp_digits=2)


class Models:
    """The models' estimators and offsets over a run (VW's ``epsilon_decay_data``)."""

    def __init__(self, ml) -> None:  # noqa: ANN001 - reductions.Multiline
        from streamlearn.learners.conf_seq import ALPHA, ConfSeq

        m = ml.model_count
        level = F32(ALPHA if ml.ed_significance is None else ml.ed_significance)
        level = F32(level / F32(ml.bonferroni_denominator or m))
        tol = float(F32(ml.tol_x))
        brentq = ml.opt_func == "brentq"
        self.fresh = lambda: ConfSeq(tol, brentq, float(level))
        self.est = [[self.fresh() for _ in range(i + 1)] for i in range(m)]
        self.offsets = list(range(m))
        self.ml = ml

    def _move(self, dst: tuple[int, int], src: tuple[int, int]) -> None:
        a = self.est[src[0]][src[1]]
        self.est[dst[0]][dst[1]] = a
        self.est[src[0]][src[1]] = a.moved()

    def shift(self, i: int, dist: int, table: np.ndarray, width: int) -> None:
        """VW's ``shift_model``: models ``i..0`` moved up by ``dist``, the greater ones'
        estimators realigned, the lowest ``dist`` models cleared."""
        m = len(self.est)
        if i >= 0:
            for mi in range(i, -1, -1):
                for e in range(mi + 1):
                    self._move((mi + dist, e + dist), (mi, e))
                o = self.offsets
                o[mi + dist], o[mi] = o[mi], o[mi + dist]
            for cur in range(i + dist + 1, m):
                for e in range(i + 1, dist - 1, -1):
                    self._move((cur, e), (cur, e - dist))
        for row in self.est:
            for e in range(min(len(row), dist)):
                row[e].reset()
        for ind in range(dist):
            table[self.offsets[ind] :: width] = 0.0

    def check(self, table: np.ndarray, width: int) -> None:
        """VW's ``check_estimator_bounds`` then ``check_horizon_bounds``."""
        est = self.est
        last = len(est) - 1
        for i in range(last - 1, -1, -1):
            better = est[i][i].lower_bound() > est[last][i].upper_bound()
            if better and est[i][i].update_count >= self.ml.min_champ_examples:
                self.shift(i, last - i, table, width)
                break
        m = len(est)
        s = self.ml.shift_model_bounds
        for i in range(last - 1, -1, -1):
            n = est[i][i].update_count
            if n > self.ml.min_scope and n > math.pow(
                float(est[last][last].update_count), float(F32(F32(i + 1 + s) / F32(m + s)))
            ):
                self.shift(i - 1, 1, table, width)
                break


class Learner:
    """``--epsilon_decay`` over cb_adf and epsilon-greedy (``xp``: the explorer's state, its
    generator and ``--explore_eval``'s counts)."""

    def __init__(self, ml, cfg, wants=None, **_: object) -> None:  # noqa: ANN001
        from streamlearn.reductions.explore import Explorer

        self.ml = ml
        self.xp = Explorer(ml, cfg)
        self.known = bool(ml.explore_eval)
        self.models = Models(ml)
        self.width = width_of(ml.model_count)
        self.counts = np.zeros(2 * self.width)
        self.log = bool(getattr(wants, "vw_log", False))
        self.xp.ed_champion = self.models.offsets[-1]  # (the offset a spin-off keeps)

    def start(self, w: Weights, counter, reduction: str) -> None:  # noqa: ANN001, ARG002
        """Room in ``w.gstate`` for every offset's normalizer sums."""
        from streamlearn.learners import csoaa_ldf

        extra = 2 * max(0, self.width - csoaa_ldf.MODELS)
        if extra:
            w.gstate = np.concatenate([w.gstate, np.zeros(extra)])

    def _pmf(self, w: Weights, part: Part, e: int, offset: int, eps: F32, learn: bool,
             prob: float, weight: float, scratch: tuple) -> None:  # fmt: skip
        from streamlearn.learners import epsilon_decay as kern

        mg = part.mg
        r0, r1 = int(mg.act_ptr[e]), int(mg.act_ptr[e + 1])
        slots, scores, order, acts, probs = scratch
        kern.model_example(w.table, w.gstate, w.params, w.loss_id, w.cb_type,
                           F32(self.xp.clip_p), self.width, offset, self.counts, mg.indptr,
                           mg.indices, mg.values, r0, r1 - r0, int(part.chosen[e]),
                           F32(part.cost[e]), F32(prob), learn, F32(weight), eps,
                           self.ml.first_only, slots, scores, order, acts, probs)  # fmt: skip

    def _epsilon(self, i: int) -> F32:
        if self.ml.constant_epsilon:
            return self.xp.eps
        return decayed(self.ml.initial_epsilon, self.models.est[i][i].update_count)

    def _learn(self, w: Weights, part: Part, e: int, prob: float, weight: float,
               scratch: tuple) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """VW's ``update_weights`` and the checks after: the champion's pmf."""
        ml = self.ml
        est = self.models.est
        m = len(est)
        k = int(part.chosen[e])
        c = F32(part.cost[e])
        r = c if ml.reward_as_cost else F32(-c)
        if r < F32(0.0) or r > F32(1.0):
            if self.log:
                sys.stdout.write(f"[warning] epsilon_decay: reward {_float_text(r)} is outside "
                                 "[0,1] and will be clamped. Ensure costs are in [0,1] when "
                                 "using epsilon_decay.\n")  # fmt: skip
            r = max(F32(0.0), min(r, F32(1.0)))
        acts, probs = scratch[3], scratch[4]
        n = int(part.mg.act_ptr[e + 1] - part.mg.act_ptr[e])
        champ = None
        for i in range(m - 1, -1, -1):
            self._pmf(w, part, e, self.models.offsets[i], self._epsilon(i), True, prob, weight,
                      scratch)  # fmt: skip
            for j in range(n):
                if acts[j] != k:
                    continue
                p_pred = F32(probs[j])
                if i != m - 1 and not ml.challenger_epsilon:
                    best, top = 0, F32(0.0)
                    for q in range(n):
                        if probs[q] > top:
                            best, top = int(acts[q]), F32(probs[q])
                    p_pred = F32(1.0) if k == best else F32(0.0)
                wt = float(F32(p_pred / F32(prob))) if F32(prob) > 0 else 0.0
                for x in range(i + 1):
                    est[i][x].update(wt, float(r))
                break
            if i == m - 1:
                champ = (acts[:n].copy(), probs[:n].copy(), scratch[1][:n].copy())
        self.models.check(w.table, self.width)
        return champ

    def learn(self, w: Weights, part: Part, ho: np.ndarray, lines: bool = False) -> Seen:
        from streamlearn.learners import cb_adf
        from streamlearn.learners.base import G_N

        mg = part.mg
        ptr = mg.act_ptr
        rows = mg.row.shape[0]
        m = ptr.shape[0] - 1
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        scores = np.zeros(rows, dtype=np.float32)
        cap = int(np.diff(ptr).max()) if m else 1
        scratch = (
            np.empty(mg.indices.shape[0], dtype=np.uint32),
            np.zeros(cap, np.float32),
            np.zeros(cap, np.int64),
            np.zeros(cap, np.int64),
            np.zeros(cap, np.float32),
        )
        learning = self.xp.learning
        stats = w.stats
        for e in range(m):
            r0, r1 = int(ptr[e]), int(ptr[e + 1])
            n = r1 - r0
            stats[cb_adf.N_EX] += 1.0
            stats[cb_adf.FEATURES] += mg.indptr[r1] - mg.indptr[r0]
            if n == 0:
                continue
            k = int(part.chosen[e])
            p = float(part.prob[e])
            labeled = k >= 0
            if self.ml.explore_eval:
                got = self._explore_eval(w, part, e, learning and labeled and p > 0.0, scratch)
            elif labeled and learning:
                got = self._learn(w, part, e, p, 1.0, scratch)
            else:
                got = self._predict(w, part, e, scratch)
            acts[r0:r1], probs[r0:r1], scores[r0:r1] = got
            if labeled:
                loss = 0.0
                if p > 0.0:
                    for j in range(n):
                        if got[0][j] == k:
                            loss += float(F32(F32(F32(part.cost[e]) / F32(p)) * F32(got[1][j])))
                if ho[e]:
                    stats[cb_adf.HO_N] += 1.0
                    stats[cb_adf.HO_LOSS] += loss
                else:
                    stats[cb_adf.N_LAB] += 1.0
                    stats[cb_adf.LOSS] += loss
                    w.gstate[G_N] += 1.0
        # (VW's model keeps cb_adf's counts of offset 0)
        stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS] = self.counts[0], self.counts[1]
        self.xp.ed_champion = self.models.offsets[-1]
        return Seen(part, actions=acts, probs=probs, scores=scores)

    def write(self, seen: Seen, out: list[str], vw: bool = True) -> None:
        from streamlearn.reductions.pmf import pmf_lines

        pmf_lines(seen.part, seen.actions, seen.probs, out, "\n\n" if vw else "\n")

    def progress(self, table, npass: int, seen: Seen, ho: np.ndarray) -> None:  # noqa: ANN001
        from streamlearn.reductions.pmf import progress_rows

        progress_rows(table, npass, seen.part, seen.actions, seen.probs, ho, known=self.known)

    def closing_lines(self) -> list[str]:
        return self.xp.closing_lines()

    def _predict(self, w: Weights, part: Part, e: int, scratch: tuple) -> tuple:
        """VW's predict: the champion's pmf."""
        last = len(self.models.est) - 1
        self._pmf(w, part, e, self.models.offsets[last], self._epsilon(last), False, 1.0, 1.0,
                  scratch)  # fmt: skip
        n = int(part.mg.act_ptr[e + 1] - part.mg.act_ptr[e])
        return scratch[3][:n].copy(), scratch[4][:n].copy(), scratch[1][:n].copy()

    def _explore_eval(self, w: Weights, part: Part, e: int, labeled: bool,
                      scratch: tuple) -> tuple:  # fmt: skip
        """``--explore_eval`` above: the champion's pmf, then VW's rejection sampler
        (:mod:`streamlearn.learners.explore_eval`) learning the accepted examples."""
        from streamlearn.learners import explore_eval as ee

        xp = self.xp
        ml = self.ml
        if xp.ee is None:
            xp.ee = ee.new_state(ml.multiplier)
        s = xp.ee
        got = self._predict(w, part, e, scratch)
        if not labeled:
            return got
        s[ee.E_EXAMPLES] += 1.0
        k = int(part.chosen[e])
        found = bool(np.any(got[0] == k))
        pk = F32(got[1][got[0] == k][0]) if found else F32(0.0)
        threshold = F32(pk / F32(part.prob[e]))
        fixed = ml.multiplier is not None
        target = ml.target_rate is not None
        mult = F32(s[ee.E_MULTIPLIER])
        if not fixed and not target and found:
            with np.errstate(divide="ignore"):
                mult = min(mult, F32(F32(1.0) / threshold))
            s[ee.E_MULTIPLIER] = mult
        threshold = F32(threshold * mult)
        sum_p = F32(s[ee.E_SUM_P])
        rate = F32(1.0)
        if sum_p > F32(0.0):
            rate = F32(F32(F32(ml.target_rate if target else 1.0) * F32(s[ee.E_T])) / sum_p)
        s[ee.E_SUM_P] = F32(sum_p + threshold)
        s[ee.E_T] += 1.0
        s[ee.E_RATE] = rate
        if not found:
            return got
        if threshold > 1.0 + 1e-6:
            s[ee.E_VIOLATIONS] += 1.0
        if target:
            threshold = F32(threshold * rate)
        if _merand48(xp.rng) < threshold:
            weight = F32(threshold) if threshold > F32(1.0) else F32(1.0)
            s[ee.E_UPDATES] += 1.0
            s[ee.E_WEIGHT] = F32(F32(s[ee.E_WEIGHT]) + weight)
            champ = self._learn(w, part, e, float(pk), float(weight), scratch)
            if champ is not None:
                return champ
        return got


def _merand48(rng: np.ndarray) -> F32:
    """VW's global generator, one step (:func:`streamlearn.learners.explore.merand48`)."""
    s = (int(rng[0]) * 0xEECE66D5DEECE66D + 2147483647) & 0xFFFFFFFFFFFFFFFF
    rng[0] = s
    return F32(F32((s >> 25) & 0x7FFFFF) * F32(2.0**-23))


def over(below: Reduction) -> Reduction:
    """``below`` (cb_adf with its explorers) with ``--epsilon_decay`` stacked above its
    explorer when the run asks for it."""

    def learner(ml, cfg, **options: object):  # noqa: ANN001, ANN202
        if getattr(ml, "epsilon_decay", False):
            if "wants" not in options:  # (the bandit driver's: the server's, the API's)
                raise UsageError("--epsilon_decay: sl vw's passes only; serving it (--daemon, "
                                 "sl serve) or the API's bandit calls: not yet")  # fmt: skip
            return Learner(ml, cfg, **options)
        options.pop("wants", None)
        return below.learner(ml, cfg, **options)

    def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001
        chain, label, pred = below.stack(ml, base)
        if getattr(ml, "epsilon_decay", False):
            chain = chain.replace(", explore_eval", "", 1)
            more = ", epsilon_decay" + (", explore_eval" if ml.explore_eval else "")
            chain = chain.replace(", cb_explore_adf_greedy", ", cb_explore_adf_greedy" + more, 1)
        return chain, label, pred

    def vw_words(ml) -> list[str]:  # noqa: ANN001
        return below.vw_words(ml)

    return dataclasses.replace(below, learner=learner, stack=stack, vw_words=vw_words,
                               options=below.options + OPTIONS, wants=True)  # fmt: skip


def spin_off(
    table: np.ndarray, cols: tuple[int, ...], ml, offset: int, bits: int
) -> tuple[np.ndarray, int]:  # noqa: ANN001
    """VW's ``pre_save_load`` of ``--predict_only_model``: the champion (``offset``) alone in
    gd's ``table`` (sl's columns ``cols`` being VW's floats of a slot), and the header's
    bits less ``log2`` of the width."""
    from streamlearn.learners import epsilon_decay as kern

    width = width_of(ml.model_count)
    if width != ml.model_count and tuple(cols) not in ((0,), (0, 1, 2)):
        raise ValueError(
            f"--epsilon_decay --model_count {ml.model_count} (no power of 2) with "
            "--predict_only_model under --adaptive or --normalized alone: VW's arithmetic "
            "over its floats is not reproduced yet"
        )
    if tuple(cols) == (0, 1, 2) and table.shape[1] > 3:
        cols = (0, 1, 2, 3)  # (VW's fourth float, gd's spare: its last rate)
    stride = 1
    while stride < len(cols):
        stride *= 2
    flat = np.zeros((table.shape[0], stride), dtype=np.float32)
    flat[:, : len(cols)] = table[:, list(cols)]
    flat = flat.reshape(-1)
    kern.spin_off(flat, offset, width, ml.model_count, stride)
    out = np.zeros_like(table)
    out[:, list(cols)] = flat.reshape(table.shape[0], stride)[:, : len(cols)]
    return out, bits - int(math.log2(width))
