"""VW's model files, both ways (streamlearn/io/vwmodel.py, streamlearn/model_vw.py).

Each kind of model VW writes is written here by the real ``vowpalwabbit``
package, then scored by sl to VW's ``-p`` numbers and continued to VW's average
loss and final weights (bit for bit: sl's kernels do VW's float32 operations in
VW's order); the model ``sl vw -f`` writes is read by VW, which scores and
continues it as sl does, and as it continues its own.  VW's own test models
(``tests/data/vwmodels``, from VW's ``test/model-sets``) load or are refused by
name; corrupt and truncated files are one message and exit 5.

The data hold values k/2: VW reads a decimal such as 0.3 (or 2.875) one float away
from the correctly rounded value that sl reads (docs/vw-compat.md), which moves the
sixth digit of a prediction; with values VW reads exactly the two agree to its
printed digits.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.errors import ModelError
from streamlearn.io import vwmodel
from tests.paths import ROOT
from tests.unix import invoke

pytest.importorskip("vowpalwabbit")

VWMODELS = ROOT / "tests" / "data" / "vwmodels"


def dyadic_data(n: int, seed: int, classes: int = 0) -> str:
    """VW lines over namespaces a and b whose values are multiples of 1/2."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(max(classes, 1), 60))
    lines = []
    for _ in range(n):
        idx = rng.choice(60, 8, replace=False)
        val = rng.integers(1, 8, 8) / 2
        score = truth[:, idx] @ val
        if classes:
            label = str(int(np.argmax(score)) + 1)
        else:
            label = "1" if score[0] + rng.normal() > 0 else "-1"
        a = " ".join(f"x{i}:{v:g}" for i, v in zip(idx[:5], val[:5], strict=True))
        b = " ".join(f"y{i}:{v:g}" for i, v in zip(idx[5:], val[5:], strict=True))
        lines.append(f"{label} |a {a} |b {b}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("vwdata")
    for name, n, seed, classes in (("a", 600, 1, 0), ("b", 400, 2, 0), ("ma", 600, 3, 3),
                                   ("mb", 400, 4, 3)):  # fmt: skip
        (d / f"{name}.vw").write_text(dyadic_data(n, seed, classes))
    for name in ("a", "b"):  # (every 9th line unlabeled: VW's t counts its weight)
        lines = (d / f"{name}.vw").read_text().splitlines()
        (d / f"u{name}.vw").write_text("".join((ln.split(" ", 1)[1] if i % 9 == 4 else ln) + "\n"
                                               for i, ln in enumerate(lines)))  # fmt: skip
    return d


def vw(*args: str) -> float | None:
    """``vw ARGS`` (VW 9's own command line); its average loss."""
    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"^average loss = (\S+)", r.stderr, re.M)
    return float(m.group(1)) if m else None


def slvw(tmp_path, *args: str) -> float:
    """``sl vw ARGS``; its progressive average loss."""
    rep = tmp_path / "report.json"
    r = invoke(["vw", *args, "--report", str(rep), "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(rep.read_text())["average_loss"]


def predictions(path) -> np.ndarray:
    return np.loadtxt(path, ndmin=1, usecols=0)


def close_predictions(vw_p, sl_p) -> float:
    """The largest difference, relative to max(1, |p|) (VW prints 6 decimals)."""
    a, b = predictions(vw_p), predictions(sl_p)
    assert a.shape == b.shape
    return float((np.abs(a - b) / np.maximum(1.0, np.abs(a))).max())


def weights(path) -> dict[int, float]:
    m = model_io.load(path)
    return dict(zip(m.slots.tolist(), m.weights.tolist(), strict=True))


def weight_gap(p, q) -> float:
    a, b = weights(p), weights(q)
    return max((abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in a.keys() | b.keys()), default=0.0)


KINDS = [
    # (VW's training options, options of the later runs), data
    ("", "", "a"),
    ("--sgd -l 0.05", "--sgd -l 0.05", "a"),
    ("--adaptive -l 0.1", "-l 0.1", "a"),
    ("--normalized", "", "a"),
    ("--invariant", "", "a"),
    ("--adaptive --normalized --power_t 0.4", "", "a"),
    ("--predict_only_model", "", "a"),
    ("--sgd -l 0.05 --predict_only_model", "--sgd -l 0.05", "a"),
    ("-q ab --cubic abb", "", "a"),
    ("--interactions ab -b 12", "", "a"),
    ("--ngram a2 --skips a1", "", "a"),
    ("--noconstant -b 10", "", "a"),
    ("--l1 1e-4 --l2 1e-4", "--l1 1e-4 --l2 1e-4", "a"),
    ("--loss_function logistic", "--loss_function logistic", "a"),
    ("--loss_function logistic --link logistic", "--loss_function logistic", "a"),
    ("--ftrl", "", "a"),
    ("--coin", "", "a"),
    ("--pistol", "", "a"),
    ("--freegrad --fepsilon 2 --restart", "--fepsilon 2 --restart", "a"),
    ("-c -k --passes 3 --sgd -l 0.05", "--sgd -l 0.05", "a"),
    ("--sgd -l 0.05 --initial_t 3", "--sgd -l 0.05 --initial_t 3", "a"),
    ("--sgd -l 0.05 --initial_t 3", "--sgd -l 0.05", "a"),  # (VW keeps no --initial_t)
    ("--adaptive -l 0.1 --initial_t 2", "-l 0.1", "a"),
    ("--sgd -l 0.05", "--sgd -l 0.05", "ua"),
    ("-c -k --passes 3 --sgd -l 0.05", "--sgd -l 0.05", "ua"),
    ("--oaa 3", "", "ma"),
    ("--oaa 3 --ftrl -q ab", "", "ma"),
]


@pytest.mark.parametrize(("train", "later", "name"), KINDS,
                         ids=[f"{k[0] or 'default'}, then {k[1] or 'nothing'}" for k in KINDS])
def test_vws_model_scores_and_continues_in_sl_and_sls_in_vw(tmp_path, data, train, later, name):
    A, B = str(data / f"{name}.vw"), str(data / f"{name.replace('a', 'b')}.vw")
    train_opts, later_opts = train.split(), later.split()
    p = {k: str(tmp_path / k) for k in ("vw.m", "vw2.m", "sl.m", "sl2.m", "vw.p", "sl.p",
                                        "vw3.p", "sl3.p", "vw4.m", "sl4.m")}  # fmt: skip
    # 1. VW's model, scored by sl as by VW
    vw("-d", A, "-f", p["vw.m"], "--quiet", *train_opts)
    assert vwmodel.sniff(open(p["vw.m"], "rb").read(16))
    vw("-t", "-i", p["vw.m"], "-d", B, "-p", p["vw.p"], "--quiet", *later_opts)
    slvw(tmp_path, "-t", "-i", p["vw.m"], "-d", B, "-p", p["sl.p"], *later_opts)
    assert close_predictions(p["vw.p"], p["sl.p"]) <= 1e-6, close_predictions(p["vw.p"], p["sl.p"])
    # 2. ... and continued by sl as by VW: the same progressive loss, the same weights
    loss_vw = continued = vw("-i", p["vw.m"], "-d", B, "-f", p["vw2.m"], *later_opts)
    loss_sl = slvw(tmp_path, "-i", p["vw.m"], "-d", B, "-f", p["sl2.m"], *later_opts)
    assert loss_sl == pytest.approx(loss_vw, abs=1.5e-6)
    assert weight_gap(p["vw2.m"], p["sl2.m"]) == 0.0
    # 3. the model sl vw -f writes is VW's: VW scores and continues it as sl does
    slvw(tmp_path, "-d", A, "-f", p["sl.m"], *train_opts)
    assert vwmodel.sniff(open(p["sl.m"], "rb").read(16))
    vw("-t", "-i", p["sl.m"], "-d", B, "-p", p["vw3.p"], "--quiet", *later_opts)
    slvw(tmp_path, "-t", "-i", p["sl.m"], "-d", B, "-p", p["sl3.p"], *later_opts)
    assert close_predictions(p["vw3.p"], p["sl3.p"]) <= 1e-6
    loss_vw = vw("-i", p["sl.m"], "-d", B, "-f", p["vw4.m"], *later_opts)
    loss_sl = slvw(tmp_path, "-i", p["sl.m"], "-d", B, "-f", p["sl4.m"], *later_opts)
    assert loss_sl == pytest.approx(loss_vw, abs=1.5e-6)
    assert weight_gap(p["vw4.m"], p["sl4.m"]) == 0.0
    # ... and it is the model VW writes: VW continues it as it continues its own
    assert loss_vw == pytest.approx(continued, abs=1.5e-6)
    assert weight_gap(p["vw4.m"], p["vw2.m"]) == 0.0


def test_sl_predict_train_and_inspect_read_vws_models(tmp_path, data):
    m = tmp_path / "vw.m"
    vw("-d", str(data / "a.vw"), "-f", str(m), "--quiet", "-q", "ab")
    vw("-t", "-i", str(m), "-d", str(data / "b.vw"), "-p", str(tmp_path / "vw.p"), "--quiet")
    r = invoke(["predict", "-i", str(m), str(data / "b.vw"), "-p", str(tmp_path / "sl.p"),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert close_predictions(tmp_path / "vw.p", tmp_path / "sl.p") <= 1e-6
    r = invoke(["inspect", str(m)])
    assert r.exit_code == 0 and "a VW 9." in r.output and "--quadratic ab" in r.output
    # sl train -i continues a VW model and keeps sl's format (and takes a loss: VW's
    # model records none)
    out = tmp_path / "t.sl"
    r = invoke(["train", "-i", str(m), str(data / "b.vw"), "-f", str(out), "--loss",
                "logistic", "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert out.read_bytes()[:8] == model_io.MAGIC
    again = model_io.load(out)
    assert again.config.loss == "logistic" and again.config.quadratic == ("ab",)


def test_sl_vw_writes_vws_format_and_refuses_what_vw_cannot_read_before_running(tmp_path, data):
    m = tmp_path / "m.vw"
    slvw(tmp_path, "-d", str(data / "a.vw"), "-f", str(m))
    h = vwmodel.read_header(m.read_bytes())
    assert h.version == vwmodel.WRITES and m.read_bytes()[h.end] == 1  # the resume state
    slvw(tmp_path, "-d", str(data / "a.vw"), "-f", str(m), "--predict_only_model")
    assert m.read_bytes()[vwmodel.read_header(m.read_bytes()).end] == 0  # weights only
    # an sl model of a learner VW does not have: continued by sl vw, refused before it runs
    tg = tmp_path / "tg.sl"
    r = invoke(["train", str(data / "a.vw"), "--algo", "tg", "--l1", "1e-4", "-f", str(tg),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    before = m.read_bytes()
    r = invoke(["vw", "-i", str(tg), "-d", str(data / "b.vw"), "-f", str(m), "--quiet"])
    assert r.exit_code == 2 and "VW has no --algo tg" in r.output, r.output
    assert m.read_bytes() == before


def test_a_vw_models_recorded_options_are_fixed_and_the_loss_is_not(tmp_path, data):
    m = tmp_path / "vw.m"
    vw("-d", str(data / "a.vw"), "-f", str(m), "--quiet", "--oaa", "3", "-b", "12")
    r = invoke(["vw", "-i", str(m), "-d", str(data / "ma.vw"), "--oaa", "4", "--quiet"])
    assert r.exit_code == 2 and "conflicts with the initial model" in r.output
    r = invoke(["vw", "-i", str(m), "-d", str(data / "ma.vw"), "--loss_function", "logistic",
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output


# ---- VW's own test models (VW's test/model-sets) ------------------------------------------

MODEL_SETS = {
    "simple_model": ("loads", "oaa_gd"),  # 7.10.2, --oaa 3, -q fe in its header
    "save_resume_with_l1l2_state.model": ("loads", "gd"),  # 8.10.0, --l1_state, --l2_state
    "8.0.0_ok.model": ("refused", "--cb_adf"),
    "8.0.1_hash_ok.model": ("refused", "--cb_adf"),
    "8.0.1.test_named_ok.model": ("loads", "oaa_gd"),  # --named_labels det,noun,verb --oaa 3
    "cb_compat_test.vwmodel": ("refused", "--cb 4"),
    "epsilon.model": ("refused", "--cb_explore_adf"),
    "7.10.2_corrupted.model": ("refused", "resume flag"),
    "corrupted_weights_gd.model": ("refused", "not a VW version"),
    "corrupted_weights_gd_mf.model": ("refused", "not a VW version"),
    "truncated_model": ("refused", "checksum"),
}


@pytest.mark.parametrize("name", sorted(MODEL_SETS))
def test_vws_test_models_load_or_are_refused_by_name(name):
    kind, what = MODEL_SETS[name]
    path = VWMODELS / name
    if kind == "loads":
        assert model_io.load(path).learner == what
        r = invoke(["inspect", str(path)])
        assert r.exit_code == 0, r.output
    else:
        with pytest.raises(ModelError, match=re.escape(what)):
            model_io.load(path)
        r = invoke(["inspect", str(path)])
        assert r.exit_code == 5 and what in r.output and "Traceback" not in r.output


def test_vws_oldest_test_model_scores_as_vw_scores_it(tmp_path):
    """VW's own test: ``simple_model`` (7.10.2, --oaa 3, -q fe) scoring two lines."""
    d = tmp_path / "d.vw"
    d.write_text("3 |f a b c |e x y z\n2 |f a y c |e x\n1 |e z\n")
    vw("-t", "-i", str(VWMODELS / "simple_model"), "-d", str(d), "-r", str(tmp_path / "vw.r"),
       "-p", str(tmp_path / "vw.p"), "--quiet")  # fmt: skip
    r = invoke(["vw", "-t", "-i", str(VWMODELS / "simple_model"), "-d", str(d), "-p",
                str(tmp_path / "sl.p"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert predictions(tmp_path / "vw.p").tolist() == predictions(tmp_path / "sl.p").tolist()


def test_the_l1_and_l2_state_of_a_model_file_is_read():
    m = model_io.load(VWMODELS / "save_resume_with_l1l2_state.model")
    from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

    assert m.gstate[G_GRAVITY] == pytest.approx(3.4) and m.gstate[G_CONTRACTION] == 4.4528


# ---- corrupt, truncated, crafted -----------------------------------------------------------


@pytest.fixture(scope="module")
def good(data, tmp_path_factory):
    m = tmp_path_factory.mktemp("good") / "vw.m"
    vw("-d", str(data / "a.vw"), "-f", str(m), "--quiet", "-b", "8", "-q", "ab")
    return m.read_bytes()


def refused(tmp_path, raw: bytes) -> str:
    bad = tmp_path / "bad.m"
    bad.write_bytes(raw)
    with pytest.raises(ModelError):
        model_io.load(bad)
    r = invoke(["predict", "-i", str(bad), str(tmp_path / "none.vw")])
    assert r.exit_code == 5, r.output
    assert "Traceback" not in r.output and str(bad) in r.output
    return r.output


def test_a_truncated_vw_model_is_refused_wherever_it_ends(tmp_path, good):
    h = vwmodel.read_header(good)
    (tmp_path / "none.vw").write_text("1 |a x\n")
    records = h.end + 1 + vwmodel.resume_size(1, h.version_tuple)  # then 16 bytes a slot
    cuts = sorted({*range(1, records + 1), *range(records, len(good), 7)})
    for n in cuts:
        if n >= records and (n - records) % 16 == 0:
            assert model_io.decode(good[:n], "cut").slots.shape[0] == (n - records) // 16
            continue  # between two records: a valid model of fewer slots, as VW reads it
        with pytest.raises(ModelError, match="truncated|corrupt|not a VW|checksum|nor a VW model"):
            model_io.decode(good[:n], "cut")
    assert "truncated" in refused(tmp_path, good[: len(good) - 3])


def test_a_flipped_header_byte_is_caught_by_the_checksum(tmp_path, good):
    h = vwmodel.read_header(good)
    (tmp_path / "none.vw").write_text("1 |a x\n")
    raw = bytearray(good)
    raw[h.end - 10] ^= 0x01  # inside the options string
    assert "checksum" in refused(tmp_path, bytes(raw))


def test_a_crafted_length_allocates_nothing(tmp_path, good):
    """An options string claiming 100 MB (VW's bound) or 4 GB in a file of 200 bytes."""
    (tmp_path / "none.vw").write_text("1 |a x\n")
    h = vwmodel.read_header(good)
    head = good[: 4 + int.from_bytes(good[:4], "little")]
    opts_at = len(head) + 4 + 1 + 1 + 4 + 4 + 4 + 4 + 4 + 4  # id, 'm', labels, bits, lda, grams
    for claim in (100 << 20, 0xFFFFFFF0):
        raw = good[:opts_at] + claim.to_bytes(4, "little") + good[opts_at + 4 : h.end]
        out = refused(tmp_path, raw)
        assert "claims" in out
    # a slot beyond the table
    body = bytearray(good)
    body[-16:-12] = (1 << 20).to_bytes(4, "little")  # the last record's slot
    assert "beyond" in refused(tmp_path, bytes(body))


def test_sl_models_are_still_sls(tmp_path, data):
    out = tmp_path / "m.sl"
    r = invoke(["train", str(data / "a.vw"), "-f", str(out), "--quiet"])
    assert r.exit_code == 0 and out.read_bytes()[:8] == model_io.MAGIC
    assert not vwmodel.sniff(out.read_bytes()[:16])


def test_the_copied_model_sets_are_all_here():
    assert {p.name for p in VWMODELS.iterdir()} >= set(MODEL_SETS)


def test_a_fleet_converts_both_ways_without_learning(tmp_path, data):
    """docs/vw-compat.md's loops: VW -> sl (sl train --allow-empty) -> VW (sl vw --no_stdin);
    VW continues the model that went through sl as the original."""
    orig, conv, back = tmp_path / "m.vw", tmp_path / "m.sl", tmp_path / "back.vw"
    vw("-d", str(data / "a.vw"), "-f", str(orig), "--quiet", "-q", "ab")
    empty = tmp_path / "empty.vw"
    empty.write_text("")
    r = invoke(["train", "-i", str(orig), "--loss", "logistic", "--allow-empty", str(empty),
                "-f", str(conv), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert conv.read_bytes()[:8] == model_io.MAGIC
    r = invoke(["vw", "--no_stdin", "-i", str(conv), "-f", str(back), "--quiet"])
    assert r.exit_code == 0, r.output
    b = str(data / "b.vw")
    assert vw("-i", str(back), "-d", b) == vw("-i", str(orig), "-d", b)
    assert weights(back) == pytest.approx(weights(orig), abs=0)


def test_preserved_counters_continue_vws(tmp_path, data):
    """--preserve_performance_counters: VW's counters go on from the model's (the average
    loss, and the best constant's loss VW figures from the label range)."""
    m = tmp_path / "vw.m"
    vw("-d", str(data / "a.vw"), "-f", str(m), "--quiet")
    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-i", str(m), "-d",
                        str(data / "b.vw"), "--preserve_performance_counters"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    want = {k: float(v) for k, v in re.findall(r"^(average loss|best constant's loss) = (\S+)",
                                               r.stderr, re.M)}  # fmt: skip
    rep = tmp_path / "r.json"
    out = invoke(["vw", "-i", str(m), "-d", str(data / "b.vw"), "--preserve_performance_counters",
                  "--report", str(rep), "--quiet"])  # fmt: skip
    assert out.exit_code == 0, out.output
    got = json.loads(rep.read_text())
    assert got["average_loss"] == pytest.approx(want["average loss"], abs=1e-6)
    assert got["best_constant_loss"] == pytest.approx(want["best constant's loss"], abs=1e-6)


def test_a_non_finite_weight_is_refused(tmp_path, good):
    (tmp_path / "none.vw").write_text("1 |a x\n")
    body = bytearray(good)
    body[-12:-8] = np.array([np.nan], dtype="<f4").tobytes()  # the last record's weight
    assert "non-finite" in refused(tmp_path, bytes(body))


def test_a_vw_model_is_read_from_a_pipe(tmp_path, good, data):
    from tests.unix import sl

    (tmp_path / "m.vw").write_bytes(good)
    b = data / "b.vw"
    piped = sl([f"cat m.vw | SL predict -i /dev/stdin {b} -p piped.p --quiet"], tmp_path,
               shell=True)  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    r = invoke(["predict", "-i", str(tmp_path / "m.vw"), str(b), "-p", str(tmp_path / "f.p"),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0
    assert (tmp_path / "piped.p").read_text() == (tmp_path / "f.p").read_text()
    cut = sl([f"SL predict -i <(head -c 300 m.vw) {b} --quiet"], tmp_path, shell=True)
    assert cut.returncode == 5 and b"truncated" in cut.stderr


def test_the_id_is_vws_header_id_both_ways(tmp_path, data):
    m = tmp_path / "m.vw"
    slvw(tmp_path, "-d", str(data / "a.vw"), "--id", "fleet7", "-f", str(m))
    assert vwmodel.read_header(m.read_bytes()).id == "fleet7"
    txt = tmp_path / "m.txt"
    vw("-i", str(m), "-d", str(data / "b.vw"), "--readable_model", str(txt), "--quiet")
    assert "Id fleet7" in txt.read_text()
    vw("-d", str(data / "a.vw"), "--id", "abc", "-f", str(m), "--quiet")
    assert model_io.load(m).config.model_id == "abc"


def test_a_streamed_vw_model_stops_at_a_full_table(tmp_path, good):
    """-b 8 and 16 bytes a slot: a stream going on past 2^8 records is refused, read no
    further."""
    from tests.unix import sl

    (tmp_path / "m.vw").write_bytes(good)
    (tmp_path / "d.vw").write_text("1 |a x\n")
    r = sl(["(cat m.vw; head -c 100000 /dev/zero) | SL predict -i /dev/stdin d.vw"], tmp_path,
           shell=True)  # fmt: skip
    assert r.returncode == 5 and b"more bytes than a VW model of 2^8 slots" in r.stderr


@pytest.mark.parametrize("args", [
    "-q ab --binary --noconstant", "--nn 2 --binary -q ab", "--sgd -l 0.3 --power_t 0.2",
    "--lrq ab2 --link logistic --loss_function logistic --ignore c", "--svrg -q ab --hash all",
    "--bootstrap 3 --bs_type vote -q ab -q aa --keep a"])  # fmt: skip
def test_the_options_string_is_vws(tmp_path, data, args):
    """The options a model keeps, as VW writes them (names sorted, a repeated option's values
    in their order, then the namespace filters and the generator's state; floats of 15
    digits), so that the header's bytes and checksum are VW's."""
    for who in ("vw", "sl"):
        m = tmp_path / f"{who}.m"
        line = [*args.split(), "-d", str(data / "a.vw"), "-f", str(m)]
        vw(*line, "--quiet") if who == "vw" else slvw(tmp_path, *line)
    want = vwmodel.read_header((tmp_path / "vw.m").read_bytes()).options
    assert vwmodel.read_header((tmp_path / "sl.m").read_bytes()).options == want


def test_a_models_options_in_another_order_are_the_same(tmp_path, data):
    """A model keeps its options in VW's order (``--alg logistic --boosting 3``); the command
    line that names them in its own (``--boosting 3 --alg logistic``) continues it."""
    m = tmp_path / "m.vw"
    slvw(tmp_path, "--boosting", "3", "--alg", "logistic", "-d", str(data / "a.vw"), "-f", str(m))
    assert vwmodel.read_header(m.read_bytes()).options == " --alg logistic --boosting 3"
    slvw(tmp_path, "--boosting", "3", "--alg", "logistic", "-t", "-i", str(m), "-d",
         str(data / "b.vw"))  # fmt: skip
