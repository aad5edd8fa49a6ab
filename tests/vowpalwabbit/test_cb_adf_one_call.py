"""A Workspace's multiline bandit example in one kernel call
(:class:`~streamlearn.reductions.cb_example.AdfStep`) gives what the one-example parse then
the learner's step give, and what the block path gives: answer for answer, error for error,
and the same state after.

Three workspaces of the same command line see the same calls: one through ``Bandit.line``
(the one call), one with it off (``one_example`` then ``Bandit.run``), one with both off
(the block path).  The examples include what the one call leaves to the others (a malformed
line, two costed actions, more actions than the kept arrays hold, a line past the kept
buffer, crosses), examples of growing action counts (``dr_prev`` grown first: ``GROW``),
examples without a shared line, and unlabeled ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import vowpalwabbit as sl
from tests.vowpalwabbit.three_paths import assert_same_state, run_three


def _examples(seed: int, n: int = 250) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(1, 7)) if i > 20 else 1 + i % 4  # (the counts grow at first)
        acts = [f"|a f{rng.integers(0, 30)}:{rng.random():.3f} g{rng.integers(0, 9)} a{j}"
                for j in range(k)]  # fmt: skip
        if rng.random() < 0.8:
            c = rng.integers(0, k)
            acts[c] = (f"{c}:{rng.random() * 2 - 0.5:.2f}:{rng.choice([0.1, 0.25, 0.5])} "
                       + acts[c])  # fmt: skip
        lines = acts
        if rng.random() < 0.8:
            lines = [f"shared 'tag{rng.integers(0, 5)} |s u{rng.integers(0, 40)} "
                     f"v{rng.integers(0, 9)}:0.5", *acts]  # fmt: skip
        out.append(lines)
    out[5] = ["shared |s a", "0:1:0.5 |a f:x:y", "|a g"]  # (malformed)
    out[9] = ["shared |s a", "0:1:0.5 |a f", "1:0.5:0.25 |a g"]  # (two costed actions)
    out[13] = ["shared |s a", *[f"|a x{j}" for j in range(300)]]  # (more than 256 lines)
    out[17] = ["shared |s " + " ".join(f"w{j}:0.5" for j in range(20000)), "|a x", "|a y"]
    out[19] = ["shared |s a"]  # (a shared line alone)
    return out


ARGVS = ["--cb_explore_adf", "--cb_adf", "--cb_adf --cb_type dr", "--cb_adf --cb_type ips",
         "--cb_explore_adf --epsilon 0.3 --cb_type dr", "--cb_explore_adf --first 3",
         "--cb_explore_adf --softmax --lambda 2", "--cb_explore_adf --cb_type dm",
         "--cb_explore_adf -q sa", "--cb_explore_adf --bag 3"]  # fmt: skip


@pytest.mark.parametrize("argv", ARGVS)
def test_one_call_answers_as_the_other_paths(argv: str, monkeypatch) -> None:
    (fused, one, block), took = run_three(argv, _examples(len(argv)), monkeypatch)
    ran = [p is not None for p in took["line"]]
    if "-q" in argv or "--bag" in argv:  # (crosses, bagging: never the one call)
        assert not any(ran)
    else:
        assert sum(ran) > 400 and not all(ran)
    assert_same_state([fused, one, block])
    assert fused.get_sum_loss() == block.get_sum_loss()



@pytest.mark.parametrize("argv", ["--cb_explore_adf", "--cb_adf --cb_type dr",
                                  "--cb_explore_adf --softmax --lambda 2 --cb_type dr"])
def test_the_guarded_call_puts_a_diverging_example_back(argv: str) -> None:
    """A learning server's one call (``guard``): an example whose update would leave the
    model non-finite raises ``Diverging`` with every weight, sum and statistic as before it;
    the others learn as the unguarded call learns them."""
    from streamlearn.reductions.cb_example import Diverging

    guarded, plain = (sl.Workspace(argv + " --quiet")._live.bandit for _ in range(2))
    bad = b"shared |s a:1e18\n0:1e18:2e-18 |a x:1e18\n|a y\n"
    diverged = 0
    for i, ex in enumerate(_examples(3, 120)):
        data = "".join(line + "\n" for line in ex).encode()
        if i % 17 == 5:
            data = bad
        before = [a.copy() for a in (guarded.table, guarded.gstate, guarded.stats,
                                     guarded.dr_prev)]  # fmt: skip
        xs = guarded.xp.xstats.copy() if guarded.xp is not None else None
        try:
            a = guarded.line(data, True, guard=True)
        except Diverging:
            diverged += 1
            for x, y in zip(before, (guarded.table, guarded.gstate, guarded.stats,
                                     guarded.dr_prev), strict=True):  # fmt: skip
                np.testing.assert_array_equal(x, y)
            if xs is not None:
                np.testing.assert_array_equal(xs, guarded.xp.xstats)
            continue
        b = plain.line(data, True)
        assert (a is None) == (b is None), i
        if a is not None:
            assert guarded.lines(a, vw=True) == plain.lines(b, vw=True), i
    assert diverged == 7  # (i = 5, 22, ..., 107)
    np.testing.assert_array_equal(guarded.table, plain.table)
    np.testing.assert_array_equal(guarded.stats, plain.stats)
