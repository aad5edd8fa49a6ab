"""The pieces of VW's search that hold no state of a run: its options as read, its generator
(merand48, one draw at a time or many at once), its orders of time steps (hoopla), its
encoding of neighbour features, the names of its states and roll methods, its table's
formats (:mod:`streamlearn.reductions.search_engine` plays the search with them)."""

from __future__ import annotations

import numpy as np

F32 = np.float32
M64 = (1 << 64) - 1

INITIALIZE, GET_TRUTH, INIT_TEST, INIT_TRAIN, LEARN = range(5)
"""The search's states (VW's ``search_state``)."""
POLICY, ORACLE, MIX_PER_STATE, MIX_PER_ROLL, NO_ROLLOUT = range(5)
"""Its roll-in and roll-out methods (VW's ``roll_method``)."""
ROLL = {"policy": POLICY, "learn": POLICY, "oracle": ORACLE, "ref": ORACLE,
        "mix_per_state": MIX_PER_STATE, "mix_per_roll": MIX_PER_ROLL, "mix": MIX_PER_ROLL,
        "none": NO_ROLLOUT}  # fmt: skip
"""``--search_rollin``/``--search_rollout``'s words."""


class Rand48:
    """VW's ``rand_state``: merand48, a float32 in [0, 1) per draw."""

    def __init__(self, seed: int = 0) -> None:
        self.s = seed

    def next(self) -> np.float32:
        self.s = (self.s * 0xEECE66D5DEECE66D + 2147483647) & M64
        return F32(((self.s >> 25) & 0x7FFFFF) * (1.0 / (1 << 23)))

    def peek(self) -> np.float32:
        s = (self.s * 0xEECE66D5DEECE66D + 2147483647) & M64
        return F32(((s >> 25) & 0x7FFFFF) * (1.0 / (1 << 23)))


_JUMPS: list[np.ndarray] = []


def draws(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` draws of merand48 from state ``seed`` (float32) and the state after
    each (uint64), at once: state k is ``A^k s + c (A^k - 1)/(A - 1)`` mod 2^64, whose two
    coefficients are kept for every k met so far."""
    if not _JUMPS or _JUMPS[0].shape[0] < n + 1:
        m = max(n + 1, 1024)
        a = np.empty(m, dtype=np.uint64)
        c = np.empty(m, dtype=np.uint64)
        x, y = 1, 0
        for k in range(m):
            a[k], c[k] = x, y
            x = (x * 0xEECE66D5DEECE66D) & M64
            y = (y * 0xEECE66D5DEECE66D + 2147483647) & M64
        _JUMPS[:] = [a, c]
    a, c = _JUMPS
    with np.errstate(over="ignore"):
        states = a[1 : n + 1] * np.uint64(seed) + c[1 : n + 1]
    bits = (states >> np.uint64(25)) & np.uint64(0x7FFFFF)
    out = bits.astype(np.float32) * F32(1.0 / (1 << 23))
    return out, states


def parse_neighbors(text: str) -> list[int]:
    """``--search_neighbor_features -1:w,+2``: VW's encoding, offset << 24 | namespace."""
    out = []
    if not text:
        return out
    for part in text.split(","):
        bits = part.split(":")
        if len(bits) == 1:
            posn, ns = int(bits[0] or 0), " "
        elif len(bits) == 2:
            posn, ns = int(bits[0] or 0), (bits[1][:1] or " ")
        else:
            continue
        enc = ((posn << 24) & 0xFFFFFFFF) | (ord(ns) & 0xFF)
        out.append(enc - (1 << 32) if enc >= 1 << 31 else enc)
    return out


_HOOPLA: dict[int, list[int]] = {}


def hoopla_range(n: int) -> list[int]:
    """:func:`hoopla` of ``range(n)``, kept per length."""
    got = _HOOPLA.get(n)
    if got is None:
        got = _HOOPLA[n] = hoopla(list(range(n)))
    return list(got)


def hoopla(steps: list[int]) -> list[int]:
    """VW's ``hoopla_permute`` (Curtis, "Darts and hoopla board design"): the sorted steps
    laid out so that neighbours differ most."""
    b = sorted(steps)
    n = len(b)
    if n == 0:
        return b
    a = [0] * ((n + 1) * 2)
    a[n] = b[0]
    a[n + 1] = b[n - 1]
    lo, hi = n, n + 1
    i, j = 0, n - 1
    while i + 1 < j:
        d1 = abs(a[lo] - b[i + 1])
        d2 = abs(a[lo] - b[j - 1])
        d3 = abs(a[hi] - b[i + 1])
        d4 = abs(a[hi] - b[j - 1])
        mx = max(d1, d2, d3, d4)
        if d1 >= mx:
            i += 1
            lo -= 1
            a[lo] = b[i]
        elif d2 >= mx:
            j -= 1
            lo -= 1
            a[lo] = b[j]
        elif d3 >= mx:
            i += 1
            hi += 1
            a[hi] = b[i]
        else:
            j -= 1
            hi += 1
            a[hi] = b[j]
    return a[lo : lo + n]


class Options:
    """The search's options (VW's names without ``search_``)."""

    def __init__(self, ml) -> None:  # noqa: ANN001 - a reductions.Multiline
        o = dict(ml.search_options)
        self.raw = o
        self.A = int(ml.search)
        self.task = ml.search_task
        self.interpolation = o.get("search_interpolation", "data")
        self.rollout = ROLL[o.get("search_rollout", "mix_per_state")]
        self.rollin = ROLL[o.get("search_rollin", "mix_per_state")]
        self.passes_per_policy = int(o.get("search_passes_per_policy", 1))
        self.beta = F32(o.get("search_beta", 0.5))
        self.alpha = F32(o.get("search_alpha", 1e-10))
        self.history_length = int(o.get("search_history_length", 1))
        self.no_caching = bool(o.get("search_no_caching", False))
        self.subsample = F32(o.get("search_subsample_time", 0.0))
        self.perturb_oracle = F32(o.get("search_perturb_oracle", 0.0))
        self.linear_ordering = bool(o.get("search_linear_ordering", False))
        self.rollout_num_steps = int(o.get("search_rollout_num_steps", 0))
        self.xv = bool(o.get("search_xv", False))
        self.bias_n = int(o.get("search_max_bias_ngram_length", 1))
        self.quad_n = int(o.get("search_max_quad_ngram_length", 0))
        self.feature_value = F32(o.get("search_condition_feature_value", 1.0))
        self.neighbors = parse_neighbors(o.get("search_neighbor_features", ""))
        self.total_policies = int(o.get("search_total_nb_policies", 0))
        self.trained_policies = int(o.get("search_trained_nb_policies", 0))


TABLE_HEAD = (
    f"{'average':<10s} {'since':<10s} {'instance':>8s}{'current true':>24s} "
    f"{'current predicted':>22s} {'cur':>5s} {'cur':>5s}  {'predic':>7s}  {'cache':>7s}  "
    f"{'examples':>7s}  {'':<8s}\n"
    f"{'loss':<10s} {'last':<10s} {'counter':>8s}{'output prefix':>24s} "
    f"{'output prefix':>22s} {'pass':>5s} {'pol':>5s}  {'made':>7s}  {'hits':>7s}  "
    f"{'gener':>7s}  {'beta':<8s}"
)


def safediv(a: float, b: float) -> float:
    b32 = F32(b)
    return 0.0 if b32 == F32(0.0) else float(F32(F32(a) / b32))


def natural(n: int) -> str:
    if n > 9999999999:
        return f"{n // 1000000000}g"
    if n > 9999999:
        return f"{n // 1000000}m"
    if n > 9999:
        return f"{n // 1000}k"
    return str(n)


def short(text: str, width: int = 20) -> str:
    """VW's ``to_short_string``: ``width`` characters, ``..`` at the end when cut."""
    out = [(" " if (i >= len(text) or text[i] in "\n\t") else text[i]) for i in range(width)]
    if len(text) > width:
        out[width - 2] = "."
        out[width - 1] = "."
    return "".join(out)


def score_text(x: float) -> str:
    """A score as VW prints it (``-r``)."""
    from streamlearn.reductions.text import score_text as text

    return text(float(x))


def condition_range(hi: int, count: int, name0: str) -> tuple[list[int], str]:
    """VW's ``predictor::set_condition_range``: the tags ``hi, hi-1, ...`` (``count`` of
    them, none below 0) named ``name0``, ``name0 + 1``, ..."""
    tags = []
    names = ""
    for i in range(count):
        if i > hi:
            break
        tags.append(hi - i)
        names += chr(ord(name0) + i)
    return tags, names
