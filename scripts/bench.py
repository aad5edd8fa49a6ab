#!/usr/bin/env python
"""Benchmark ``sl train`` against Vowpal Wabbit and scikit-learn on one generated file.

Generates (once, cached in ``bench-data/``) a logistic problem with Zipf
features via ``scripts/make_data.py``, then, in one run:

* ``sl train --algo sgd`` (whole process, warm numba cache) and, when the ``vowpalwabbit``
  package is installed, ``vw --sgd`` with the same options: wall time,
  examples/s, progressive loss, holdout loss on a second file, and the ratio
  sl/VW; the progressive losses must agree (VW parity, DESIGN section 5);
* scikit-learn's ``SGDClassifier`` (when installed) on the same examples
  (parsed by sl, fit time only, one epoch);
* ``sl`` throughput at ``-b 18`` and ``-b 26`` (per-example cost must not
  depend on the table size);
* every learner's whole-process time, as a ratio to sgd's (the default gd must stay
  within 1.2x), and ``sl train`` against ``vw`` with both programs' default update;
* the start-up time of a tiny input.

Usage::

    python scripts/bench.py                # 300k examples x 32 features (~100 MB)
    python scripts/bench.py --examples 30000 --quick
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return elapsed, proc


def best_of(n: int, cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    results = [run(cmd) for _ in range(n)]
    return min(results, key=lambda r: r[0])


Timed = tuple[float, subprocess.CompletedProcess]


MEDIANS: dict[str, float] = {}
"""Median wall time of every command :func:`interleaved` ran, by name."""


def interleaved(n: int, cmds: dict[str, list[str]]) -> dict[str, Timed]:
    """Best of ``n`` for each command, run round-robin so drift in machine load hits all alike.

    The medians go to :data:`MEDIANS`: on a shared virtual machine single runs
    of either program can take 1.6x their best (seen for VW and sl alike).
    """
    best: dict[str, Timed] = {}
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(n):
        for name, cmd in cmds.items():
            r = run(cmd)
            times[name].append(r[0])
            if name not in best or r[0] < best[name][0]:
                best[name] = r
    for name, ts in times.items():
        MEDIANS[name] = statistics.median(ts)
    return best


def make(path: Path, examples: int, features: int, seed: int, names: str = "numeric") -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_data.py"),
            "--examples",
            str(examples),
            "--features-per-example",
            str(features),
            "--task",
            "logistic",
            "--names",
            names,
            "--format",
            "vw",
            "--seed",
            str(seed),
            "--output",
            str(path),
        ]
    )


def sl_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "streamlearn", *args]


def vw_loss(stderr: str) -> float:
    m = re.search(r"average loss = ([0-9.eE+-]+)", stderr)
    return float(m.group(1)) if m else float("nan")


LEARNERS = {
    "gd (default)": [],
    "sgd": ["--algo", "sgd", "SCHEDULE"],
    "tg": ["--algo", "tg", "--l1", "1e-6", "SCHEDULE"],
    "fobos": ["--algo", "fobos", "--l1", "1e-6", "SCHEDULE"],
    "fobos enet": ["--algo", "fobos", "--l1", "1e-6", "--l2", "1e-6", "SCHEDULE"],
    "smidas": ["--algo", "smidas", "--l1", "1e-6", "SCHEDULE"],
    "gd --l1": ["--l1", "1e-6"],
    "ftrl": ["--algo", "ftrl"],
    "ftrl --l1": ["--algo", "ftrl", "--l1", "3"],
}
"""Each learner's options; SCHEDULE stands for the run's -l/--power-t/--initial-t (the
global-schedule learners); gd and ftrl run with their own (VW's) defaults."""


def learners(args, train: Path, opts: list[str], n: int) -> None:
    """Whole-process time of each learner on the same file, and the ratio to sgd."""
    print(f"\nlearners at -b {args.bits} (whole process; ratio to sgd):")
    base = ["train", str(train), "--loss", "logistic", "-b", str(args.bits), "--quiet"]
    cmds = {}
    for k, v in LEARNERS.items():
        flags = [x for f in v for x in (opts if f == "SCHEDULE" else [f])]
        cmds[k] = sl_cmd(*base, *flags)
    timed = interleaved(args.repeat, cmds)
    for k, (t, _) in timed.items():
        ratio = t / timed["sgd"][0]
        med = MEDIANS[k] / MEDIANS["sgd"]
        flags = " ".join(cmds[k][len(sl_cmd(*base)) :])
        print(f"  {k:<13} {t:.3f} s  {n / t:>10,.0f} examples/s  {ratio:.2f}x (median {med:.2f}x)"
              f"  ({flags})")  # fmt: skip


def defaults(args, train: Path, test: Path, n: int, have_vw: bool) -> None:
    """``sl train`` and ``vw`` with their default update (gd), no options but the loss."""
    tmp = Path(tempfile.mkdtemp(prefix="sl-bench-gd-"))
    rep, model, vw_model = tmp / "r.json", tmp / "m.sl", tmp / "vw.model"
    cmds = {"sl gd": sl_cmd("train", str(train), "--loss", "logistic", "-b", str(args.bits),
                            "-f", str(model), "--report", str(rep), "--quiet")}  # fmt: skip
    if have_vw:
        cmds["vw"] = [sys.executable, "-m", "vowpalwabbit", "-d", str(train), "--loss_function",
                      "logistic", "-b", str(args.bits), "-f", str(vw_model)]  # fmt: skip
    timed = interleaved(args.repeat, cmds)
    print(f"\ndefault update (gd = VW's adaptive, normalized, invariant), -b {args.bits}:")
    prog = json.loads(rep.read_text())["average_loss"]
    run(sl_cmd("predict", "-i", str(model), str(test), "--report", str(rep), "--quiet"))
    hold = json.loads(rep.read_text())["average_loss"]
    print(f"  sl train   {timed['sl gd'][0]:.3f} s  {n / timed['sl gd'][0]:>10,.0f} examples/s"
          f"  progressive {prog:.6f}  holdout {hold:.6f}")  # fmt: skip
    if have_vw:
        t_vw, proc = timed["vw"]
        vw_prog = vw_loss(proc.stderr)
        _, proc = run([sys.executable, "-m", "vowpalwabbit", "-d", str(test), "-t", "-i",
                       str(vw_model), "--loss_function", "logistic"])  # fmt: skip
        print(f"  vw         {t_vw:.3f} s  {n / t_vw:>10,.0f} examples/s  progressive "
              f"{vw_prog:.6f}  holdout {vw_loss(proc.stderr):.6f}")  # fmt: skip
        print(f"  ratio sl/vw: best {timed['sl gd'][0] / t_vw:.2f}, "
              f"median {MEDIANS['sl gd'] / MEDIANS['vw']:.2f}")  # fmt: skip
    os.system(f"rm -rf {tmp}")


def big(train: Path, data: Path, pairs: dict[str, tuple[list[str], list[str]]],
        label: str = "") -> None:  # fmt: skip
    """sl vs VW on ``train`` concatenated 10 times: the data-proportional part of both.

    ``pairs`` maps a name to the (sl, vw) commands on ``train``; each pair is timed
    interleaved with the others, best and median of 3, and reported as a ratio."""
    path = data / f"{train.stem}-x10.vw"
    if not path.exists():
        with open(path, "wb") as out:
            for _ in range(10):
                out.write(train.read_bytes())
    mb = path.stat().st_size / 1e6
    swap = {str(train): str(path)}
    cmds = {f"{k} {who}": [swap.get(a, a) for a in c]
            for k, (sl, vw) in pairs.items() for who, c in (("sl", sl), ("vw", vw))}  # fmt: skip
    timed = interleaved(3, cmds)
    print(f"\n{path.name} ({mb:.0f} MB{label}), best and median of 3 interleaved:")
    for k in pairs:
        t_sl, t_vw = timed[f"{k} sl"][0], timed[f"{k} vw"][0]
        m_sl, m_vw = MEDIANS[f"{k} sl"], MEDIANS[f"{k} vw"]
        print(f"  {k:<8} sl {t_sl:.3f} s ({mb / t_sl:.0f} MB/s, median {m_sl:.3f})   vw "
              f"{t_vw:.3f} s ({mb / t_vw:.0f} MB/s, median {m_vw:.3f})   ratio sl/vw: best "
              f"{t_sl / t_vw:.2f}, median {m_sl / m_vw:.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=300_000)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--bits", type=int, default=22)
    ap.add_argument("--learning-rate", type=float, default=0.5)
    ap.add_argument("--power-t", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=9, help="best of N runs for timings")
    ap.add_argument("--quick", action="store_true", help="skip the -b 18/26 and startup runs")
    ap.add_argument(
        "--big", action="store_true",
        help="also sl vs VW on the training file repeated 10 times (~1 GB, where start-up fades)",
    )  # fmt: skip
    args = ap.parse_args()
    # An installed package has its bytecode (pip compiles it); a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 (as on our VMs) would compile ~30 modules again in every
    # timed process (~70 ms of start-up).  Compile them once, as an install does.
    compileall.compile_dir(str(ROOT / "streamlearn"), quiet=1)

    data = ROOT / "bench-data"
    train = data / f"train-{args.examples}x{args.features}.vw"
    test = data / f"test-{args.examples // 10}x{args.features}.vw"
    if not (train.exists() and test.exists()):
        # one stream from one true model, split: the first n lines train, the rest test
        both = data / f"all-{args.examples}x{args.features}.vw"
        make(both, args.examples + args.examples // 10, args.features, seed=1)
        with open(both, "rb") as src, open(train, "wb") as a, open(test, "wb") as b:
            for i, line in enumerate(src):
                (a if i < args.examples else b).write(line)
        both.unlink()
    mb = train.stat().st_size / 1e6
    n = args.examples
    opts = ["-l", str(args.learning_rate), "--power-t", str(args.power_t), "--initial-t", "1"]
    print(f"data: {train} ({mb:.1f} MB, {n} examples, ~{args.features} features each)")
    print(f"options: --loss logistic -b {args.bits} {' '.join(opts)}\n")

    tmp = Path(tempfile.mkdtemp(prefix="sl-bench-"))
    # warm the numba cache once, then time whole processes
    run(sl_cmd("train", "--loss", "logistic", "-b", "10", str(test), "--quiet"))
    report = tmp / "r.json"
    model = tmp / "m.sl"
    sl_train = sl_cmd(
        "train", str(train), "--algo", "sgd", "--loss", "logistic", "-b", str(args.bits), *opts,
        "-f", str(model), "--report", str(report), "--quiet",
    )  # fmt: skip
    vw_model = tmp / "vw.model"
    vw_opts = [
        "--sgd", "--loss_function", "logistic", "-b", str(args.bits),
        "-l", str(args.learning_rate), "--power_t", str(args.power_t), "--initial_t", "1",
    ]  # fmt: skip
    vw_train = [sys.executable, "-m", "vowpalwabbit", "-d", str(train), *vw_opts]
    vw_train += ["-f", str(vw_model)]
    try:
        import vowpalwabbit  # noqa: F401

        have_vw = True
    except ImportError:
        have_vw = False
    timed = interleaved(args.repeat, {"sl": sl_train, **({"vw": vw_train} if have_vw else {})})
    t_sl = timed["sl"][0]
    sl_prog = json.loads(report.read_text())["average_loss"]
    run(sl_cmd("predict", "-i", str(model), str(test), "--report", str(report), "--quiet"))
    sl_hold = json.loads(report.read_text())["average_loss"]
    rows = [("sl train --algo sgd", t_sl, sl_prog, sl_hold)]

    if have_vw:
        t_vw, proc = timed["vw"]
        vw_prog = vw_loss(proc.stderr)
        _, proc = run(
            [
                sys.executable,
                "-m",
                "vowpalwabbit",
                "-d",
                str(test),
                "-t",
                "-i",
                str(vw_model),
                "--loss_function",
                "logistic",
            ]
        )
        rows.append(("vw --sgd", t_vw, vw_prog, vw_loss(proc.stderr)))
    else:
        t_vw = None
        print("(vowpalwabbit not installed: pip install -e '.[bench]')")

    try:
        import numpy as np
        from sklearn.linear_model import SGDClassifier

        from streamlearn.io import read_batches

        def load(path):
            import scipy.sparse as sp

            mats, ys = [], []
            for b in read_batches([str(path)], bits=args.bits):
                ok = b.status == 0
                m = sp.csr_matrix((b.values, b.indices, b.indptr), shape=(b.n, 1 << args.bits))
                mats.append(m[ok])
                ys.append(b.labels[ok])
            return sp.vstack(mats).tocsr(), np.concatenate(ys)

        X, y = load(train)
        Xt, yt = load(test)
        clf = SGDClassifier(
            loss="log_loss",
            penalty=None,
            learning_rate="invscaling",
            eta0=args.learning_rate,
            power_t=args.power_t,
            max_iter=1,
            tol=None,
            shuffle=False,
        )
        t = time.perf_counter()
        clf.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
        t_sk = time.perf_counter() - t
        margin = clf.decision_function(Xt)
        rows.append(
            (
                "sklearn SGDClassifier (fit only)",
                t_sk,
                float("nan"),
                float(np.mean(np.logaddexp(0, -yt * margin))),
            )
        )
    except ImportError:
        print("(scikit-learn not installed)")

    print(
        f"{'learner':<34} {'seconds':>8} {'examples/s':>12} {'MB/s':>7} "
        f"{'progressive':>12} {'holdout':>9}"
    )
    for name, t, prog, hold in rows:
        print(f"{name:<34} {t:>8.3f} {n / t:>12,.0f} {mb / t:>7.1f} {prog:>12.6f} {hold:>9.6f}")
    if t_vw:
        print(
            f"\nratio sl/vw wall time: best {t_sl / t_vw:.2f}, median "
            f"{MEDIANS['sl'] / MEDIANS['vw']:.2f} over {args.repeat} interleaved runs "
            f"(target <= 1.0; medians sl {MEDIANS['sl']:.3f} s, vw {MEDIANS['vw']:.3f} s)"
        )
        print(
            f"progressive loss sl {sl_prog:.6f} vs vw {rows[1][2]:.6f} "
            f"(|diff| {abs(sl_prog - rows[1][2]):.2e})"
        )

    if not args.quick:
        print("\ntable size (per-example cost must not depend on it):")
        by_bits = interleaved(
            args.repeat,
            {
                str(b): sl_cmd(
                    "train", str(train), "--loss", "logistic", "-b", str(b), *opts, "--quiet"
                )
                for b in (18, 26)
            },
        )
        for b, (t, _) in by_bits.items():
            print(f"  -b {b}: {t:.3f} s, {n / t:,.0f} examples/s")
        print(f"  ratio -b 26 / -b 18: {by_bits['26'][0] / by_bits['18'][0]:.2f} (bound 1.5)")
        learners(args, train, opts, n)
        defaults(args, train, test, n, have_vw)
        t, _ = best_of(
            5, ["sh", "-c", f"echo '1 | a b' | {sys.executable} -m streamlearn train --quiet"]
        )
        print(f"\ntiny input (echo '1 | a b' | sl train), whole process: {t:.3f} s")
    if args.big and have_vw:
        base = ["--loss", "logistic", "-b", str(args.bits), "-f"]
        sl_gd = sl_cmd("train", str(train), *base, str(model), "--quiet")
        vw_gd = [sys.executable, "-m", "vowpalwabbit", "-d", str(train), "--loss_function",
                 "logistic", "-b", str(args.bits), "-f", str(vw_model)]  # fmt: skip
        big(train, data, {"sgd": (sl_train, vw_train), "default": (sl_gd, vw_gd)},
            ", numeric feature names")  # fmt: skip
        strings = data / f"train-{args.examples}x{args.features}-strings.vw"
        make(strings, args.examples, args.features, seed=1, names="string")
        swap = {str(train): str(strings)}
        pairs = {k: tuple([swap.get(a, a) for a in c] for c in pair)
                 for k, pair in {"sgd": (sl_train, vw_train), "default": (sl_gd, vw_gd)}.items()}
        big(strings, data, pairs, ", string feature names")  # fmt: skip
    os.system(f"rm -rf {tmp}")


if __name__ == "__main__":
    main()
