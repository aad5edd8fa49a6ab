"""``sl vw --csoaa K`` (:mod:`streamlearn.learners.csoaa`, :mod:`streamlearn.io.cslabels`)
against VW 9.11.9 on generated cost-sensitive data: average loss and ``-p`` byte for byte,
with listed subsets of classes, test lines, names, passes over the cache, and models read
by the other program; malformed labels skipped with their reasons."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.io.batch import Block
from streamlearn.io.cslabels import cs_batch
from streamlearn.io.parse import FMT_VW, parse_block

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ["ant", "bee", "cat", "dog"]


def _labels(text: bytes, k: int = 3, names: str = ""):
    cfg = TrainConfig(oaa=k, csoaa=True, named_labels=names, numbers="vw")
    inter = cfg.namespaces()
    block = Block(np.frombuffer(text, dtype=np.uint8).copy(), "t", 1)
    return cs_batch(parse_block(block, FMT_VW, 18, True, inter), k, inter.named)


def test_label_rows():
    b = _labels(b"1:0.5 3:2 |a x\n|a y\n2 3: 't| z\n4:1 |a\n1:x |a\n1:1 2:1 3:1 1:1 |a\n")
    assert b.status.tolist() == [0, 0, 0, 16, 20, 16]
    assert b.labels[0, :5].tolist() == [2.0, 1.0, 0.5, 3.0, 2.0]
    assert b.labels[1, 0] == 0.0
    assert b.labels[2, :5].tolist() == [2.0, 2.0, np.inf, 3.0, np.inf]
    assert bytes(b.block.data[b.tag_start[2] : b.tag_end[2]]) == b"t"


def test_named_label_rows():
    b = _labels(b"bee:1 ant:0 |a x\nemu:1 |a\n", k=2, names="ant,bee")
    assert b.status.tolist() == [0, 0]  # (VW: a name not in the list is class 0)
    assert b.labels[0, :5].tolist() == [2.0, 2.0, 1.0, 1.0, 0.0]
    assert b.labels[1, :3].tolist() == [1.0, 0.0, 1.0]
    cfg = TrainConfig(oaa=2, csoaa=True, named_labels="ant,bee", numbers="exact")
    block = Block(np.frombuffer(b"emu:1 |a\n", dtype=np.uint8).copy(), "t", 1)
    b = cs_batch(parse_block(block, FMT_VW, 18, True, cfg.namespaces()), 2, cfg.namespaces().named,
                 vw_numbers=False)  # fmt: skip
    assert b.status.tolist() == [33]  # (sl: skipped with its reason)


def _data(path, n: int, seed: int, named: bool = False) -> None:
    rnd = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(n):
            c = rnd.randrange(4)
            feats = " ".join(f"f{rnd.randrange(20)}:{rnd.random():.3f}" for _ in range(3))
            kind = rnd.random()
            classes = list(range(4))
            if kind < 0.15:
                label = ""
            else:
                if kind < 0.35:
                    classes = sorted(rnd.sample(range(4), 2))
                parts = []
                for j in classes:
                    cost = "" if kind > 0.9 else f":{abs(j - c) * 0.5 + rnd.random() * 0.1:.3f}"
                    name = "emu" if named and rnd.random() < 0.03 else NAMES[j]  # (not listed)
                    parts.append(f"{name if named else j + 1}{cost}")
                label = " ".join(parts)
            fh.write(f"{label} 'e{i}|f {feats} k{c}\n")


def _run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def _both(tmp_path, args: list[str]) -> None:
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, *args, "-p", f"{tag}.p", "-f", f"{tag}.m"], tmp_path)
        assert r.returncode == 0, r.stderr
        lines = [
            ln
            for ln in r.stderr.splitlines()
            if ln.startswith(("average loss", "number of examples", "weighted example"))
        ]
        (tmp_path / f"{tag}.loss").write_text("\n".join(lines))
    assert (tmp_path / "s.loss").read_text() == (tmp_path / "v.loss").read_text()
    assert (tmp_path / "s.p").read_bytes() == (tmp_path / "v.p").read_bytes()


@needs_vw
@pytest.mark.parametrize(("opts", "named", "n"), [
    ([], False, 400),
    (["--indexing", "1", "-q", "fk"], False, 400),
    (["-c", "-k", "--passes", "3", "--holdout_off"], False, 300),
    (["--named_labels", ",".join(NAMES)], True, 400),
    ([], False, 3000),  # the compiled kernels (beyond sl's interpreted tiny runs)
])  # fmt: skip
def test_against_vw(tmp_path, opts, named, n):
    _data(tmp_path / "d.txt", n, seed=len(opts) + n, named=named)
    _both(tmp_path, ["--csoaa", "4", "-d", "d.txt", *opts])
    # each program scores the other's model the same way
    for prog, model, tag in (("vowpalwabbit", "s.m", "vs"), ("streamlearn", "v.m", "sv")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-t", "-i", model, "-d", "d.txt", "-p", f"{tag}.p"], tmp_path)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "vs.p").read_bytes() == (tmp_path / "sv.p").read_bytes()


@needs_vw
@pytest.mark.parametrize("n", [8, 3000])  # (interpreted, and the compiled kernels)
def test_a_test_example_s_scores_are_not_clipped(tmp_path, n):
    """A line with no label scores every class unclipped (VW's csoaa asks its multipredict
    not to finalize): class 2 learned below the range [0, 1] on ``b`` wins there, where
    clipped scores tie at 0 and class 1 would."""
    lines = ["1:0 2:1 | a", "1:0 2:0 | a b"] * n + ["| b"]
    (tmp_path / "d.txt").write_text("\n".join(lines) + "\n")
    _both(tmp_path, ["--csoaa", "2", "-d", "d.txt"])
    assert (tmp_path / "s.p").read_text().splitlines()[-1] == "2"


@pytest.mark.slow
def test_a_cache_is_not_reused_for_other_labels(tmp_path):
    """The parsed cache holds labels as read: another label kind (or K, or names) rebuilds it."""
    (tmp_path / "d.txt").write_text("1:0 2:1 3:1 |a x\n2:0 1:1 3:1 |a y\n3:0 1:1 2:1 |a z\n" * 4)
    common = ["streamlearn", "vw", "-d", "d.txt", "--passes", "2", "--holdout_off"]
    runs = [["--csoaa", "3"], ["--csoaa", "4"], ["--oaa", "3"], ["--csoaa", "3"]]
    for opts in runs:
        plain = _run([*common, *opts], tmp_path)
        cached = _run([*common, *opts, "-c"], tmp_path)
        assert cached.returncode == plain.returncode
        loss = [[ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
                for r in (plain, cached)]  # fmt: skip
        assert loss[0] == loss[1], opts


@needs_vw
def test_audit_against_vw(tmp_path):
    """--audit: the classes a line lists, in its order, each with gd's clipped prediction."""
    rnd = random.Random(3)
    with open(tmp_path / "d.txt", "w") as fh:
        for _ in range(200):
            classes = rnd.sample(range(1, 5), rnd.randint(1, 4))
            label = " ".join(f"{c}:{rnd.random():.2f}" for c in classes)
            if rnd.random() < 0.1:
                label = ""
            feats = " ".join(f"x{rnd.randrange(9)}:{rnd.random():.2f}" for _ in range(3))
            fh.write(f"{label} |f {feats}\n")
    outs = []
    for prog in ("vowpalwabbit", "streamlearn"):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "--csoaa", "4", "-d", "d.txt", "--audit"], tmp_path)
        assert r.returncode == 0, r.stderr
        outs.append([ln for ln in r.stdout.splitlines() if not ln.startswith("[")])
    assert outs[0] == outs[1]


def _costs(seed: int, n: int, k: int) -> list:
    """Each example's (class 1..K, cost) pairs in a line's order: a few costs left out (not
    learned), negative costs, a few test lines (no class listed)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        if rnd.random() < 0.05:
            out.append([])
            continue
        listed = rnd.sample(range(1, k + 1), rnd.randrange(1, k + 1))
        out.append([(c, None if rnd.random() < 0.1 else rnd.choice([-1.5, 0.0, 0.5, 1.0, 3.0]))
                    for c in listed])  # fmt: skip
    return out


@pytest.mark.parametrize("loss_id", [0])  # squared (costs are regression targets)
@pytest.mark.parametrize("opts", [{}, dict(adaptive=False), dict(normalized=False),
                                  dict(l1=1e-3), dict(l2=1e-2), dict(invariant=False),
                                  dict(power_t=0.25, initial_t=3.0)])
@pytest.mark.parametrize(("k", "seed"), [(3, 0), (4, 1)])
def test_kernel_equals_k_dense_regressions(loss_id, opts, k, seed):
    """The lazy kernel against VW's csoaa over gd written densely
    (:func:`tests.reference.csoaa_gd`): each listed class regresses toward its cost, the
    cost widening the range first (from the first example's first class on: a first cost
    of -1.5 is in the range its prediction is clipped to), weights and predicted classes,
    in 1-3 batches."""
    from streamlearn.learners import csoaa
    from streamlearn.learners.base import make_params
    from tests import reference
    from tests.classes import class_weights, run_classes
    from tests.streams import random_stream

    stream = random_stream(seed, n=250, bits=5)
    costs = _costs(seed, stream.n, k)
    # the first cost widens the range (VW's is there before it), and the second line's
    # class 2, which learned toward it, predicts below 0: in the range it was given
    costs[:2] = [[(2, -1.5), (1, 0.5)], [(2, 1.0)]]
    stream.labels = np.zeros((stream.n, 1 + 2 * k))
    for i, listed in enumerate(costs):
        stream.labels[i, 0] = len(listed)
        for j, (c, cost) in enumerate(listed):
            stream.labels[i, 1 + 2 * j : 3 + 2 * j] = (c, np.inf if cost is None else cost)
    params = make_params(oaa=k, indexing=1, **{"learning_rate": 0.5, "initial_t": 0.0, **opts})
    spec = csoaa.GD
    table, gstate, preds, _ = run_classes(spec, params, stream, loss_id, k, 1 + k, 1 + seed)
    ref = dict(opts)
    ref["eta0"] = 0.5
    ref["t0"] = ref.pop("initial_t", 0.0)
    w_ref, classes_ref = reference.csoaa_gd(stream, costs, loss_id, k, **ref)
    w = class_weights(spec, table, gstate, params, k, stream.d)
    scale = max(float(np.max(np.abs(w_ref))), 1e-30)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=3e-4 * scale)
    ok = ~np.isnan(classes_ref)  # (the stream's malformed rows: NaN in both)
    np.testing.assert_array_equal(np.isnan(preds[:, 0]), ~ok)
    np.testing.assert_array_equal(preds[ok, 0], classes_ref[ok])
