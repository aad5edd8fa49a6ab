"""VW's ``--affix`` (:mod:`streamlearn.io.affix`): each named feature's prefixes and suffixes.

The kernel's rows against a plain statement of VW's rule (``parse_example_text.cc``) in
Python, on random lines (names of every kind, scales, zero values, string values,
anonymous features); then ``sl vw`` beside VW 9.11.9 on data of our own: progressive loss,
``-p``, ``--audit``, ``--invert_hash``, and models both ways.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.config import ConfigError, TrainConfig
from streamlearn.hashing import CONSTANT_HASH, hashstring_py
from streamlearn.io.affix import AFFIX_CONSTANT, AFFIX_NS, QUADRATIC_CONSTANT, affix_table
from streamlearn.io.batch import Block
from streamlearn.io.parse import FMT_VW, parse_block
from tests.unix import SL_VW, VW_MODULE, run_module

BITS = 18


def reference(line: str, spec: str, bits: int = BITS) -> list[tuple[int, float, int]]:
    """(slot, value, namespace byte) of a VW line's features and affixes, in VW's order:
    VW's parser as a plain loop over the bytes (hashstring names; values times the
    namespace's scale in float32; a feature of value 0 kept out; the affix namespace before
    the namespace that made the first affix; the constant last).  The line's namespaces
    are distinct (VW gathers a repeated one's features; sl keeps the line's order, with or
    without affixes)."""
    codes = {}
    for token in spec.split(","):
        sign, rest = (token[0], token[1:]) if token[0] in "+-" else ("+", token)
        ns = ord(rest[1]) if len(rest) > 1 else 32
        codes[ns] = (codes.get(ns, 0) << 4) | (int(rest[0]) << 1) | (sign == "+")
    mask = (1 << bits) - 1
    own: list[tuple[int, float, int]] = []
    affixes: list[tuple[int, float, int]] = []
    at = -1
    for segment in line.split("|")[1:]:
        first = len(own)
        if segment[:1] in ("", " "):
            ns_name, words = "", segment.split()
        else:
            head, *words = segment.split()
            ns_name, _, scale_text = head.partition(":")
        scale = np.float32(scale_text) if segment[:1] not in ("", " ") and scale_text else 1.0
        seed = hashstring_py(ns_name) if ns_name else 0
        nsb = ns_name.encode()[0] if ns_name else 32
        anon = 0
        for w in words:
            name, colon, value = w.encode().partition(b":")
            if colon and value and not _number(value.decode()):
                slot, x = hashstring_py(value, hashstring_py(name, seed)), np.float32(1.0)
            else:
                x = np.float32(np.float32(value) * np.float32(scale)) if colon else \
                    np.float32(scale)  # fmt: skip
                if name:
                    slot = hashstring_py(name, seed)
                else:
                    slot = (seed + anon) & 0xFFFFFFFF
                    anon += 1
            if x == 0:
                continue
            own.append((slot & mask, float(x), nsb))
            c = codes.get(nsb, 0)
            if name and c:
                at = first if at < 0 else at
            while name and c:
                code = c & 15
                length = code >> 1
                part = name if len(name) <= length else (name[:length] if code & 1 else
                                                         name[len(name) - length:])  # fmt: skip
                h = hashstring_py(part, seed) * (AFFIX_CONSTANT + code * QUADRATIC_CONSTANT)
                affixes.append((h & mask, float(x), AFFIX_NS))
                c >>= 4
    out = own[:at] + affixes + own[at:] if affixes else own
    return out + [(CONSTANT_HASH & mask, 1.0, 128)]


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parsed(line: str, spec: str) -> list[tuple[int, float, int]]:
    cfg = TrainConfig(affix=spec, numbers="vw")
    data = (line + "\n").encode()
    batch = parse_block(Block(np.frombuffer(data, dtype=np.uint8).copy(), "t", 1), FMT_VW, BITS,
                        True, cfg.namespaces())  # fmt: skip
    assert batch.status[0] == 0
    lo, hi = batch.indptr[0], batch.indptr[1]
    cut = slice(lo, hi)
    return [(int(i), float(v), int(n)) for i, v, n in
            zip(batch.indices[cut], batch.values[cut], batch.ns[cut], strict=True)]  # fmt: skip


NAMES = st.sampled_from(["happiness", "a", "ab", "12", "007", "42", "0042", "x1", "über", "hello",
                        ""])  # ("0042:0" and "42" hash alike: only the value tells them)
VALUES = st.sampled_from(["", ":1", ":0", ":2.5", ":-1", ":red", ":0.0"])
NAMESPACES = st.sampled_from(["", "a", "b:2", "ab", "c:0.5", "b"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMESPACES, st.lists(st.tuples(NAMES, VALUES), max_size=5)),
                min_size=1, max_size=4, unique_by=lambda seg: seg[0][:1]),
       st.sampled_from(["-2", "+1", "+3,-2", "+2a,-3", "-1b,+7a,+2",
                        "+2a,+2a"]))  # fmt: skip
def test_the_kernel_adds_vw_s_affixes(segments, spec):
    words = []
    for ns, feats in segments:
        toks = [n + v for n, v in feats if n + v]
        words.append(f"|{ns} " + " ".join(toks))
    line = "1 " + " ".join(words)
    assert parsed(line, spec) == reference(line, spec)


def test_affix_arguments_are_vw_s():
    assert int(affix_table("+2a,-3")[ord("a")]) == (2 << 1) | 1
    assert int(affix_table("+2a,-3")[32]) == 3 << 1
    assert int(affix_table("+1,-2")[32]) == (((1 << 1) | 1) << 4) | (2 << 1)
    for bad in ("+8", "+0a", "2ab", "+a"):
        with pytest.raises(ConfigError, match="malformed affix argument"):
            TrainConfig(affix=bad)


# ------------------------------------------------------------------ beside VW 9.11.9


def _data(path, n: int = 400, seed: int = 3) -> None:
    rnd = random.Random(seed)
    words = ["running", "runner", "ran", "happiness", "happy", "unhappy", "x", "42", "0042",
             "quickly", "quick", "slowness", "slow"]  # fmt: skip
    lines = []
    for _ in range(n):
        y = rnd.choice(["1", "-1"])
        a = " ".join(rnd.choice(words) + rnd.choice(["", "", ":2", ":0", ":0.5"])
                     for _ in range(rnd.randint(1, 4)))  # fmt: skip
        b = " ".join(rnd.choice(words) for _ in range(rnd.randint(0, 3)))
        c = rnd.choice(["", f"color:{rnd.choice(['red', 'blue'])}", ":1.5"])
        lines.append(f"{y} |a {a} |b:0.5 {b} | {rnd.choice(words)} {c}")
    path.write_text("\n".join(lines) + "\n")




@pytest.mark.parametrize("opts", [
    ["--affix", "-2"], ["--affix", "+3a,-2b,+1"], ["--affix", "+2,-3a", "-q", "ab"],
    ["--affix", "-3a", "--interactions", "::"], ["--affix", "+2a", "--ngram", "a2"],
    ["--affix", "+2,-2a", "--hash", "all", "--loss_function", "logistic"],
    ["--affix", "+2a", "--oaa", "2"],
])  # fmt: skip
def test_sl_vw_gives_vw_s_numbers(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt")
    if "--oaa" in opts:
        text = (tmp_path / "d.txt").read_text().replace("-1 |", "2 |")
        (tmp_path / "d.txt").write_text(text)
    outs = {}
    for tag, prog in (("v", VW_MODULE), ("s", SL_VW)):
        r = run_module(prog, ["-d", "d.txt", *opts, "-p", f"{tag}.p", "-f", f"{tag}.m",
                        "--readable_model", f"{tag}.r"], tmp_path)  # fmt: skip
        outs[tag] = [ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
    assert outs["s"] == outs["v"]
    assert (tmp_path / "s.p").read_text() == (tmp_path / "v.p").read_text()
    assert (tmp_path / "s.r").read_text() == (tmp_path / "v.r").read_text()
    # each scores with the other's model (its --affix read from the model's options)
    run_module(VW_MODULE, ["-i", "s.m", "-t", "-d", "d.txt", "-p", "vs.p"], tmp_path)
    run_module(SL_VW, ["-i", "v.m", "-t", "-d", "d.txt", "-p", "sv.p"], tmp_path)
    assert (tmp_path / "vs.p").read_text() == (tmp_path / "sv.p").read_text()


def test_audit_and_invert_hash_name_the_affixes_as_vw(tmp_path):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", n=40)
    args = ["-d", "d.txt", "--affix", "+2a,-3", "--audit", "--quiet"]
    sl, vw = (run_module(prog, args, tmp_path).stdout for prog in (SL_VW, VW_MODULE))
    assert sl == vw
    for tag, prog in (("v", VW_MODULE), ("s", SL_VW)):
        run_module(prog, ["-d", "d.txt", "--affix", "-2b,+1", "--invert_hash", f"{tag}.i",
                          "--quiet"], tmp_path)  # fmt: skip
    assert (tmp_path / "s.i").read_text() == (tmp_path / "v.i").read_text()
