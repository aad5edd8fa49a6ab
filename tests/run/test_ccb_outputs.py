"""``--audit``, ``--invert_hash`` and ``--readable_model`` under ``--ccb_explore_adf`` and
``--slates`` (``run/ccbaudit.py``), beside VW 9.11.9 on logs of our own; and what those
runs showed: VW's t counts a CCB example once (not once per slot), its labels' numbers
are read with VW's ``parse_float`` (VW's informational lines on standard output:
``tests/cli/test_vw_stdout_notes.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.marks import slow_except

ROOT = Path(__file__).parents[2]
PROBS = ["0.2", "0.466667", "0.316667", "0.85", "0.333333", "1"]
"""Probabilities whose float32 VW's parser and C's strtof round apart (but 0.2 and 1)."""


def _logs(seed: int, n: int, tags: bool = True) -> str:
    """CCB logs: a shared line, 2..5 actions (namespaces shared with the shared line
    sometimes), 1..3 slots, most labeled, some with features, some listing actions."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, 6))
        lines = [f"ccb shared |User u{rng.integers(0, 4)} v{rng.integers(0, 3)}:0.5"]
        for a in range(k):
            extra = f" |User w{rng.integers(0, 2)}" if rng.random() < 0.3 else ""
            lines.append(f"ccb action |Action a{a} t{rng.integers(0, 3)}{extra}")
        for s in range(int(rng.integers(1, min(k, 3) + 1))):
            label = ""
            if rng.random() < 0.8:
                c = rng.choice(["0", "-1", "1", "-0.5", "0.466667"])
                label = f" {rng.integers(0, k)}:{c}:{rng.choice(PROBS)}"
            if rng.random() < 0.2:
                inc = sorted(set(rng.integers(0, k, size=2).tolist()))
                label += " " + ",".join(map(str, inc))
            feats = rng.choice([f"|Slot s{s}", f"| d{rng.integers(0, 3)} |User z", "|"])
            tag = f" 'seed=t{rng.integers(0, 9)}" if tags and rng.random() < 0.3 else ""
            lines.append(f"ccb slot{label}{tag} {feats}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _slates(seed: int, n: int) -> str:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        sizes = rng.integers(1, 4, size=int(rng.integers(2, 4))).tolist()
        labeled = rng.random() < 0.8
        cost = f" {rng.choice(['0', '-1', '0.466667', '1'])}" if labeled else ""
        lines = [f"slates shared{cost} |User u{rng.integers(0, 5)}"]
        for s, m in enumerate(sizes):
            lines += [f"slates action {s} |Action a{s}{a} t{rng.integers(0, 2)}" for a in range(m)]
        for s, m in enumerate(sizes):
            lab = f" {rng.integers(0, m)}:{rng.choice(PROBS)}" if labeled else ""
            lines.append(f"slates slot{lab} |Slot s{s}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _both(args: list[str], cwd: Path, outputs: tuple[str, ...] = ()) -> list[tuple]:
    """VW's and sl's (stdout, the table and summary on stderr, each named output)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    got = []
    for cmd in (["vowpalwabbit"], ["streamlearn", "vw"]):
        for name in outputs:
            (cwd / name).unlink(missing_ok=True)
        r = subprocess.run([sys.executable, "-m", *cmd, *args], capture_output=True, cwd=cwd,
                           env=env, timeout=300, check=False)  # fmt: skip
        assert r.returncode == 0, r.stderr.decode()[-800:]
        err = r.stderr.decode()
        table = err[err.find("average  since") :]
        got.append((r.stdout, table, *((cwd / n).read_bytes() for n in outputs)))
    return got


def _body(model: bytes) -> bytes:
    """A VW model file after its header."""
    from streamlearn.io import vwmodel

    return model[vwmodel.read_header(model).end :]


AUDITS = [
    "",
    "-q ::",
    "--noconstant -q UA --interactions AAU",
    "--first 2 -q ::",
    "--softmax --lambda 3",
    "--epsilon 0.3 --random_seed 5 -q :: --ccb_no_slot_index",
    "-q :: --ignore S",
    "--all_slots_loss --sgd -l 0.3",
]


@pytest.mark.parametrize("flags", slow_except(AUDITS, 1, 3))
def test_ccb_audit_is_vws(tmp_path: Path, flags: str) -> None:
    """Every slot's action lines, each with the weights the slots before it left (the
    learned line after a labeled slot's predictions), their tags the slot's."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_logs(sum(map(ord, flags)) % 97, 25))
    vw, sl = _both(["--ccb_explore_adf", *flags.split(), "-d", "d.txt", "--audit"], tmp_path)
    assert sl == vw
    assert vw[0].count(b"_ccb_slot_index^index1") or "--ccb_no_slot_index" in flags


def test_ccb_audit_of_a_model_scored_is_vws(tmp_path: Path) -> None:
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_logs(3, 30))
    (tmp_path / "t.txt").write_text(_logs(4, 8))
    vw, sl = _both(["--ccb_explore_adf", "-q", "::", "-d", "d.txt", "-f", "m.vw"], tmp_path,
                   ("m.vw",))  # fmt: skip
    assert _body(sl[2]) == _body(vw[2])  # (the header's version: VW's own, sl's 9.0.0)
    vw, sl = _both(["-i", "m.vw", "-t", "-d", "t.txt", "--audit"], tmp_path)
    assert sl == vw


NAMED = [
    ("--ccb_explore_adf", "-q ::", True),
    ("--ccb_explore_adf", "-q :: --interactions ::: --ignore S", True),
    ("--ccb_explore_adf", "--first 2 -q UA", False),
    ("--ccb_explore_adf", "--noconstant --sgd --power_t 0.3", False),
    ("--slates", "-q ::", True),
    ("--slates", "", False),
]


@pytest.mark.parametrize(("reduction", "flags", "predict_only"), slow_except(NAMED, 0, 4,
                                                                              unpack=True))
def test_invert_hash_and_readable_models_are_vws(tmp_path: Path, reduction: str, flags: str,
                                                 predict_only: bool) -> None:  # fmt: skip
    """Byte for byte: CCB's flag line, the explorer's and cb_adf's state, gd's resume
    state (its t: one a CCB example) and every weight named as VW first met it."""
    pytest.importorskip("vowpalwabbit")
    data = _slates(11, 30) if reduction == "--slates" else _logs(len(flags), 30)
    (tmp_path / "d.txt").write_text(data)
    args = [reduction, *flags.split(), "-d", "d.txt", "--invert_hash", "i.txt",
            "--readable_model", "r.txt", "-P", "5"]  # fmt: skip
    if predict_only:
        args.append("--predict_only_model")
    vw, sl = _both(args, tmp_path, ("i.txt", "r.txt"))
    assert sl == vw
    assert b"CCB: has_seen_multi_slot_example = true" in vw[2]
    assert b"*_ccb_slot_index^index" in vw[2] or not flags.startswith("-q")


def test_invert_hash_from_stdin_names_the_features(tmp_path: Path) -> None:
    """CCB's names are the run's (not read again from the files): a pipe is named as VW
    names the file (VW's Python package reads no stdin: it reads the file here)."""
    pytest.importorskip("vowpalwabbit")
    data = _logs(8, 20)
    (tmp_path / "d.txt").write_text(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["--ccb_explore_adf", "-q", "::", "--invert_hash", "i.txt", "--quiet"]
    out = []
    for cmd, more, feed in ((["vowpalwabbit"], ["-d", "d.txt"], None),
                            (["streamlearn", "vw"], [], data.encode())):  # fmt: skip
        r = subprocess.run([sys.executable, "-m", *cmd, *args, *more], input=feed,
                           cwd=tmp_path, env=env, capture_output=True, timeout=300,
                           check=False)  # fmt: skip
        assert r.returncode == 0, r.stderr.decode()
        out.append((tmp_path / "i.txt").read_bytes())
    assert out[0] == out[1]
    assert b"_ccb_slot_index^index1" in out[0]


def test_ccb_sgd_learns_at_vws_t(tmp_path: Path) -> None:
    """gd's t is VW's ``sd->t``: the examples before this one, every slot of an example
    learning at it (sl counted each slot: the rate decayed three times too fast), and the
    model's ``t`` is the examples seen."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_logs(21, 40, tags=False))
    args = ["--ccb_explore_adf", "--sgd", "-l", "0.7", "--power_t", "0.6", "-d", "d.txt",
            "--readable_model", "r.txt", "-f", "m.vw"]  # fmt: skip
    vw, sl = _both(args, tmp_path, ("r.txt", "m.vw"))
    assert sl[:3] == vw[:3]
    assert b"\nt 41\n" in vw[2]  # (--sgd's initial_t 1, and 40 examples)
    assert _body(sl[3]) == _body(vw[3])


def test_ccb_labels_read_as_vws_parser() -> None:
    """VW reads a CCB label's cost and probability with its own ``parse_float`` (digits
    accumulated in float32), not C's correctly rounded ``strtof``: 0.466667 is one unit in
    the last place apart, which moved VW's weights by one."""
    from streamlearn.io.ccblabels import parse_ccb

    lab = parse_ccb(["ccb", "slot", "1:0.466667:0.466667"])
    want = float(np.float32(np.float32(466667.0) * np.float32(1e-6)))
    assert lab.cost == lab.prob
    assert lab.prob != float(np.float32(0.466667))
    assert abs(lab.prob - want) <= 2**-24


def _answers(data: bytes, size: int, port: int, timeout: float = 60.0) -> bytes:
    """What the server answers to ``data``'s examples, sent one at a time, until ``size``
    bytes have come (a slot without a decision is an empty line: the answers are not
    counted by their blank lines)."""
    import select
    import socket

    examples = [e + b"\n\n" for e in data.split(b"\n\n") if e.strip()]
    buf = b""
    end = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        for ex in examples:
            s.sendall(ex)
        while len(buf) < size and time.monotonic() < end:
            r, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
            got = s.recv(1 << 20) if r else b""
            if not got:
                break
            buf += got
    return buf


@pytest.mark.parametrize(("reduction", "args"), [
    ("--ccb_explore_adf", []),
    ("--ccb_explore_adf", ["-t"]),
    ("--ccb_explore_adf", ["--epsilon", "0.3", "-q", "::"]),
    ("--slates", []),
])  # fmt: skip
def test_the_daemon_serves_a_ccb_model_as_sl_vw_runs_it(tmp_path: Path, reduction: str,
                                                        args: list[str]) -> None:  # fmt: skip
    """sl vw --daemon -i of a CCB (slates) model: each request's slots' decisions, as VW's
    daemon answers them and as sl vw -i -p writes them for the same examples in a file
    (beside VW's daemon on these examples: 80 of 80 answers the same, scripts in the
    session's log); learning, the model saved on SIGTERM is sl vw -i ... -f's.  (It
    answered nan: the server ran cb_adf's learner on CCB's lines.)  A malformed example is
    answered nan and the connection stays; the API still refuses such a model."""
    import signal

    from streamlearn import api
    from tests.run.test_serve import Server
    from tests.unix import sl

    gen = _logs if reduction == "--ccb_explore_adf" else _slates
    (tmp_path / "a.txt").write_text(gen(1, 60))
    second = gen(2, 40)
    (tmp_path / "b.txt").write_text(second)
    train = [t for t in args if t != "-t"]
    assert sl(["vw", reduction, *train, "-d", "a.txt", "-f", "m.vw", "--quiet"],
              tmp_path).returncode == 0  # fmt: skip
    test = ["-t"] if "-t" in args else []
    ref = sl(["vw", *test, "-i", "m.vw", "-d", "b.txt", "-p", "ref.p", "-f", "ref.vw",
              "--quiet"], tmp_path)  # fmt: skip
    assert ref.returncode == 0, ref.stderr
    srv = Server(["vw", "--daemon", "--foreground", *test, "-i", "m.vw", "-f", "out.vw",
                  "--port", "0", "--port_file", "s.port"], tmp_path)  # fmt: skip
    try:
        want = (tmp_path / "ref.p").read_bytes()
        got = _answers(second.encode(), len(want), srv.port)
        bad = b"ccb shared |User a\nccb action |A x\nccb slot 7:0.5:0.3 |S s\n\n"
        if reduction == "--ccb_explore_adf":
            assert _answers(bad, 5, srv.port) == b"nan\n\n"
        assert srv.stop(signal.SIGTERM) == 143
    finally:
        srv.stop(signal.SIGKILL)
    assert got == want
    if not test:
        assert (tmp_path / "out.vw").read_bytes() == (tmp_path / "ref.vw").read_bytes()
    with pytest.raises(ValueError, match="not yet"):
        api.Model.load(tmp_path / "m.vw")
