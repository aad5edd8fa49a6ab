"""VW's random numbers and exploration strategies: scores in, a probability mass function out.

Pure functions over plain arrays, as VW's ``explore/`` library and the
``cb_explore_adf_*`` reductions compute them, in float32 and in VW's order of
operations, so a pmf written by ``sl vw -p`` is VW's byte for byte:

* **Random numbers** (VW's ``random_details.h``): a 64-bit linear congruential
  generator ``s <- 0xeece66d5deece66d * s + 2147483647 (mod 2^64)``; the float is
  bits 25..47 of the new state as a mantissa, i.e. ``m / 2^23`` in [0, 1).
  :func:`merand48` advances a state held in a one-element uint64 array (VW's
  global state, seeded with ``--random_seed``, default 0); :func:`merand48_noadvance`
  draws from a copy.
* **Explorers** receive ``actions`` (int) and ``scores`` (float32): the cost
  scores of one multiline example sorted ascending by (score, action), as
  ``--cb_adf`` returns them, and overwrite ``scores`` with the probabilities
  (greedy, first, softmax, squarecb keep that order).  Bagging combines the
  sorted scores of each bag and writes its own order (:func:`bag_pmf`).
* **Ties** (:func:`fill_tied`): the leading actions whose score equals the first
  within VW's relative tolerance, ``|s_i - s_0| <= 1e-4 (|s_i| + |s_0|)``.

The pmf is written with :func:`pmf_text` (VW's ``VW::to_string`` of action
scores: ``action:prob`` comma-joined, six decimals with trailing zeros cut).

Sources (VW 9.11): ``explore/include/vw/explore/explore_internal.h``,
``core/include/vw/core/reductions/bs.h`` (``weight_gen``),
``core/include/vw/core/reductions/cb/cb_explore_adf_common.h`` (``fill_tied``,
``sort_action_probs``, the progressive loss) and
``core/src/reductions/cb/cb_explore_adf_{greedy,first,softmax,bag,squarecb}.cc``.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.system.jit import INTERPRETED, jit, jit_inline

F32 = np.float32
U64 = np.uint64
_A = np.uint64(0xEECE66D5DEECE66D)
_C = np.uint64(2147483647)
_SHIFT = np.uint64(25)
_MANTISSA = np.uint64(0x7FFFFF)
_ULP = np.float32(2.0**-23)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
_TOLERANCE = np.float32(1e-4)  # VW_DEFAULT_TOLERANCE, as a float (are_same_rel<float>)
_BAG_EMPTY = np.float32(1e-6)

APP_SEED = 53980556
"""``uniform_hash("vw", 2, 0)``: cbify's seed, to which it adds its example counter."""

# Poisson(1) thresholds of VW's bs::weight_gen (compared with a float promoted to double)
POISSON_THRESHOLDS = np.array([
    0.3678794411714423215955, 0.735758882342884643191, 0.919698602928605803989,
    0.9810118431238461909214, 0.9963401531726562876545, 0.9994058151824183070012,
    0.9999167588507119768923, 0.9999897508033253583053, 0.9999988747974020309819,
    0.9999998885745216612793, 0.9999999899522336243091, 0.9999999991683892573118,
    0.9999999999364022267287, 0.999999999995480147453, 0.9999999999996999989333,
    0.9999999999999813223654, 0.9999999999999989050799, 0.9999999999999999393572,
    0.999999999999999996817, 0.9999999999999999998412,
])  # fmt: skip


# --------------------------------------------------------------------------- expf

if INTERPRETED:
    import ctypes
    import ctypes.util

    _LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    _LIBM.expf.restype = ctypes.c_float
    _LIBM.expf.argtypes = [ctypes.c_float]

    def expf(x):  # noqa: ANN001, ANN201
        """C's ``expf`` (the C library's, as VW's ``std::exp`` of a float)."""
        return F32(_LIBM.expf(float(x)))

else:

    @jit_inline
    def expf(x):  # noqa: ANN001, ANN201
        """C's ``expf``: numba calls the C library's for a float32 (not correctly rounded:
        glibc's differs from the rounded exact value for ~1 float in 2000, and VW's
        softmax is glibc's)."""
        return math.exp(F32(x))


# --------------------------------------------------------------------------- randomness


@jit_inline
def lcg_step(s):
    """The generator's next state after ``s`` (uint64, wrapping)."""
    return s * _A + _C


@jit_inline
def state_float(s):
    """The float32 in [0, 1) that state ``s`` stands for: ``((s >> 25) & 0x7fffff) / 2^23``."""
    return F32((s >> _SHIFT) & _MANTISSA) * _ULP


@jit_inline
def merand48(state):
    """Advance ``state`` (uint64[1]) one step and return its float32 in [0, 1)."""
    s = lcg_step(state[0])
    state[0] = s
    return state_float(s)


@jit_inline
def merand48_noadvance(seed):
    """The float32 one step after ``seed``, without changing anything."""
    return state_float(lcg_step(U64(seed)))


@jit_inline
def poisson_draw(state):
    """VW's ``bs::weight_gen``: a Poisson(1) count from one draw of ``state``."""
    t = np.float64(merand48(state))
    for k in range(POISSON_THRESHOLDS.shape[0]):
        if t <= POISSON_THRESHOLDS[k]:
            return k
    return POISSON_THRESHOLDS.shape[0]


@jit_inline
def sample_after_normalizing(seed, pmf):
    """Choose an index of ``pmf`` with a draw from ``seed``; ``pmf`` is normalised in place.

    Negative entries become 0; with a zero total the first index is chosen and
    its probability set to 1.  The draw is ``total * merand48_noadvance(seed)``
    and the choice the first index whose running sum passes it (else the last).
    """
    total = _ZERO
    for i in range(pmf.shape[0]):
        if pmf[i] < _ZERO:
            pmf[i] = _ZERO
        total += pmf[i]
    if total == _ZERO:
        pmf[0] = _ONE
        return 0
    draw = total * merand48_noadvance(seed)
    if draw > total:
        draw = total
    chosen = -1
    run = _ZERO
    for i in range(pmf.shape[0]):
        run += pmf[i]
        if chosen < 0 and run > draw:
            chosen = i
        pmf[i] = pmf[i] / total
    if chosen < 0:
        chosen = pmf.shape[0] - 1
    return chosen


# --------------------------------------------------------------------------- pmf helpers


@jit_inline
def fill_tied(scores):
    """How many leading ``scores`` equal the first within VW's relative tolerance."""
    n = scores.shape[0]
    if n == 0:
        return 0
    s0 = scores[0]
    k = 1
    for i in range(1, n):
        si = scores[i]
        if abs(si - s0) <= _TOLERANCE * (abs(si) + abs(s0)):
            k += 1
        else:
            return k
    return k


@jit_inline
def enforce_minimum_probability(epsilon, consider_zero, pmf):
    """Raise every probability to at least ``epsilon / support``, keeping the sum (VW's order).

    ``epsilon`` 0 does nothing; above 0.999 the pmf becomes uniform over its
    support (every entry, or the non-zero ones when ``consider_zero`` is false).
    """
    eps = F32(epsilon)
    n = pmf.shape[0]
    if n == 0 or eps == _ZERO:
        return
    support = n
    if not consider_zero:
        for i in range(n):
            if pmf[i] == _ZERO:
                support -= 1
    if eps > F32(0.999):
        u = _ONE / F32(support)
        for i in range(n):
            if consider_zero or pmf[i] > _ZERO:
                pmf[i] = u
        return
    m = eps / F32(support)
    srt = np.sort(pmf)[::-1]
    run = _ZERO
    rho = 0
    rho_sum = srt[0]
    for idx in range(n):
        p = srt[idx]
        if not consider_zero and p == _ZERO:
            break
        run += p
        bound = (F32(support - idx - 1) * m + run - _ONE) / F32(idx + 1) + m
        if p > bound:
            rho = idx
            rho_sum = run
    tau = (F32(support - rho - 1) * m + rho_sum - _ONE) / F32(rho + 1)
    for i in range(n):
        if consider_zero or pmf[i] > _ZERO:
            pmf[i] = max(pmf[i] - tau, m)


# --------------------------------------------------------------------------- explorers


@jit_inline
def greedy_pmf(scores, epsilon, first_only):
    """Epsilon-greedy over sorted ``scores`` (``--epsilon``, ``--first_only``).

    Every action gets ``epsilon / K``; the tied leaders share ``1 - epsilon``
    (only the first with ``first_only``).
    """
    n = scores.shape[0]
    if n == 0:
        return
    eps = F32(epsilon)
    tied = fill_tied(scores)
    prob = eps / F32(n)
    for i in range(n):
        scores[i] = prob
    if first_only:
        scores[0] += _ONE - eps
    else:
        share = (_ONE - eps) / F32(tied)
        for i in range(tied):
            scores[i] += share


@jit_inline
def first_pmf(scores, tau, epsilon):
    """``--first T``: uniform while ``tau`` (learned examples still to explore) > 0, then greedy."""
    n = scores.shape[0]
    if n == 0:
        return
    if tau > 0:
        u = _ONE / F32(n)
        for i in range(n):
            scores[i] = u
    else:
        for i in range(1, n):
            scores[i] = _ZERO
        scores[0] = _ONE
    enforce_minimum_probability(epsilon, True, scores)


@jit_inline
def softmax_pmf(scores, lam, epsilon):
    """``--softmax --lambda L``: ``p_i`` proportional to ``exp(-L (s_i - min s))``, float32.

    VW's ``generate_softmax(-L, ...)``: the reference score is the minimum for
    L > 0 and the maximum otherwise; the exponential is the C library's ``expf``.
    """
    n = scores.shape[0]
    if n == 0:
        return
    lam_neg = -F32(lam)
    ref = scores[0]
    for i in range(1, n):
        if lam_neg > _ZERO:
            if scores[i] > ref:
                ref = scores[i]
        elif scores[i] < ref:
            ref = scores[i]
    norm = _ZERO
    for i in range(n):
        p = expf(lam_neg * (scores[i] - ref))
        norm += p
        scores[i] = p
    for i in range(n):
        scores[i] = scores[i] / norm
    enforce_minimum_probability(epsilon, True, scores)


@jit_inline
def squarecb_gamma(counter, gamma_scale, gamma_exponent):
    """SquareCB's greediness ``gamma_scale * counter^gamma_exponent`` (pow in double, as VW)."""
    g = math.pow(np.float64(counter), np.float64(F32(gamma_exponent)))
    return F32(gamma_scale) * F32(g)


@jit_inline
def squarecb_pmf(scores, gamma, epsilon):
    """``--squarecb``: ``1/(K + gamma (s_a - s_min))`` off the first argmin, the rest on it."""
    n = scores.shape[0]
    if n == 0:
        return
    g = F32(gamma)
    a_min = 0
    s_min = scores[0]
    for a in range(n):
        if scores[a] < s_min:
            a_min = a
            s_min = scores[a]
    total = _ZERO
    for a in range(n):
        if a == a_min:
            continue
        pa = _ONE / (F32(n) + g * (scores[a] - s_min))
        scores[a] = pa
        total += pa
    scores[a_min] = _ONE - total
    enforce_minimum_probability(epsilon, True, scores)


@jit_inline
def bag_add(actions, scores, first_only, sums, top):
    """Add one bag's sorted prediction: ``sums[a] += s``; its leader(s) a vote in ``top``."""
    n = scores.shape[0]
    for i in range(n):
        sums[actions[i]] += scores[i]
    if n == 0:
        return
    if first_only:
        top[actions[0]] += _ONE
    else:
        tied = fill_tied(scores)
        share = _ONE / F32(tied)
        for j in range(tied):
            top[actions[j]] += share


@jit_inline
def bag_finish(top, sums, epsilon, out_actions, out_probs):
    """The bag's pmf from its votes (``generate_bag``, minimum probability, ``sort_action_probs``).

    Writes actions and probabilities sorted by descending probability, then
    ascending summed score, then ascending action.
    """
    n = top.shape[0]
    if n == 0:
        return
    total = 0.0
    for i in range(n):
        total += np.float64(top[i])
    num_models = F32(total)
    if num_models <= _BAG_EMPTY:
        out_probs[0] = _ONE
        for i in range(1, n):
            out_probs[i] = _ZERO
    else:
        norm = _ONE / num_models
        for i in range(n):
            out_probs[i] = top[i] * norm
    for i in range(n):
        out_actions[i] = i
    enforce_minimum_probability(epsilon, True, out_probs[:n])
    # insertion sort (K is small, the order total)
    for i in range(1, n):
        a = out_actions[i]
        p = out_probs[i]
        j = i - 1
        while j >= 0 and _bag_before(p, a, out_probs[j], out_actions[j], sums):
            out_actions[j + 1] = out_actions[j]
            out_probs[j + 1] = out_probs[j]
            j -= 1
        out_actions[j + 1] = a
        out_probs[j + 1] = p


@jit_inline
def _bag_before(p1, a1, p2, a2, sums):
    if p1 > p2:
        return True
    if p1 < p2:
        return False
    if sums[a1] < sums[a2]:
        return True
    if sums[a1] > sums[a2]:
        return False
    return a1 < a2


@jit
def bag_pmf(bag_actions, bag_scores, epsilon, first_only, out_actions, out_probs):
    """``--bag B``: the pmf of B bags' sorted scores (rows of ``bag_actions``, ``bag_scores``)."""
    n = bag_scores.shape[1]
    sums = np.zeros(n, dtype=np.float32)
    top = np.zeros(n, dtype=np.float32)
    for b in range(bag_scores.shape[0]):
        bag_add(bag_actions[b], bag_scores[b], first_only, sums, top)
    bag_finish(top, sums, epsilon, out_actions, out_probs)


@jit_inline
def bag_learn_counts(state, bags, greedify, out):
    """How many times each bag learns this example: Poisson(1) draws from ``state`` in bag order.

    With ``greedify`` bag 0 learns once and takes no draw.
    """
    for b in range(bags):
        if greedify and b == 0:
            out[b] = 1
        else:
            out[b] = poisson_draw(state)


@jit_inline
def explore_loss(actions, probs, weights, action, cost, probability):
    """VW's progressive loss: ``sum_i c(a_i) p_i w_i``, ``c = cost/prob`` on the logged action.

    ``weights[i]`` is the importance weight of the i-th *action line* (VW indexes
    the weights by position in the pmf, not by action); 0 when ``probability`` <= 0.
    """
    loss = _ZERO
    if probability <= _ZERO:
        return loss
    for i in range(probs.shape[0]):
        if actions[i] == action:
            est = F32(cost) / F32(probability)
            loss += est * probs[i] * F32(weights[i])
    return loss


# --------------------------------------------------------------------------- text


def prob_text(p: float) -> str:
    """VW's ``fmt_float(p, 6)``: six decimals, trailing zeros and point cut.

    >>> prob_text(0.0125), prob_text(1.0), prob_text(0.32916668), prob_text(1e-8)
    ('0.0125', '1', '0.329167', '0')
    """
    v = float(F32(p))
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = f"{v:.6f}".rstrip("0")
    return s[:-1] if s.endswith(".") else s


def pmf_text(actions: np.ndarray, probs: np.ndarray, tag: str = "") -> str:
    """One example's ``-p`` text as VW writes it: ``a:p,a:p[ tag]`` then a blank line.

    >>> pmf_text(np.array([1, 0]), np.array([0.975, 0.025], dtype=np.float32))
    '1:0.975,0:0.025\\n\\n'
    """
    body = ",".join(f"{int(a)}:{prob_text(p)}" for a, p in zip(actions, probs, strict=True))
    if tag:
        body += " " + tag
    return body + "\n\n"


# --------------------------------------------------------------------------- over a batch

GREEDY = 0
FIRST = 1
SOFTMAX = 2
SQUARECB = 3
BAG = 4
COVER = 5
REGCB = 6  # --regcb, --regcbopt, --squarecb --elim (learners/cb_regcb.py)
SYNTHCOVER = 7
RND = 8  # learners/cb_rnd.py
EXPLORERS = {"greedy": GREEDY, "first": FIRST, "softmax": SOFTMAX, "squarecb": SQUARECB,
             "bag": BAG, "cover": COVER, "regcb": REGCB, "synthcover": SYNTHCOVER,
             "rnd": RND}  # fmt: skip

# xstats slots
X_LOSS = 0
X_N = 1
X_HO_LOSS = 2
X_HO_N = 3
X_TAU = 4  # --first: learned examples still to explore
X_COUNTER = 5  # --squarecb, --cover: examples learned
XSTATS = 6


@jit
def explore_examples(kind, epsilon, first_only, lam, gamma_scale, gamma_exponent, act_ptr,
                     scores, order, chosen, cost, prob, holdout, holdout_learns, learning, xstats,
                     out_actions, out_probs):  # fmt: skip
    """The pmf of each example of a batch from cb_adf's pre-learning scores, and its loss.

    ``scores``/``order`` are :func:`streamlearn.learners.cb_adf.train_examples`' outputs
    (each line's score; per example its actions sorted by (score, action)).  Writes the
    pmf, in the explorer's order, to ``out_actions``/``out_probs`` at the example's rows,
    adds VW's progressive loss ``cost/p · pmf(logged action)`` of labeled examples to
    ``xstats`` (held-out apart) and counts the learned examples (``--first``'s tau,
    ``--squarecb``'s counter) as VW's explorers do.
    """
    ones = np.ones(64, dtype=np.float32)
    for e in range(act_ptr.shape[0] - 1):
        lo = act_ptr[e]
        hi = act_ptr[e + 1]
        n = hi - lo
        if n == 0:
            continue
        if n > ones.shape[0]:
            ones = np.ones(2 * n, dtype=np.float32)
        for i in range(n):
            a = order[lo + i]
            out_actions[lo + i] = a
            out_probs[lo + i] = F32(scores[lo + a])
        p = out_probs[lo:hi]
        labeled = chosen[e] >= 0
        # VW learns held-out multiline examples too: the explorers count them (not
        # held-out single-line ones: ``holdout_learns`` as in cb_adf.train_examples)
        learn = labeled and learning and (holdout_learns or not holdout[e])
        if kind == GREEDY:
            greedy_pmf(p, epsilon, first_only)
        elif kind == FIRST:
            first_pmf(p, int(xstats[X_TAU]), epsilon)
            if learn and xstats[X_TAU] > 0:
                xstats[X_TAU] -= 1.0
        elif kind == SOFTMAX:
            softmax_pmf(p, lam, epsilon)
        elif kind == SQUARECB:
            g = squarecb_gamma(int(xstats[X_COUNTER]), gamma_scale, gamma_exponent)
            squarecb_pmf(p, g, epsilon)
            if learn:
                xstats[X_COUNTER] += 1.0
        if labeled and prob[e] > 0.0:
            loss = explore_loss(out_actions[lo:hi], p, ones[:n], chosen[e], F32(cost[e]),
                                F32(prob[e]))  # fmt: skip
            if holdout[e]:
                xstats[X_HO_LOSS] += np.float64(loss)
                xstats[X_HO_N] += 1.0
            else:
                xstats[X_LOSS] += np.float64(loss)
                xstats[X_N] += 1.0


# --------------------------------------------------------------------------- synthetic cover


@jit_inline
def _as_less(s1, a1, s2, a2):
    """VW's ``action_score`` order: by score, then action."""
    return s1 < s2 or (s1 == s2 and a1 < a2)


@jit_inline
def synthcover_pmf(actions, scores, lo_cost, hi_cost, psi, size, epsilon, out_actions, out_probs):
    """``--synthcover``: ``size`` synthetic policies, each the cheapest action of costs that
    grow by ``psi/size`` each time an action is picked (VW's heap of scores clamped to the
    costs seen); the pmf is the picks' share, floored at ``epsilon``, sorted by probability
    then action, both descending.  ``actions``/``scores``: cb_adf's ranking (changed)."""
    n = scores.shape[0]
    if n == 1:
        out_actions[0] = actions[0]
        out_probs[0] = _ONE
        return
    for i in range(n):
        s = scores[i]
        if s < lo_cost:
            s = lo_cost
        if s > hi_cost:
            s = hi_cost
        scores[i] = s
        out_probs[i] = _ZERO
    unit = _ONE / F32(size)
    step = unit * F32(psi)
    i = 0
    while i < size:
        # the heap's smallest (by score, action), then the smallest of the others
        m = 0
        for j in range(1, n):
            if _as_less(scores[j], actions[j], scores[m], actions[m]):
                m = j
        s2 = -1
        for j in range(n):
            if j != m and (s2 < 0 or _as_less(scores[j], actions[j], scores[s2], actions[s2])):
                s2 = j
        second = scores[s2]
        while second >= scores[m] and i < size:
            out_probs[actions[m]] += unit
            scores[m] += step
            i += 1
    enforce_minimum_probability(epsilon, True, out_probs[:n])
    for j in range(n):
        out_actions[j] = j
    # descending by (probability, action)
    for j in range(1, n):
        a = out_actions[j]
        p = out_probs[j]
        t = j - 1
        while t >= 0 and _as_less(out_probs[t], out_actions[t], p, a):
            out_actions[t + 1] = out_actions[t]
            out_probs[t + 1] = out_probs[t]
            t -= 1
        out_actions[t + 1] = a
        out_probs[t + 1] = p


@jit
def synthcover_examples(act_ptr, scores, order, chosen, cost, prob, holdout, learning, epsilon,
                        psi, size, costs, xstats, out_actions, out_probs):  # fmt: skip
    """The synthetic cover's pmf of each example of a batch from cb_adf's pre-learning
    ranking, and VW's loss.  ``costs`` = [lowest, highest] logged cost seen (from 0), grown
    by each learned example after its pmf (the pmf VW outputs is its predict's, made with
    the label hidden)."""
    ones = np.ones(64, dtype=np.float32)
    acts = np.empty(64, dtype=np.int64)
    sc = np.empty(64, dtype=np.float32)
    for e in range(act_ptr.shape[0] - 1):
        lo = act_ptr[e]
        hi = act_ptr[e + 1]
        n = hi - lo
        if n == 0:
            continue
        if n > ones.shape[0]:
            ones = np.ones(2 * n, dtype=np.float32)
            acts = np.empty(2 * n, dtype=np.int64)
            sc = np.empty(2 * n, dtype=np.float32)
        labeled = chosen[e] >= 0
        for i in range(n):
            a = order[lo + i]
            acts[i] = a
            sc[i] = F32(scores[lo + a])
        p = out_probs[lo:hi]
        synthcover_pmf(acts[:n], sc[:n], F32(costs[0]), F32(costs[1]), psi, size, epsilon,
                       out_actions[lo:hi], p)  # fmt: skip
        if labeled and learning:
            c = F32(cost[e])
            costs[0] = min(F32(costs[0]), c)
            costs[1] = max(F32(costs[1]), c)
        if labeled and prob[e] > 0.0:
            loss = explore_loss(out_actions[lo:hi], p, ones[:n], chosen[e], F32(cost[e]),
                                F32(prob[e]))  # fmt: skip
            if holdout[e]:
                xstats[X_HO_LOSS] += np.float64(loss)
                xstats[X_HO_N] += 1.0
            else:
                xstats[X_LOSS] += np.float64(loss)
                xstats[X_N] += 1.0


@jit
def cb_sample(state, actions, probs, logged, tag_seed):  # noqa: ANN001, ANN201
    """VW's ``cb_sample`` over one pmf (``actions``/``probs``, the explorer's order): the
    logged action (``logged`` >= 0, a learned example) or else an action drawn with
    :func:`sample_after_normalizing` from ``state`` (VW's global generator, advanced one
    step; ``probs`` normalised) -- or from ``tag_seed`` when >= 0 (a ``seed=...`` tag:
    the generator is left alone) -- is swapped to the front.  Returns the index it came
    from.
    """
    n = actions.shape[0]
    if n == 0:
        return -1
    chosen = 0
    if logged >= 0:
        for i in range(n):
            if actions[i] == logged:
                chosen = i
                break
    elif tag_seed >= 0:
        chosen = sample_after_normalizing(U64(tag_seed), probs)
    else:
        chosen = sample_after_normalizing(state[0], probs)
        merand48(state)
    a = actions[0]
    actions[0] = actions[chosen]
    actions[chosen] = a
    p = probs[0]
    probs[0] = probs[chosen]
    probs[chosen] = p
    return chosen
