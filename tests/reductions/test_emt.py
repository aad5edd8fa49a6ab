"""``--emt`` (:mod:`streamlearn.reductions.emt`, :mod:`streamlearn.learners.emt_state`,
:mod:`streamlearn.learners.emt`): against VW 9.11.9 on multiclass data of our own (each
scorer, router and initial distance, a bound on the memories, several seeds, passes with a
holdout): the progress table and ``-p`` byte for byte; and the refusals."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reductions.test_lrq import _sl, _stderr, needs_vw


def _data(path: Path, n: int, seed: int) -> None:
    """Multiclass lines: classes 0..4 and a large one, features whose values lean toward
    the class (a slot now and then twice), an importance now and then (0 too), a line with
    no label or ``-1``, an empty line of features."""
    rnd = random.Random(seed)
    lines = []
    for _ in range(n):
        y = rnd.choice([0, 1, 2, 3, 4, 1000])
        feats = " ".join(f"f{rnd.randrange(9)}:{rnd.gauss(y % 5 / 4, 0.6):.3f}"
                         for _ in range(rnd.randint(0, 5)))  # fmt: skip
        extra = f" |b c{y % 3}" if rnd.random() < 0.4 else ""
        label = str(y)
        r = rnd.random()
        if r < 0.05:
            label = ""
        elif r < 0.08:
            label = "-1"
        elif r < 0.2:
            label += f" {rnd.choice(['0.5', '2', '0'])}"
        lines.append(f"{label} |a {feats}{extra}")
    path.write_text("\n".join(lines) + "\n")


def _vw(args: str, cwd: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args.split()], cwd=cwd,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return out.stderr


CASES = [
    ("", 1),
    ("--emt_leaf 6", 2),
    ("--emt_leaf 5 --emt_scorer not_self_consistent_rank", 3),
    ("--emt_leaf 4 --emt_scorer not_self_consistent_rank --emt_initial euclidean", 4),
    ("--emt_leaf 7 --emt_initial gaussian --random_seed 5", 5),
    ("--emt_leaf 3 --emt_router random", 6),
    ("--emt_leaf 4 --emt_tree 12", 7),
    ("--emt_leaf 5 --emt_scorer random", 8),
    ("--emt_leaf 5 --emt_scorer distance --emt_initial cosine", 9),
    ("--emt_leaf 5 --emt_scorer distance --emt_initial euclidean", 10),
    ("--emt_leaf 5 --emt_scorer distance --emt_initial none", 11),
    ("--emt_leaf 5 --sgd -l 0.3 -b 5", 12),
    ("--emt_leaf 4 --passes 3 -c -k", 13),
]


@needs_vw
@pytest.mark.parametrize(("args", "seed"), CASES)
def test_emt_is_vws_byte_for_byte(tmp_path: Path, args: str, seed: int) -> None:
    _data(tmp_path / "d.vw", 150, seed)
    line = f"--emt {args} -d d.vw".replace("  ", " ")
    vw_err = _vw(f"{line} -p vw.p", tmp_path)
    out = _sl([*line.split(), "-p", "sl.p"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert _stderr(out.stderr.replace("sl.p", "vw.p"), "d.vw") == _stderr(vw_err, "d.vw")


@pytest.mark.parametrize(("args", "says"), [
    ("-f m.model", "--emt with -f, -i or --readable_model"),
    ("-q ab", "--emt with --quadratic"),
    ("--oaa 3", "--emt with --oaa"),
    ("--loss_function logistic", "--emt with --loss_function logistic"),
    ("--emt_scorer nearest", "--emt_scorer nearest: not one of"),
    ("-r raw.txt", "--emt with --probabilities or -r"),
])  # fmt: skip
def test_refusals_are_one_line_before_reading(tmp_path: Path, args: str, says: str) -> None:
    out = _sl(["--emt", *args.split(), "-d", "missing.vw"], tmp_path)
    assert out.returncode == 2
    assert says in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
