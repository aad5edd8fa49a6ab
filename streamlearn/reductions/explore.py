"""The explorers of ``--cb_explore_adf`` (and ``--cb_explore K``, ``--cbify``): cb_adf's
scores of each example turned into a pmf over its actions, VW's ``cb_explore_adf_*.cc``.

Each explorer is a pure kernel from scores to a pmf (:mod:`streamlearn.learners.explore`:
epsilon-greedy, first, softmax, squarecb, synthcover); bagging, cover, regcb and rnd keep
several models and walk the batch with kernels of their own (``learners/cb_bag.py``,
``cb_cover.py``, ``cb_regcb.py``, ``cb_rnd.py``).  :class:`Explorer` holds an explorer's
options and state over a run (its counter, generator, bagging's counts); :class:`Learner`
is the reduction's learner over cb_adf (:mod:`streamlearn.reductions.base`); ``-p`` is
each example's pmf and VW's table (:mod:`streamlearn.reductions.pmf`).

Options (``reductions.Multiline``'s fields): ``explore`` (the explorer's name),
``epsilon``, ``first_only``, ``tau``, ``lam``, ``bag``, ``greedify``, ``cover``, ``psi``,
``nounif``, ``rnd``, ``rnd_alpha``, ``rnd_invlambda``, ``synthcoverpsi``, ``synthcoversize``,
``regcbopt``, ``elim``, ``mellowness``, ``cb_min_cost``, ``cb_max_cost``, ``gamma_scale``,
``gamma_exponent``, ``explore_eval``, ``multiplier``, ``target_rate``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.base import Reduction, Seen, Weights, room
from streamlearn.reductions.cb_adf import vw_cb
from streamlearn.reductions.text import vw_number

if TYPE_CHECKING:
    from streamlearn.config import TrainConfig
    from streamlearn.io.examples import Part

from streamlearn.reductions.vwoptions import (
    Command,
    VWOption,
    integer,
    number,
    sized,
    stack_field,
)

OPTIONS = (
    ("explore", "str", ""),  # --cb_explore_adf: greedy, first, softmax, squarecb, bag, cover
    ("epsilon", "float | None", None),  # None: the explorer's default (greedy 0.05, others 0)
    ("first_only", "bool", False),
    ("tau", "int", 0),  # --first T
    ("lam", "float", 1.0),  # --softmax --lambda
    ("bag", "int", 0),  # --bag B
    ("cover", "int", 0),  # --cover N (and legacy --cb_explore K --cb_force_legacy)
    ("psi", "float", 1.0),  # --cover's --psi
    ("nounif", "bool", False),  # --cover's --nounif
    ("rnd", "int", 0),  # --rnd R
    ("rnd_alpha", "float", 0.1),
    ("rnd_invlambda", "float", 0.1),
    ("synthcoverpsi", "float", 0.1),  # --synthcover
    ("synthcoversize", "int", 100),
    ("regcbopt", "bool", False),  # --regcb --regcbopt
    ("elim", "bool", False),  # --squarecb --elim
    ("mellowness", "float | None", None),  # None: --regcb's 0.1, --squarecb's 0.001
    ("cb_min_cost", "float | None", None),  # None: 0 (--cbify: --loss0)
    ("cb_max_cost", "float | None", None),  # None: 1 (--cbify: --loss1)
    ("greedify", "bool", False),
    ("gamma_scale", "float", 10.0),  # --squarecb
    ("gamma_exponent", "float", 0.5),
    ("explore_eval", "bool", False),  # --explore_eval (learners/explore_eval.py)
    ("multiplier", "float | None", None),
    ("target_rate", "float | None", None),
)
"""The explorers' fields of :class:`~streamlearn.reductions.Multiline`."""


def _cb_explore_adf(t: Command, name: str, value: str | None) -> None:
    t.exploring = True
    # --cbify runs on --cb_explore_adf anyway, as --ccb_explore_adf and --slates do
    if t.multiline.get("reduction") not in ("cbify", "ccb", "slates"):
        t.multiline["reduction"] = "cb_adf"
    t.multiline.setdefault("explore", "greedy")


def _cb_explore(t: Command, name: str, value: str) -> None:
    """``--cb_explore K``: VW 9 runs it as ``--cb K`` on ``--cb_explore_adf``."""
    t.exploring = True
    vw_cb(t, name, value)
    t.multiline.setdefault("explore", "greedy")


def _explore_eval(t: Command, name: str, value: str | None) -> None:
    """``--explore_eval``: VW adds --cb_explore_adf below it when not given."""
    _cb_explore_adf(t, name, value)
    t.multiline["explore_eval"] = True


def _explorer(kind: str, key: str | None = None, conv=None):  # noqa: ANN001, ANN202
    """An explorer of ``--cb_explore_adf`` (the last one named wins, as VW's setup order does
    not: two explorers are refused when the run starts)."""

    def apply(t: Command, name: str, value: str | None) -> None:
        t.explorer_options.append(name)
        prev = t.multiline.get("explore")
        if prev not in (None, "greedy", kind):
            raise VWUsage(f"--{name} and --{prev}: one explorer at a time")
        t.multiline["explore"] = kind
        if key is not None:
            t.multiline[key] = conv(name, value) if conv else value
            sized(t, key, name)

    return apply


def _regcbopt(t: Command, name: str, value: str | None) -> None:
    """``--regcbopt``: RegCB's optimistic variant (alone, VW still enables ``--regcb``)."""
    _explorer("regcb")(t, name, value)
    t.multiline["regcbopt"] = True


VW_OPTIONS = {
    "cb_explore_adf": VWOption(None, False, _cb_explore_adf),
    "cb_explore": VWOption(None, True, _cb_explore),
    "explore_eval": VWOption(None, False, _explore_eval),
    "epsilon": VWOption(None, True, stack_field("epsilon", number)),
    "first_only": VWOption(None, False, stack_field("first_only")),
    "first": VWOption(None, True, _explorer("first", "tau", integer)),
    "softmax": VWOption(None, False, _explorer("softmax")),
    "lambda": VWOption(None, True, stack_field("lam", number)),
    "bag": VWOption(None, True, _explorer("bag", "bag", integer)),
    "greedify": VWOption(None, False, stack_field("greedify")),
    "cover": VWOption(None, True, _explorer("cover", "cover", integer)),  # (legacy too)
    "psi": VWOption(None, True, stack_field("psi", number)),
    "nounif": VWOption(None, False, stack_field("nounif")),
    "multiplier": VWOption(None, True, stack_field("multiplier", number)),
    "target_rate": VWOption(None, True, stack_field("target_rate", number)),
    "squarecb": VWOption(None, False, _explorer("squarecb")),
    "elim": VWOption(None, False, stack_field("elim")),
    "synthcover": VWOption(None, False, _explorer("synthcover")),
    "rnd": VWOption(None, True, _explorer("rnd", "rnd", integer)),
    "rnd_alpha": VWOption(None, True, stack_field("rnd_alpha", number)),
    "rnd_invlambda": VWOption(None, True, stack_field("rnd_invlambda", number)),
    "synthcoverpsi": VWOption(None, True, stack_field("synthcoverpsi", number)),
    "synthcoversize": VWOption(None, True, stack_field("synthcoversize", integer)),
    "regcb": VWOption(None, False, _explorer("regcb")),
    "regcbopt": VWOption(None, False, _regcbopt),
    "mellowness": VWOption(None, True, stack_field("mellowness", number)),
    "cb_min_cost": VWOption(None, True, stack_field("cb_min_cost", number)),
    "cb_max_cost": VWOption(None, True, stack_field("cb_max_cost", number)),
    "gamma_scale": VWOption(None, True, stack_field("gamma_scale", number)),
    "gamma_exponent": VWOption(None, True, stack_field("gamma_exponent", number)),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""


def settle(t: Command) -> None:
    """An explorer's option without an exploring reduction: VW warns that it depends on
    one not given, and runs without it (a model given with ``-i`` may bring one)."""
    if t.explorer_options and not t.exploring and "initial_model" not in t.inputs:
        t.multiline.pop("explore", None)
        for name in dict.fromkeys(t.explorer_options):
            t.notes.append(f"--{name}: an option of --cb_explore/--cb_explore_adf/--cbify, "
                           "ignored without them (as VW)")  # fmt: skip


class Explorer:
    """``--cb_explore_adf``: cb_adf's ranking of each example turned into a pmf
    (:mod:`streamlearn.learners.explore`), VW's progressive loss of the pmf, ``-p`` as VW."""

    def __init__(self, ml, cfg: TrainConfig) -> None:
        from streamlearn.learners import cb_adf
        from streamlearn.learners import explore as ex

        self.ex = ex
        self.cb_adf = cb_adf
        self.ml = ml
        self.shape = (np.float32(ml.lam), np.float32(ml.gamma_scale),
                      np.float32(ml.gamma_exponent))  # fmt: skip
        """explore_examples' shape arguments (lambda, gamma's scale and exponent)."""
        self.kind = ex.EXPLORERS[ml.explore]
        if ml.explore == "squarecb" and ml.elim:
            self.kind = ex.REGCB
        default = 0.05 if ml.explore == "greedy" else 0.0
        # --cover without --epsilon: epsilon 1, decaying with the examples learned
        self.decay = ml.explore == "cover" and ml.epsilon is None
        if self.decay:
            default = 1.0
        self.eps = np.float32(default if ml.epsilon is None else ml.epsilon)
        self.xstats = np.zeros(ex.XSTATS)
        self.xstats[ex.X_TAU] = ml.tau
        self.learning = cfg.params()[10] != 0.0  # P_LEARN
        self.ho_learns = ml.reduction != "cb"  # VW predicts held-out single-line examples
        self.clip_p = ml.clip_p
        self.rng = np.array([cfg.seed], dtype=np.uint64)  # VW's global generator
        self.counts = np.zeros(2 * max(1, ml.bag, ml.rnd + 1))
        self.costs = np.zeros(2)  # --synthcover: the lowest and highest cost seen (from 0)
        self.ee = None  # --explore_eval's counts (learners/explore_eval.py)
        self.dro_state = None  # --cb_dro's estimator (reductions/cb_dro.py)
        self.las = None  # --large_action_space's filter (reductions/large_action.py)
        self.call = None  # one()'s compiled entries and scratch (made at its first call)
        if getattr(ml, "large_action_space", False):
            from streamlearn.reductions.large_action import Filter

            self.las = Filter(ml, cfg)  # (its seed, a draw VW's generator forgets)
        self.plain = not (self.las is not None or ml.explore_eval or ml.cb_dro
                          or self.kind in (ex.BAG, ex.COVER, ex.REGCB, ex.RND, ex.SQUARECB,
                                           ex.SYNTHCOVER))  # fmt: skip
        """cb_adf's scores then the pmf, as :meth:`one` runs them (the rest: their own
        walks or steps, in :meth:`batch`)."""

    def resume(self, counter: int | None, stats: np.ndarray) -> None:
        """Continue a model's explorer: its counter (``--synthcover``: its lowest and highest
        costs seen), and the mtr sums its own walk keeps (bagging's copy 0, cover's first
        policy, regcb's)."""
        from streamlearn.learners import cb_adf

        ex = self.ex
        if counter is not None and self.kind == ex.FIRST:
            self.xstats[ex.X_TAU] = float(counter)
        elif counter is not None and self.kind in (ex.SQUARECB, ex.COVER, ex.REGCB):
            self.xstats[ex.X_COUNTER] = float(counter)
        elif counter is not None and self.kind == ex.SYNTHCOVER:
            self.costs[:] = counter  # (its lowest and highest costs seen)
        if self.kind in (ex.BAG, ex.COVER, ex.REGCB, ex.RND):
            self.counts[0], self.counts[1] = stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS]

    def grow(self, gstate: np.ndarray, cb_type: int) -> np.ndarray:
        """gd's global state with room for the bag's or cover's models (one per offset)."""
        from streamlearn.learners import csoaa_ldf

        if self.kind == self.ex.COVER:
            from streamlearn.learners import cb_cover

            _, s = cb_cover.layout(self.ml.cover, cb_type)
            # --cb K's copies carry VW's rewritten indices: step 1 (see feature_width)
            self.width = 1 if self.ml.reduction in ("cb", "cbify") else s
            models = s
        elif self.kind == self.ex.RND:
            from streamlearn.learners import cb_rnd

            if self.ml.reduction != "cb_adf":
                raise UsageError("--rnd with --cb K or --cbify: not supported yet (use "
                                 "--cb_explore_adf)")  # fmt: skip
            w, s = cb_rnd.layout(self.ml.rnd, cb_type)
            self.w, self.width = w, s
            models = s
        elif self.kind == self.ex.BAG:
            from streamlearn.learners import cb_bag

            w, s = cb_bag.layout(self.ml.bag, cb_type)
            self.w, self.width = w, s
            models = self.ml.bag * w
        else:
            # --regcb, --squarecb --elim: cb_adf's one model (step 1 for --cb K's copies)
            self.width = 1
            return gstate
        out = np.zeros(gstate.shape[0] + 2 * max(0, models - csoaa_ldf.MODELS))
        out[: gstate.shape[0]] = gstate
        return out

    def _own_walk(self, part: Part, stats: np.ndarray, kernel) -> tuple:  # noqa: ANN001
        """An explorer with its own kernel (bagging, cover, regcb, rnd): ``kernel(xstats,
        acts, probs)`` walks the batch; cb_adf's counters follow its explorer counters.
        Returns each row's action and probability."""
        from streamlearn.learners import cb_adf

        ex = self.ex
        mg = part.mg
        rows = mg.row.shape[0]
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        x = self.xstats
        before = x.copy()
        kernel(x, acts, probs)
        stats[cb_adf.N_EX] += mg.act_ptr.shape[0] - 1
        stats[cb_adf.FEATURES] += mg.indptr[-1] - mg.indptr[0]
        stats[cb_adf.N_LAB] += x[ex.X_N] - before[ex.X_N]
        stats[cb_adf.LOSS] += x[ex.X_LOSS] - before[ex.X_LOSS]
        stats[cb_adf.HO_N] += x[ex.X_HO_N] - before[ex.X_HO_N]
        stats[cb_adf.HO_LOSS] += x[ex.X_HO_LOSS] - before[ex.X_HO_LOSS]
        return acts, probs

    def bag(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_bag

        mg = part.mg

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_bag.train_bag(
                table, gstate, params, loss_id, cb_type, np.float32(self.clip_p), self.ml.bag,
                self.width, self.w, self.eps, self.ml.first_only, self.ml.greedify, self.rng,
                mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost, part.prob, ho,
                self.learning, self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def rnd(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_rnd
        from streamlearn.learners.base import P_ADAPTIVE, P_NORMALIZED

        mg = part.mg
        # gd's stride (floats per weight) in VW's raw feature indices: 4 with its state,
        # which VW keeps only when it learns (-t turns adaptive and normalized off)
        stride = 4 if (params[P_ADAPTIVE] or params[P_NORMALIZED]) and self.learning else 1

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_rnd.train_rnd(
                table, gstate, params, loss_id, cb_type, np.float32(self.clip_p), self.ml.rnd,
                self.width, self.w, stride, np.float32(self.ml.rnd_alpha),
                np.float32(self.ml.rnd_invlambda), self.eps, self.rng, mg.act_ptr, mg.indptr,
                mg.indices, mg.values, mg.ns, part.chosen, part.cost, part.prob, ho, self.learning,
                self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def regcb_args(self) -> tuple:
        """cb_regcb.train_regcb's explorer arguments (variant .. first_only)."""
        from streamlearn.learners import cb_regcb

        ml = self.ml
        if ml.explore == "squarecb":
            variant, c0 = cb_regcb.ELIM, 0.001
        else:
            variant, c0 = (cb_regcb.REGCBOPT if ml.regcbopt else cb_regcb.REGCB), 0.1
        if ml.mellowness is not None:
            c0 = ml.mellowness
        lo = ml.cb_min_cost
        hi = ml.cb_max_cost
        if ml.reduction == "cbify":  # VW's cbify passes its loss0/loss1
            lo, hi = ml.loss0, ml.loss1
        return (variant, np.float32(c0), np.float32(0.0 if lo is None else lo),
                np.float32(1.0 if hi is None else hi), np.float32(ml.gamma_scale),
                np.float32(ml.gamma_exponent), ml.first_only)  # fmt: skip

    def regcb(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_regcb

        mg = part.mg

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_regcb.train_regcb(
                table, gstate, params, loss_id, np.float32(self.clip_p), *self.regcb_args(),
                self.width, mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost,
                part.prob, ho, self.learning, self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def cover(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_cover

        mg = part.mg

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_cover.train_cover(
                table, gstate, params, loss_id, cb_type, np.float32(self.clip_p), self.ml.cover,
                self.width, np.float32(self.ml.psi), self.eps, self.decay, self.ml.nounif,
                self.ml.first_only, mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen,
                part.cost, part.prob, ho, self.learning, self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def batch(self, weights, table, gstate, params, loss_id, cb_type, part, ho, stats,
              dr_prev) -> tuple:  # noqa: ANN001  # fmt: skip
        """One batch: cb_adf scores and learns (``weights`` = its tables, sub, step), the
        explorer makes each example's pmf; bagging has its own kernel.  Returns each row's
        action and probability, and the scores (None for bagging): the off-policy estimates'
        inputs."""
        cb_adf = self.cb_adf
        ex = self.ex
        mg = part.mg
        m = mg.act_ptr.shape[0] - 1
        if self.kind in (ex.BAG, ex.COVER, ex.REGCB, ex.RND):
            run = {ex.BAG: self.bag, ex.COVER: self.cover, ex.REGCB: self.regcb,
                   ex.RND: self.rnd}[self.kind]  # fmt: skip
            acts, probs = run(table, gstate, params, loss_id, cb_type, part, ho, stats)
            return acts, probs, None
        if self.ml.explore_eval:
            return self.explore_eval(weights, gstate, params, loss_id, cb_type, part, stats,
                                     dr_prev)  # fmt: skip
        if self.ml.cb_dro:
            return self.dro(weights, gstate, params, loss_id, cb_type, part, ho, stats, dr_prev)
        rows = mg.row.shape[0]
        scores = np.zeros(rows, dtype=np.float32)
        order = np.zeros(rows, dtype=np.int64)
        prob = part.prob
        if self.kind == ex.SQUARECB:
            # VW's squarecb learns without importance weights: probability 1 on the label
            # of every action line but the last
            sizes = np.diff(mg.act_ptr)
            prob = np.where(part.chosen == sizes - 1, part.prob, 1.0)
        saved = stats[cb_adf.LOSS], stats[cb_adf.HO_LOSS]
        tables, sub, step = weights
        cb_adf.train_examples(
            tables, sub, step, gstate, params, loss_id, cb_type, self.clip_p, mg.act_ptr,
            mg.indptr, mg.indices, mg.values, part.chosen, part.cost, prob, ho, self.ho_learns,
            stats, dr_prev, scores, order, np.zeros(m),
        )  # fmt: skip
        x = self.xstats
        before = x[ex.X_LOSS], x[ex.X_HO_LOSS]
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        if self.kind == ex.SYNTHCOVER:
            ex.synthcover_examples(
                mg.act_ptr, scores, order, part.chosen, part.cost, part.prob, ho, self.learning,
                self.eps, np.float32(self.ml.synthcoverpsi), self.ml.synthcoversize, self.costs,
                x, acts, probs,
            )  # fmt: skip
        elif self.las is not None:
            self.las.explore(self, part, scores, order, ho, x, acts, probs)
        else:
            ex.explore_examples(
                self.kind, self.eps, self.ml.first_only, *self.shape, mg.act_ptr, scores, order,
                part.chosen, part.cost, part.prob, ho, self.ho_learns, self.learning, x, acts,
                probs,
            )  # fmt: skip
        stats[cb_adf.LOSS] = saved[0] + (x[ex.X_LOSS] - before[0])
        stats[cb_adf.HO_LOSS] = saved[1] + (x[ex.X_HO_LOSS] - before[1])
        return acts, probs, scores

    def one(self, w: Weights, part: Part) -> tuple | None:
        """:meth:`batch` of one example parsed into kept arrays (a Workspace's or a server's
        call: ``Bandit.run(part, one=True)``), its kernels called through their compiled
        entries with scratch kept between calls (the dispatchers typed ~20 arguments each
        call: half of a ``--cb_explore K`` call's run); None for the explorers with their
        own walks, which :meth:`batch` runs."""
        ex = self.ex
        ml = self.ml
        mg = part.mg
        if mg.act_ptr.shape[0] != 2 or not self.plain:
            return None
        from streamlearn.system.direct import Entries

        rows = mg.row.shape[0]
        if self.call is None or self.call[1].shape[0] < rows:
            n = max(rows, 16)
            self.call = (Entries(), np.zeros(n, dtype=np.int64), np.zeros(1, dtype=np.bool_),
                         np.zeros(1))  # fmt: skip
        call, zeros, ho, loss = self.call
        room(w, mg.act_ptr)
        sub = part.sub if part.sub is not None else zeros[:rows]
        scores = np.zeros(rows, dtype=np.float32)
        order = np.zeros(rows, dtype=np.int64)
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        cb_adf = self.cb_adf
        stats = w.stats
        x = self.xstats
        saved = stats[cb_adf.LOSS], stats[cb_adf.HO_LOSS]
        before = x[ex.X_LOSS], x[ex.X_HO_LOSS]
        call(cb_adf.train_examples, w.tables, sub, w.step, w.gstate, w.params, w.loss_id,
             w.cb_type, self.clip_p, mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen,
             part.cost, part.prob, ho, self.ho_learns, stats, w.dr_prev, scores, order, loss)
        call(ex.explore_examples, self.kind, self.eps, ml.first_only, *self.shape, mg.act_ptr,
             scores, order, part.chosen, part.cost, part.prob, ho, self.ho_learns,
             self.learning, x, acts, probs)  # fmt: skip
        stats[cb_adf.LOSS] = saved[0] + (x[ex.X_LOSS] - before[0])
        stats[cb_adf.HO_LOSS] = saved[1] + (x[ex.X_HO_LOSS] - before[1])
        return acts, probs, scores

    def dro(self, weights, gstate, params, loss_id, cb_type, part, ho, stats,
            dr_prev) -> tuple:  # noqa: ANN001  # fmt: skip
        """``--cb_dro`` over the explorer: each example predicted, then learned with its
        weight scaled by the estimator's bound (:mod:`streamlearn.reductions.cb_dro`)."""
        from types import SimpleNamespace

        from streamlearn.learners import cb_adf
        from streamlearn.reductions import cb_dro

        if self.dro_state is None:
            self.dro_state = cb_dro.State(self.ml)
        w = SimpleNamespace(gstate=gstate, params=params, loss_id=loss_id, cb_type=cb_type,
                            stats=stats, dr_prev=dr_prev)  # fmt: skip
        x = self.xstats
        saved = stats[cb_adf.LOSS], stats[cb_adf.HO_LOSS]
        before = x[self.ex.X_LOSS], x[self.ex.X_HO_LOSS]
        scores, _, _, acts, probs = cb_dro.learn(self.dro_state, w, weights, part, ho,
                                                 self.ho_learns, self.clip_p, self)  # fmt: skip
        stats[cb_adf.LOSS] = saved[0] + (x[self.ex.X_LOSS] - before[0])
        stats[cb_adf.HO_LOSS] = saved[1] + (x[self.ex.X_HO_LOSS] - before[1])
        return acts, probs, scores

    def explore_eval(self, weights, gstate, params, loss_id, cb_type, part, stats,
                     dr_prev) -> tuple:  # noqa: ANN001  # fmt: skip
        """``--explore_eval``: each example predicted, then learned when the rejection
        sampler accepts it (:mod:`streamlearn.learners.explore_eval`)."""
        from streamlearn.learners import cb_adf
        from streamlearn.learners import explore_eval as ee

        if self.las is not None:  # (--large_action_space: reductions/large_action.py)
            return self.las.explore_eval(self, weights, gstate, params, loss_id, cb_type, part,
                                         stats, dr_prev)  # fmt: skip
        ex = self.ex
        ml = self.ml
        if self.ee is None:
            self.ee = ee.new_state(ml.multiplier)
        mg = part.mg
        rows = mg.row.shape[0]
        scores = np.zeros(rows, dtype=np.float32)
        order = np.zeros(rows, dtype=np.int64)
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        tables, sub, step = weights
        predict_only = params.copy()
        predict_only[10] = 0.0  # P_LEARN
        saved = stats[cb_adf.LOSS], stats[cb_adf.HO_LOSS]
        x = self.xstats
        before = x[ex.X_LOSS], x[ex.X_HO_LOSS]
        target = ml.target_rate is not None
        ee.explore_eval_examples(
            tables, sub, step, gstate, params, predict_only, loss_id, cb_type, self.clip_p,
            mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost, part.prob,
            stats, dr_prev, self.kind, self.eps, ml.first_only, np.float32(ml.lam),
            np.float32(ml.gamma_scale), np.float32(ml.gamma_exponent), x,
            ml.multiplier is not None, target, np.float32(ml.target_rate if target else 1.0),
            self.ee, self.rng, scores, order, acts, probs,
        )  # fmt: skip
        stats[cb_adf.LOSS] = saved[0] + (x[ex.X_LOSS] - before[0])
        stats[cb_adf.HO_LOSS] = saved[1] + (x[ex.X_HO_LOSS] - before[1])
        return acts, probs, scores

    def closing_lines(self) -> list[str]:
        """VW's lines after the summary (``--explore_eval``'s counts)."""
        if not self.ml.explore_eval or self.ee is None:
            return []
        from streamlearn.learners import explore_eval as ee

        s = self.ee
        upd = s[ee.E_UPDATES]
        avg = float(np.float32(s[ee.E_WEIGHT]) / np.float32(upd)) if upd else float("nan")
        out = [f"weighted update count = {s[ee.E_WEIGHT]:.6f}",
               f"average accepted example weight = {avg:.6f}"]  # fmt: skip
        if s[ee.E_VIOLATIONS]:
            out.append(f"violation count = {int(s[ee.E_VIOLATIONS])}")
        if self.ml.multiplier is None:
            out.append(f"final multiplier = {s[ee.E_MULTIPLIER]:.6f}")
        if self.ml.target_rate is not None:
            tr = np.float32(self.ml.target_rate)
            out.append(f"targeted update count = {float(np.float32(s[ee.E_EXAMPLES]) * tr):.6f}")
            out.append(f"final rate = {s[ee.E_RATE]:.6f}")
        return out


class Learner:
    """An explorer over cb_adf, for one run (:class:`Explorer` holds its state: ``xp``)."""

    def __init__(self, ml, cfg: TrainConfig | None = None, xp: Explorer | None = None) -> None:  # noqa: ANN001
        self.xp = xp if xp is not None else Explorer(ml, cfg)
        self.known = bool(ml.explore_eval)

    def start(self, w: Weights, counter, reduction: str) -> None:  # noqa: ANN001
        """Make room in ``w.gstate`` for the explorer's models, and continue a model's
        explorer (``counter``: the counter it kept)."""
        from streamlearn.learners import cb_adf

        xp = self.xp
        w.gstate = xp.grow(w.gstate, w.cb_type)
        if reduction == "cb" and xp.kind == xp.ex.BAG:
            # --cb_explore K --bag B: the copies' indices are VW's rewritten ones, with the
            # bags' width below (as --cbify's, run/cbify.py): read with step 1
            xp.width, xp.w = 1, 2 if w.cb_type == cb_adf.DR else 1
        xp.resume(counter, w.stats)

    def learn(self, w: Weights, part: Part, ho: np.ndarray, lines: bool = False) -> Seen:
        """cb_adf scores and learns the batch, the explorer makes each example's pmf."""
        room(w, part.mg.act_ptr)
        rows = part.mg.row.shape[0]
        sub = part.sub if part.sub is not None else np.zeros(rows, dtype=np.int64)
        acts, probs, scores = self.xp.batch((w.tables, sub, w.step), w.table, w.gstate,
                                            w.params, w.loss_id, w.cb_type, part, ho, w.stats,
                                            w.dr_prev)  # fmt: skip
        return Seen(part, actions=acts, probs=probs, scores=scores)

    def line_args(self, s) -> tuple | None:  # noqa: ANN001 - a cb_line.Scratch
        """The trailing arguments of ``--cb K``'s one-call step
        (:meth:`~streamlearn.reductions.cb_line.CbLineParser.step`), or None where
        :meth:`Explorer.one` leaves the example to :meth:`Explorer.batch`."""
        xp = self.xp
        if not xp.plain:
            return None
        return (xp.clip_p, s.holdout, xp.ho_learns, s.scores, s.order, s.loss, True, xp.kind,
                xp.eps, xp.ml.first_only, *xp.shape, xp.xstats, s.actions, s.probs)

    def line_seen(self, part: Part, s) -> Seen:  # noqa: ANN001 - a cb_line.Scratch
        return Seen(part, actions=s.actions, probs=s.probs, scores=s.scores)

    def learn_one(self, w: Weights, part: Part) -> Seen | None:
        """:meth:`learn` of one example in kept arrays (:meth:`Explorer.one`), or None."""
        out = self.xp.one(w, part)
        if out is None:
            return None
        acts, probs, scores = out
        return Seen(part, actions=acts, probs=probs, scores=scores)

    def write(self, seen: Seen, out: list[str], vw: bool = True) -> None:
        from streamlearn.reductions.pmf import pmf_lines

        pmf_lines(seen.part, seen.actions, seen.probs, out, "\n\n" if vw else "\n")

    def progress(self, table, npass: int, seen: Seen, ho: np.ndarray) -> None:  # noqa: ANN001
        from streamlearn.reductions.pmf import progress_rows

        progress_rows(table, npass, seen.part, seen.actions, seen.probs, ho, known=self.known)


def over(below: Reduction) -> Reduction:
    """``below`` (cb_adf, ``--cb K``, ``--cbify``, CCB) with an explorer stacked on it when
    the run asks for one (``ml.explore``), as VW's ``cb_explore_adf`` over ``cb_adf``."""

    def learner(ml, cfg, **options: object):  # noqa: ANN001, ANN202
        if ml.explore:
            return Learner(ml, cfg)
        return below.learner(ml, cfg, **options)

    from streamlearn.reductions.large_action import OPTIONS as LAS_OPTIONS

    return dataclasses.replace(below, learner=learner,
                               options=below.options + OPTIONS + LAS_OPTIONS)  # fmt: skip


def cover_words(ml) -> list[str]:  # noqa: ANN001
    """``--cover``'s options VW keeps with a model (cb_explore_adf's and the legacy
    cb_explore's alike)."""
    words = ["--cover", str(ml.cover)]
    if ml.psi != 1.0:
        words += ["--psi", vw_number(ml.psi)]
    if ml.nounif:
        words.append("--nounif")
    return words


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The explorer's options VW keeps with the model (after its reduction's)."""
    words: list[str] = []
    if not ml.explore:
        return words
    words.append("--cb_explore_adf")
    if ml.reduction == "cbify":  # (VW's cbify keeps K, and inserts regcb's cost range)
        words += ["--cbify_ldf"] if ml.cbify_ldf else ["--cbify", str(ml.cbify)]
        if ml.flip_loss_sign:
            words.append("--flip_loss_sign")
        if ml.cbify_ldf or ml.explore in ("regcb", "squarecb"):
            words += ["--cb_min_cost", vw_number(ml.loss0), "--cb_max_cost",
                      vw_number(ml.loss1)]
    if ml.reduction in ("ccb", "slates"):  # (ccb stacks cb_sample below itself)
        words += ["--cb_sample", "--ccb_explore_adf"]
        if ml.ccb_no_slot_index:
            words.append("--ccb_no_slot_index")
        if ml.reduction == "slates":
            words.append("--slates")
    if ml.explore_eval:
        words.append("--explore_eval")
    if ml.epsilon is not None:
        words += ["--epsilon", vw_number(ml.epsilon)]
    if ml.first_only:
        words.append("--first_only")
    if ml.explore == "first":
        words += ["--first", str(ml.tau)]
    elif ml.explore == "softmax":
        words.append("--softmax")
        if ml.lam != 1.0:  # (VW keeps it when given: read as given when not the default)
            words += ["--lambda", vw_number(ml.lam)]
    elif ml.explore == "squarecb":
        words.append("--squarecb")
        if ml.gamma_scale != 10.0:
            words += ["--gamma_scale", vw_number(ml.gamma_scale)]
        if ml.gamma_exponent != 0.5:
            words += ["--gamma_exponent", vw_number(ml.gamma_exponent)]
        if ml.elim:
            words.append("--elim")
    elif ml.explore == "cover":
        words += cover_words(ml)
    elif ml.explore == "regcb":
        words.append("--regcb")
        if ml.regcbopt:
            words.append("--regcbopt")
    elif ml.explore == "synthcover":
        words.append("--synthcover")
        if ml.synthcoverpsi != 0.1:
            words += ["--synthcoverpsi", vw_number(ml.synthcoverpsi)]
        if ml.synthcoversize != 100:
            words += ["--synthcoversize", str(ml.synthcoversize)]
    elif ml.explore == "bag":
        words += ["--bag", str(ml.bag)]
        if ml.greedify:
            words.append("--greedify")
    elif ml.explore == "rnd":
        words += ["--rnd", str(ml.rnd)]
        for name in ("rnd_alpha", "rnd_invlambda"):
            if getattr(ml, name) != 0.1:
                words += [f"--{name}", vw_number(getattr(ml, name))]
    if ml.explore == "regcb" or (ml.explore == "squarecb" and ml.elim):
        for name in ("mellowness", "cb_min_cost", "cb_max_cost"):
            if getattr(ml, name) is not None and not (
                    ml.reduction == "cbify" and name != "mellowness"):  # (cbify's: above)
                words += [f"--{name}", vw_number(getattr(ml, name))]
    if getattr(ml, "large_action_space", False):
        from streamlearn.reductions.large_action import vw_words as las_words

        words += las_words(ml)
    return words


def saved_state(xp: Explorer | None, stats: np.ndarray,
                ml) -> tuple[int | tuple | None, tuple, int]:  # fmt: skip
    """(state, mtr sums, generator state) of a run's explorer ``xp`` (None: none) and
    cb_adf's counters ``stats``, as VW saves them: the
    counter of --first (examples still to explore), --squarecb, --regcb or --cover
    (examples learned), --synthcover's (lowest, highest) costs seen; bagging's copy 0
    mtr sums (VW's per-model state 0), cover's, regcb's and rnd's first model's (their
    own walk keeps them); bagging's and rnd's generator (VW's global one)."""
    from streamlearn.learners import cb_adf

    counter = None
    sums = (float(stats[cb_adf.EVENTS]), float(stats[cb_adf.ACTIONS]))
    seed = 0
    if xp is not None:
        from streamlearn.learners import explore as ex

        if ml.explore == "first":
            counter = int(xp.xstats[ex.X_TAU])
        elif ml.explore in ("squarecb", "cover", "regcb"):
            counter = int(xp.xstats[ex.X_COUNTER])
        elif ml.explore == "synthcover":
            counter = (float(xp.costs[0]), float(xp.costs[1]))
        if xp.kind in (ex.BAG, ex.COVER, ex.REGCB, ex.RND):
            sums = (float(xp.counts[0]), float(xp.counts[1]))
        if ml.explore in ("bag", "rnd") or ml.reduction in ("ccb", "slates"):
            seed = int(xp.rng[0])  # (VW's generator, cb_sample's: the header's --random_seed)
    return counter, sums, seed
