"""``--large_action_space`` (``--max_actions``, ``--spanner_c``): VW's filter of an example's
actions down to a spanner of them before the explorer's pmf, between cb_adf and the
explorer (VW's ``cb_explore_adf_large_action_space``, and ``cb_actions_mask`` above the
explorer giving the others probability 0).  :mod:`streamlearn.learners.large_action` holds
the kernels and says how.

What it owns: its fields of the stack's record (:data:`OPTIONS`, which the explorers carry),
its VW options and refusals, its names in VW's stack, its run state (:class:`Filter`: the
projection's seed, the spanner's indices, the action lines' own features) and its words in
VW's model options.  It runs over ``--cb_explore_adf``'s epsilon-greedy and ``--squarecb``
explorers (not ``--elim``); VW's default one-pass SVD only (``--two_pass_svd``: refused).
``--thread_pool_size``, ``--block_size``, ``--las_hint_explicit_simd`` and
``--action_cache_slack`` change how VW computes, not what: taken and ignored (VW's cache of
AOmega rows under ``--squarecb`` may differ from a fresh row in the last bit of a float).
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import VWUsage
from streamlearn.reductions.vwoptions import Command, VWOption, integer, number, stack_field

OPTIONS = (
    ("large_action_space", "bool", False),
    ("max_actions", "int", 20),
    ("spanner_c", "float", 2.0),
    ("action_cache_slack", "int", 50),
    # how VW computes, not what (read, then dropped by settle; --two_pass_svd refused there)
    ("las_thread_pool_size", "int", 0),
    ("las_block_size", "int", 0),
    ("las_hint_explicit_simd", "bool", False),
    ("two_pass_svd", "bool", False),
)
"""Its fields of :class:`~streamlearn.reductions.Multiline` (VW's defaults)."""


VW_OPTIONS = {
    "large_action_space": VWOption(None, False, stack_field("large_action_space")),
    "max_actions": VWOption(None, True, stack_field("max_actions", integer)),
    "spanner_c": VWOption(None, True, stack_field("spanner_c", number)),
    "action_cache_slack": VWOption(None, True, stack_field("action_cache_slack", integer)),
    "thread_pool_size": VWOption(None, True, stack_field("las_thread_pool_size", integer)),
    "block_size": VWOption(None, True, stack_field("las_block_size", integer)),
    "las_hint_explicit_simd": VWOption(None, False, stack_field("las_hint_explicit_simd")),
    "two_pass_svd": VWOption(None, False, stack_field("two_pass_svd")),
}

EXPLORERS = ("greedy", "squarecb")
"""The explorers it runs under."""
CB_TYPES = ("mtr", "ips", "dm", "dr", "sm")
"""cb_adf's estimators checked against VW under it."""


def settle(t: Command) -> None:
    """What sl runs of ``--large_action_space``; the rest refused in one line."""
    ml = t.multiline
    two_pass = ml.pop("two_pass_svd", False)
    for k in ("las_thread_pool_size", "las_block_size", "las_hint_explicit_simd"):
        ml.pop(k, None)  # (how VW computes, not what)
    own = [k for k in ("max_actions", "spanner_c", "action_cache_slack") if k in ml]
    if not ml.get("large_action_space"):
        for k in own:  # (VW reads them with --large_action_space only)
            ml.pop(k)
        return
    if two_pass:
        raise VWUsage("--two_pass_svd is not supported by sl yet (VW's default one-pass SVD is)")
    if not t.exploring or ml.get("reduction") != "cb_adf" or ml.get("legacy"):
        raise VWUsage("--large_action_space without --cb_explore_adf (or with --cb_explore, "
                      "--cbify, --ccb_explore_adf, --slates) is not supported by sl")  # fmt: skip
    explore = ml.get("explore", "greedy")
    if explore not in EXPLORERS or ml.get("elim"):
        which = "elim" if ml.get("elim") else explore
        raise VWUsage(f"--large_action_space with --{which} is not supported by sl (it runs "
                      "with epsilon-greedy and --squarecb)")  # fmt: skip
    if ml.get("cb_dro"):
        raise VWUsage("--large_action_space with --cb_dro is not supported by sl yet")
    if ml.get("cb_type", "mtr") not in CB_TYPES:
        raise VWUsage(f"--large_action_space with --cb_type {ml['cb_type']} is not supported "
                      "by sl yet (mtr, ips, dm, dr, sm)")  # fmt: skip
    if ml.get("max_actions", 20) < 1:
        raise VWUsage("--max_actions must be at least 1 with --large_action_space")
    if ml.get("spanner_c", 2.0) <= 1.0:
        raise VWUsage("--spanner_c must exceed 1 with --large_action_space in sl")
    if (t.inputs.get("cache") or getattr(t, "cache", False) or getattr(t, "cache_files", None)
            or getattr(t, "daemon", None)):  # fmt: skip
        raise VWUsage("--large_action_space with a cache file or --daemon is not supported "
                      "by sl yet")  # fmt: skip


def chain(ml, chain: str) -> str:  # noqa: ANN001 - a Multiline
    """VW's stack with the filter above cb_adf and its mask above the explorer."""
    if not getattr(ml, "large_action_space", False):
        return chain
    chain = chain.replace(", cb_adf, ", ", cb_adf, cb_explore_adf_large_action_space, ", 1)
    return chain.replace(", shared_feature_merger", ", cb_actions_mask, shared_feature_merger", 1)


def vw_words(ml) -> list[str]:  # noqa: ANN001 - a Multiline
    """The options VW keeps with its model."""
    if not getattr(ml, "large_action_space", False):
        return []
    from streamlearn.reductions.text import vw_number

    words = ["--large_action_space"]
    if ml.max_actions != 20:  # (VW keeps those given: read as given when not the default)
        words += ["--max_actions", str(ml.max_actions)]
    if ml.spanner_c != 2.0:
        words += ["--spanner_c", vw_number(ml.spanner_c)]
    if ml.action_cache_slack != 50:
        words += ["--action_cache_slack", str(ml.action_cache_slack)]
    return words


def vw_seed(seed: int) -> int:
    """The projection's seed: VW's ``(get_random() + 1) * 10`` at set-up (one draw of the
    global generator seeded with ``--random_seed``)."""
    state = (0xEECE66D5DEECE66D * (seed % 2**64) + 2147483647) % 2**64  # (explore.merand48)
    r = np.float32((state >> 25) & 0x7FFFFF) * np.float32(2.0**-23)
    return int(np.float32(np.float32(r + np.float32(1.0)) * np.float32(10.0)))


def _gamma(counter: int, scale: np.float32, exponent: np.float32) -> np.float32:
    """--squarecb's gamma (:func:`streamlearn.learners.explore.squarecb_gamma`)."""
    return np.float32(scale * np.float32(float(counter) ** float(exponent)))


class Filter:
    """The filter over a run: its seed, the spanner's indices VW keeps between examples,
    and how the action lines' own features are read again (their parse options)."""

    def __init__(self, ml, cfg) -> None:  # noqa: ANN001 - a Multiline, a TrainConfig
        from streamlearn.io.examples import parse_options
        from streamlearn.io.interactions import compile_interactions
        from streamlearn.io.labels import LABEL_CB
        from streamlearn.learners.base import P_ADAPTIVE, P_LEARN, P_NORMALIZED

        self.d = int(ml.max_actions)
        self.c = np.float32(ml.spanner_c)
        self.seed = vw_seed(cfg.seed)
        self.idx = np.zeros(self.d, dtype=np.int64)
        self.filtering = 0
        """VW's ``cb_las_filtering_factor``: the last example's non-degenerate count."""
        self.squarecb = ml.explore == "squarecb"
        params = cfg.params()
        learning = params[P_LEARN] != 0.0
        if cfg.algo == "coin":
            self.stride = 8
        elif cfg.algo in ("ftrl", "pistol"):
            self.stride = 4
        else:  # gd: 4 floats with its adaptive or normalized state (VW drops both under -t)
            self.stride = 4 if (params[P_ADAPTIVE] or params[P_NORMALIZED]) and learning else 1
        self.width = 2 if ml.cb_type == "dr" else 1  # (VW's feature width: dr's 2 models)
        self.bits = cfg.bits
        self.constant = cfg.constant
        self.full = cfg.namespaces() or compile_interactions()
        self._part = None  # (the part whose action lines :meth:`own_rows` read last)
        self._rows: tuple = ()
        self.parse_inter = parse_options(self.full, LABEL_CB)

    def own_rows(self, part) -> tuple:  # noqa: ANN001 - an io.examples.Part
        """The action lines' own features (the shared line's left out, crosses among their
        own namespaces made): their block parsed again, the part's rows taken."""
        from streamlearn.io.batch import Block
        from streamlearn.io.multiline import Merged, cross_merged
        from streamlearn.io.parse import FMT_VW, parse_block

        src = part.src
        if src is None:
            raise VWUsage("--large_action_space: these examples' text is not at hand (a cache "
                          "file, the API): not supported by sl yet")  # fmt: skip
        b = parse_block(Block(src.data, src.name, src.first_line), FMT_VW, self.bits,
                        self.constant, self.parse_inter)  # fmt: skip
        rows = part.mg.row
        lens = b.indptr[rows + 1] - b.indptr[rows]
        ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        take = np.concatenate([np.arange(b.indptr[r], b.indptr[r + 1]) for r in rows]
                              ) if rows.shape[0] else np.zeros(0, dtype=np.int64)  # fmt: skip
        ns = b.ns if b.ns is not None else np.zeros(b.indices.shape[0], dtype=np.uint8)
        mg = Merged(part.mg.act_ptr, part.mg.example, rows, ptr, b.indices[take],
                    b.values[take], ns[take])  # fmt: skip
        mg = cross_merged(mg, self.full, self.bits)
        return mg.indptr, mg.indices, mg.values

    def keep(self, part, scores: np.ndarray, order: np.ndarray, gammas: np.ndarray,
             only: int | None = None) -> np.ndarray:  # noqa: ANN001  # fmt: skip
        """Per row: whether its action stays (the spanner's and each example's top one);
        ``gammas``: --squarecb's gamma at each example; ``only``: that example's alone."""
        from streamlearn.learners import large_action as la

        act_ptr = part.mg.act_ptr
        keep = np.ones(scores.shape[0], dtype=np.bool_)
        d = self.d
        for e in range(act_ptr.shape[0] - 1) if only is None else (only,):
            lo, hi = int(act_ptr[e]), int(act_ptr[e + 1])
            n = hi - lo
            if n <= d:
                continue
            if self._part is not part:
                self._rows = self.own_rows(part)
                self._part = part
            indptr, indices, values = self._rows
            ranked = scores[lo:hi][order[lo:hi]].astype(np.float32)
            shrink = np.ones(n, dtype=np.float32)
            if self.squarecb:
                la.shrink_factors(ranked, np.float32(gammas[e]), d, shrink)
            p = min(n, d + la.SLACK)
            scale = np.float32(1.0 / np.sqrt(np.float64(p)))
            a = np.zeros((n, p), dtype=np.float32)
            la.aomega(indptr, indices, values, lo, hi, self.width, (1 << self.bits) - 1,
                      self.stride, self.seed, p, scale, shrink, a)  # fmt: skip
            u, s, _ = np.linalg.svd(a.astype(np.float64), full_matrices=False)
            u = np.ascontiguousarray(u[:, :d])
            k = min(d, la.non_degenerate(s))
            self.filtering = la.non_degenerate(s)
            la.spanner(u, k, shrink.astype(np.float64), self.c, self.idx)
            mine = np.zeros(n, dtype=np.bool_)
            ok = self.idx[self.idx < n]
            mine[ok] = True
            mine[order[lo]] = True
            keep[lo:hi] = mine
        return keep

    def explore(self, xp, part, scores, order, ho, xstats, acts, probs) -> None:  # noqa: ANN001
        """The explorer's pmf of each example over its kept actions (``xp``: the
        :class:`~streamlearn.reductions.explore.Explorer`), VW's loss in ``xstats``."""
        from streamlearn.learners import large_action as la
        from streamlearn.learners.explore import X_COUNTER

        mg = part.mg
        m = mg.act_ptr.shape[0] - 1
        ml = xp.ml
        gammas = np.zeros(m, dtype=np.float32)
        if self.squarecb:
            learned = (part.chosen >= 0) & xp.learning & (xp.ho_learns | ~ho[:m])
            counter = int(xstats[X_COUNTER]) + np.concatenate([[0], np.cumsum(learned)[:-1]])
            gs, ge = np.float32(ml.gamma_scale), np.float32(ml.gamma_exponent)
            gammas[:] = [_gamma(int(c), gs, ge) for c in counter]
        keep = self.keep(part, scores, order, gammas)
        la.las_explore_examples(
            xp.kind, xp.eps, ml.first_only, np.float32(ml.gamma_scale),
            np.float32(ml.gamma_exponent), mg.act_ptr, scores, order, keep, part.chosen,
            part.cost, part.prob, ho, xp.ho_learns, xp.learning, xstats, acts, probs,
        )  # fmt: skip

    def explore_eval(self, xp, weights, gstate, params, loss_id, cb_type, part, stats,
                     dr_prev) -> tuple:  # noqa: ANN001  # fmt: skip
        """``--explore_eval`` over the filter: :func:`streamlearn.learners.explore_eval.
        explore_eval_examples`' walk, an example at a time (its pmf over the kept actions)."""
        from streamlearn.learners import cb_adf
        from streamlearn.learners import explore_eval as ee
        from streamlearn.learners import large_action as la
        from streamlearn.learners.base import G_N
        from streamlearn.learners.explore import SQUARECB, X_COUNTER

        f32 = np.float32
        ml = xp.ml
        if xp.ee is None:
            xp.ee = ee.new_state(ml.multiplier)
        e_ = xp.ee
        mg = part.mg
        act_ptr, indptr = mg.act_ptr, mg.indptr
        rows = mg.row.shape[0]
        scores = np.zeros(rows, dtype=np.float32)
        order = np.zeros(rows, dtype=np.int64)
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        tables, sub, step = weights
        pred_params = params.copy()
        pred_params[10] = 0.0  # P_LEARN
        learning = params[10] != 0.0
        x = xp.xstats
        saved = stats[cb_adf.LOSS], stats[cb_adf.HO_LOSS]
        before = x[xp.ex.X_LOSS], x[xp.ex.X_HO_LOSS]
        fixed = ml.multiplier is not None
        target = ml.target_rate is not None
        rate_t = f32(ml.target_rate if target else 1.0)
        gs, ge = f32(ml.gamma_scale), f32(ml.gamma_exponent)
        ap = np.zeros(2, dtype=np.int64)
        no_ho = np.zeros(1, dtype=np.bool_)
        loss_out = np.zeros(1)
        pr = np.zeros(1)
        for e in range(act_ptr.shape[0] - 1):
            r0, r1 = int(act_ptr[e]), int(act_ptr[e + 1])
            n = r1 - r0
            ap[1] = n
            k = int(part.chosen[e])
            ch, co = part.chosen[e : e + 1], part.cost[e : e + 1]
            cb_adf.train_examples(tables, sub[r0:r1], step, gstate, pred_params, loss_id, cb_type,
                                  xp.clip_p, ap, indptr[r0 : r1 + 1], mg.indices, mg.values, ch,
                                  co, part.prob[e : e + 1], no_ho, True, stats, dr_prev,
                                  scores[r0:r1], order[r0:r1], loss_out)  # fmt: skip
            g = _gamma(int(x[X_COUNTER]), gs, ge) if self.squarecb else f32(0.0)
            gammas = np.full(e + 1, g, dtype=np.float32)
            keep = self.keep(part, scores, order, gammas, only=e)
            la.las_explore_examples(xp.kind, xp.eps, ml.first_only, gs, ge, ap, scores[r0:r1],
                                    order[r0:r1], keep[r0:r1], ch, co, part.prob[e : e + 1],
                                    no_ho, True, False, x, acts[r0:r1],
                                    probs[r0:r1])  # fmt: skip
            pe = float(part.prob[e])
            if k < 0 or not learning or not pe > 0.0:
                continue
            # (the kept actions: VW's explore_eval sits below the mask that adds the others)
            kept = acts[r0 : r0 + int(keep[r0:r1].sum())]
            found, pk, threshold = _threshold(e_, kept, probs[r0:], k, pe, fixed, target,
                                              rate_t)  # fmt: skip
            if not found:
                continue
            if la.draw(xp.rng) < threshold:
                weight = f32(1.0)
                if threshold > f32(1.0):
                    weight = threshold
                e_[ee.E_UPDATES] += 1.0
                e_[ee.E_WEIGHT] = f32(f32(e_[ee.E_WEIGHT]) + weight)
                pr[0] = pk
                if xp.kind == SQUARECB and k != n - 1:
                    pr[0] = 1.0
                gstate[G_N] -= 1.0
                scratch = np.zeros(stats.shape[0])
                scratch[cb_adf.EVENTS] = stats[cb_adf.EVENTS]
                scratch[cb_adf.ACTIONS] = stats[cb_adf.ACTIONS]
                cb_adf.train_weighted(tables, sub[r0:r1], step, gstate, params, loss_id, cb_type,
                                      xp.clip_p, ap, indptr[r0 : r1 + 1], mg.indices, mg.values,
                                      ch, co, pr, no_ho, True, scratch, dr_prev, scores[r0:r1],
                                      order[r0:r1], loss_out, weight)  # fmt: skip
                stats[cb_adf.EVENTS] = scratch[cb_adf.EVENTS]
                stats[cb_adf.ACTIONS] = scratch[cb_adf.ACTIONS]
                if xp.kind == SQUARECB:  # (the explorer learns: its counter advances)
                    x[X_COUNTER] += 1.0
        stats[cb_adf.LOSS] = saved[0] + (x[xp.ex.X_LOSS] - before[0])
        stats[cb_adf.HO_LOSS] = saved[1] + (x[xp.ex.X_HO_LOSS] - before[1])
        return acts, probs, scores


def _threshold(e_: np.ndarray, kept: np.ndarray, probs: np.ndarray, k: int, pe: float,
               fixed: bool, target: bool, rate_t: np.float32) -> tuple:  # fmt: skip
    """VW's explore_eval for one example of logged action ``k`` (probability ``pe``) over
    the kept actions' pmf (``kept``, ``probs`` from the example's first row): its counters
    in ``e_`` advanced; (whether ``k`` is kept, its probability, the acceptance
    threshold)."""
    from streamlearn.learners import explore_eval as ee

    f32 = np.float32
    e_[ee.E_EXAMPLES] += 1.0
    hit = np.flatnonzero(kept == k)
    found = hit.shape[0] > 0
    pk = f32(probs[hit[-1]]) if found else f32(0.0)
    threshold = f32(pk / f32(pe))
    mult = f32(e_[ee.E_MULTIPLIER])
    if not fixed and not target and found and threshold > f32(0.0):
        mult = min(mult, f32(f32(1.0) / threshold))
        e_[ee.E_MULTIPLIER] = mult
    threshold = f32(threshold * mult)
    sum_p = f32(e_[ee.E_SUM_P])
    rate = f32(1.0)
    if sum_p > f32(0.0):
        rate = f32(f32(rate_t * f32(e_[ee.E_T])) / sum_p)
    e_[ee.E_SUM_P] = f32(sum_p + threshold)
    e_[ee.E_T] += 1.0
    e_[ee.E_RATE] = rate
    if not found:
        return found, pk, threshold
    if threshold > 1.0 + 1e-6:
        e_[ee.E_VIOLATIONS] += 1.0
    if target:
        threshold = f32(threshold * rate)
    return found, pk, threshold
