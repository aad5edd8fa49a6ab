#!/usr/bin/env python
"""Progressive-loss parity of ``sl train`` with Vowpal Wabbit, one pass, option for option.

For each data set and each configuration, ``sl train FILE --numbers vw OPTIONS`` and
``vw -d FILE OPTIONS`` (VW's own spellings, through the ``vowpalwabbit``
package, in this process) run once over the same file; their progressive
average losses must agree to ``--tolerance`` (relative, default 1e-6).  VW's
loss is read from its counters (``sum_loss / weighted examples``), not from
the six digits it prints; sl's from ``--report``.

Data sets: ``data/sample.vw``; VW's own test files (``tests/data/vw``:
``rcv1_smaller``, ``0002``, ``big-constant``, ``regression_simple``, and for
``--oaa`` ``multiclass`` and ``probabilities.dat``; scikit-learn's digits, raw
pixels, classes 1..10);
scikit-learn's breast cancer (raw features, 1e-3 to 4e3) and diabetes (raw)
written out as VW text; copies of the classification sets with importance
weights.  No download.

Configurations: VW's defaults; each subset of ``--adaptive --normalized
--invariant``; ``--l1``; ``--l2``; ``--power_t`` 0.25 and 1; ``--initial_t``
1 and 10; hinge loss; ``--min/--max_prediction``; ``--ftrl`` alone, with
``--l1``, ``--l2`` and its own alpha/beta; ``--sgd`` at VW's rate 10, 0.5 and
0.001 (VW's --sgd: gd with the three rules off, in float32); interactions (``-q``, ``--cubic``,
``--interactions`` with 2 to 4 namespaces, wildcards, self-interactions, ``--ignore``,
``--keep``, ``--ignore_linear``, a scaled namespace) with the default update, its
subsets, ``--l1``/``--l2``, ``--ftrl`` and ``--sgd``, on VW's ``0002`` and
``rcv1_smaller`` and a generated set with six namespaces; VW's parameter-free
``--coin``, ``--pistol``, ``--freegrad`` (and its options); ``--oaa K`` (with its
update rules, ``--l1``/``--l2``, ``--ftrl``, ``-q``, ``-b``, ``--probabilities``)
on the multiclass sets, where every predicted class (or probability line) must be
VW's too.

Inputs: both programs read the very same bytes.  VW reads decimals with its own
routine, which is off by a float for many of them; ``sl vw`` reads them as VW
does, and so does ``sl train --numbers vw`` (``streamlearn/io/vwfloat.py``).

Whole command lines (:data:`VW_LINES`): ``vw ARGV`` next to ``sl vw ARGV`` for
every VW option sl takes (caching, ``-t``, ``-r``, ``-P``, holdout, ``--examples``,
n-grams, ``--hash all``, the losses, ``--binary``, ``--link``, ``--sgd``, labels
0/1 ...), train-then-test recipes included; predictions files and the
progressive table's lines are compared too.

Usage::

    python scripts/vw_parity.py --lines         # only the whole command lines (a minute)
    python scripts/vw_parity.py                 # everything (a few minutes)
    python scripts/vw_parity.py --quick         # the subset tests/test_vw_parity.py runs
    python scripts/vw_parity.py --only ftrl --data breast-cancer

Exit status 1 when a configuration misses the tolerance.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
VW_FILES = ROOT / "tests" / "data" / "vw"


# ---------------------------------------------------------------------------
# data sets


@dataclass(frozen=True)
class DataSet:
    name: str
    make: Callable[[Path], Path]
    classification: bool  # labels -1/+1: logistic and hinge apply
    exact: bool = False  # written with decimals that VW reads as the correctly rounded float
    classes: int = 0  # labels 1..K: the data set of the --oaa cases (K for "{K}")


# ---------------------------------------------------------------------------
# decimals for the generated sets

F32 = np.float32


def vw_exact(v: float) -> str:
    """A decimal for float32(``v``) that VW and sl both read as exactly that float.

    The shortest decimal of the float when VW's routine reads it right;
    otherwise the float's exact-enough decimal with ``e+0`` appended: VW's
    routine does not take a '+' after the 'e' and hands such a token to
    ``strtof``, which rounds correctly, as sl does.
    """
    from streamlearn.io.vwfloat import vw_parse_float

    c = F32(v)
    s = np.format_float_positional(c, unique=True, trim="-")
    if vw_parse_float(s) == c and F32(float(s)) == c:
        return s
    return np.format_float_positional(float(c), unique=True, trim="-") + "e+0"


def _write(path: Path, labels, rows, weights=None) -> Path:
    """VW text: ``label [weight] |f i:v ...``, every number a decimal VW reads exactly."""
    with open(path, "w") as out:
        for k, (y, x) in enumerate(zip(labels, rows, strict=True)):
            head = vw_exact(y) if weights is None else f"{vw_exact(y)} {vw_exact(weights[k])}"
            feats = " ".join(f"{i}:{vw_exact(v)}" for i, v in enumerate(x) if v != 0)
            out.write(f"{head} |f {feats}\n")
    return path


def _sklearn(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    if name == "breast-cancer":
        x, y = datasets.load_breast_cancer(return_X_y=True)
        return x, np.where(y == 1, 1.0, -1.0)
    x, y = datasets.load_diabetes(return_X_y=True, scaled=False)
    return x, y


def _shuffled(x, y, seed=0):
    order = np.random.default_rng(seed).permutation(len(y))
    return x[order], y[order]


def sklearn_set(name: str, weighted: bool = False) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        x, y = _shuffled(*_sklearn(name))
        w = None
        if weighted:
            w = np.random.default_rng(1).choice([0.25, 0.5, 1.0, 2.0, 4.0], size=len(y))
        suffix = "-weighted" if weighted else ""
        return _write(tmp / f"{name}{suffix}.vw", y, x, w)

    return make


def namespaces_set(n: int = 600, seed: int = 3) -> Callable[[Path], Path]:
    """Several namespaces (two sharing a first letter, one scaled ``|b:0.5``, the default
    one), 0 to 3 features each, labels -1/+1: what the interaction options act on."""

    def make(tmp: Path) -> Path:
        rng = np.random.default_rng(seed)
        path = tmp / "namespaces.vw"
        with open(path, "w") as out:
            for _ in range(n):
                parts = ["1" if rng.random() < 0.5 else "-1"]
                for ns in ("a", "ab", "b:0.5", "c", "d", ""):
                    k = int(rng.integers(0, 4))
                    feats = " ".join(f"{ns[:1] or 'e'}{int(rng.integers(0, 12))}:"
                                     f"{vw_exact(float(rng.integers(1, 64)) / 64)}"
                                     for _ in range(k))  # fmt: skip
                    parts.append(f"|{ns} {feats}")
                out.write(" ".join(parts) + "\n")
        return path

    return make


def digits_set(tmp: Path) -> Path:
    """scikit-learn's digits (1797 images, 8x8 pixels 0..16) as VW lines, classes 1..10:
    ``label |p p0:v p1:v ...`` with the digit + 1 as the label and the non-zero pixels."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    path = tmp / "digits.vw"
    with open(path, "w") as out:
        for row, digit in zip(x, y, strict=True):
            feats = " ".join(f"p{j}:{int(v)}" for j, v in enumerate(row) if v != 0)
            out.write(f"{int(digit) + 1} |p {feats}\n")
    return path


def shipped(path: Path) -> Callable[[Path], Path]:
    return lambda tmp: path


def weighted_copy(path: Path) -> Callable[[Path], Path]:
    """``path`` with an importance weight (0.25 to 4) after each label."""

    def make(tmp: Path) -> Path:
        import gzip

        rng = np.random.default_rng(2)
        opener = gzip.open if path.suffix == ".gz" else open
        out = tmp / (path.name.removesuffix(".gz") + ".weighted")
        with opener(path, "rt") as src, open(out, "w") as dst:
            for line in src:
                label, rest = line.split(" ", 1)
                weight = vw_exact(rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]))
                dst.write(f"{label} {weight} {rest}")
        return out

    return make


DATASETS = [
    DataSet("sample", shipped(ROOT / "data" / "sample.vw"), True),
    DataSet("sample-weighted", weighted_copy(ROOT / "data" / "sample.vw"), True),
    DataSet("vw-rcv1_smaller", shipped(VW_FILES / "rcv1_smaller.dat.gz"), True),
    DataSet("vw-0002", shipped(VW_FILES / "0002.dat.gz"), False),
    DataSet("vw-big-constant", shipped(VW_FILES / "big-constant.dat.gz"), False),
    DataSet("vw-regression_simple", shipped(VW_FILES / "regression_simple.txt.gz"), False),
    DataSet("breast-cancer", sklearn_set("breast-cancer"), True, exact=True),
    DataSet("breast-cancer-weighted", sklearn_set("breast-cancer", weighted=True), True, True),
    DataSet("diabetes", sklearn_set("diabetes"), False, exact=True),
    DataSet("namespaces", namespaces_set(), True, exact=True),
    # multiclass (--oaa): VW's own files and scikit-learn's digits, raw pixels
    DataSet("vw-multiclass", shipped(VW_FILES / "multiclass"), True, exact=True, classes=10),
    DataSet("vw-probabilities", shipped(VW_FILES / "probabilities.dat.gz"), True, classes=4),
    DataSet("digits", digits_set, True, exact=True, classes=10),
]


# ---------------------------------------------------------------------------
# configurations: (name, options for both programs, losses it applies to)

SUBSETS = [
    ["--adaptive"], ["--normalized"], ["--invariant"],
    ["--adaptive", "--normalized"], ["--adaptive", "--invariant"],
    ["--normalized", "--invariant"], ["--adaptive", "--normalized", "--invariant"],
]  # fmt: skip

NS = ("namespaces",)
UNWEIGHTED = ("sample", "vw-rcv1_smaller", "vw-0002", "vw-big-constant", "vw-regression_simple",
              "breast-cancer", "diabetes", "namespaces")  # fmt: skip
"""The data sets without importance weights below 1: VW's FreeGrad adds (a - 1) g^2 to a sum
of squares, which such a weight can turn negative (VW then predicts NaN; sl stops)."""
PISTOL_DATA = ("sample", "sample-weighted", "vw-rcv1_smaller", "vw-0002", "vw-regression_simple",
               "breast-cancer", "breast-cancer-weighted", "namespaces")  # fmt: skip
"""The data sets where PiSTOL's arithmetic stays finite (not big-constant, not diabetes)."""

CONFIGS: list[tuple] = [
    ("default", [], ("squared", "logistic")),
    *((" ".join(s), s, ("squared", "logistic")) for s in SUBSETS),
    ("--l1 1e-4", ["--l1", "1e-4"], ("squared", "logistic")),
    ("--l2 1e-4", ["--l2", "1e-4"], ("squared", "logistic")),
    ("--l1 1e-5 --l2 1e-5", ["--l1", "1e-5", "--l2", "1e-5"], ("squared", "logistic")),
    ("--power_t 0.25", ["--power_t", "0.25"], ("squared", "logistic")),
    ("--power_t 1", ["--power_t", "1"], ("squared", "logistic")),
    ("--initial_t 1", ["--initial_t", "1"], ("squared", "logistic")),
    ("--initial_t 10", ["--initial_t", "10"], ("squared", "logistic")),
    ("--adaptive --power_t 0.25 --initial_t 2", ["--adaptive", "--power_t", "0.25",
                                                 "--initial_t", "2"], ("squared", "logistic")),
    ("--normalized --power_t 1", ["--normalized", "--power_t", "1"], ("squared", "logistic")),
    ("hinge", [], ("hinge",)),
    ("--min/max_prediction", ["--min_prediction", "-0.5", "--max_prediction", "2"], ("squared",)),
    ("--ftrl", ["--ftrl"], ("squared", "logistic")),
    ("--ftrl --l1 1e-2", ["--ftrl", "--l1", "1e-2"], ("squared", "logistic")),
    ("--ftrl --l2 1e-1", ["--ftrl", "--l2", "1e-1"], ("squared", "logistic")),
    ("--ftrl --l1 --l2", ["--ftrl", "--l1", "1e-3", "--l2", "1e-2"], ("squared", "logistic")),
    ("--ftrl alpha beta", ["--ftrl", "--ftrl_alpha", "0.1", "--ftrl_beta", "0.5"],
     ("squared", "logistic")),
    ("--sgd -l 0.5", ["--sgd", "-l", "0.5"], ("squared", "logistic")),
    ("--sgd", ["--sgd"], ("squared", "logistic")),
    ("--sgd -l 0.001", ["--sgd", "-l", "0.001"], ("squared", "logistic")),
    # interactions and namespace filters, each on the sets whose namespaces it names
    *((" ".join(o), o, ("squared", "logistic"), data) for o, data in [
        (["-q", "Tf"], ("vw-0002",)), (["-q", "ff"], ("vw-0002", "vw-rcv1_smaller")),
        (["--cubic", "Tff"], ("vw-0002",)), (["-q", "Tf", "--ignore", "T"], ("vw-0002",)),
        (["-q", "ab"], NS), (["-q", "aa"], NS), (["-q", "::"], NS),
        (["-q", "ab", "-q", "ba", "-q", "cc"], NS), (["--cubic", "abc"], NS),
        (["--cubic", "bab"], NS), (["--interactions", "abcd"], NS),
        (["-q", "ab", "--ignore", "c"], NS),
        (["-q", "ab", "--keep", "a", "--keep", "b"], NS),
        (["-q", "ab", "--ignore_linear", "a"], NS), (["-q", "a:"], NS), (["-q", ":a"], NS),
        (["--cubic", ":::"], NS), (["--interactions", "a:b:"], NS),
        (["-q", "::", "--cubic", "c::"], NS), (["-q", "ab", "--noconstant"], NS),
        (["-q", "ab", "--l1", "1e-4"], NS), (["-q", "ab", "--l2", "1e-3"], NS),
        (["-q", "ab", "--adaptive"], NS), (["-q", "ab", "--normalized"], NS),
        (["-q", "ab", "--power_t", "0.25"], NS), (["-q", "ab", "--ftrl"], NS),
        (["--cubic", "abc", "--ftrl", "--l1", "1e-3"], NS),
        (["-q", "ab", "--sgd", "-l", "0.5"], NS),
        (["--cubic", "::a", "--sgd", "-l", "0.1"], NS),
    ]),
    # VW's parameter-free learners (issue #26): --coin, --pistol, --freegrad and its options
    ("--coin", ["--coin"], ("squared", "logistic", "hinge")),
    ("--coin alpha beta", ["--coin", "--ftrl_alpha", "1", "--ftrl_beta", "0.5"],
     ("squared", "logistic")),
    # PiSTOL's exp(θ²/2τ) overflows on labels near 1000 (big-constant) and on raw diabetes: VW
    # then predicts NaN (forced to 0) or ends with infinite weights; sl stops (exit 6)
    ("--pistol", ["--pistol"], ("squared", "logistic", "hinge"), PISTOL_DATA),
    ("--pistol alpha beta", ["--pistol", "--ftrl_alpha", "2", "--ftrl_beta", "0.25"],
     ("squared", "logistic"), PISTOL_DATA),
    *((" ".join(o), o, ("squared", "logistic"), UNWEIGHTED) for o in [
        ["--freegrad"], ["--freegrad", "--project"],
        ["--freegrad", "--project", "--radius", "0.5"], ["--freegrad", "--fepsilon", "0.1"],
    ]),
    # a restart can leave V = 0 (0/0 in eq. 9): VW predicts NaN on sample.vw (forced to 0)
    *((" ".join(o), o, ("squared", "logistic"), tuple(d for d in UNWEIGHTED if d != "sample"))
      for o in [["--freegrad", "--restart"],
                ["--freegrad", "--restart", "--project", "--fepsilon", "2"]]),
    # a Lipschitz hint far above a slot's first gradient gives V ~ 1e-40 and infinite weights
    ("--freegrad --flipschitz_const", ["--freegrad", "--flipschitz_const", "1"], ("logistic",),
     ("breast-cancer", "namespaces")),
    ("-q ab --coin", ["-q", "ab", "--coin"], ("squared", "logistic"), NS),
    ("--cubic abc --pistol", ["--cubic", "abc", "--pistol"], ("squared", "logistic"), NS),
    ("-q ab --freegrad", ["-q", "ab", "--freegrad"], ("squared", "logistic"), NS),
    # one-against-all (issue #26), on the multiclass data sets: the 0/1 loss and every
    # predicted class (probabilities with --probabilities) equal VW's
    *((" ".join(["--oaa", *o]), ["--oaa", "{K}", *o], ("squared", "logistic", "hinge")) for o in [
        [], ["--adaptive"], ["--normalized"], ["--invariant"], ["--adaptive", "--normalized"],
        ["--l1", "1e-4"], ["--l2", "1e-4"], ["--l1", "1e-5", "--l2", "1e-5"],
        ["--power_t", "0.25"], ["--initial_t", "10"], ["--ftrl"], ["--ftrl", "--l1", "1e-2"],
        ["--ftrl", "--l2", "1e-1"], ["-b", "8"], ["--min_prediction", "-0.5",
                                                   "--max_prediction", "0.5"],
        ["-q", "pp"], ["--noconstant"],
    ]),
    ("--oaa --probabilities", ["--oaa", "{K}", "--probabilities"], ("logistic",)),
    ("--oaa --ftrl --probabilities", ["--oaa", "{K}", "--ftrl", "--probabilities"],
     ("logistic",)),
    ("--oaa 12 (more classes than labels)", ["--oaa", "12"], ("squared", "logistic"),
     ("digits",)),
]  # fmt: skip
"""(name, options for both programs, the losses it applies to[, the only data sets it runs
on]); a configuration without the fourth element runs on every data set."""

LOOSER: dict[str, float] = {}
"""Configurations held to a looser tolerance than ``--tolerance`` (none since ``--sgd``
runs VW's single-precision update)."""

QUICK_DATA = ("sample", "vw-0002", "breast-cancer-weighted", "namespaces", "digits")
QUICK_CONFIGS = (
    "default", "--adaptive", "--normalized", "--invariant", "--l1 1e-4", "--l2 1e-4",
    "--power_t 0.25", "--initial_t 10", "--ftrl", "--ftrl --l1 1e-2", "--ftrl --l2 1e-1",
    "-q Tf", "--cubic Tff", "-q aa", "-q ::", "--cubic bab", "--interactions abcd",
    "-q ab --keep a --keep b", "-q ab --ignore_linear a", "--cubic :::",
    "--interactions a:b:", "-q ab --l1 1e-4", "-q ab --ftrl", "-q ab --sgd -l 0.5",
    "--coin", "--pistol", "--freegrad --project --radius 0.5", "--oaa", "--oaa --ftrl",
    "--oaa --probabilities",
)  # fmt: skip


# ---------------------------------------------------------------------------
# running both


def sl_loss(path: Path, loss: str, opts: list[str], tmp: Path,
            predictions: Path | None = None) -> float:  # fmt: skip
    """``sl train --numbers vw`` in this process (through the CLI); its progressive
    average loss.

    ``predictions``: also write ``-p`` there."""
    from click.testing import CliRunner

    from streamlearn.cli import cli

    rep = tmp / "sl-report.json"
    args = ["train", str(path), "--numbers", "vw", "--loss", loss, *opts, "--report", str(rep),
            "--quiet"]
    if predictions is not None:
        args += ["-p", str(predictions)]
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    if r.exit_code != 0:
        raise RuntimeError(f"sl {' '.join(args)} failed ({r.exit_code}): {r.output}")
    return float(json.loads(rep.read_text())["average_loss"])


def vw_loss(path: Path, loss: str, opts: list[str], predictions: Path | None = None) -> float:
    """``vw -d path`` in this process; sum of losses / weighted labeled examples.

    ``predictions``: also write ``-p`` there."""
    from vowpalwabbit import Workspace

    more = ["-p", str(predictions)] if predictions is not None else []
    ws = Workspace(" ".join(["--quiet", "-d", str(path), "--loss_function", loss, *opts, *more]))
    try:
        return ws.get_sum_loss() / ws.get_weighted_examples()
    finally:
        ws.finish()


def run(datasets, configs, tolerance: float, out=sys.stdout) -> list[dict]:
    """Every configuration on every data set; one row per run (printed as it goes).

    Both read the same file, sl with ``--numbers vw``.  A run is ``ok`` when sl's
    loss is within ``tolerance`` of VW's (relative).
    """
    rows = []
    with tempfile.TemporaryDirectory(prefix="sl-parity-") as d:
        tmp = Path(d)
        for ds in datasets:
            path = ds.make(tmp)
            losses = ("squared", "logistic", "hinge") if ds.classification else ("squared",)
            for name, opts, applies, *only in configs:
                if only and ds.name not in only[0]:
                    continue
                if bool(ds.classes) != ("--oaa" in opts):
                    continue  # the multiclass data sets take the --oaa cases, and only those
                opts = [str(ds.classes) if o == "{K}" else o for o in opts]
                for loss in losses:
                    if loss not in applies:
                        continue
                    # --oaa: the predicted classes (or probabilities) must be VW's too
                    vw_p, sl_p = (tmp / "vw.p", tmp / "sl.p") if ds.classes else (None, None)
                    theirs = vw_loss(path, loss, opts, vw_p)
                    ours = sl_loss(path, loss, opts, tmp, sl_p)

                    def rel(x, theirs=theirs):
                        return abs(x - theirs) / abs(theirs) if theirs else abs(x)

                    row = {"data": ds.name, "loss": loss, "config": name, "vw": theirs,
                           "sl": ours, "rel": rel(ours),
                           "ok": rel(ours) <= max(tolerance, LOOSER.get(name, 0.0))}  # fmt: skip
                    if ds.classes:
                        row["same_predictions"] = vw_p.read_text() == sl_p.read_text()
                        row["ok"] = row["ok"] and row["same_predictions"]
                    rows.append(row)
                    mark = "ok " if row["ok"] else "MISS"
                    same_p = ("" if "same_predictions" not in row else
                              ", same predictions" if row["same_predictions"] else
                              ", OTHER PREDICTIONS")  # fmt: skip
                    print(f"{mark} {ds.name:<22} {loss:<8} {name:<40} vw {theirs:<14.9g} "
                          f"rel {row['rel']:.1e}{same_p}",
                          file=out, flush=True)  # fmt: skip
    return rows


# ---------------------------------------------------------------------------
# whole VW command lines: `vw ARGV` next to `sl vw ARGV`


@dataclass(frozen=True)
class Line:
    """A VW command line (or a few, run in order: train, then test) and what to compare.

    ``steps`` are VW's argv with placeholders: ``{train}``/``{test}`` the data
    (the same file for both), ``{m}``,
    ``{p}``, ``{r}`` the model, predictions and raw predictions (one of each per
    program), ``{c}`` a cache file, ``{rm}``/``{ih}`` readable models.  The progressive
    loss of the last step is compared; ``files`` are also compared value by value (VW
    prints 6 decimals); ``table``: the progressive table's lines (counters, losses,
    holdout marks); ``exact``: outputs compared byte for byte.
    """

    name: str
    steps: tuple[str, ...]
    data: str
    test: str | None = None
    files: tuple[str, ...] = ()
    table: bool = False
    exact: tuple[str, ...] = ()
    """Outputs of the last step compared byte for byte: ``p``, ``r``, ``rm``
    (``--readable_model {rm}``), ``ih`` (``--invert_hash {ih}``), ``audit`` (stdout, but
    VW's ``[info]`` notes),
    ``stderr`` (with each program's file names put back to VW's)."""


VW_LINES: list[Line] = [
    # the lists, one option (or recipe) per line
    Line("-c --passes 10 -k -f", ("-d {train} -c --passes 10 -k -f {m}",), "0002"),
    Line("--cache_file --passes 5", ("-d {train} --cache_file {c} --passes 5",), "0002"),
    Line("--holdout_off", ("-d {train} -c --passes 4 --holdout_off",), "0002"),
    Line("--holdout_after 600", ("-d {train} --holdout_after 600",), "0002"),
    Line("--holdout_after --passes 3", ("-d {train} -c --passes 3 --holdout_after 700",),
         "rcv1"),
    Line("-t -i -p", ("-d {train} -f {m} --loss_function logistic",
                      "-t -i {m} -d {test} -p {p} --loss_function logistic"), "rcv1",
         "rcv1-test", files=("p",)),
    Line("-r --raw_predictions", ("-d {train} -f {m} --loss_function logistic",
                                  "-t -i {m} -d {test} -r {r} --loss_function logistic"),
         "rcv1", "rcv1-test", files=("r",)),
    Line("--initial_regressor --final_regressor",
         ("-d {train} --final_regressor {m}", "--initial_regressor {m} -d {test}"),
         "0001", "0001-test"),
    Line("-i, continued with --save_resume", ("-d {train} -f {m} --save_resume",
                                             "-i {m} -d {test} --save_resume"),
         "0002", "0002-test"),
    Line("-P 100", ("-d {train} -P 100",), "0002", table=True),
    Line("-P 1.5", ("-d {train} --progress 1.5",), "0002", table=True),
    Line("the table with a holdout (-c --passes 3)", ("-d {train} -c --passes 3 -k",),
         "0002", table=True),
    Line("the table with a holdout, -P 100", ("-d {train} -c --passes 2 -k -P 100",),
         "0002", table=True),
    Line("the table with --holdout_after", ("-d {train} --holdout_after 300",), "0002",
         table=True),
    Line("the table with a holdout, --oaa 4", ("-d {train} --oaa 4 -c --passes 3 -k",),
         "probabilities-all", table=True),
    Line("--bit_precision 12", ("-d {train} --bit_precision 12 --loss_function logistic",),
         "rcv1"),
    Line("--random_seed 7", ("-d {train} --random_seed 7",), "0002"),
    Line("--initial_weight 0.1", ("-d {train} --initial_weight 0.1",), "0002"),
    Line("--decay_learning_rate 0.5", ("-d {train} -c --passes 5 --decay_learning_rate 0.5",),
         "0002"),
    Line("-C 0.5", ("-d {train} -C 0.5",), "0002"),
    Line("--constant 2 --sgd", ("-d {train} --constant 2 --sgd -l 0.1",), "0002"),
    Line("--examples 300", ("-d {train} --examples 300",), "0002"),
    Line("--examples --passes", ("-d {train} -c --passes 3 --examples 300",), "0002"),
    Line("--hash all", ("-d {train} --hash all --loss_function logistic",), "rcv1"),
    Line("--ngram 2", ("-d {train} --ngram 2 --loss_function logistic",), "rcv1"),
    Line("--ngram 3 --skips 1", ("-d {train} --ngram 3 --skips 1",), "rcv1"),
    Line("--ngram f2 -q ff", ("-d {train} --ngram f2 -q ff --loss_function logistic",),
         "rcv1"),
    Line("--audit", ("-d {train} --audit",), "0002"),
    Line("--sort_features", ("-d {train} --sort_features --loss_function logistic",), "rcv1"),
    Line("--leave_duplicate_interactions", ("-d {train} -q ff -q ff "
                                            "--leave_duplicate_interactions",), "0002"),
    Line("--loss_function quantile", ("-d {train} --loss_function quantile",), "0002"),
    Line("--quantile_tau 0.3", ("-d {train} --loss_function quantile --quantile_tau 0.3",),
         "0002"),
    Line("quantile --sgd", ("-d {train} --loss_function quantile --quantile_tau 0.8 --sgd",),
         "0002"),
    Line("--loss_function poisson", ("-d {train} --loss_function poisson",), "0002"),
    Line("poisson on counts", ("-d {train} --loss_function poisson",), "0001"),
    Line("--loss_function classic", ("-d {train} --loss_function classic",), "0002"),
    Line("classic --invariant", ("-d {train} --loss_function classic --invariant",), "0002"),
    Line("--binary", ("-d {train} --binary --loss_function logistic -p {p}",), "rcv1",
         files=("p",)),
    Line("--binary on 0/1 labels", ("-d {train} --binary --loss_function logistic",), "0001"),
    Line("--binary --link logistic", ("-d {train} --binary --link logistic --loss_function "
                                      "logistic -p {p}",), "rcv1", files=("p",)),
    Line("--sort_features on 0002", ("-d {train} --sort_features",), "0002"),
    Line("--ngram 2 --ignore f", ("-d {train} --ngram 2 --ignore f",), "0002"),
    Line("--ftrl --decay_learning_rate", ("-d {train} --ftrl -c --passes 3 "
                                          "--decay_learning_rate 0.5",), "0002"),
    Line("--link logistic", ("-d {train} --link logistic --loss_function logistic -p {p}",),
         "rcv1", files=("p",)),
    Line("--link glf1", ("-d {train} --link glf1 --loss_function logistic -p {p}",), "rcv1",
         files=("p",)),
    Line("--link poisson", ("-d {train} --link poisson --loss_function poisson -p {p}",),
         "0002", files=("p",)),
    # --sgd at VW's own default rate (-l 10), and 0/1 labels under logistic and hinge
    Line("--sgd", ("-d {train} --sgd",), "0002-all"),
    Line("--sgd -l 10", ("-d {train} --sgd -l 10",), "0002-all"),
    Line("--sgd -l 10 (0001)", ("-d {train} --sgd -l 10",), "0001-all"),
    Line("--sgd --initial_t 10 --power_t 0.25",
         ("-d {train} --sgd --initial_t 10 --power_t 0.25",), "0001-all"),
    Line("-q ff --sgd", ("-d {train} -q ff --sgd",), "0002-all"),
    Line("0/1 labels, logistic", ("-d {train} --loss_function logistic",), "0001-all"),
    Line("0/1 labels, hinge", ("-d {train} --loss_function hinge",), "0001-all"),
    Line("0/1 labels, logistic --sgd", ("-d {train} --loss_function logistic --sgd",), "0001-all"),
    Line("0/1 labels, logistic, passes", ("-d {train} --loss_function logistic -c --passes 3",),
         "0001-all"),
    # VW's parameter-free learners and one-against-all, through sl vw (issue 26's options)
    Line("--coin", ("-d {train} --coin",), "0002"),
    Line("--pistol --ftrl_alpha --ftrl_beta", ("-d {train} --pistol --ftrl_alpha 2 "
                                                "--ftrl_beta 0.25",), "0002"),
    Line("--freegrad --restart --project", ("-d {train} --freegrad --restart --project "
                                             "--fepsilon 2",), "0002"),
    Line("-q ff --freegrad", ("-d {train} -q ff --freegrad --loss_function logistic",),
         "rcv1"),
    Line("--oaa 10", ("-d {train} --oaa 10",), "multiclass-all"),
    Line("--oaa 4 -q ff -p", ("-d {train} --oaa 4 -q ff -p {p}",), "probabilities-all",
         files=("p",)),
    Line("--oaa 4 --probabilities -f, then -t -i",
         ("-d {train} --oaa 4 --loss_function logistic --probabilities -f {m}",
          "-t -i {m} -d {test} --loss_function logistic --probabilities"),
         "probabilities", "probabilities-test"),
    Line("--oaa 4 --loss_function hinge --passes 3",
         ("-d {train} --oaa 4 --loss_function hinge -c --passes 3 --holdout_off",),
         "probabilities-all"),
    # labels 0..K-1: VW's rule (the first learned label 0 decides) and --indexing
    Line("--oaa 10, labels 0..9", ("-d {train} --oaa 10 -p {p}",), "multiclass0-all",
         files=("p",)),
    Line("--oaa 4 -p, labels 0..3", ("-d {train} --oaa 4 -p {p}",), "probabilities0-all",
         files=("p",)),
    Line("--oaa 4 --probabilities -p, labels 0..3",
         ("-d {train} --oaa 4 --loss_function logistic --probabilities -p {p}",),
         "probabilities0-all", files=("p",)),
    Line("--oaa 4 --indexing 0 --probabilities -f, then -t -i",
         ("-d {train} --oaa 4 --indexing 0 --loss_function logistic --probabilities -f {m}",
          "-t -i {m} -d {test} --loss_function logistic --probabilities -p {p}"),
         "probabilities0", "probabilities0-test", files=("p",)),
    Line("--oaa 4 -f, then -t -i, labels 0..3 (-t reads them 1..K)",
         ("-d {train} --oaa 4 -f {m}", "-t -i {m} -d {test} -p {p}"),
         "probabilities0", "probabilities0-test", files=("p",)),
    Line("--oaa 4 --indexing 1, labels 0..3 (0 is no class)",
         ("-d {train} --oaa 4 --indexing 1 -p {p}",), "probabilities0-all", files=("p",)),
    Line("--oaa 4 --ftrl --passes 2, labels 0..3",
         ("-d {train} --oaa 4 --ftrl -c --passes 2 --holdout_off",), "probabilities0-all"),
    Line("--oaa 4 --passes 3 with a holdout, labels 0..3 (table)",
         ("-d {train} --oaa 4 -c -k --passes 3 --holdout_period 3",), "probabilities0-all",
         table=True),
    # what sl vw writes, byte for byte as vw writes it (issue 37)
    # (-r of a margin outside the labels' range differs: sl's kernels give the clipped one)
    Line("bytes: -p", ("-d {train} -p {p}",), "0002", exact=("p", "stderr")),
    Line("bytes: -p on every pass", ("-d {train} -c -k --passes 3 -p {p}",), "0002",
         exact=("p",)),
    Line("bytes: -p --link logistic --binary", ("-d {train} --loss_function logistic --link "
                                                "logistic -p {p} -r {r}",), "rcv1",
         exact=("p", "r", "stderr")),
    Line("bytes: -t -i -p -r, squared loss reported",
         ("-d {train} -f {m} --loss_function logistic", "-t -i {m} -d {test} -p {p} -r {r}"),
         "rcv1", "rcv1-test", exact=("p", "r", "stderr")),
    Line("bytes: --oaa -p -r", ("-d {train} --oaa 4 -p {p} -r {r}",), "probabilities0-all",
         exact=("p", "r")),
    Line("bytes: --oaa --probabilities -p", ("-d {train} --oaa 4 --loss_function logistic "
                                             "--probabilities -p {p}",), "probabilities-all",
         exact=("p", "stderr")),
    Line("bytes: --readable_model --invert_hash", ("-d {train} --readable_model {rm} "
                                                   "--invert_hash {ih}",), "0002",
         exact=("rm", "ih")),
    Line("bytes: --readable_model --predict_only_model --l1",
         ("-d {train} --readable_model {rm} --invert_hash {ih} --predict_only_model "
          "--l1 1e-5",), "0002", exact=("rm", "ih", "stderr")),
    Line("bytes: --readable_model --l2 --sgd", ("-d {train} --readable_model {rm} --l2 1e-4 "
                                                "--sgd",), "0002", exact=("rm",)),
    Line("bytes: --readable_model --ftrl -q Tf", ("-d {train} --readable_model {rm} --ftrl "
                                                  "-q Tf --power_t 0.3",), "0002",
         exact=("rm",)),
    # (0002: 14 features an example; rcv1's 270 make 3 million cubic names an example, which
    # sl names in Python: 30 minutes and 8 GB where this takes 2 s)
    Line("bytes: --invert_hash -q ff --cubic fff", ("-d {train} --invert_hash {ih} -q ff "
                                                    "--cubic fff",), "0002", exact=("ih",)),
    Line("bytes: --invert_hash --oaa -q ff", ("-d {train} --oaa 4 -q ff --invert_hash {ih}",),
         "probabilities-all", exact=("ih",)),
    Line("bytes: --invert_hash --ngram --skips -q", ("-d {train} --invert_hash {ih} --ngram f2 "
                                                      "--skips f1 -q ff",), "rcv1",
         exact=("ih",)),
    Line("bytes: --readable_model of a continued model (-i)",
         ("-d {train} -f {m}", "-d {test} -i {m} --readable_model {rm} --invert_hash {ih}"),
         "0002", "0002-test", exact=("rm", "ih", "stderr")),
    Line("bytes: --readable_model, passes", ("-d {train} -c -k --passes 3 --readable_model "
                                             "{rm}",), "0002", exact=("rm",)),
    Line("bytes: --audit", ("-d {train} --audit",), "0002", exact=("audit", "stderr")),
    Line("bytes: --audit --ftrl -q ff", ("-d {train} --audit --ftrl -q ff --loss_function "
                                         "logistic",), "rcv1", exact=("audit",)),
    Line("bytes: --audit --ngram -q", ("-d {train} --audit --ngram f2 -q Tf --noconstant",),
         "0002", exact=("audit",)),
    Line("bytes: --audit --oaa -q ff", ("-d {train} --audit --oaa 4 -q ff",), "probabilities0-all",
         exact=("audit",)),
    Line("bytes: --audit --cubic --ignore_linear", ("-d {train} --audit --cubic fff "
                                                    "--ignore_linear f",), "0002",
         exact=("audit",)),
    Line("bytes: --audit -q Tf --l1 --l2", ("-d {train} --audit -q Tf --l1 1e-5 --l2 1e-4",),
         "0002", exact=("audit",)),
    Line("bytes: stderr, --pistol -q Tf --keep",
         ("-d {train} -q Tf --pistol --keep f",), "0002", exact=("stderr",)),
    Line("bytes: stderr, --l1 --l2 --ignore -b", ("-d {train} --l1 1e-6 --l2 1e-5 --ignore T "
                                                  "-b 20 -f {m}",), "0002", exact=("stderr",)),
    Line("bytes: stderr, hinge", ("-d {train} --loss_function hinge",), "rcv1",
         exact=("stderr",)),
    Line("bytes: stderr, --holdout_after", ("-d {train} --holdout_after 300",), "0002",
         exact=("stderr",)),
]  # fmt: skip
"""VW command lines, each run by ``vw`` and by ``sl vw`` (:func:`run_lines`)."""


def _line_data(tmp: Path) -> dict[str, tuple[Path, Path]]:
    """(what VW reads, what sl reads: the same file) for each data set of
    :data:`VW_LINES`: ``-all``
    the whole file, ``-test`` its last lines, and without a suffix the others."""
    import gzip

    out = {}
    for name, path, test in (("0001", "0001.dat.gz", 50), ("0002", "0002.dat.gz", 200),
                             ("rcv1", "rcv1_smaller.dat.gz", 50), ("multiclass", "multiclass", 2),
                             ("probabilities", "probabilities.dat.gz", 50)):  # fmt: skip
        with (gzip.open if path.endswith(".gz") else open)(VW_FILES / path, "rt") as f:
            lines = f.readlines()
        sets = [(name, lines)]
        if name in ("multiclass", "probabilities"):  # and with the labels 0..K-1
            sets.append((f"{name}0", [f"{int(ln.split(' ', 1)[0]) - 1} {ln.split(' ', 1)[1]}"
                                      for ln in lines]))  # fmt: skip
        for stem, every in sets:
            for key, part in ((stem, every[:-test]), (f"{stem}-test", every[-test:]),
                              (f"{stem}-all", every)):  # fmt: skip
                theirs = tmp / f"{key}.vw"
                theirs.write_text("".join(part))
                out[key] = (theirs, theirs)
    return out


def _cell(text: str | float | None) -> float:
    """A table's loss as a number: VW's (and sl's) "n.a." and "unknown" are NaN."""
    try:
        return float(text)
    except (TypeError, ValueError):  # None: the report's null
        return math.nan


def _vw_run(argv: str, table: bool = False) -> tuple[float, list]:
    """``vw argv`` in this process; (progressive loss, the table's lines: example counter,
    average and since-last loss, holdout mark)."""
    import os

    if table:  # the table: from a vw process's stderr
        import subprocess

        r = subprocess.run([sys.executable, "-m", "vowpalwabbit", *argv.split()],
                           capture_output=True, text=True, check=True)  # fmt: skip
        counters = []
        for row in r.stderr.splitlines():
            cols = row.split()
            if len(cols) >= 7 and cols[2].isdigit() and not row.startswith(("average", "loss")):
                counters.append((int(cols[2]), _cell(cols[0]), _cell(cols[1]), cols[-1] == "h"))
        argv += " --quiet"
    else:
        counters = []
    from vowpalwabbit import Workspace

    saved = os.dup(1)  # --audit prints on stdout
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        ws = Workspace(argv + ("" if table else " --quiet"))
        try:
            return ws.get_sum_loss() / ws.get_weighted_examples(), counters
        finally:
            ws.finish()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _sl_run(argv: str, tmp: Path) -> tuple[float, list]:
    """``sl vw argv`` in this process; (progressive loss, the table's lines as
    :func:`_vw_run`'s)."""
    from click.testing import CliRunner

    from streamlearn.cli import cli

    rep = tmp / "sl-report.json"
    args = ["vw", *argv.split(), "--report", str(rep), "--quiet"]
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    if r.exit_code != 0:
        raise RuntimeError(f"sl {' '.join(args)} failed ({r.exit_code}): {r.output}")
    got = json.loads(rep.read_text())
    return float(got["average_loss"]), [
        (int(row[2]), _cell(row[0]), _cell(row[1]), bool(row[7])) for row in got["curve"]
    ]


def _same_table(a: list, b: list) -> bool:
    """The same lines: counters and holdout marks equal, losses within VW's 6 decimals."""
    if len(a) != len(b):
        return False
    for (n, avg, since, h), (m, avg2, since2, h2) in zip(a, b, strict=True):
        if n != m or h != h2:
            return False
        for x, y in ((avg, avg2), (since, since2)):
            if math.isnan(x) != math.isnan(y) or abs(x - y) > 1e-6:
                return False
    return True


PRINTED = 5e-7 + 2.0**-23
"""How far apart two written predictions may be: VW prints 6 decimals (5e-7), and
computes its links in float32 (one rounding of a value below 2: 2^-23)."""


def _values(path: Path) -> np.ndarray:
    """A predictions file's numbers, line by line: the first column (a tag follows it),
    or every ``class:value`` of a --probabilities line, both numbers."""
    out = []
    for line in path.read_text().splitlines():
        first = line.split(" ", 1)[0]
        if ":" not in first:
            out.append(float(first))
            continue
        for cell in line.split():
            c, v = cell.split(":")
            out += [float(c), float(v)]
    return np.array(out)


def _same_values(a: Path, b: Path) -> float:
    """The largest difference between two predictions files, beyond 1e-6 relative."""
    x = _values(a)
    y = _values(b)
    if x.shape != y.shape:
        return float("inf")
    return float(np.max(np.abs(x - y) - 1e-6 * np.abs(x))) if x.size else 0.0


def _vw_outputs(argv: str) -> tuple[bytes, bytes]:
    """``vw argv`` as a process: (stdout, stderr)."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", *argv.split()],
                       capture_output=True, check=True)  # fmt: skip
    return r.stdout, r.stderr


def _sl_outputs(argv: str) -> tuple[bytes, bytes]:
    """``sl vw argv`` in this process: (stdout, stderr)."""
    from click.testing import CliRunner

    from streamlearn.cli import cli

    r = CliRunner().invoke(cli, ["vw", *argv.split()], catch_exceptions=False)
    if r.exit_code != 0:
        raise RuntimeError(f"sl vw {argv} failed ({r.exit_code}): {r.output}")
    return r.stdout_bytes, r.stderr_bytes


def _same_bytes(line: Line, n: int, tmp: Path, outputs: dict, swap: list) -> dict[str, bool]:
    """Each of ``line.exact``: equal bytes in both programs' outputs."""
    same = {}
    for what in line.exact:
        if what in ("audit", "stderr"):
            # (VW's logger puts its [info] notes on stdout too: sl writes them there as well,
            # among --audit's lines where VW does)
            theirs, ours = outputs["vw"][what], outputs["sl"][what]
            for sl_path, vw_path in swap:  # file names are each program's own
                ours = ours.replace(str(sl_path).encode(), str(vw_path).encode())
        else:
            theirs = (tmp / f"{n}.{what}.vw").read_bytes()
            ours = (tmp / f"{n}.{what}.sl").read_bytes()
        same[what] = theirs == ours
    return same


def run_lines(lines: list[Line], tolerance: float, out=sys.stdout) -> list[dict]:
    """Every VW command line by both programs; one row per line (printed as it goes)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="sl-parity-lines-") as d:
        tmp = Path(d)
        data = _line_data(tmp)
        for n, line in enumerate(lines):
            got = {}
            outputs: dict[str, dict[str, bytes]] = {}
            named = {}
            for who, k in (("vw", 0), ("sl", 1)):
                names = {"train": data[line.data][k],
                         "test": data[line.test][k] if line.test else "",
                         **{f: tmp / f"{n}.{f}.{who}"
                            for f in ("m", "p", "r", "c", "rm", "ih")}}  # fmt: skip
                named[who] = names
                for step in line.steps:
                    argv = step.format(**names)
                    got[who] = (_vw_run(argv, line.table) if who == "vw"
                                else _sl_run(argv, tmp))  # fmt: skip
                if {"audit", "stderr"} & set(line.exact):  # the last step again, as a user
                    argv = line.steps[-1].format(**names)
                    std = _vw_outputs(argv) if who == "vw" else _sl_outputs(argv)
                    outputs[who] = {"audit": std[0], "stderr": std[1]}
            (theirs, vw_table), (ours, sl_table) = got["vw"], got["sl"]
            rel = abs(ours - theirs) / abs(theirs) if theirs else abs(ours)
            files = {f: _same_values(tmp / f"{n}.{f}.vw", tmp / f"{n}.{f}.sl")
                     for f in line.files}  # fmt: skip
            swap = [(named["sl"][key], named["vw"][key]) for key in named["sl"]]
            exact = _same_bytes(line, n, tmp, outputs, swap)
            ok = rel <= tolerance and all(v <= PRINTED for v in files.values())
            ok = ok and all(exact.values())
            if line.table:
                ok = ok and _same_table(vw_table, sl_table)
            row = {"line": line.name, "command": " ; ".join(line.steps), "data": line.data,
                   "vw": theirs, "sl": ours, "rel": rel, "files": files, "exact": exact,
                   "ok": ok}  # fmt: skip
            if line.table:
                row["table"] = {"vw": vw_table, "sl": sl_table}
            rows.append(row)
            mark = "ok " if ok else "MISS"
            extra = "".join(f" {f}: {v:.1e}" for f, v in files.items())
            extra += "".join(f" {f} {'same bytes' if v else 'OTHER BYTES'}"
                             for f, v in exact.items())  # fmt: skip
            if line.table:
                extra += f" table {'same' if _same_table(vw_table, sl_table) else 'DIFFERS'}"
            print(f"{mark} {line.data:<8} {line.name:<40} vw {theirs:<14.9g} sl {ours:<14.9g} "
                  f"rel {rel:.1e}{extra}", file=out, flush=True)  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the subset the test suite runs")
    ap.add_argument("--lines", action="store_true",
                    help="only the whole VW command lines (sl vw next to vw)")
    ap.add_argument("--tolerance", type=float, default=1e-6)
    ap.add_argument("--data", action="append", help="only these data sets (repeatable)")
    ap.add_argument("--only", help="only configurations whose name contains this")
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args()
    try:
        import vowpalwabbit  # noqa: F401
    except ImportError:
        sys.exit("vowpalwabbit is not installed: pip install -e '.[bench]'")
    datasets = [d for d in DATASETS if not args.quick or d.name in QUICK_DATA]
    if args.data:
        datasets = [d for d in datasets if d.name in args.data]
    configs = [c for c in CONFIGS if not args.quick or c[0] in QUICK_CONFIGS]
    if args.only:
        configs = [c for c in configs if args.only in c[0]]
    print("whole command lines: vw ARGV next to sl vw ARGV")
    line_rows = run_lines(
        [ln for ln in VW_LINES if not args.only or args.only in ln.name], args.tolerance
    )
    missed_lines = [r for r in line_rows if not r["ok"]]
    print(f"\n{len(line_rows)} command lines, {len(missed_lines)} beyond {args.tolerance:g}\n")
    if args.lines:
        if args.json:
            args.json.write_text(json.dumps(line_rows, indent=1))
        sys.exit(1 if missed_lines else 0)
    rows = run(datasets, configs, args.tolerance)
    worst = max(rows, key=lambda r: r["rel"])
    missed = [r for r in rows if not r["ok"]]
    print(f"\n{len(rows)} runs, {len(missed)} beyond {args.tolerance:g}; "
          f"worst rel {worst['rel']:.1e} ({worst['data']}, {worst['loss']}, {worst['config']})")
    if args.json:
        args.json.write_text(json.dumps({"configurations": rows, "lines": line_rows}, indent=1))
    sys.exit(1 if missed or missed_lines else 0)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
