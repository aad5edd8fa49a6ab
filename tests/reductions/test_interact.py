"""``sl vw --interact ab`` next to VW 9.11.9: namespace a's features times b's, matched by name
from their anchors, b's dropped; stderr, ``-p``, VW's line on standard output, the readable
model and the models both ways as VW's, on data of our own (anchored, unanchored, out of
order, one namespace missing); and the rewrite against a plain reference."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE, refused, same_as_vw
from tests.unix import run_module as _run


def _line(rng, i: int) -> str:
    def ns(anchor: bool) -> str:
        names = sorted(set(int(j) for j in rng.integers(1, 40, 6)))
        if i % 17 == 5:  # out of order: VW stops matching there
            names = names[::-1]
        head = "0:1 " if anchor else "0:0.5 "
        return head + " ".join(f"{j}:{rng.choice([0.25, 0.5, 2.0])}" for j in names)

    y = int(rng.choice([-1, 1]))
    a = f"|a {ns(i % 11 != 3)}"
    b = f"|b {ns(i % 13 != 4)}" if i % 9 != 2 else ""
    return f"{y} {a} {b} |c w{i % 5} v{int(rng.integers(0, 9))}"


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(23)
    (tmp_path / "d.vw").write_text("\n".join(_line(rng, i) for i in range(500)) + "\n")
    return tmp_path


SETS = [
    ["--interact", "ab"],
    ["--interact", "ba", "--loss_function", "logistic", "-b", "12"],
    ["--interact", "ab", "--sgd", "-l", "0.1", "--l2", "1e-5"],
    ["--interact", "ac", "--normalized", "--passes", "2", "-c", "-k", "--holdout_off"],
]


@pytest.mark.parametrize("args", SETS)
def test_interact_learns_what_vw_learns(data, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    same_as_vw("d.vw", args, data)  # (the models keep --interact, as VW's)
    outs = [_run(prog, ["-d", "d.vw", *args, "--quiet"], data).stdout
            for prog in (VW_MODULE, SL_VW)]  # fmt: skip
    assert outs[1] == outs[0]


def test_the_rewrite_is_vws(data) -> None:
    """The kernel's rewrite of single rows against a plain reading of VW's ``multiply``."""
    from streamlearn.learners.interact import interacted

    rng = np.random.default_rng(1)
    wmask = np.uint64((1 << 18 << 2) - 1)
    for _ in range(300):
        rows = []
        for c in (97, 99, 98):
            n = int(rng.integers(0, 6))
            base = int(rng.integers(0, 1 << 18))
            offs = np.sort(rng.choice(50, n, replace=False)) if rng.random() < 0.8 else \
                rng.choice(50, n, replace=False)  # fmt: skip
            for k, o in enumerate(offs):
                rows.append((c, (base + (0 if k == 0 else int(o) + 1)) % (1 << 18),
                             1.0 if k == 0 and rng.random() < 0.9 else float(rng.random())))
        ns = np.array([r[0] for r in rows], dtype=np.uint8)
        idx = np.array([r[1] for r in rows], dtype=np.uint32)
        val = np.array([r[2] for r in rows], dtype=np.float64)
        slots = np.empty(len(rows) + 1, dtype=np.uint32)
        vals = np.empty(len(rows) + 1, dtype=np.float64)
        m = interacted(idx, val, ns, 0, len(rows), 97, 98, wmask, slots, vals)
        assert (m, slots[: max(m, 0)].tolist(), vals[: max(m, 0)].tolist()) == \
            _reference(rows, wmask)  # fmt: skip


def _reference(rows, wmask):
    f1 = [(i, v) for c, i, v in rows if c == 97]
    f2 = [(i, v) for c, i, v in rows if c == 98]
    if not f1 or not f2 or np.float32(f1[0][1]) != 1 or np.float32(f2[0][1]) != 1:
        return (-1, [], [])
    out = [(f1[0][0], float(np.float32(f1[0][1]) * np.float32(f2[0][1])))]
    w = int(wmask)
    b1, b2 = f1[0][0] & w, f2[0][0] & w
    i1 = i2 = 1
    p1 = p2 = 0
    while i1 < len(f1) and i2 < len(f2):
        c1 = ((f1[i1][0] & w) - b1) & w
        c2 = ((f2[i2][0] & w) - b2) & w
        if c1 < p1 or c2 < p2:
            break
        if c1 == c2:
            out.append((f1[i1][0], float(np.float32(f1[i1][1]) * np.float32(f2[i2][1]))))
            i1, i2 = i1 + 1, i2 + 1
        elif c1 < c2:
            i1 += 1
        else:
            i2 += 1
        p1, p2 = c1, c2
    others = [(i, v) for c, i, v in rows if c == 99]
    feats = out + others  # (a first in these rows, then c; b gone)
    return (len(feats), [i for i, _ in feats], [v for _, v in feats])


def test_refusals(data) -> None:
    refused(["-d", "d.vw", "--interact", "abc"], data, "--interact")
    refused(["-d", "d.vw", "--interact", "aa"], data, "--interact")
    refused(["-d", "d.vw", "--interact", "ab", "-q", "ac"], data, "--interact")
    refused(["-d", "d.vw", "--interact", "ab", "--oaa", "2"], data, "--interact")
    refused(["-d", "d.vw", "--interact", "ab", "--audit"], data, "--audit")
