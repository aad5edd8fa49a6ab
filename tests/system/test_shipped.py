"""The shipped kernels called without numba (streamlearn.system.shipped, jit_shipped)."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pickle
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from streamlearn.system import prebuilt, shipped
from tests.paths import ROOT as REPO
from tests.paths import script

_direct_code = script("build_kernels")._direct_code
SAMPLE = str(REPO / "data" / "sample.vw")
INDEX = prebuilt.DIR / shipped.INDEX
needs_index = pytest.mark.skipif(not INDEX.is_file(), reason="no direct.json for this Python")


def _clean_env(**extra: str) -> dict[str, str]:
    ours = ("SL_JIT", "SL_PREBUILT", "SL_DIRECT_LOAD")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k not in ours}
    env.update(extra)
    return env


def _host_unusable() -> str | None:
    raw = (prebuilt.DIR / prebuilt.MANIFEST).read_bytes()
    return shipped.unusable(json.loads(raw), json.loads(INDEX.read_bytes()), raw)


VALUES = [
    np.zeros(3), np.zeros(3, np.float32), np.zeros((3, 2)), np.zeros((3, 2), order="F"),
    np.zeros((3, 2))[:, 0], np.zeros(6, np.uint8)[::2], np.zeros((2, 3, 4))[:, 1],
    np.zeros(0, np.int64), np.zeros((1, 1)), np.zeros(4, np.bool_), np.zeros(2, np.uint64),
    np.zeros(3, np.int32), np.zeros(3, ">f8"), np.zeros(3, np.complex128), np.zeros(2, "U3"),
    np.frombuffer(b"abcd", np.uint8), 0, 1, -5, 2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64,
    -(2**63), 1.5, float("nan"), True, False, np.float32(1), np.float64(2), np.int64(3),
    np.uint8(4), np.bool_(True), np.int32(7), (np.zeros(2), 3), (1, 2), (1.0, True, np.zeros(1)),
    (), None, "text", [1, 2],
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_value_is_coded_as_numba_types_it(value):
    """shipped.code is what the build's code of numba's typeof gives, or None (numba then)."""
    from numba import typeof

    ours = shipped.code(value)
    if ours is None:
        return
    frozen = shipped._frozen(_direct_code(typeof(value)))
    assert ours == frozen


def test_a_readonly_array_is_coded_readonly():
    a = np.zeros(3)
    a.flags.writeable = False
    assert shipped.code(a) == ("float64", 1, "C", True) == shipped._frozen(
        _direct_code(__import__("numba").typeof(a)))


def test_numba_s_defaults_are_the_ones_assumed():
    """Without a NUMBA_* variable numba's code-generation settings are shipped.DEFAULTS (a
    numba upgrade that changes one must change them, and the shipped kernels with it)."""
    code = ("import json\nfrom streamlearn.system import prebuilt\n"
            "print(json.dumps(prebuilt.environment()))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True,
                       text=True, check=True, cwd=REPO)  # fmt: skip
    here = json.loads(r.stdout)
    if not all(__import__("llvmlite.binding").binding.get_host_cpu_features().get(f, False)
               for f in prebuilt.CPU_FEATURES):  # fmt: skip
        pytest.skip("a CPU below the level (numba may default to no AVX)")
    assert {k: here[k] for k in shipped.DEFAULTS} == shipped.DEFAULTS


@needs_index
def test_the_object_code_read_from_an_entry_is_numba_s():
    manifest = json.loads((prebuilt.DIR / prebuilt.MANIFEST).read_text())
    for k in manifest["kernels"][::25]:
        raw = zlib.decompress((prebuilt.DIR / k["file"]).read_bytes())
        lib = pickle.loads(raw)[0]  # noqa: S301 - numba's entry, shipped with the package
        assert shipped.object_code(raw) == lib[2][0]
        assert shipped.object_code(raw[:100]) is None


@needs_index
def test_direct_json_belongs_to_the_manifest_beside_it():
    index = json.loads(INDEX.read_bytes())
    raw = (prebuilt.DIR / prebuilt.MANIFEST).read_bytes()
    assert index["manifest"] == hashlib.sha256(raw).hexdigest()
    assert index["defaults"] == shipped.DEFAULTS and index["format"] == shipped.FORMAT
    assert len(index["kernels"]) >= 200  # (250 of 299 when written)


_EVERY_ENTRY = r"""
import importlib, json, sys
from streamlearn.system import jit, jit_shipped, prebuilt, shipped
assert jit.DIRECT
index = json.loads((prebuilt.DIR / shipped.INDEX).read_bytes())
for module in sorted({k["module"] for k in index["kernels"]}):
    importlib.import_module("streamlearn." + module.removesuffix(".py").replace("/", "."))
kernels = {(k.py_func.__code__.co_filename, k.py_func.__qualname__,
            k.py_func.__code__.co_firstlineno): k for k in jit_shipped._KERNELS}
loader = shipped.LOADER
assert loader._setup(), loader.why
loaded = 0
for entries in loader.kernels.values():
    for e in entries:
        k = kernels[(str(prebuilt.PACKAGE / e["module"]), e["qualname"], e["line"])]
        args = tuple(c[2] if isinstance(c, tuple) and c[0] == "lit" else None for c in e["args"])
        codes = tuple(c[1] if isinstance(c, tuple) and c[0] == "lit" else c for c in e["args"])
        fn, _ = loader.find(k.py_func, codes, args)
        assert fn is not None, e["qualname"]
        loaded += 1
print(loaded)
"""


@needs_index
def test_every_entry_is_found_by_its_kernel_and_links():
    """Each entry of direct.json is the one its kernel finds for the entry's types, and its
    object code links (every symbol it needs is one numba's target would install)."""
    if _host_unusable():
        pytest.skip(_host_unusable())
    r = subprocess.run([sys.executable, "-c", _EVERY_ENTRY], env=_clean_env(SL_DIRECT_LOAD="1"),
                       capture_output=True, text=True, cwd=REPO, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == len(json.loads(INDEX.read_bytes())["kernels"])


_AT_EXIT = """
import atexit, sys
atexit.register(lambda: print("NUMBA", "numba" in sys.modules, file=sys.stderr))
sys.argv = ["sl", *sys.argv[1:]]
from streamlearn.cli import main
main()
"""

CB = "".join(
    f"shared |U u{i % 7} t{i % 3}\n"
    + "".join(f"{f'{a}:{(i + a) % 3 / 2}:0.25 ' if a == i % 4 else ''}|A a{a} x{(i + a) % 5}\n"
              for a in range(4))
    + "\n"
    for i in range(300)
)  # fmt: skip

RUNS = [
    ["train", "--loss", "logistic", SAMPLE, "-f", "{out}/m.sl", "-p", "{out}/p.txt"],
    ["train", SAMPLE, "-q", "ab", "--l1", "1e-5", "--passes", "2", "-f", "{out}/m.sl"],
    ["vw", "-d", SAMPLE, "-b", "20", "-f", "{out}/m.vw", "-p", "{out}/p.txt", "--readable_model",
     "{out}/r.txt"],
    ["vw", "-d", SAMPLE, "--ftrl", "-q", "::", "-p", "{out}/p.txt", "--holdout_off"],
    ["vw", "-d", "{cb}", "--cb_explore_adf", "--epsilon", "0.1", "-q", "UA", "-p", "{out}/p.txt",
     "-f", "{out}/m.vw"],
    # (LDA's kernels are made of two intrinsics of learners/lda_math.py's own)
    ["vw", "-d", "{lda}", "--lda", "3", "-b", "10", "-p", "{out}/p.txt", "-f", "{out}/m.vw",
     "--readable_model", "{out}/r.txt"],
]  # fmt: skip

LDA = "".join(f"| {' '.join(f'w{(i * 7 + k * 3) % 40}:{1 + (i + k) % 3}' for k in range(6))}\n"
              for i in range(400))  # fmt: skip


@needs_index
@pytest.mark.parametrize("argv", RUNS, ids=lambda a: " ".join(a[:2]))
def test_a_run_without_numba_writes_numba_s_bytes(tmp_path, argv):
    """The same outputs, byte for byte, with the kernels called directly and through numba;
    the direct run never imports numba."""
    if _host_unusable():
        pytest.skip(_host_unusable())
    cb = tmp_path / "cb.vw"
    cb.write_text(CB)
    lda = tmp_path / "lda.vw"
    lda.write_text(LDA)
    outs = {}
    for direct in ("1", "0"):
        out = tmp_path / direct
        out.mkdir()
        args = [a.format(out=out, cb=cb, lda=lda) for a in argv]
        r = subprocess.run([sys.executable, "-c", _AT_EXIT, *args], capture_output=True,
                           text=True, cwd=tmp_path, timeout=600,
                           env=_clean_env(SL_DIRECT_LOAD=direct, SL_JIT="1"))  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert f"NUMBA {direct == '0'}" in r.stderr
        outs[direct] = ({p.name: p.read_bytes() for p in out.iterdir()},
                        re.sub(r"in [0-9.]+ s \([0-9,]+ ex/s\)", "", r.stderr)
                        .replace("NUMBA True", "NUMBA False").replace(str(out), "OUT"))  # fmt: skip
    assert outs["1"][0] and outs["1"] == outs["0"]


_FALLBACK = r"""
import sys
import numpy as np
from streamlearn.system import jit, jit_shipped
from streamlearn.io import _scan
k = _scan.count_newlines
assert isinstance(k, jit_shipped.Kernel)
buf = np.frombuffer(bytearray(b"a\nb\n" * 10), dtype=np.uint8)
assert k(buf) == 20 and "numba" not in sys.modules
direct = k.shipped((buf,))
assert direct is not None and direct(buf) == 20
assert k(np.frombuffer(b"a\n", dtype=np.uint8)) == 1  # (read-only) not shipped: numba's
assert "numba" in sys.modules
import numba
assert isinstance(_scan.count_newlines, numba.core.dispatcher.Dispatcher)
assert jit.jit is sys.modules["streamlearn.system.jit_numba"].jit
assert k(buf) == 20 and direct(buf) == 20 and _scan.count_newlines(buf) == 20
print("ok")
"""


@needs_index
def test_a_call_without_a_shipped_entry_hands_every_kernel_to_numba(tmp_path):
    if _host_unusable():
        pytest.skip(_host_unusable())
    r = subprocess.run([sys.executable, "-c", _FALLBACK], capture_output=True, text=True,
                       cwd=REPO, env=_clean_env(SL_DIRECT_LOAD="1",
                                                NUMBA_CACHE_DIR=str(tmp_path)),
                       timeout=600)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


_OWN_INTRINSIC = r"""
import sys
from streamlearn.learners import lda_math
from streamlearn.system import jit_shipped
assert isinstance(lda_math.f32_bits, jit_shipped.Intrinsic) and "numba" not in sys.modules
jit_shipped.activate()
from numba.core.extending import _Intrinsic
assert isinstance(lda_math.f32_bits, _Intrinsic) and isinstance(lda_math.bits_f32, _Intrinsic)
print("ok")
"""


_USER_NJIT_INTRINSICS = r"""
import sys
import numpy as np
import numba
from streamlearn.learners import lda_math
assert "streamlearn.system.jit_numba" not in sys.modules

@numba.njit
def f(p):  # kernels made of intrinsics (fdiv, lda_math's own), numba activated while typing f
    return lda_math.f32_bits(lda_math._pow2(p))

print(f(np.float32(1.5)) == np.float32(2.8284912109375).view(np.uint32))
"""


def test_a_user_s_njit_types_kernels_made_of_intrinsics():
    """A user's ``@njit`` that names kernels calling intrinsics: numba becomes the runner
    while numba types it, and the intrinsics it makes then are typed (the contexts are
    refreshed: a NameError for ``fdiv`` before)."""
    r = subprocess.run([sys.executable, "-c", _USER_NJIT_INTRINSICS], capture_output=True,
                       text=True, cwd=REPO, env=_clean_env(SL_DIRECT_LOAD="1"),
                       timeout=600)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr[-2000:]


def test_a_kernel_module_s_own_intrinsic_waits_for_numba():
    """``learners/lda_math.py``'s bit casts: stand-ins until numba runs the kernels, then
    numba's intrinsics in their place (what a kernel compiled from then on needs)."""
    r = subprocess.run([sys.executable, "-c", _OWN_INTRINSIC], capture_output=True, text=True,
                       cwd=REPO, env=_clean_env(SL_DIRECT_LOAD="1"), timeout=300)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_a_run_where_they_cannot_be_used_is_numba_s(tmp_path):
    """SL_PREBUILT=0 (or anything that configures numba): every kernel is numba's."""
    r = subprocess.run([sys.executable, "-c", _AT_EXIT, "vw", "-d", SAMPLE, "--quiet",
                        "-p", str(tmp_path / "p")], capture_output=True, text=True, cwd=tmp_path,
                       timeout=600, env=_clean_env(SL_DIRECT_LOAD="1", SL_PREBUILT="0",
                                                   NUMBA_CACHE_DIR=str(tmp_path / "c"),
                                                   NUMBA_DISABLE_JIT="0"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "NUMBA True" in r.stderr and (tmp_path / "p").stat().st_size > 0


_USER_NUMBA = r"""
import numba, numpy as np
from streamlearn.io import _scan

@numba.njit
def twice(b):
    return 2 * _scan.count_newlines(b)

print(twice(np.frombuffer(bytearray(b"a\nb\n"), dtype=np.uint8)))
"""


@needs_index
def test_a_kernel_called_from_a_user_s_numba_code(tmp_path):
    env = _clean_env(SL_DIRECT_LOAD="1", NUMBA_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", _USER_NUMBA], capture_output=True, text=True,
                       cwd=REPO, timeout=600, env=env)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "4", r.stderr


@pytest.mark.parametrize("env", [{"NUMBA_BOUNDSCHECK": "1"}, {"SL_PREBUILT": "0"},
                                 {"NUMBA_OPT": "2"}])  # fmt: skip
def test_anything_that_configures_numba_leaves_the_kernels_to_it(env):
    if not INDEX.is_file():
        pytest.skip("no direct.json")
    raw = (prebuilt.DIR / prebuilt.MANIFEST).read_bytes()
    index = json.loads(INDEX.read_bytes())
    old = dict(os.environ)
    try:
        os.environ.update(env)
        assert shipped.unusable(json.loads(raw), index, raw) is not None
    finally:
        os.environ.clear()
        os.environ.update(old)
    changed = dict(index, manifest="0" * 64)
    assert "another manifest" in shipped.unusable(json.loads(raw), changed, raw)


def test_jit_py_generates_no_code():
    """build_kernels counts system/jit.py as system/jit_numba.py among a kernel's sources:
    jit.py must only choose decorators, never make code of its own."""
    path = Path(prebuilt.PACKAGE / "system" / "jit.py")
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            assert not any(n and n.split(".")[0] in ("numba", "llvmlite") for n in names)
        if isinstance(node, ast.Attribute):
            assert node.attr not in ("njit", "intrinsic", "generated_jit", "overload")
