"""SGD with elastic net (ℓ1 + ℓ2²), lazily in O(nnz) per example (Lipton & Elkan 2015, §5).

Objective ``ℓ(w) + λ1 ‖w‖₁ + (λ2 / 2) ‖w‖₂²`` (``--l1``, ``--l2``).  Dense form,
for a learned example t with importance a_t and rate η_t::

    w ← w − η_t a_t ∂ℓ(p_t, y_t) x_t                               (gradient step)
    w_j ← sgn(w_j) max(0, (1 − η_t λ2) |w_j| − η_t λ1)   for every j   (eq. 9)

Within a step the ℓ2² shrink and the ℓ1 pull are both taken at the same point
(the subgradient step of the regulariser at w), then clipped at zero: this is
eq. 9, with eq. 5 (ℓ2² alone, λ1 = 0) and eq. 4 (ℓ1 alone, λ2 = 0) as special
cases.  The regulariser step uses η_t, not a_t η_t (as truncated gradient does).

Lazy form (eq. 10, with the sum that composes eq. 9 exactly): a slot last
touched after step s owes, at step t::

    |w| ← max(0, |w| P(t)/P(s) − λ1 P(t) (B(t) − B(s)))
    P(t) = Π_{τ≤t} (1 − η_τ λ2),   B(t) = Σ_{τ≤t} η_τ / P(τ)

The paper prints ``B(t) = Σ η_τ / P(τ−1)``; with it a single step gives
``(1 − η λ2)(|w| − η λ1)``, which is not eq. 9 (the two differ by η² λ1 λ2 per
step).  Per slot: the weight and the snapshots P(s), B(s) (24 bytes).  See
:mod:`streamlearn.learners.ledger` for the machinery and the rebase.

Needs η_t λ2 < 1 (so 1 − η_t λ2 > 0); a step with η_t λ2 ≥ 1 sends every weight
to 0, as eq. 9 says, at O(d) cost.  With λ2 = 0 the kernel computes exactly what
the truncated-gradient kernel computes with K = 1, θ = ∞.

>>> import numpy as np
>>> from streamlearn.learners.base import make_params, new_rows, new_stats
>>> params = make_params(learning_rate=0.5, power_t=0.0, l1=0.1, l2=0.2)
>>> table, gstate = SPEC.new_table(2), SPEC.init_gstate(params)
>>> indptr, indices = np.array([0, 1, 1]), np.array([0], dtype=np.uint32)
>>> one, ok = np.ones(2), np.zeros(2, dtype=np.int32)
>>> SPEC.train_batch(table, gstate, params, 0, indptr, indices, one[:1], one, one,
...                  np.zeros(2), ok, new_stats(), new_rows(), np.empty(2))
>>> w = np.empty(1)
>>> SPEC.current_weights(table, gstate, params, indices, w)
>>> float(w[0]), 0.9 * (0.9 * 1.0 - 0.05) - 0.05   # 2 steps of eq. 9 from w = 1
(0.715, 0.715)
"""

from __future__ import annotations

from streamlearn.learners import ledger
from streamlearn.learners.base import LearnerSpec
from streamlearn.system.jit import jit, jit_noalloc


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    ledger.train_enet(
        ledger.FORM_SGD, table, gstate, params, loss_id, indptr, indices, values, labels,
        weights, bases, status, stats, rows, preds,
    )


@jit
def current_weights(table, gstate, params, slots, out):
    ledger.current_enet(table, gstate, params, slots, out)


@jit
def rebase(table, gstate, params):
    ledger.rebase_enet(table, gstate, params)


SPEC = LearnerSpec(
    name="sgd_elastic",
    ncols=3,
    fresh=(0.0, 0.0, 0.0),
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=ledger.init_gstate,
    stamp=(1.0, 0.0),  # P = 1 (and B = 0) right after init_gstate or rebase
)
SPECS = (SPEC,)
