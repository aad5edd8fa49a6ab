"""``--ksvm`` (:mod:`streamlearn.reductions.ksvm`, :mod:`streamlearn.learners.ksvm`): the
kernel against a reference transcribed from VW's ``kernel_svm.cc`` (plain Python lists: each
example's kernel row, the model's order, the pool), and against VW 9.11.9 on data of our own:
``-p``, progress and VW's lines, model files byte for byte, models read by the other program;
``sl train --ksvm``, a model continued, and the refusals."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from tests.marks import slow_except
from tests.reductions.test_lrq import _sl, needs_vw

F32 = np.float32
F64 = np.float64


def _data(path: Path, n: int, seed: int, tags: bool = True) -> None:
    """Binary lines in two namespaces (values, an importance weight now and then, a tag, an
    unlabeled line, a feature repeated)."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        y = rnd.choice([1, -1])
        a = " ".join(f"u{rnd.randrange(25)}:{rnd.choice(['1', '0.5', '-1', '2', '0.3'])}"
                     for _ in range(rnd.randint(1, 4)))  # fmt: skip
        b = f"m{rnd.randrange(9)}:{y * rnd.random():.3f}"
        label = "" if rnd.random() < 0.05 else str(y)
        if label and rnd.random() < 0.1:
            label += f" {rnd.choice(['0.5', '2', '3'])}"
        tag = f"'t{i}" if tags and rnd.random() < 0.2 else ""
        lines.append(f"{label} {tag}|a {a} |b {b}".strip())
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# the reference: kernel_svm.cc as written, over lists


class _Rng:
    def __init__(self, seed: int) -> None:
        from streamlearn.learners.explore import merand48

        self.state = np.array([seed], dtype=np.uint64)
        self.draw = merand48

    def __call__(self) -> np.float32:
        return self.draw(self.state)


def _flat(feats):
    """VW's ``flatten_sort_example``: sorted by (index, value), equal indices summed; Σx²."""
    out: list[list] = []
    for i, v in sorted((i, F32(v)) for i, v in feats):
        if out and out[-1][0] == i:
            out[-1][1] = F32(out[-1][1] + v)
        else:
            out.append([i, v])
    sq = F32(0.0)
    for _, v in out:
        sq = F32(sq + F32(v * v))
    return out, sq


def _dot(f1, f2):
    d = F32(0.0)
    j2 = dict(f2)
    for i, v in f1:
        if i in j2:
            d = F32(d + F32(v * j2[i]))
    return d


class _Ex:
    def __init__(self, y, a, feats):
        self.y, self.a = F32(y), F32(a)
        self.fs, self.sq = _flat(feats)
        self.krow: list = []


class _Reference:
    def __init__(self, kind, bandwidth, degree, lam, reprocess, pool_size, seed):
        self.kind, self.bw, self.deg = kind, F32(bandwidth), degree
        self.lam, self.reprocess, self.pool_size = F32(lam), reprocess, pool_size
        self.rng = _Rng(seed)
        self.sv: list[_Ex] = []
        self.alpha: list = []
        self.delta: list = []
        self.pool: list[_Ex] = []
        self.evals = self.cache = 0
        self.loss_sum = F32(0.0)

    def kernel(self, x, z):
        from streamlearn.learners.losses import expf  # (the C library's, as VW calls)

        d = _dot(x.fs, z.fs)
        if self.kind == "rbf":
            return F32(expf(F32(-F32(F32(x.sq + z.sq) - F32(2.0) * d) * self.bw)))
        if self.kind == "poly":
            return F32(np.power(F64(F32(1.0) + d), F64(self.deg)))
        return d

    def compute(self, x):
        n = len(self.sv)
        if len(x.krow) < n:
            self.evals += len(x.krow)
            for i in range(len(x.krow), n):
                x.krow.append(self.kernel(x, self.sv[i]))
        else:
            self.cache += n

    def predict(self, x):
        self.compute(x)
        if not x.krow:
            return F32(0.0)
        d = F32(0.0)
        for i in range(len(self.sv)):
            d = F32(d + F32(x.krow[i] * self.alpha[i]))
        return F32(d / self.lam)

    def remove(self, svi):
        del self.sv[svi], self.alpha[svi], self.delta[svi]
        for e in self.sv:
            if svi < len(e.krow):
                del e.krow[svi]

    def make_hot(self, svi):
        hot = self.sv[svi]
        self.compute(hot)
        for lst in (self.sv, self.alpha, self.delta):
            lst.insert(0, lst.pop(svi))
        for j, e in enumerate(self.sv):
            if svi < len(e.krow):
                e.krow.insert(0, e.krow.pop(svi))
            else:
                e.krow.insert(0, hot.krow[j])

    def update(self, pos):
        x = self.sv[pos]
        self.compute(x)
        k = x.krow
        aki = F32(0.0)
        for i in range(len(self.sv)):
            aki = F32(aki + F32(k[i] * self.alpha[i]))
        self.delta[pos] = F32(F32(F32(aki * x.y) / self.lam) - F32(1.0))
        old = self.alpha[pos]
        aki = F32(aki - F32(self.alpha[pos] * k[pos]))
        self.alpha[pos] = F32(0.0)
        ai = F32(F32(self.lam - F32(aki * x.y)) / k[pos])
        ai = min(max(ai, F32(0.0)), x.a)
        ai = F32(ai * x.y)
        diff = F32(ai - old)
        if abs(float(diff)) > 1.0:
            diff = F32(1.0) if diff > 0 else F32(-1.0)
            ai = F32(old + diff)
        for i, e in enumerate(self.sv):
            self.delta[i] = F32(self.delta[i] + F32(F32(F32(diff * k[i]) * e.y) / self.lam))
        if abs(float(ai)) <= 1.0e-6:
            self.remove(pos)
        else:
            self.alpha[pos] = ai

    def worst(self):
        best, at = 0.0, 0
        for i, e in enumerate(self.sv):
            t = F32(self.alpha[i] * e.y)
            d = self.delta[i]
            v = abs(float(d)) if (t < e.a and d < 0) or (t > 0 and d > 0) else 0.0
            if v > best:
                best, at = v, i
        return at, best

    def train(self):
        for x in self.pool:
            self.predict(x)
        for x in self.pool:
            self.sv.append(x)
            self.alpha.append(F32(0.0))
            self.delta.append(F32(0.0))
            self.update(len(self.sv) - 1)
            for _ in range(self.reprocess):
                if not self.sv:
                    break
                if self.rng() < F32(0.5):
                    self.update(int(np.floor(F32(self.rng() * F32(len(self.sv))))))
                else:
                    at, v = self.worst()
                    if v > 0:
                        self.make_hot(at)
                        self.update(at)
        self.pool = []

    def learn(self, y, a, feats):
        x = _Ex(y, a, feats)
        p = self.predict(x)
        self.loss_sum = F32(self.loss_sum + max(F32(0.0), F32(F32(1.0) - F32(p * x.y))))
        self.pool.append(x)
        if len(self.pool) == self.pool_size:
            self.train()
        return p


STREAMS = [(kind, pool, reprocess, seed) for kind in ("linear", "rbf", "poly") for pool in (1, 3)
           for reprocess in (0, 1, 4) for seed in range(4)]  # fmt: skip
"""72 streams; the quick set runs one per kernel and pool (the rest: -m slow)."""


@pytest.mark.parametrize(("kind", "pool", "reprocess", "seed"),
                         slow_except(STREAMS, 0, 17, 24, 41, 48, 65, unpack=True))
def test_kernel_equals_vws_algorithm(seed: int, reprocess: int, pool: int, kind: str) -> None:
    """Random streams in two batches: the kernel gives the reference's predictions, support
    vectors (in order), coefficients, gradients and counters, bit for bit."""
    from streamlearn.learners import ksvm as K
    from streamlearn.learners.base import new_rows, new_stats
    from streamlearn.reductions import ksvm as reduction

    rnd = np.random.default_rng(seed)
    bits = 5
    examples = []
    while len(examples) < 70:
        feats = [(int(rnd.integers(32)), float(rnd.choice([1.0, 0.5, -1.5, 0.25])))
                 for _ in range(int(rnd.integers(1, 6)))]  # fmt: skip
        if _flat(feats)[1] == 0.0:  # (features that cancel: K(x, x) = 0, VW divides by it)
            continue
        examples.append((float(rnd.choice([1.0, -1.0])), float(rnd.choice([1.0, 1.0, 0.5, 2.0])),
                         feats))  # fmt: skip
    lam = [1.0, 0.5, 2.0][seed % 3]
    ref = _Reference(kind, 0.7, 3, lam, reprocess, pool, seed)
    want = [ref.learn(*ex) for ex in examples]

    words = ("--ksvm", "--kernel", kind, "--bandwidth", "0.7", "--degree", "3", "--reprocess",
             str(reprocess), "--pool_size", str(pool))  # fmt: skip
    config = TrainConfig(bits=bits, l2=lam, seed=seed, stack=words, loss="hinge",
                         adaptive=False, normalized=False, invariant=False, constant=False)
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(bits)
    gstate = spec.init_gstate(params)
    stats, rows = new_stats(), new_rows()
    got: list[float] = []
    for part in (examples[:33], examples[33:]):
        indptr = np.cumsum([0] + [len(f) for _, _, f in part]).astype(np.int64)
        indices = np.array([h for _, _, f in part for h, _ in f], dtype=np.uint32)
        values = np.array([x for _, _, f in part for _, x in f], dtype=np.float64)
        n = len(part)
        preds = np.zeros(n)
        spec.train_batch(table, gstate, params, config.loss_id, indptr, indices, values,
                         np.array([y for y, _, _ in part]), np.array([a for _, a, _ in part]),
                         np.zeros(n), np.zeros(n, dtype=np.int32), stats, rows,
                         preds)  # fmt: skip
        got += preds.astype(np.float32).tolist()
    assert got == [float(p) for p in want]
    st = spec.train_batch.state
    n = int(st.ints[K.N_SUPPORT])
    assert n == len(ref.sv)
    assert st.alpha[:n].tolist() == [float(a) for a in ref.alpha]
    assert st.delta[:n].tolist() == [float(d) for d in ref.delta]
    for k, x in enumerate(ref.sv):
        e = int(st.sv[k])
        lo, m = int(st.slot_i[e, K.S_LO]), int(st.slot_i[e, K.S_LEN])
        assert st.f_idx[lo : lo + m].tolist() == [i for i, _ in x.fs]
        assert st.f_val[lo : lo + m].tolist() == [float(v) for _, v in x.fs]
    assert (int(st.ints[K.EVALS]), int(st.ints[K.CACHE])) == (ref.evals, ref.cache)
    assert F32(st.kp[K.K_LOSS_SUM]) == ref.loss_sum


def test_a_saved_model_reads_back_whole() -> None:
    """:meth:`State.dump` and VW's bytes of it read back to the same numbers; a damaged one
    is refused, never read past its end."""
    from streamlearn.learners import ksvm as K
    from streamlearn.learners import ksvm_state as S

    rnd = np.random.default_rng(3)
    kp = np.zeros(K.NK)
    kp[K.K_POOL], kp[K.K_LAMBDA], kp[K.K_MAXCACHE] = 1, 1.0, K.MAXCACHE
    saved = [np.array([2.0, 7.0, 9.0])]
    for m in (3, 1):
        idx = np.sort(rnd.choice(1000, m, replace=False)).astype(float)
        saved += [np.array([1.0, 1.0, 0.0, 2.5, m + 1.0, 4.0, m, 2.0]), idx,
                  np.array([1.0, -1.0, 0.5][:m]), np.array([116.0, 55.0])]
    saved += [np.array([0.25, -0.5]), np.array([0.1, 0.2], dtype=np.float32).astype(float)]
    saved = np.concatenate(saved)
    st = S.State(kp, 0)
    st.load(saved)
    np.testing.assert_array_equal(st.dump(), saved)
    vw = S.vw_section(saved)
    back = S.read_vw_section(vw, 0, 7 | (9 << 32))
    np.testing.assert_array_equal(back, saved)
    for cut in (1, 8, 30, len(vw) - 1):
        with pytest.raises(ValueError):
            S.read_vw_section(vw[:cut], 0, 0)
    bad = saved.copy()
    bad[9] = 5000.0  # (a feature count beyond the list)
    with pytest.raises(ValueError):
        S.check_dump(bad)


# ---------------------------------------------------------------------------
# VW 9.11.9 on data of our own


def _vw(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], cwd=cwd,
                          capture_output=True, text=True, check=True)  # fmt: skip


def _after_table(err: str) -> list[str]:
    lines = err.splitlines()
    return lines[lines.index("finished run") :]


@needs_vw
@pytest.mark.parametrize("args", [
    "--ksvm -b 12", "--ksvm --kernel rbf --bandwidth 0.5 --reprocess 3 --l2 0.5",
    "--ksvm --kernel poly --degree 3 --reprocess 2", "--ksvm --pool_size 4 --reprocess 2",
    "--ksvm --kernel rbf --random_seed 7 --reprocess 5 --passes 2 -c -k --holdout_off",
])  # fmt: skip
def test_runs_are_vws(tmp_path: Path, args: str) -> None:
    """``-p``, the progress table and VW's lines at the end equal VW's; past 1000 examples
    VW's trace lines too (sl prints them before its batch's table lines)."""
    _data(tmp_path / "d.vw", 1300, seed=len(args))
    vw = _vw([*args.split(), "-d", "d.vw", "-p", "vw.p"], tmp_path)
    r = _sl([*args.split(), "-d", "d.vw", "-p", "sl.p"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert _after_table(r.stderr) == _after_table(vw.stderr)
    rows = [ln for ln in vw.stderr.splitlines() if ln[:1].isdigit()]
    assert [ln for ln in r.stderr.splitlines() if ln[:1].isdigit()] == rows
    traces = [ln for ln in vw.stderr.splitlines() if ln.startswith("Number of ")]
    assert traces and [ln for ln in r.stderr.splitlines() if ln.startswith("Number of ")] == traces
    head = [ln for ln in vw.stderr.splitlines() if ln.split(" = ")[0] in
            ("Lambda", "Kernel", "bandwidth", "degree", "Enabled learners")]  # fmt: skip
    assert [ln for ln in r.stderr.splitlines() if ln.split(" = ")[0] in
            ("Lambda", "Kernel", "bandwidth", "degree", "Enabled learners")] == head  # fmt: skip


@needs_vw
@pytest.mark.parametrize("args", ["--ksvm --reprocess 3", "--ksvm --kernel rbf --bandwidth 2",
                                  "--ksvm --kernel poly --degree 3 --noconstant"])
def test_models_are_vws_and_move_both_ways(tmp_path: Path, args: str) -> None:
    """sl's model file is VW's but for its header's version (sl's says 9.6.0, the oldest
    VW reads a ksvm model of), the support vectors' tags included; each program scores the
    other's as its own, and continues it."""
    from streamlearn.io import vwmodel

    _data(tmp_path / "d.vw", 300, seed=5)
    _data(tmp_path / "e.vw", 200, seed=6)
    _vw([*args.split(), "-d", "d.vw", "-f", "vw.model", "--quiet"], tmp_path)
    r = _sl([*args.split(), "-d", "d.vw", "-f", "sl.model"], tmp_path)
    assert r.returncode == 0, r.stderr
    sl_m, vw_m = (tmp_path / "sl.model").read_bytes(), (tmp_path / "vw.model").read_bytes()
    hs, hv = vwmodel.read_header(sl_m), vwmodel.read_header(vw_m)
    assert (hs.options, hs.bits, hs.min_label, hs.max_label) == (
        hv.options, hv.bits, hv.min_label, hv.max_label)
    assert sl_m[hs.end :] == vw_m[hv.end :]
    for model in ("sl.model", "vw.model"):
        _vw(["-t", "-i", model, "-d", "e.vw", "-p", f"vw_{model}.p", "--quiet"], tmp_path)
        r = _sl(["-t", "-i", model, "-d", "e.vw", "-p", f"sl_{model}.p"], tmp_path)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / f"sl_{model}.p").read_bytes() == (
            tmp_path / f"vw_{model}.p").read_bytes()
        # continued on new data: the same predictions and model
        _vw(["-i", model, "-d", "e.vw", "-p", "vw_c.p", "-f", "vw_c.model", "--quiet"], tmp_path)
        r = _sl(["-i", model, "-d", "e.vw", "-p", "sl_c.p", "-f", "sl_c.model"], tmp_path)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "sl_c.p").read_bytes() == (tmp_path / "vw_c.p").read_bytes()
        a, b = (tmp_path / "sl_c.model").read_bytes(), (tmp_path / "vw_c.model").read_bytes()
        assert a[vwmodel.read_header(a).end :] == b[vwmodel.read_header(b).end :]


def test_sl_train_ksvm_is_sl_vws_and_continues_exactly(tmp_path: Path) -> None:
    """``sl train --ksvm --ksvm-kernel rbf`` is ``sl vw --ksvm --kernel rbf`` (the hinge loss,
    its lambda from --l2); a model of the first half continued on the second predicts as one
    run over both (the support vectors, their coefficients and VW's generator kept)."""
    _data(tmp_path / "d.vw", 200, seed=9)
    r = _sl(["--ksvm", "--kernel", "rbf", "--l2", "0.5", "--reprocess", "2", "-d", "d.vw",
             "-p", "vw.p"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = _sl(["--ksvm", "--ksvm-kernel", "rbf", "--l2", "0.5", "--ksvm-reprocess", "2", "d.vw",
             "-p", "train.p", "-f", "m.sl"], tmp_path, "train")  # fmt: skip
    assert r.returncode == 0, r.stderr
    want = [float(ln.split()[0]) for ln in (tmp_path / "vw.p").read_text().splitlines()]
    got = [float(ln.split()[0]) for ln in (tmp_path / "train.p").read_text().splitlines()]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)  # (VW's -p: 6 digits)
    lines = (tmp_path / "d.vw").read_text().splitlines(keepends=True)
    (tmp_path / "a.vw").write_text("".join(lines[:80]))
    (tmp_path / "b.vw").write_text("".join(lines[80:]))
    base = ["--ksvm", "--ksvm-kernel", "rbf", "--l2", "0.5", "--ksvm-reprocess", "2"]
    assert _sl([*base, "a.vw", "-f", "a.sl"], tmp_path, "train").returncode == 0
    r = _sl(["-i", "a.sl", "b.vw", "-p", "b.p"], tmp_path, "train")
    assert r.returncode == 0, r.stderr
    assert [float(ln.split()[0]) for ln in (tmp_path / "b.p").read_text().splitlines()] == got[80:]
    r = _sl(["-i", "m.sl", "d.vw", "-p", "pred.p"], tmp_path, "predict")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "pred.p").read_text().count("\n") == 200


@pytest.mark.parametrize(("args", "says"), [
    (["--ksvm", "--oaa", "3"], "--ksvm runs alone"),
    (["--ksvm", "--l1", "0.1"], "--l1 is gd's"),
    (["--ksvm", "--audit"], "--audit with --ksvm"),
    (["--ksvm", "--invert_hash", "x"], "--invert_hash with --ksvm"),
    (["--ksvm", "--para_active"], "--para_active"),
    (["--ksvm", "--kernel", "cubic"], "--kernel cubic"),
    (["--ksvm", "--kernel", "poly", "--degree", "99999999999999999999"], "an integer of 32 bits"),
    (["--kernel", "rbf"], "--kernel is an option of --ksvm"),
    (["--ksvm", "--adaptive"], "--adaptive is gd's"),
    (["--ksvm", "--lrq", "ab2"], "--lrq with --ksvm"),
])  # fmt: skip
def test_refusals_name_the_option(tmp_path: Path, args: list[str], says: str) -> None:
    """What sl's --ksvm does not run with: one line, exit 2, before any data is read."""
    (tmp_path / "d.vw").write_text("1 |a x\n")
    r = _sl([*args, "-d", "d.vw"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_models_options_merge_with_the_lines(tmp_path: Path) -> None:
    """As VW merges a model's options into its command line: the kernel's options the line
    leaves out are the model's (VW keeps them), ``--reprocess`` is the run's (VW does not
    keep it); a kernel option the line gives otherwise is a conflict (exit 2)."""
    _data(tmp_path / "d.vw", 200, seed=2)
    r = _sl(["--ksvm", "--kernel", "rbf", "--bandwidth", "1.5", "--reprocess", "3", "-d",
             "d.vw", "-f", "m.vw", "-p", "a.p"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = _sl(["--ksvm", "-t", "-i", "m.vw", "-d", "d.vw", "-p", "b.p"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Kernel = rbf" in r.stderr and "bandwidth = 1.5" in r.stderr
    r = _sl(["--ksvm", "--reprocess", "5", "-i", "m.vw", "-d", "d.vw", "-f", "c.vw"], tmp_path)
    assert r.returncode == 0, r.stderr
    r = _sl(["--ksvm", "--kernel", "poly", "-i", "m.vw", "-d", "d.vw"], tmp_path)
    assert r.returncode == 2 and "conflicts with the initial model" in r.stderr


def test_dask_refuses_it(tmp_path: Path) -> None:
    """Support vectors are not a table workers could average: ``--dask`` refuses them."""
    pytest.importorskip("distributed")
    (tmp_path / "d.vw").write_text("1 |a x\n-1 |a y\n")
    r = _sl(["--ksvm", "d.vw", "--dask", "local:1"], tmp_path, "train")
    assert r.returncode == 2 and "cannot be averaged" in r.stderr
