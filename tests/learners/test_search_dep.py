"""The dependency parser of learning to search (``--search_task dep_parser``,
:mod:`streamlearn.reductions.search_dep`): its interactions against VW's generation written
plainly, then ``sl vw`` beside VW 9.11.9 on sentences of our own (loss, ``-p``, both
transition systems, one learner, cost-to-go, old-style labels, several passes), models both
ways, and one-line refusals.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests import unix
from tests.unix import SL_VW, VW_MODULE

M64 = (1 << 64) - 1
FNV = 16777619


def _sentences(seed: int, n: int = 6, old_style: bool = False) -> str:
    r = random.Random(seed)
    out = []
    for _ in range(n):
        size = r.randint(2, 7)
        for i in range(1, size + 1):
            head = r.choice([h for h in range(size + 1) if h != i])
            tag = 8 if head == 0 else r.randint(1, 12)
            label = str((head + 1) + 256 * tag) if old_style else f"{head},{tag}"
            out.append(f"{label} |w w{r.randrange(9)} |p p{r.randrange(4)}")
        out.append("")
    return "\n".join(out) + "\n"


def test_crosses_are_vw_s_pairs_and_triples_written_plainly():
    """VW's interactions, one feature at a time: pairs i x j (j >= i within a namespace),
    triples i x j x k (k >= j when the last two share one), hash
    ``(FNV·h1) ^ h2`` and ``(FNV·((FNV·h1) ^ h2)) ^ h3`` in 64 bits."""
    from streamlearn.reductions.search_dep import PAIRS, TRIPLES, _slot, crosses

    rng = np.random.default_rng(0)
    spaces = [rng.integers(0, 1 << 20, size=rng.integers(1, 4)).astype(np.uint64)
              for _ in range(14)]  # fmt: skip
    want = []
    for pair in PAIRS:
        a, b = (spaces[_slot(x)].tolist() for x in pair)
        for i in range(len(a)):
            for j in range(i if pair[0] == pair[1] else 0, len(b)):
                want.append(((FNV * a[i]) & M64) ^ b[j])
    for tri in TRIPLES:
        a, b, c = (spaces[_slot(x)].tolist() for x in tri)
        for i in range(len(a)):
            for j in range(len(b)):
                for k in range(j if tri[1] == tri[2] else 0, len(c)):
                    h = (FNV * (((FNV * a[i]) & M64) ^ b[j])) & M64
                    want.append(h ^ c[k])
    assert crosses(spaces).tolist() == want


def _both(tmp_path, args: list[str]) -> tuple:
    vw = unix.run_module(VW_MODULE, [*args, "-p", "vw.p"], tmp_path)
    sl = unix.run_module(SL_VW, [*args, "-p", "sl.p"], tmp_path)
    lines = [[ln for ln in r.stderr.splitlines()
              if ln.startswith(("average loss", "total feature"))] for r in (vw, sl)]  # fmt: skip
    return lines, (tmp_path / "vw.p").read_text(), (tmp_path / "sl.p").read_text()


CASES = [
    [],
    ["--transition_system", "2", "--search", "14"],
    ["--one_learner", "--search", "25", "--search_history_length", "3"],
    ["--one_learner", "--transition_system", "2", "--search", "26", "--search_rollout",
     "oracle"],
    ["--cost_to_go", "--search_rollout", "none", "--search_rollin", "mix_per_roll", "-b", "20"],
    ["--cost_to_go", "--one_learner", "--search_rollout", "none"],
    ["--old_style_labels"],
    ["--root_label", "0", "-c", "-k", "--passes", "3", "--holdout_off",
     "--search_rollout", "oracle"],
    ["--num_label", "13", "--search", "13", "-c", "-k", "--passes", "2"],
]  # fmt: skip


@pytest.mark.parametrize("args", CASES)
def test_sl_vw_gives_vw_s_loss_and_predictions(tmp_path, args):
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_sentences(3, old_style="--old_style_labels" in args))
    if "--search" not in args:
        args = [*args, "--search", "12"]
    lines, vw_p, sl_p = _both(tmp_path, ["-d", "d.txt", "--search_task", "dep_parser", *args])
    assert lines[1] == lines[0]
    assert sl_p == vw_p


@pytest.mark.parametrize("args", [[], ["--one_learner", "--transition_system", "2",
                                       "--search", "26"]])  # fmt: skip
def test_models_move_both_ways(tmp_path, args):
    """A model sl writes gives VW's ``-t`` predictions when VW reads it, and VW's model
    gives them when sl reads it; VW reads the two files as the same model."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_sentences(5))
    if "--search" not in args:
        args = [*args, "--search", "12"]
    train = ["-d", "d.txt", "--search_task", "dep_parser", *args, "-c", "-k", "--passes", "2"]
    unix.run_module(VW_MODULE, [*train, "-f", "vw.m"], tmp_path)
    unix.run_module(SL_VW, [*train, "-f", "sl.m"], tmp_path)
    out = unix.scored_both_ways("d.txt", tmp_path)
    assert len(set(out.values())) == 1, out
    text = {}
    for model in ("vw", "sl"):
        unix.run_module(VW_MODULE, ["-i", f"{model}.m", "-t", "--readable_model",
                                    f"{model}.txt", "--quiet"], tmp_path)  # fmt: skip
        text[model] = (tmp_path / f"{model}.txt").read_text().split("\n", 1)[1]
    assert text["sl"] == text["vw"]  # (all but the version line)


@pytest.mark.parametrize(("args", "said"), [
    (["--transition_system", "3"], "--transition_system 3"),
    (["--ftrl"], "--ftrl"),
    (["--nn", "5"], "another reduction"),
    (["--search_max_quad_ngram_length", "1"], "search_max_quad_ngram_length"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    (tmp_path / "d.txt").write_text(_sentences(1, n=2))
    r = unix.sl(["vw", "-d", "d.txt", "--search", "12", "--search_task", "dep_parser", *args],
                tmp_path, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2, r.stderr
    unix.one_line_error(r.stderr)
    assert said in r.stderr


def test_a_label_beyond_num_label_is_a_one_line_error(tmp_path):
    (tmp_path / "d.txt").write_text("0,13 |w a\n\n")
    r = unix.sl(["vw", "-d", "d.txt", "--search", "12", "--search_task", "dep_parser"],
                tmp_path, capture_output=True, text=True)  # fmt: skip
    assert r.returncode != 0
    unix.one_line_error(r.stderr)
    assert "invalid label 13" in r.stderr
