"""VW's ``--named_labels`` (:mod:`streamlearn.io.named`): names read as classes 1..K, a name
not in the list skipped with its reason (``sl vw``: class 0 with VW's warning), ``-p`` by name
and models both ways, as VW 9.11.9."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.config import TrainConfig
from streamlearn.io.batch import Block
from streamlearn.io.named import MISSING_NAME, NamedLabels
from streamlearn.io.parse import FMT_VW, parse_block
from streamlearn.system import notices

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse(text: bytes, names: str = "det,noun,verb", numbers: str = "vw"):
    cfg = TrainConfig(oaa=3, named_labels=names, numbers=numbers)
    block = Block(np.frombuffer(text, dtype=np.uint8).copy(), "t", 1)
    return parse_block(block, FMT_VW, 18, True, cfg.namespaces())


@pytest.mark.parametrize("numbers", ["exact", "vw"])
def test_names_are_classes(numbers):
    text = b"det | the\nverb 2 'x| ate\n|a b\ncat 3 | x\nnoun 1 2 | y\nnoun -1 | z\n"
    told = []
    notices.listen(told.append)
    try:
        b = parse(text, numbers=numbers)
    finally:
        notices.listen(None)
    assert b.status.tolist()[:3] == [0, 0, 0]
    assert b.labels.tolist()[:2] == [1.0, 3.0] and np.isnan(b.labels[2])
    assert b.weights.tolist()[:3] == [1.0, 2.0, 1.0]
    assert bytes(b.block.data[b.tag_start[1] : b.tag_end[1]]) == b"x"
    if numbers == "exact":  # a name not in the list: the line is skipped with its reason
        assert b.status.tolist()[3:] == [MISSING_NAME, 5, 3] and told == []
    else:  # VW: class 0 (its weight read), with VW's warning
        assert b.status.tolist()[3:] == [0, 5, 3]
        assert b.labels[3] == 0.0 and b.weights[3] == 3.0
        assert told == ["[warning] Missing named label 'cat'"]


def test_names_checked():
    with pytest.raises(ValueError):
        NamedLabels.of("a,b,a")
    with pytest.raises(ValueError):
        TrainConfig(oaa=2, named_labels="a,b,c")


def _run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


@needs_vw
def test_against_vw(tmp_path):
    rnd = random.Random(5)
    names = ["det", "noun", "verb", "adj"]
    with open(tmp_path / "d.txt", "w") as fh:
        for i in range(300):
            c = rnd.randrange(4)
            feats = " ".join(f"w{rnd.randrange(30)}" for _ in range(3))
            name = "emu" if i % 41 == 7 else names[c]  # (not listed: VW's class 0)
            fh.write(f"{name} 'r{i}|w {feats} k{c}\n")
    train = ["--named_labels", ",".join(names), "--oaa", "4", "-d", "d.txt"]
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, *train, "-p", f"{tag}.p", "-f", f"{tag}.m"], tmp_path)
        assert r.returncode == 0, r.stderr
        loss = [ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
        (tmp_path / f"{tag}.loss").write_text("\n".join(loss))
    assert (tmp_path / "s.p").read_bytes() == (tmp_path / "v.p").read_bytes()
    assert (tmp_path / "s.loss").read_text() == (tmp_path / "v.loss").read_text()
    # each program scores the other's model to the same names
    for prog, model, tag in (("vowpalwabbit", "s.m", "vs"), ("streamlearn", "v.m", "sv")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-t", "-i", model, "-d", "d.txt", "-p", f"{tag}.p"], tmp_path)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "vs.p").read_bytes() == (tmp_path / "sv.p").read_bytes()


WORDS = st.sampled_from(["det", "noun", "verb", "Det", "de", "dett", "1", "2", "-1", "0.5", "x"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(WORDS, max_size=3), min_size=1, max_size=10), st.booleans())
def test_label_kernel_against_plain_python(labels, vw):
    """Random label parts: the kernel reads what a plain statement of VW's grammar reads
    (a name of the list, then an importance weight; VW: another name is class 0)."""
    names = ["det", "noun", "verb"]
    lines = [" ".join(words) + " |f a" for words in labels]
    b = parse(("\n".join(lines) + "\n").encode(), numbers="vw" if vw else "exact")
    for i, words in enumerate(labels):
        ok = not words or ((vw or words[0] in names) and len(words) <= 2)
        if ok and len(words) == 2:
            try:
                ok = float(words[1]) >= 0
            except ValueError:
                ok = False
        assert (b.status[i] == 0) == ok, (words, b.status[i])
        if ok and words:
            assert b.labels[i] == (names.index(words[0]) + 1 if words[0] in names else 0)
            assert b.weights[i] == (float(words[1]) if len(words) == 2 else 1.0)
        elif ok:
            assert np.isnan(b.labels[i])
