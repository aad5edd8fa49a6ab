"""Environmental failures: a documented exit code, one line, the old model intact, no leftovers."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from streamlearn import model as model_io
from streamlearn.cli import cli
from tests.marks import slow_except
from tests.unix import SL, default_signals, env, invoke, leftovers, one_line_error, sl, text_data

TRAIN = ["train", "--algo", "sgd", "--loss", "logistic", "--quiet"]


@pytest.fixture
def setup(tmp_path):
    """A data file and a model trained on it; returns (data, model, model digest)."""
    data = tmp_path / "d.vw"
    data.write_text(text_data(1500))
    m = tmp_path / "m.sl"
    assert invoke([*TRAIN, str(data), "-f", str(m)]).exit_code == 0
    return data, m, hashlib.sha256(m.read_bytes()).hexdigest()


def _digest(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


# ---- signals ------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", slow_except([signal.SIGTERM, signal.SIGINT, signal.SIGHUP], 0))
@pytest.mark.parametrize("command", slow_except(["train", "predict"], 0))
def test_signal_at_a_random_moment(tmp_path, setup, sig, command):
    """Sent while sl starts, waits on a slow stdin, learns, or saves."""
    data, m, digest = setup
    rng = random.Random(f"{sig}{command}")
    lines = data.read_bytes().splitlines(keepends=True)
    if command == "train":
        args = [*TRAIN[:-1], "-i", str(m), "-f", str(m), "--passes", "2", "-p", "p.txt"]
    else:
        args = ["predict", "-i", str(m), "-p", "p.txt", "--report", "r.json"]
    old_preds = None
    for _ in range(3):
        proc = subprocess.Popen(
            [*SL, *args], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env(tmp_path), cwd=tmp_path, preexec_fn=default_signals,
        )  # fmt: skip

        def feed(proc=proc):
            try:
                for i in range(0, len(lines), 100):
                    proc.stdin.write(b"".join(lines[i : i + 100]))
                    proc.stdin.flush()
                    time.sleep(0.01)
                proc.stdin.close()
            except (BrokenPipeError, ValueError):
                pass

        t = threading.Thread(target=feed, daemon=True)
        t.start()
        time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(sig)
        proc.wait(timeout=60)
        err = proc.stderr.read()
        t.join(5)
        # -sig: the signal came while the interpreter shut down after a complete run
        # (Python restores the default handlers then); a shell reports 128 + sig
        assert proc.returncode in (0, 128 + sig, -sig), err
        assert "Traceback" not in err.decode(), err
        preds = tmp_path / "p.txt"
        if proc.returncode > 0:
            one_line_error(err)
            assert _digest(m) == digest  # the old model, untouched
            assert (preds.read_bytes() if preds.exists() else None) == old_preds
        digest = _digest(m)
        old_preds = preds.read_bytes() if preds.exists() else None
        assert leftovers(tmp_path) == []
        model_io.load(m)


def test_sigpipe_on_predictions_in_predict(tmp_path, setup):
    data, m, _ = setup
    big = tmp_path / "big.vw"
    big.write_bytes(data.read_bytes() * 20)
    r = sl([f"SL predict -i {m} {big} -p - | head -1; exit ${{PIPESTATUS[0]}}"], tmp_path, True)
    assert r.returncode == 141, r.stderr
    assert r.stdout.count(b"\n") == 1 and r.stderr == b""


def test_sigpipe_on_predictions_in_train_keeps_learning_and_saves(tmp_path, setup):
    data, _, _ = setup
    big = tmp_path / "big.vw"
    big.write_bytes(data.read_bytes() * 20)
    cmd = f"SL {' '.join(TRAIN)} {big} -p - -f new.sl --report r.json | head -1"
    r = sl([cmd + "; exit ${PIPESTATUS[0]}"], tmp_path, True)
    assert r.returncode == 141, r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["examples"] == 20 * 1500 and report["predictions_complete"] is False
    assert model_io.load(tmp_path / "new.sl").stats[0] == 20 * 1500
    assert "Traceback" not in r.stderr.decode()


def _multiclass(n: int) -> str:  # (-p of --cbify: 2 bytes a line; the pipe holds 64 KiB)
    lines = [f"{1 + i % 3} |a f{i % 7} g{i % 11}:0.5 h{i % 5}" for i in range(n)]
    return "\n".join(lines) + "\n"


# (data, command line): the multiline runs, which write their predictions when they end
_MULTILINE_PIPED = {
    "cb_explore_adf": ("adf", "vw --cb_explore_adf --epsilon 0.1 -d d.txt -p - -f new.m "
                              "--report r.json"),
    "sl train --cb-adf": ("adf", "train --cb-adf --explore epsilon d.txt -p - -f new.m "
                                 "--report r.json"),
    "cbify": ("mc", "vw --cbify 3 -d d.txt -p - -f new.m --report r.json"),
    "lda": ("mc", "vw --lda 3 -d d.txt -p - -f new.m"),
    "cats": ("mc", "vw --cbify 4 --cbify_reg --cats 4 --min_value 0 --max_value 4 "
                   "--bandwidth 1 -d d.txt -p -"),  # (no -f: sl does not write its model yet)
}


@pytest.mark.parametrize("case", slow_except(list(_MULTILINE_PIPED), 0))
def test_sigpipe_on_a_multiline_runs_predictions_still_saves(tmp_path, case):
    """Their ``-p -`` is written at the end, in one piece: a reader that leaves then still
    leaves the model written, a note, and exit 141, as in ``sl train``'s."""
    from tests.cb_logs import adf_log

    kind, line = _MULTILINE_PIPED[case]
    (tmp_path / "d.txt").write_text(adf_log(0, 3000) if kind == "adf" else _multiclass(40000))
    r = sl([f"SL {line} | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}"], tmp_path, True)
    assert r.returncode == 141, r.stderr
    assert b"Traceback" not in r.stderr
    assert b"reader of the predictions went away" in r.stderr
    assert "-f" not in line or (tmp_path / "new.m").stat().st_size > 0
    if "--report" in line:  # (as sl train's report says it)
        assert json.loads((tmp_path / "r.json").read_text())["predictions_complete"] is False
        r = sl(line.replace("-p -", "-p p.txt").split(), tmp_path)
        assert r.returncode == 0, r.stderr
        assert json.loads((tmp_path / "r.json").read_text())["predictions_complete"] is True
    assert leftovers(tmp_path) == []


def test_inspect_into_a_closed_pipe(tmp_path, setup):
    _, m, _ = setup
    r = sl([f"SL inspect {m} --top 1000 | head -1; exit ${{PIPESTATUS[0]}}"], tmp_path, True)
    assert r.returncode in (0, 141) and b"Traceback" not in r.stderr


# ---- full disk, I/O errors, missing directories -----------------------------------------


@pytest.fixture
def tiny_fs(tmp_path):
    """A 160 KiB tmpfs (room for one model and little else); skipped where mount is refused."""
    d = tmp_path / "small"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(d)],
                       capture_output=True)  # fmt: skip
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield d
    subprocess.run(["umount", str(d)], check=False)


@pytest.mark.parametrize(
    "output", slow_except(["-f", "-p", "--report", "--readable-model", "--cache"], 0, 1)
)
def test_disk_full_at_each_output(tmp_path, setup, tiny_fs, output):
    data, m, digest = setup
    big = tmp_path / "big.vw"
    big.write_bytes(data.read_bytes() * 4)
    model = tiny_fs / "m.sl"
    model.write_bytes(m.read_bytes())
    with open(tiny_fs / "filler", "wb", buffering=0) as f:  # fill the disk: no room left
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    args = [*TRAIN, str(big), "-i", str(model), output, str(tiny_fs / "out")]
    r = sl(args, tmp_path)
    assert r.returncode == 7, r.stderr
    one_line_error(r.stderr)
    assert b"no space left on device" in r.stderr
    assert _digest(model) == digest
    assert not (tiny_fs / "out").exists() or output == "-f"
    assert leftovers(tiny_fs) == [] and leftovers(tmp_path) == []


def test_disk_full_on_a_device_is_exit_7(tmp_path, setup):
    data, _, _ = setup
    r = sl([*TRAIN, str(data), "-p", "/dev/full"], tmp_path)
    assert r.returncode == 7 and b"cannot write predictions /dev/full" in r.stderr
    one_line_error(r.stderr)


@pytest.mark.parametrize("site", ["write", "fsync", "replace"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_injected_os_errors_at_every_write_step(tmp_path, setup, monkeypatch, site, code):
    data, m, digest = setup
    from streamlearn.system import outputs
    def fail(*a, **k):
        raise OSError(code, os.strerror(code))

    if site == "write":
        real_fdopen = os.fdopen

        class Failing:
            def __init__(self, f):
                self.f = f

            def write(self, b):
                fail()

            def __getattr__(self, name):
                return getattr(self.f, name)

        monkeypatch.setattr(outputs.os, "fdopen", lambda *a, **k: Failing(real_fdopen(*a, **k)))
    else:
        monkeypatch.setattr(outputs.os, site, fail)
    r = CliRunner().invoke(cli, [*TRAIN, str(data), "-i", str(m), "-f", str(m)])
    assert r.exit_code == 7, r.output
    assert os.strerror(code).lower() in r.output.lower()
    assert _digest(m) == digest
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_output_directory_removed_mid_run(tmp_path, setup):
    data, _, _ = setup
    out = tmp_path / "gone"
    out.mkdir()
    cmd = (f"(cat {data}; sleep 4; cat {data}) | SL {' '.join(TRAIN)} -f {out}/m.sl & "
           f"sleep 2.5; rmdir {out}; wait $!")  # fmt: skip
    r = sl([cmd], tmp_path, True)
    assert r.returncode == 7, r.stderr
    one_line_error(r.stderr)
    assert b"cannot write model" in r.stderr


def test_closed_stdout_and_stderr(tmp_path, setup):
    data, _, _ = setup
    r = sl([f"SL train {data} -p - >&-"], tmp_path, True)
    assert r.returncode == 7 and b"standard output is closed" in r.stderr
    r = sl([f"SL train --algo sgd {data} -f m2.sl 2>&-"], tmp_path, True)
    assert r.returncode == 0 and r.stdout == b""  # the table did not go to stdout
    model_io.load(tmp_path / "m2.sl")


# ---- configuration the machine cannot run ---------------------------------------------


def test_table_larger_than_memory_is_exit_8(tmp_path, setup, monkeypatch):
    data, _, _ = setup
    from streamlearn.system import memory
    monkeypatch.setattr(memory, "physical", lambda: 1 << 30)
    r = invoke(["train", str(data), "-b", "28", "--algo", "fobos", "--l1", "1e-6", "--l2", "1e-6"])
    assert r.exit_code == 8
    assert "needs 6.0 GiB (2^28 slots x 24 bytes)" in r.output and "lower -b" in r.output


def test_allocation_failure_is_exit_8(tmp_path, setup, monkeypatch):
    data, _, _ = setup
    from streamlearn.system import memory
    def no_memory(shape, dtype=None):
        raise MemoryError

    import types

    import numpy as np

    fake = types.SimpleNamespace(prod=np.prod, int64=np.int64, dtype=np.dtype, zeros=no_memory)
    monkeypatch.setattr(memory, "np", fake)
    r = invoke(["train", str(data), "-b", "24"])
    assert r.exit_code == 8 and "could not be allocated" in r.output


@pytest.mark.parametrize("p", ["inf", "nan", "1"])
def test_bad_smidas_p_is_a_usage_error(tmp_path, setup, p):
    data, _, _ = setup
    r = invoke(["train", str(data), "--algo", "smidas", "--l1", "1e-5", "--p", p])
    assert r.exit_code == 2 and "--p" in r.output


def test_model_without_a_known_learner(tmp_path, setup):
    data, m, _ = setup
    model = model_io.load(m)
    model.learner = "from_the_future"
    model_io.save(model, tmp_path / "odd.sl")
    r = invoke(["train", str(data), "-i", str(tmp_path / "odd.sl"), "--l2", "1e-5"])
    assert r.exit_code == 5 and "from_the_future" in r.output
    raw = model_io._encode(model).replace(b'"learner"', b'"learnex"')
    import hashlib as h

    body = raw[:-32]
    (tmp_path / "nokey.sl").write_bytes(body + h.sha256(body).digest())
    r = invoke(["train", str(data), "-i", str(tmp_path / "nokey.sl")])
    assert r.exit_code == 5 and "invalid header" in r.output


# ---- concurrent continuations -------------------------------------------------------------


def test_lock_timeout_is_exit_9(tmp_path, setup):
    data, m, digest = setup
    fd = os.open(str(m) + ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = invoke([*TRAIN, str(data), "-i", str(m), "-f", str(m), "--lock-timeout", "0.2"])
    finally:
        os.close(fd)
    assert r.exit_code == 9 and "--lock-timeout" in r.output
    assert _digest(m) == digest


@pytest.mark.slow
def test_twenty_concurrent_continuations_count_every_example_once(tmp_path, setup):
    data, m, _ = setup
    day = tmp_path / "day.vw"
    day.write_text("".join(data.read_text().splitlines(keepends=True)[:100]))
    before = model_io.load(m).gstate[1]
    for _ in range(2):
        procs = [
            subprocess.Popen([*SL, "train", "--quiet", "-i", str(m), str(day), "-f", str(m)],
                             env=env(tmp_path), cwd=tmp_path, stderr=subprocess.PIPE)
            for _ in range(10)
        ]  # fmt: skip
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
    after = model_io.load(m)
    assert after.gstate[1] - before == 20 * 100  # learned examples: none lost, none twice
    assert leftovers(tmp_path) == []


def test_exit_now_runs_exit_handlers_and_flushes_streams() -> None:
    """sl skips the interpreter's finalization, but not atexit handlers or buffered output."""
    code = (
        "import atexit, sys\n"
        "from streamlearn.system.process import exit_now\n"
        "atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
        "sys.stdout.write('buffered, no newline')\n"
        "exit_now(3)\n"
    )
    env = dict(os.environ, PYTHONUNBUFFERED="")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 3
    assert r.stdout == "buffered, no newline"
    assert r.stderr.strip() == "handler ran"
