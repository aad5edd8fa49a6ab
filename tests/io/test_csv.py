"""VW's CSV input (``sl vw --csv``, :mod:`streamlearn.io.csv`): the kernel against VW 9.11.9
(predictions, ``--audit`` and ``--invert_hash`` byte for byte), against sl's VW text parser
on the equivalent lines, against its plain-Python statement (hypothesis), and malformed
lines skipped with their reasons."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.config import TrainConfig
from streamlearn.io import parse_bytes
from streamlearn.io.batch import CSV_CELLS, CSV_EMPTY, CSV_QUOTES, REASONS, Block
from streamlearn.io.csv import CsvError, CsvOptions, csv_names, split_cells
from streamlearn.io.formats import FMT_CSV
from streamlearn.io.parse import parse_block

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def csv_batch(text: bytes, bits: int = 18, source: str = "t.csv", **opts):
    cfg = TrainConfig(format="csv", numbers="vw", bits=bits, **opts)
    block = Block(np.frombuffer(text, dtype=np.uint8).copy(), source, 1)
    return parse_block(block, FMT_CSV, bits, True, cfg.namespaces())


def rows(batch) -> list[list[tuple[int, float]]]:
    return [list(zip(batch.indices[batch.indptr[i] : batch.indptr[i + 1]].tolist(),
                     batch.values[batch.indptr[i] : batch.indptr[i + 1]].tolist(), strict=True))
            for i in range(batch.n)]  # fmt: skip


def test_same_batch_as_vw_text():
    """Features hash as the same lines in VW text (namespaces last-named first)."""
    csv = (b"_label,a|x,b|y,c|z,d,_tag\n"
           b"1,0.5,2,hello,3,t1\n"
           b"-1 2 0.5,0.25,7,,0,'t2\n")  # fmt: skip
    text = (b"1 t1| d:3 |c z:hello |b y:2 |a x:0.5\n"
            b"-1 2 0.5 't2| |c |b y:7 |a x:0.25\n")  # fmt: skip
    b = csv_batch(csv)
    v = parse_bytes(text, numbers="vw")
    assert rows(b) == rows(v)
    assert b.labels.tolist() == v.labels.tolist()
    assert b.weights.tolist() == v.weights.tolist() and b.bases.tolist() == v.bases.tolist()
    tags = [bytes(b.block.data[s:e]) for s, e in zip(b.tag_start, b.tag_end, strict=True)]
    assert tags == [b"t1", b"t2"]
    assert b.line.tolist() == [2, 3]


def test_quotes_and_split():
    assert split_cells(b'1,"a,b","x""y",', ord(","), True) == [b"1", b'"a,b"', b'"x"y"', b""]
    assert split_cells(b"\xef\xbb\xbfa;b\r", ord(";"), True) == [b"a", b"b"]
    with pytest.raises(CsvError):
        split_cells(b'"abc', ord(","), True)
    with pytest.raises(CsvError):
        split_cells(b'"a"b",c', ord(","), True)


def test_malformed_lines_skipped_with_reasons():
    csv = b'_label,f\n1,2\n1,2,3\n\n1,"x\n1,"a"b",\nzz,1\n1 -2,3\n1,4\n'
    b = csv_batch(csv)
    assert b.status.tolist() == [0, CSV_CELLS, CSV_EMPTY, CSV_QUOTES, CSV_QUOTES, 1, 3, 0]
    assert b.line.tolist() == [2, 3, 4, 5, 6, 7, 8, 9]
    assert all(code in REASONS for code in b.status.tolist() if code)


def test_options_checked():
    with pytest.raises(CsvError):
        CsvOptions(separator="|")
    with pytest.raises(CsvError):
        CsvOptions(separator=";;")
    with pytest.raises(CsvError):
        CsvOptions(no_file_header=True)
    with pytest.raises(CsvError):
        CsvOptions(ns_value="a:x")
    assert CsvOptions(separator="\\t").separator == "\t"


def test_header_option_and_scales():
    b = csv_batch(b"1,2,3\n", csv_header="_label,a|f,|g", csv_no_file_header=True,
                  csv_ns_value="a:0.5,:4")  # fmt: skip
    assert b.labels.tolist() == [1.0]
    assert sorted(v for _, v in rows(b)[0]) == [1.0, 1.0, 12.0]


CELLS = st.one_of(
    st.sampled_from(["", "0", "1", "-2.5", "0.125", "1e3", "1e+3", "+5", "-", ".", "e5",
                     "abc", "a b", ' 7', "7 ", "nan", "inf", '"q,x"', '"a""b"', '""', "'t"]),
    st.text(alphabet="ab01.-e\" ,;", max_size=6),
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CELLS, min_size=1, max_size=5), min_size=1, max_size=8))
def test_kernel_against_plain_python(table):
    """Random cells: the kernel never fails, and each usable row holds what the plain
    statement (:func:`csv_names`) names, slot for slot and value for value."""
    header = "_label,x|a,b,|c,y|,_tag"
    ncols = 6
    lines = []
    for cells in table:
        cells = (["1"] + cells + [""] * ncols)[:ncols]
        lines.append(",".join(cells))
    data = (header + "\n" + "\n".join(lines) + "\n").encode()
    b = csv_batch(data, bits=20, source="fuzz.csv")
    assert b.n == len(lines)
    for i, line in enumerate(data.split(b"\n")[1:-1]):
        if b.status[i] != 0:
            continue
        values: list[float] = []
        feats = csv_names(line, "fuzz.csv", 20, ord(","), False, values)
        got = rows(b)[i][:-1]  # the constant last
        assert [s for s, _, _ in feats] == [s for s, _ in got]
        assert values == [v for _, v in got]


def _gen_csv(path: str, n: int = 600, seed: int = 3) -> None:
    rnd = random.Random(seed)
    words = ["hello", "w o", '"q""z"', '"quoted, with comma"', "x", "0", "-", "1e+3", "+5",
             ".5", "7"]  # fmt: skip
    out = ["_label,a|x,b|y,c|z,d,_tag,|e,,w"]
    for i in range(n):
        cells = [rnd.choice(["1", "-1", "1 2", "-1 0.5 0.1"])]
        for _ in range(3):
            cells.append(rnd.choice([f"{rnd.random():.4f}", "", rnd.choice(words),
                                     str(rnd.randint(0, 9))]))  # fmt: skip
        cells += [f"{rnd.uniform(-3, 3):.3f}", f"'t{i}", rnd.choice(["", "0.25", "abc"]),
                  f"{rnd.random():.2f}", rnd.choice(words)]  # fmt: skip
        out.append(",".join(cells))
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


def _run(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


@needs_vw
@pytest.mark.parametrize(
    "opts",
    [
        [],
        ["-q", "xy", "--loss_function", "logistic"],
        ["--csv_ns_value", "x:0.5,:2", "--passes", "2", "-c", "-k"],
    ],
)
def test_against_vw(tmp_path, opts):
    _gen_csv(str(tmp_path / "d.csv"))
    common = ["--csv", "-d", "d.csv", *opts]
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        extra = [] if "--passes" in opts else ["--audit", "--invert_hash", f"{tag}.ih"]
        r = _run([prog, *([] if prog == "vowpalwabbit" else ["vw"]), *common, "-p",
                  f"{tag}.p", *extra], str(tmp_path))  # fmt: skip
        assert r.returncode == 0, r.stderr
        out = [ln for ln in r.stdout.splitlines(True) if not ln.startswith("[info]")]
        (tmp_path / f"{tag}.out").write_text("".join(out))  # VW's own notes aside
        loss = [ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
        (tmp_path / f"{tag}.loss").write_text("\n".join(loss))
    for ext in ("p", "out", "loss") + (() if "--passes" in opts else ("ih",)):
        assert (tmp_path / f"s.{ext}").read_bytes() == (tmp_path / f"v.{ext}").read_bytes(), ext


def test_strict_refuses_a_malformed_csv_line(tmp_path):
    (tmp_path / "d.csv").write_text("_label,f\n1,2\n1,2,3\n")
    r = _run(["streamlearn", "vw", "--csv", "-d", "d.csv", "--strict_parse"], str(tmp_path))
    assert r.returncode == 4 and "d.csv:3" in r.stderr
    r = _run(["streamlearn", "vw", "--csv", "-d", "d.csv"], str(tmp_path))
    assert r.returncode == 0 and "d.csv:3: CSV line with another number of cells" in r.stderr
    r = _run(["streamlearn", "vw", "--csv", "--csv_separator", "|", "-d", "d.csv"], str(tmp_path))
    assert r.returncode == 2 and "reserved" in r.stderr


def test_namespace_order_of_libstdcxx():
    """VW walks its namespaces as libstdc++'s unordered_map does (seen with VW's --audit)."""
    from streamlearn.io.csv import unordered_map_order

    keys = [f"n{i}".encode() for i in range(12)]
    got = [k.decode() for k in unordered_map_order(keys)]
    assert got == ["n10", "n9", "n7", "n11", "n6", "n5", "n8", "n4", "n3", "n2", "n1", "n0"]


@needs_vw
@pytest.mark.parametrize("n", [12, 45, 130])
def test_many_namespaces_against_vw(tmp_path, n):
    rnd = random.Random(n)
    names = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rnd.randint(1, 12)))
        for _ in range(n)
    ]
    names = list(dict.fromkeys(names))
    rows = ["_label," + ",".join(f"{nm}|f{i}" for i, nm in enumerate(names))]
    for j in range(30):
        rows.append(",".join(["1" if j % 2 else "-1"] + [f"{rnd.random():.3f}" for _ in names]))
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    outs = []
    for prog in ("vowpalwabbit", "streamlearn"):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "--csv", "-d", "d.csv", "--audit", "-p", f"{prog}.p"], str(tmp_path))
        assert r.returncode == 0, r.stderr
        audit = [ln for ln in r.stdout.splitlines() if not ln.startswith("[info]")]
        outs.append((audit, (tmp_path / f"{prog}.p").read_bytes()))
    assert outs[0] == outs[1]
