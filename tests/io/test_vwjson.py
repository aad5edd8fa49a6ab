"""VW's JSON and DSJSON lines as VW text (streamlearn.io.vwjson): same features, same hashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.io.jsondecode import JsonLineError
from streamlearn.io.jsonreader import value_text
from streamlearn.io.vwjson import JsonOptions, read_record, translate

DS = JsonOptions(dsjson=True)
JS = JsonOptions()


def test_dsjson_record_as_multiline_text() -> None:
    line = (
        b'{"_label_cost":-1.0,"_label_probability":0.5,"_label_Action":2,"_labelIndex":1,'
        b'"a":[2,1],"c":{"shared":{"f":"1"},"_multi":[{"action":{"f":"1"}},{"action":{"f":"2"}}]},'
        b'"p":[0.5,0.5]}'
    )
    rec = read_record(line, DS)
    assert rec.lines == [b"shared |shared f1", b"|action f1", b"2:-1:0.5 |action f2", b""]
    assert rec.weight == 1.0
    # pdrop: weight 1/(1 - pdrop) in float32; pdrop 1 is refused
    rec = read_record(line[:-1] + b',"pdrop":0.9}', DS)
    assert rec.weight == float(np.float32(1) / (np.float32(1) - np.float32(0.9)))
    with pytest.raises(JsonLineError, match="pdrop==1"):
        read_record(line[:-1] + b',"pdrop":1}', DS)
    # passed over in silence, as VW: _skipLearn, no actions, not an object
    assert read_record(line[:-1] + b',"_skipLearn":true}', DS) is None
    assert read_record(b'{"RewardValue":1.0}', DS) is None
    assert read_record(b"not json", DS) is None


def test_json_features() -> None:
    rec = read_record(
        b'{"_label":1,"_tag":"t","n":{"a":2,"b":0,"c":true,"d":false,"e":null,"s":"x y:z"},'
        b'"arr":[1,0,null,3],"_text":"w1 w:2","_ignored":{"q":1}}',
        JsonOptions(kind="simple"),
    )
    # the root (default namespace) closes last; arrays count zeros but not nulls
    assert rec.lines == [b"1 't |n a:2 c sx_y_z |arr 0 2:3 | w1 w_2"]


def test_json_names_that_text_cannot_hold_hash_exactly() -> None:
    from streamlearn.hashing import hashstring_py

    rec = read_record(b'{"_label":0,"my ns":{"a b":1.5,"k":"v"}}', JsonOptions(kind="simple"))
    ns = hashstring_py("my ns")
    text_ns = hashstring_py("m")
    want1 = (hashstring_py("a b", ns) - text_ns) & 0xFFFFFFFF
    want2 = (hashstring_py("kv", ns) - text_ns) & 0xFFFFFFFF
    assert rec.lines == [f"0 |m {want1}:1.5 {want2}".encode()]


def test_bad_lines_give_reasons() -> None:
    for line, reason in [
        (b"{bad", "not JSON"),
        (b'{"_labelIndex":3,"_multi":[{"a":1}]}', "_labelIndex 3 is not an action"),
        (b'{"_label_Bogus":1}', "unsupported label property"),
        (b'{"x":["s"]}', "str in the array"),
        (b'{"x":[[1]]}', "nested arrays"),
        (b"[1,2]", "must be an object"),
        (b'{"_label_cost":1,"_label_probability":0.5,"_multi":[{"a":1}]}', "shared example"),
    ]:
        with pytest.raises(JsonLineError, match=reason):
            read_record(line, JS)
    t = translate(b'{"_multi":[{"a":1}]}\n{bad\n\n{"_multi":[{"a":2}]}\n', 10, JS)
    assert [(n, r[:8]) for n, r, _ in t.errors] == [(11, "not JSON")]
    assert t.lines.tolist() == [10, 10, 10, 13, 13, 13]
    assert t.data == b"shared |\n| a\n\nshared |\n| a:2\n\n"


def test_values_round_trip_through_vw_reader() -> None:
    from streamlearn.io.vwfloat import vw_parse_float

    rng = np.random.default_rng(3)
    for v in np.concatenate([rng.standard_normal(300), rng.random(300) * 1e-5, [0.125, 1e-7, 3.0]]):
        f = float(np.float32(v))
        assert vw_parse_float(value_text(f)) == f
        assert float(np.float32(float(value_text(f, "exact")))) == f


# ------------------------------------------------------------------ VW's own reader as the judge


def _vw_audit(args: list[str], path: Path) -> list[list[str]]:
    cmd = [sys.executable, "-m", "vowpalwabbit", *args, "--audit", "-t", "--quiet", "-d", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    rows = []
    for line in r.stdout.splitlines():
        if line.startswith("\t"):
            # name:index:value:weight -> index:value (names differ where we write decimals)
            rows.append([":".join(t.rsplit(":", 3)[1:3]) for t in line.strip().split("\t")])
    return rows


def _random_lines(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    keys = ["a", "b b", "c:1", "d|x", "12", "émoji", " lead", "k", "x_"]
    nss = ["user", "u", "geo loc", "G", "13", "ÿns", "shared"]

    def value():
        r = rng.random()
        if r < 0.3:
            return str(rng.choice(["v", "v w", "1", "a:b", "x|y", "7.5", ""]))
        if r < 0.6:
            return float(np.round(rng.standard_normal(), int(rng.integers(1, 9))))
        if r < 0.7:
            return bool(rng.random() < 0.7)
        if r < 0.8:
            return [float(x) if x else 0 for x in rng.integers(0, 3, size=3)]
        return int(rng.integers(-3, 100))

    def obj(depth):
        out = {}
        for _ in range(int(rng.integers(1, 4))):
            if depth < 2 and rng.random() < 0.3:
                out[str(rng.choice(nss))] = obj(depth + 1)
            else:
                out[str(rng.choice(keys))] = value()
        if rng.random() < 0.2:
            out["_text"] = "t1 t:2 t|3"
        return out

    lines = []
    for _ in range(n):
        k = int(rng.integers(2, 5))
        chosen = int(rng.integers(0, k))
        rec = {
            "_label_cost": float(rng.choice([0.0, 1.0, -1.0])),
            "_label_probability": float(rng.choice([0.25, 0.5, 1.0])),
            "_label_Action": chosen + 1,
            "_labelIndex": chosen,
            "a": list(range(1, k + 1)),
            "c": {**{str(rng.choice(nss)): obj(1)}, "_multi": [{"act": obj(1)} for _ in range(k)]},
            "p": [1.0 / k] * k,
        }
        lines.append(json.dumps(rec, ensure_ascii=bool(rng.random() < 0.5)))
    return lines


@pytest.mark.parametrize("chain", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_generated_dsjson_hashes_as_vw(tmp_path: Path, seed: int, chain: bool) -> None:
    pytest.importorskip("vowpalwabbit")
    src = tmp_path / "d.json"
    src.write_text("\n".join(_random_lines(seed, 30)) + "\n", encoding="utf-8")
    t = translate(src.read_bytes(), 1, JsonOptions(dsjson=True, chain_hash=chain))
    assert not t.errors
    txt = tmp_path / "d.vw"
    txt.write_bytes(t.data)
    extra = ["--chain_hash"] if chain else []
    want = _vw_audit(["--cb_explore_adf", "--dsjson", *extra], src)
    got = _vw_audit(["--cb_explore_adf"], txt)
    assert len(want) > 60 and got == want


VW_FILES = [
    ("cb_simple.json", False),
    ("cb_test.json", False),
    ("decisionservice.json", True),
    ("cb_features_w_zero_vals.dsjson", True),
    ("dsjson_cb.json", True),
    ("dsjson_cb_default_ns.json", True),
    ("no_shared_features.json", True),
    ("dsjson_cb_part1.json", True),
]


@pytest.mark.parametrize(("name", "ds"), VW_FILES)
def test_vw_test_files_hash_as_vw(tmp_path: Path, name: str, ds: bool) -> None:
    pytest.importorskip("vowpalwabbit")
    root = Path(os.environ.get("VW_TEST_DIR", "/work/vwt/test"))
    src = root / "train-sets" / name
    if not src.exists():
        pytest.skip("VW's test tree not found (VW_TEST_DIR)")
    for chain in (False, True):
        t = translate(src.read_bytes(), 1, JsonOptions(dsjson=ds, chain_hash=chain))
        txt = tmp_path / "t.vw"
        txt.write_bytes(t.data)
        flags = ["--dsjson" if ds else "--json"] + (["--chain_hash"] if chain else [])
        want = _vw_audit(["--cb_explore_adf", *flags], src)
        assert want and _vw_audit(["--cb_explore_adf"], txt) == want


# ------------------------------------------------------------------ through the parser and sl vw


def test_parse_bytes_json_rows_keep_their_lines() -> None:
    from streamlearn.io.parse import describe_errors, parse_bytes

    data = b'{"_label":1,"a":{"x":1}}\n{bad\n\n{"_label":0,"a":{"y":2}}\n'
    b = parse_bytes(data, fmt="json", source="t.json")
    assert b.line.tolist() == [1, 2, 4] and b.status.tolist() == [0, 35, 0]
    assert b.labels.tolist()[::2] == [1.0, 0.0] and b.values.tolist()[2] == 2.0
    (msg,) = describe_errors(b)
    assert msg.startswith("t.json:2: a JSON line VW cannot read: json-error: not JSON")


def _simple_lines(seed: int, n: int) -> str:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rec = {"_label": int(rng.integers(0, 2))}
        if rng.random() < 0.3:
            rec["_label"] = {
                "Label": float(rng.integers(0, 2)),
                "Weight": float(rng.choice([0.5, 2.0])),
            }
        rec["f s"] = {f"k{j}": float(np.round(rng.standard_normal(), 5)) for j in range(3)}
        rec["g"] = {"c": str(rng.choice(["a b", "x:y", "1", "z"])), "arr": [1, 0, 2.5]}
        rec["_text"] = "w1 w2"
        out.append(json.dumps(rec))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("chain", [False, True])
def test_sl_vw_json_gives_vw_loss(tmp_path: Path, chain: bool) -> None:
    pytest.importorskip("vowpalwabbit")
    import re

    src = tmp_path / "s.json"
    src.write_text(_simple_lines(5, 200))
    args = ["--json", "-d", str(src), "-q", "fg", "--passes", "2", "-c", "--holdout_off"]
    args += ["--chain_hash"] if chain else []
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    runs = {}
    for name, cmd in (("vw", ["-m", "vowpalwabbit"]), ("sl", ["-m", "streamlearn", "vw"])):
        r = subprocess.run([sys.executable, *cmd, *args], capture_output=True, text=True,
                           cwd=tmp_path, env=env, check=False)  # fmt: skip
        m = re.search(r"average loss = (\S+)", r.stderr)
        assert m, r.stderr[-800:]
        runs[name] = m.group(1)
        for cache in tmp_path.glob("s.json.cache*"):
            cache.unlink()
    assert runs["sl"] == runs["vw"]
