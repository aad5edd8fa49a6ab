"""``--cats K`` and ``--cats_pdf K`` played a block at a time
(:func:`streamlearn.learners.cats_block.play_block`, driven by ``run/cats_pdf.py``).

First the kernel against the per-example stack it replaced (the tree's kernels called
once per line, as ``run/cats.py``'s :class:`~streamlearn.run.cats.State` still does for
``--cbify_reg``): the same losses, actions, densities, tables, counts and generator, over
blocks of every size.  Then ``sl vw`` beside VW 9.11.9, compiled (``SL_JIT=1``: the
tiny inputs of ``test_cats_tree.py`` run interpreted), on data of our own over several
blocks: the whole stderr, ``-p``, readable models, and VW scoring sl's models as its own;
and the kernels interpreted give the compiled run's bytes.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.io.calabels import read_ca_labels
from streamlearn.io.parse import parse_bytes
from streamlearn.learners.base import G_N
from streamlearn.reductions import Multiline
from streamlearn.run.cats import State
from streamlearn.run.cats_pdf import _Play, shortest_texts
from streamlearn.run.cbzo import shortest
from tests.unix import SL_VW, VW_MODULE

F = np.float32


def _ca_text(n: int, seed: int, hi: float = 10.0, odd: bool = False) -> str:
    """``n`` lines of ``ca action:cost:pdf_value |a ...`` over ``[0, hi]`` (``odd``: with
    unlabeled lines, actions without cost or density, and actions beyond the range)."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        x = [round(rnd.uniform(0, 1), 2) for _ in range(4)]
        best = hi * (0.2 + 0.6 * x[0])
        a = round(rnd.uniform(0, hi), 3)
        cost = round(abs(a - best) / hi, 4)
        pdf = round(rnd.uniform(0.5, 2.0) / hi, 5)
        label = f"ca {a}:{cost}:{pdf} "
        if odd and i % 23 == 5:
            label = ""
        elif odd and i % 31 == 7:
            label = f"ca {a} "  # (no cost: VW's FLT_MAX, a test label)
        elif odd and i % 37 == 9:
            label = f"ca {round(hi * 1.2, 3)}:{cost}:{pdf} "
        feats = " ".join(f"f{rnd.randrange(40)}:{v}" for v in x)
        lines.append(f"{label}|a {feats} g{rnd.randrange(6)}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------ kernel vs per-example


def _old_loss(st, action, lab_action: float, cost: float, pdf: float) -> float:  # noqa: ANN001
    """``run/cats_pdf.py``'s ``_loss`` before the block kernel (VW's ``cats::get_loss``)."""
    k, lo, hi, bw = st.k, st.lo, st.hi, st.bw
    unit = F(F(hi - lo) / F(k))
    ac = F(F(action - lo) / unit)
    seg = min(k - 1, int(np.floor(ac)))
    centre = F(F(lo + F(F(seg) * unit)) + F(unit / F(2.0)))
    logged = F(lab_action)
    if F(logged - centre) <= bw and F(centre - logged) <= bw:
        actual_b = F(min(hi, F(centre + bw)) - max(lo, F(centre - bw)))
        with np.errstate(all="ignore"):
            return float(F(F(cost) / F(F(pdf) * actual_b)))
    return 0.0


def _old_block(st, b, lab, rows, sampled: bool, learning: bool) -> tuple:  # noqa: ANN001
    """The per-example loop ``run/cats_pdf.py`` ran before (State's methods per line)."""
    m = rows.shape[0]
    loss, leaf = np.zeros(m), np.zeros(m, dtype=np.int64)
    drawn, density = np.zeros(m, dtype=np.float32), np.zeros(m, dtype=np.float32)
    slots = np.empty(b.indices.shape[0], dtype=np.uint32)
    test = lab.test
    for e, r in enumerate(rows.tolist()):
        lo, hi = int(b.indptr[r]), int(b.indptr[r + 1])
        leaf[e] = st._tree(b, lo, hi)
        a, c, p = float(lab.action[r]), float(lab.cost[r]), float(lab.pdf[r])
        if sampled:
            action, pdf = st.sample(b, lo, hi)
            drawn[e], density[e] = action, pdf
            if lab.given[r]:
                loss[e] = _old_loss(st, F(action), a, c, p)
        else:
            st.pdf(b, lo, hi)
            loss[e] = c if lab.given[r] else 0.0
        if learning and not test[r]:
            st.learn_label(b, lo, hi, slots, F(a), F(c), F(p))
        st.gstate[G_N] += 1.0
    return loss, leaf, drawn, density


@pytest.mark.parametrize(("opts", "algo", "sampled", "learning"), [
    (dict(cats_k=8, bandwidth=1.5), "gd", True, True),
    (dict(cats_k=16, epsilon=0.3), "coin", True, True),
    (dict(cats_k=5, bandwidth=0.0), "gd", True, True),
    (dict(cats_pdf=8, bandwidth=2.0), "gd", False, True),
    (dict(cats_pdf=32, epsilon=0.0, bandwidth=0.4), "ftrl", False, True),
    (dict(cats_k=8), "gd", True, False),
])  # fmt: skip
def test_the_block_kernel_plays_as_the_per_example_stack(opts, algo, sampled, learning):
    ml = Multiline(reduction="cats", min_value=0.0, max_value=10.0, **opts)
    cfg = TrainConfig(bits=12, algo=algo, test_only=not learning)
    b = parse_bytes(_ca_text(700, 11, odd=True).encode(), bits=12, labels="cb", numbers="vw")
    lab = read_ca_labels(b, vw_numbers=True)
    old, new = State(ml, cfg), State(ml, cfg)
    play = _Play(new, sampled, learning)
    rows = np.flatnonzero(b.status == 0)
    assert rows.shape[0] > 600
    at = 0
    for size in (1, 2, 97, 0, 300, rows.shape[0]):  # blocks of every size, then the rest
        part = rows[at : at + size]
        want = _old_block(old, b, lab, part, sampled, learning)
        got = play.block(b, lab, part)
        for w, g in zip(want if sampled else want[:2], got, strict=False):
            np.testing.assert_array_equal(g, w)
        at += part.shape[0]
    assert np.array_equal(new.table, old.table) and np.array_equal(new.gstate, old.gstate)
    assert np.array_equal(new.counts, old.counts) and new.rng[0] == old.rng[0]
    assert (new.counts.sum() > 0) == learning


def test_shortest_texts_are_shortest_s():
    rng = np.random.default_rng(4)
    edges = [0.0, -0.0, 1e-4, -1e-4, 1e6, 1e16, 999999.94, math.inf, math.nan]
    x = np.concatenate([rng.uniform(0, 100, 3000), rng.uniform(-1e-3, 1e-3, 500),
                        10.0 ** rng.uniform(-9, 20, 2000), edges])  # fmt: skip
    x = x.astype(np.float32)
    assert shortest_texts(x) == [shortest(v) for v in x]


# ------------------------------------------------------------------- beside VW


def _run(prog: list[str], args: list[str], cwd, env: dict | None = None):  # noqa: ANN001, ANN202
    r = subprocess.run([sys.executable, "-m", *prog, *args], cwd=cwd, capture_output=True,
                       text=True, timeout=900, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r


def _stderr(text: str) -> list[str]:
    """The whole stderr but the lines naming files and sl's note of a kernel compiled."""
    return [ln for ln in text.splitlines()
            if not ln.startswith(("predictions =", "final_regressor =", "compiling "))]  # fmt: skip


_SETS = [
    ["--cats", "32", "--bandwidth", "1", "--min_value", "0", "--max_value", "10"],
    ["--cats", "16", "--epsilon", "0.2", "--bandwidth", "0.3", "--min_value", "0",
     "--max_value", "10", "--random_seed", "9"],
    ["--cats", "8", "--min_value", "0", "--max_value", "10", "--coin"],
    ["--cats", "64", "--bandwidth", "2.5", "--min_value", "-2", "--max_value", "12",
     "--epsilon", "0.01"],  # (VW aborts with --epsilon 0 there)
    ["--cats_pdf", "16", "--bandwidth", "0.8", "--min_value", "0", "--max_value", "10"],
    ["--cats_pdf", "4", "--epsilon", "0.5", "--min_value", "0", "--max_value", "10",
     "--ftrl"],
]  # fmt: skip


@pytest.mark.parametrize("opts", _SETS)
def test_the_block_path_gives_vw_s_numbers_and_models(tmp_path, opts):
    """40,000 lines (three blocks of the reader), compiled: stderr, ``-p``, ``-f`` (VW
    scores with it as with its own) and ``--readable_model`` as VW's."""
    pytest.importorskip("vowpalwabbit")
    n = 40_000 if opts is _SETS[0] else 6_000
    (tmp_path / "d.txt").write_text(_ca_text(n, len(opts)))
    env = dict(os.environ, SL_JIT="1")
    env.pop("NUMBA_DISABLE_JIT", None)
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = _run(prog, ["-d", "d.txt", *opts, "-p", f"{tag}.p", "-f", f"{tag}.m",
                        "--readable_model", f"{tag}.r"], tmp_path, env)  # fmt: skip
        out[tag] = _stderr(r.stderr)
    assert out["sl"] == out["vw"]
    assert any(ln.startswith("average loss") for ln in out["sl"])
    for ext in ("p", "r"):
        assert (tmp_path / f"sl.{ext}").read_text() == (tmp_path / f"vw.{ext}").read_text()
    got = {}
    for tag in ("vw", "sl"):
        _run(VW_MODULE, ["-d", "d.txt", "-t", "-i", f"{tag}.m", "-p", f"t{tag}.p"], tmp_path)
        got[tag] = (tmp_path / f"t{tag}.p").read_text()
    assert got["sl"] == got["vw"] and got["sl"]


@pytest.mark.parametrize("opts", [_SETS[1], _SETS[2], _SETS[4], _SETS[5]])
def test_models_move_both_ways(tmp_path, opts):
    """``-i``: a model VW or sl wrote, continued (and scored with ``-t``) by either, gives
    the same ``-p`` and stderr (suite lines 225, 227, 483)."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "a.txt").write_text(_ca_text(800, 3))
    (tmp_path / "b.txt").write_text(_ca_text(500, 4))
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        _run(prog, ["-d", "a.txt", *opts, "-f", f"{tag}.m"], tmp_path)
    for more in ([], ["-t"]):
        seen = {}
        for model in ("vw", "sl"):
            for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
                r = _run(prog, ["-d", "b.txt", "-i", f"{model}.m", "-p", "c.p", *more],
                         tmp_path)  # fmt: skip
                seen[model, tag] = ((tmp_path / "c.p").read_text(), _stderr(r.stderr))
        assert len(set(map(repr, seen.values()))) == 1, list(seen)
        assert any(ln.startswith("average loss") for ln in seen["vw", "sl"][1])


@pytest.mark.parametrize("opts", [
    ["--cats", "8", "--bandwidth", "1.2", "--min_value", "0", "--max_value", "10"],
    ["--cats_pdf", "8", "--min_value", "0", "--max_value", "10", "--epsilon", "0.1"],
    ["--cats", "8", "--min_value", "0", "--max_value", "10", "-t"],
])  # fmt: skip
def test_odd_labels_are_vw_s(tmp_path, opts):
    """Unlabeled lines, test labels (no cost) and actions beyond the range, compiled."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_ca_text(3000, 7, odd=True))
    env = dict(os.environ, SL_JIT="1")
    env.pop("NUMBA_DISABLE_JIT", None)
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = _run(prog, ["-d", "d.txt", *opts, "-p", f"{tag}.p"], tmp_path, env)
        out[tag] = (_stderr(r.stderr), (tmp_path / f"{tag}.p").read_text())
    assert out["sl"] == out["vw"]


@pytest.mark.parametrize("opts", [
    ["--cats", "8", "--bandwidth", "1.2", "--min_value", "0", "--max_value", "10"],
    ["--cats_pdf", "6", "--min_value", "0", "--max_value", "10", "--coin"],
])  # fmt: skip
def test_interpreted_and_compiled_runs_write_the_same_bytes(tmp_path, opts):
    """The kernel as plain Python (``NUMBA_DISABLE_JIT=1``, as for tiny inputs) and
    compiled: the same stderr, ``-p`` and models."""
    (tmp_path / "d.txt").write_text(_ca_text(400, 3, odd=True))
    out = {}
    for tag, jit in (("py", {"NUMBA_DISABLE_JIT": "1"}), ("jit", {"SL_JIT": "1"})):
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_DISABLE_JIT", "SL_JIT")}
        r = _run(SL_VW, ["-d", "d.txt", *opts, "-p", f"{tag}.p", "-f", f"{tag}.m",
                         "--readable_model", f"{tag}.r"], tmp_path, {**env, **jit})  # fmt: skip
        out[tag] = [_stderr(r.stderr)] + [(tmp_path / f"{tag}.{e}").read_bytes()
                                          for e in ("p", "m", "r")]  # fmt: skip
    assert out["py"] == out["jit"]
