#!/usr/bin/env python
"""``cd`` against scikit-learn's ``Lasso`` on the same data and tolerance.

The input is parsed once by sl (``-b 18``, hashed) into the column-major copy
``cd`` works on; the same matrix goes to ``Lasso(alpha=l1/2,
fit_intercept=False)`` as scipy CSC (sklearn's sparse coordinate descent), so
both minimise the same F = mean((Xw − y)²) + l1 |w|₁.  For each tolerance the
script times sl's epochs (``fit.fit``, what ``sl train --algo cd`` runs after
reading) and sklearn's ``fit``, and prints both objectives and their gap to the
best objective either reached.  sklearn stops on its duality gap (``tol``
relative to ‖y‖²/n), sl on its relative decrease per epoch (``--tol``); the
rows pair the settings that land at about the same objective.

Usage::

    python scripts/bench_cd.py                       # bench-data/train-300000x32.vw, l1 1e-3
    python scripts/bench_cd.py --file data/sample.vw --l1 1e-4
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlearn import fit  # noqa: E402
from streamlearn.config import TrainConfig  # noqa: E402
from streamlearn.learners import cd  # noqa: E402
from streamlearn.learners.base import GSTATE_SIZE, new_stats  # noqa: E402
from streamlearn.losses import SQUARED  # noqa: E402
from streamlearn.passes import parsed  # noqa: E402


def load(path: str, bits: int) -> fit.Columns:
    cfg = TrainConfig(bits=bits, algo="cd")
    batches = parsed([path], cfg.format, bits, True, 8 << 20, 2, cfg.namespaces())
    return fit.read(batches, 1 << 40, lambda b: None)


def run_sl(data: fit.Columns, bits: int, l1: float, tol: float) -> tuple[float, float, int]:
    table = np.zeros((1 << bits, 1))
    t = time.perf_counter()
    res = fit.fit(data, table, np.zeros(GSTATE_SIZE), new_stats(), method=cd.CYCLIC,
                  loss_id=SQUARED, l1=l1, l2=0.0, passes=10_000, tol=tol, seed=0,
                  say=lambda s: None)  # fmt: skip
    return time.perf_counter() - t, res.objective, len(res.epochs)


def run_sklearn(data, X, l1: float, tol: float) -> tuple[float, float, int]:
    from sklearn.linear_model import Lasso

    y = data.labels - data.bases
    t = time.perf_counter()
    m = Lasso(alpha=l1 / 2, fit_intercept=False, tol=tol, max_iter=100_000).fit(X, y)
    el = time.perf_counter() - t
    p = X @ m.coef_
    F = float(np.mean((p - y) ** 2) + l1 * np.abs(m.coef_).sum())
    return el, F, int(m.n_iter_)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default=str(ROOT / "bench-data" / "train-300000x32.vw"))
    ap.add_argument("--bits", type=int, default=18)
    ap.add_argument("--l1", type=float, default=1e-3)
    args = ap.parse_args()
    import scipy.sparse as sp

    t = time.perf_counter()
    data = load(args.file, args.bits)
    print(f"read {args.file}: {data.labels.size:,} rows, {data.vals.size:,} non-zeros, "
          f"{data.slots.size:,} columns, {time.perf_counter() - t:.1f} s")  # fmt: skip
    X = sp.csc_matrix((data.vals, data.rows, data.colptr), shape=(data.labels.size,
                      data.slots.size))  # fmt: skip
    run_sl(data, args.bits, args.l1, 1e-2)  # compile / load the kernels first
    rows = []
    for sk_tol, sl_tol in [(1e-4, 1e-6), (1e-6, 1e-8), (1e-8, 1e-10)]:
        rows.append(("sklearn Lasso", f"tol={sk_tol:g}", *run_sklearn(data, X, args.l1, sk_tol)))
        rows.append(("sl cd", f"--tol {sl_tol:g}", *run_sl(data, args.bits, args.l1, sl_tol)))
    best = min(r[3] for r in rows)
    print(f"\nl1 = {args.l1:g} (sklearn alpha = {args.l1 / 2:g}); best objective {best:.12g}\n")
    print("| solver | stopping | seconds | epochs | objective | gap to best (relative) |")
    print("|---|---|---|---|---|---|")
    for name, stop, sec, F, n in rows:
        print(f"| {name} | {stop} | {sec:.2f} | {n} | {F:.12g} | {(F - best) / best:.1e} |")


if __name__ == "__main__":
    main()
