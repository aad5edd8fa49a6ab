"""The sequence task without playing it, when VW's draws allow (see
:mod:`streamlearn.reductions.search_engine`): the learning runs' losses known ahead
(:class:`OracleRollouts`), and a sentence's test pass and training examples in one compiled
call each (``learners/search.py``: ``sequence_test``, ``sequence_learn``).  Each function
takes the run's search (``sch``, a ``search_engine.Search``) and says whether it did the
work (False: play it)."""

from __future__ import annotations

import numpy as np

from streamlearn.reductions.search_draws import (
    F32,
    MIX_PER_STATE,
    NO_ROLLOUT,
    ORACLE,
    draws,
)


def compiled(sch, tokens: list) -> tuple | None:
    """The sequence whole for the compiled sequence task (``learners.search``:
    ``sequence_test``, ``sequence_learn``): its rows (each token's features, the
    neighbours' copied in) and the constants of its conditioning; None when the run
    asks what only the task played step by step gives (``-r``'s scores, ``--search_xv``,
    a later policy, 256 tokens or more: VW's cache keys then collide)."""
    if (not getattr(sch.task, "hamming_only", False) or sch.o.xv or sch.shows.raw
            or sch.current_policy != 0 or len(tokens) > 255):  # fmt: skip
        return None
    if sch._rows is not None and sch._rows[0] is tokens:
        return sch._rows[1]
    hist = sch.history_length if sch.auto_condition else 0
    o = sch.o
    consts = (hist, o.bias_n, o.quad_n, F32(o.feature_value), np.uint64((1 << sch.bits) - 1))
    if sch.csr is not None and not sch.o.neighbors:  # (the part's rows, as they are)
        got = (*sch.csr, *consts)
        sch._rows = (tokens, got)
        return got
    rows = [t.features() for t in tokens]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([r[0].shape[0] for r in rows], out=indptr[1:])
    idx = np.concatenate([r[0] for r in rows]).astype(np.uint64)
    val = np.concatenate([r[1] for r in rows]).astype(np.float64)
    got = (indptr, idx, val, *consts)
    sch._rows = (tokens, got)
    return got

def test(sch, tokens: list) -> bool:
    """The test pass of the sequence task in one compiled call (as playing it: the
    decisions, their Hamming loss and features, the text); False: play it."""
    got = compiled(sch, tokens)
    if got is None:
        return False
    from streamlearn.learners import search as kernels

    indptr, idx, val, hist, bias_n, quad_n, fv, bmask = got
    n = len(tokens)
    preds = np.zeros(n, dtype=np.int64)
    nfeat = np.zeros(n, dtype=np.int64)
    w = sch.w
    kernels.sequence_test(w.table, w.gstate, w.params, indptr, idx, val, sch.A, sch.step,
                          0, hist, bias_n, quad_n, fv, bmask, preds, nfeat)  # fmt: skip
    acts = preds.tolist()
    sch.test_actions = acts
    sch.t = n
    sch.loss_declared = n
    sch.total_predictions += n
    sch.num_features += int(nfeat.sum())
    sch.test_loss = float(sum(a != t.label for a, t in zip(acts, tokens, strict=True)))
    sch.ptag_to_action = [0, *acts]
    if sch.producing:
        sch.out = [f"{a} " for a in acts]
    return True

def train(sch, tokens: list, ran_test: bool, holdout: bool) -> bool:
    """Roll-in and learning of the sequence task without playing them, when the draws
    say that every roll-in (hence every roll-out) decision is the oracle's: the
    trajectory is the labels, each step's costs its Hamming losses, learned in one
    compiled call; the generator left as VW's last run leaves it.  False: play them."""
    o = sch.o
    if (o.rollin not in (MIX_PER_STATE, ORACLE) or o.rollout not in (MIX_PER_STATE, ORACLE,
            NO_ROLLOUT) or o.perturb_oracle > F32(0.0) or o.rollout_num_steps > 0
            or not (sch.beta < F32(1.0))):  # fmt: skip
        return False
    got = compiled(sch, tokens)
    if got is None:
        return False
    n = len(tokens)
    seed = sch.rng_seed()
    mixed = o.rollin == MIX_PER_STATE
    per = 2 if mixed else 1  # (the roll-in's draws per decision: policy, then label)
    got_draws, states = draws(seed, per * n)
    if mixed and n and bool((got_draws[0::2] < sch.beta).any()):
        return False  # (a decision of the learned policy: play the example)
    labels = [t.label for t in tokens]
    sch.train_trajectory = [(a, 0.0) for a in labels]
    sch.t = n
    sch.loss_declared = n
    sch.rng.s = int(states[-1]) if n else seed
    if not ran_test:
        sch._update(holdout, True, 0.0, 0)
    sch.T = n
    if o.rollout == NO_ROLLOUT:
        steps = list(range(n))  # (each decision learned as it is made: 0 for the label)
    else:
        steps = sch._timesteps()
    k = sch.A
    y = np.asarray(labels, dtype=np.int64)
    costs = (np.arange(1, k + 1)[None, :] != y[:, None]).astype(np.float32)
    _learn_sentence(sch, got, steps, y, costs)
    if o.rollout != NO_ROLLOUT and steps:
        # (each learning run reseeds; the last one's roll-out draws per decision: a
        # policy under mix_per_state, and the label)
        per_out = 2 if o.rollout == MIX_PER_STATE else 1
        used = per_out * (n - steps[-1] - 1)
        sch.rng.s = int(states[used - 1]) if used else seed
    return True

def learn_steps(sch, tokens: list, fast: OracleRollouts, steps: list[int]) -> bool:
    """Every learning step of the sequence task in one compiled call, when every step's
    roll-outs are the oracle's; False: play them."""
    if not all(fast.covers(lt) for lt in steps):
        return False
    got = compiled(sch, tokens)
    if got is None:
        return False
    n, k = len(tokens), sch.A
    costs = np.empty((n, k), dtype=np.float32)
    for lt in steps:
        costs[lt] = [x for _, x in fast.losses(sch, tokens, lt)]
    traj = np.asarray([a for a, _ in sch.train_trajectory], dtype=np.int64)
    _learn_sentence(sch, got, steps, traj, costs)
    return True


def _learn_sentence(sch, got: tuple, steps: list[int], traj: np.ndarray,
                    costs: np.ndarray) -> None:  # noqa: ANN001  # fmt: skip
    """The sentence's training examples at ``steps`` (token t conditioned on the roll-in's
    decisions ``traj``, toward ``costs[t]``), in one compiled call."""
    from streamlearn.learners import base
    from streamlearn.learners import search as kernels

    indptr, idx, val, hist, bias_n, quad_n, fv, bmask = got
    w = sch.w
    # gd's clock: VW's sd->t (this sequence counted) and the example's weight 1
    w.gstate[base.G_T] = sch.sd_t + 1.0 - sch.weighted_holdout - sch.weighted_unlabeled
    kernels.sequence_learn(w.table, w.gstate, w.params, w.loss_id, indptr, idx, val,
                           np.asarray(steps, dtype=np.int64), traj, costs, sch.A, sch.step, 0,
                           hist, bias_n, quad_n, fv, bmask)  # fmt: skip
    sch.total_examples += len(steps)

def oracle_rollouts(sch, tokens: list) -> OracleRollouts | None:
    """The learning runs' losses without running them, when each roll-out is the
    oracle's (:class:`OracleRollouts`); None when that cannot be known ahead."""
    o = sch.o
    if not getattr(sch.task, "hamming_only", False) or o.rollout_num_steps > 0:
        return None
    if o.rollout == ORACLE:
        return OracleRollouts(sch, tokens, None)
    if o.rollout == MIX_PER_STATE and sch.current_policy == 0 and sch.beta < F32(1.0):
        return OracleRollouts(sch, tokens, sch.beta)
    return None


class OracleRollouts:
    """The learning runs of a task whose decisions each lose the Hamming loss against one
    oracle label and decide nothing else (``sequence``), when every roll-out decision is
    the oracle's: each run then loses what the roll-in's prefix lost and the action tried,
    and the runs need not be played (VW plays them: the same numbers, draw for draw).

    A run reseeds the generator as each does, so its draws are one stream: after the step
    learned, each decision draws its policy (``mix_per_state``: the oracle when the draw is
    at least β) and then the oracle's label (one draw); with ``ref`` roll-outs only the
    label's.  :meth:`covers` says whether every policy draw of a step's roll-out picks the
    oracle; otherwise that step's runs are played."""

    def __init__(self, sch, tokens: list, beta) -> None:  # noqa: ANN001
        n = len(tokens)
        self.n = n
        self.oracle = [t.label for t in tokens]
        # the roll-in's trajectory loses its Hamming loss at each step before the one learned
        self.prefix = [0.0] * (n + 1)
        for t in range(n):
            a = sch.train_trajectory[t][0]
            self.prefix[t + 1] = float(F32(F32(self.prefix[t]) + F32(a != self.oracle[t])))
        self.ok_from = 0  # the steps lt >= ok_from have all-oracle roll-outs
        self.per = 1 if beta is None else 2  # draws per roll-out decision
        seed = sch.rng_seed()
        got, states = draws(seed, 2 * n)
        self.states = [seed, *states.tolist()]
        if beta is not None:
            # step lt's roll-out draws its policies at 0, 2, ..., 2 (n - lt - 2)
            worst = n
            for j in range(0, 2 * n, 2):
                if got[j] < beta:
                    worst = j // 2
                    break
            # steps whose roll-out (n - lt - 1 decisions) ends before the first learned pick
            self.ok_from = max(0, n - 1 - worst)

    def covers(self, lt: int) -> bool:
        return lt >= self.ok_from

    def losses(self, sch, tokens: list, lt: int) -> list[tuple[int, float]]:
        """Each action's loss at step ``lt``, and the search's state as its last run leaves
        it (the token, its conditioning, the learner)."""
        base = F32(self.prefix[lt])
        y = self.oracle[lt]
        out = [(a, float(F32(base + F32(a != y)))) for a in range(1, sch.A + 1)]
        sch.learn_a_idx = sch.A
        sch.done_with_all = True
        sch.rng.s = self.states[self.per * (self.n - lt - 1)]  # (as the last run leaves it)
        sch.learn_learner_id = 0
        sch.learn_tok = tokens[lt]
        if sch.auto_condition:
            tags, names = sch.task.conditions(sch, lt)
            p2a = [0] + [a for a, _ in sch.train_trajectory[:lt]]
            acts = [p2a[t] if 1 <= t < len(p2a) else 0 for t in tags]
            sch.learn_cond = (tags, names, acts)
        return out
