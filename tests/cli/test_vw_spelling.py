"""``sl vw --spelling a`` next to VW 9.11.9: each feature of a spelled namespace also gives a
feature of its name's shape in VW's spelling namespace (its value, the namespace's hash, VW's
``hashstring`` whatever ``--hash`` says; anonymous features spelled as the empty name); stderr,
``-p``, ``--audit``, the readable model and the models both ways as VW's, on data of our own."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.io.affix import spelling_feature
from tests.unix import refused, same_as_vw


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(29)
    words = ["Hello", "w0rld", "12", "x.y", "ABC", "a-b", "e\u0301t\u00e9", "Mc2", "...", "q"]
    lines = []
    for i in range(400):
        w = " ".join(rng.choice(words, 3))
        v = f"{rng.choice(words)}:{rng.choice([0.5, 2])}"
        lines.append(f"{rng.choice([-1, 1])} |w {w} {v} :1.5 |c Tok{i % 7} s:str{i % 3} "
                     f"| Bare{i % 4} |w again{i % 5}")  # fmt: skip
    (tmp_path / "d.vw").write_text("\n".join(lines) + "\n")
    return tmp_path


SETS = [
    ["--spelling", "w"],
    ["--spelling", "_", "--spelling", "word", "-q", "wc", "--loss_function", "logistic"],
    ["--spelling", "c", "--hash", "all", "--sgd", "-b", "12"],
    ["--spelling", "v", "--redefine", "v:=w", "--ngram", "v2"],
    ["--spelling", "w", "--ignore", "w", "--passes", "2", "-c", "-k", "--holdout_off"],
    # with affixes: each made namespace where its first feature is made, VW's order
    ["--spelling", "w", "--affix", "+2c,-1"],  # (ASCII affixes: -p and text compared)
    ["--spelling", "c", "--affix", "-2c,+3", "-q", "wc"],
    ["--spelling", "_", "--spelling", "w", "--affix", "+1c"],
]


@pytest.mark.parametrize("args", SETS)
def test_spelling_learns_what_vw_learns(data, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    same_as_vw("d.vw", args, data, audit=5)  # (the models keep --spelling, as VW's)


def test_the_shape_is_vws() -> None:
    slot, name, nsb, x = spelling_feature(b"Mc2.x-\xc3\xa9", 7, ord("w"), (1 << 18) - 1, 2.0)
    assert name == "spelling^w_Aa0.a###" and nsb == 133 and x == 2.0
    assert spelling_feature(b"123", 7, 32, (1 << 18) - 1, 1.0)[:2] == (7, "spelling^000")
    assert spelling_feature(b"", 7, 32, (1 << 18) - 1, 1.0)[:2] == (7, "spelling^")


def test_refused_with_json(data) -> None:
    refused(["-d", "d.vw", "--spelling", "w", "--json"], data, "--spelling")
