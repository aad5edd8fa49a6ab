"""VW's flatbuffer input (``sl vw --flatbuffer``, streamlearn/io/flatbuffer.py).

The files are built here by a small writer of VW's schema (``example.fbs``): the same
examples as VW text must train to the same predictions and loss, whether the features
come hashed (as VW's converter stores them) or named, single-line or multiline, from a
file or from stdin; a damaged or truncated file is one line and exit 3.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from streamlearn.hashing import feature_slot, hashstring_py
from streamlearn.io.flatbuffer import FlatbufferError, FlatText, number, root_lines
from streamlearn.io.vwfloat import float32_of_decimal, vw_parse_float
from tests.unix import invoke

# ---------------------------------------------------------------------------
# a writer of VW's flatbuffer schema, enough for these tests


class Fb:
    """A flatbuffer built back to front, as Google's builder does: an object is added
    before the objects it refers to, so every offset points forward.  Handles are
    distances from the end of the buffer."""

    def __init__(self) -> None:
        self.tail = bytearray()

    def _add(self, body: bytes) -> int:
        body = body + b"\0" * (-len(body) % 4)
        self.tail[0:0] = body
        return len(self.tail)

    def string(self, s: bytes) -> int:
        return self._add(struct.pack("<I", len(s)) + s + b"\0")

    def scalars(self, fmt: str, items) -> int:  # noqa: ANN001
        return self._add(struct.pack(f"<I{len(items)}{fmt}", len(items), *items))

    def refs(self, handles: list[int]) -> int:
        h = len(self.tail) + 4 + 4 * len(handles)  # (no padding: 4-byte items)
        offs = [h - 4 - 4 * k - t for k, t in enumerate(handles)]
        return self._add(struct.pack(f"<I{len(handles)}I", len(handles), *offs))

    def table(self, fields: list) -> int:  # noqa: ANN001
        """``fields``: per slot None (absent), (fmt, value) or ('ref', handle)."""
        body, slots = bytearray(4), []  # (the soffset to the vtable first)
        refs = []
        for f in fields:
            if f is None:
                slots.append(0)
                continue
            slots.append(len(body))
            if f[0] == "ref":
                refs.append((len(body), f[1]))
                body += b"\0\0\0\0"
            else:
                body += struct.pack("<" + f[0], f[1])
        body += b"\0" * (-len(body) % 4)
        vt = struct.pack(f"<HH{len(slots)}H", 4 + 2 * len(slots), len(body), *slots)
        vt += b"\0" * (-len(vt) % 4)
        h = len(self.tail) + len(body)  # the table's handle (its vtable just before it)
        for at, target in refs:
            struct.pack_into("<I", body, at, h - at - target)
        struct.pack_into("<i", body, 0, len(vt))
        self._add(vt + bytes(body))
        return h

    def finish(self, root: int) -> bytes:
        data = struct.pack("<I", len(self.tail) + 4 - root) + bytes(self.tail)
        return struct.pack("<I", len(data)) + data


def namespace(fb: Fb, index: int, values, hashes=None, names=None, name=None,  # noqa: ANN001
              full_hash=None) -> int:  # noqa: ANN001  # fmt: skip
    nm = fb.string(name) if name is not None else None
    fn = fb.refs([fb.string(n) for n in names]) if names is not None else None
    fv = fb.scalars("f", values)
    fh = fb.scalars("Q", hashes) if hashes is not None else None
    return fb.table([("ref", nm) if nm else None, ("B", index),
                     ("Q", full_hash) if full_hash is not None else None,
                     ("ref", fn) if fn else None, ("ref", fv), ("ref", fh) if fh else None])


def example(fb: Fb, namespaces: list[int], label=None, tag=None, newline=False) -> int:  # noqa: ANN001
    """``label``: (union type, table handle) or None."""
    t = fb.string(tag) if tag is not None else None
    ns = fb.refs(namespaces)
    return fb.table([("ref", ns), ("B", label[0]) if label else None,
                     ("ref", label[1]) if label else None, ("ref", t) if t else None,
                     ("B", 1) if newline else None])


def root(fb: Fb, kind: int, obj: int) -> bytes:
    return fb.finish(fb.table([("B", kind), ("ref", obj)]))


def simple(fb: Fb, y: float, w: float = 1.0) -> tuple[int, int]:
    return 1, fb.table([("f", y), ("f", w), None])


def cs(fb: Fb, costs: list[tuple[int, float]]) -> tuple[int, int]:
    items = [fb.table([("f", x), None, None, ("I", k)]) for k, x in costs]
    return 7, fb.table([("ref", fb.refs(items))])


# ---------------------------------------------------------------------------

VALUES = [1.0, 0.5, float(np.float32(0.1)), 3.0, float(np.float32(-2.25e-3))]
TEXT = ["1 |alpha x y:0.5 z:0.1 |b u:3 v:-0.00225", "-1 0.5 |alpha y |b w", "1 |b u v:0.1",
        "-1 'tg |alpha z:3 x"]  # fmt: skip


def _slot(ns: str, f: str) -> int:
    return feature_slot(ns, f, 18)


def _single_file() -> bytes:
    """TEXT as VW's converter would store it (hashed features, a full hash per namespace),
    but namespace 'alpha' by name, its features by name (the parser hashes them)."""
    f32 = [float(np.float32(x)) for x in (0.5, 0.1, -0.00225)]
    rows = [
        (1.0, 1.0, None, [(b"x", 1.0), (b"y", f32[0]), (b"z", f32[1])],
         [("u", 3.0), ("v", f32[2])]),
        (-1.0, 0.5, None, [(b"y", 1.0)], [("w", 1.0)]),
        (1.0, 1.0, None, [], [("u", 1.0), ("v", f32[1])]),
        (-1.0, 1.0, b"tg", [(b"z", 3.0), (b"x", 1.0)], []),
    ]  # fmt: skip
    out = b""
    for y, w, tag, alpha, b in rows:
        fb = Fb()
        nss = []
        if alpha:
            nss.append(namespace(fb, 0, [v for _, v in alpha], names=[n for n, _ in alpha],
                                 name=b"alpha"))  # fmt: skip
        if b:
            nss.append(namespace(fb, ord("b"), [v for _, v in b],
                                 hashes=[_slot("b", n) for n, _ in b],
                                 full_hash=hashstring_py("b")))  # fmt: skip
        out += root(fb, 1, example(fb, nss, simple(fb, y, w), tag))
    return out


def _run(tmp_path, args, data=None, name="d", stdin=None):  # noqa: ANN001, ANN202
    preds = tmp_path / f"{name}.p"
    argv = ["vw", *args, "-p", str(preds)]
    if data is not None:
        path = tmp_path / name
        path.write_bytes(data)
        argv += ["-d", str(path)]
    r = invoke(argv, input=stdin)
    assert r.exit_code == 0, r.output
    loss = [line for line in r.output.splitlines() if line.startswith("average loss")]
    return preds.read_text(), loss


def test_numbers_read_back_exactly_by_both_readers():
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.standard_normal(300).astype(np.float32),
                         (rng.random(100) * 1e-30).astype(np.float32),
                         np.float32([0.1, 0.125, 1e30, -7, 2**24, 3.4e38])])  # fmt: skip
    for x in xs.tolist():
        s = number(x)
        assert vw_parse_float(s) == x and float32_of_decimal(s) == x, (x, s)


def test_hashed_and_named_features_train_as_their_text(tmp_path):
    fb, fb_loss = _run(tmp_path, ["--flatbuffer", "-l", "0.7"], _single_file(), "d.fb")
    text, text_loss = _run(tmp_path, ["-l", "0.7"], ("\n".join(TEXT) + "\n").encode(), "d.vw")
    assert fb == text and fb_loss == text_loss
    assert fb.splitlines()[3].endswith(" tg")


def test_stdin_and_a_collection_read_as_the_file(tmp_path):
    data = _single_file()
    fb, loss = _run(tmp_path, ["--flatbuffer"], data, "d.fb")
    piped, piped_loss = _run(tmp_path, ["--flatbuffer"], stdin=data, name="in")
    assert piped == fb and piped_loss == loss
    # the four examples in one ExampleCollection, with a newline example among them
    roots = []
    off = 0
    while off < len(data):
        n = int.from_bytes(data[off : off + 4], "little")
        roots.append(root_lines(data[off + 4 : off + 4 + n]))
        off += 4 + n
    assert [r[0].split(" |")[0] for r in roots] == ["1", "-1 0.5e+0", "1", "-1 'tg"]
    f = Fb()
    exs = [example(f, [namespace(f, ord("b"), [1.0], hashes=[_slot("b", "u")])],
                   simple(f, 1.0)) for _ in range(3)]  # fmt: skip
    exs.insert(1, example(f, [], newline=True))
    coll = f.table([("ref", f.refs(exs)), None, ("B", 0)])
    one = root(f, 2, coll)
    u = (_slot("b", "u") - hashstring_py("b")) % 2**32  # (the digit name of u's slot)
    assert root_lines(one[4:]) == [f"1 |b {u}", "", f"1 |b {u}", f"1 |b {u}"]
    got, _ = _run(tmp_path, ["--flatbuffer"], one, "c.fb")
    want, _ = _run(tmp_path, [], b"1 |b u\n\n1 |b u\n1 |b u\n", "c.vw")
    assert got == want


def test_multiline_examples_train_as_their_text(tmp_path):
    rows = [[(1, 0.5, ["a", "b"]), (2, 1.0, ["c"])], [(1, 1.0, ["a"]), (2, 0.0, ["b", "c"])],
            [(1, 0.25, ["c"]), (2, 2.0, ["a"])]]  # fmt: skip
    data, text = b"", []
    for ex in rows:
        fb = Fb()
        lines = []
        for k, cost, feats in ex:
            hs = [_slot("f", n) for n in feats]
            lines.append(example(fb, [namespace(fb, ord("f"), [1.0] * len(hs), hashes=hs)],
                                 cs(fb, [(k, cost)])))  # fmt: skip
            text.append(f"{k}:{cost} |f {' '.join(feats)}")
        data += root(fb, 3, fb.table([("ref", fb.refs(lines))]))
        text.append("")
    args = ["--csoaa_ldf", "multiline", "-l", "0.3"]
    fb, fb_loss = _run(tmp_path, [*args, "--flatbuffer"], data, "m.fb")
    vw, vw_loss = _run(tmp_path, args, ("\n".join(text) + "\n").encode(), "m.vw")
    assert fb == vw and fb_loss == vw_loss


@pytest.mark.parametrize("cut", ["prefix", "object", "offset", "huge"])
def test_a_damaged_file_is_one_line_and_exit_3(tmp_path, cut):
    data = _single_file()
    n = int.from_bytes(data[:4], "little")
    if cut == "prefix":
        bad = data + b"\x05\x00"
    elif cut == "object":
        bad = data[: 4 + n + 10]
    elif cut == "offset":  # the root's offset beyond the object
        bad = data[:4] + struct.pack("<I", 1 << 30) + data[8:]
    else:
        bad = struct.pack("<I", 0xFFFFFFF0) + data[4:]
    path = tmp_path / "bad.fb"
    path.write_bytes(bad)
    for extra in ([], ["--csoaa_ldf", "multiline"]):
        r = invoke(["vw", "--flatbuffer", "-d", str(path), "--quiet", *extra])
        assert r.exit_code == 3, r.output
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in r.output


def test_damaged_bytes_never_crash_the_reader():
    data = _single_file()
    n = int.from_bytes(data[:4], "little")
    first = data[4 : 4 + n]
    rng = np.random.default_rng(1)
    for _ in range(500):
        b = bytearray(first)
        for i in rng.integers(0, len(b), 3):
            b[i] = int(rng.integers(0, 256))
        try:
            root_lines(bytes(b[: int(rng.integers(1, len(b) + 1))]), FlatText(), 1 << 16)
        except FlatbufferError as e:
            assert "\n" not in str(e)


def test_hash_all_is_refused(tmp_path):
    path = tmp_path / "d.fb"
    path.write_bytes(_single_file())
    r = invoke(["vw", "--flatbuffer", "--hash", "all", "-d", str(path), "--quiet"])
    assert r.exit_code == 2 and "--hash all" in r.output
