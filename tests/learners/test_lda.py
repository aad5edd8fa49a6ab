"""``--lda K`` (VW's ``lda_core.cc``): the lazy kernels (:mod:`streamlearn.learners.lda`)
against online variational Bayes written densely from Hoffman, Blei & Bach (2010) in
float64, the minibatch's sort against libstdc++'s, then ``sl vw`` beside VW 9.11.9 on
documents of our own (loss, ``-p``, the model's every float, ``--audit``, the readable
model, passes), models both ways, refusals.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from streamlearn.learners import lda
from tests import unix
from tests.unix import SL_VW, VW_MODULE

F = np.float32
DATA = Path(__file__).resolve().parent.parent / "data"


# ---------------------------------------------------------------------- the dense reference


def _digamma(x: float) -> float:
    r = 0.0
    while x < 8.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return r + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f / 240)))


class DenseLDA:
    """Online variational Bayes for LDA as the paper states it (Algorithm 2, minibatch
    form), with VW's conventions: λ kept less ρ, every row decayed by ``1 - η_t`` at each
    minibatch (O(W·K): no lazy ledger), ``η_t = l·t^(-p)``, γ iterated from 1 until its mean
    change per unit is at most ε, the topic totals Σ_w λ tracked as VW tracks them."""

    def __init__(self, lam: np.ndarray, alpha, rho, d, eps, rate, power_t) -> None:
        self.lam = lam.astype(np.float64)
        self.alpha, self.rho, self.d, self.eps = alpha, rho, d, eps
        self.rate, self.power_t = rate, power_t
        self.t = 0
        self.total = self.lam.sum(axis=0)

    def batch(self, docs: list[list[tuple[int, float]]]) -> np.ndarray:
        k = self.lam.shape[1]
        self.t += 1
        eta_t = self.rate * self.t ** -self.power_t
        eta = eta_t * self.d / len(docs)
        norm = np.array([_digamma(s + self.lam.shape[0] * self.rho) for s in self.total])
        u = {}
        for doc in docs:
            for w, _ in doc:
                u[w] = np.exp([_digamma(self.lam[w, j] + self.rho) - norm[j] for j in range(k)])
        gammas, vs = [], []
        for doc in docs:
            g = np.ones(k)
            while True:
                v = np.exp([_digamma(x) for x in g]) / math.exp(_digamma(g.sum()))
                new = np.zeros(k)
                for w, x in doc:
                    new += x * u[w] / (u[w] @ v)
                new = new * v + self.alpha
                done = np.abs(g - new).sum() / new.sum() <= self.eps
                g = new
                if done:
                    break
            gammas.append(g)
            vs.append(v)
        self.lam *= 1.0 - eta_t  # (the dense decay: every row, every minibatch)
        new_total = np.zeros(k)
        for d, doc in enumerate(docs):
            for w, x in doc:
                add = eta * x * u[w] * vs[d] / (u[w] @ vs[d])
                self.lam[w] += add
                new_total += add
        self.total = self.total * (1.0 - eta_t) + new_total
        return np.array(gammas)


def _documents(seed: int, n: int, words: int) -> list[list[tuple[int, float]]]:
    r = random.Random(seed)
    return [[(r.randrange(words), float(r.randint(1, 4))) for _ in range(r.randint(1, 12))]
            for _ in range(n)]  # fmt: skip


def _csr(docs):
    ptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
    slots = np.array([w for d in docs for w, _ in d], dtype=np.int64)
    xs = np.array([x for d in docs for _, x in d], dtype=F)
    return ptr, slots, xs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("batch", "power_t"), [(1, 0.5), (4, 0.5), (3, 0.0)])
def test_lazy_kernels_equal_the_dense_algorithm(seed, batch, power_t):
    """The kernels (VW's accurate math mode, its lazy decay: each row settles
    ``exp(Σ log(1 - η))`` when a minibatch reads it, the rest at the end) give the dense
    algorithm's λ and γ, decaying (power_t 0.5) and constant (0) rates."""
    k, bits = 4, 5
    docs = _documents(seed, 36, 1 << bits)
    table = lda.fresh_table(bits, k, 50.0)
    dense = DenseLDA(table[:, :k], 0.1, 0.1, 50.0, 1e-5, 0.5, power_t)
    conf = np.array([0.1, 0.1, 50.0, 1e-5, 0.5, power_t, lda.PRECISE, float(1 << bits)])
    state = np.zeros(lda.STATE_SIZE)
    state[lda.S_DECAYS] = 1
    decay = np.zeros(64, dtype=F)
    total = lda.totals(table, k)
    v = np.zeros(batch * k, dtype=F)
    for b0 in range(0, len(docs) - batch + 1, batch):
        part = docs[b0 : b0 + batch]
        ptr, slots, xs = _csr(part)
        gam = np.zeros((batch, k), dtype=F)
        lda.learn_block(table, k, conf, state, decay, total, ptr, slots, xs, v, gam,
                        np.zeros(batch, F), np.zeros(batch, np.int64), np.zeros(1, np.bool_),
                        batch)  # fmt: skip
        np.testing.assert_allclose(gam, dense.batch(part), rtol=2e-4)
    lda.settle(table, k, float(state[lda.S_T]), decay, int(state[lda.S_DECAYS]))
    np.testing.assert_allclose(table[:, :k], dense.lam, rtol=2e-4, atol=1e-6)


def test_the_minibatch_sort_is_libstdcxx_s():
    """Equal slots (a word of several documents) end in the order libstdc++'s std::sort
    leaves them, which fixes the order of VW's float sums (``tests/data`` holds its orders;
    with a C++ compiler here, more are checked live)."""
    cases = json.loads((DATA / "lda_sort_orders.json").read_text())["cases"]
    for case in cases:
        keys = np.array(case["keys"], dtype=np.int64)
        order = np.arange(keys.shape[0], dtype=np.int64)
        lda.sort_slots(keys, order, np.zeros(lda.STACK, dtype=np.int64), np.zeros_like(keys))
        assert order.tolist() == case["order"]


def test_the_sort_beside_a_live_std_sort(tmp_path):
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src = tmp_path / "s.cc"
    src.write_text(
        "#include <algorithm>\n#include <cstdio>\n#include <vector>\n"
        "struct E { int p; long k; bool operator<(const E& b) const { return k < b.k; } };\n"
        "int main() { int n; while (scanf(\"%d\", &n) == 1) { std::vector<E> v(n);"
        " for (int i = 0; i < n; i++) { v[i].p = i; scanf(\"%ld\", &v[i].k); }"
        " std::sort(v.begin(), v.end()); for (auto& e : v) printf(\"%d \", e.p);"
        " printf(\"\\n\"); } }\n"
    )
    if subprocess.run([cxx, "-O2", "-o", str(tmp_path / "s"), str(src)]).returncode:
        pytest.skip("the compiler failed")
    rng = np.random.default_rng(3)
    cases = [rng.integers(0, [2, 30, 10**6][i % 3], int(rng.integers(0, 2500)))
             for i in range(60)] + [np.zeros(3000, np.int64), np.arange(3000)[::-1].copy()]
    text = "".join(f"{c.shape[0]} " + " ".join(map(str, c)) + "\n" for c in cases)
    out = subprocess.run([str(tmp_path / "s")], input=text, capture_output=True,
                         text=True).stdout.splitlines()  # fmt: skip
    for keys, line in zip(cases, out, strict=True):
        order = np.arange(keys.shape[0], dtype=np.int64)
        lda.sort_slots(keys.astype(np.int64), order, np.zeros(lda.STACK, dtype=np.int64),
                       np.zeros(keys.shape[0], dtype=np.int64))  # fmt: skip
        assert order.tolist() == [int(x) for x in line.split()]


# ---------------------------------------------------------------------- beside VW


def _corpus(tmp_path: Path, seed: int = 0, n: int = 60, fractional: bool = False) -> str:
    r = random.Random(seed)
    lines = []
    for i in range(n):
        words = " ".join(
            f"{r.randrange(400)}:{r.uniform(0.5, 6):.4f}" if fractional
            else f"w{r.randrange(300)}:{r.randint(1, 5)}" for _ in range(r.randint(3, 30)))
        tag = f"doc{i}" if i % 7 == 0 else ""
        ns = "|" if i % 5 else "|t"
        if i % 11 == 4:  # (a document of no word: γ = α, its loss not counted; with other
            words = ""  # documents in its minibatch sl divided by its length, 0)
        lines.append(f"{tag}{ns} {words}" if tag else f"{ns} {words}")
    (tmp_path / "docs.txt").write_text("\n".join(lines) + "\n")
    return "docs.txt"


def _rows(path: Path, k: int) -> tuple[str, np.ndarray]:
    from streamlearn.io import vwmodel

    data = path.read_bytes()
    h = vwmodel.read_header(data)
    rec = np.frombuffer(data[h.end :], dtype=[("i", "<u8"), ("w", "<f4", (k,))])
    return h.options, rec["w"]


def _stderr_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if not ln.startswith("compiling ")]


VW_CASES = [
    ["--lda", "3", "-b", "10"],
    ["--lda", "10", "-b", "12", "--lda_alpha", "0.05", "--lda_rho", "0.2"],
    ["--lda", "7", "-b", "11", "--minibatch", "8", "--lda_D", "500"],
    ["--lda", "12", "-b", "11", "--math-mode", "2", "--minibatch", "3"],
    ["--lda", "5", "-b", "10", "-c", "-k", "--passes", "3", "--holdout_off"],
    ["--lda", "6", "-b", "10", "-l", "0.8", "--power_t", "0.3", "--lda_epsilon", "0.01"],
    ["--lda", "4", "-b", "10", "-c", "-k", "--passes", "4"],  # (a holdout: VW's 0 h)
    ["--lda", "3", "-b", "9", "--initial_t", "2"],
]


@pytest.mark.parametrize("args", VW_CASES)
@pytest.mark.parametrize("fractional", [False, True])
def test_sl_vw_gives_vw_s_numbers(tmp_path, args, fractional):
    """Loss, progress table, ``-p`` and every float of the model equal VW's (VW's SIMD and
    fast-approximation math modes, minibatches, passes over a cache, rates)."""
    pytest.importorskip("vowpalwabbit")
    data = _corpus(tmp_path, 4, fractional=fractional)
    k = int(args[1])
    vw = unix.run_module(VW_MODULE, ["-d", data, *args, "-p", "vw.p", "-f", "vw.m"], tmp_path)
    sl = unix.run_module(SL_VW, ["-d", data, *args, "-p", "sl.p", "-f", "sl.m"], tmp_path)
    table = lambda t: [ln for ln in _stderr_lines(t) if ln[:1].isdigit() or "loss" in ln]  # noqa: E731
    assert table(sl.stderr) == table(vw.stderr)
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    (vo, vrows), (so, srows) = _rows(tmp_path / "vw.m", k), _rows(tmp_path / "sl.m", k)
    assert so == vo
    assert np.array_equal(srows, vrows)


def test_passes_over_a_pipe_replay_the_documents(tmp_path):
    """Without a cache, later passes replay the parsed documents (a pipe is read once): the
    same numbers as passes over the cache."""
    data = _corpus(tmp_path, 9)
    args = ["--lda", "3", "-b", "9", "--passes", "3", "--holdout_off"]
    piped = unix.sl(["vw", *args, "-f", "a.vw"], tmp_path, capture_output=True, text=True,
                    input=(tmp_path / data).read_text())  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    unix.run_module(SL_VW, ["-d", data, *args, "-c", "-k", "-f", "b.vw"], tmp_path)
    assert (tmp_path / "a.vw").read_bytes() == (tmp_path / "b.vw").read_bytes()


def test_the_accurate_math_mode_is_within_vw_s_rounding(tmp_path):
    """``--math-mode 1``: VW's digamma is boost's, whose float results sl does not repeat to
    the last bit (about one call in 2,000 rounds the other way): the figures agree to
    1e-4."""
    pytest.importorskip("vowpalwabbit")
    data = _corpus(tmp_path, 2)
    args = ["-d", data, "--lda", "8", "-b", "10", "--math-mode", "1"]
    unix.run_module(VW_MODULE, [*args, "-f", "vw.m"], tmp_path)
    unix.run_module(SL_VW, [*args, "-f", "sl.m"], tmp_path)
    np.testing.assert_allclose(_rows(tmp_path / "sl.m", 8)[1], _rows(tmp_path / "vw.m", 8)[1],
                               rtol=1e-4)  # fmt: skip


def test_audit_and_readable_model_are_vw_s(tmp_path):
    pytest.importorskip("vowpalwabbit")
    data = _corpus(tmp_path, 6, n=12)
    args = ["-d", data, "--lda", "3", "-b", "9", "--audit", "--readable_model"]
    vw = unix.run_module(VW_MODULE, [*args, "vw.txt"], tmp_path)
    sl = unix.run_module(SL_VW, [*args, "sl.txt"], tmp_path)
    assert sl.stdout == vw.stdout
    vw_text = (tmp_path / "vw.txt").read_text().split("\n", 1)[1]
    assert (tmp_path / "sl.txt").read_text().split("\n", 1)[1] == vw_text


def test_models_move_both_ways(tmp_path):
    """VW's model continued by sl equals VW continuing it; sl's model read by VW gives sl's
    predictions (VW's -t learns as it goes: so does sl vw -t)."""
    pytest.importorskip("vowpalwabbit")
    data = _corpus(tmp_path, 8)
    train = ["-d", data, "--lda", "4", "-b", "10"]
    unix.run_module(VW_MODULE, [*train, "-f", "vw.m"], tmp_path)
    unix.run_module(SL_VW, [*train, "-f", "sl.m"], tmp_path)
    unix.run_module(VW_MODULE, ["-d", data, "-i", "vw.m", "-f", "vw2.m"], tmp_path)
    unix.run_module(SL_VW, ["-d", data, "-i", "vw.m", "-f", "sl2.m"], tmp_path)
    assert np.array_equal(_rows(tmp_path / "sl2.m", 4)[1], _rows(tmp_path / "vw2.m", 4)[1])
    out = unix.scored_both_ways(data, tmp_path)
    assert len(set(out.values())) == 1, out


@pytest.mark.parametrize(("args", "said"), [
    (["--minibatch", "4"], "--minibatch is an option of --lda"),
    (["--math-mode", "1"], "--math-mode is an option of --lda"),
    (["--lda", "0"], "at least one topic"),
    (["--lda", "3", "--math-mode", "3"], "--math-mode 3"),
    (["--lda", "3", "--oaa", "3"], "base learner"),
    (["--lda", "3", "-q", "ab"], "base learner"),
    (["--lda", "3", "--invert_hash", "x.txt"], "--invert_hash with --lda"),
    (["--lda", "100000"], "at most"),
    (["--lda", "3", "--initial_t", "1e9"], "from 0 to"),
])  # fmt: skip
def test_refusals_are_one_line(tmp_path, args, said):
    (tmp_path / "d.txt").write_text("| a:1 b:2\n")
    r = unix.sl(["vw", "-d", "d.txt", *args], tmp_path, capture_output=True, text=True)
    assert r.returncode != 0
    unix.one_line_error(r.stderr)
    assert said in r.stderr


def test_the_server_and_the_api_refuse_it_in_one_line(tmp_path):
    """Neither ``sl vw --daemon`` over an LDA model nor the ``vowpalwabbit`` API runs LDA's
    documents yet: each says so in one line (they took CCB's path and misread the model)."""
    from streamlearn.errors import UsageError
    from streamlearn.vowpalwabbit import Workspace

    data = _corpus(tmp_path, 1, n=12)
    unix.run_module(SL_VW, ["-d", data, "--lda", "2", "-b", "8", "-f", "m.vw"], tmp_path)
    r = unix.sl(["vw", "--daemon", "--port", "0", "--foreground", "-i", "m.vw"], tmp_path,
                capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2
    unix.one_line_error(r.stderr)
    assert "--lda: only sl vw's passes run its examples" in r.stderr
    with pytest.raises(UsageError, match="--lda: only sl vw's passes"):
        Workspace("--lda 3 --quiet")


def test_fastpow2_with_32_bit_casts_is_the_64_bit_casts():
    """VW's ``fastpow2`` in 32-bit conversions (what vectorizes on AVX2) gives the bits of
    its 64-bit casts (``int(clipp)``, the low 32 bits of the cast of v) for float32 inputs
    of every kind: a million random bit patterns, ±0, ±inf, NaN, the clip and cast edges
    (all 2^32 were checked when it was written)."""
    import numba

    from streamlearn.learners import lda_math

    rng = np.random.default_rng(7)
    bits = np.concatenate([rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32),
                           np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000],
                                    dtype=np.uint32)])  # fmt: skip
    p = np.concatenate([bits.view(F), np.array([-126, -126.5, 127, 128, 129, 2.0**31, 2.0**32,
                                                2.0**63, -2.0**63, 1e30, -1e30], dtype=F)])
    with np.errstate(all="ignore"):  # (x86's casts: out of range and NaN give -2^63)
        offset = np.where(p < 0, F(1), F(0))
        clipp = np.where(p < -126, F(-126), p)
        w = clipp.astype(np.int64).astype(F)
        z = clipp - w + offset
        v = F(1 << 23) * (clipp + F(121.2740838) + F(27.7280233) / (F(4.84252568) - z)
                          - F(1.49012907) * z)  # fmt: skip
        want = (v.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)

    @numba.njit
    def pow2_all(p, out):  # noqa: ANN001, ANN202
        for i in range(p.shape[0]):
            out[i] = lda_math.f32_bits(lda_math._pow2(p[i]))

    got = np.zeros(p.shape[0], dtype=np.uint32)
    pow2_all(p, got)
    assert np.array_equal(got, want)
