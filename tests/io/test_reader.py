"""Reader: blocks of whole lines, line numbers, files/stdin/gzip, errors naming the source."""

from __future__ import annotations

import gzip
import io
import sys

import numpy as np
import pytest

from streamlearn.io import InputError, describe_errors, iter_blocks, read_batches
from tests.paths import script

BLOCK_SIZES = [1, 2, 7, 64, 1 << 20]


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _joined(blocks) -> bytes:
    return b"".join(b.data.tobytes() for b in blocks)


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
def test_blocks_hold_whole_lines_with_right_first_line(tmp_path, block_size: int) -> None:
    lines = [b"1 |f a", b"", b"x" * 50, b"-1 |g b c", b"\r", b"last"]  # no final newline
    text = b"\n".join(lines)
    path = tmp_path / "a.vw"
    path.write_bytes(text)
    blocks = list(iter_blocks([str(path)], block_size=block_size))
    assert _joined(blocks) == text
    line = 1
    for b in blocks:
        assert b.source == str(path)
        assert b.first_line == line
        data = b.data.tobytes()
        assert data.endswith(b"\n") or b is blocks[-1]
        line += data.count(b"\n")


def test_long_line_grows_the_buffer(tmp_path) -> None:
    text = b"1 |f a\n" + b"2 |f " + b"x " * 5000 + b"\n3 |f b\n"
    path = tmp_path / "long.vw"
    path.write_bytes(text)
    blocks = list(iter_blocks([str(path)], block_size=16))
    assert _joined(blocks) == text
    assert max(b.data.shape[0] for b in blocks) >= 10005
    starts = {b.data.tobytes().split(b"\n")[0][:2]: b.first_line for b in blocks}
    assert starts[b"1 "] == 1 and starts[b"2 "] == 2


def test_buffers_are_reused_only_when_no_block_holds_them(tmp_path) -> None:
    """Blocks kept alive keep their bytes; blocks let go free their buffer for the next."""
    lines = [f"{i} |f a{i}:{i % 7} b{i * 31 % 1000}\n".encode() for i in range(5000)]
    path = tmp_path / "d.vw"
    path.write_bytes(b"".join(lines))
    kept, seen = [], []
    for n, block in enumerate(iter_blocks([str(path)], block_size=1000)):
        seen.append(block.data.tobytes())
        if n % 3 == 0:
            kept.append((block, seen[-1]))
        del block
    assert b"".join(seen) == path.read_bytes()
    for block, raw in kept:  # later blocks were read into other buffers
        assert block.data.tobytes() == raw
    bases = {id(b.data.base) for b, _ in kept}
    assert len(bases) == len(kept)


def test_gzip_detected_by_magic_not_name(tmp_path) -> None:
    text = b"1 |f a\n-1 |f b\n" * 100
    gz = tmp_path / "data.txt"  # gzip content, misleading name
    gz.write_bytes(gzip.compress(text))
    plain = tmp_path / "plain.gz"  # plain content, misleading name
    plain.write_bytes(text)
    # two gzip members concatenated are one stream
    multi = tmp_path / "multi"
    multi.write_bytes(gzip.compress(text[:700]) + gzip.compress(text[700:]))
    for p in (gz, plain, multi):
        assert _joined(iter_blocks([str(p)], block_size=100)) == text


def test_several_files_in_order_each_numbered_from_one(tmp_path) -> None:
    paths = []
    for i in range(3):
        p = tmp_path / f"f{i}.vw"
        p.write_bytes(b"".join(b"%d |f a%d\n" % (i, j) for j in range(5)))
        paths.append(str(p))
    blocks = list(iter_blocks(paths, block_size=10))
    assert [b.source for b in blocks if b.first_line == 1] == paths
    assert _joined(blocks) == b"".join(open(p, "rb").read() for p in paths)


def test_stdin_plain_and_gzip(monkeypatch: pytest.MonkeyPatch) -> None:
    text = b"1 |f a\n2 |f b\n"
    for payload in (text, gzip.compress(text)):
        _stdin(monkeypatch, payload)
        blocks = list(iter_blocks([], block_size=4))
        assert _joined(blocks) == text
        assert {b.source for b in blocks} == {"<stdin>"}
        _stdin(monkeypatch, payload)
        assert _joined(iter_blocks(["-"])) == text


def test_one_byte_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, b"\x1f")  # a lone gzip-looking byte is just data
    assert _joined(iter_blocks(["-"])) == b"\x1f"


def test_empty_inputs(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert list(iter_blocks([str(empty)])) == []
    _stdin(monkeypatch, b"")
    assert list(read_batches(["-"])) == []


def test_missing_file_fails_before_any_block(tmp_path) -> None:
    good = tmp_path / "good.vw"
    good.write_bytes(b"1 |f a\n")
    missing = tmp_path / "nope.vw"
    it = iter_blocks([str(good), str(missing)])
    with pytest.raises(InputError, match="nope.vw"):
        next(it)
    with pytest.raises(InputError, match="is a directory"):
        next(iter_blocks([str(tmp_path)]))


def test_truncated_gzip_names_the_file(tmp_path) -> None:
    bad = tmp_path / "cut.gz"
    rng = np.random.default_rng(0)
    text = b"".join(b"1 |f a:%d\n" % v for v in rng.integers(0, 10**9, 20000))
    packed = gzip.compress(text)
    bad.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(InputError, match="cut.gz"):
        list(iter_blocks([str(bad)], block_size=1 << 16))


def _error_lines(sources, block_size: int, **kw) -> list[str]:
    out = []
    for b in read_batches(sources, block_size=block_size, **kw):
        out += describe_errors(b, limit=1000)
    return [m.split(": ")[0] for m in out]


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
def test_error_locations_across_blocks_long_lines_and_files(tmp_path, block_size: int) -> None:
    long_ok = b"1 |f " + b" ".join(b"x%d:1" for _ in range(300)) + b"\n"
    a = b"1 |f a\nbad |f a\n\n" + long_ok + b"1 |f a:1:2\n"  # errors at lines 2 and 5
    b = b"1 |f a\r\n\r\n" + long_ok + long_ok + b"1 |:3\r\n1 |f a"  # error at line 5
    c = gzip.compress(b"1 |f a\n" * 3 + b"1 -1 |f\n")  # error at line 4
    pa, pb, pc = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "c.vw.gz"
    pa.write_bytes(a)
    pb.write_bytes(b)
    pc.write_bytes(c)
    got = _error_lines([str(pa), str(pb), str(pc)], block_size)
    assert got == [f"{pa}:2", f"{pa}:5", f"{pb}:5", f"{pc}:4"]


def test_error_locations_on_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, gzip.compress(b"1 |f a\n\n2 x |f a\n"))
    assert _error_lines(["-"], 3) == ["<stdin>:3"]


def test_read_batches_detects_vw_after_blank_lines(tmp_path) -> None:
    p = tmp_path / "d"
    p.write_bytes(b"\n\n   \n1 |f 1:2\n")
    (b,) = list(read_batches([str(p)], block_size=2))
    assert b.line.tolist() == [4] and b.status.tolist() == [0]
    assert b.n == 1 and b.nnz == 2  # VW: '1:2' is feature '1' with value 2 (+ constant)


def test_read_batches_rejects_bad_options(tmp_path) -> None:
    with pytest.raises(ValueError, match="format"):
        list(read_batches([], fmt="parquet"))
    with pytest.raises(ValueError, match="bits"):
        list(read_batches([], bits=0))


def test_memory_stays_bounded_by_blocks(tmp_path) -> None:
    # a 4 MB file in 64 KB blocks: no block (and so no buffer) grows past a block + a line
    line = b"1 |f " + b"abc:0.5 " * 20 + b"\n"
    p = tmp_path / "big.vw"
    p.write_bytes(line * (4_000_000 // len(line)))
    sizes = np.array([b.data.shape[0] for b in iter_blocks([str(p)], block_size=1 << 16)])
    assert sizes.max() <= (1 << 16) + len(line)
    assert sizes.sum() == p.stat().st_size


# ---------------------------------------------------------------------------
# scripts/make_data.py: the generator the tests, benchmarks and sample rely on


def _make_data():
    return script("make_data")


@pytest.mark.parametrize("fmt", ["vw", "svmlight"])
@pytest.mark.parametrize("names", ["numeric", "string"])
def test_make_data_is_deterministic_and_parses_cleanly(tmp_path, fmt: str, names: str) -> None:
    md = _make_data()
    kw = dict(task="logistic", names=names, fmt=fmt, vocab=5000, seed=4)
    a = b"".join(md.generate(3000, 12, **kw))
    assert a == b"".join(md.generate(3000, 12, **kw))
    assert a != b"".join(md.generate(3000, 12, **{**kw, "seed": 5}))
    p = tmp_path / "d.gz"
    assert (
        md.main(
            [
                "-o",
                str(p),
                "--examples",
                "3000",
                "--features-per-example",
                "12",
                "--vocab",
                "5000",
                "--seed",
                "4",
                "--names",
                names,
                "--format",
                fmt,
            ]
        )
        == 0
    )
    assert gzip.decompress(p.read_bytes()) == a
    (b,) = list(read_batches([str(p)], fmt="auto", bits=24))
    assert b.n == 3000 and np.all(b.status == 0)
    assert set(np.unique(b.labels).tolist()) == {-1.0, 1.0}
    assert 10 < np.diff(b.indptr).mean() - 1 <= 12  # K distinct features (+ constant)


def test_make_data_labels_follow_the_ground_truth() -> None:
    md = _make_data()
    gt = md.ground_truth(seed=2, vocab=2000, density=0.1)
    assert int((gt.weights != 0).sum()) == 200
    text = b"".join(md.generate(4000, 10, task="linear", vocab=2000, seed=2, noise=0.0))
    b = parse_bytes_vw(text)
    # with noise 0, each label is the ground-truth margin of its line (to print precision)
    from streamlearn.hashing import feature_slot

    slot_w: dict[int, float] = {}
    for i in np.flatnonzero(gt.weights):
        slot_w[feature_slot("f", str(i), 24)] = gt.weights[i]
    vals = np.array([slot_w.get(int(s), 0.0) for s in b.indices]) * b.values
    margins = np.add.reduceat(vals, b.indptr[:-1]) + gt.bias
    assert np.allclose(margins, b.labels, atol=6e-5)


def parse_bytes_vw(text: bytes):
    from streamlearn.io import parse_bytes

    return parse_bytes(text, fmt="vw", bits=24, constant=False)


@pytest.mark.parametrize("workers", [2, 3])
def test_read_batches_on_threads_keeps_input_order(tmp_path, workers: int) -> None:
    lines = [b"%d |f a%d b:%d" % (i % 3 - 1, i, i) if i % 17 else b"bad |f" for i in range(3000)]
    p = tmp_path / "d.vw"
    p.write_bytes(b"\n".join(lines) + b"\n")
    one = list(read_batches([str(p), str(p)], block_size=999))
    many = list(read_batches([str(p), str(p)], block_size=999, workers=workers))
    assert len(one) == len(many) > 20
    for a, b in zip(one, many, strict=True):
        assert a.block.source == b.block.source and a.line.tolist() == b.line.tolist()
        assert np.array_equal(a.indices, b.indices) and np.array_equal(a.status, b.status)


def test_fifo_source_is_read_once(tmp_path) -> None:
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = b"1 |f a\n" * 1000

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(text)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert _joined(iter_blocks([str(fifo)], block_size=100)) == text
    finally:
        t.join(timeout=10)


# ---- the line cap (--max-line-bytes) ------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from streamlearn.io import parse_block  # noqa: E402
from streamlearn.io.batch import LONG_LINE  # noqa: E402
from streamlearn.io.parse import FMT_VW  # noqa: E402


def _check_capped(blocks, lines: list[bytes], cap: int, total: int) -> None:
    """The blocks hold every line up to ``cap`` bytes and an empty line for each longer one."""
    kept, records, at = [], [], 1
    size = 0
    for b in blocks:
        assert b.first_line == at
        size += b.data.shape[0] + b.dropped
        got = b.data.tobytes().split(b"\n")
        if got[-1] == b"":
            got.pop()
        kept += got
        records += b.long_lines
        at += b.data.tobytes().count(b"\n")
    assert size == total  # the source's bytes, for the shards' offsets
    want = [ln if len(ln) <= cap else b"" for ln in lines]
    assert kept == want[: len(kept)] and all(k == b"" for k in want[len(kept) :])
    assert [(r[0], r[1]) for r in records] == [
        (i + 1, len(ln)) for i, ln in enumerate(lines) if len(ln) > cap
    ]
    assert all(ln.startswith(r[2]) for r in records for ln in [lines[r[0] - 1]])


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 300), min_size=1, max_size=30),
    cap=st.integers(1, 200),
    block_size=st.sampled_from([1, 3, 16, 64, 1 << 16]),
    final_newline=st.booleans(),
)
def test_lines_longer_than_the_cap_are_skipped_and_recorded(lengths, cap, block_size,
                                                            final_newline):  # fmt: skip
    import tempfile

    lines = [bytes([97 + i % 26]) * n for i, n in enumerate(lengths)]
    text = b"\n".join(lines) + (b"\n" if final_newline else b"")
    with tempfile.NamedTemporaryFile(suffix=".vw") as f:
        f.write(text)
        f.flush()
        blocks = list(iter_blocks([f.name], block_size=block_size, max_line=cap))
    _check_capped(blocks, lines, cap, len(text))


def test_a_long_line_is_a_malformed_row_at_its_line(tmp_path) -> None:
    lines = [b"1 |f a", b"1 |f " + b"b" * 500, b"-1 |f c", b"1 |f " + b"d" * 900]
    path = tmp_path / "d.vw"
    path.write_bytes(b"\n".join(lines))  # the last long line has no newline
    for block_size in (8, 100, 1 << 20):
        rows = []
        for block in iter_blocks([str(path)], block_size, max_line=100):
            batch = parse_block(block, FMT_VW, 18)
            rows += list(zip(batch.line.tolist(), batch.status.tolist(), strict=True))
            bad = batch.line[batch.status == LONG_LINE].tolist()
            said = [e.split(": ")[0:2] for e in describe_errors(batch)]
            assert said == [[f"{path}:{n}", "line longer than --max-line-bytes"] for n in bad]
        assert rows == [(1, 0), (2, LONG_LINE), (3, 0), (4, LONG_LINE)]
    errors = []
    for b in read_batches([str(path)], max_line=100):
        errors += describe_errors(b)
    assert errors == [f"{path}:2: line longer than --max-line-bytes: 1 |f " + "b" * 52
                      + "... (505 bytes)", f"{path}:4: line longer than --max-line-bytes: "
                      "1 |f " + "d" * 52 + "... (905 bytes)"]  # fmt: skip


def test_a_long_first_line_does_not_decide_the_format(tmp_path) -> None:
    path = tmp_path / "d.svm"
    path.write_bytes(b"1 |x " + b"y" * 300 + b"\n1 3:0.5 7:1\n-1 2:1\n")
    batches = list(read_batches([str(path)], max_line=64, block_size=16))
    assert [b.fmt for b in batches][-1] == 1  # svmlight, from line 2
    status = np.concatenate([b.status for b in batches]).tolist()
    assert status == [LONG_LINE, 0, 0]


def test_the_line_cap_is_positive(tmp_path) -> None:
    (tmp_path / "a").write_bytes(b"x\n")
    with pytest.raises(ValueError, match="max_line"):
        list(iter_blocks([str(tmp_path / "a")], max_line=0))


def test_live_pipe_hands_a_line_on_without_waiting(monkeypatch) -> None:
    """A live source's complete line goes on as soon as nothing more is waiting: the reader
    polls without a timeout (it used to hold a line 50 ms for more), and a producer whose
    next bytes are already there still fills one block."""
    import os
    import threading

    from streamlearn.io.reader import iter_lines_blocks
    from streamlearn.system.sources import Source

    polls: list[float] = []
    real = Source.more_within

    def more_within(self, seconds: float) -> bool:
        polls.append(seconds)
        return real(self, seconds)

    monkeypatch.setattr(Source, "more_within", more_within)
    r, w = os.pipe()
    try:
        os.write(w, b"1 |f a\n-1 |f b\n2 |f")  # two lines and a partial one, all waiting
        reader_path = f"/dev/fd/{r}"
        from streamlearn.system.sources import open_source

        source = open_source(reader_path)
        assert source.live
        blocks = iter_lines_blocks(source, 1 << 16)
        first = next(blocks)  # nothing more waiting: handed on, though the pipe stays open
        assert first.data.tobytes() == b"1 |f a\n-1 |f b\n" and first.live
        done = threading.Event()
        got: list = []

        def rest() -> None:
            got.extend(blocks)
            done.set()

        t = threading.Thread(target=rest, daemon=True)
        t.start()
        os.write(w, b" c\n")
        os.close(w)
        w = -1
        assert done.wait(30)
        assert b"".join(b.data.tobytes() for b in got) == b"2 |f c\n"
        assert polls and all(p == 0.0 for p in polls), polls
        source.close()
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
