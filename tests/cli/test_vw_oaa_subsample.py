"""``sl vw --oaa K --oaa_subsample N`` next to VW 9.11.9: each labeled example predicted over
every class, then its class and N others of VW's shuffled order learned; stderr (the ``n.a.``
loss VW reports), ``-p``, the readable model and the models both ways as VW's, on data of our
own; and a dense reference of the learning rule on random streams."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE, beside_vw, refused
from tests.unix import run_module as _run


@pytest.fixture
def data(tmp_path):
    """Classes 1..6 (and 0..5), some weights, unlabeled lines, a line held by -t runs."""
    rng = np.random.default_rng(11)
    one, zero = [], []
    for i in range(700):
        feats = " ".join(f"f{int(j)}:{rng.choice([0.5, 1, 2])}" for j in rng.integers(0, 80, 6))
        y = int(rng.integers(1, 7))
        w = " 2" if i % 13 == 0 else ""
        one.append(("" if i % 41 == 7 else f"{y}{w}") + f" |a {feats} |b g{y if i % 3 else 0}")
        zero.append(f"{y - 1}{w} |a {feats} |b g{y if i % 3 else 0}")
    (tmp_path / "d.vw").write_text("\n".join(one) + "\n")
    (tmp_path / "z.vw").write_text("\n".join(zero) + "\n")
    return tmp_path


SETS = [
    ("d.vw", ["--oaa", "6", "--oaa_subsample", "2"]),
    ("d.vw", ["--oaa", "6", "--oaa_subsample", "1", "--random_seed", "5", "-q", "ab"]),
    ("d.vw", ["--oaa", "6", "--oaa_subsample", "4", "--sgd", "-l", "0.1", "-b", "10"]),
    ("d.vw", ["--oaa", "6", "--oaa_subsample", "3", "--normalized", "--l2", "1e-5", "-P", "1"]),
    ("d.vw", ["--oaa", "6", "--oaa_subsample", "2", "-c", "-k", "--passes", "3"]),
    ("z.vw", ["--oaa", "6", "--oaa_subsample", "2", "--indexing", "0"]),
    ("z.vw", ["--oaa", "6", "--oaa_subsample", "3"]),  # (VW reads 0..5 once it sees a 0)
]


@pytest.mark.parametrize(("file", "args"), SETS)
def test_subsampling_learns_what_vw_learns(data, file: str, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    vw_err, sl_err = beside_vw(file, args, data)
    # (sl's own note when VW's auto indexing decides: --oaa's too)
    shown = "".join(ln for ln in sl_err.splitlines(True) if not ln.startswith("note: "))
    assert shown == vw_err
    assert "average loss = n.a." in sl_err or "average loss = undefined" in sl_err
    assert (data / "sl.p").read_bytes() == (data / "vw.p").read_bytes()
    assert (data / "sl.txt").read_text() == (data / "vw.txt").read_text()
    # the models both ways (VW keeps --oaa K, not the subsampling): scored, and continued
    # with the subsampling given again (the order made again from the seed)
    again = args[args.index("--oaa_subsample") : args.index("--oaa_subsample") + 2]
    for extra in (["-t"], again):
        outs = set()
        for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
            for model in ("vw", "sl"):
                _run(prog, ["-d", file, "-i", f"{model}.m", *extra, "-p", f"{name}-{model}.p"],
                     data)  # fmt: skip
                outs.add((data / f"{name}-{model}.p").read_bytes())
        assert len(outs) == 1


def test_options_vw_ignores_or_turns_off(data) -> None:
    pytest.importorskip("vowpalwabbit")
    for args in (["--oaa", "6", "--oaa_subsample", "6"], ["--oaa", "6", "--oaa_subsample", "0"],
                 ["--oaa_subsample", "2"]):  # fmt: skip
        v = _run(VW_MODULE, ["-d", "d.vw", *args, "-p", "vw.p"], data)
        s = _run(SL_VW, ["-d", "d.vw", *args, "-p", "sl.p"], data)
        assert (data / "sl.p").read_bytes() == (data / "vw.p").read_bytes()
        loss = [ln for ln in s.stderr.splitlines() if ln.startswith("average loss")]
        assert loss == [ln for ln in v.stderr.splitlines() if ln.startswith("average loss")]
    s = _run(SL_VW, ["-d", "d.vw", "--oaa", "6", "--oaa_subsample", "6"], data)
    assert "turning off subsampling" in s.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [(["--oaa", "6", "--oaa_subsample", "2", "--probabilities"], "--oaa_subsample"),
     (["--oaa", "6", "--oaa_subsample", "2", "-r", "r.txt"], "--oaa_subsample"),
     (["--oaa", "6", "--oaa_subsample", "2", "--ftrl"], "--oaa_subsample"),
     (["--oaa", "6", "--oaa_subsample", "2", "--audit"], "--oaa_subsample"),
     (["--oaa", "6", "--oaa_subsample", "2", "--boosting", "3"], "--boosting"),
     (["--oaa", "6", "--oaa_subsample", "x"], "--oaa_subsample x")],
)  # fmt: skip
def test_what_it_refuses(data, args: list[str], said: str) -> None:
    refused(["-d", "d.vw", *args], data, said)


def test_vw_ignores_it_beside_other_class_reductions(data) -> None:
    """VW reads ``--oaa_subsample`` only under ``--oaa``: ignored with ``--csoaa K``."""
    cs = "\n".join(f"{1 + i % 3}:0 {1 + (i + 1) % 3}:1 |a f{i % 7}" for i in range(50))
    (data / "cs.vw").write_text(cs + "\n")
    a = _run(SL_VW, ["-d", "cs.vw", "--csoaa", "3", "-p", "a.p", "--quiet"], data)
    b = _run(SL_VW, ["-d", "cs.vw", "--csoaa", "3", "--oaa_subsample", "2", "-p", "b.p",
                     "--quiet"], data)  # fmt: skip
    assert a.returncode == b.returncode == 0
    assert (data / "a.p").read_bytes() == (data / "b.p").read_bytes()


# --------------------------------------------------------------------------- dense reference


def _dense(stream, loss_id: int, k: int, n: int, order: list[int], **opts):  # noqa: ANN001, ANN202
    """``oaa.cc``'s ``learn_randomized`` over VW's gd, dense (:class:`tests.reference.VWClassesGD`).

    Every class is scored and clipped to the range before the example (VW predicts
    first: the class shown).  A labeled example then learns, one class after another as
    VW's gd learns: its class (label − 1) toward +1 with its weight a, then the next n
    classes of ``order`` from a cursor (the class ``(label + K − 1) mod K`` skipped) toward
    −1 with ``a·K/n`` (float32); each widens the range with its label, is scored again
    from the weights as they are then, clipped, and stepped with VW's rate at t = the
    weight it is handed (VW's t less its unlabeled weight, which every example here is).
    Returns (weights[K, d], classes[n])."""
    from tests.reference import VWClassesGD

    gd = VWClassesGD(stream.d, loss_id, k, **opts)
    classes = np.full(stream.n, np.nan)
    cursor = 0
    ratio = np.float32(k) / np.float32(n)
    for i, idx, x in gd.rows(stream):
        y, a = stream.labels[i], stream.weights[i]
        scores = [gd.clip(gd.score(c, stream.bases[i], idx, x)) for c in range(k)]
        classes[i] = 1 + int(np.argmax(scores))
        if np.isnan(y):
            continue
        learned = [(int(y) - 1, 1.0, float(a))]
        while len(learned) < n + 1:
            c = order[cursor]
            cursor = (cursor + 1) % k
            if c != (int(y) + k - 1) % k:
                learned.append((c, -1.0, float(np.float32(a) * ratio)))
        for c, target, w in learned:
            gd.widen(target)
            if a == 0:
                continue
            gd.shared["T"] = w
            gd.step(c, idx, x, gd.clip(gd.score(c, stream.bases[i], idx, x)), target, w)
    return gd.weights(), classes


@pytest.mark.parametrize("opts", [{}, {"adaptive": False, "normalized": False, "invariant": False,
                                       "learning_rate": 0.1, "initial_t": 1.0},
                                  {"l2": 1e-3}])  # fmt: skip
@pytest.mark.parametrize("seed", range(4))
def test_the_kernel_is_the_dense_rule(opts: dict, seed: int) -> None:
    """The kernel against :func:`_dense` on random streams of classes 1..K (a few unlabeled,
    a few of weight 0), in batches: each class's weights and every example's class."""
    import dataclasses

    from streamlearn.learners import oaa
    from streamlearn.learners.base import make_params
    from streamlearn.learners.losses import SQUARED
    from streamlearn.learners.oaa_subsample import S_MADE
    from streamlearn.reductions.oaa_subsample import Entry
    from tests.classes import class_weights, run_classes
    from tests.learners.test_oaa import class_stream

    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 7))
    n = int(rng.integers(1, k))
    stream = class_stream(seed, k)
    order = [int(c) for c in rng.permutation(k)]
    entry = Entry(k, n, 0)
    entry.order[:] = order
    entry.state[S_MADE] = 1  # (the order given, not drawn)
    spec = dataclasses.replace(oaa.GD, train_batch=entry)
    kw = {"learning_rate": 0.5, "initial_t": 0.0, **opts}
    params = make_params(oaa=k, **kw)
    table, gstate, preds, _ = run_classes(spec, params, stream, SQUARED, k, k + 1, 1 + seed)
    ref = dict(kw)
    ref["eta0"] = ref.pop("learning_rate")
    ref["t0"] = ref.pop("initial_t")
    w_ref, c_ref = _dense(stream, SQUARED, k, n, order, **ref)
    w = class_weights(spec, table, gstate, params, k, stream.d)
    scale = max(float(np.max(np.abs(w_ref))), 1e-30)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=3e-4 * scale)
    ok = ~np.isnan(preds[:, 0])
    assert ok.sum() > 0.9 * stream.n
    agree = preds[ok, 0] == c_ref[ok]
    assert agree.mean() > 0.97  # (ties within rounding may pick another class)


@pytest.mark.parametrize("seed", ["18446744073709551616", "999999999999999999999999999999", "-3"])
def test_a_model_s_generator_beyond_64_bits_is_refused(data, seed: str) -> None:
    """A model's ``--random_seed`` (now the run's seed) is VW's uint64: anything else is
    refused (exit 5, one line) before any data is read, as VW refuses to convert it."""
    import dataclasses
    import subprocess
    import sys

    from streamlearn.io import vwmodel

    _run(SL_VW, ["-d", "d.vw", "--oaa", "6", "--oaa_subsample", "2", "-f", "m.vw", "--quiet"],
         data)  # fmt: skip
    raw = (data / "m.vw").read_bytes()
    h = vwmodel.read_header(raw)
    assert "--random_seed" in h.options
    bad = dataclasses.replace(h, options=f" --oaa 6 --random_seed {seed}")
    (data / "bad.vw").write_bytes(vwmodel.encode_header(bad) + raw[h.end :])
    r = subprocess.run([sys.executable, "-m", *SL_VW, "-d", "d.vw", "-i", "bad.vw",
                        "--oaa_subsample", "2", "-p", "bad.p"], cwd=data, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 5, r.stderr
    assert "64-bit" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (data / "bad.p").exists()
