"""Kernels shipped compiled (:mod:`streamlearn.system.prebuilt`) and the compile notice.

A first run with an empty kernel cache loads the shipped kernels instead of
compiling them, and computes exactly what the interpreted kernels compute; a
kernel whose sources changed, or a machine they do not fit, compiles as
before and says so on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import numba
import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.system import jit_numba, notices, prebuilt
from tests.marks import slow_except
from tests.paths import ROOT, script

SAMPLE = str(ROOT / "data" / "sample.vw")


def _build_script():
    return script("build_kernels")


def _sl(args: list[str], tmp_path, **env_extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    for k in ("NUMBA_DISABLE_JIT", "NUMBA_BOUNDSCHECK", "SL_PREBUILT", "SL_JIT"):
        if k not in env_extra:
            env.pop(k, None)
    return subprocess.run([sys.executable, "-m", "streamlearn", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


needs_shipped = pytest.mark.skipif(
    prebuilt.manifest() is None,
    reason="the shipped kernels do not fit this machine: "
    + str(prebuilt.usable(prebuilt._read()) if prebuilt._read() else "no manifest"),
)


@pytest.mark.slow
def test_shipped_kernels_are_current():
    """Fails after an edit of a kernel (or of what it imports): rebuild them."""
    why = _build_script().stale()
    assert not why, "stale shipped kernels (run python scripts/build_kernels.py): " + "; ".join(why)


@needs_shipped
def test_a_first_run_loads_the_shipped_kernels_and_matches_the_interpreter(tmp_path):
    """The README's first command, empty kernel cache: nothing compiles; same model as
    the kernels run as plain Python."""
    r = _sl(["train", "--loss", "logistic", SAMPLE, "-f", "shipped.sl"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "compiling" not in r.stderr
    r = _sl(["train", "--loss", "logistic", SAMPLE, "-f", "plain.sl", "--quiet"], tmp_path,
            NUMBA_DISABLE_JIT="1")  # fmt: skip
    assert r.returncode == 0, r.stderr
    a, b = (model_io.load(tmp_path / n) for n in ("shipped.sl", "plain.sl"))
    np.testing.assert_array_equal(a.slots, b.slots)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.stats, b.stats)


def test_the_manifest_describes_what_it_needs():
    m = prebuilt._read()
    assert m is not None and m["cpu"] == prebuilt.CPU
    assert set(m["environment"]) == set(prebuilt.environment())
    for k in m["kernels"]:
        assert (prebuilt.DIR / k["file"]).is_file()
        assert k["module"] in m["modules"]
    # every kernel module depends on itself and on the jit helpers it is compiled with
    for module, deps in m["modules"].items():
        assert module in deps and "system/jit_numba.py" in deps
    assert m["compile_seconds"]["io.vw.parse_vw_block"] > 1


def test_kernels_built_elsewhere_or_otherwise_are_not_used(monkeypatch):
    m = prebuilt._read()
    assert prebuilt.usable({**m, "environment": {**m["environment"], "numba": "0.1"}}) \
        == f"numba is {prebuilt.environment()['numba']!r} here, '0.1' in the build"  # fmt: skip
    assert "built for" in prebuilt.usable({**m, "cpu": "x86-64-v4"})
    monkeypatch.setattr(numba.config, "BOUNDSCHECK", 1)
    assert "boundscheck" in (prebuilt.usable(m) or "")


def test_a_changed_dependency_makes_a_module_stale(monkeypatch):
    m = prebuilt._read()
    deps = dict(m["modules"]["io/vw.py"])
    deps["hashing.py"] = "0" * 64
    changed = {**m, "modules": {**m["modules"], "io/vw.py": deps}, "index": {}}
    monkeypatch.setattr(prebuilt, "manifest", lambda: changed)
    prebuilt.fresh.cache_clear()
    try:
        assert not prebuilt.fresh("io/vw.py")
        assert prebuilt.fresh("io/_scan.py") == (
            _build_script().dependencies(prebuilt.PACKAGE / "io/_scan.py")
            == m["modules"]["io/_scan.py"]
        )
    finally:
        prebuilt.fresh.cache_clear()


def test_sl_prebuilt_0_turns_them_off(monkeypatch):
    monkeypatch.setenv("SL_PREBUILT", "0")
    prebuilt.manifest.cache_clear()
    try:
        assert prebuilt.manifest() is None
    finally:
        monkeypatch.delenv("SL_PREBUILT")
        prebuilt.manifest.cache_clear()


def test_the_compile_notice_says_what_how_long_and_where():
    m = prebuilt._read()
    took = round(m["compile_seconds"]["io.vw.parse_vw_block"])
    text = jit_numba.compile_notice("io.vw.parse_vw_block")
    assert text.startswith(f"compiling io.vw.parse_vw_block for this machine, once (about {took} s")
    assert text.endswith(f"cached in {jit_numba.numba.config.CACHE_DIR})")
    assert jit_numba.compile_notice("io.vw.parse_vw_block", first=False) \
        == f"compiling io.vw.parse_vw_block too (about {took} s)"  # fmt: skip
    assert "(a few seconds;" in jit_numba.compile_notice("learners.new_one.train_batch")
    quick = min(m["compile_seconds"], key=m["compile_seconds"].get)
    assert m["compile_seconds"][quick] < 1 and jit_numba.compile_notice(quick) is None


def test_the_notice_goes_to_the_listener_once_per_top_level_kernel():
    heard: list[str] = []
    notices.listen(heard.append)
    try:
        listener = jit_numba._CompileNotice()

        def event(module, name):
            func = SimpleNamespace(__module__=module, __qualname__=name)
            return SimpleNamespace(data={"dispatcher": SimpleNamespace(py_func=func)})

        outer = event("streamlearn.io.vw", "parse_vw_block")
        listener.on_start(outer)
        listener.on_start(event("streamlearn.io._numbers", "scan_number"))  # nested: its part
        listener.on_end(None)
        listener.on_end(None)
        listener.on_start(event("numba.cpython.builtins", "impl"))  # not ours
        listener.on_end(None)
        listener.on_start(event("streamlearn.learners.gd", "train_batch"))
        listener.on_end(None)
    finally:
        notices.listen(None)
    assert len(heard) == 2
    assert heard[0].startswith("compiling io.vw.parse_vw_block for this machine")
    assert heard[1].startswith("compiling learners.gd.train_batch too")


@pytest.mark.slow
def test_a_kernel_compiled_on_first_use_says_so(tmp_path):
    svm = tmp_path / "d.svm"
    rng = np.random.default_rng(0)
    svm.write_text("".join(f"{rng.choice([-1, 1])} 1:{rng.random():.3f} 7:1\n"
                           for _ in range(3000)))  # fmt: skip
    r = _sl(["train", str(svm)], tmp_path, SL_PREBUILT="0", SL_JIT="1")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("compiling")]
    assert " for this machine, once (about " in lines[0]
    assert lines[0].endswith(f"cached in {tmp_path / 'cache'})")
    assert any(ln.startswith("compiling io.svmlight.parse_svmlight_block ") for ln in lines)
    r = _sl(["train", str(svm)], tmp_path, SL_PREBUILT="0", SL_JIT="1")
    assert "compiling" not in r.stderr  # cached now
    fresh = tmp_path / "quiet"
    fresh.mkdir()
    r = _sl(["train", str(svm), "--quiet"], fresh, SL_PREBUILT="0", SL_JIT="1")
    assert r.returncode == 0 and r.stderr == ""


def test_manifest_is_json_with_relative_paths():
    raw = json.loads((prebuilt.DIR / prebuilt.MANIFEST).read_text())
    assert all(not os.path.isabs(k["file"]) and ".." not in k["file"] for k in raw["kernels"])


_MODULES_AT_EXIT = """
import atexit, sys
atexit.register(lambda: print("MODULES", "numba" in sys.modules,
                              "numba.np.arraymath" in sys.modules, "scipy.linalg" in sys.modules))
sys.argv = ["sl", *sys.argv[1:]]
from streamlearn.cli import main
main()
"""


@needs_shipped
@pytest.mark.parametrize(
    "crosses", slow_except([["-q", "ff"], ["--cubic", "fff"], ["--interactions", "::"]], 0)
)
def test_loading_the_kernels_imports_no_numpy_maths_module(tmp_path, crosses):
    """A cached kernel's load imports the modules its compiled helpers came from.
    ``numba.np.arraymath`` (``np.iinfo``, ``np.sum``, ...) imports ``scipy.linalg``
    where SciPy is installed: 0.25 s, which a ``-q tt`` run on 150 k lines spent
    before its first batch.  The crossing kernel, which every crossed run loads,
    must not bring it in."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), SL_JIT="1", SL_DIRECT_LOAD="0")
    for k in ("NUMBA_DISABLE_JIT", "NUMBA_BOUNDSCHECK", "SL_PREBUILT"):
        env.pop(k, None)
    r = subprocess.run([sys.executable, "-c", _MODULES_AT_EXIT, "train", SAMPLE, *crosses,
                        "--quiet"], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "compiling" not in r.stderr
    assert "MODULES True False False" in r.stdout, r.stdout


# -- one directory of kernels per Python version (issue 38, part 7) ---------------------------


def test_this_python_reads_its_own_directory():
    """numba's cache entries are per interpreter: a process looks in ``py3X/`` of its own
    minor version, whose manifest says it was built with that Python."""
    assert prebuilt.tag((3, 12)) == "py312" and prebuilt.tag((3, 9, 1)) == "py39"
    assert prebuilt.DIR == prebuilt.BASE / f"py{sys.version_info[0]}{sys.version_info[1]}"
    m = prebuilt._read()
    if m is not None:
        assert m["environment"]["python"].rstrip("dmu") == "{}.{}".format(*sys.version_info[:2])


def test_every_claimed_python_ships_kernels_built_with_it():
    """Each ``Python :: 3.X`` classifier has ``py3X/`` with a manifest built by that Python
    (read as files: CI has one Python; ``--check`` also compares their sources)."""
    build = _build_script()
    versions = build.claimed_versions()
    assert "3.11" in versions and len(versions) >= 3
    for version in versions:
        d = build._dir_of(prebuilt.BASE, version)
        m = json.loads((d / prebuilt.MANIFEST).read_text())
        assert m["format"] == prebuilt.FORMAT and m["cpu"] == prebuilt.CPU
        assert m["environment"]["python"].rstrip("dmu") == version
        for k in m["kernels"]:
            assert (d / k["file"]).is_file(), k["file"]
            assert f".py{version.replace('.', '')}." in k["file"]  # numba's name for the version
    dirs = {p.name for p in prebuilt.BASE.iterdir() if p.is_dir()}
    assert dirs == {build._dir_of(prebuilt.BASE, v).name for v in versions}


@pytest.mark.slow
def test_check_names_a_missing_version_and_one_built_with_another_python(tmp_path):
    build = _build_script()
    here = build._dir_of(prebuilt.BASE, "3.11")
    import shutil

    shutil.copytree(here, tmp_path / "py311")
    shutil.copytree(here, tmp_path / "py312")  # 3.11's kernels where 3.12's belong
    why = build.stale(tmp_path)
    others = [v for v in build.claimed_versions() if v not in ("3.11", "3.12")]
    assert any(w.startswith("Python 3.12: py312/ was built with Python 3.11") for w in why)
    for v in others:
        assert any(w.startswith(f"Python {v}: no manifest") for w in why), why
    assert not any(w.startswith("Python 3.11:") for w in why if "changed" not in w)


def _fake_python(path, version: str, works: bool = True):
    """An executable that answers the build script's probe as a Python ``version`` would."""
    path.write_text(f"#!/bin/sh\necho {version}\nexit {0 if works else 1}\n")
    path.chmod(0o755)
    return str(path)


def test_the_interpreters_to_build_with(tmp_path, monkeypatch):
    """``--python`` names interpreters (their version asked, not guessed from the name);
    ``--all`` finds each other claimed version as python3.X on PATH, and says which is
    missing."""
    build = _build_script()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    given = _fake_python(tmp_path / "my-python", "3.12")
    monkeypatch.setenv("PATH", str(bin_dir))
    here = "{}.{}".format(*sys.version_info[:2])
    assert build.interpreters([given], every=False) == {"3.12": given}
    with pytest.raises(SystemExit, match="not a Python that imports numba"):
        build.interpreters([_fake_python(tmp_path / "broken", "3.12", works=False)], False)
    missing = next(v for v in build.claimed_versions() if v not in ("3.12", here))
    with pytest.raises(SystemExit, match=f"no Python {missing} with numba found"):
        build.interpreters([given], every=True)
    for v in build.claimed_versions():
        if v not in ("3.12", here):
            _fake_python(bin_dir / f"python{v}", v)
    chosen = build.interpreters([given], every=True)
    assert chosen["3.12"] == given and chosen[here] == sys.executable
    assert set(chosen) == set(build.claimed_versions())


def test_build_for_another_python_runs_the_script_with_it(tmp_path, monkeypatch):
    build = _build_script()
    given = _fake_python(tmp_path / "py", "3.13")
    ran = []
    real_run = subprocess.run
    monkeypatch.setattr(build.subprocess, "run", lambda cmd, **kw: (
        ran.append(cmd) if cmd[0] == given and len(cmd) > 2 and cmd[1] == build.__file__
        else real_run(cmd, **kw)))  # fmt: skip
    monkeypatch.setattr(sys, "argv", ["build_kernels.py", "--python", given, "-o", str(tmp_path)])
    build.main()
    assert ran == [[given, build.__file__, "-o", str(tmp_path)]]


def test_entries_ship_without_their_type_annotations():
    """The type annotation (the kernel's source with every variable's type, and the build's
    paths) is 40% of an entry and never read by a load: stripped (``slim``), the rest kept."""
    import pickle
    import zlib

    build = _build_script()
    entry = ("lib", "fndesc", "env", "sig", False, (), "# File: /build/x.py ...", [], ())
    assert pickle.loads(build.slim(pickle.dumps(entry))) == (*entry[:6], "", *entry[7:])
    assert build.slim(b"\x80\x04N.") == b"\x80\x04N."  # not an entry: as it was
    m = prebuilt._read()
    k = max(m["kernels"], key=lambda k: (prebuilt.DIR / k["file"]).stat().st_size)
    data = pickle.loads(zlib.decompress((prebuilt.DIR / k["file"]).read_bytes()))
    assert data[6] == "" and len(data) == 9


def test_an_incremental_build_merges_what_it_compiled(tmp_path):
    """``build_kernels.py --incremental``: the shipped entries of unchanged modules stay,
    a changed module's go, the new ones are added (renamed where a file name is taken)."""
    bk = _build_script()
    shipped = json.loads((prebuilt.DIR / prebuilt.MANIFEST).read_text())
    out, new = tmp_path / "out", tmp_path / "new"
    kept = next(k for k in shipped["kernels"] if k["module"] == "learners/gd.py")
    gone = next(k for k in shipped["kernels"] if k["module"] == "learners/ftrl.py")
    modules = {"learners/gd.py": shipped["modules"]["learners/gd.py"],
               "learners/ftrl.py": {"learners/ftrl.py": "0" * 64}}  # (changed since)
    for d, kernels, mods in ((out, [kept, gone], modules),
                             (new, [{**kept, "base": "gd.other", "sig": "(int64,)"}],
                              {"learners/gd.py": modules["learners/gd.py"]})):  # fmt: skip
        for k in kernels:
            (d / k["file"]).parent.mkdir(parents=True, exist_ok=True)
            (d / k["file"]).write_bytes(d.name.encode())
        (d / prebuilt.MANIFEST).write_text(json.dumps(
            {**shipped, "modules": mods, "kernels": kernels,
             "compile_seconds": {d.name: 1.0}}))  # fmt: skip
    merged = bk._merge(out, new)
    m = json.loads((out / prebuilt.MANIFEST).read_text())
    assert set(merged) == set(m["modules"]) == {"learners/gd.py"}
    assert [(k["base"], k["file"]) for k in m["kernels"]] == [
        (kept["base"], kept["file"]), ("gd.other", kept["file"].removesuffix(".z") + ".1.z")]
    assert (out / kept["file"]).read_bytes() == b"out"
    assert not (out / gone["file"]).exists()
    assert m["compile_seconds"] == {"out": 1.0, "new": 1.0}
