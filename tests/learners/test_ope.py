"""Off-policy estimators (learners/ope.py): each against a plain statement of its formula,
the streaming accumulator against the batch functions, and the intervals' coverage of a
known true cost on simulations (scripts/make_cb_data.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamlearn.learners import ope
from tests.marks import slow_except
from tests.paths import script


def _generator():
    return script("make_cb_data")


gen = _generator()


def _sample(seed: int, n: int = 300):
    r = np.random.default_rng(seed)
    prob = r.choice([0.05, 0.1, 0.25, 0.5, 0.9, 1.0], size=n)
    pi = r.choice([0.0, 0.0, 0.025, 0.5, 0.95, 1.0], size=n)
    cost = r.choice([0.0, 1.0, 0.5, -1.0, 2.5], size=n)
    chat_logged = r.normal(0.5, 0.3, size=n)
    direct = r.normal(0.5, 0.3, size=n)
    return cost, prob, pi, direct, chat_logged


# plain Python statements of each estimator, one example at a time


def plain_ips(cost, prob, pi):
    terms = [pi[i] / prob[i] * cost[i] for i in range(len(cost))]
    return terms, sum(terms) / len(terms)


def plain_dr(cost, prob, pi, direct, chat):
    terms = [direct[i] + pi[i] / prob[i] * (cost[i] - chat[i]) for i in range(len(cost))]
    return terms, sum(terms) / len(terms)


def plain_snips(cost, prob, pi):
    w = [pi[i] / prob[i] for i in range(len(cost))]
    v = sum(w[i] * cost[i] for i in range(len(cost))) / sum(w)
    n = len(cost)
    mw = sum(w) / n
    var = sum((w[i] * (cost[i] - v)) ** 2 for i in range(n)) / (n - 1) / mw**2
    return v, math.sqrt(var / n)


def plain_sd(terms):
    n = len(terms)
    m = sum(terms) / n
    return math.sqrt(sum((t - m) ** 2 for t in terms) / (n - 1))


@pytest.mark.parametrize("seed", range(5))
def test_each_estimator_is_its_formula(seed):
    cost, prob, pi, direct, chat = _sample(seed)
    n = len(cost)
    z = ope.Z95
    terms, v = plain_ips(cost, prob, pi)
    got = ope.ips(cost, prob, pi)
    assert got["estimate"] == pytest.approx(v, rel=1e-12)
    half = z * plain_sd(terms) / math.sqrt(n)
    assert (got["low"], got["high"]) == pytest.approx((v - half, v + half), rel=1e-12)
    v, se = plain_snips(cost, prob, pi)
    got = ope.snips(cost, prob, pi)
    assert got["estimate"] == pytest.approx(v, rel=1e-12)
    assert got["stderr"] == pytest.approx(se, rel=1e-12)
    terms, v = plain_dr(cost, prob, pi, direct, chat)
    got = ope.dr(cost, prob, pi, direct, chat)
    assert got["estimate"] == pytest.approx(v, rel=1e-12)
    assert got["stderr"] == pytest.approx(plain_sd(terms) / math.sqrt(n), rel=1e-12)
    got = ope.observed(cost)
    assert got["estimate"] == pytest.approx(sum(cost) / n, rel=1e-12)
    assert got["stderr"] == pytest.approx(plain_sd(list(cost)) / math.sqrt(n), rel=1e-12)


def test_a_policy_that_agrees_with_the_logger_estimates_the_observed_cost():
    cost, prob, _, _, _ = _sample(9)
    assert ope.ips(cost, prob, prob)["estimate"] == pytest.approx(cost.mean())
    assert ope.snips(cost, prob, prob)["estimate"] == pytest.approx(cost.mean())
    # a perfect reward model leaves DR with the direct term only
    got = ope.dr(cost, prob, prob * 0.3, np.full(cost.shape, 0.7), cost)
    assert got["estimate"] == pytest.approx(0.7) and got["stderr"] == pytest.approx(0.0, abs=1e-12)


def test_policy_direct_and_pi_of_logged():
    ptr = np.array([0, 3, 5, 6])
    acts = np.array([2, 0, 1, 1, 0, 0])  # explorer order: actions, any order
    probs = np.array([0.5, 0.25, 0.25, 0.9, 0.1, 1.0])
    chosen = np.array([0, 1, -1])
    assert ope.pi_of_logged(ptr, acts, probs, chosen).tolist() == [0.25, 0.9, 0.0]
    chat = np.array([1.0, 2.0, 4.0, 1.0, 3.0, 5.0])
    assert ope.policy_direct(ptr, probs, chat).tolist() == pytest.approx(
        [0.5 + 0.5 + 1.0, 0.9 + 0.3, 5.0]
    )


def test_the_accumulator_over_batches_equals_the_functions_over_all():
    cost, prob, pi, direct, chat = _sample(3, n=1000)
    acc = ope.Accumulator()
    for lo, hi in ((0, 1), (1, 7), (7, 500), (500, 501), (501, 1000)):
        acc.add(cost[lo:hi], prob[lo:hi], pi[lo:hi], direct[lo:hi], chat[lo:hi])
    r = acc.result()
    assert r["examples"] == 1000
    for key, want in (
        ("ips", ope.ips(cost, prob, pi)),
        ("snips", ope.snips(cost, prob, pi)),
        ("dr", ope.dr(cost, prob, pi, direct, chat)),
        ("logging", ope.observed(cost)),
    ):
        for f in ("estimate", "low", "high"):
            assert r[key][f] == pytest.approx(want[f], rel=1e-9), (key, f)
    w = pi / prob
    assert r["max_weight"] == w.max()
    assert r["effective_examples"] == pytest.approx(w.sum() ** 2 / (w * w).sum())
    # the curve: checkpoints in order, each row the estimates of that prefix
    xs = [row[0] for row in acc.curve]
    assert xs[:8] == list(range(1, 9)) and xs == sorted(set(xs)) and xs[-1] == 1000
    for row in acc.curve:
        k = int(row[0])
        if k > 1:
            assert row[1] == pytest.approx(ope.ips(cost[:k], prob[:k], pi[:k])["estimate"])
            assert row[8] == pytest.approx(ope.dr(cost[:k], prob[:k], pi[:k], direct[:k],
                                                  chat[:k])["low"])  # fmt: skip
    # no reward model: DR is absent, not IPS in disguise
    acc = ope.Accumulator()
    acc.add(cost, prob, pi)
    assert acc.result()["dr"] is None


def _coverage(target: str, seeds: int = 200, n: int = 3000):
    """Per estimator, the share of ``seeds`` logs whose 95% interval covers ``target``'s
    true expected cost (the logs of one world, seeds 1..)."""
    wd = gen.world(seed=4, actions=5, shared=4, per_action=2, epsilon=0.3, noise=0.7)
    pol = gen.policy(target)
    truth, se = gen.true_cost(wd, pol, samples=1_000_000)
    assert se < 0.001
    hits = {k: 0 for k in ("ips", "snips", "dr")}
    for seed in range(1, seeds + 1):
        (lg,) = list(gen.log(wd, n, seed))
        rows = np.arange(n)
        pmf = pol(wd, lg.x, lg.z)
        pi = pmf[rows, lg.action]
        # a deliberately wrong reward model: the logger's noisy one
        noisy = gen._sigmoid(wd.b_log + (lg.x / gen.GRID) @ wd.w_log.T
                             + (lg.z / gen.GRID) @ wd.v_log)  # fmt: skip
        direct = (pmf * noisy).sum(axis=1)
        got = {"ips": ope.ips(lg.cost, lg.prob, pi), "snips": ope.snips(lg.cost, lg.prob, pi),
               "dr": ope.dr(lg.cost, lg.prob, pi, direct, noisy[rows, lg.action])}  # fmt: skip
        for k, e in got.items():
            hits[k] += e["low"] <= truth <= e["high"]
    return {k: v / seeds for k, v in hits.items()}, truth


@pytest.mark.parametrize("target", slow_except(["optimal", "eps-greedy:0.1", "uniform"], 2))
def test_intervals_cover_the_true_cost_at_their_nominal_rate(target):
    rates, truth = _coverage(target)
    for rate in rates.values():
        assert 0.90 <= rate <= 0.99, (target, truth, rates)


def test_the_coverage_test_can_fail():
    """An interval a third as wide (about 50% nominal) is caught."""
    wd = gen.world(seed=4, actions=5, shared=4, per_action=2, epsilon=0.3, noise=0.7)
    pol = gen.policy("optimal")
    truth, _ = gen.true_cost(wd, pol, samples=200_000)
    hits = 0
    for seed in range(1, 101):
        (lg,) = list(gen.log(wd, 2000, seed))
        pi = pol(wd, lg.x, lg.z)[np.arange(2000), lg.action]
        e = ope.ips(lg.cost, lg.prob, pi, z=ope.Z95 / 3)
        hits += e["low"] <= truth <= e["high"]
    assert hits / 100 < 0.90


@pytest.mark.slow
def test_progressive_intervals_cover_a_learning_policys_mean_value():
    """A policy that learns from the examples it has scored (context-free epsilon-greedy
    over running IPS means of each action's cost): the progressive interval, over
    batches through the Accumulator, covers the mean of its successive policies' true
    values (martingale central limit) at the nominal rate."""
    wd = gen.world(seed=5, actions=4, shared=3, per_action=1, epsilon=0.4, noise=0.7)
    x, z = gen.contexts(wd, 400_000, np.random.default_rng(99))
    m = gen.expected_costs(wd, x, z).mean(axis=0)  # each action's cost over contexts
    k, n, eps = wd.actions, 2000, 0.1
    hits = {key: 0 for key in ("ips", "snips", "dr")}
    seeds = 200
    for seed in range(1, seeds + 1):
        (lg,) = list(gen.log(wd, n, seed))
        sums, counts = np.zeros(k), np.zeros(k)
        pi_logged, direct, chat, values = (np.empty(n) for _ in range(4))
        for t in range(n):
            means = np.where(counts > 0, sums / np.maximum(counts, 1.0), 0.5)
            pi = np.full(k, eps / k)
            pi[int(np.argmin(means))] += 1.0 - eps
            a = lg.action[t]
            pi_logged[t] = pi[a]
            direct[t] = pi @ means
            chat[t] = means[a]
            values[t] = pi @ m
            sums[a] += lg.cost[t] / lg.prob[t]  # learn after scoring
            counts[a] += 1.0 / lg.prob[t]
        acc = ope.Accumulator()
        for lo in range(0, n, 500):
            s = slice(lo, lo + 500)
            acc.add(lg.cost[s], lg.prob[s], pi_logged[s], direct[s], chat[s])
        r = acc.result()
        truth = values.mean()
        for key in hits:
            hits[key] += r[key]["low"] <= truth <= r[key]["high"]
    rates = {key: v / seeds for key, v in hits.items()}
    assert all(0.90 <= v <= 0.99 for v in rates.values()), rates
