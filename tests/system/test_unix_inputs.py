"""Every way a shell hands ``sl`` its input yields every line once (real processes)."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import select
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

from tests.marks import slow_except
from tests.unix import SL, env, leftovers, one_line_error, sl, text_data

TRAIN = ["train", "--algo", "sgd", "--loss", "logistic", "--quiet"]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The reference: the model and report of the plain file."""
    d = tmp_path_factory.mktemp("plain")
    (d / "d.vw").write_text(text_data())
    r = sl([*TRAIN, "d.vw", "-f", "m.sl", "--report", "r.json"], d)
    assert r.returncode == 0, r.stderr
    return d, (d / "m.sl").read_bytes(), json.loads((d / "r.json").read_text())


def _slow_writer(path_or_fd, data: bytes, chunk: int = 4096, pause: float = 0.002):
    def run():
        f = open(path_or_fd, "wb") if isinstance(path_or_fd, str) else path_or_fd  # noqa: SIM115
        with f:
            for i in range(0, len(data), chunk):
                f.write(data[i : i + chunk])
                f.flush()
                time.sleep(pause)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


COMMANDS = {
    "file": "SL {train} d.vw -f out.sl --report out.json",
    "gzip": "SL {train} d.vw.gz -f out.sl --report out.json",
    "bzip2": "SL {train} d.vw.bz2 -f out.sl --report out.json",
    "xz": "SL {train} d.vw.xz -f out.sl --report out.json",
    "stdin pipe": "cat d.vw | SL {train} -f out.sl --report out.json",
    "stdin -": "cat d.vw | SL {train} - -f out.sl --report out.json",
    "stdin file": "SL {train} -f out.sl --report out.json < d.vw",
    "gzip on stdin": "cat d.vw.gz | SL {train} -f out.sl --report out.json",
    "-d /dev/stdin": "cat d.vw | SL {train} -d /dev/stdin -f out.sl --report out.json",
    "process substitution": "SL {train} <(cat d.vw) -f out.sl --report out.json",
    "gzip process substitution": "SL {train} <(cat d.vw.gz) -f out.sl --report out.json",
    "two passes from a pipe": "cat d.vw | SL {train} --passes 2 -f out2.sl --report out.json",
}


@pytest.mark.parametrize("kind", slow_except(COMMANDS, 0, 1, 4, 11))
def test_every_input_kind_learns_every_line_once(plain, tmp_path, kind):
    d, model, report = plain
    text = (d / "d.vw").read_bytes()
    (tmp_path / "d.vw").write_bytes(text)
    (tmp_path / "d.vw.gz").write_bytes(gzip.compress(text))
    (tmp_path / "d.vw.bz2").write_bytes(bz2.compress(text))
    (tmp_path / "d.vw.xz").write_bytes(lzma.compress(text))
    r = sl([COMMANDS[kind].format(train=" ".join(TRAIN))], tmp_path, shell=True)
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "out.json").read_text())
    if kind == "two passes from a pipe":  # every line in each pass, from the temporary cache
        assert got["passes_run"] == 2 and got["examples"] == 2 * report["examples"]
        assert leftovers(tmp_path) == []
        return
    assert got["examples"] == report["examples"]
    assert got["average_loss"] == report["average_loss"]
    assert (tmp_path / "out.sl").read_bytes() == model


@pytest.mark.parametrize("slow", [False, True])
def test_named_fifo_is_read_once_and_whole(plain, tmp_path, slow):
    d, model, report = plain
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = _slow_writer(str(fifo), (d / "d.vw").read_bytes(), pause=0.002 if slow else 0.0)
    r = sl([*TRAIN, str(fifo), "-f", "out.sl"], tmp_path, timeout=60)
    writer.join(5)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.sl").read_bytes() == model


def test_slow_pipe_on_stdin(plain, tmp_path):
    d, model, _ = plain
    proc = subprocess.Popen(
        [*SL, *TRAIN, "-f", "out.sl"], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    _slow_writer(proc.stdin, (d / "d.vw").read_bytes(), chunk=1000, pause=0.003).join(60)
    assert proc.wait(60) == 0, proc.stderr.read()
    assert (tmp_path / "out.sl").read_bytes() == model


def _read_line(stream, timeout: float) -> bytes | None:
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else None


@pytest.mark.parametrize("command", ["predict", "train"])
def test_live_stream_answers_each_line_promptly(plain, tmp_path, command):
    """``tail -f log | sl predict -i m -p -``: a line is answered without waiting for more."""
    d, _, _ = plain
    args = ["predict", "-i", str(d / "m.sl")] if command == "predict" else TRAIN
    proc = subprocess.Popen(
        [*SL, *args, "-p", "-", "--quiet"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    try:
        proc.stdin.write(b"1 'first |a f1:0.5\n")
        proc.stdin.flush()
        first = _read_line(proc.stdout, 60)  # includes start-up
        assert first is not None and first.endswith(b" first\n"), first
        for i in range(3):
            t = time.monotonic()
            proc.stdin.write(f"-1 'l{i} |a f{i}\n".encode())
            proc.stdin.flush()
            line = _read_line(proc.stdout, 10)
            assert line is not None and line.endswith(f" l{i}\n".encode())
            assert time.monotonic() - t < 5  # ~0.2 ms when idle (no fixed wait); generous for CI
        proc.stdin.close()
        assert proc.wait(30) == 0, proc.stderr.read()
    finally:
        proc.kill()


def test_unsupported_compression_is_refused(tmp_path):
    (tmp_path / "d.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 20)
    r = sl([*TRAIN, "d.zst"], tmp_path)
    assert r.returncode == 3
    assert b"unsupported compression: zstd" in r.stderr and b"zstd -dc" in r.stderr
    one_line_error(r.stderr)


def test_stdin_named_twice_is_refused(tmp_path):
    r = sl(["cat /dev/null | SL train - -"], tmp_path, shell=True)
    assert r.returncode == 2 and b"named twice" in r.stderr
    r = sl(["echo '1 | a' | SL train - /dev/stdin"], tmp_path, shell=True)
    assert r.returncode == 2 and b"same stream" in r.stderr


def test_closed_stdin_is_an_error_not_an_empty_input(tmp_path):
    r = sl(["SL train -f m.sl <&-"], tmp_path, shell=True)
    assert r.returncode == 3 and b"standard input is closed" in r.stderr
    assert not (tmp_path / "m.sl").exists()


def _xz_cases() -> dict[str, bytes]:
    one = lzma.compress(b"1 |f a\n-1 |f b\n")
    flipped = bytearray(one)
    flipped[len(one) // 2] ^= 0xFF
    return {
        "corrupt": bytes(flipped),
        "truncated": one[: len(one) - 9],
        "plain text after": one + b"1 |f c\n",
        "bad padding": one + b"\0\0",
        "garbage after padding": one + b"\0" * 4 + b"xyz",
    }


@pytest.mark.parametrize("case", slow_except(_xz_cases(), 0, 1))
def test_broken_xz_is_exit_3_as_xz_dc_fails(tmp_path, case):
    data = _xz_cases()[case]
    (tmp_path / "d.xz").write_bytes(data)
    r = sl([*TRAIN, "d.xz", "-f", "m.sl"], tmp_path)
    assert r.returncode == 3, r.stderr
    one_line_error(r.stderr)
    assert b"cannot read d.xz" in r.stderr
    assert not (tmp_path / "m.sl").exists()
    xz = subprocess.run(["xz", "-dc"], input=data, capture_output=True)
    if xz.returncode != 127:  # xz installed: it fails too
        assert xz.returncode != 0


def test_concatenated_and_padded_xz_streams_are_read_whole(tmp_path):
    a, b = lzma.compress(b"1 |f a\n"), lzma.compress(b"-1 |f b\n1 |f c\n")
    (tmp_path / "d.xz").write_bytes(a + b"\0" * 8 + b + b"\0" * 4)
    r = sl([*TRAIN, "d.xz", "-p", "-"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 3


def test_xz_reader_matches_lzma_on_many_small_reads():
    from streamlearn.system.sources import _Xz

    rng = np.random.default_rng(3)
    text = b"".join(b"%d |f a%d\n" % (i, rng.integers(1000)) for i in range(20000))
    raw = io.BytesIO(lzma.compress(text[:7000]) + lzma.compress(text[7000:]))
    x, out = _Xz(raw), bytearray()
    buf = bytearray(777)
    while n := x.readinto(memoryview(buf)):
        out += buf[:n]
    assert bytes(out) == text


# ---- bounded memory: the line cap, and inspect/plot reading only what they need ------------


def _limit_memory(gib: float):
    import resource

    def limit() -> None:
        n = int(gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (n, n))

    return limit


def test_a_line_longer_than_memory_is_skipped_in_bounded_memory(tmp_path):
    """A 1.25 GiB line through a pipe, under a 1 GiB address-space limit: skipped, reported."""
    good = text_data(300).encode()
    p = subprocess.Popen([*SL, *TRAIN, "-", "-f", "m.sl", "--report", "r.json"], cwd=tmp_path,
                         env=env(tmp_path, SL_JIT="1"), stdin=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=_limit_memory(1.0))  # fmt: skip

    def feed() -> None:
        try:
            p.stdin.write(good[: good.index(b"\n") + 1])
            chunk = b"x" * (1 << 20)
            for _ in range(1280):
                p.stdin.write(chunk)
            p.stdin.write(b"\n" + good)
            p.stdin.close()
        except BrokenPipeError:
            pass

    threading.Thread(target=feed, daemon=True).start()
    err = p.stderr.read()
    assert p.wait(120) == 0, err.decode()[-2000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["examples"] == 301
    assert report["skipped_reasons"] == {"line longer than --max-line-bytes": 1}
    assert report["first_errors"][0].startswith("<stdin>:2: line longer than --max-line-bytes")
    assert report["first_errors"][0].endswith(f"({1280 << 20:,} bytes)")


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [TRAIN + ["/dev/zero", "-f", "m.sl"], ["predict", "-i", "m.sl", "/dev/zero", "--quiet"]],
)
def test_dev_zero_reads_in_bounded_memory_and_stops_at_sigterm(tmp_path, args):
    (tmp_path / "d.vw").write_text("1 |f a\n")
    assert sl([*TRAIN, "d.vw", "-f", "m.sl"], tmp_path).returncode == 0
    before = (tmp_path / "m.sl").read_bytes()
    p = subprocess.Popen([*SL, *args], cwd=tmp_path, env=env(tmp_path, SL_JIT="1"),
                         stderr=subprocess.PIPE, preexec_fn=_limit_memory(1.0))  # fmt: skip
    time.sleep(4)  # at ~1 GB/s: several GB read
    assert p.poll() is None, p.stderr.read().decode()
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=30)[1]
    assert time.monotonic() - t < 1.0
    assert p.returncode == 143, err.decode()[-2000:]
    one_line_error(err)
    assert (tmp_path / "m.sl").read_bytes() == before


@pytest.mark.parametrize("command", [["inspect", "{}"], ["predict", "-i", "{}", "d.vw"],
                                     ["plot", "{}", "-o", "p.png"]])  # fmt: skip
def test_inspect_predict_and_plot_refuse_dev_zero_at_once(tmp_path, command):
    if command[0] == "plot":
        pytest.importorskip("matplotlib")
    (tmp_path / "d.vw").write_text("1 |f a\n")
    r = sl([a.format("/dev/zero") for a in command], tmp_path, timeout=60,
           preexec_fn=_limit_memory(1.0))  # fmt: skip
    assert r.returncode == (2 if command[0] == "plot" else 5), r.stderr
    one_line_error(r.stderr)


@pytest.mark.parametrize("command", slow_except([["inspect", "ff"], ["predict", "-i", "ff", "d.vw"],
                                                 ["plot", "ff", "-o", "p.png"]], 0, 2))  # fmt: skip
def test_a_model_or_report_fifo_without_a_writer_stops_at_sigterm(tmp_path, command):
    if command[0] == "plot":
        pytest.importorskip("matplotlib")  # without it, sl plot stops before opening the FIFO
    (tmp_path / "d.vw").write_text("1 |f a\n")
    os.mkfifo(tmp_path / "ff")
    p = subprocess.Popen([*SL, *command], cwd=tmp_path, env=env(tmp_path),
                         stderr=subprocess.PIPE)  # fmt: skip
    time.sleep(1.5)  # blocked in open()
    assert p.poll() is None
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=30)[1]
    assert time.monotonic() - t < 1.0 and p.returncode == 143, err
    one_line_error(err)


def test_a_model_read_from_a_pipe(tmp_path):
    (tmp_path / "d.vw").write_text("1 |f a\n-1 |f b\n")
    assert sl([*TRAIN, "d.vw", "-f", "m.sl"], tmp_path).returncode == 0
    r = sl(["SL inspect <(cat m.sl)"], tmp_path, shell=True)
    assert r.returncode == 0 and r.stdout.startswith(b"model /dev/fd/"), r.stderr
    r = sl(["SL predict -i /dev/stdin d.vw -p - --quiet < m.sl"], tmp_path, shell=True)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2, r.stderr


@pytest.mark.parametrize(
    "command",
    slow_except(["SL predict -i <(cat m.sl) d.vw -p - --quiet",
                 "cat m.sl | SL predict -i /dev/stdin d.vw -p - --quiet",
                 "(cat m.sl > ff &); SL predict -i ff d.vw -p - --quiet",
                 "SL train -i <(cat m.sl) d.vw -p - --quiet"], 0, 2),
    ids=["process-substitution", "stdin-pipe", "fifo", "train"],
)  # fmt: skip
def test_a_model_from_a_stream_is_read_once(tmp_path, command):
    """The tiny-input check read a model's header to learn its crosses: from a pipe that
    was the run's only read ('is not an sl model file (bad magic bytes)', exit 5), and a
    FIFO's writer went away before the run opened it again (a hang)."""
    (tmp_path / "d.vw").write_text("1 |f a\n-1 |f b\n")
    assert sl([*TRAIN, "d.vw", "-f", "m.sl"], tmp_path).returncode == 0
    os.mkfifo(tmp_path / "ff")
    verb = command.split("SL ")[1].split()[0]
    expected = sl([verb, "-i", "m.sl", "d.vw", "-p", "-", "--quiet"], tmp_path).stdout
    r = sl([command], tmp_path, shell=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected and len(expected.splitlines()) == 2
