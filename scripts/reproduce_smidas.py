#!/usr/bin/env python
"""Reproduce Shalev-Shwartz & Tewari (2009), section 4, and measure the SMIDAS kernel.

Three experiments, each calling the learner kernels directly (``paper`` also runs the
batch coordinate descent kernels, ``scd`` = the paper's Algorithm 2 and cyclic ``cd``,
for the Fig. 1 comparison):

``paper``
    MAGIC04D / MAGIC04S in the paper's spirit (the UCI data is not shipped):
    19,020 examples, a constant feature, 10 informative features in [-1, 1]
    that carry a sparse logistic model, and 1,000 random features, ±1 with
    probability 1/2 each (dense, "D") or 1 with probability 0.05 (sparse,
    "S").  Logistic loss, λ = 1e-3 as in the paper, examples drawn uniformly
    with replacement, constant η swept over a grid for SMIDAS (p = 2 ln d,
    Algorithm 3) and truncated gradient (K = 1, θ = ∞, the variant the paper
    compares with); at each algorithm's best η, the regularised objective
    (average loss over the data set + λ‖w‖₁) and the density of w against the
    number of data accesses (non-zero x_ij read).
``text``
    The same comparison on real sparse text, the paper's REUTERS (RCV1) in
    miniature: VW's ``rcv1_smaller`` sample (250 documents, 4,974 distinct
    terms, unit-norm TF-IDF rows, ``tests/data/vw``), at several λ (the paper
    used 10⁻⁶ on REUTERS), η swept over a wider grid; F* from liblinear.
``refresh``
    How far the lazy running norm is from the exact one, per ``--norm-refresh``
    interval: objective, progressive loss and weights against interval 1
    (exact, the dense algorithm), on a hashed sparse stream with p = 2 ln 2^22.
``throughput``
    Kernel time of ``tg`` and ``smidas`` over the benchmark file
    (bench-data/train-300000x32.vw, made by scripts/bench.py), parsed once
    at -b 22, best of ``--repeat``.

Usage::

    python scripts/reproduce_smidas.py paper
    python scripts/reproduce_smidas.py text --plot docs/sst-rcv1.png
    python scripts/reproduce_smidas.py refresh
    python scripts/reproduce_smidas.py throughput --repeat 5
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlearn.learners import smidas, truncated  # noqa: E402
from streamlearn.learners.base import make_params, new_rows, new_stats  # noqa: E402
from streamlearn.learners.losses import LOGISTIC  # noqa: E402

# ---- data -----------------------------------------------------------------------------


def magic_like(
    dense: bool, m: int = 19_020, noise: int = 1_000, seed: int = 0
) -> tuple[sp.csr_matrix, np.ndarray]:
    """(X, y): constant, 10 informative features in [-1, 1], ``noise`` random features."""
    rng = np.random.default_rng(seed)
    inf = np.clip(rng.normal(size=(m, 10)) / 2.5, -1.0, 1.0)
    w_star = np.array([3.0, -2.5, 2.0, 0.0, 1.5, 0.0, -1.0, 0.0, 0.0, 0.5])
    margin = inf @ w_star - 0.6  # ~65% negatives, as MAGIC's 65/35 classes
    y = np.where(rng.random(m) < 1.0 / (1.0 + np.exp(-margin)), 1.0, -1.0)
    if dense:
        rand = rng.choice([-1.0, 1.0], size=(m, noise))
        x = np.hstack([np.ones((m, 1)), inf, rand])
        return sp.csr_matrix(x), y
    rand = sp.random(m, noise, density=0.05, random_state=seed, data_rvs=np.ones, format="csr")
    x = sp.hstack([sp.csr_matrix(np.hstack([np.ones((m, 1)), inf])), rand], format="csr")
    return x, y


def objective(x: sp.csr_matrix, y: np.ndarray, w: np.ndarray, lam: float) -> float:
    """Average logistic loss over the data set plus λ‖w‖₁ (the paper's eq. 1)."""
    z = y * (x @ w[: x.shape[1]])
    return float(np.mean(np.logaddexp(0.0, -z)) + lam * np.abs(w).sum())


def gather(x: sp.csr_matrix, rows: np.ndarray):
    """The rows ``rows`` of ``x`` as kernel arrays (indptr, indices, values)."""
    sub = x[rows]
    return sub.indptr.astype(np.int64), sub.indices.astype(np.uint32), sub.data.astype(np.float64)


# ---- running a kernel -------------------------------------------------------------------


class Run:
    """A kernel with its state, fed batches of examples."""

    def __init__(self, spec, params, bits: int):
        self.spec, self.params, self.bits = spec, params, bits
        self.table = spec.new_table(bits)
        self.gstate = spec.init_gstate(params)
        self.stats = new_stats()
        self.rows = new_rows()

    def feed(self, indptr, indices, values, labels):
        n = labels.shape[0]
        self.spec.train_batch(
            self.table, self.gstate, self.params, LOGISTIC, indptr, indices, values, labels,
            np.ones(n), np.zeros(n), np.zeros(n, dtype=np.int32), self.stats, self.rows,
            np.empty(n),
        )
        self.rows[:] = 0.0
        self.stats[11] = 0.0  # S_NROWS: the table lines are not wanted here

    def weights(self) -> np.ndarray:
        w = np.empty(self.table.shape[0])
        slots = np.arange(self.table.shape[0], dtype=np.uint32)
        self.spec.current_weights(self.table, self.gstate, self.params, slots, w)
        return w


def params_for(algo: str, eta: float, lam: float, p: float, refresh: int):
    if algo == "smidas":
        return make_params(learning_rate=eta, power_t=0.0, l1=lam, p=p, norm_refresh=refresh)
    return make_params(learning_rate=eta, power_t=0.0, l1=lam, period=1, theta=np.inf)


def curve(algo, x, y, eta, lam, p, budget, seed, refresh, points=24):
    """(accesses, objective, density) at log-spaced numbers of data accesses."""
    spec = smidas.SPEC if algo == "smidas" else truncated.SPEC
    bits = max(1, math.ceil(math.log2(x.shape[1])))
    run = Run(spec, params_for(algo, eta, lam, p, refresh), bits)
    rng = np.random.default_rng(seed)
    per_row = np.diff(x.indptr)
    marks = np.unique(np.geomspace(1e4, budget, points).astype(np.int64))
    out, done = [], 0
    for mark in marks:
        # draw examples until the number of x_ij read reaches the mark
        while done < mark:
            rows = rng.integers(0, x.shape[0], size=max(1, int((mark - done) / per_row.mean())))
            cum = done + np.cumsum(per_row[rows])
            rows = rows[: int(np.searchsorted(cum, mark)) + 1]
            run.feed(*gather(x, rows), y[rows])
            done += int(per_row[rows].sum())
        w = run.weights()
        if not np.all(np.isfinite(w)):
            return out, False
        out.append((done, objective(x, y, w, lam), np.count_nonzero(w[: x.shape[1]]) / x.shape[1]))
    return out, True


def cd_curve(method: int, x: sp.csr_matrix, y: np.ndarray, lam: float, budget: float,
             seed: int, points: int = 24):  # fmt: skip
    """(accesses, objective, density) for ``cd``/``scd`` (Algorithm 2), counting column reads."""
    from streamlearn.learners import cd

    c = x.tocsc()
    c.sum_duplicates()
    colptr, rows, vals = c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data.astype(float)
    d = c.shape[1]
    a, p, w = np.ones(len(y)), np.zeros(len(y)), np.zeros(d)
    inv_w = 1.0 / len(y)
    hsq = cd.column_curvature(colptr, vals, rows, a, inv_w)
    per_col = np.diff(colptr)
    kinks = incs = np.empty(1)
    rng = np.random.default_rng(seed)
    marks = np.unique(np.geomspace(1e4, budget, points).astype(np.int64))
    out, done, nxt = [], 0, 0
    for mark in marks:
        while done < mark:
            if method == cd.CYCLIC:
                order = (nxt + np.arange(d)) % d
            else:
                order = rng.integers(0, d, size=d)
            cum = done + np.cumsum(per_col[order])
            order = order[: int(np.searchsorted(cum, mark)) + 1]
            cd.epoch(method, LOGISTIC, order, colptr, rows, vals, vals, hsq, y, a, p, w, lam,
                     0.0, inv_w, kinks, incs)  # fmt: skip
            done += int(per_col[order].sum())
            nxt = (nxt + order.size) % d
        out.append((done, objective(x, y, w, lam), np.count_nonzero(w) / d))
    return out


ETAS = [10.0**e for e in np.arange(-4.0, 1.01, 0.5)]
NAMES = ("smidas", "tg", "scd", "cd")


def fig1(x: sp.csr_matrix, y: np.ndarray, lam: float, etas, args) -> dict:
    """The four curves at one λ, η tuned for the online two; prints the η sweep and the table."""
    from streamlearn.learners import cd

    d = x.shape[1]
    p = 2.0 * math.log(d)
    print(f"objective of w = 0: {objective(x, y, np.zeros(d), lam):.4f}, p = {p:.2f}")
    best = {}
    for algo in ("smidas", "tg"):
        finals = []
        for eta in etas:
            pts, ok = curve(algo, x, y, eta, lam, p, args.budget, args.seed, args.refresh)
            finals.append(pts[-1][1] if ok else np.inf)
        k = int(np.argmin(finals))
        best[algo] = etas[k]
        sweep = " ".join(f"{f:.4f}" if np.isfinite(f) else "div" for f in finals)
        print(f"{algo:>6} final objective per eta: {sweep}  -> best eta {etas[k]:.0e}")
    curves = {
        a: curve(a, x, y, best[a], lam, p, args.budget, args.seed, args.refresh)[0] for a in best
    }
    for name_, method in (("scd", cd.STOCHASTIC), ("cd", cd.CYCLIC)):
        curves[name_] = cd_curve(method, x, y, lam, args.budget, args.seed)
    print("\n| data accesses (smidas, tg) | " + " | ".join(f"{a} objective" for a in NAMES)
          + " | " + " | ".join(f"{a} density" for a in NAMES) + " |")  # fmt: skip
    print("|---:|" + "---:|" * 8)
    for rows_ in zip(*(curves[a] for a in NAMES), strict=False):
        objs = " | ".join(f"{r[1]:.4f}" for r in rows_)
        dens = " | ".join(f"{r[2]:.3f}" for r in rows_)
        print(f"| {rows_[0][0]:.2e} | {objs} | {dens} |")
    curves["eta"] = best
    return curves


def paper(args) -> None:
    lam = args.lam
    print(f"lambda = {lam}, constant eta swept over {[f'{e:.0e}' for e in ETAS]}")
    print(f"budget {args.budget:.0e} data accesses, examples drawn with replacement\n")
    for name, dense in (("MAGIC04D-like (dense)", True), ("MAGIC04S-like (sparse)", False)):
        x, y = magic_like(dense, seed=args.seed)
        print(f"## {name}: {x.shape[0]} x {x.shape[1]}, nnz/row {x.nnz / x.shape[0]:.1f}")
        fig1(x, y, lam, ETAS, args)
        print("(scd and cd update whole columns and count the non-zeros of the columns they")
        print(" read: a row shows them after the first column that reaches its budget, up to one")
        print(" column later (19,020 reads on dense data); cd's line search reads more)")
        print()


# ---- real text data -----------------------------------------------------------------------

RCV1 = ROOT / "tests" / "data" / "vw" / "rcv1_smaller.dat.gz"


def read_rcv1(path: Path = RCV1) -> tuple[sp.csr_matrix, np.ndarray]:
    """VW's RCV1 sample (``label |f id:tfidf ...``) as (X, y), columns = the distinct ids.

    No hashing and no constant feature: the paper's data matrix as given.
    """
    import gzip

    labels, ids, vals, indptr = [], [], [], [0]
    with gzip.open(path, "rt") as f:
        for line in f:
            head, _, feats = line.partition("|")
            labels.append(float(head.split()[0]))
            for tok in feats.split()[1:]:  # the first token is the namespace name
                name, _, v = tok.partition(":")
                ids.append(int(name))
                vals.append(float(v) if v else 1.0)
            indptr.append(len(ids))
    cols, idx = np.unique(np.array(ids), return_inverse=True)
    x = sp.csr_matrix((np.array(vals), idx, np.array(indptr)), shape=(len(labels), cols.size))
    x.sum_duplicates()
    return x, np.array(labels)


def optimum(x: sp.csr_matrix, y: np.ndarray, lam: float) -> float:
    """F* from liblinear's ℓ1 logistic regression (C = 1/(λ m)), when scikit-learn is here."""
    try:
        import warnings

        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression(penalty="l1", C=1.0 / (lam * x.shape[0]), fit_intercept=False,
                               solver="liblinear", tol=1e-10, max_iter=100_000).fit(x, y)
    return objective(x, y, m.coef_.ravel(), lam)


def text(args) -> None:
    x, y = read_rcv1()
    m, d = x.shape
    print(f"## {RCV1.name}: {m} x {d}, nnz {x.nnz} ({x.nnz / m:.1f}/row, density "
          f"{x.nnz / (m * d):.4f}), rows of unit norm, {np.mean(y > 0):.0%} positive")
    print(f"lambda_max (w = 0 optimal above it) = {np.abs(x.T @ y).max() / (2 * m):.3g}")
    print(f"budget {args.budget:.0e} data accesses, examples drawn with replacement, "
          f"constant eta swept over {[f'{e:.0e}' for e in args.etas]}\n")  # fmt: skip
    runs = {}
    for lam in args.lams:
        print(f"### lambda = {lam:g}")
        runs[lam] = fig1(x, y, lam, args.etas, args)
        F_star = optimum(x, y, lam)
        print(f"\nF* (liblinear) = {F_star:.6f}; final gaps to it: " + ", ".join(
            f"{a} {runs[lam][a][-1][1] - F_star:.2e}" for a in NAMES) + "\n")  # fmt: skip
        runs[lam]["F*"] = F_star
    if args.plot:
        fig = plot_fig1(runs, f"{RCV1.name} ({m} x {d})")
        fig.savefig(args.plot, dpi=110, bbox_inches="tight")
        print(f"plot: {args.plot}")


def plot_fig1(runs: dict, title: str):
    """F − F* (top, log) and density (bottom) against data accesses, one column per λ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(runs), figsize=(4.2 * len(runs), 6.4), squeeze=False,
                             sharex=True)  # fmt: skip
    style = {"smidas": "C0-", "tg": "C1-", "scd": "C2-", "cd": "C3--"}
    for k, (lam, c) in enumerate(runs.items()):
        for a in NAMES:
            acc = [r[0] for r in c[a]]
            label = f"{a} (eta {c['eta'][a]:.0e})" if a in c["eta"] else a
            above = [max(r[1] - c["F*"], FLOOR) for r in c[a]]
            axes[0, k].plot(acc, above, style[a], label=label)
            axes[1, k].plot(acc, [r[2] for r in c[a]], style[a], label=label)
        axes[0, k].set_title(f"lambda = {lam:g}, F* = {c['F*']:.4g}")
        axes[0, k].set_xscale("log")
        axes[0, k].set_yscale("log")
        axes[0, k].set_ylim(FLOOR / 2, 1.0)
        axes[1, k].set_ylim(0.0, 1.02)
        axes[1, k].set_xlabel("data accesses (x_ij read)")
        axes[0, k].legend(fontsize=7)
    axes[0, 0].set_ylabel(f"objective - F* (liblinear), floored at {FLOOR:g}")
    axes[1, 0].set_ylabel("density of w")
    fig.suptitle(f"Shalev-Shwartz & Tewari Fig. 1 analogue on {title}")
    return fig


FLOOR = 1e-8


# ---- refresh interval -------------------------------------------------------------------


def hashed_stream(n: int, k: int, seed: int):
    """Zipf-distributed features (k per row + a constant), planted sparse logistic labels."""
    rng = np.random.default_rng(seed)
    vocab = 1 << 18
    ranks = np.minimum(rng.zipf(1.1, size=(n, k)), vocab) - 1
    ids = rng.permutation(vocab)[ranks]
    w_star = np.where(rng.random(vocab) < 0.05, rng.normal(size=vocab), 0.0)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(w_star[ids].sum(1) - 0.5))), 1.0, -1.0)
    ids = np.hstack([ids, np.full((n, 1), vocab)])  # the constant feature
    used, idx = np.unique(ids, return_inverse=True)  # never-touched slots add nothing to N
    x = sp.csr_matrix(
        (np.ones(ids.size), idx.ravel(), np.arange(n + 1) * (k + 1)), shape=(n, used.size)
    )
    x.sum_duplicates()
    return x, y


def refresh(args) -> None:
    x, y = hashed_stream(args.examples, 31, args.seed)
    # drift: the second half has other features (and another constant): the first half's
    # slots are never touched again, so their stale terms stay in N until a refresh
    x2, y2 = hashed_stream(args.examples, 31, args.seed + 1)
    half = args.examples // 2
    drift = sp.vstack([sp.hstack([x[:half], sp.csr_matrix((half, x2.shape[1]))]),
                       sp.hstack([sp.csr_matrix((half, x.shape[1])), x2[half:]])], format="csr")
    p = smidas.default_p(22)
    print(f"{x.shape[0]} examples, p = 2 ln 2^22 = {p:.2f}, slots compacted to those used\n")
    for data, name in ((x, "stationary"), (drift, "drift at half-way")):
        for eta, power_t, lam in ((0.3, 0.5, 1e-4), (0.3, 0.5, 1e-3), (0.03, 0.0, 1e-3)):
            if name.startswith("drift") and lam == 1e-4:
                continue
            print(f"### {name}, {data.shape[1]} slots: eta = {eta}, power_t = {power_t}, "
                  f"lambda = {lam}\n")
            refresh_table(data, y if data is x else np.concatenate([y[:half], y2[half:]]),
                          eta, power_t, lam, p)


def refresh_table(x, y, eta, power_t, lam, p) -> None:
    n, d = x.shape
    bits = math.ceil(math.log2(d))
    indptr, indices, values = x.indptr.astype(np.int64), x.indices.astype(np.uint32), x.data
    print("| norm_refresh | objective | rel. to exact | progressive loss | rel. "
          "| max abs w diff / max abs w | nnz(w) | exact refreshes (guarded) | seconds |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ref = None
    for every in (1, 100, 1_000, 3_000, 10_000, 0):
        params = make_params(
            learning_rate=eta, power_t=power_t, l1=lam, p=p, norm_refresh=every
        )
        run = Run(smidas.SPEC, params, bits)
        t = time.perf_counter()
        run.feed(indptr, indices, values, y)
        dt = time.perf_counter() - t
        w = run.weights()[:d]
        obj = objective(x, y, w, lam)
        prog = run.stats[3] / run.stats[2]
        if ref is None:
            ref = (obj, prog, w)
        dw = np.max(np.abs(w - ref[2])) / max(np.max(np.abs(ref[2])), 1e-300)
        g = run.gstate
        print(f"| {every if every else 'never'} | {obj:.6f} | {obj / ref[0] - 1:+.2e} | "
              f"{prog:.6f} | {prog / ref[1] - 1:+.2e} | {dw:.1e} | {np.count_nonzero(w)} | "
              f"{g[smidas.G_REFRESHES]:.0f} ({g[smidas.G_GUARDED]:.0f}) | {dt:.2f} |")
    print()


# ---- throughput -------------------------------------------------------------------------


def throughput(args) -> None:
    from streamlearn.io import read_batches

    path = ROOT / "bench-data" / "train-300000x32.vw"
    if not path.exists():
        sys.exit(f"{path} missing: run scripts/bench.py once (it generates bench-data/)")
    batches = [b for b in read_batches([str(path)], bits=22)]
    n = sum(b.n for b in batches)
    nnz = sum(int(b.indptr[-1]) for b in batches)
    print(f"{path.name}: {n} examples, {nnz} features, {len(batches)} batches, -b 22")
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    variants = [
        ("tg", truncated.SPEC, make_params(learning_rate=0.5, power_t=0.5, l1=1e-6)),
        *(
            (f"smidas --norm-refresh {r if r else 'never'}", smidas.SPEC,
             make_params(learning_rate=0.5, power_t=0.5, l1=1e-6, p=smidas.default_p(22),
                         norm_refresh=r))
            for r in (0, smidas.DEFAULT_NORM_REFRESH, 10_000)
        ),
    ]
    times: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    losses = {}
    for rep in range(args.repeat + 1):  # round 0 compiles
        for name, spec, params in variants:
            run = Run(spec, params, 22)
            t = time.perf_counter()
            for b in batches:
                run.spec.train_batch(
                    run.table, run.gstate, params, LOGISTIC, b.indptr, b.indices, b.values,
                    b.labels, b.weights, b.bases, b.status, run.stats, run.rows,
                    np.empty(b.n),
                )
                run.rows[:] = 0.0
                run.stats[11] = 0.0
            if rep:
                times[name].append(time.perf_counter() - t)
            losses[name] = run.stats[3] / run.stats[2]
    base = min(times["tg"])
    print("| kernel | best s | median s | examples/s | vs tg (best) | progressive loss |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, ts in times.items():
        print(f"| {name} | {min(ts):.3f} | {np.median(ts):.3f} | {n / min(ts):,.0f} | "
              f"{min(ts) / base:.2f} | {losses[name]:.6f} |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("paper", help="MAGIC04D/S-like objective vs data accesses")
    a.add_argument("--budget", type=float, default=5e7, help="data accesses per run")
    a.add_argument("--lam", type=float, default=1e-3, help="lambda (the paper: 1e-3)")
    a.add_argument("--refresh", type=int, default=smidas.DEFAULT_NORM_REFRESH)
    a.add_argument("--seed", type=int, default=0)
    a = sub.add_parser("text", help="the same on VW's RCV1 sample (real sparse text)")
    a.add_argument("--budget", type=float, default=2e7, help="data accesses per run")
    a.add_argument("--lams", type=float, nargs="+", default=[1e-6, 1e-4, 1e-3],
                   help="lambdas (the paper: 1e-6 on REUTERS)")
    a.add_argument("--etas", type=float, nargs="+",
                   default=[10.0**e for e in np.arange(-3.0, 4.01, 0.5)])
    a.add_argument("--refresh", type=int, default=smidas.DEFAULT_NORM_REFRESH)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--plot", help="save the figure here (PNG)")
    a = sub.add_parser("refresh", help="lazy norm vs exact, per --norm-refresh interval")
    a.add_argument("--examples", type=int, default=30_000)
    a.add_argument("--seed", type=int, default=0)
    a = sub.add_parser("throughput", help="tg vs smidas kernels on the benchmark file")
    a.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    {"paper": paper, "text": text, "refresh": refresh, "throughput": throughput}[args.cmd](args)


if __name__ == "__main__":
    main()
