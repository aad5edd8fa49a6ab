#!/usr/bin/env python
"""Unscaled features: sl's default learner against VW's default, and against plain SGD.

Data whose feature values span many orders of magnitude, as real data often
does: scikit-learn's breast cancer (raw, 1e-3 to 4e3), wine and digits (raw),
diabetes (raw, regression), and generated sets whose features have scales
10^U(-3, 4).  Each is written as VW text (shuffled, no download) and learned
with 10 passes and VW's holdout (every 10th example), by

* ``sl train --passes 10`` (gd, VW's default update),
* ``vw --passes 10`` (its defaults, with a cache file),
* ``sl train --passes 10 --algo sgd -l 0.5`` (plain SGD, the old default),

and the holdout losses are compared (target: sl within 0.05 of VW, never
diverging where VW does not).  A second table runs a few learning rates.

Usage::

    python scripts/robustness.py [--passes 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def write(path: Path, x: np.ndarray, y: np.ndarray) -> Path:
    with open(path, "w") as out:
        for row, label in zip(x, y, strict=True):
            feats = " ".join(f"{i}:{v!r}" for i, v in enumerate(row.tolist()) if v != 0)
            out.write(f"{label:g} |f {feats}\n")
    return path


def sklearn_sets():
    from sklearn import datasets

    x, y = datasets.load_breast_cancer(return_X_y=True)
    yield "breast-cancer", x, np.where(y == 1, 1.0, -1.0), "logistic"
    x, y = datasets.load_wine(return_X_y=True)
    yield "wine (class 0 vs rest)", x, np.where(y == 0, 1.0, -1.0), "logistic"
    x, y = datasets.load_digits(return_X_y=True)
    yield "digits (< 5 vs rest)", x, np.where(y < 5, 1.0, -1.0), "logistic"
    x, y = datasets.load_diabetes(return_X_y=True, scaled=False)
    yield "diabetes", x, y, "squared"


def generated(seed: int, task: str, n: int = 20000, d: int = 40, k: int = 12):
    """Sparse rows of k of d features; feature j has scale 10^U(-3, 4); a linear truth."""
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.uniform(-3, 4, d)
    w = rng.normal(size=d) * (rng.random(d) < 0.5)
    x = np.zeros((n, d))
    for i in range(n):
        cols = rng.choice(d, k, replace=False)
        x[i, cols] = rng.lognormal(0.0, 1.0, k)
    margin = x @ w / np.sqrt(k) - 0.5
    x = x * scale
    if task == "logistic":
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-2 * margin)), 1.0, -1.0)
    else:
        y = margin + rng.normal(scale=0.3, size=n)
    return f"generated {task} #{seed}", x, y, task


def sl_holdout(path: Path, loss: str, passes: int, extra: list[str], tmp: Path) -> float:
    rep = tmp / "r.json"
    cmd = [sys.executable, "-m", "streamlearn", "train", str(path), "--loss", loss, "--passes",
           str(passes), *extra, "--report", str(rep), "--quiet"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 6:
        return math.inf  # diverged
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    report = json.loads(rep.read_text())
    v = report["best_holdout_loss"] if passes > 1 else report["holdout_loss"]
    return math.inf if v is None else v  # (the best pass's, as VW prints it)


def vw_holdout(path: Path, loss: str, passes: int, extra: list[str], tmp: Path) -> float:
    cache = str(tmp / "vw.cache")
    cmd = [sys.executable, "-m", "vowpalwabbit", "-d", str(path), "--loss_function", loss,
           "--passes", str(passes), "--cache_file", cache, "-k", *extra]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"average loss = (\S+)", r.stderr)
    if r.returncode != 0 or not m:
        return math.inf
    v = float(m.group(1))
    return v if math.isfinite(v) else math.inf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sets = [*sklearn_sets()]
    sets += [generated(s, "logistic") for s in range(3)] + [generated(s, "squared") for s in (0, 1)]
    rows = []
    print(f"holdout loss after up to {args.passes} passes (VW's holdout: every 10th example)\n")
    print(f"{'data':<26} {'loss':<9} {'sl (gd)':>10} {'vw':>10} {'|diff|':>8} {'sl sgd':>12}")
    with tempfile.TemporaryDirectory(prefix="sl-robust-") as d:
        tmp = Path(d)
        for name, x, y, loss in sets:
            order = np.random.default_rng(0).permutation(len(y))
            path = write(tmp / "data.vw", x[order], y[order])
            lo, hi = np.abs(x[x != 0]).min(), np.abs(x).max()
            ours = sl_holdout(path, loss, args.passes, [], tmp)
            theirs = vw_holdout(path, loss, args.passes, [], tmp)
            sgd = sl_holdout(path, loss, args.passes, ["--algo", "sgd", "-l", "0.5"], tmp)
            rows.append({"data": name, "loss": loss, "sl": ours, "vw": theirs, "sl_sgd": sgd,
                         "min_abs_x": float(lo), "max_abs_x": float(hi)})  # fmt: skip
            print(f"{name:<26} {loss:<9} {ours:>10.6f} {theirs:>10.6f} {abs(ours - theirs):>8.1e} "
                  f"{sgd:>12.6g}   (|x| {lo:.0e}..{hi:.0e})")  # fmt: skip
            for rate in (0.1, 2.0, 10.0):
                o = sl_holdout(path, loss, args.passes, ["-l", str(rate)], tmp)
                t = vw_holdout(path, loss, args.passes, ["-l", str(rate)], tmp)
                rows.append({"data": name, "loss": loss, "rate": rate, "sl": o, "vw": t})
                if math.isfinite(t) and not math.isfinite(o):
                    print(f"  -l {rate}: sl diverged where vw did not ({t})")
    worst = max((r for r in rows if "rate" not in r), key=lambda r: abs(r["sl"] - r["vw"]))
    diverged = [r for r in rows if math.isfinite(r["vw"]) and not math.isfinite(r["sl"])]
    rated = [r for r in rows if "rate" in r]
    gap = max(abs(r["sl"] - r["vw"]) for r in rated if math.isfinite(r["vw"]))
    diff = abs(worst["sl"] - worst["vw"])
    print(f"\nlargest |sl - vw| with defaults: {diff:.2e} ({worst['data']})")
    print(f"with -l 0.1, 2, 10: largest |sl - vw| {gap:.2e}; sl diverged where vw did not: "
          f"{len(diverged)}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
