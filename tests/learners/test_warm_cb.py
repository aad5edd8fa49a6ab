"""``--warm_cb``'s lambda and choice logic (:mod:`streamlearn.learners.warm_cb`,
``run/warm_cb.py``) against a dense reference written from VW's ``cb/warm_cb.cc``
(``setup_lambdas``, ``compute_weight_multiplier``, ``find_min``, ``corrupt_action``,
``copy_example_to_adf``), in float32 as VW computes them."""

from __future__ import annotations

import itertools
import types

import numpy as np
import pytest

from streamlearn.learners import warm_cb as wk

F32 = np.float32
FLT_MAX = F32(np.finfo(np.float32).max)
FLT_MIN = F32(np.finfo(np.float32).tiny)


# ---------------------------------------------------------------- the reference (warm_cb.cc)


def ref_lambdas(n: int, scheme: int, eps: float, upd_ws: bool, upd_inter: bool) -> list:
    lam = [F32(0.0)] * n
    if not upd_ws and upd_inter:
        return [F32(1.0)] * n
    if not upd_inter and upd_ws:
        return lam
    mid = n // 2
    lam[mid] = F32(0.5) if scheme in (1, 2) else F32(eps) / (F32(1.0) + F32(eps))
    i = mid
    while i > 0:
        lam[i - 1] = lam[i] / F32(2.0)
        i -= 1
    for i in range(mid + 1, n):
        lam[i] = F32(1.0) - (F32(1.0) - lam[i - 1]) / F32(2.0)
    if scheme in (2, 4):
        lam[0], lam[n - 1] = F32(0.0), F32(1.0)
    return lam


def ref_multiplier(lam, ws_size: int, inter_size: int, warm: bool):  # noqa: ANN001, ANN201
    ws, inter = F32(ws_size), F32(inter_size)
    total = ws + inter
    total_weight = (F32(1) - lam) * ws + lam * inter
    with np.errstate(over="ignore"):  # (a phase of weight 0: inf, as VW)
        if warm:
            return (F32(1) - lam) * total / (total_weight + FLT_MIN)
        return lam * total / (total_weight + FLT_MIN)


def ref_find_min(arr: list) -> int:
    min_val, argmin = FLT_MAX, 0
    for i, v in enumerate(arr):
        if v < min_val:
            min_val, argmin = v, i
    return argmin


def ref_corrupt(draws, action: int, k: int, prob: float, kind: int, overwrite: int) -> int:  # noqa: ANN001
    if next(draws) < F32(prob):
        if kind == 1:
            f = next(draws)
            for i in range(1, k + 1):
                if f <= F32(i) / F32(k):
                    return i
            return k
        if kind == 3:
            return overwrite
        return (action % k) + 1
    return action


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8, 9])
def test_lambdas_equal_the_reference(n: int) -> None:
    for scheme, eps, ws, inter in itertools.product((1, 2, 3, 4), (0.0, 0.05, 0.3, 1.0),
                                                    (False, True), (False, True)):  # fmt: skip
        got = wk.lambdas(n, scheme, eps, ws, inter)
        want = np.array(ref_lambdas(n, scheme, eps, ws, inter), dtype=F32)
        assert got.dtype == F32
        assert got.tobytes() == want.tobytes(), (n, scheme, eps, ws, inter)


def test_the_suites_lambdas() -> None:
    """VW's closing line of its test 177 (8 lambdas, scheme 1) and of 178 (scheme 2)."""
    lam = wk.lambdas(8, 1, 0.05, True, True)
    assert (float(lam[0]), float(lam[-1])) == (0.03125, 0.9375)
    lam = wk.lambdas(8, 2, 0.05, True, True)
    assert (float(lam[0]), float(lam[4]), float(lam[-1])) == (0.0, 0.5, 1.0)


def test_multipliers_equal_the_reference() -> None:
    for lam, ws, inter, warm in itertools.product(
            (0.0, 0.03125, 0.25, 0.5, 0.9375, 1.0), (0, 1, 3, 50), (0, 7, 200, 4294967295),
            (False, True)):  # fmt: skip
        got = wk.multiplier(F32(lam), ws, inter, warm)
        want = ref_multiplier(F32(lam), ws, inter, warm)
        assert F32(got).tobytes() == F32(want).tobytes(), (lam, ws, inter, warm)


def test_find_min_is_the_first_least_cost() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        arr = rng.integers(0, 4, rng.integers(1, 9)).astype(F32)
        assert wk.find_min(arr) == ref_find_min(list(arr))
    assert wk.find_min(np.full(3, np.nan, dtype=F32)) == 0  # (nothing below FLT_MAX)
    assert wk.find_min(np.array([FLT_MAX, 5.0], dtype=F32)) == 1


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_corruption_equals_the_reference(kind: int) -> None:
    """VW draws once per warm-start line (twice when a uniform class replaces it)."""
    from streamlearn.learners.explore import merand48
    from streamlearn.run.warm_cb import _Play

    ml = types.SimpleNamespace(warm_cb=5, loss0=0.0, loss1=1.0, epsilon=0.1, choices_lambda=2,
                               lambda_scheme=1, warm_start_update=True,
                               interaction_update=True, corrupt_prob_warm_start=0.4,
                               corrupt_type_warm_start=kind, overwrite_label=4)  # fmt: skip
    play = _Play(ml, types.SimpleNamespace(seed=11))
    rng = np.array([11], dtype=np.uint64)

    def draws():  # noqa: ANN202
        while True:
            yield merand48(rng)

    stream = draws()
    labels = [1 + i % 5 for i in range(60)]
    got = [play.corrupt(y) for y in labels]
    want = [ref_corrupt(stream, y, 5, 0.4, kind, 4) for y in labels]
    assert got == want
    assert got != labels  # (some were corrupted)


def test_copies_carry_warm_cbs_indices() -> None:
    """VW's ``((idx >> ss)·28904713 + 4832917·a) << ss & mask`` with idx = h·W << ss."""
    bits, k, width = 12, 3, 8
    indptr = np.array([0, 2, 5], dtype=np.int64)
    indices = np.array([5, 4095, 0, 17, 11650396 & 4095], dtype=np.uint32)
    values = np.array([1.0, 0.5, 2.0, 1.5, 1.0])
    ptr = np.zeros(k + 1, dtype=np.int64)
    idx = np.zeros(3 * k, dtype=np.uint32)
    val = np.zeros(3 * k)
    wk.copy_actions(indptr, indices, values, 1, k, width, bits, ptr, idx, val)
    ss, mask = 2, (1 << (bits + 2)) - 1
    want = []
    for a in range(k):
        for h in (0, 17, 11650396):  # (VW's constant is not masked: the same slot)
            vw_idx = (h * width) << ss
            want.append(((((vw_idx >> ss) * 28904713) + 4832917 * a) << ss & mask) >> ss)
    assert ptr.tolist() == [0, 3, 6, 9]
    assert idx.tolist() == want
    assert val.tolist() == [2.0, 1.5, 1.0] * k
