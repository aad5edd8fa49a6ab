"""VW's random numbers and explorers (streamlearn.learners.explore) against VW's own values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.learners import explore as ex

F32 = np.float32
M64 = (1 << 64) - 1


def _lcg_reference(seed: int, n: int) -> list[float]:
    """VW's merand48 with Python integers: the 23 mantissa bits over 2^23."""
    out = []
    s = seed
    for _ in range(n):
        s = (0xEECE66D5DEECE66D * s + 2147483647) & M64
        out.append(((s >> 25) & 0x7FFFFF) / 2.0**23)
    return out


def test_merand48_matches_vw_cross_platform_values() -> None:
    # VW's core/tests/random_test.cc, CheckRandStateCrossPlatform (seed 10)
    state = np.array([10], dtype=np.uint64)
    got = [float(ex.merand48(state)) for _ in range(5)]
    assert got == pytest.approx(
        [0.0170166492, 0.370730162, 0.166691661, 0.362691283, 0.969445825], rel=1e-7
    )
    assert got == _lcg_reference(10, 5)
    assert int(state[0]) == _state_after(10, 5)


def _state_after(seed: int, n: int) -> int:
    s = seed
    for _ in range(n):
        s = (0xEECE66D5DEECE66D * s + 2147483647) & M64
    return s


def test_merand48_noadvance_is_one_step_on_a_copy() -> None:
    # random_test.cc, ReproduceMaxBoundaryIssue: a draw just below 1
    assert float(ex.merand48_noadvance(2244123448)) == pytest.approx(0.99999, abs=1e-3)
    for seed in (0, 1, 53980556, 2**63 + 12345, M64):
        assert float(ex.merand48_noadvance(np.uint64(seed))) == _lcg_reference(seed, 1)[0]


def test_app_seed_is_uniform_hash_of_vw() -> None:
    from streamlearn.hashing import murmur3_32

    assert int(murmur3_32(np.frombuffer(b"vw", dtype=np.uint8), 0, 2, 0)) == ex.APP_SEED


def test_poisson_draws_follow_the_thresholds() -> None:
    state = np.array([7], dtype=np.uint64)
    draws = [ex.poisson_draw(state) for _ in range(50)]
    ref = _lcg_reference(7, 50)
    expect = [int(np.searchsorted(ex.POISSON_THRESHOLDS, float(F32(u)), side="left")) for u in ref]
    assert draws == expect
    counts = np.zeros(3, dtype=np.int64)
    ex.bag_learn_counts(np.array([7], dtype=np.uint64), 3, True, counts)
    assert counts[0] == 1 and list(counts[1:]) == draws[:2]


def test_sample_after_normalizing() -> None:
    # explore_test.cc: 1..5 normalised by 15
    pmf = np.array([1, 2, 3, 4, 5], dtype=F32)
    ex.sample_after_normalizing(np.uint64(7791), pmf)
    assert pmf.tolist() == pytest.approx([1 / 15, 2 / 15, 3 / 15, 4 / 15, 5 / 15], abs=1e-6)
    zero = np.zeros(5, dtype=F32)
    assert ex.sample_after_normalizing(np.uint64(1), zero) == 0 and zero[0] == 1
    # the draw: first index whose running sum passes total * u
    for seed in range(200):
        pmf = np.array([0.1, 0.2, 0.3, 0.4], dtype=F32)
        u = F32(_lcg_reference(seed, 1)[0])
        draw = F32(1.0) * u
        run = np.cumsum(np.array([0.1, 0.2, 0.3, 0.4], dtype=F32), dtype=F32)
        want = int(np.argmax(run > draw)) if (run > draw).any() else 3
        assert ex.sample_after_normalizing(np.uint64(seed), pmf) == want


def test_enforce_minimum_probability_vw_cases() -> None:
    # explore_test.cc
    pmf = np.array([1, 0, 0], dtype=F32)
    ex.enforce_minimum_probability(F32(0.3), True, pmf)
    assert pmf.tolist() == pytest.approx([0.8, 0.1, 0.1], abs=1e-6)
    pmf = np.array([0.9, 0.1, 0], dtype=F32)
    ex.enforce_minimum_probability(F32(0.6), False, pmf)
    assert pmf.tolist() == pytest.approx([0.7, 0.3, 0.0], abs=1e-6)
    pmf = np.array([0.0, 0.0, 0.0], dtype=F32)
    ex.enforce_minimum_probability(F32(1.0), True, pmf)
    assert pmf.tolist() == pytest.approx([1 / 3] * 3)
    pmf = np.array([0.5, 0.5, 0.0], dtype=F32)
    ex.enforce_minimum_probability(F32(0.0), True, pmf)
    assert pmf.tolist() == [0.5, 0.5, 0.0]


def test_greedy_ties_and_first_only() -> None:
    # the default epsilon 0.05 over 4 actions, two tied leaders
    # (VW's -p: 0.4875, 0.4875, 0.0125, 0.0125)
    s = np.array([0.1, 0.1, 0.3, 0.5], dtype=F32)
    ex.greedy_pmf(s, F32(0.05), False)
    assert [ex.prob_text(p) for p in s] == ["0.4875", "0.4875", "0.0125", "0.0125"]
    s = np.array([0.1, 0.1, 0.3, 0.5], dtype=F32)
    ex.greedy_pmf(s, F32(0.05), True)
    assert [ex.prob_text(p) for p in s] == ["0.9625", "0.0125", "0.0125", "0.0125"]
    # relative tolerance: 1e-4 * (|a| + |b|)
    assert ex.fill_tied(np.array([1.0, 1.0001, 1.0003], dtype=F32)) == 2
    assert ex.fill_tied(np.array([0.0, 0.0, 1e-30], dtype=F32)) == 2
    assert ex.fill_tied(np.array([], dtype=F32)) == 0


def test_first_softmax_squarecb_bag() -> None:
    s = np.array([0.2, 0.4, 0.9], dtype=F32)
    ex.first_pmf(s, 2, F32(0.0))
    assert s.tolist() == [F32(1 / 3)] * 3
    s = np.array([0.2, 0.4, 0.9], dtype=F32)
    ex.first_pmf(s, 0, F32(0.3))
    assert s.tolist() == pytest.approx([0.8, 0.1, 0.1], abs=1e-6)
    # explore_test.cc: generate_softmax(0.2, {1,2,3,8}) = {0.128, 0.157, 0.192, 0.522};
    # ours takes -lambda
    s = np.array([1, 2, 3, 8], dtype=F32)
    ex.softmax_pmf(s, F32(-0.2), F32(0.0))
    assert s.tolist() == pytest.approx([0.128, 0.157, 0.192, 0.522], abs=1e-3)
    # squarecb, counter 0: gamma 0, uniform; counter 4: gamma 10 * 2 = 20
    assert ex.squarecb_gamma(0, F32(10), F32(0.5)) == 0.0
    assert ex.squarecb_gamma(4, F32(10), F32(0.5)) == 20.0
    s = np.array([0.0, 0.1, 0.5], dtype=F32)
    ex.squarecb_pmf(s, F32(20), F32(0.0))
    p1, p2 = F32(1) / F32(3 + 20 * F32(0.1)), F32(1) / (F32(3) + F32(20) * F32(0.5))
    assert s.tolist() == [F32(1) - (p1 + p2), p1, p2]
    # bag: explore_test.cc generate_bag {0, 0, 1, 1} -> {0, 0, .5, .5}; sorted by desc prob, then
    # asc summed score (action 3: 0.3 before action 2: 0.4), then action
    acts = np.array([[2, 3, 0, 1], [3, 2, 0, 1]], dtype=np.int32)
    sc = np.array([[0.1, 0.2, 0.5, 0.6], [0.1, 0.3, 0.5, 0.6]], dtype=F32)
    oa, op = np.zeros(4, dtype=np.int32), np.zeros(4, dtype=F32)
    ex.bag_pmf(acts, sc, F32(0.0), False, oa, op)
    assert oa.tolist() == [3, 2, 0, 1] and op.tolist() == [0.5, 0.5, 0.0, 0.0]


def test_pmf_text() -> None:
    assert ex.pmf_text(
        np.array([1, 2, 3, 0]), np.array([0.4875, 0.4875, 0.0125, 0.0125], dtype=F32)
    ) == ("1:0.4875,2:0.4875,3:0.0125,0:0.0125\n\n")
    assert ex.pmf_text(np.array([0]), np.array([1.0], dtype=F32), "t1") == "0:1 t1\n\n"
    assert ex.prob_text(F32(0.32916668)) == "0.329167"
    assert ex.prob_text(F32(0.1)) == "0.1"


def test_explore_loss() -> None:
    acts = np.array([2, 0, 1], dtype=np.int32)
    probs = np.array([0.9, 0.05, 0.05], dtype=F32)
    w = np.ones(3, dtype=F32)
    assert ex.explore_loss(acts, probs, w, 0, F32(1.0), F32(0.5)) == F32(F32(1.0 / 0.5) * F32(0.05))
    assert ex.explore_loss(acts, probs, w, 0, F32(1.0), F32(0.0)) == 0.0


_SCORES = st.lists(st.floats(-5, 5, width=32), min_size=1, max_size=8).map(
    lambda v: np.sort(np.array(v, dtype=F32))
)


def _check_pmf(p: np.ndarray, floor: float = 0.0) -> None:
    assert np.all(p >= 0)
    assert abs(float(np.sum(p, dtype=np.float64)) - 1.0) <= 4e-7 * len(p) + 1e-7
    assert np.all(p >= F32(floor) - 1e-7)


@settings(max_examples=150, deadline=None)
@given(_SCORES, st.floats(0, 1, width=32), st.booleans())
def test_property_greedy(s: np.ndarray, eps: float, first_only: bool) -> None:
    ex.greedy_pmf(s, F32(eps), first_only)
    _check_pmf(s, eps / len(s) * (1 - 1e-6))


@settings(max_examples=150, deadline=None)
@given(_SCORES, st.floats(0, 30, width=32), st.floats(0, 0.875, width=32))
def test_property_softmax_min_probability(s: np.ndarray, lam: float, eps: float) -> None:
    ex.softmax_pmf(s, F32(lam), F32(eps))
    _check_pmf(s, eps / len(s) * (1 - 1e-5))


@settings(max_examples=150, deadline=None)
@given(_SCORES, st.integers(0, 10_000), st.floats(0, 0.875, width=32))
def test_property_squarecb(s: np.ndarray, counter: int, eps: float) -> None:
    ex.squarecb_pmf(s, ex.squarecb_gamma(counter, F32(10), F32(0.5)), F32(eps))
    _check_pmf(s, eps / len(s) * (1 - 1e-5))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**32), st.floats(0, 0.875, width=32))
def test_property_bag(k: int, bags: int, seed: int, eps: float) -> None:
    rng = np.random.default_rng(seed)
    sc = rng.integers(0, 3, size=(bags, k)).astype(F32) / F32(2)
    acts = np.argsort(sc, axis=1, kind="stable").astype(np.int32)
    sc = np.take_along_axis(sc, acts, axis=1)
    oa, op = np.zeros(k, dtype=np.int32), np.zeros(k, dtype=F32)
    ex.bag_pmf(acts, sc, F32(eps), False, oa, op)
    assert sorted(oa.tolist()) == list(range(k))
    assert np.all(np.diff(op) <= 0)
    _check_pmf(op, eps / k * (1 - 1e-5))


# ------------------------------------------------------------------ against VW 9.11.9 itself


def _logs(seed: int, n: int, kmax: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, kmax + 1))
        lines = [f"shared |s u{rng.integers(0, 5)} v{rng.integers(0, 3)}"]
        chosen = int(rng.integers(0, k))
        for a in range(k):
            lab = ""
            if a == chosen:
                lab = f"0:{rng.choice([0.0, 1.0, -1.0, 0.5])}:{rng.choice([0.25, 0.5, 0.9, 1.0])} "
            lines.append(f"{lab}|a x{a} y{rng.integers(0, 4)}")
        out.append(lines)
    return out


def _sorted(scores: list[float]) -> tuple[np.ndarray, np.ndarray]:
    s = np.array(scores, dtype=F32)
    order = np.lexsort((np.arange(len(s)), s))
    return order.astype(np.int32), s[order]


@pytest.mark.parametrize(
    ("flags", "kind"),
    [
        ("", "greedy"),
        ("--epsilon 0.3", "greedy"),
        ("--epsilon 0.1 --first_only", "greedy_first"),
        ("--softmax --lambda 2", "softmax"),
        ("--softmax --lambda 0.5 --epsilon 0.2", "softmax"),
        ("--first 3", "first"),
        ("--first 2 --epsilon 0.1", "first"),
        ("--squarecb", "squarecb"),
        ("--squarecb --gamma_scale 3 --epsilon 0.1", "squarecb"),
    ],
)
def test_pmf_equals_vw_lockstep(flags: str, kind: str) -> None:
    """cb_adf's scores (a twin VW learning the same) through our explorer give VW's pmf exactly."""
    vw = pytest.importorskip("vowpalwabbit")
    words = flags.split()
    opts = {w: words[i + 1] for i, w in enumerate(words[:-1]) if not words[i + 1].startswith("--")}
    eps = F32(float(opts.get("--epsilon", 0.05 if kind.startswith("greedy") else 0.0)))
    explorer = vw.Workspace(f"--cb_explore_adf {flags} --quiet")
    twin = vw.Workspace("--cb_adf --quiet")
    tau = int(opts.get("--first", 0))
    counter = 0
    for lines in _logs(11, 120, 6):
        got = explorer.predict(lines)
        acts, s = _sorted(twin.predict(lines))
        if kind.startswith("greedy"):
            ex.greedy_pmf(s, eps, kind == "greedy_first")
        elif kind == "softmax":
            ex.softmax_pmf(s, F32(float(opts["--lambda"])), eps)
        elif kind == "first":
            ex.first_pmf(s, tau, eps)
        else:
            g = ex.squarecb_gamma(counter, F32(float(opts.get("--gamma_scale", 10))), F32(0.5))
            ex.squarecb_pmf(s, g, eps)
        mine = np.zeros(len(s), dtype=F32)
        mine[acts] = s
        assert mine.tolist() == [float(F32(v)) for v in got], (kind, lines)
        if kind == "squarecb":
            # squarecb learns without importance weights: probability 1 on every line but the last
            twin_lines = [
                _prob_one(line) if i < len(lines) - 1 else line for i, line in enumerate(lines)
            ]
        else:
            twin_lines = lines
        explorer.learn(lines)
        twin.learn(twin_lines)
        tau = max(tau - 1, 0)
        counter += 1


def _prob_one(line: str) -> str:
    head, sep, rest = line.partition(" |")
    if not sep or head.startswith("shared") or head.count(":") != 2:
        return line
    a, c, _ = head.split(":")
    return f"{a}:{c}:1 |{rest}"
