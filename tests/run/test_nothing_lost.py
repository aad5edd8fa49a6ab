"""Nothing lost in VW's newer options: per-pass models, caches, streamed models, tags.

Each case of issue 37's red team, with variants: every path a run writes (each
pass's model included) is checked against every input, the initial model and
every other output before any work; a cache belongs to the run that made it;
a model read from a stream allocates what arrives, not what its header claims.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
import time

import pytest

from streamlearn import model as model_io
from streamlearn.errors import ModelError
from tests.marks import slow_except
from tests.unix import SL, default_signals, env, invoke, leftovers, one_line_error, text_data

QUIET = ["--quiet"]


def _digest(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def days(tmp_path):
    """Two days of data, named as a cron job names them (``ev.1``, ``ev.2``)."""
    paths = []
    for k in (1, 2):
        p = tmp_path / f"ev.{k}"
        p.write_text(text_data(300, seed=k))
        paths.append(p)
    return paths


# ---- --save-per-pass: MODEL.N is an output like any other ----------------------------


@pytest.mark.parametrize("command", ["vw", "train"])
def test_pass_models_never_replace_an_input(tmp_path, days, command):
    """``-f ev`` with ``--save-per-pass`` would write ev.1, ev.2: the data."""
    before = [_digest(p) for p in days]
    if command == "vw":
        args = ["vw", "-d", str(days[0]), "-d", str(days[1]), "--passes", "3",
                "--save_per_pass", "-f", str(tmp_path / "ev"), *QUIET]  # fmt: skip
    else:
        args = ["train", str(days[0]), str(days[1]), "--passes", "2", "--save-per-pass",
                "-f", str(tmp_path / "ev"), *QUIET]  # fmt: skip
    r = invoke(args)
    assert r.exit_code == 2, r.output
    assert "pass 1 model" in r.output and "is the input" in r.output
    assert [_digest(p) for p in days] == before
    assert not (tmp_path / "ev").exists()


@pytest.mark.parametrize("other, what", [
    (["-p", "{m}.2"], "predictions"),
    (["-r", "{m}.1"], "raw predictions"),
    (["--readable_model", "{m}.3"], "readable model"),
    (["--invert_hash", "{m}.2"], "invert-hash model"),
])  # fmt: skip
def test_pass_models_never_replace_another_output(tmp_path, days, other, what):
    m = str(tmp_path / "m")
    r = invoke(["vw", "-d", str(days[0]), "--passes", "3", "--save_per_pass", "-f", m,
                *[a.format(m=m) for a in other], *QUIET])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert what in r.output and "name the same file" in r.output
    assert list(tmp_path.iterdir()) == [p for p in tmp_path.iterdir() if p.name.startswith("ev")]


def test_pass_models_never_replace_the_initial_model(tmp_path, days):
    m = tmp_path / "m"
    assert invoke(["vw", "-d", str(days[0]), "-f", str(tmp_path / "m.2"), *QUIET]).exit_code == 0
    digest = _digest(tmp_path / "m.2")
    r = invoke(["vw", "-d", str(days[1]), "-i", str(tmp_path / "m.2"), "--passes", "2",
                "--save_per_pass", "-f", str(m), *QUIET])  # fmt: skip
    assert r.exit_code == 2 and "pass 2 model" in r.output and "initial model" in r.output
    assert _digest(tmp_path / "m.2") == digest and not m.exists()


def test_pass_models_of_a_grid_never_replace_each_other(tmp_path, days):
    """A grid's ``-f 'm{l1}'`` with l1 = 1 and 1.1: m1.1 is both a pass model and m1.1's final
    model."""
    r = invoke(["train", str(days[0]), "--algo", "fobos", "--l1", "1,1.1", "--passes", "2",
                "--save-per-pass", "-f", str(tmp_path / "m{l1}"), *QUIET])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert "name the same file" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev.1", "ev.2"]


@pytest.mark.parametrize("model", ["/dev/null", "-", "/dev/stdout"])
def test_pass_models_need_a_file(tmp_path, days, model):
    """``-f /dev/null`` would create /dev/null.1."""
    r = invoke(["vw", "-d", str(days[0]), "--passes", "2", "--save_per_pass", "-f", model,
                *QUIET])  # fmt: skip
    assert r.exit_code == 2 and "is not a file" in r.output, r.output


def test_sigterm_says_which_pass_models_were_written(tmp_path):
    """After SIGTERM, the run names the pass models it wrote; the old -f MODEL is untouched."""
    data = tmp_path / "d.vw"
    data.write_text(text_data(1500) * 60)
    m = tmp_path / "m.sl"
    m.write_bytes(b"the old model")
    proc = subprocess.Popen(
        [*SL, "train", str(data), "--passes", "50", "--holdout-off", "--save-per-pass",
         "-f", str(m)],
        stderr=subprocess.PIPE, env=env(tmp_path), cwd=tmp_path, preexec_fn=default_signals,
    )  # fmt: skip
    deadline = time.monotonic() + 600  # a first run may compile its kernels first
    while not (tmp_path / "m.sl.2").exists() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 128 + signal.SIGTERM, err
    one_line_error(err)
    assert "no final model written; the pass models" in err and "m.sl.1" in err
    assert m.read_bytes() == b"the old model"
    written = sorted(p.name for p in tmp_path.glob("m.sl.*"))
    assert written and all(p in err for p in written)
    for p in written:
        model_io.load(tmp_path / p)
    assert leftovers(tmp_path) == []


# ---- a cache belongs to the run that made it (or checked it) ---------------------------


def _passes(tmp_path, src, cache, **config):
    from streamlearn.config import TrainConfig
    from streamlearn.run.passes import Passes

    cfg = TrainConfig(passes=3, **config)
    return Passes([str(src)], cfg, str(cache), 1 << 12, 1, 10)


def _rows(batches):
    return [(b.indptr.tolist(), b.indices.tolist(), b.labels.tolist()) for b in batches]


@pytest.mark.parametrize("other", [{"bits": 12}, {"quadratic": ("ab",)}, {"bits": 24}])
@pytest.mark.parametrize("matched", [False, True])
def test_a_cache_replaced_by_another_run_is_not_read(tmp_path, days, other, matched):
    """Another run with ``-k`` and other options replaces the cache between two passes of
    this one: this run still replays its own batches (before: it learned the other run's
    features, or a kernel wrote beyond its table)."""
    cache = tmp_path / "c.cache"
    if matched:  # a cache this run finds matching at its start
        first = _passes(tmp_path, days[0], cache)
        list(first.batches())
        first.close()
    mine = _passes(tmp_path, days[0], cache)
    pass1 = _rows(mine.batches())
    theirs = _passes(tmp_path, days[0], cache, **other)
    theirs.cache_ready = False  # as -k: rebuilt whatever it finds
    list(theirs.batches())
    theirs.close()
    assert _rows(mine.batches()) == pass1
    assert _rows(mine.batches()) == pass1
    mine.close()


@pytest.mark.slow
def test_two_runs_with_k_on_one_input_each_learn_their_own(tmp_path, days):
    """Two ``sl vw -k -c`` runs on one file at once, with other options: each gives the loss
    it gives alone (before: the second's cache was replayed by the first)."""
    big = tmp_path / "big.vw"
    big.write_text(text_data(1500) * 20)

    def run(opts, background=False):
        cmd = [*SL, "vw", "-d", str(big), "-c", "-k", "--passes", "4", "--holdout_off", *opts]
        if background:
            return subprocess.Popen(cmd, stderr=subprocess.PIPE, env=env(tmp_path),
                                    cwd=tmp_path)  # fmt: skip
        return subprocess.run(cmd, capture_output=True, env=env(tmp_path), cwd=tmp_path,
                              timeout=300)  # fmt: skip

    def loss(err):
        return [ln for ln in err.decode().splitlines() if ln.startswith("average loss")]

    alone = [loss(run(opts).stderr) for opts in (["-q", "ab"], ["-b", "12"])]
    a, b = run(["-q", "ab"], True), run(["-b", "12"], True)
    errs = [p.communicate(timeout=300)[1] for p in (a, b)]
    assert a.returncode == 0 and b.returncode == 0, errs
    assert [loss(e) for e in errs] == alone


def test_stdin_cache_is_private(tmp_path):
    """``sl vw -d - -c``: a stream's cache can never be reused, so it is the run's own
    temporary file, not ./-.cache.sl shared by every pipeline in the directory."""
    text = text_data(300)
    r = subprocess.run([*SL, "vw", "-d", "-", "-c", "--passes", "2", "--quiet"],
                       input=text.encode(), capture_output=True, env=env(tmp_path),
                       cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmpdir"]
    assert leftovers(tmp_path) == []


def test_cache_file_is_named_as_given(tmp_path, days):
    r = invoke(["vw", "-d", str(days[0]), "--cache_file", str(tmp_path / "my.cache"),
                "--passes", "2", *QUIET])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (tmp_path / "my.cache").read_bytes().startswith(b"SLCACHE")
    assert not (tmp_path / "my.cache.sl").exists()


VW_CACHE = b"\x07\x00\x00\x00\x00\x00\x00\x009.11.9\x00c\x12\x00\x00\x00"
VW_MODEL = b"\x07\x00\x00\x009.11.9\x00\x01\x00\x00\x00\x00m\x00\x00\x80\xbf"


@pytest.mark.parametrize("content, what", [
    (VW_CACHE, "a Vowpal Wabbit cache (VW 9.11.9)"),
    (VW_MODEL, "a Vowpal Wabbit model"),
    (b"SLMODEL\x00\x02\x00\x00\x00", "an sl model"),
    (b"my notes\n", "not an sl cache"),
])  # fmt: skip
@pytest.mark.parametrize("command", ["vw", "train"])
def test_a_cache_path_holding_something_else_is_never_replaced(tmp_path, days, content, what,
                                                                command):  # fmt: skip
    c = tmp_path / "c.cache"
    c.write_bytes(content)
    if command == "vw":
        args = ["vw", "-d", str(days[0]), "--cache_file", str(c), "--passes", "2"]
    else:
        args = ["train", str(days[0]), "--cache", str(c), "--passes", "2"]
    r = invoke([*args, *QUIET])
    assert r.exit_code == 2 and what in r.output, r.output
    assert c.read_bytes() == content


def test_a_vw_cache_given_alone_says_what_it_is(tmp_path):
    c = tmp_path / "0001.dat.cache"
    c.write_bytes(VW_CACHE + bytes(64))
    r = invoke(["vw", "--cache_file", str(c), "--passes", "3"], input="")
    assert r.exit_code == 2 and "Vowpal Wabbit cache" in r.output, r.output
    assert "no examples" not in r.output


# ---- a model or a cache given as data ------------------------------------------------


@pytest.mark.parametrize("content, what", [
    (VW_CACHE + bytes(64), "a Vowpal Wabbit cache"),
    (VW_MODEL + bytes(64), "a Vowpal Wabbit model"),
    (b"SLMODEL\x00" + bytes(64), "an sl model"),
    (b"SLCACHE4" + bytes(64), "an sl cache"),
])  # fmt: skip
@pytest.mark.parametrize("how", slow_except(["file", "stdin"], 0))
def test_a_model_or_cache_given_as_data_is_refused(tmp_path, content, what, how):
    p = tmp_path / "x"
    p.write_bytes(content)
    m = tmp_path / "m.sl"
    if how == "file":
        r = sl_run(["train", str(p), "-f", str(m)], tmp_path)
    else:
        r = sl_run(["train", "-f", str(m)], tmp_path, stdin=p.open("rb"))
    assert r.returncode == 3, r.stderr
    one_line_error(r.stderr)
    assert what.encode() in r.stderr and b"not examples" in r.stderr
    assert not m.exists()


def sl_run(args, tmp_path, **kw):
    return subprocess.run([*SL, *args], capture_output=True, env=env(tmp_path), cwd=tmp_path,
                          timeout=120, **kw)  # fmt: skip


# ---- a model read from a stream allocates what arrives -------------------------------


def _model_bytes(tmp_path, days):
    m = tmp_path / "m.sl"
    assert invoke(["train", str(days[0]), "-f", str(m), *QUIET]).exit_code == 0
    return m.read_bytes()


def _with_header(raw: bytes, edit) -> bytes:  # noqa: ANN001
    import json
    import struct

    magic, version, hlen = struct.unpack("<8sII", raw[:16])
    header = json.loads(raw[16 : 16 + hlen])
    edit(header)
    head = json.dumps(header, sort_keys=True).encode()
    return struct.pack("<8sII", magic, version, len(head)) + head + raw[16 + hlen :]


def _load_from_fifo(tmp_path, data: bytes):
    import os
    import threading

    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            try:
                f.write(data)
            except BrokenPipeError:
                pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        return model_io.load(str(fifo))
    finally:
        t.join(10)


@pytest.mark.parametrize("edit", [
    lambda h: h.update(payload_bytes=10**15),
    lambda h: h.update(payload_bytes=1_500_000_000),
    lambda h: h["arrays"][0].update(shape=[10**12]),  # more slots than 2^bits
    lambda h: h["config"].update(bits=99),
])  # fmt: skip
def test_a_streamed_model_is_bounded_before_anything_is_allocated(tmp_path, days, edit):
    import resource

    raw = _with_header(_model_bytes(tmp_path, days), edit)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ModelError) as e:
        _load_from_fifo(tmp_path, raw)
    assert "Traceback" not in str(e.value)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200_000  # not the 3 GB a claimed 1.5e9 payload used to cost


def test_a_streamed_model_still_loads(tmp_path, days):
    raw = _model_bytes(tmp_path, days)
    a = _load_from_fifo(tmp_path, raw)
    b = model_io.load(tmp_path / "m.sl")
    assert (a.weights == b.weights).all() and (a.slots == b.slots).all()


# ---- -p keeps every tag -----------------------------------------------------------------

BAD_TAGGED = [
    ("1 -3 'id3|a y", "id3"),  # a negative importance weight
    ("1 2 'id4 |a z:1:2", "id4"),  # a:1:2
    ("1 'id5 |a w:nan", "id5"),  # a NaN value
    ("foo 'id7 |a b", "id7"),  # a label that is not a number
    ("1 2 3 4 'id8 |a b", "id8"),  # too many label tokens
    ("1 'id9 |a b:1e999", "id9"),  # an infinite value
]


@pytest.mark.parametrize("padding", [0, 3000])  # plain Python kernels, compiled ones
def test_predictions_keep_the_tag_of_a_skipped_line(tmp_path, padding):
    good = [f"1 'g{i} |a x{i % 7}" for i in range(padding)]
    lines = good + [line for line, _ in BAD_TAGGED] + ["-1 'last |a x"]
    src = tmp_path / "d.vw"
    src.write_text("\n".join(lines) + "\n")
    r = sl_run(["train", str(src), "-p", "-", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    assert len(out) == len(lines)
    for (_, tag), got in zip(BAD_TAGGED, out[padding:], strict=False):
        assert got == f"nan {tag}"
    assert out[-1].endswith(" last")


# ---- the small traps -------------------------------------------------------------------


def test_threads_sharing_a_model_lose_no_update():
    """Two threads calling partial_fit on one Model: every row is learned (before: 44,010 of
    80,010 rows counted)."""
    import threading

    from streamlearn.api import Model

    m = Model(loss="logistic", bits=12)
    m.partial_fit(lines=["1 |a x"])
    lines = [f"{1 if i % 3 else -1} |a x{i % 17} y{i % 5}" for i in range(50)]

    def work():
        for _ in range(20):
            m.partial_fit(lines=lines)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    from streamlearn.learners.base import S_N

    assert int(m._model.stats[S_N]) == 1 + 3 * 20 * 50


def test_a_model_is_still_copied_and_pickled_by_scikit_learn_users():
    import copy
    import pickle

    from streamlearn.api import Model

    m = Model(bits=10).fit(lines=["1 |a x", "-1 |a y"])
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):  # noqa: S301
        twin.partial_fit(lines=["1 |a z"])
        assert (twin.predict(lines=["1 |a x"]) == twin.predict(lines=["1 |a x"])).all()


@pytest.mark.parametrize("argv", [
    ["--passes", "2", "--passes", "3"],
    ["--oaa", "2", "--oaa=3"],
    ["-b", "18", "-b20"],
    ["--loss_function", "logistic", "--loss_function", "hinge"],
    ["-l", "0.5", "--learning_rate", "0.25"],
])  # fmt: skip
def test_disagreeing_repeated_options_are_refused(tmp_path, days, argv):
    r = invoke(["vw", "-d", str(days[0]), *argv, "-f", str(tmp_path / "m")])
    assert r.exit_code == 2 and "given twice with different values" in r.output, r.output
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("argv", [
    ["--passes", "2", "--passes", "2"],
    ["-q", "ab", "-q", "ba"],
    ["-l", "0.5", "--learning_rate=.5"],
])  # fmt: skip
def test_agreeing_or_repeatable_options_still_run(tmp_path, days, argv):
    assert invoke(["vw", "-d", str(days[0]), *argv, *QUIET]).exit_code == 0


@pytest.mark.parametrize("command", [["vw", "-d", "{d}", "--oaa", "0"],
                                     ["train", "{d}", "--oaa", "0"]])
def test_oaa_zero_is_refused(tmp_path, days, command):
    r = invoke([a.format(d=days[0]) for a in command])
    assert r.exit_code == 2, r.output


def test_a_link_on_a_multiclass_model(tmp_path):
    src = tmp_path / "mc.vw"
    src.write_text("1 |a x\n2 |a y\n3 |a z\n")
    m = tmp_path / "mc.sl"
    assert invoke(["train", "--oaa", "3", str(src), "-f", str(m), *QUIET]).exit_code == 0
    r = invoke(["predict", "-i", str(m), str(src), "--link", "logistic"])
    assert r.exit_code == 2 and "predicts classes" in r.output
    r = invoke(["train", "--oaa", "3", str(src), "--link", "logistic", "-p", "-"])
    assert r.exit_code == 2 and "predicts classes" in r.output
    r = invoke(["vw", "--oaa", "3", "-d", str(src), "--link", "logistic", "-p", "-"])
    assert r.exit_code == 0 and "the link changes nothing" in r.output  # as VW: ignored


def test_a_huge_label_leaks_no_warning_when_quiet(tmp_path):
    src = tmp_path / "big.vw"
    src.write_text("123456789012345678901 |a b\n1 |a c\n")
    r = sl_run(["train", str(src), "--quiet"], tmp_path)
    assert r.returncode == 0 and r.stderr == b"", r.stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_cache_must_be_a_regular_file(tmp_path, days, kind):
    """A cache is read again on every pass: a FIFO would block, /dev/null would be empty."""
    import os

    if kind == "fifo":
        c = tmp_path / "c.fifo"
        os.mkfifo(c)
    else:
        c = "/dev/null"
    r = invoke(["train", str(days[0]), "--cache", str(c), "--passes", "2", *QUIET])
    assert r.exit_code == 2 and "is not a regular file" in r.output, r.output


@pytest.mark.parametrize("cached_first", [False, True])
def test_invert_hash_with_a_cache_names_what_a_run_without_one_names(tmp_path, days,
                                                                     cached_first):  # fmt: skip
    """Cached batches keep no line text: --invert-hash over --cache --passes 3 was an
    IndexError traceback on pass 2 (and a cache matching at the start named nothing)."""
    c = tmp_path / "c.cache"
    base = ["train", str(days[0]), "--passes", "3", "--holdout-off", *QUIET]
    if cached_first:
        assert invoke([*base, "--cache", str(c)]).exit_code == 0
    r = invoke([*base, "--cache", str(c), "--invert-hash", str(tmp_path / "a.txt")])
    assert r.exit_code == 0, r.output
    assert invoke([*base, "--invert-hash", str(tmp_path / "b.txt")]).exit_code == 0
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()


# ---- multiline reductions: the same rules as single-line runs --------------------------

_CB = "shared |s a b\n0:1:0.5 |a x\n|a y\n\n|a x\n0:0:0.25 |a z\n\n"


@pytest.mark.parametrize("reduction", [["--cb_adf"], ["--cb_explore_adf"], ["--csoaa_ldf", "m"]])
def test_multiline_outputs_never_replace_an_input(tmp_path, reduction):
    data = tmp_path / "cb.dat"
    data.write_text(_CB if reduction[0] != "--csoaa_ldf" else _CB.replace("0:1:0.5", "1:1")
                    .replace("0:0:0.25", "2:0").replace("shared |s a b\n", ""))  # fmt: skip
    before = _digest(data)
    for flag in ("-p", "-f"):
        r = invoke(["vw", *reduction, "-d", str(data), flag, str(data), *QUIET])
        assert r.exit_code == 2, r.output
        assert "is the input" in r.output
        assert _digest(data) == before


def test_multiline_missing_input_is_one_line(tmp_path):
    r = invoke(["vw", "--cb_adf", "-d", str(tmp_path / "nope.dat"), *QUIET])
    assert r.exit_code == 3, r.output
    assert "Traceback" not in r.output and "cannot read" in r.output
