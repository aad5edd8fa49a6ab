"""Elastic net vs pure ℓ1 at equal sparsity, on correlated informative features.

Elastic net exists for this case (Zou & Hastie 2005): when informative features
come in correlated groups, ℓ1 keeps one or a few of each group and drops the
rest, while the ℓ2² term spreads the weight over the group and averages its
noise.  Both learners here are ``sl``'s FoBoS kernels (``fobos_l1`` and
``fobos_enet``), trained for several passes over the same training set.

Data (generated): G groups of M noisy copies of a latent factor,
``x_gk = z_g + σ ε_gk`` (z, ε ~ N(0, 1)), present in every example, plus a few
of many pure-noise features per example; labels ±1 from
``P(y = 1) = σ(Σ_g β_g z_g)`` with β_g = ±``beta``.

Protocol: sweep λ1 for ℓ1; for each ℓ1 model, and each λ2 of a grid (λ2 = 0
excluded), find by bisection the λ1 that gives elastic net the same number of
non-zero weights; pick λ2 on a validation set; report logloss on a test set.

Usage::

    python scripts/elastic_vs_l1.py [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from streamlearn.learners import fobos
from streamlearn.learners.base import S_NROWS, make_params, new_rows, new_stats, predict_batch
from streamlearn.learners.losses import LOGISTIC

BITS = 13  # 8192 slots: G*M informative + NOISE noise features


def make_data(rng, n, groups, copies, sigma, noise_features, noise_per_ex, beta_signs, beta):
    z = rng.normal(size=(n, groups))
    informative = np.repeat(z, copies, axis=1) + sigma * rng.normal(size=(n, groups * copies))
    k = groups * copies
    noise_idx = k + np.sort(
        np.argsort(rng.random((n, noise_features)), axis=1)[:, :noise_per_ex], axis=1
    )
    noise_val = rng.normal(size=(n, noise_per_ex))
    indices = np.hstack([np.tile(np.arange(k), (n, 1)), noise_idx]).astype(np.uint32)
    values = np.hstack([informative, noise_val])
    width = indices.shape[1]
    indptr = np.arange(n + 1, dtype=np.int64) * width
    margin = z @ (beta * beta_signs)
    labels = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-margin)), 1.0, -1.0)
    return indptr, indices.ravel(), values.ravel(), labels


def train(spec, params, data, passes):
    indptr, indices, values, labels = data
    n = labels.shape[0]
    table, gstate = spec.new_table(BITS), spec.init_gstate(params)
    stats, rows, preds = new_stats(), new_rows(), np.empty(n)
    ones, zeros, status = np.ones(n), np.zeros(n), np.zeros(n, dtype=np.int32)
    for _ in range(passes):
        spec.train_batch(table, gstate, params, LOGISTIC, indptr, indices, values, labels,
                         ones, zeros, status, stats, rows, preds)
        rows[:] = 0.0
        stats[S_NROWS] = 0.0
    w = np.empty(1 << BITS)
    spec.current_weights(table, gstate, params, np.arange(1 << BITS, dtype=np.uint32), w)
    return w


def losses(w, data) -> np.ndarray:
    """Per-example logloss of weights ``w``."""
    indptr, indices, values, labels = data
    n = labels.shape[0]
    p = np.empty(n)
    predict_batch(w, indptr, indices, values, np.zeros(n), np.zeros(n, dtype=np.int32), p)
    return np.logaddexp(0.0, -labels * p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--sigma", type=float, default=0.5, help="noise of each copy (corr 1/(1+s²))")
    ap.add_argument("--beta", type=float, default=1.0)
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--learning-rate", type=float, default=0.1)
    ap.add_argument("--power-t", type=float, default=0.5)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    noise_features, noise_per_ex = 4000, 30
    signs = rng.choice([-1.0, 1.0], size=args.groups)
    shape = (args.groups, args.copies, args.sigma, noise_features, noise_per_ex, signs, args.beta)
    tr = make_data(rng, args.train, *shape)
    va = make_data(rng, 5000, *shape)
    te = make_data(rng, 20000, *shape)
    t0 = time.perf_counter()

    def fit(l1, l2):
        spec = fobos.resolve(l1, l2)
        params = make_params(learning_rate=args.learning_rate, power_t=args.power_t,
                             l1=l1, l2=l2)
        w = train(spec, params, tr, args.passes)
        return int(np.count_nonzero(w)), float(np.mean(losses(w, va))), losses(w, te), w

    def matched(nnz_target, l2):
        """Bisect log λ1 so that elastic net keeps ``nnz_target`` weights (nearest found)."""
        lo, hi = -8.0, 1.0  # log10 λ1: nnz(lo) large, nnz(hi) = 0
        best = None
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            res = fit(10.0**mid, l2)
            if best is None or abs(res[0] - nnz_target) < abs(best[1][0] - nnz_target):
                best = (10.0**mid, res)
            if res[0] == nnz_target:
                break
            if res[0] > nnz_target:
                lo = mid
            else:
                hi = mid
        return best

    k = args.groups * args.copies
    print(f"{args.groups} groups x {args.copies} copies (sigma {args.sigma}) + {noise_features} "
          f"noise features ({noise_per_ex} per example); train {args.train} x {args.passes} "
          f"passes, validation 5000, test 20000; fobos, logistic, learning_rate "
          f"{args.learning_rate}, power_t {args.power_t}")
    print(f"\n{'nnz':>5} {'l1: lambda1':>12} {'test':>7} | {'enet: l2':>9} {'lambda1':>9} "
          f"{'nnz':>5} {'test':>7} | {'diff':>7} {'(s.e.)':>8}  informative kept (l1 / enet)")
    l2_grid = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
    rows = []
    for l1 in np.geomspace(1.0, 0.002, 14):
        nnz, _, test, w = fit(l1, 0.0)
        if nnz == 0:
            continue
        cands = []
        for l2 in l2_grid:
            lam, (e_nnz, e_val, e_test, e_w) = matched(nnz, l2)
            cands.append((e_val, l2, lam, e_nnz, e_test, e_w))
        e_val, l2, lam, e_nnz, e_test, e_w = min(cands)
        inf_l1, inf_en = np.count_nonzero(w[:k]), np.count_nonzero(e_w[:k])
        diff = e_test - test  # paired over the test examples
        se = float(np.std(diff) / np.sqrt(diff.size))
        rows.append((float(np.mean(diff)), se))
        print(f"{nnz:>5} {l1:>12.4g} {np.mean(test):>7.4f} | {l2:>9g} {lam:>9.3g} {e_nnz:>5} "
              f"{np.mean(e_test):>7.4f} | {np.mean(diff):>+7.4f} {se:>8.4f}  {inf_l1} / {inf_en}")
    no_worse = sum(1 for d, _ in rows if d <= 0.0)
    within = sum(1 for d, se in rows if d <= 2.0 * se)
    print(f"\nelastic net no worse than l1 at {no_worse} of {len(rows)} sparsity levels, "
          f"not significantly worse (diff <= 2 s.e.) at {within}; mean difference "
          f"{np.mean([d for d, _ in rows]):+.4f}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
