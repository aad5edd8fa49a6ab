"""``sl vw --warm_cb K``: a contextual bandit warm-started from supervised lines (VW's
``cb/warm_cb.cc``, over ``--cb_explore_adf``'s epsilon-greedy; kernels
:mod:`streamlearn.learners.warm_cb`, which says the copies, offsets and lambdas).

Per line, in order:

1. *warm start* (the first ``--warm_start`` lines): under multiclass input the label is
   corrupted with probability ``--corrupt_prob_warm_start`` (a draw of VW's ``merand48``
   generator, seeded by ``--random_seed``, on every warm-start line; type 1 a uniform
   class from a second draw, 2 the next class, 3 ``--overwrite_label``); the prediction is
   the first action of the best lambda's pmf (the lambda of least estimated cost so far);
   with ``--warm_start_update`` every lambda learns each action line toward its cost
   (``--loss0`` for the label's class, ``--loss1`` otherwise; under ``--warm_cb_cs`` the
   class's cost scaled to [loss0, loss1]) weighted by its warm-start multiplier.  Under
   ``--sim_bandit`` the line is played as a bandit round instead (no cost estimates).
   The line's weight is 0: it counts as an example, not in the loss.
2. *interaction* (the next ``--interaction`` lines): the best lambda's pmf, an action drawn
   from it with ``uniform_hash("vw") + n`` (n the draws so far), its cost; each lambda's
   estimated cost grows by ``cost/p`` when its own first action is the one drawn; with
   ``--interaction_update`` every lambda learns the drawn action (cb_adf's update, weighted
   by its bandit multiplier); the variance estimate adds ``1/p`` of the (new) best
   lambda's first action under the drawn pmf.
3. the rest: predicted 1, weight 0, nothing learned.

The loss is the weight of a line whose prediction is not its class (cost-sensitive: the
predicted class's cost above the cheapest), VW's multiclass and cs counters; ``-p`` the
predicted class and the line's tag.  VW's run ends with three lines of its own (the
average variance estimate, its theoretical value K/eps, the last lambda chosen).

Models: VW's format both ways (``-f``, ``-i``; :func:`_save`).  VW keeps no state of
warm_cb's (nor ``--choices_lambda``, the phases or their flags: a continued run gives them
again, and starts its phases, estimated costs and draws afresh), lambda 0's mtr sums and
model 0's normalizer sums only (the other lambdas' start at 0), and the generator's state
as ``--random_seed``.  One pass over gd (its update rules) is run; what else sl
does not run is refused in one line before any data is read (:func:`refuse`).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.errors import UsageError

F32 = np.float32
UNLABELED = -1


def refuse(learn: dict, ml, inputs, outputs) -> None:  # noqa: ANN001
    """Stop (exit 2, one line) before any data is read on what sl does not run yet."""
    from streamlearn.reductions.options import config_of

    cfg = config_of(learn)
    why = None
    if ml.cb_type not in ("mtr", "ips", "dm", "dr"):
        why = f"--cb_type {ml.cb_type}"
    elif ml.explore != "greedy":
        why = f"the {ml.explore} explorer (epsilon-greedy only)"
    elif ml.first_only:
        why = "--first_only"
    elif cfg.passes > 1:
        why = "--passes"
    elif cfg.test_only:
        why = "-t (VW's test-only warm_cb: not reproduced yet)"
    elif cfg.algo != "gd":
        why = f"the {cfg.algo} learner"
    elif cfg.namespaces() is not None and cfg.namespaces().crosses_or_filters:
        why = "interactions or namespace filters"
    elif outputs.final_model and getattr(outputs, "model_format", "sl") == "sl":
        why = "-f in sl's model format (VW's is written: sl vw's default)"
    elif getattr(ml, "baseline", False) or getattr(ml, "cb_dro", False):
        why = "--baseline/--cb_dro"
    if why is not None:
        raise UsageError(f"--warm_cb with {why}: not supported yet")


class _Sublearners:
    """The stack's state over a run: gd's table and global state (room for one model per
    lambda), mtr's counts per lambda, and the buffers of one line's K copies."""

    def __init__(self, ml, cfg, begun) -> None:  # noqa: ANN001
        from streamlearn.learners import cb_adf, csoaa_ldf
        from streamlearn.learners.base import fresh_table

        self.k = ml.warm_cb
        self.n = ml.choices_lambda
        self.cfg = cfg
        self.params = cfg.params()
        self.loss_id = cfg.loss_id
        self.cb_type = cb_adf.CB_TYPES[ml.cb_type]
        self.clip_p = ml.clip_p
        self.eps = F32(0.05 if ml.epsilon is None else ml.epsilon)
        self.table = (begun[1] if begun else
                      fresh_table(cfg.bits, (0.0, 0.0, 0.0, 0.0), np.float32))  # fmt: skip
        gstate = begun[2] if begun else csoaa_ldf.init_gstate(self.params)
        self.w = 2 if self.cb_type == cb_adf.DR else 1  # (cb_adf's width: dr's regressor)
        models = self.n * self.w
        self.gstate = np.zeros(gstate.shape[0] + 2 * max(0, models - csoaa_ldf.MODELS))
        self.gstate[: gstate.shape[0]] = gstate
        self.sums = np.zeros((self.n, 2))
        if begun is not None:  # VW's model keeps lambda 0's mtr sums and normalizer sums
            self.sums[0] = begun[3]
        k = self.k
        self.scores = np.zeros(k, dtype=np.float32)
        self.order = np.zeros(k, dtype=np.int64)
        self.acts = np.zeros(k, dtype=np.int64)
        self.probs = np.zeros(k, dtype=np.float32)
        self.ptr = np.zeros(k + 1, dtype=np.int64)
        self.idx = np.zeros(0, dtype=np.uint32)
        self.val = np.zeros(0)

    def copy(self, b, r: int) -> None:  # noqa: ANN001
        """Row ``r`` of batch ``b`` as the K action lines."""
        from streamlearn.learners.warm_cb import copy_actions

        nnz = int(b.indptr[r + 1] - b.indptr[r]) * self.k
        if self.idx.shape[0] < nnz:
            self.idx = np.zeros(nnz, dtype=np.uint32)
            self.val = np.zeros(nnz)
        # (VW's weights per hash: the lambdas' count rounded up to a power of 2)
        copy_actions(b.indptr, b.indices, b.values, r, self.k,
                     1 << (self.n * self.w - 1).bit_length(),
                     self.cfg.bits, self.ptr, self.idx, self.val)  # fmt: skip

    def predict(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Lambda ``i``'s pmf: (actions 0-based, probabilities), in explorer order."""
        from streamlearn.learners.warm_cb import predict_at

        predict_at(self.table, self.gstate, self.params, self.ptr, self.idx, self.val, self.k,
                   i * self.w, self.eps, self.scores, self.order, self.acts,
                   self.probs)  # fmt: skip
        return self.acts, self.probs

    def learn_costs(self, costs: np.ndarray, weight, i: int) -> None:  # noqa: ANN001
        """Lambda ``i``'s supervised update (csoaa_ldf, at offset ``i``)."""
        from streamlearn.learners.warm_cb import learn_costs

        learn_costs(self.table, self.gstate, self.params, self.loss_id, self.ptr, self.idx,
                    self.val, self.k, costs, float(weight), i)  # fmt: skip

    def learn_bandit(self, chosen: int, cost, prob, weight, i: int) -> None:  # noqa: ANN001
        """Lambda ``i``'s bandit update of the drawn ``chosen`` (0-based) line."""
        from streamlearn.learners.warm_cb import learn_bandit

        learn_bandit(self.table, self.gstate, self.params, self.loss_id, self.cb_type,
                     float(self.clip_p), self.ptr, self.idx, self.val, self.k, chosen,
                     float(cost), float(prob), float(weight), i * self.w,
                     self.sums[i])  # fmt: skip


class _Play:
    """warm_cb's own state (VW's ``warm_cb``): the phases' counters, the lambdas and their
    estimated costs, the draws' counter, the generator of corruptions."""

    def __init__(self, ml, cfg) -> None:  # noqa: ANN001
        from streamlearn.learners import warm_cb as wk

        self.wk = wk
        self.ml = ml
        self.k = ml.warm_cb
        self.loss0, self.loss1 = F32(ml.loss0), F32(ml.loss1)
        eps = F32(0.05 if ml.epsilon is None else ml.epsilon)
        self.eps = eps
        self.lam = wk.lambdas(ml.choices_lambda, ml.lambda_scheme, eps, ml.warm_start_update,
                              ml.interaction_update)  # fmt: skip
        self.costs = np.zeros(ml.choices_lambda, dtype=np.float32)
        self.ws_iter = 0
        self.inter_iter = 0
        self.counter = 0
        self.cumu_var = F32(0.0)
        self.rng = np.array([int(cfg.seed or 0)], dtype=np.uint64)
        self.last_pmf = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))

    def mult(self, i: int, warm: bool):  # noqa: ANN201
        """Lambda ``i``'s weight multiplier of a warm-start line (``warm``) or a round."""
        return self.wk.multiplier(self.lam[i], self.ml.warm_start, self.ml.interaction, warm)

    def random(self):  # noqa: ANN201
        """A draw of VW's generator (float32 in [0, 1))."""
        from streamlearn.learners.explore import merand48

        return merand48(self.rng)

    def corrupt(self, y: int) -> int:
        """VW's ``corrupt_action`` of a warm-start label (a draw every time)."""
        ml = self.ml
        if self.random() < F32(ml.corrupt_prob_warm_start):
            if ml.corrupt_type_warm_start == 1:
                f = self.random()
                for i in range(1, self.k + 1):
                    if f <= F32(F32(i) / F32(self.k)):
                        return i
                return self.k
            if ml.corrupt_type_warm_start == 3:
                return ml.overwrite_label
            return (y % self.k) + 1 if y >= 0 else (4294967295 % self.k) + 1
        return y

    def cost_of(self, label, action: int):  # noqa: ANN001, ANN201
        """The cost of ``action`` (1-based): VW's ``loss`` or ``loss_cs``."""
        if isinstance(label, tuple):
            cls, costs = label
            hit = np.flatnonzero(cls == action)
            c = costs[hit[0]] if hit.shape[0] else F32(0.0)
            return F32(self.loss0 + (self.loss1 - self.loss0) * F32(c))
        return self.loss1 if label != action else self.loss0


def _draw(play: _Play, subs: _Sublearners) -> tuple[int, float, np.ndarray, np.ndarray]:
    """VW's ``predict_bandit_adf``: the best lambda's pmf and a draw from it."""
    from streamlearn.learners.explore import APP_SEED, sample_after_normalizing

    acts, probs = subs.predict(play.wk.find_min(play.costs))
    acts, probs = acts.copy(), probs.copy()
    idx = int(sample_after_normalizing(np.uint64(APP_SEED + play.counter), probs))
    play.counter += 1
    return int(acts[idx]) + 1, float(probs[idx]), acts, probs


def _bandit(play: _Play, subs: _Sublearners, label, warm: bool) -> int:  # noqa: ANN001
    """VW's ``predict_or_learn_bandit_adf``: a draw, its cost, the lambdas' cost estimates
    (interaction), and their learning when the phase learns."""
    action, prob, acts, probs = _draw(play, subs)
    cost = play.cost_of(label, action)
    if not warm:
        for i in range(subs.n):
            mine = int(subs.predict(i)[0][0]) + 1
            if mine == action:
                play.costs[i] = F32(play.costs[i] + F32(cost) / F32(prob))
    if play.ml.warm_start_update if warm else play.ml.interaction_update:
        for i in range(subs.n):
            subs.learn_bandit(action - 1, cost, prob, play.mult(i, warm), i)
    play.last_pmf = (acts, probs)
    return action


def _supervised(play: _Play, subs: _Sublearners, label) -> int:  # noqa: ANN001
    """VW's ``predict_or_learn_sup_adf``: the best lambda's first action, then every lambda
    learns each action's cost."""
    action = int(subs.predict(play.wk.find_min(play.costs))[0][0]) + 1
    if play.ml.warm_start_update:
        costs = np.array([play.cost_of(label, a + 1) for a in range(play.k)], dtype=np.float32)
        for i in range(subs.n):
            subs.learn_costs(costs, play.mult(i, True), i)
    return action


def _one(play: _Play, subs: _Sublearners, label) -> tuple[int, float]:  # noqa: ANN001
    """One line through VW's ``predict_and_learn_adf``: (its prediction, its weight)."""
    ml = play.ml
    if play.ws_iter < ml.warm_start:
        if not isinstance(label, tuple):
            label = play.corrupt(label)
        if ml.sim_bandit:
            pred = _bandit(play, subs, label, True)
        else:
            pred = _supervised(play, subs, label)
        play.ws_iter += 1
        return pred, 0.0
    if play.inter_iter < ml.interaction:
        pred = _bandit(play, subs, label, False)
        best = int(subs.predict(play.wk.find_min(play.costs))[0][0]) + 1
        acts, probs = play.last_pmf
        var = F32(0.0)
        for a in range(play.k):
            if int(acts[a]) + 1 == best:
                var = F32(1.0) / probs[a]
        play.cumu_var = F32(play.cumu_var + var)
        play.inter_iter += 1
        return pred, 1.0
    return 1, 0.0


class _Counts:
    """VW's shared_data counters and its progress rows (weights 0 or 1)."""

    def __init__(self, say, quiet: bool, step: float) -> None:  # noqa: ANN001
        self.say, self.quiet, self.step = say, quiet, step
        self.wlab = self.wunl = self.loss = self.since = self.old_wlab = 0.0
        self.n = 0
        self.features = 0
        self.dump = -step if step < 0.0 else 1.0

    # (what a VW model's resume state takes of VW's table: run.mlmodel.table_state)
    example_number = property(lambda self: self.n)
    total_features = property(lambda self: self.features)
    since_loss = property(lambda self: self.since)

    def add(self, labeled: bool, loss: float, weight: float, nf: int, label: str,
            pred: int) -> None:  # fmt: skip
        """A line counted (VW's ``shared_data::update``), and its row when one is due."""
        if labeled:
            self.wlab += weight
        else:
            self.wunl += weight
        self.loss += loss
        self.since += loss
        self.features += nf
        self.n += 1
        we = self.wlab + self.wunl
        if self.quiet or we < self.dump:
            return
        avg = f"{self.loss / self.wlab:.6f}" if self.wlab > 0 else "n.a."
        since = ("n.a." if self.wlab == self.old_wlab
                 else f"{self.since / (self.wlab - self.old_wlab):.6f}")  # fmt: skip
        label = label if len(label) <= 14 else label[:11] + "..."
        self.say(f"{avg[:8]:<8} {since[:8]:<8} {self.n:>12d} {we:>14.1f} {label:>14} "
                 f"{pred!s:>14} {nf:>8d}")  # fmt: skip
        self.since = 0.0
        self.old_wlab = self.wlab
        if self.step < 0.0:
            self.dump = float(F32(we - self.step))
        else:
            self.dump = float(F32(we * (self.step if self.step > 0.0 else 2.0)))


def _labels(b, lab, r: int, cs: bool):  # noqa: ANN001, ANN202
    """Row ``r``'s label for warm_cb (an int class, or (classes, costs) under cs) and
    whether it has one."""
    if not cs:
        y = b.labels[r]
        if math.isnan(y):
            return UNLABELED, False
        return int(y), True
    cls = lab.cls[lab.ptr[r] : lab.ptr[r + 1]]
    costs = lab.cost[lab.ptr[r] : lab.ptr[r + 1]].astype(np.float32)
    return (cls, costs), costs.shape[0] > 0 and not np.isnan(costs).all()


def _loss(label, labeled: bool, pred: int, weight: float) -> float:  # noqa: ANN001
    """VW's multiclass or cs loss of a line's prediction, times its weight."""
    if not labeled:
        return 0.0
    if isinstance(label, tuple):
        cls, costs = label
        hit = np.flatnonzero(cls == pred)
        chosen = costs[hit[-1]] if hit.shape[0] else np.finfo(np.float32).max
        return float(F32(F32(chosen - np.nanmin(costs)) * F32(weight)))
    return weight if label != pred else 0.0


def run(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Play ``inputs.sources`` (module doc); returns the summary."""
    import dataclasses

    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CS, read_labels
    from streamlearn.io.parse import FMT_VW, parse_block
    from streamlearn.io.reader import iter_blocks
    from streamlearn.learners.base import G_N
    from streamlearn.reductions.options import config_of
    from streamlearn.reductions.text import tag_text
    from streamlearn.run.mlpasses import report_block
    from streamlearn.run.mlsummary import write_text

    refuse(learn, ml, inputs, outputs)
    begun = None
    if inputs.initial_model:
        from streamlearn.run.mlmodel import start

        begun = start(inputs.initial_model, ml, learn)
        refuse(begun[0], ml, inputs, outputs)
    cfg = config_of(begun[0] if begun else learn)
    quiet = bool(getattr(outputs, "vw_quiet", False))
    say = console.say if not quiet else (lambda *a: None)
    if getattr(outputs, "vw_format", False) and not quiet:
        from streamlearn.run.mlconsole import TABLE_HEAD, header
        from streamlearn.run.vwconsole import say_notes

        say_notes(cfg, outputs)
        say(header(ml, cfg, inputs, outputs, None, list(inputs.sources or ["-"]),
                   begun[5] if begun else None))
        say(TABLE_HEAD)  # (before any line is read, as VW)
    # (VW warns on its stdout that no --epsilon was given: not written, as its other warnings)
    full = cfg.namespaces() or compile_interactions()
    parse_inter = dataclasses.replace(full, label_kind=LABEL_CS if ml.warm_cb_cs else 0)
    subs, play = _Sublearners(ml, cfg, begun), _Play(ml, cfg)
    counts = _Counts(say, quiet, getattr(console, "progress", 0.0))
    preds: list[str] = []
    malformed = 0
    for block in iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                             inputs.flat_text(cfg)):  # fmt: skip
        b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, parse_inter)
        malformed = report_block(b, malformed, inputs.strict, say)
        lab = read_labels(b, LABEL_CS, parse_inter.vw_numbers) if ml.warm_cb_cs else None
        for r in np.flatnonzero(b.status == 0):
            r = int(r)
            label, labeled = _labels(b, lab, r, ml.warm_cb_cs)
            subs.copy(b, r)
            pred, weight = _one(play, subs, label if labeled or ml.warm_cb_cs else UNLABELED)
            nf = int(b.indptr[r + 1] - b.indptr[r])
            text = ("known" if labeled else "unknown") if ml.warm_cb_cs else (
                str(label) if labeled else "unknown")  # fmt: skip
            counts.add(labeled, _loss(label, labeled, pred, weight), weight, nf, text, pred)
            if labeled:  # (VW's t after the line, less its unlabeled weight: gd's rate)
                subs.gstate[G_N] += weight
            tag = bytes(b.block.data[int(b.tag_start[r]) : int(b.tag_end[r])])
            preds.append(f"{pred}{tag_text(tag)}\n")
    if outputs.predictions:
        write_text(outputs.predictions, "".join(preds))
    summary = _finish(say, counts, play, malformed, quiet)
    if outputs.final_model:
        _save(outputs, ml, cfg, subs, counts, play)
    return summary


def _save(outputs, ml, cfg, subs: _Sublearners, counts: _Counts, play: _Play) -> None:  # noqa: ANN001
    """``-f``: VW's model of the run (:func:`streamlearn.run.mlmodel.encode`): gd's weights
    (every lambda's), model 0's normalizer sums and lambda 0's mtr sums (VW keeps no
    more without ``--per_model_save_load``), VW's counters and t, the generator's state
    as ``--random_seed``; warm_cb keeps nothing of its own (a continued run starts its
    phases, lambdas' costs and draws again, as VW's)."""
    from streamlearn.errors import ModelError
    from streamlearn.learners import cb_adf
    from streamlearn.learners.base import G_N
    from streamlearn.run.mlmodel import encode
    from streamlearn.system.outputs import write_bytes

    stats = np.zeros(cb_adf.STATS)
    stats[cb_adf.N_EX] = counts.wlab + counts.wunl
    stats[cb_adf.N_LAB] = counts.wlab
    stats[cb_adf.LOSS] = counts.loss
    stats[cb_adf.FEATURES] = counts.features
    stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS] = subs.sums[0]
    gstate = subs.gstate.copy()
    gstate[G_N] = counts.wlab  # (model_state adds the unlabeled weight: VW's t)
    try:
        parts = encode(ml, cfg, subs.table, gstate, stats, None, int(play.rng[0]),
                       weights_only=outputs.model_format == "vw_predict_only",
                       progress=counts)  # fmt: skip
    except ValueError as e:
        raise ModelError(f"cannot write {outputs.final_model} as a VW model: {e}") from None
    write_bytes(str(outputs.final_model), parts, "model")


def _finish(say, counts: _Counts, play: _Play, malformed: int, quiet: bool) -> dict:  # noqa: ANN001
    """VW's summary and warm_cb's three closing lines; the run's summary."""
    loss = counts.loss / counts.wlab if counts.wlab > 0 else None
    say("")
    say("finished run")
    say(f"number of examples = {counts.n}")
    say(f"weighted example sum = {counts.wlab + counts.wunl:.6f}")
    say("weighted label sum = 0.000000")
    say("average loss = n.a." if loss is None else f"average loss = {loss:.6f}")
    say(f"total feature number = {counts.features}")
    if not quiet:
        n = play.inter_iter
        var = (f"{float(F32(play.cumu_var / F32(n))):.6f}" if n else
               ("-nan" if play.cumu_var == 0 else "inf"))  # (VW's float 0/0 prints -nan)
        best = play.wk.find_min(play.costs)
        say(f"average variance estimate = {var}")
        say(f"theoretical average variance = {float(F32(F32(play.k) / play.eps)):.6f}")
        say(f"last lambda chosen = {float(play.lam[best]):.6f} among lambdas ranging from "
            f"{float(play.lam[0]):.6f} to {float(play.lam[-1]):.6f}")  # fmt: skip
    return {"examples": counts.n, "per_pass": counts.n, "passes": 1, "best_holdout": None,
            "loss": loss, "malformed": malformed}  # fmt: skip
