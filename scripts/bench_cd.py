#!/usr/bin/env python
"""``cd`` against scikit-learn's ``Lasso`` (squared) or liblinear (logistic), same data.

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

``--loss logistic``: the same matrix goes to ``LogisticRegression(penalty='l1',
solver='liblinear', C=1/(l1 m), fit_intercept=False)`` (liblinear's objective is
F/l1), at tol 1e-4, 1e-6, 1e-8; sl's ``cd`` (newGLMNET) at ``--tol`` 1e-7 (the
default), 1e-9, 1e-11.  sklearn's ``tol`` reaches liblinear as
``eps = tol·min(pos, neg)/m``, against sl's ``--tol`` directly (both relative to the
min-norm subgradient's ℓ1 norm at w = 0).

``--whole``: whole processes instead, what a user waits for: ``sl train --algo cd``
with default options (start-up, parsing and fitting), against a Python process
that loads the same data as svmlight (``load_svmlight_file``, a copy written from
sl's parse unless FILE is svmlight) and fits (sklearn's process time, and its
load + fit alone, without Python's and sklearn's start-up).  Minimum of ``--repeat``.

Usage::

    python scripts/bench_cd.py                       # bench-data/train-300000x32.vw, l1 1e-3
    python scripts/bench_cd.py --file data/sample.vw --l1 1e-4 --repeat 5
    python scripts/bench_cd.py --loss logistic --l1 1e-4 --whole      # issue 27 part 2
    python scripts/bench_cd.py --file ../shared/data/a9a.svm --noconstant --loss logistic \
        --l1 1e-4 --whole

The benchmark file comes from ``python scripts/bench.py`` (first run), or::

    python scripts/make_data.py --examples 330000 --features-per-example 32 --task logistic \
        --names numeric --format vw --seed 1 -o all.vw && head -n 300000 all.vw \
        > bench-data/train-300000x32.vw
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlearn.config import TrainConfig  # noqa: E402
from streamlearn.learners import cd  # noqa: E402
from streamlearn.learners.base import GSTATE_SIZE, new_stats  # noqa: E402
from streamlearn.learners.losses import LOGISTIC, SQUARED  # noqa: E402
from streamlearn.run import fit  # noqa: E402
from streamlearn.run.passes import parsed  # noqa: E402


def load(path: str, bits: int, constant: bool = True) -> fit.Columns:
    cfg = TrainConfig(bits=bits, algo="cd")
    batches = parsed([path], cfg.format, bits, constant, 8 << 20, 2, cfg.namespaces())
    return fit.read(batches, 1 << 40, lambda b: None)


def run_sl(data: fit.Columns, bits: int, l1: float, tol: float, active_set: bool = True,
           loss: int = SQUARED):  # fmt: skip
    """Seconds, objective, epochs, and the median seconds of a full and of an active sweep."""
    table = np.zeros((1 << bits, 1))
    if loss == LOGISTIC:  # as sl train's classification check: 0 is -1
        data.labels[data.labels == 0.0] = -1.0
    t = time.perf_counter()
    res = fit.fit(data, table, np.zeros(GSTATE_SIZE), new_stats(), method=cd.CYCLIC,
                  loss_id=loss, l1=l1, l2=0.0, passes=100_000, tol=tol, seed=0,
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


def run_liblinear(data, X, l1: float, tol: float):
    from sklearn.linear_model import LogisticRegression

    y = np.where(data.labels > 0, 1.0, -1.0)
    Xr = X.tocsr()
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the penalty= spelling is deprecated in sklearn 1.8
        m = LogisticRegression(penalty="l1", C=1 / (l1 * y.size), fit_intercept=False,
                               solver="liblinear", tol=tol, max_iter=100_000).fit(Xr, y)
    el = time.perf_counter() - t
    w = m.coef_.ravel()
    F = float(np.mean(np.logaddexp(0.0, -y * (X @ w))) + l1 * np.abs(w).sum())
    return el, F, f"{int(m.n_iter_[0])} Newton", (0.0, 0.0)


SKLEARN_PROCESS = r"""
import json, sys, time, warnings
t0 = time.perf_counter()
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import Lasso, LogisticRegression
path, loss, l1, tol = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
t1 = time.perf_counter()
X, y = load_svmlight_file(path)
X.indices = X.indices.astype(np.int32)  # liblinear takes 32-bit indices only
X.indptr = X.indptr.astype(np.int32)
t2 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
        m = LogisticRegression(penalty="l1", C=1 / (l1 * y.size), fit_intercept=False,
                               solver="liblinear", tol=tol, max_iter=100_000).fit(X, y)
    else:
        m = Lasso(alpha=l1 / 2, fit_intercept=False, tol=tol, max_iter=100_000).fit(X, y)
t3 = time.perf_counter()
w = m.coef_.ravel()
p = X @ w
F = (np.mean(np.logaddexp(0.0, -y * p)) if loss == "logistic" else np.mean((p - y) ** 2))
print(json.dumps({"objective": float(F + l1 * np.abs(w).sum()), "load": t2 - t1,
                  "fit": t3 - t2, "iterations": int(np.max(m.n_iter_))}))
"""


def svmlight_copy(data: fit.Columns, path: str) -> None:
    """sl's parse of the input as svmlight (hashed slots as the indices): the same matrix."""
    X = sp.csc_matrix((data.vals, data.rows, data.colptr),
                      shape=(data.labels.size, data.slots.size)).tocsr()  # fmt: skip
    with open(path, "w") as f:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{data.slots[j] + 1}:{v:.17g}"
                             for j, v in zip(X.indices[lo:hi], X.data[lo:hi], strict=True))
            f.write(f"{data.labels[i]:.17g} {feats}\n")


def whole(args, data: fit.Columns) -> None:
    """sl train (default options) and sklearn (load + fit), each as a whole process."""
    tmp = tempfile.mkdtemp(prefix="bench_cd.")
    svm = args.file
    if not args.file.endswith((".svm", ".svmlight", ".libsvm")):
        svm = os.path.join(tmp, "data.svm")
        svmlight_copy(data, svm)
    report = os.path.join(tmp, "report.json")
    sl = [sys.executable, "-m", "streamlearn", "train", args.file, "--algo", "cd", "--loss",
          args.loss, "--l1", f"{args.l1:g}", "-b", str(args.bits), "--quiet", "--report", report,
          *(["--noconstant"] if args.noconstant else [])]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    tols = (1e-4, 1e-8)
    runs: dict[str, list] = {}
    for _ in range(args.repeat):  # interleaved
        t = time.perf_counter()
        subprocess.run(sl, check=True, env=env)
        el = time.perf_counter() - t
        rep = json.loads(Path(report).read_text())
        runs.setdefault("sl train --algo cd (defaults)", []).append(
            (el, None, rep["objective"], f"{len(rep['epochs'])} sweeps"))
        for tol in tols:
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", SKLEARN_PROCESS, svm, args.loss,
                                  f"{args.l1!r}", f"{tol!r}"], check=True, capture_output=True,
                                 text=True).stdout  # fmt: skip
            el = time.perf_counter() - t
            r = json.loads(out)
            name = ("sklearn liblinear" if args.loss == "logistic" else "sklearn Lasso")
            runs.setdefault(f"{name}, tol {tol:g}", []).append(
                (el, r["load"] + r["fit"], r["objective"], f"{r['iterations']} iterations"))
    best = min(min(r[2] for r in rs) for rs in runs.values())
    print(f"\nwhole processes, minimum of {args.repeat}; load average "
          f"{os.getloadavg()[0]:.2f}; best objective {best:.15g}\n")
    print("| run | process wall (s) | load + fit (s) | work | objective | above best (relative) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rs in runs.items():
        wall = min(r[0] for r in rs)
        lf = f"{min(r[1] for r in rs):.3f}" if rs[0][1] is not None else ""
        F = rs[0][2]
        print(f"| {name} | {wall:.3f} | {lf} | {rs[0][3]} | {F:.15g} | "
              f"{(F - best) / best:.1e} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default=str(ROOT / "bench-data" / "train-300000x32.vw"))
    ap.add_argument("--bits", type=int, default=18)
    ap.add_argument("--l1", type=float, default=1e-3)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row (median shown)")
    ap.add_argument("--loss", choices=("squared", "logistic"), default="squared")
    ap.add_argument("--noconstant", action="store_true", help="no constant feature (as sl's)")
    ap.add_argument("--whole", action="store_true",
                    help="whole processes: sl train with default options vs sklearn load + fit")
    args = ap.parse_args()

    t = time.perf_counter()
    data = load(args.file, args.bits, not args.noconstant)
    print(f"read {args.file}: {data.labels.size:,} rows, {data.vals.size:,} non-zeros, "
          f"{data.slots.size:,} columns, {time.perf_counter() - t:.1f} s")  # fmt: skip
    X = sp.csc_matrix((data.vals, data.rows, data.colptr), shape=(data.labels.size,
                      data.slots.size))  # fmt: skip
    if args.whole:
        whole(args, data)
        return
    if args.loss == "logistic":
        logistic(args, data, X)
        return
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


def logistic(args, data: fit.Columns, X) -> None:
    """In process, the solvers alone: liblinear at three tolerances, sl's cd at three."""
    run_sl(data, args.bits, args.l1, 1e-7, loss=LOGISTIC)  # compile / load the kernels first
    setups = []
    for sk_tol, sl_tol in [(1e-4, 1e-7), (1e-6, 1e-9), (1e-8, 1e-11)]:
        setups += [
            ("sklearn liblinear", f"tol={sk_tol:g}",
             lambda t=sk_tol: run_liblinear(data, X, args.l1, t)),
            ("sl cd (newGLMNET)", f"--tol {sl_tol:g}",
             lambda t=sl_tol: run_sl(data, args.bits, args.l1, t, loss=LOGISTIC)),
        ]  # fmt: skip
    runs: list[list] = [[] for _ in setups]
    for _ in range(args.repeat):
        for k, (_, _, run) in enumerate(setups):
            runs[k].append(run())
    best = min(rs[0][1] for rs in runs)
    print(f"\nl1 = {args.l1:g} (liblinear C = 1/(l1 m)); best objective {best:.15g}; minimum "
          f"of {args.repeat}; load average {os.getloadavg()[0]:.2f}\n")  # fmt: skip
    print("| solver | stopping | seconds | sweeps (full + inner) | objective | above best |")
    print("|---|---|---:|---:|---:|---:|")
    for (name, stop, _), rs in zip(setups, runs, strict=True):
        sec = min(r[0] for r in rs)
        F = rs[0][1]
        print(f"| {name} | {stop} | {sec:.3f} | {rs[0][2]} | {F:.15g} | "
              f"{(F - best) / best:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main()
