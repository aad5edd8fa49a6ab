"""``--memory_tree`` (:mod:`streamlearn.reductions.memory_tree`,
:mod:`streamlearn.learners.memory_tree_state`, :mod:`streamlearn.learners.memory_tree`):
against VW 9.11.9 on data of our own (multiclass lines over several namespaces with weights,
unlabeled lines and a tag now and then; multilabel lines under ``--oas``), several option
sets (``--online``, ``--learn_at_leaf``, dreams, ``--dream_at_update``, ``--alpha``, seeds,
passes with and without a holdout): the progress table, the summary and ``-p`` byte for
byte (VW's progress messages of its tree, ``depth N`` and ``######### Current Pass``, which
sl does not print, left out); and the refusals."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reductions.test_lrq import _sl, _stderr, needs_vw


def _data(path: Path, n: int, seed: int, multilabel: bool = False) -> None:
    """Lines over namespaces a, b, zz and Q (numbered and named features, values leaning
    toward the class, a slot now and then twice), an importance, a tag or no label now and
    then; ``multilabel``: 1 to 3 classes of 0..7 in any order, every line labeled."""
    rnd = random.Random(seed)
    lines = []
    for _ in range(n):
        y = rnd.randint(1, 6)
        parts = []
        for ns in rnd.sample(["a", "b", "zz", "Q"], rnd.randint(1, 3)):
            feats = " ".join(
                f"{rnd.choice(['w', ''])}{rnd.randrange(30)}:{rnd.gauss(y / 3, 0.8):.4f}"
                for _ in range(rnd.randint(1, 5)))  # fmt: skip
            parts.append(f"|{ns} {feats}")
        if multilabel:
            labels = rnd.sample(range(8), rnd.randint(1, 3))
            label = ",".join(str(c) for c in labels)
        else:
            label = str(y)
            r = rnd.random()
            if r < 0.08:
                label = ""
            elif r < 0.2:
                label += f" {rnd.choice(['0.5', '2', '3'])}"
            if label and rnd.random() < 0.1:
                label += f" 'tag{rnd.randrange(9)}"
        lines.append(f"{label} {' '.join(parts)}")
    path.write_text("\n".join(lines) + "\n")


def _vw(args: str, cwd: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args.split()], cwd=cwd,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return out.stderr


def _shown(text: str) -> list[str]:
    """The stderr lines compared: VW's progress messages of its tree left out."""
    return [ln for ln in _stderr(text, "d.vw")
            if not ln.startswith(("depth ", "######### Current Pass"))]  # fmt: skip


CASES = [
    ("--memory_tree 20 --leaf_example_multiplier 2", 1),
    ("--memory_tree 3 --max_number_of_labels 4", 2),
    ("--memory_tree 30 --online --learn_at_leaf --dream_repeats 3 --leaf_example_multiplier 3",
     3),
    ("--memory_tree 50 --online --dream_repeats 2 --leaf_example_multiplier 2 -b 10 --alpha 0.5 "
     "--random_seed 7", 4),
    ("--memory_tree 20 --online --learn_at_leaf --dream_repeats 3 --leaf_example_multiplier 3 "
     "--passes 3 -c -k --holdout_off", 5),
    ("--memory_tree 40 --learn_at_leaf --online --dream_at_update 1 --leaf_example_multiplier 2 "
     "--passes 2 -c -k", 6),
    ("--memory_tree 16 --top_K 3 --leaf_example_multiplier 1 -l 0.1 --power_t 0.3", 7),
    ("--memory_tree 20 --online --learn_at_leaf --l2 1e-4 --noconstant --passes 2 -c -k", 8),
    ("--memory_tree 20 --online --learn_at_leaf --normalized --power_t 0", 9),
]  # fmt: skip
OAS_CASES = [
    ("--memory_tree 20 --oas --max_number_of_labels 8 --leaf_example_multiplier 2", 11),
    ("--memory_tree 30 --oas --max_number_of_labels 8 --leaf_example_multiplier 2 --online "
     "--learn_at_leaf --dream_repeats 3 --passes 2 -c -k --holdout_off", 12),
    ("--memory_tree 30 --oas --max_number_of_labels 8 --leaf_example_multiplier 3 --online "
     "--dream_repeats 2 --passes 3 -c -k", 13),
]  # fmt: skip


def _compare(tmp_path: Path, args: str) -> None:
    line = f"{args} -d d.vw"
    vw_err = _vw(f"{line} -p vw.p", tmp_path)
    out = _sl([*line.split(), "-p", "sl.p"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert _shown(out.stderr.replace("sl.p", "vw.p")) == _shown(vw_err)


@needs_vw
@pytest.mark.parametrize(("args", "seed"), CASES)
def test_memory_tree_is_vws_byte_for_byte(tmp_path: Path, args: str, seed: int) -> None:
    _data(tmp_path / "d.vw", 160, seed)
    _compare(tmp_path, args)


@needs_vw
@pytest.mark.parametrize(("args", "seed"), OAS_CASES)
def test_oas_is_vws_byte_for_byte(tmp_path: Path, args: str, seed: int) -> None:
    _data(tmp_path / "d.vw", 120, seed, multilabel=True)
    _compare(tmp_path, args)


@pytest.mark.parametrize(("args", "says"), [
    ("-f m.model", "--memory_tree with -f, -i or --readable_model"),
    ("--readable_model r.txt", "--memory_tree with -f, -i or --readable_model"),
    ("-q ab", "--memory_tree with --quadratic"),
    ("--oaa 3", "--memory_tree with --oaa"),
    ("--sgd", "--memory_tree with gd's plain update"),
    ("--normalized", "--memory_tree with --normalized alone and a --power_t"),
    ("--max_number_of_labels x", "--max_number_of_labels x: a count"),
    ("-r raw.txt", "--memory_tree with --probabilities or -r"),
    ("--audit", "--audit with --memory_tree"),
])  # fmt: skip
def test_refusals_are_one_line_before_reading(tmp_path: Path, args: str, says: str) -> None:
    out = _sl(["--memory_tree", "10", *args.split(), "-d", "missing.vw"], tmp_path)
    assert out.returncode == 2
    assert says in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_memory_tree_zero_is_refused(tmp_path: Path) -> None:
    out = _sl(["--memory_tree", "0", "-d", "missing.vw"], tmp_path)
    assert out.returncode == 2
    assert "--memory_tree 0 is not supported by sl" in out.stderr


def test_its_options_alone_are_ignored_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "d.vw").write_text("1 |a x\n0 |a y\n")
    out = _sl(["--online", "--dream_repeats", "3", "-d", "d.vw"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "options of --memory_tree, ignored" in out.stderr
