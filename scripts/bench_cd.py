#!/usr/bin/env python
"""``cd`` against scikit-learn's ``Lasso`` on the same data and tolerance.

The input is parsed once by sl (``-b 18``, hashed) into the column-major copy
``cd`` works on; the same matrix goes to ``Lasso(alpha=l1/2,
fit_intercept=False)`` as scipy CSC (sklearn's sparse coordinate descent, with
its gap-safe screening), so both minimise the same F = mean((Xw − y)²) + l1 |w|₁.
Timed, for each tolerance: sklearn's ``fit``; sl's epochs (``fit.fit``, what
``sl train --algo cd`` runs after reading); and sl's first ``cd``, every column
every epoch (``active_set=False``, stopping on the decrease per epoch).  Both
sklearn and sl now stop on the duality gap: sklearn's ``tol`` is relative to
‖y‖²/n, i.e. gap ≤ 2·tol·F(0) in F's units, sl's ``--tol`` relative to F, so at
equal settings sklearn's is looser by 2·F(0)/F (2.3 here).  Each row is the
median of ``--repeat`` runs, interleaved; the objective and its gap to the best objective any
run reached say where each one stops.

Usage::

    python scripts/bench_cd.py                       # bench-data/train-300000x32.vw, l1 1e-3
    python scripts/bench_cd.py --file data/sample.vw --l1 1e-4 --repeat 5

The benchmark file comes from ``python scripts/bench.py`` (first run), or::

    python scripts/make_data.py --examples 330000 --features-per-example 32 --task logistic \
        --names numeric --format vw --seed 1 -o all.vw && head -n 300000 all.vw \
        > bench-data/train-300000x32.vw
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlearn.config import TrainConfig  # noqa: E402
from streamlearn.learners import cd  # noqa: E402
from streamlearn.learners.base import GSTATE_SIZE, new_stats  # noqa: E402
from streamlearn.learners.losses import SQUARED  # noqa: E402
from streamlearn.run import fit  # noqa: E402
from streamlearn.run.passes import parsed  # noqa: E402


def load(path: str, bits: int) -> fit.Columns:
    cfg = TrainConfig(bits=bits, algo="cd")
    batches = parsed([path], cfg.format, bits, True, 8 << 20, 2, cfg.namespaces())
    return fit.read(batches, 1 << 40, lambda b: None)


def run_sl(data: fit.Columns, bits: int, l1: float, tol: float, active_set: bool = True):
    """Seconds, objective, epochs, and the median seconds of a full and of an active sweep."""
    table = np.zeros((1 << bits, 1))
    t = time.perf_counter()
    res = fit.fit(data, table, np.zeros(GSTATE_SIZE), new_stats(), method=cd.CYCLIC,
                  loss_id=SQUARED, l1=l1, l2=0.0, passes=100_000, tol=tol, seed=0,
                  say=lambda s: None, active_set=active_set)  # fmt: skip
    el = time.perf_counter() - t
    ends = np.array([e["seconds"] for e in res.epochs])
    took = np.diff(ends, prepend=0.0)
    full = np.array([e["sweep"] == "full" for e in res.epochs])
    per = (float(np.median(took[full])), float(np.median(took[~full])) if (~full).any() else 0.0)
    return el, res.objective, f"{full.sum()} + {(~full).sum()}", per


def run_sklearn(data, X, l1: float, tol: float):
    from sklearn.linear_model import Lasso

    y = data.labels - data.bases
    t = time.perf_counter()
    m = Lasso(alpha=l1 / 2, fit_intercept=False, tol=tol, max_iter=100_000).fit(X, y)
    el = time.perf_counter() - t
    p = X @ m.coef_
    F = float(np.mean((p - y) ** 2) + l1 * np.abs(m.coef_).sum())
    return el, F, str(m.n_iter_), (el / m.n_iter_, 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default=str(ROOT / "bench-data" / "train-300000x32.vw"))
    ap.add_argument("--bits", type=int, default=18)
    ap.add_argument("--l1", type=float, default=1e-3)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row (median shown)")
    args = ap.parse_args()
    import scipy.sparse as sp

    t = time.perf_counter()
    data = load(args.file, args.bits)
    print(f"read {args.file}: {data.labels.size:,} rows, {data.vals.size:,} non-zeros, "
          f"{data.slots.size:,} columns, {time.perf_counter() - t:.1f} s")  # fmt: skip
    X = sp.csc_matrix((data.vals, data.rows, data.colptr), shape=(data.labels.size,
                      data.slots.size))  # fmt: skip
    run_sl(data, args.bits, args.l1, 1e-2)  # compile / load the kernels first
    run_sl(data, args.bits, args.l1, 1e-2, active_set=False)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    setups = []
    for sk_tol, sl_tol, old_tol in [(1e-4, 1e-4, 1e-6), (1e-6, 1e-6, 1e-8), (1e-8, 1e-8, 1e-10)]:
        setups += [
            ("sklearn Lasso", f"tol={sk_tol:g}", lambda t=sk_tol: run_sklearn(data, X, args.l1, t)),
            ("sl cd", f"--tol {sl_tol:g}", lambda t=sl_tol: run_sl(data, args.bits, args.l1, t)),
            ("sl cd, no active set", f"--tol {old_tol:g} (decrease)",
             lambda t=old_tol: run_sl(data, args.bits, args.l1, t, active_set=False)),
        ]  # fmt: skip
    runs: list[list] = [[] for _ in setups]
    for _ in range(args.repeat):  # interleaved, so that other jobs on the machine hit all alike
        for k, (_, _, run) in enumerate(setups):
            runs[k].append(run())
    rows = []
    for (name, stop, _), rs in zip(setups, runs, strict=True):
        sec = float(np.median([r[0] for r in rs]))
        rows.append((name, stop, sec, rs[0][1], rs[0][2], rs[0][3]))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    best = min(r[3] for r in rows)
    print(f"\nl1 = {args.l1:g} (sklearn alpha = {args.l1 / 2:g}); best objective {best:.12g}; "
          f"median of {args.repeat}\n")  # fmt: skip
    print("| solver | stopping | seconds | sweeps (full + active) | s per full sweep | "
          "s per active sweep | objective | gap to best (relative) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, stop, sec, F, n, (full, act) in rows:
        act_s = f"{act:.5f}" if act else ""
        print(f"| {name} | {stop} | {sec:.3f} | {n} | {full:.4f} | {act_s} | {F:.12g} | "
              f"{(F - best) / best:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main()
