"""``sl vw --bootstrap K`` (:mod:`streamlearn.learners.bootstrap`) against VW 9.11.9: average
loss and ``-p`` (``prediction [tag] low high``) byte for byte on generated data, mean and vote,
with unlabeled lines, importance weights, --binary, passes; models read by the other program
(VW keeps its generator's state as ``--random_seed``); the vote rule on its own."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from streamlearn.learners.bootstrap import vote

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _vote_reference(votes: list[int]) -> int:
    """VW's ``bs_predict_vote`` written plainly (its last run of sorted votes is not counted)."""
    k = len(votes)
    counter, current, init, multi = 0, 1, 1, False
    for i, v in enumerate(votes):
        if not multi:
            if i == 0:
                init = current = v
            elif init != current and v != current and v != init:
                multi = True
        if counter == 0:
            counter, current = 1, v
        else:
            counter += 1 if v == current else -1
    majority = False
    if counter > 0 and multi:
        majority = 2 * sum(1 for v in votes if v == current) > k
    if multi and not majority:
        s = sorted(votes)
        tmp, counter, run = s[0], 1, 1
        for v in s[1:]:
            if v == tmp:
                run += 1
            else:
                if run > counter:
                    current, counter = tmp, run
                tmp, run = v, 1
    return current


@pytest.mark.parametrize("votes", [[1, 1, 0, 0], [0, 1, 2], [2, 2, 1, 0, 3], [0], [3, 1, 1, 2, 2],
                                   [0, 0, 1, 2, 2, 2], [5, 4, 3, 2, 1]])  # fmt: skip
def test_vote_cases(votes):
    assert vote(np.array(votes, dtype=np.int64), len(votes)) == _vote_reference(votes)


def test_vote_random():
    rnd = random.Random(3)
    for _ in range(300):
        votes = [rnd.randrange(4) for _ in range(rnd.randrange(1, 8))]
        assert vote(np.array(votes, dtype=np.int64), len(votes)) == _vote_reference(votes)
    # a strict majority always wins
    assert Counter([2, 2, 2, 0, 1]).most_common(1)[0][0] == _vote_reference([2, 2, 2, 0, 1])


def _data(path, n: int, seed: int, classes: bool = False) -> None:
    rnd = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(n):
            feats = " ".join(f"f{rnd.randrange(30)}:{rnd.random():.3f}" for _ in range(4))
            x = rnd.random()
            if x < 0.1:
                label = ""
            elif classes:
                label = "1" if rnd.random() < 0.6 else "-1"
            else:
                label = f"{rnd.random() * 2 - 0.5:.4f}"
            if label and x > 0.85:
                label += f" {rnd.choice([0.5, 2, 3])}"
            tag = f"'e{i}" if i % 3 else ""
            fh.write(f"{label} {tag}|f {feats} k{i % 5}\n")


def _run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def _loss(stderr: str) -> str:
    return re.search(r"average loss = (\S+)", stderr).group(1)


def _both(tmp_path, args: list[str], model: bool = True) -> None:
    losses = []
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        extra = ["-f", f"{tag}.m"] if model else []
        r = _run([*head, *args, "-p", f"{tag}.p", *extra], tmp_path)
        assert r.returncode == 0, r.stderr
        losses.append(_loss(r.stderr))
    assert losses[0] == losses[1]
    assert (tmp_path / "v.p").read_bytes() == (tmp_path / "s.p").read_bytes()


@needs_vw
@pytest.mark.parametrize("opts", [["--bootstrap", "4"], ["--bootstrap", "5", "--bs_type", "vote"],
                                  ["--bootstrap", "3", "--random_seed", "7"],
                                  ["--bootstrap", "2", "--l2", "1e-4"]])  # fmt: skip
def test_against_vw(tmp_path, opts):
    _data(tmp_path / "d.vw", 400, 1)
    _both(tmp_path, ["-d", "d.vw", *opts])


@needs_vw
@pytest.mark.parametrize("opts", [["--bootstrap", "3"], ["--bootstrap", "2", "--ignore", "k",
                                  "--noconstant", "--bs_type", "vote"]])  # fmt: skip
def test_readable_model_is_vws(tmp_path, opts):
    """Copy 0's normalizer sums (sl keeps the copies' after gd's state: it wrote 0) and the
    generator's state as ``--random_seed``, after the namespace filters, as VW writes them."""
    _data(tmp_path / "d.vw", 300, 3)
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-d", "d.vw", *opts, "--readable_model", f"{tag}.txt", "--quiet"],
                 tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "s.txt").read_text() == (tmp_path / "v.txt").read_text()


@needs_vw
def test_binary_passes_against_vw(tmp_path):
    _data(tmp_path / "d.vw", 300, 2, classes=True)
    _both(tmp_path, ["-d", "d.vw", "--bootstrap", "5", "--binary", "-c", "-k", "--passes", "2",
                     "--loss_function", "logistic"], model=False)  # fmt: skip


@needs_vw
def test_models_cross_read(tmp_path):
    """A model saved part way (with VW's generator state) continues the same in either
    program, whichever wrote it; and scores the same under -t."""
    _data(tmp_path / "a.vw", 200, 4)
    _data(tmp_path / "b.vw", 200, 5)
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-d", "a.vw", "--bootstrap", "3", "-f", f"{tag}.m"], tmp_path)
        assert r.returncode == 0, r.stderr
    outs = set()
    for prog in ("vowpalwabbit", "streamlearn"):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        for tag in ("v", "s"):
            for test in ([], ["-t"]):
                r = _run([*head, "-d", "b.vw", "-i", f"{tag}.m", "-p", "o.p", *test], tmp_path)
                assert r.returncode == 0, r.stderr
                outs.add((tuple(test), (tmp_path / "o.p").read_bytes(), _loss(r.stderr)))
    assert len(outs) == 2  # one result with learning, one without


@pytest.mark.parametrize("extra", [["--audit"], ["-r", "r.txt"]])
def test_refused_outputs(tmp_path, extra):
    (tmp_path / "d.vw").write_text("1 |f a\n0 |f b\n")
    r = _run(["streamlearn", "vw", "-d", "d.vw", "--bootstrap", "2", *extra], tmp_path)
    assert r.returncode == 2 and "not supported by sl" in r.stderr
    assert not (tmp_path / "r.txt").exists()


def test_refused_beside_other_reductions_and_learners(tmp_path):
    (tmp_path / "d.vw").write_text("1 |f a\n0 |f b\n")
    for extra in (["--oaa", "3"], ["--ftrl"], ["--lrq", "ff2"], ["--bootstrap", "0"],
                  ["--bs_type", "median"]):  # fmt: skip
        r = _run(["streamlearn", "vw", "-d", "d.vw", "--bootstrap", "2", *extra], tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (extra, r.stderr)


def test_sl_train_bootstrap_is_sl_vw_s(tmp_path):
    """``sl train --bootstrap K --bs-type vote`` learns what ``sl vw`` does (the same words)."""
    from streamlearn.api import Model

    _data(tmp_path / "d.vw", 120, 3)
    r = _run(["streamlearn", "train", "d.vw", "--bootstrap", "3", "--bs-type", "vote", "-f",
              "t.sl", "--quiet"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert Model.load(tmp_path / "t.sl").config.stack == ("--bootstrap", "3", "--bs_type", "vote")
    r = _run(["streamlearn", "train", "d.vw", "--bs-type", "vote"], tmp_path)
    assert r.returncode == 2 and "--bs-type is an option of --bootstrap" in r.stderr


def test_a_model_of_the_fields_reads_and_continues_the_same(tmp_path):
    """``legacy/bootstrap.sl`` was written by sl at 23d2068, when --bootstrap was
    ``TrainConfig`` fields (``"bootstrap": 3, "bs_type": "vote"``): ``sl vw -d first.vw
    --bootstrap 3 --bs_type vote --binary -b 10`` on ``data/sample.vw``'s first 600 lines,
    saved in sl's format; ``.preds`` are that sl's ``sl predict -p`` on lines 601-800 and
    ``.cont.preds`` the same after ``sl train -i`` on them.  Today's sl reads the fields as
    the reduction's words and gives the same bytes."""
    legacy = os.path.join(ROOT, "tests", "data", "legacy")
    rows = open(os.path.join(ROOT, "data", "sample.vw"), "rb").read().splitlines(keepends=True)
    (tmp_path / "next.vw").write_bytes(b"".join(rows[600:800]))
    old = os.path.join(legacy, "bootstrap.sl")
    r = _run(["streamlearn", "predict", "-i", old, "next.vw", "-p", "p.txt", "--quiet"],
             tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    with open(os.path.join(legacy, "bootstrap.preds"), "rb") as fh:
        assert (tmp_path / "p.txt").read_bytes() == fh.read()
    r = _run(["streamlearn", "train", "-i", old, "next.vw", "-f", "m.sl", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    r = _run(["streamlearn", "predict", "-i", "m.sl", "next.vw", "-p", "p.txt", "--quiet"],
             tmp_path)  # fmt: skip
    with open(os.path.join(legacy, "bootstrap.cont.preds"), "rb") as fh:
        assert (tmp_path / "p.txt").read_bytes() == fh.read()
    from streamlearn.api import Model

    assert Model.load(tmp_path / "m.sl").config.stack == ("--bootstrap", "3", "--bs_type", "vote")
