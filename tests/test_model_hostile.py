"""Crafted model files with valid checksums: one line and a documented exit code, never a
traceback, through ``sl inspect``, ``sl predict -i`` and ``sl train -i`` (issue 30)."""

from __future__ import annotations

import copy
import hashlib
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn import model as model_io
from streamlearn.errors import ModelError
from tests.unix import invoke, one_line_error, sl, text_data

DATA = text_data(300)


def craft(header: dict | bytes, payload: bytes) -> bytes:
    """A model file with this header and payload, and a valid checksum."""
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    body = model_io._PREFIX.pack(model_io.MAGIC, model_io.VERSION, len(head)) + head + payload
    return body + hashlib.sha256(body).digest()


def split(data: bytes) -> tuple[dict, bytes]:
    _, _, hlen = model_io._PREFIX.unpack_from(data)
    start = model_io._PREFIX.size
    return json.loads(data[start : start + hlen]), data[start + hlen : -32]


class _Models(tuple):
    def __repr__(self) -> str:  # hypothesis prints its arguments
        return "models"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Models of a few learners (gd with names, l0 with its heap, smidas), as bytes."""
    d = tmp_path_factory.mktemp("hostile")
    (d / "d.vw").write_text(DATA)
    out = {}
    for name, args in {"gd": ["--invert-hash", str(d / "ih.txt")],
                       "l0": ["--algo", "l0", "--top-k", "5"],
                       "smidas": ["--algo", "smidas"]}.items():  # fmt: skip
        r = invoke(["train", str(d / "d.vw"), "-f", str(d / f"{name}.sl"), "--quiet", *args])
        assert r.exit_code == 0, r.output
        out[name] = (d / f"{name}.sl").read_bytes()
    return _Models((d, out))


COMMANDS = (
    ("inspect", "{m}"),
    ("inspect", "{m}", "--json"),
    ("predict", "-i", "{m}", "{d}", "--quiet"),
    ("train", "-i", "{m}", "{d}", "--quiet"),
)
OK = {0, 2, 5, 6}
"""Exit codes a crafted model may end in: it works, an option conflict, unusable, diverged."""


def _run_everywhere(tmp, data: bytes) -> set[int]:
    """``data`` as a model through every command; each ends in one line and a code of OK."""
    m = tmp / "crafted.sl"
    m.write_bytes(data)
    try:
        model_io.decode(data)
    except ModelError:
        pass  # and the commands must say so
    codes = set()
    for cmd in COMMANDS:
        args = [a.format(m=m, d=tmp / "d.vw") for a in cmd]
        r = invoke(args)  # exceptions are not caught: a traceback fails the test
        assert r.exit_code in OK, (args, r.exit_code, r.output)
        if r.exit_code:
            errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
            assert len(errors) == 1, r.output
        codes.add(r.exit_code)
    return codes


# ---- the cases of issue 30, through the real program ---------------------------------------


def _cases(header: dict, payload: bytes) -> dict[str, bytes]:
    def array(h, name):
        return next(a for a in h["arrays"] if a["name"] == name)

    out = {"deep": craft(b'{"a":' * 50000 + b"1" + b"}" * 50000, payload)}
    h = copy.deepcopy(header)
    h["config"]["bits"] = 18.5
    array(h, "slots")["shape"] = [0]
    out["bits 18.5, no slots"] = craft(h, payload)
    h = copy.deepcopy(header)
    h["arrays"] = [a for a in h["arrays"] if a["name"] != "stats"]
    out["missing array"] = craft(h, payload)
    h = copy.deepcopy(header)
    array(h, "state")["shape"] = [10**30, 4]
    out["shape 10**30"] = craft(h, payload)
    h = copy.deepcopy(header)
    array(h, "slots")["dtype"] = "float64"
    out["float slots"] = craft(h, payload)
    for name in ("gstate", "stats"):
        h = copy.deepcopy(header)
        array(h, name)["shape"] = [0]
        out[f"empty {name}"] = craft(h, payload)
        h = copy.deepcopy(header)
        n = array(h, name)["shape"][0]
        array(h, name)["shape"] = [2, n // 2]
        out[f"2-D {name}"] = craft(h, payload)
    h = copy.deepcopy(header)
    h["config"]["quadratic"] = "ff"
    out["a string for a list"] = craft(h, payload)
    h = copy.deepcopy(header)
    h["names"] = {"99999999999": ["x"], "1": "abc"}
    out["names"] = craft(h, payload)
    return out


@pytest.mark.slow
def test_issue_cases_exit_5_through_the_program(models):
    tmp, by_learner = models
    header, payload = split(by_learner["gd"])
    for k, (case, data) in enumerate(_cases(header, payload).items()):
        assert _run_everywhere(tmp, data) == {5}, case
        (tmp / "c.sl").write_bytes(data)
        args = [a.format(m="c.sl", d="d.vw") for a in COMMANDS[k % len(COMMANDS)]]
        r = sl(args, tmp)  # and one command each as a real process
        assert r.returncode == 5, (case, args, r.stderr)
        one_line_error(r.stderr)
        assert b"invalid header" in r.stderr, (case, r.stderr)


def test_a_broken_l0_heap_is_refused(models):
    """The l0 kernel indexes with its heap: a heap that does not fit the table is exit 5."""
    tmp, by_learner = models
    header, payload = split(by_learner["l0"])
    arrays = {a["name"]: a for a in header["arrays"]}
    g = arrays["gstate"]
    gstate = np.frombuffer(payload, np.float64, g["shape"][0], g["offset"]).copy()
    for i, value in ((16, 5e9), (16, -1.0), (17, 2.0**40), (17, 0.5)):
        bad = gstate.copy()
        bad[i] = value
        raw = bytearray(payload)
        raw[g["offset"] : g["offset"] + bad.nbytes] = bad.tobytes()
        data = craft(header, bytes(raw))
        with pytest.raises(ModelError, match="l0 heap"):
            model_io.decode(data)
        assert _run_everywhere(tmp, data) == {5}


# ---- property: any crafted header ---------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
    | st.sampled_from(["uint32", "float64", "int8", "gd", "l0", "smidas", "vw", "strings"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=8,
)  # fmt: skip


NUMBERS = (st.integers(-3, 40) | st.sampled_from([0.0, -0.0, 1e-300, 1e308, 2**63, -(2**63)])
           | st.floats(-1e3, 1e3))  # fmt: skip


def _paths(value, at=()):
    """Every place in a JSON value: (path, is the parent a dict)."""
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))


@st.composite
def crafted(draw, by_learner):
    learner = draw(st.sampled_from(sorted(by_learner)))
    header, payload = split(by_learner[learner])
    header = copy.deepcopy(header)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(header) if p]
        options = [p for p in paths if p[0] == "config" and len(p) == 2]
        if options and draw(st.booleans()):  # the options: most still decode, and then run
            paths = options
        path = draw(st.sampled_from(paths))
        parent = header
        for k in path[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(["replace", "number", "shape", "delete"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "shape":
            parent[path[-1]] = draw(st.lists(st.integers(-2, 40), max_size=3))
        elif action == "number":
            parent[path[-1]] = draw(NUMBERS)
        else:
            parent[path[-1]] = draw(JSON)
    if draw(st.booleans()):  # keep the payload size consistent, so later checks are reached
        header["payload_bytes"] = len(payload)
    return craft(header, payload)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_crafted_header_is_one_line_and_a_documented_code(models, data):
    tmp, by_learner = models
    _run_everywhere(tmp, data.draw(crafted(by_learner)))


def test_the_models_themselves_work(models):
    tmp, by_learner = models
    for data in by_learner.values():
        assert _run_everywhere(tmp, data) == {0}
