"""VW's ``--cbzo`` (:mod:`streamlearn.learners.cbzo`; its labels
:mod:`streamlearn.io.calabels`, its loop :mod:`streamlearn.run.cbzo`).

The kernel against a dense reference: ``cbzo.cc`` stated plainly (a list of (slot, value)
per example, every number a float32 as VW's, each weight read and written in turn) on
random streams over a small table (slots collide, features repeat), both policies, the
regularizers with and without ``--no_bias_regularization``, fixed ends of the label range,
and actions at (or within 1e-6 of) the centroid.  Then ``sl vw`` beside VW 9.11.9 on data of
our own: the progress table and summary, ``-p``, ``--readable_model``, ``--invert_hash``,
passes with a holdout, and models both ways; and its refusals.
"""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.io.calabels import FLT_MAX, read_ca_labels
from streamlearn.io.parse import parse_bytes
from streamlearn.learners import cbzo
from tests import unix
from tests.unix import SL_VW, VW_MODULE

F = np.float32
BITS = 6
CSLOT = cbzo.CONSTANT_HASH & ((1 << BITS) - 1)


def stream(seed: int, n: int = 200):  # noqa: ANN201
    """Rows of 1-5 features over a few hot slots (some repeated in a row), random values,
    the constant last; actions, costs, and rows not learned (test labels)."""
    rng = random.Random(seed)
    ptr, idx, val, const_at = [0], [], [], []
    for _ in range(n):
        k = rng.randint(1, 5)
        for _ in range(k):
            idx.append(rng.randrange(12) if rng.random() < 0.8 else rng.randrange(1 << BITS))
            val.append(float(F(rng.uniform(-2.0, 2.0))))
        const_at.append(k)
        idx.append(CSLOT)
        val.append(1.0)
        ptr.append(len(idx))
    action = [float(F(rng.uniform(-1.0, 2.0))) for _ in range(n)]
    action[0] = 0.0  # (the first centroid is 0: no update)
    action[1] = float(F(3e-7))  # (within 1e-6 of a centroid of 0)
    cost = [float(F(rng.uniform(0.0, 3.0))) for _ in range(n)]
    learn = [rng.random() < 0.85 for _ in range(n)]
    return (np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32), np.array(val),
            np.array(const_at, dtype=np.int64), np.array(action), np.array(cost),
            np.array(learn))  # fmt: skip


def reference(s, policy: str, eta: float, l1: float, l2: float, no_bias: bool,
              lo=None, hi=None):  # noqa: ANN001, ANN201  # fmt: skip
    """``cbzo.cc``'s predict and learn, example by example, over a dense float32 table."""
    ptr, idx, val, const_at, action, cost, learn = s
    w = np.zeros(1 << BITS, dtype=F)
    eta, l1, l2 = F(eta), F(l1), F(l2)
    lo_label = F(0.0) if lo is None else F(lo)
    hi_label = F(0.0) if hi is None else F(hi)
    shown = []

    def inference(r: int) -> np.float32:
        if policy == "constant":
            return w[CSLOT]
        d = F(0.0)
        for k in range(ptr[r], ptr[r + 1]):
            d = F(d + F(F(val[k]) * w[idx[k]]))
        return d

    def l1_grad(fw, is_const):  # noqa: ANN001, ANN202
        if no_bias and is_const:
            return F(0.0)
        return l1 if fw >= 0 else -l1

    def l2_grad(fw, is_const):  # noqa: ANN001, ANN202
        if no_bias and is_const:
            return F(0.0)
        return F(l2 * fw)

    for r in range(ptr.shape[0] - 1):
        c = inference(r)  # predict: the label range takes c, then c clamped to it
        if lo is None:
            lo_label = min(c, lo_label)
        if hi is None:
            hi_label = max(c, hi_label)
        shown.append(F(min(max(c, lo_label), hi_label)))
        if not learn[r]:
            continue
        c = inference(r)  # learn: the centroid again, unclamped
        denom = F(F(action[r]) - c)
        if 0 < denom < F(1e-6):
            denom = F(1e-6)
        elif -F(1e-6) < denom < 0:
            denom = F(-1e-6)
        elif denom == 0:
            continue
        grad = F(F(cost[r]) / denom)
        if policy == "constant":
            fw = w[CSLOT]
            w[CSLOT] = F(fw + F(-eta * F(F(grad + l1_grad(fw, True)) + l2_grad(fw, True))))
            continue
        for k in range(ptr[r], ptr[r + 1]):
            fw = w[idx[k]]
            is_const = k - ptr[r] == const_at[r]
            update = F(-eta * F(F(grad * F(val[k])) + F(l1_grad(fw, is_const)
                                                        + l2_grad(fw, is_const))))  # fmt: skip
            w[idx[k]] = F(fw + update)
    return w, np.array(shown, dtype=F), (lo_label, hi_label)


def kernel(s, policy: str, eta: float, l1: float, l2: float, no_bias: bool, lo=None, hi=None,
           chunks: int = 3):  # noqa: ANN001, ANN201  # fmt: skip
    """The kernel over the stream, cut into ``chunks`` calls."""
    ptr, idx, val, const_at, action, cost, learn = s
    table = np.zeros(1 << BITS, dtype=F)
    conf = cbzo.conf(policy, eta, l1, l2, no_bias, lo is not None, hi is not None, BITS)
    state = np.zeros(cbzo.STATE_SIZE)
    state[:] = (0.0 if lo is None else float(F(lo)), 0.0 if hi is None else float(F(hi)))
    n = ptr.shape[0] - 1
    out = np.zeros(n, dtype=F)
    for part in np.array_split(np.arange(n), chunks):
        got = np.zeros(part.shape[0], dtype=F)
        cbzo.train_examples(table, conf, state, ptr, idx, val, part.astype(np.int64), const_at,
                            action, cost, learn[part], got)  # fmt: skip
        out[part] = got
    return table, out, (F(state[0]), F(state[1]))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("policy", "eta", "l1", "l2", "no_bias", "lo", "hi"), [
    ("linear", 0.05, 0.0, 0.0, False, None, None),
    ("linear", 0.02, 0.01, 0.05, False, None, None),
    ("linear", 0.02, 0.01, 0.05, True, None, None),
    ("linear", 0.1, 0.0, 0.2, False, -0.5, 0.75),
    ("constant", 0.05, 0.1, 0.2, False, None, None),
    ("constant", 0.05, 0.1, 0.2, True, None, 1.5),
])  # fmt: skip
def test_the_kernel_is_vw_s_cbzo(seed, policy, eta, l1, l2, no_bias, lo, hi):
    s = stream(seed)
    want_w, want_c, want_range = reference(s, policy, eta, l1, l2, no_bias, lo, hi)
    got_w, got_c, got_range = kernel(s, policy, eta, l1, l2, no_bias, lo, hi)
    assert np.array_equal(got_w.view(np.uint32), want_w.view(np.uint32))
    assert np.array_equal(got_c.view(np.uint32), want_c.view(np.uint32))
    assert got_range == want_range
    assert np.count_nonzero(got_w) > (0 if policy == "constant" else 5)


def test_the_density_is_vw_s_two_spikes():
    cols = cbzo.density(np.array([0.0, 0.1, -3.25], dtype=F), 0.1)
    left1, right1, pdf1, left2, right2, pdf2 = (c.tolist() for c in cols)
    # (around 0: ±1e-5; elsewhere the floats next to it)
    assert (left1[1], right1[1]) == (-1e-5, 1e-5) or left1[1] == float(F(-1e-5))
    assert right2[0] == float(np.nextafter(F(0.1), F(np.inf)))
    assert pdf1[2] == float(F(0.5 / float(np.nextafter(F(-3.35), F(np.inf))
                                          - np.nextafter(F(-3.35), F(-np.inf)))))  # fmt: skip


def test_labels_are_read_as_vw_reads_them():
    b = parse_bytes(b"ca 0.5:1.25:2 't |f a\n|f b\nca 1 |f c\nca 0.2:1:0 |f d\n"
                    b"ca 0.3:1:1:9 pdf 0:1:1 chosen_action 0.4 |f e\n1 |f x\n"
                    b"ca 0.1:1:-1 |f y\nca 1:2:3:4:5 |f z\nca 0.5::1 |f w\n",
                    labels="cb")  # fmt: skip
    lab = read_ca_labels(b)
    assert b.status.tolist() == [0, 0, 0, 0, 0, 36, 37, 36, 36]
    assert lab.given.tolist()[:5] == [True, False, True, True, True]
    assert lab.cost.tolist()[2] == FLT_MAX and lab.pdf.tolist()[2] == 0.0
    assert lab.test.tolist()[:5] == [False, True, True, True, False]
    assert lab.action.tolist()[4] == float(F(0.3))


# ------------------------------------------------------------------ beside VW 9.11.9


def _data(path, n: int = 300, seed: int = 5) -> None:  # noqa: ANN001
    """Continuous-action lines of our own: test labels (no cost, a density of 0), unlabeled
    lines, tags, blank lines, a namespace scale, repeated features."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        a, c, p = rnd.uniform(-1, 2), rnd.uniform(0, 3), rnd.uniform(0.2, 4)
        label = {3: "", 5: f"ca {a:.4f}", 7: f"ca {a:.4f}:{c:.3f}:0"}.get(
            i % 23, f"ca {a:.4f}:{c:.3f}:{p:.3f}")
        tag = f" 't{i}" if i % 9 == 4 else ""
        feats = " ".join(f"{k}:{rnd.uniform(-2, 2):.3f}" for k in rnd.sample("uvwxyz", 3))
        scale = ":1.5" if i % 13 == 2 else ""
        lines.append(f"{label}{tag} |a{scale} {feats} |b g{rnd.randrange(4)} g1")
        if i % 97 == 50:
            lines.append("")
    path.write_text("\n".join(lines) + "\n")


def run_module(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)  # (a first run compiles)


@pytest.mark.parametrize("opts", [
    ["-l", "0.01"],
    ["--policy", "constant", "-l", "0.05", "--l1", "0.1", "--l2", "0.2", "--radius", "0.3"],
    ["-l", "0.01", "--l1", "0.01", "--l2", "0.05", "--no_bias_regularization", "-q", "ab"],
    ["-l", "0.01", "--min_prediction", "-0.5", "--max_prediction", "0.8", "--noconstant"],
    ["-l", "0.01", "-c", "--passes", "3"],
    ["-l", "0.02", "--predict_only_model", "--radius", "0.0001", "-b", "12"],
])  # fmt: skip
def test_sl_vw_gives_vw_s_numbers_and_models(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt")
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        names = ["--invert_hash", f"{tag}.h"] if "-c" not in opts else []  # (VW: not with -c)
        r = run_module(prog, ["--cbzo", "-d", "d.txt", *opts, "-p", f"{tag}.p", "-f", f"{tag}.m",
                              "--readable_model", f"{tag}.r", *names], tmp_path)  # fmt: skip
        out[tag] = ([ln.replace(f"{tag}.", "X.") for ln in r.stderr.splitlines()
                     if "cache" not in ln], r.stdout)  # fmt: skip
        (tmp_path / "d.txt.cache").unlink(missing_ok=True)
        (tmp_path / "d.txt.cache.sl").unlink(missing_ok=True)
    assert out["sl"] == out["vw"] and out["sl"][0]
    for ext in ("p", "r", "h") if "-c" not in opts else ("p", "r"):
        assert (tmp_path / f"sl.{ext}").read_text() == (tmp_path / f"vw.{ext}").read_text(), ext
    # the model files: the same but for the version sl writes (VW 9.0.0's layout)
    sl_m, vw_m = (tmp_path / "sl.m").read_bytes(), (tmp_path / "vw.m").read_bytes()
    assert sl_m[sl_m.index(b"m", 4):] == vw_m[vw_m.index(b"m", 4):]
    # the models: each scores with the other's as with its own
    four = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        for model in ("vw.m", "sl.m"):
            run_module(prog, ["-t", "-i", model, "-d", "d.txt", "-p", f"s.{tag}.{model}"],
                       tmp_path)  # fmt: skip
            four[tag, model] = (tmp_path / f"s.{tag}.{model}").read_text()
    assert len(set(four.values())) == 1 and four["vw", "vw.m"]


def test_a_vw_model_is_continued_as_vw_continues_it(tmp_path):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", n=150)
    _data(tmp_path / "e.txt", n=150, seed=8)
    run_module(VW_MODULE, ["--cbzo", "--policy", "constant", "-l", "0.02", "-d", "d.txt", "-f",
                           "m"], tmp_path)  # fmt: skip
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = run_module(prog, ["-i", "m", "-d", "e.txt", "-p", f"{tag}.p", "-f", f"{tag}.m",
                              "--readable_model", f"{tag}.r"], tmp_path)  # fmt: skip
        out[tag] = r.stderr.replace(f"{tag}.", "X.")
    assert out["sl"] == out["vw"]
    for ext in ("p", "r"):
        assert (tmp_path / f"sl.{ext}").read_text() == (tmp_path / f"vw.{ext}").read_text()


@pytest.mark.parametrize(("args", "said"), [
    (["--cbzo", "--policy", "quadratic"], "--policy"),
    (["--cbzo", "--policy", "constant", "--noconstant"], "--noconstant"),
    (["--cbzo", "--oaa", "2"], "--oaa"),
    (["--cbzo", "--cb_adf"], "--cb_adf"),
    (["--cbzo", "--sgd"], "--sgd"),
    (["--cbzo", "--ftrl"], "--ftrl"),
    (["--cbzo", "--audit"], "--audit"),
    (["--cbzo", "-r", "raw.txt"], "-r"),
    (["--no_bias_regularization"], "--cbzo"),
    (["--policy", "linear"], "--cbzo"),
    (["--cbzo", "-c", "--passes", "2", "--invert_hash", "h.txt"], "invert_hash"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _data(tmp_path / "d.txt", n=5)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", "d.txt", *args],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and said in r.stderr, r.stderr
    unix.one_line_error(r.stderr)


def test_a_label_vw_cannot_read_is_skipped_with_its_line(tmp_path):
    (tmp_path / "d.txt").write_text("ca 0.5:1:0.5 |a x\n1 |a y\nca 0.2:1:-2 |a z\n"
                                    "ca 0.1:2:1 |a x\n")  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "--cbzo", "-d", "d.txt",
                        "-p", "p.txt"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "d.txt:2" in r.stderr and "d.txt:3" in r.stderr and "pdf_value below 0" in r.stderr
    assert "number of examples = 2" in r.stderr
    assert len((tmp_path / "p.txt").read_text().splitlines()) == 2
