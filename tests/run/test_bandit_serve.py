"""A bandit behind the server (``sl serve --cb-adf --explore ...``, ``sl vw --daemon
--cb_explore_adf``) on the loopback address: multiline requests answered with VW's pmf
line and a blank line, in order, per connection; learning labeled examples (no ``-t``)
gives the weights and pmfs of ``sl vw`` over the same examples.  Every request loop is
bounded in count and time; every server is stopped in a ``finally``."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.api import Console, Inputs
from streamlearn.run.multiline import Multiline, fit
from tests.cb_logs import adf_log
from tests.run.test_serve import Server, connect


def _recv_examples(s, n: int, timeout: float = 60.0) -> bytes:  # noqa: ANN001
    """Answers of ``n`` examples (each ends with a blank line), or what came in time."""
    import select

    buf = b""
    end = time.monotonic() + timeout
    while buf.count(b"\n\n") < n and time.monotonic() < end:
        r, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
        if not r:
            break
        data = s.recv(1 << 20)
        if not data:
            break
        buf += data
    return buf


def _vw(ml: dict, path: Path):  # noqa: ANN202
    return fit({}, Multiline(reduction="cb_adf", **ml), Inputs(sources=[str(path)]),
               Console(True), predictions=True)  # fmt: skip


def test_learning_server_answers_and_learns_as_sl_vw(tmp_path: Path) -> None:
    text = adf_log(41, 150)
    (tmp_path / "a.txt").write_text(text)
    ref = _vw({"explore": "greedy", "epsilon": 0.1}, tmp_path / "a.txt")
    want = "".join(ref.predictions).encode()
    data = text.encode()
    srv = Server(["serve", "--cb-adf", "--explore", "epsilon", "--epsilon", "0.1", "--learn",
                  "-f", "m.sl"], tmp_path)  # fmt: skip
    try:
        s = connect(srv.port)
        try:
            for i in range(0, len(data), 333):  # pieces that cut examples and lines
                s.sendall(data[i : i + 333])
            got = _recv_examples(s, 150)
        finally:
            s.close()
        assert got == want
        assert srv.stop(signal.SIGTERM) == 143
    finally:
        srv.stop(signal.SIGKILL)
    m = model_io.load(tmp_path / "m.sl")
    assert np.array_equal(m.table((0.0,) * 4, np.float32), ref.table)


def test_interactive_requests_in_order_with_a_malformed_example(tmp_path: Path) -> None:
    exs = adf_log(42, 12, unlabeled=0.0).strip("\n").split("\n\n")
    bad = "shared |s a\n0:1:0.5 |a x\n0:2:0.5 |a y"  # two labeled lines: refused
    (tmp_path / "good.txt").write_text("\n\n".join(exs) + "\n\n")
    ref = _vw({"cb_type": "ips", "explore": "softmax", "lam": 1.5}, tmp_path / "good.txt")
    want = "".join(ref.predictions).encode().split(b"\n\n")[:-1]
    srv = Server(["serve", "--cb-adf", "--cb-type", "ips", "--explore", "softmax", "--lambda",
                  "1.5", "--learn"], tmp_path)  # fmt: skip
    try:
        s = connect(srv.port)
        try:
            answers = []
            for i, ex in enumerate(exs[:12]):
                if i == 5:
                    s.sendall(bad.encode() + b"\n\n")
                    assert _recv_examples(s, 1, 30) == b"nan\n\n"
                lines = (ex + "\n\n").encode()
                s.sendall(lines[:7])  # half a line: no answer yet
                time.sleep(0.01)
                s.sendall(lines[7:])
                got = _recv_examples(s, 1, 30)
                assert got.count(b"\n\n") == 1, got
                answers.append(got[:-2])
        finally:
            s.close()
        assert answers == want
        assert "two" in srv.log() or "labeled" in srv.log()
    finally:
        srv.stop(signal.SIGKILL)


def test_vw_daemon_scores_a_saved_bandit(tmp_path: Path) -> None:
    text = adf_log(43, 40)
    (tmp_path / "a.txt").write_text(text)
    from streamlearn import api
    from streamlearn.api import Outputs

    api.train_bandit({}, {"cb_adf": True, "explore": "squarecb"},
                     Inputs(sources=[str(tmp_path / "a.txt")]),
                     Outputs(final_model=str(tmp_path / "m.sl")), Console(True))  # fmt: skip
    before = (tmp_path / "m.sl").read_bytes()
    srv = Server(["vw", "--daemon", "--foreground", "-t", "-i", "m.sl", "--port", "0",
                  "--port_file", "s.port"], tmp_path)  # fmt: skip
    try:
        s = connect(srv.port)
        try:
            s.sendall(text.encode())
            got = _recv_examples(s, 40)
        finally:
            s.close()
    finally:
        srv.stop(signal.SIGTERM)
    (tmp_path / "q.txt").unlink(missing_ok=True)
    api.predict(Inputs(sources=[str(tmp_path / "a.txt")], initial_model=str(tmp_path / "m.sl")),
                Outputs(predictions=str(tmp_path / "q.txt")), Console(True))  # fmt: skip
    sl_lines = (tmp_path / "q.txt").read_text().splitlines()
    assert got.decode().split("\n\n")[:-1] == sl_lines  # -t: nothing learned, same pmfs
    assert (tmp_path / "m.sl").read_bytes() == before


def _serve_file(srv: Server, data: bytes, n: int) -> bytes:
    s = connect(srv.port)
    try:
        s.sendall(data)
        return _recv_examples(s, n)
    finally:
        s.close()


@pytest.mark.slow
def test_vw_daemon_serves_and_continues_a_vw_bandit_model(tmp_path: Path) -> None:
    # a VW user's model file (VW's format, written by sl vw -f as vw -f writes it) behind
    # sl vw --daemon: its options come from the file, the answers are sl vw -i's -p, and
    # the model saved on SIGTERM is the one sl vw -i ... -f writes from the same examples
    from tests.unix import sl

    (tmp_path / "a.txt").write_text(adf_log(44, 120))
    second = adf_log(45, 60)
    (tmp_path / "b.txt").write_text(second)
    opts = ["--cb_explore_adf", "--squarecb", "-q", "sa"]
    assert sl(["vw", *opts, "-d", "a.txt", "-f", "m.vw", "--quiet"], tmp_path).returncode == 0
    assert not (tmp_path / "m.vw").read_bytes().startswith(b"SLMODEL")  # (VW's format)
    ref = sl(["vw", "-i", "m.vw", "-d", "b.txt", "-p", "ref.p", "-f", "ref.vw", "--quiet"],
             tmp_path)  # fmt: skip
    assert ref.returncode == 0, ref.stderr
    srv = Server(["vw", "--daemon", "--foreground", "-i", "m.vw", "-f", "out.vw", "--port", "0",
                  "--port_file", "s.port"], tmp_path)  # fmt: skip
    try:
        got = _serve_file(srv, second.encode(), 60)
        assert srv.stop(signal.SIGTERM) == 143
    finally:
        srv.stop(signal.SIGKILL)
    assert got == (tmp_path / "ref.p").read_bytes()
    assert (tmp_path / "out.vw").read_bytes() == (tmp_path / "ref.vw").read_bytes()
    # sl serve (sl's names) scores the same file, its options read from it too
    srv = Server(["serve", "-i", "m.vw"], tmp_path, "t")
    try:
        got = _serve_file(srv, second.encode(), 60)
    finally:
        srv.stop(signal.SIGTERM)
    t = sl(["vw", "-t", "-i", "m.vw", "-d", "b.txt", "-p", "t.p", "--quiet"], tmp_path)
    assert t.returncode == 0, t.stderr
    assert got == (tmp_path / "t.p").read_bytes()


def test_vw_daemon_serves_a_model_vw_wrote(tmp_path: Path) -> None:
    import pytest

    vw = pytest.importorskip("vowpalwabbit")
    text = adf_log(46, 80)
    (tmp_path / "a.txt").write_text(text)
    v = vw.Workspace(f"--cb_explore_adf --epsilon 0.2 -q sa -d {tmp_path / 'a.txt'} "
                     f"-f {tmp_path / 'vw.model'} --quiet")  # fmt: skip
    v.finish()
    v = vw.Workspace(f"-t -i {tmp_path / 'vw.model'} -d {tmp_path / 'a.txt'} "
                     f"-p {tmp_path / 'vw.p'} --quiet")  # fmt: skip
    v.finish()
    srv = Server(["vw", "--daemon", "--foreground", "-t", "-i", "vw.model", "--port", "0",
                  "--port_file", "s.port"], tmp_path)  # fmt: skip
    try:
        got = _serve_file(srv, text.encode(), 80)
    finally:
        srv.stop(signal.SIGTERM)
    assert got == (tmp_path / "vw.p").read_bytes()


@pytest.mark.slow
def test_a_reloaded_vw_bandit_model_keeps_the_served_options(tmp_path: Path) -> None:
    # a cron job replaces the served VW model: one made with the same options is served
    # (its answers are sl vw -t -i's); one made with others (an explorer, -q) would be read
    # with the first file's options and answer wrongly: refused, naming what differs
    # (VW 9.11 keeps no --lambda for a --softmax model trained with its default: nor does sl)
    import os

    from tests.run.test_serve import _until
    from tests.unix import sl

    text = adf_log(47, 40)
    (tmp_path / "a.txt").write_text(adf_log(48, 80))
    (tmp_path / "b.txt").write_text(adf_log(49, 80))
    (tmp_path / "q.txt").write_text(text)
    same = ["--cb_explore_adf", "--epsilon", "0.2", "-q", "sa"]
    for name, data, opts in (("one", "a", same), ("two", "b", same),
                             ("other", "b", ["--cb_explore_adf", "--softmax"])):  # fmt: skip
        r = sl(["vw", *opts, "-d", f"{data}.txt", "-f", f"{name}.vw", "--quiet"], tmp_path)
        assert r.returncode == 0, r.stderr
        r = sl(["vw", "-t", "-i", f"{name}.vw", "-d", "q.txt", "-p", f"{name}.p", "--quiet"],
               tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "one.p").read_bytes() != (tmp_path / "two.p").read_bytes()

    def answers() -> bytes:
        return _serve_file(srv, text.encode(), 40)

    served = tmp_path / "served.vw"
    served.write_bytes((tmp_path / "one.vw").read_bytes())
    srv = Server(["serve", "-i", "served.vw", "--reload-every", "0.2"], tmp_path)
    try:
        assert answers() == (tmp_path / "one.p").read_bytes()
        os.replace(tmp_path / "two.vw", served)
        assert _until(lambda: answers() == (tmp_path / "two.p").read_bytes())
        os.replace(tmp_path / "other.vw", served)
        assert _until(lambda: "refused" in srv.log())
        assert "other options (--epsilon, --quadratic, --softmax)" in srv.log(), srv.log()
        assert answers() == (tmp_path / "two.p").read_bytes()
    finally:
        srv.stop(signal.SIGTERM)


def _cb_lines(seed: int, n: int) -> str:
    """``--cb 3`` lines: a label on four lines of five, the others unlabeled."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        label = f"{r.randint(1, 3)}:{r.randint(0, 1)}:0.5 " if i % 5 else ""
        out.append(f"{label}|f a{i % 7} b{r.randint(0, 4)}\n")
    return "".join(out)


@pytest.mark.parametrize("args", [[], ["--cb_explore", "3"], ["-t"]])
def test_the_daemon_serves_a_cb_k_model_as_sl_vw_runs_it(tmp_path, args):
    """sl vw --daemon -i of a --cb K model (VW 9's: cb_to_adf): each request line answered
    with sl vw -i -p's text for it (VW's: the action, or the pmf, then a blank line; beside
    VW's daemon on these lines: 60 of 60 the same, with and without --cb_explore), the
    model saved on SIGTERM sl vw -i -f's; a malformed line answered nan (it was refused:
    "serving --cb K: not yet")."""
    import signal
    import socket

    from tests.run.test_serve import Server
    from tests.unix import sl

    (tmp_path / "a.txt").write_text(_cb_lines(1, 200))
    second = _cb_lines(2, 60)
    (tmp_path / "b.txt").write_text(second)
    train = [a for a in args if a != "-t"]
    assert sl(["vw", "--cb", "3", *train, "-d", "a.txt", "-f", "m.vw", "--quiet"],
              tmp_path).returncode == 0  # fmt: skip
    test = ["-t"] if "-t" in args else []
    ref = sl(["vw", *test, "-i", "m.vw", "-d", "b.txt", "-p", "ref.p", "-f", "ref.vw",
              "--quiet"], tmp_path)  # fmt: skip
    assert ref.returncode == 0, ref.stderr
    want = (tmp_path / "ref.p").read_bytes()
    srv = Server(["vw", "--daemon", "--foreground", *test, "-i", "m.vw", "-f", "out.vw"],
                 tmp_path)  # fmt: skip
    try:
        got = b""
        with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
            for line in second.encode().splitlines(keepends=True):
                s.sendall(line)  # (one request per line)
            while len(got) < len(want):
                part = s.recv(1 << 16)
                if not part:
                    break
                got += part
            s.sendall(b"7:1:0.5 |f a\n")  # (action 7 of 3: malformed)
            bad = s.recv(64)
        assert srv.stop(signal.SIGTERM) == 143
    finally:
        srv.stop(signal.SIGKILL)
    assert got == want
    assert bad == b"nan\n\n"
    if not test:
        assert (tmp_path / "out.vw").read_bytes() == (tmp_path / "ref.vw").read_bytes()


@pytest.mark.parametrize("args", [[], ["--cb_explore", "3"]])
def test_a_diverging_cb_k_line_is_answered_nan_and_put_back(tmp_path, args):
    """A learning --cb K server: a line whose update would make the model non-finite is
    answered nan and everything it changed is put back, alone in its request (the one-line
    kernel's guard) or among others (the block path's): the model saved on SIGTERM is the
    one the good lines alone make (it was learned unguarded, and only refused when
    saved)."""
    import signal
    import socket

    from tests.run.test_serve import Server
    from tests.unix import sl

    (tmp_path / "a.txt").write_text(_cb_lines(1, 200))
    good = _cb_lines(2, 40).splitlines(keepends=True)
    (tmp_path / "good.txt").write_text("".join(good))
    assert sl(["vw", "--cb", "3", *args, "-d", "a.txt", "-f", "m.vw", "--quiet"],
              tmp_path).returncode == 0  # fmt: skip
    ref = sl(["vw", "-i", "m.vw", "-d", "good.txt", "-f", "ref.vw", "--quiet"], tmp_path)
    assert ref.returncode == 0, ref.stderr
    bad = b"1:1e18:0.001 |f a1:1e18 b2\n"
    srv = Server(["vw", "--daemon", "--foreground", "-i", "m.vw", "-f", "out.vw"], tmp_path)
    try:
        answers = []
        with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:

            def ask(data: bytes, n: int) -> None:
                s.sendall(data)
                got = b""
                while got.count(b"\n\n") < n:
                    part = s.recv(1 << 16)
                    assert part, got
                    got += part
                answers.extend(got.split(b"\n\n")[:n])

            for line in good[:20]:  # one line a request (the one-line kernel)
                ask(line.encode(), 1)
            ask(bad, 1)
            ask(b"".join(x.encode() for x in good[20:30]) + bad, 11)  # the block path
            for line in good[30:]:
                ask(line.encode(), 1)
        assert srv.stop(signal.SIGTERM) == 143
    finally:
        srv.stop(signal.SIGKILL)
    assert [i for i, a in enumerate(answers) if a == b"nan"] == [20, 31], (answers, srv.log())
    assert srv.log().count("would make the model non-finite") == 2
    assert (tmp_path / "out.vw").read_bytes() == (tmp_path / "ref.vw").read_bytes()
