"""Input's bytes never drive the terminal: escaped in every message, exact in data outputs."""

from __future__ import annotations

import re

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.cli import cli
from streamlearn.system.text import printable, shown_bytes
from tests.unix import sl

# what a terminal acts on: C0 and C1 controls, DEL, and the bidi and zero-width marks
_ACTIVE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@given(st.text())
def test_printable_leaves_nothing_a_terminal_acts_on(text):
    out = printable(text)
    assert not _ACTIVE.search(out)
    assert out == text or "\\" in out
    if text.isprintable():
        assert out == text


@given(st.binary())
def test_shown_bytes_escapes_what_is_not_utf8(data):
    out = shown_bytes(data)
    assert not _ACTIVE.search(out)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        assert "\\x" in out
    else:
        assert out == printable(text)


BYTES = st.lists(st.sampled_from([b"\x1b]0;owned\x07", b"\x1b[2J", b"\r", b"\xff", b"\xc3",
                                  b"\xe2\x80\xae", b"\x00", b"\t", b" ", b"|", b":", b"1",
                                  b"-1", b"a", b"x", b"'", b"\x85", b"\xc2\x9b"]),
                 max_size=12).map(b"".join)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=st.lists(BYTES, min_size=1, max_size=6))
def test_no_input_byte_reaches_stderr_raw(tmp_path_factory, lines):
    """Warnings quote malformed lines; whatever those hold, stderr shows it escaped."""
    tmp = tmp_path_factory.mktemp("esc")
    data = b"\n".join([b"1 |f a", *lines]) + b"\n"
    r = CliRunner().invoke(cli, ["train", "-p", str(tmp / "p.txt")], input=data,
                           catch_exceptions=False)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert not _ACTIVE.search(r.output), r.output  # stderr (and stdout) as the user sees them


def test_the_issues_escapes_are_shown_escaped(tmp_path):
    (tmp_path / "d.vw").write_bytes(b"1 |f a\nx\x1b]0;owned\x07 |f \x1b[2J\r\n"
                                    b"\xe2\x80\xae |f a\n")  # fmt: skip
    r = sl(["train", "d.vw"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert b"\x1b" not in r.stderr and b"\x07" not in r.stderr and b"\xe2\x80\xae" not in r.stderr
    assert b"d.vw:2: bad label (not a number): x\\x1b]0;owned\\x07 |f \\x1b[2J" in r.stderr
    assert b"d.vw:3: bad label (not a number): \\u202e |f a" in r.stderr
    r = sl(["train", "\x1b[2Jnope.vw"], tmp_path)
    assert r.returncode == 3 and b"cannot read \\x1b[2Jnope.vw" in r.stderr


def test_tags_in_predictions_keep_their_bytes(tmp_path):
    tags = [b"caf\xc3\xa9", b"bad\xff", b"esc\x1b[0m", b"\xe2\x80\xae"]
    (tmp_path / "d.vw").write_bytes(b"".join(b"1 '%s |f a\n" % t for t in tags) + b"x |f a\n")
    for command in (["train", "d.vw"], ["predict", "-i", "m.sl", "d.vw"]):
        if command[0] == "train":
            command += ["-f", "m.sl"]
        r = sl([*command, "-p", "-", "--quiet"], tmp_path)
        assert r.returncode == 0, r.stderr
        got = [ln.split(b" ", 1)[1] if b" " in ln else None for ln in r.stdout.split(b"\n")[:-1]]
        assert got == [*tags, None]


def test_names_that_are_not_utf8_are_named_exactly(tmp_path):
    (tmp_path / "d.vw").write_bytes(b"1 |f caf\xff b\xc3 \xe2\x80\xae\n-1 |\xfens x y\n"
                                    b"1 |f \xc3\xa9t\xc3\xa9:2 z:\xff\n")  # fmt: skip
    r = sl(["train", "d.vw", "--invert-hash", "ih.txt", "-f", "m.sl", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [ln.split(b"\t") for ln in (tmp_path / "ih.txt").read_bytes().splitlines()
            if not ln.startswith(b"#")]  # fmt: skip
    names = {n for row in rows for n in row[2].split(b" ")}
    assert all(row[2] for row in rows)  # every non-zero weight has its name
    assert names >= {b"f^caf\xff", b"f^b\xc3", b"f^\xe2\x80\xae", b"\xfens^x", b"\xfens^y",
                     b"f^\xc3\xa9t\xc3\xa9", b"f^z^\xff", b"Constant"}  # fmt: skip
    r = sl(["inspect", "m.sl", "--top", "20"], tmp_path)
    assert r.returncode == 0 and b"f^caf\\xff" in r.stdout and b"\\xfens^x" in r.stdout
    assert b"\\u202e" in r.stdout and b"\xe2\x80\xae" not in r.stdout
    assert "f^été".encode() in r.stdout
