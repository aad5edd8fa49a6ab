"""A model's options are data, its sizes are bounded, and its readers never trace back
(issue 44, the model file's cases 3, 7, 9, 14, 16).

VW's bandit and gd models and sl's bandit model, each cut at every offset, flipped at
seeded bytes and given hostile options: the readers (called in-process) end in a
ModelError (exit 5) or an OutOfMemory (exit 8), and a few through the real program, under
an address-space cap and a timeout, write nothing and print one ``Error:`` line.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import re
import resource
import subprocess
import sys
import warnings

import pytest

from streamlearn import model as model_io
from streamlearn import model_vw
from streamlearn.config import TrainConfig
from streamlearn.errors import ModelError, SlError
from streamlearn.io import vwmodel
from streamlearn.run import mlmodel
from streamlearn.run.multiline import Multiline
from tests.unix import invoke

pytest.importorskip("vowpalwabbit")

from tests.test_vw_model_cb import adf_data, cb_data, vw  # noqa: E402

PATH = "/tmp/sl-victim-44"
"""What a hostile option names (the tests check that nothing is written there)."""
HOSTILE = [
    f"--final_regressor {PATH}", f"-f {PATH}", f"--predictions {PATH}", f"-p {PATH}",
    f"--report {PATH}", f"--readable_model {PATH}", f"--invert_hash {PATH}",
    f"--cache_file {PATH}", f"--data {PATH}", f"--daemon --port 0 --pid_file {PATH}",
    f"--port_file {PATH}", "--testonly", "-t", "--passes 3", "--quiet", "--id x",
    "--squarecb=--daemon", f"--squarecb -f {PATH}", "--epsilon", "--epsilon nan",
    "--epsilon inf", "--lambda 1e308", "--lambda x", "--cb_type", "--noconstant 3",
    "--bag x", "--no_such_option", "--bit_precision 40",
]  # fmt: skip
SPELLED = {f"-f {PATH}": f"-f {PATH}", f"-p {PATH}": f"-p {PATH}", "-t": "-t",
           f"--squarecb -f {PATH}": f"-f {PATH}"}  # fmt: skip
"""How the refusal names an injected option (as written: ``-f``, never ``--f``)."""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "a.adf").write_text(adf_data(30, 1))
    (d / "a.cb").write_text(cb_data(30, 5))
    (d / "a.vw").write_text("".join(f"{i % 2} |f a{i % 5} b{i % 3}\n" for i in range(40)))
    out = {}
    for name, args in (("squarecb", ["--cb_explore_adf", "--squarecb", "-d", "a.adf"]),
                       ("bag", ["--cb_explore_adf", "--bag", "2", "-d", "a.adf"]),
                       ("softmax", ["--cb_explore_adf", "--softmax", "--lambda", "2", "-d",
                                    "a.adf"]),
                       ("cover", ["--cb_explore_adf", "--cover", "2", "-d", "a.adf"]),
                       ("cb", ["--cb", "3", "-d", "a.cb"]),
                       ("gd", ["-d", "a.vw", "-q", "fa"])):  # fmt: skip
        m = d / f"{name}.vw"
        vw(*[str(d / a) if a.startswith("a.") else a for a in args], "-f", str(m), "-b", "10")
        out[name] = m.read_bytes()
    r = invoke(["train", "--cb-adf", "--explore", "bag", "--bags", "2", str(d / "a.adf"),
                "-b", "10", "-f", str(d / "sl.sl"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    out["sl"] = (d / "sl.sl").read_bytes()
    return d, out


def with_options(raw: bytes, change) -> bytes:  # noqa: ANN001
    """A VW model whose header's options are ``change(options)`` (a valid checksum)."""
    h = vwmodel.read_header(raw)
    h2 = vwmodel.Header(**h.__dict__)
    h2.options = change(h.options)
    return vwmodel.encode_header(h2) + raw[h.end :]


def sl_split(raw: bytes) -> tuple[dict, bytes]:
    _, _, hlen = model_io._PREFIX.unpack_from(raw)
    start = model_io._PREFIX.size
    return json.loads(raw[start : start + hlen]), raw[start + hlen : -32]


def sl_craft(header: dict, payload: bytes) -> bytes:
    head = json.dumps(header).encode()
    body = model_io._PREFIX.pack(model_io.MAGIC, model_io.VERSION, len(head)) + head + payload
    return body + hashlib.sha256(body).digest()


def snapshot(d) -> dict:  # noqa: ANN001
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def one_error(output: str) -> None:
    assert "Traceback" not in output and "Warning" not in output, output
    assert len([ln for ln in output.splitlines() if ln.startswith("Error:")]) == 1, output


# ---- case 3: a model's options are data ---------------------------------------------------


@pytest.mark.parametrize("bad", HOSTILE)
def test_a_bandit_models_options_never_choose_an_output(models, tmp_path, bad):
    d, raw = models
    m = tmp_path / "m.vw"
    m.write_bytes(with_options(raw["squarecb"], lambda o: o + " " + bad))
    with pytest.raises(ModelError) as e:
        mlmodel.kept_options(str(m))
    if bad in SPELLED:
        assert SPELLED[bad] in str(e.value) and "--f " not in str(e.value)
    before = snapshot(tmp_path)
    r = invoke(["vw", "-t", "-i", str(m), "-d", str(d / "a.adf"), "--quiet"])
    assert r.exit_code == 5, (bad, r.exit_code, r.output)
    one_error(r.output)
    assert snapshot(tmp_path) == before and not os.path.exists(PATH)


@pytest.mark.parametrize("bad", [f"-f {PATH}", f"--final_regressor {PATH}", "--daemon",
                                 "--lambda 1e308", "--learning_rate 1e39"])  # fmt: skip
def test_a_gd_models_options_are_refused_as_written(models, bad):
    _, raw = models
    data = with_options(raw["gd"], lambda o: o + " " + bad)
    with pytest.raises(ModelError) as e:
        model_io.decode(data, "m")
    assert re.search(re.escape(bad.split()[0]) + r"[ ,]", str(e.value) + " ")
    assert "--f " not in str(e.value)


def test_one_allow_list_for_every_kind(models):
    """VW's gd and bandit models and sl's bandit models: one list (model_vw.MODEL_OPTIONS);
    sl's records of a reduction stand for options of that list, and every field of
    Multiline is one of them."""
    import dataclasses

    from streamlearn.vwargs import OPTIONS

    fields = {f.name for f in dataclasses.fields(Multiline)} - {"notes"}
    assert fields <= set(model_vw.SL_FIELDS)
    assert all(o in model_vw.MODEL_OPTIONS for o, _ in model_vw.SL_FIELDS.values() if o)
    # every option a bandit model may carry is one sl vw reads (VW's gd state aside)
    from streamlearn.vwargs.argv import CATS_IMPLIED

    gd_only = {"l1_state", "l2_state", "per_model_save_load", "cb_sample"}
    # (and what VW stacks below --cats, which sl vw sets again from --cats K itself)
    assert set(model_vw.MODEL_OPTIONS) - gd_only - CATS_IMPLIED <= set(OPTIONS)
    for name in ("final_regressor", "predictions", "daemon", "pid_file", "data", "testonly",
                 "cache_file", "report", "readable_model", "invert_hash", "passes"):
        assert name not in model_vw.MODEL_OPTIONS


# ---- cases 7 and 9: sizes bounded before anything is allocated ----------------------------


@pytest.mark.parametrize(("kind", "old", "new", "data"), [
    ("bag", "--bag 2", "--bag 10000000000", "a.adf"),
    ("cover", "--cover 2", "--cover 10000000000", "a.adf"),
    ("cb", "--cb 3", "--cb 4294967296", "a.cb"),
])  # fmt: skip
def test_a_headers_sizes_are_refused_before_allocation(models, tmp_path, kind, old, new, data):
    d, raw = models
    m = tmp_path / "m.vw"
    m.write_bytes(with_options(raw[kind], lambda o: o.replace(old, new)))
    r = invoke(["vw", "-t", "-i", str(m), "-d", str(d / data), "--quiet"])
    assert r.exit_code == 8, r.output
    one_error(r.output)
    assert f"from its options, {new} needs at least" in r.output


def test_a_headers_sizes_follow_the_memory_available(models, tmp_path, monkeypatch):
    """--bag 100000000 (3 GiB of sums) and --rnd 100000000: refused when less is available."""
    from streamlearn.system import memory

    d, raw = models
    monkeypatch.setattr(memory, "available", lambda: 1 << 30)
    m = tmp_path / "m.vw"
    m.write_bytes(with_options(raw["bag"], lambda o: o.replace("--bag 2", "--bag 100000000")))
    r = invoke(["vw", "-t", "-i", str(m), "-d", str(d / "a.adf"), "--quiet"])
    assert r.exit_code == 8 and "the memory available (1.0 GiB)" in r.output, r.output
    for args in (["--cb_explore_adf", "--rnd", "100000000"], ["--cb", "100000000"],
                 ["--cb_explore_adf", "--bag", "100000000"]):  # fmt: skip
        r = invoke(["vw", *args, "-d", str(d / "a.adf"), "--quiet"])
        assert r.exit_code == 8 and f"{args[-2]} 100000000 needs at least" in r.output, r.output


@pytest.mark.parametrize("args", [["--cb", "4294967296"],
                                  ["--cb-adf", "--explore", "bag", "--bags", "10000000000"],
                                  ["--cb-adf", "--explore", "rnd", "--rnd-models", "100000000",
                                   "--max-memory", "1G"],
                                  ["--cb-adf", "--explore", "cover", "--cover-policies",
                                   "100000000", "--max-memory", "1G"]])  # fmt: skip
def test_sl_trains_sizes_are_refused_before_allocation(models, tmp_path, args):
    d, _ = models
    r = invoke(["train", *args, str(d / "a.adf"), "-f", str(tmp_path / "m.sl"), "--quiet"])
    assert r.exit_code == 8 and "needs at least" in r.output, r.output
    one_error(r.output)
    assert not (tmp_path / "m.sl").exists()


def test_sl_vws_cb_of_2_to_the_32_is_exit_8(models):
    d, _ = models
    r = invoke(["vw", "--cb", "4294967296", "-d", str(d / "a.cb"), "--quiet"])
    assert r.exit_code == 8 and "--cb 4294967296 needs at least 256.0 GiB" in r.output, r.output


@pytest.mark.parametrize(("change", "code"), [
    (lambda m: m.update(bag=10**10), 8), (lambda m: m.update(evil=1), 5),
    (lambda m: m.update(bag="x"), 5), (lambda m: m.update(lam=1e308), 5),
    (lambda m: m.update(bag=-1), 5), (lambda m: m.update(epsilon=float("nan")), 5),
])  # fmt: skip
def test_an_sl_bandit_models_records_are_data_too(models, tmp_path, change, code):
    d, raw = models
    header, payload = sl_split(raw["sl"])
    header = copy.deepcopy(header)
    change(header["meta"]["multiline"])
    m = tmp_path / "m.sl"
    m.write_bytes(sl_craft(header, payload))
    for cmd in (["train", "-i", str(m), str(d / "a.adf"), "-f", str(tmp_path / "o.sl")],
                ["predict", "-i", str(m), str(d / "a.adf")], ["vw", "-i", str(m), "-d",
                                                                str(d / "a.adf")]):  # fmt: skip
        r = invoke([*cmd, "--quiet"])
        assert r.exit_code in (code, 2), (cmd, r.output)  # (sl vw: not its kind of model)
        one_error(r.output)
    assert not (tmp_path / "o.sl").exists()


# ---- case 16: messages --------------------------------------------------------------------


def test_lambda_1e308_is_one_line_not_a_warning(models, tmp_path):
    d, raw = models
    m = tmp_path / "m.vw"
    m.write_bytes(with_options(raw["softmax"], lambda o: o.replace("--lambda 2", "--lambda 1e308")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = invoke(["vw", "-t", "-i", str(m), "-d", str(d / "a.adf"), "--quiet"])
        assert r.exit_code == 5 and "--lambda 1e308" in r.output, r.output
        r = invoke(["vw", "--cb_explore_adf", "--softmax", "--lambda", "1e308", "-d",
                    str(d / "a.adf"), "--quiet"])  # fmt: skip
        assert r.exit_code == 2 and "32-bit float" in r.output, r.output
        r = invoke(["train", "--cb-adf", "--explore", "softmax", "--lambda", "1e308",
                    str(d / "a.adf"), "--quiet"])  # fmt: skip
        assert r.exit_code == 2 and "--lambda" in r.output, r.output


def test_inspect_and_predict_send_a_vw_bandit_model_to_sl_vw(models, tmp_path):
    d, raw = models
    m = tmp_path / "m.vw"
    for kind in ("squarecb", "cb"):
        m.write_bytes(raw[kind])
        for cmd in (["inspect", str(m)], ["predict", "-i", str(m), str(d / "a.adf")]):
            r = invoke(cmd)
            assert r.exit_code == 5 and "sl vw -i reads it" in r.output, r.output


# ---- the fuzz: truncations, flips, options; in-process ------------------------------------

DOCUMENTED = {5, 8}


def _read_bandit(raw: bytes, tmp_path, kind: str) -> None:
    p = tmp_path / "fz.vw"
    p.write_bytes(raw)
    kept = mlmodel.kept_options(str(p))
    if kept is None:  # (no longer a bandit model: the single-line reader's turn)
        model_io.decode(raw, "fz")
        return
    ml = Multiline("cb_adf", explore=kind)
    mlmodel.read(str(p), ml, TrainConfig(bits=10))


def _reader(kind: str, tmp_path):  # noqa: ANN202
    if kind == "sl":
        return lambda raw: model_io.decode(raw, "fz")
    if kind == "gd":
        return lambda raw: model_io.decode(raw, "fz")
    return lambda raw: _read_bandit(raw, tmp_path, kind)


def _outcome(read, raw: bytes) -> str:
    try:
        read(raw)
    except SlError as e:
        assert e.exit_code in DOCUMENTED, (type(e), e)
        assert "\n" not in e.message
        return "refused"
    return "loaded"


@pytest.mark.parametrize("kind", ["squarecb", "gd", "sl"])
def test_every_truncation_is_refused_or_a_whole_record_shorter(models, tmp_path, kind):
    """Cut at every offset: refused, except where VW's format cannot tell (a cut between
    two slot records of a VW model: docs/vw-compat.md), which loads a model of fewer
    slots."""
    _, raw = models
    data = raw[kind]
    read = _reader(kind, tmp_path)
    loaded = [n for n in range(len(data)) if _outcome(read, data[:n]) == "loaded"]
    if kind == "sl":
        assert loaded == []
        return
    h = vwmodel.read_header(data)
    lead = 8 if kind == "squarecb" else 0  # the explorer's counter
    sums = 16 if kind == "squarecb" else 0  # mtr's sums
    records = h.end + lead + sums + 1 + vwmodel.resume_size(1, h.version_tuple)
    width = 4 + 4 * (3 if kind == "squarecb" else 3)  # slot, weight, adaptive, normalized
    assert loaded == list(range(records, len(data), width))


@pytest.mark.parametrize("kind", ["squarecb", "bag", "cover", "gd", "sl"])
def test_seeded_byte_flips_are_refused_or_read(models, tmp_path, kind):
    _, raw = models
    data = raw[kind]
    rng = random.Random(44)
    read = _reader(kind if kind != "bag" else "bag", tmp_path)
    for _ in range(300):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _outcome(read, bytes(b))


WORDS = ["--bag", "--rnd", "--cover", "--cb", "--first", "--epsilon", "--lambda", "--psi",
         "-b", "--bit_precision", "-q", "--interactions", "--cb_type", "--daemon", "-f", "-p",
         "--final_regressor", "--ngram", "--hash", "--link", "--learning_rate", "-l", "-t"]
VALUES = ["1e308", "-1e308", "nan", "inf", "-inf", "0", "-1", "4294967296", "100000000000",
          "18446744073709551616", "x", "ab", "--daemon", "", PATH, "1e-45", "3"]


@pytest.mark.parametrize("kind", ["squarecb", "gd"])
def test_hostile_option_strings_are_refused_or_read(models, tmp_path, kind):
    _, raw = models
    rng = random.Random(16)
    read = _reader(kind, tmp_path)
    for _ in range(250):
        extra = " ".join(rng.choice(WORDS) + (" " + rng.choice(VALUES) if rng.random() < 0.8
                                              else "") for _ in range(rng.randint(1, 3)))
        data = with_options(raw[kind], lambda o, e=extra: o + " " + e)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _outcome(read, data)
    assert not os.path.exists(PATH)


# ---- the real program: a handful, capped --------------------------------------------------

CAP = 3 << 30
"""The address space the program may take (it maps ~1.5 GiB to start: numba, LLVM)."""


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


@pytest.mark.slow
def test_the_program_under_a_memory_cap(models, tmp_path):
    d, raw = models
    cases = {
        "bag": with_options(raw["bag"], lambda o: o.replace("--bag 2", "--bag 100000000")),
        "rnd": with_options(raw["squarecb"], lambda o: o.replace("--squarecb",
                                                                 "--rnd 100000000")),
        "cb": with_options(raw["cb"], lambda o: o.replace("--cb 3", "--cb 100000000")),
        "out": with_options(raw["squarecb"], lambda o: o + f" --final_regressor {PATH}"),
        "cut": raw["squarecb"][:200],
    }
    (tmp_path / "a.adf").write_bytes((d / "a.adf").read_bytes())
    for name, data in cases.items():
        (tmp_path / "m.vw").write_bytes(data)
        before = snapshot(tmp_path)
        r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-t", "-i", "m.vw", "-d",
                            "a.adf", "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, preexec_fn=_capped)  # fmt: skip
        assert r.returncode in DOCUMENTED, (name, r.returncode, r.stderr[-2000:])
        one_error(r.stderr)
        assert snapshot(tmp_path) == before and not os.path.exists(PATH)
