#!/usr/bin/env python
"""Compile the kernels ``sl`` ships, for a portable CPU (``streamlearn/system/prebuilt/``).

Runs a set of representative ``sl`` commands and Python API calls (every
learner, both formats, crosses, passes, grids, prediction, inspection) in
fresh processes that compile into an empty numba cache for the CPU level
:data:`streamlearn.system.prebuilt.CPU`, then packs that cache: each entry
zlib-compressed, and ``manifest.json`` with the versions and settings it was
built with, the SHA-256 of every source file each kernel module depends on,
and how long each kernel took to compile (the estimate the compile notice
prints where the shipped kernels cannot be used).

Each Python version has its own kernels (numba's cache entries are per
interpreter): ``streamlearn/system/prebuilt/py311/``, ``py312/``, ``py313/``, one
for each ``Programming Language :: Python :: 3.X`` classifier in
``pyproject.toml``.  A build compiles with the interpreter it runs under, or
with each ``--python`` given (that interpreter runs this script again; it needs
the package's dependencies: a fresh virtualenv with ``pip install -e .``, so
that the numba and llvmlite versions are the ones users get).

Run it after changing any kernel or the modules kernels import (the test
``tests/system/test_prebuilt.py::test_shipped_kernels_are_current`` and
``--check`` say when); it takes a few minutes per Python version::

    python scripts/build_kernels.py                  # this Python's kernels
    python scripts/build_kernels.py --python /venv312/bin/python --python /venv313/bin/python
    python scripts/build_kernels.py --all            # every claimed version (python3.X on PATH,
                                                     # or the --python given for it)
    python scripts/build_kernels.py --check          # exit 1 if any version is missing or stale
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlearn.system import prebuilt  # noqa: E402 - after the path fix

PACKAGE = prebuilt.PACKAGE

# (what, args): "sl" runs the command line ("sl<" with data/sample.vw piped to stdin), "py"
# a Python snippet; {D} is data/sample.vw,
# {S} an svmlight file, {Z} the sample gzipped, {T} the working directory
COMMANDS: list[tuple[str, list[str]]] = [
    ("sl", ["train", "--loss", "logistic", "{D}", "-f", "{T}/model.sl"]),  # README's first
    ("sl", ["train", "{D}", "--loss", "hinge"]),
    ("sl", ["train", "{D}", "--passes", "3", "-f", "{T}/p.sl"]),
    ("sl", ["predict", "-i", "{T}/model.sl", "{D}", "-p", "{T}/p.txt", "--link", "logistic"]),
    ("sl", ["inspect", "{T}/model.sl", "--top", "5"]),
    ("sl", ["train", "{S}", "-f", "{T}/svm.sl"]),
    ("sl", ["predict", "-i", "{T}/svm.sl", "{S}"]),
    ("sl", ["train", "{Z}", "--quiet"]),
    ("sl<", ["train", "--quiet"]),  # stdin: {D} through a pipe
    ("sl", ["train", "-q", "ff", "{D}", "--invert-hash", "{T}/inv.txt"]),
    ("sl", ["train", "--cubic", "fff", "{D}", "--readable-model", "{T}/r.txt"]),
    ("sl", ["train", "--interactions", "::", "{D}"]),  # wildcards: their own pass
    ("sl", ["train", "--sgd", "{D}"]),
    ("sl", ["train", "--sgd", "--l1", "1e-5", "{D}"]),
    ("sl", ["train", "--sgd", "--l2", "1e-4", "{D}"]),
    ("sl", ["train", "--sgd", "--l1", "1e-5", "--l2", "1e-4", "{D}"]),
    ("sl", ["train", "--algo", "tg", "--l1", "1e-4", "--period", "10", "{D}"]),
    ("sl", ["train", "--algo", "fobos", "--l1", "1e-5", "{D}"]),
    ("sl", ["train", "--algo", "fobos", "--l2", "1e-4", "{D}"]),
    ("sl", ["train", "--algo", "fobos", "--l1", "1e-5", "--l2", "1e-4", "{D}"]),
    ("sl", ["train", "--algo", "smidas", "--l1", "1e-5", "{D}"]),
    ("sl", ["train", "--ftrl", "--l1", "3", "--loss", "logistic", "{D}", "-f", "{T}/f.sl"]),
    ("sl", ["train", "--algo", "l0", "--top-k", "100", "{D}"]),
    ("sl", ["train", "--algo", "subgrad", "--l1", "1e-5", "{D}"]),
    ("sl", ["train", "--algo", "sgd", "--minibatch", "8", "{D}"]),
    ("sl", ["train", "--algo", "tg", "--minibatch", "8", "--l1", "1e-5", "{D}"]),
    ("sl", ["train", "--algo", "cd", "--l1", "1e-3", "{D}"]),
    ("sl", ["train", "--algo", "cd", "--l1", "1e-3", "--loss", "logistic", "{D}"]),
    ("sl", ["train", "--algo", "scd", "--l1", "1e-3", "{D}"]),
    ("sl", ["train", "--algo", "tg", "--l1", "0,1e-5", "{D}", "-f", "{T}/g-{{l1}}.sl"]),
    # issue 26: VW's --sgd is gd with its rules off; the papers' sgd; VW's other learners
    ("sl", ["train", "--algo", "sgd", "{D}"]),
    ("sl", ["train", "--coin", "{D}"]),
    ("sl", ["train", "--pistol", "--loss", "logistic", "{D}"]),
    ("sl", ["train", "--freegrad", "{D}"]),
    ("sl", ["train", "--loss", "quantile", "{D}"]),
    ("sl", ["vw", "-d", "{D}", "--loss_function", "logistic", "--ngram", "2", "--quiet"]),
    ("sl", ["vw", "-d", "{D}", "--affix", "+2,-3", "--quiet"]),  # (its pass after the parse)
    ("sl", ["vw", "-d", "{D}", "--spelling", "f", "--quiet"]),  # (the same pass)
    # --marginal: learning, a cache's batches, a model scored
    ("sl", ["vw", "-d", "{D}", "--marginal", "f", "--compete", "--quiet", "-f", "{T}/mg.vw"]),
    ("sl", ["vw", "-d", "{D}", "--marginal", "f", "-c", "--passes", "2", "-k", "--cache_file",
            "{T}/mg.cache", "--update_before_learn", "--quiet"]),
    ("sl", ["vw", "-d", "{D}", "--marginal", "f", "--compete", "-i", "{T}/mg.vw", "-t",
            "--quiet"]),
    # issue 39 and 37: multiline reductions, explorers, VW's other label kinds and formats
    ("py", [
        "import random\n"
        "from streamlearn.cli import cli\n"
        "r = random.Random(0); T = '{T}'\n"
        "cb, cs, mc, ml, csv, js = [], [], [], [], ['_label,a,b'], []\n"
        "for i in range(300):\n"
        "    k = r.randint(2, 5); c = r.randrange(k)\n"
        "    cb.append('shared |s u%d v%d' % (r.randrange(9), r.randrange(9)))\n"
        "    cb += [('0:%d:0.5 ' % r.randint(0, 1) if j == c else '') + '|a x%d y%d:0.5' % (j, "
        "r.randrange(9)) for j in range(k)] + ['']\n"
        "    cs += ['%d:%d |a x%d' % (j + 1, j != c, j) for j in range(k)] + ['']\n"
        "    y = r.randint(1, 3); mc.append('%d |f a%d b%d' % (y, y, r.randrange(5)))\n"
        "    ml.append('%d,%d |f a%d' % (y, 1 + y % 3, y))\n"
        "    csv.append('%d,%d,%d' % (y, r.randrange(5), y))\n"
        "    js.append('{{\"_label_cost\":%d,\"_label_probability\":0.5,\"_label_Action\":1,"
        "\"_labelIndex\":0,\"a\":[1,2],\"c\":{{\"s\":{{\"f\":\"%d\"}},\"_multi\":"
        "[{{\"a\":{{\"x\":1}}}},{{\"a\":{{\"y\":1}}}}]}},\"p\":[0.5,0.5]}}' % (y % 2, y))\n"
        "js2 = js + [js[0].replace('\"f\":', '\"f\":\"a\\\\tb\",\"g\":')]\n"
        "ia = ['%d |a 0:1 %d:0.5 9:2 |b 0:1 %d:2 9:1 |c w%d' % (2 * (i % 2) - 1, 1 + i % 4,\n"
        "      1 + i % 3, i % 5) for i in range(300)]\n"
        "for name, rows in (('cb', cb), ('cs', cs), ('mc', mc), ('ml', ml), ('c.csv', csv),\n"
        "                   ('j.json', js), ('j2.json', js2), ('ia', ia)):\n"
        "    open(T + '/' + name, 'w').write('\\n'.join(rows) + '\\n')\n"
        "runs = [['--cb_adf'], ['--cb_adf', '--cb_type', 'dr'], ['--cb_adf', '--cb_type', 'ips'],\n"
        "        ['--cb_explore_adf'], ['--cb_explore_adf', '--softmax', '--lambda', '3'],\n"
        "        ['--cb_explore_adf', '--bag', '3'], ['--cb_explore_adf', '--squarecb'],\n"
        "        ['--cb_explore_adf', '--first', '5'],\n"
        "        ['--cb_adf', '-q', 'sa', '-c', '--passes', '2'],\n"
        "        ]\n"
        "for a in runs:\n"
        "    cli.main(['vw', '-d', T + '/cb', '--quiet', '-p', T + '/cb.p', *a],\n"
        "             standalone_mode=False)\n"
        "for a in (['--csoaa_ldf', 'm', '-d', T + '/cs'], ['--csoaa_ldf', 'mc', '-d', T + '/cs'],\n"
        "          ['--cb', '3', '-d', T + '/cbk'], ['--cbify', '3', '-d', T + '/mc'],\n"
        "          ['--cb_explore', '3', '-d', T + '/cbk'],\n"
        "          ['--oaa', '3', '-d', T + '/mc', '-r', T + '/r'],\n"
        "          ['--oaa', '3', '--oaa_subsample', '1', '-d', T + '/mc'],\n"
        "          ['--multilabel_oaa', '3', '-d', T + '/ml'], ['--csv', '-d', T + '/c.csv'],\n"
        "          ['--dsjson', '--cb_explore_adf', '-d', T + '/j.json'],\n"
        "          ['--dsjson', '--cb_explore_adf', '-d', T + '/j2.json'],\n"
        "          ['--interact', 'ab', '-d', T + '/ia'],\n"
        "          ['--named_labels', 'a,b,c', '--oaa', '3', '-d', T + '/nl']):\n"
        "    if a[-1].endswith('cbk'):\n"
        "        open(a[-1], 'w').write(''.join('%d:%d:0.5 |f a%d\\n' % (1 + i % 3, i % 2, i % 5)"
        " for i in range(300)))\n"
        "    if a[-1].endswith('nl'):\n"
        "        open(a[-1], 'w').write(''.join('%s |f a%d\\n' % ('abc'[i % 3], i % 5) for i in "
        "range(300)))\n"
        "    cli.main(['vw', '--quiet', '-p', T + '/x.p', *a], standalone_mode=False)\n"
        "cli.main(['vw', '--csoaa', '3', '-d', T + '/cs1', '--quiet'], standalone_mode=False) "
        "if open(T + '/cs1', 'w').write(''.join('1:%d 2:1 3:0 |f a%d\\n' % (i % 2, i % 5) for i "
        "in range(300))) else None\n"
        "cli.main(['vw', '--cb_explore_adf', '-d', T + '/cb', '--quiet',"
        " '--report', T + '/r.json'],"
        " standalone_mode=False)\n"
        "cli.main(['train', '--cb-adf', '--explore', 'epsilon', T + '/cb', '-f', T + '/b.sl',"
        " '--quiet'], standalone_mode=False)\n"
        "cli.main(['predict', '-i', T + '/b.sl', T + '/cb', '-p', T + '/b.p'],"
        " standalone_mode=False)\n"
        "import streamlearn as sl\n"
        "m = sl.Model(cb_adf=True, explore='epsilon')\n"
        "m.learn('|u a', ['|a x', '|a y'], 1, 0.0, 0.5); m.choose('|u a', ['|a x', '|a y'])\n"
    ]),
    # session 19: the other explorers, CCB and slates, VW's model files of the multiline
    # reductions, --explore_eval, and VW's bootstrap, autolink, bfgs and options
    ("py", [
        "import random\n"
        "from streamlearn.cli import cli\n"
        "r = random.Random(1); T = '{T}'; D = '{D}'\n"
        "cb, ccb, sl8, cbk, reg = [], [], [], [], []\n"
        "for i in range(300):\n"
        "    k = r.randint(2, 5); c = r.randrange(k)\n"
        "    cb.append('shared |s u%d v%d' % (r.randrange(9), r.randrange(9)))\n"
        "    cb += [('0:%d:0.5 ' % r.randint(0, 1) if j == c else '') + '|a x%d y%d:0.5' % (j, "
        "r.randrange(9)) for j in range(k)] + ['']\n"
        "    ccb += ['ccb shared |s u%d' % r.randrange(9)] + ['ccb action |a x%d' % j for j in "
        "range(3)] + ['ccb slot %d:%d:0.5 |z s0' % (r.randrange(3), r.randint(0, 1)), "
        "'ccb slot |z s1', '']\n"
        "    sl8 += ['slates shared %d |s u%d' % (r.randint(0, 1), r.randrange(9)), "
        "'slates action 0 |a x1', 'slates action 0 |a x2', 'slates action 1 |a y1', "
        "'slates action 1 |a y2', 'slates slot 0:0.5 |z s0', 'slates slot 1:0.5 |z s1', '']\n"
        "    cbk.append('%d:%d:0.5 |f a%d b%d' % (1 + i % 3, i % 2, i % 5, r.randrange(4)))\n"
        "    reg.append('%0.2f |f a%d b%d:0.5' % (r.random(), r.randrange(5), r.randrange(4)))\n"
        "for name, rows in (('cb', cb), ('ccb', ccb), ('sl8', sl8), ('cbk', cbk), ('reg', reg)):\n"
        "    open(T + '/' + name, 'w').write('\\n'.join(rows) + '\\n')\n"
        "runs = [['-d', T + '/cb', '--cb_explore_adf', '--cover', '3'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--cover', '3', '--cb_type', 'dr'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--regcb'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--regcbopt'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--squarecb', '--elim'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--synthcover'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--rnd', '2'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--explore_eval'],\n"
        "        ['-d', T + '/cb', '--cb_explore_adf', '--first', '5', '-f', T + '/m.vw'],\n"
        "        ['-d', T + '/cb', '-i', T + '/m.vw', '-t'],\n"
        "        ['-d', T + '/ccb', '--ccb_explore_adf'],\n"
        "        ['-d', T + '/sl8', '--slates'],\n"
        "        ['-d', T + '/cbk', '--cb_explore', '3', '--cover', '3'],\n"
        "        ['-d', T + '/cbk', '--cb_explore', '3', '--bag', '2'],\n"
        "        ['-d', T + '/cbk', '--cb_explore', '3', '--passes', '2', '-c', '-k'],\n"
        "        ['-d', D, '--bootstrap', '3'], ['-d', T + '/reg', '--autolink', '2'],\n"
        "        ['-d', D, '--bfgs', '--passes', '3', '-c', '-k', '--holdout_off'],\n"
        "        ['-d', D, '-q', 'ff', '--permutations'], ['-d', D, '--feature_limit', '3'],\n"
        "        ['-d', D, '--random_weights'], ['-d', D, '--normal_weights'],\n"
        "        ['-d', D, '--loss_function', 'expectile', '--expectile_q', '0.3'],\n"
        "        ['-d', D, '--loss_function', 'logistic', '--logistic_min', '0'],\n"
        "        ['-d', D, '--extra_metrics', T + '/em.json'],\n"
        "        ]\n"
        "for a in runs:\n"
        "    cli.main(['vw', '--quiet', '-p', T + '/z.p', *a], standalone_mode=False)\n"
    ]),
    # every family a user can run, the legacy cb stack and --audit included (the list that
    # tests/system/test_kernels_shipped.py checks the shipped kernels against)
    ("lines", ["{T}"]),
    ("py", [
        "import numpy as np, streamlearn as sl\n"
        "X = np.random.default_rng(0).random((300, 5)); y = 1.0 + (X[:, 0] * 3).astype(int)\n"
        "sl.Model(oaa=3, loss='logistic').fit(X, y).predict_proba(X)\n"
        "sl.Model(oaa=3, algo='ftrl').fit(X, y).predict(X)\n"
    ]),
    ("py", [
        "import numpy as np, streamlearn as sl\n"
        "X = np.random.default_rng(0).random((200, 5)); y = np.sign(X[:, 0] - 0.5)\n"
        "m = sl.Model(loss='logistic').fit(X, y); m.predict(X)\n"
        "m.partial_fit(X, y); m.predict_proba(X)\n"
        "t = sl.Model(loss='logistic').fit(lines=['1 |a x y', '-1 |a z'])\n"
        "t.partial_fit(lines=['1 |a x']); t.predict(lines=['|a x'])\n"
        "sl.Model().fit('{D}').predict('{D}')\n"
    ]),
]


def _worker(times_path: str, kind: str, args: list[str]) -> None:
    """Run one command in this process, recording how long each kernel took to compile."""
    import threading

    from numba.core import event

    times: dict[str, float] = {}
    local = threading.local()

    class Timer(event.Listener):
        def on_start(self, ev):  # noqa: ANN001
            stack = getattr(local, "stack", [])
            local.stack = stack
            stack.append(time.perf_counter())

        def on_end(self, ev):  # noqa: ANN001
            started = local.stack.pop()
            func = ev.data["dispatcher"].py_func
            name = f"{func.__module__}.{func.__qualname__}".removeprefix("streamlearn.")
            if not local.stack and func.__module__.startswith("streamlearn."):
                times[name] = max(times.get(name, 0.0), time.perf_counter() - started)

    event.register("numba:compile", Timer())
    try:
        if kind == "py":
            exec(args[0], {})  # noqa: S102 - our own snippet
        elif kind == "lines":  # every family a user can run (scripts/kernel_lines.py)
            import kernel_lines

            for line in kernel_lines.every_line(Path(args[0])):
                if kernel_lines.run(line):
                    raise SystemExit(f"failed: sl {' '.join(line)}")
            kernel_lines.api_calls(Path(args[0]))
        else:
            from streamlearn.cli import cli

            cli.main(args, prog_name="sl", standalone_mode=False)
    finally:
        with open(times_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(times) + "\n")


def module_imports(path: Path) -> set[Path]:
    """The streamlearn modules that ``path`` imports at module level (not inside functions).

    ``from streamlearn.system import notices`` depends on ``system/notices.py``, not on
    the package's ``__init__`` (its docstring does not change a kernel)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:  # a submodule, else a name of the module
                    sub = f"{node.module}.{a.name}"
                    names.add(sub if _module_file(sub) else node.module)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(node, field, []) or []:
                        visit(part.body if isinstance(part, ast.ExceptHandler) else [part])

    visit(tree.body)
    return {f for f in map(_module_file, names) if f is not None}


def _module_file(name: str) -> Path | None:
    """The file of module ``name`` if it is one of streamlearn's (a package: its __init__)."""
    if not name.startswith("streamlearn."):
        return None
    rel = Path(*name.split(".")[1:])
    for candidate in (PACKAGE / rel.with_suffix(".py"), PACKAGE / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


JIT = PACKAGE / "system" / "jit.py"
"""Chooses which decorators kernels get (numba's, the interpreter's, the shipped loader's)
and generates no code: a kernel depends on the decorators' own module instead."""
JIT_NUMBA = PACKAGE / "system" / "jit_numba.py"


def dependencies(path: Path) -> dict[str, str]:
    """``path`` and every module it imports at module level, transitively: their SHA-256.
    ``system/jit.py`` counts as ``system/jit_numba.py``, whose options and intrinsics the
    compiled code is made of (:data:`JIT`)."""
    seen: set[Path] = set()
    todo = [path]
    while todo:
        p = JIT_NUMBA if todo[-1] == JIT else todo[-1]
        todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(module_imports(p) - seen)
    return {p.relative_to(PACKAGE).as_posix(): prebuilt.file_digest(p) for p in sorted(seen)}


def _subdirs() -> dict[str, Path]:
    """numba's cache subdirectory name of each package directory -> that directory."""
    from numba.core.caching import _CacheLocator

    dirs = [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]
    return {_CacheLocator.get_suitable_cache_subpath(str(d / "x.py")): d for d in dirs}


def build(out: Path, incremental: bool = False) -> None:
    """Compile the kernels the commands reach into a fresh cache and ship them in ``out``.
    ``incremental``: the commands load the kernels ``out`` ships whose sources are unchanged
    (compiling only the others), and what they compiled is merged into ``out``
    (:func:`_merge`): minutes instead of an hour on a machine without a kept work
    directory."""
    keep = os.environ.get("SL_BUILD_WORK")  # a directory kept: a failed build resumes there
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="sl-build-kernels-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        cache = work / "cache"
        times = work / "times.jsonl"
        svm = work / "sample.svm"
        gz = work / "sample.vw.gz"
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_data.py"), "--examples",
                        "3000", "--format", "svmlight", "--seed", "2", "-o", str(svm)],
                       check=True)  # fmt: skip
        gz.write_bytes(gzip.compress((ROOT / "data" / "sample.vw").read_bytes()))
        env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NUMBA_CPU_NAME=prebuilt.CPU,
                   NUMBA_CPU_FEATURES="", SL_PREBUILT="1" if incremental else "0", SL_JIT="1",
                   PYTHONPATH=str(ROOT))  # fmt: skip
        for k in ("NUMBA_DISABLE_JIT", "NUMBA_BOUNDSCHECK", "NUMBA_OPT", "NUMBA_DEBUGINFO"):
            env.pop(k, None)
        if keep:
            _purge(cache, work / RECORD)
        fill = {"D": str(ROOT / "data" / "sample.vw"), "S": str(svm), "Z": str(gz), "T": str(work)}
        started = time.perf_counter()
        for kind, args in COMMANDS:
            args = [a.format(**fill) for a in args]
            print("+", kind, " ".join(args)[:100], flush=True)
            feed = (ROOT / "data" / "sample.vw").read_bytes() if kind == "sl<" else None
            r = subprocess.run([sys.executable, __file__, "--worker", str(times), kind, "--",
                                *args], env=env, cwd=work, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, input=feed)  # fmt: skip
            if r.returncode:
                sys.stderr.write(r.stderr.decode(errors="replace")[-4000:])
                raise SystemExit(f"failed ({r.returncode}): {kind} {' '.join(args)}")
        print(f"compiled in {time.perf_counter() - started:.0f} s", flush=True)
        seconds: dict[str, float] = {}
        for line in times.read_text().splitlines():
            for name, t in json.loads(line).items():
                seconds[name] = round(max(seconds.get(name, 0.0), t), 2)
        if incremental:
            new = work / "new"
            _pack(cache, new, seconds)
            modules = _merge(out, new)
        else:
            modules = _pack(cache, out, seconds)
        (work / RECORD).write_text(json.dumps(modules, indent=1) + "\n")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    write_direct(out)


RECORD = "modules.json"
"""In a kept work directory: each kernel module's sources (its dependencies' SHA-256) when
its cache entries were last packed."""


def _purge(cache: Path, record: Path) -> None:
    """Drop the entries of a kept work directory's numba cache that a change made stale.

    numba checks an entry against its own module's file only, not against the helpers it
    inlined from other modules: an edited ``csoaa_ldf.py`` left ``cb_adf``'s kernels, built
    with the old helpers, in the cache, and they were shipped.  An entry stays only if its
    module's dependencies are those recorded when it was last packed (no record: none
    stays); an index of a function that moved, or of another tree's directory, goes too."""
    try:
        built = json.loads(record.read_text())
    except (OSError, ValueError):
        built = {}
    subdirs = _subdirs()
    dropped = 0
    for index in sorted(cache.glob("*/*.nbi")):
        base = index.name.removesuffix(".nbi")
        pkg_dir = subdirs.get(index.parent.name)
        module_file = pkg_dir / (base.split(".", 1)[0] + ".py") if pkg_dir else None
        keep = False
        if module_file is not None and module_file.is_file():
            module = module_file.relative_to(PACKAGE).as_posix()
            with open(index, "rb") as f:
                pickle.load(f)  # numba's version
                stamp, _ = pickle.loads(f.read())
            keep = (built.get(module) == dependencies(module_file)
                    and stamp == hashlib.sha256(module_file.read_bytes()).digest())  # fmt: skip
        if not keep:
            for f in index.parent.glob(f"{base}.*"):
                f.unlink()
            dropped += 1
    if dropped:
        print(f"{dropped} stale kernel entries dropped from {cache}", flush=True)


def _pack(cache: Path, out: Path, seconds: dict[str, float]) -> dict[str, dict[str, str]]:
    """Ship the kernels of ``cache`` into ``out``; each kernel module's dependencies."""
    subdirs = _subdirs()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    kernels, modules = [], {}
    for index in sorted(cache.glob("*/*.nbi")):
        pkg_dir = subdirs[index.parent.name]
        rel_dir = pkg_dir.relative_to(PACKAGE).as_posix()
        base = index.name.removesuffix(".nbi")
        module_file = pkg_dir / (base.split(".", 1)[0] + ".py")
        module = module_file.relative_to(PACKAGE).as_posix()
        with open(index, "rb") as f:
            pickle.load(f)  # numba's version
            stamp, overloads = pickle.loads(f.read())
        if stamp != hashlib.sha256(module_file.read_bytes()).digest():
            raise SystemExit(f"{module} changed while the kernels were built: run again")
        if module not in modules:
            modules[module] = dependencies(module_file)
        for (sig, magic, code), data_name in overloads.items():
            if magic[1:] != (prebuilt.CPU, ""):
                raise SystemExit(f"{base}: compiled for {magic}, not {prebuilt.CPU}")
            raw = slim((index.parent / data_name).read_bytes())
            name = f"{rel_dir}/{data_name}.z" if rel_dir != "." else f"{data_name}.z"
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(zlib.compress(raw, 9))
            kernels.append({"module": module, "base": base, "sig": str(sig), "code": list(code),
                            "file": name, "sha256": hashlib.sha256(raw).hexdigest()})  # fmt: skip
    manifest = {
        "format": prebuilt.FORMAT,
        "cpu": prebuilt.CPU,
        "environment": prebuilt.environment(),
        "modules": modules,
        "compile_seconds": dict(sorted(seconds.items())),
        "kernels": kernels,
    }
    (out / prebuilt.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{len(kernels)} kernels of {len(modules)} modules, {size / 1e6:.1f} MB in {out}")
    return modules


def _merge(out: Path, new: Path) -> dict[str, dict[str, str]]:
    """Merge the kernels packed in ``new`` (an incremental build's) into ``out``: ``out``'s
    entries of the modules whose sources are unchanged stay, those of changed modules go,
    ``new``'s are added (renamed where a file name is taken); the manifest says so."""
    old = json.loads((out / prebuilt.MANIFEST).read_text())
    add = json.loads((new / prebuilt.MANIFEST).read_text())
    if old["environment"] != add["environment"] or old["format"] != add["format"]:
        raise SystemExit(f"{out}: built in another environment: build it whole (no --incremental)")
    unchanged = {m: deps for m, deps in old["modules"].items()
                 if (PACKAGE / m).is_file() and dependencies(PACKAGE / m) == deps}  # fmt: skip
    key = lambda k: (k["module"], k["base"], k["sig"], tuple(k["code"]))  # noqa: E731
    added = {key(k) for k in add["kernels"]}
    kernels = [k for k in old["kernels"] if k["module"] in unchanged and key(k) not in added]
    taken = {k["file"] for k in kernels}
    for k in old["kernels"]:
        if k["file"] not in taken:
            (out / k["file"]).unlink(missing_ok=True)
    for k in add["kernels"]:
        name, n = k["file"], 0
        while name in taken:
            n += 1
            name = k["file"].removesuffix(".z") + f".{n}.z"
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(new / k["file"], out / name)
        taken.add(name)
        kernels.append({**k, "file": name})
    modules = {**unchanged, **add["modules"]}
    manifest = {**old, "modules": dict(sorted(modules.items())),
                "compile_seconds": dict(sorted({**old["compile_seconds"],
                                                **add["compile_seconds"]}.items())),
                "kernels": sorted(kernels, key=lambda k: (k["module"], k["base"], k["sig"]))}
    (out / prebuilt.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(add['kernels'])} kernels compiled, {len(kernels)} shipped in {out}")
    return modules


def _direct_code(t) -> object:  # noqa: ANN001 - a numba type
    """numba type ``t`` as :mod:`streamlearn.system.shipped` codes an argument's value
    (None: a type it does not code, so its kernels are left to numba)."""
    from numba.core import types

    if isinstance(t, types.IntegerLiteral | types.BooleanLiteral):
        # numba types an argument by its value when the kernel asks (ForceLiteralArg)
        return ["lit", str(t.literal_type), t.literal_value]
    if isinstance(t, types.Literal):
        return None
    if isinstance(t, types.Array):
        if not isinstance(t.dtype, types.Boolean | types.Integer | types.Float):
            return None
        if not t.aligned:
            return None  # (numba's typeof never makes one)
        return [str(t.dtype), t.ndim, t.layout, not t.mutable]
    if isinstance(t, types.Boolean | types.Integer | types.Float):
        return str(t)
    if isinstance(t, types.BaseTuple) and not isinstance(t, types.BaseNamedTuple):
        inner = [_direct_code(x) for x in t.types]
        bad = any(x is None or x[0] == "lit" for x in inner)
        return None if bad else ["tuple", *inner]
    return None


def write_direct(out: Path) -> None:
    """What :mod:`streamlearn.system.shipped` needs to call the kernels shipped in ``out``
    (this Python's directory) without importing numba: ``direct.json`` (for each entry its
    arguments coded by value type, its wrapper's and environments' symbols, the SHA-256 of
    its object code inside numba's entry; the C math functions numba maps; the manifest's
    SHA-256; the constants of its environments, numpy dtypes of the arrays it returns) and
    ``nrt.o.z``, numba's runtime compiled for the CPU level.  Entries with other constants
    or arguments of other types stay numba's."""
    import numba
    import numpy as np
    from numba.core import intrinsics
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target
    from numba.core.runtime import nrtdynmod

    if numba.config.CPU_NAME != prebuilt.CPU:
        env = dict(os.environ, NUMBA_CPU_NAME=prebuilt.CPU, NUMBA_CPU_FEATURES="")
        subprocess.run([sys.executable, __file__, "--direct", "-o", str(out.parent)], env=env,
                       check=True)  # fmt: skip
        return
    from streamlearn.system import shipped

    raw_manifest = (out / prebuilt.MANIFEST).read_bytes()
    manifest = json.loads(raw_manifest)
    entries, skipped = [], 0
    for k in manifest["kernels"]:
        raw = zlib.decompress((out / k["file"]).read_bytes())
        lib, fndesc, env, sig, objectmode, _, _, reload_init, refenvs = pickle.loads(raw)  # noqa: S301
        codes = [_direct_code(a) for a in sig.args]
        envs = [env, *refenvs]
        obj = lib[2][0] if lib[1] == "object" else b""
        symbol = fndesc.llvm_cpython_wrapper_name.removeprefix(shipped.WRAPPER)
        consts = {e.env_name: [c.str for c in e.consts] for e in envs if e.consts}
        dtypes = all(isinstance(c, np.dtype) for e in envs for c in e.consts)
        if (objectmode or reload_init or any(c is None for c in codes) or not dtypes
                or shipped.object_code(raw) != obj or not obj
                or fndesc.llvm_cpython_wrapper_name != shipped.WRAPPER + symbol
                or env.env_name != shipped.ENV + symbol
                or {e.env_name for e in envs} - set(shipped.environments(obj))):  # fmt: skip
            skipped += 1
            continue
        line = k["base"].rsplit("-", 1)[1]
        entries.append({
            "module": k["module"], "qualname": fndesc.qualname, "line": int(line.split(".")[0]),
            "args": codes, "code": k["code"], "file": k["file"],
            "sha256": hashlib.sha256(obj).hexdigest(), "symbol": symbol, "consts": consts,
        })  # fmt: skip
    context = cpu_target.target_context
    with global_compiler_lock:
        module, library = nrtdynmod.create_nrt_module(context)
        library.enable_object_caching()
        library.add_ir_module(module)
        library.finalize()
        _, _, (nrt, _) = library.serialize_using_object_code()
    (out / shipped.NRT).write_bytes(zlib.compress(nrt, 9))
    index = {"format": shipped.FORMAT, "manifest": hashlib.sha256(raw_manifest).hexdigest(),
             "defaults": shipped.DEFAULTS, "math": sorted(intrinsics.INTR_MATH),
             "nrt": hashlib.sha256(nrt).hexdigest(), "kernels": entries}  # fmt: skip
    (out / shipped.INDEX).write_text(json.dumps(index, separators=(",", ":")) + "\n")
    print(f"{out.name}: {len(entries)} of {len(entries) + skipped} kernels callable without numba")


def claimed_versions() -> list[str]:
    """The Python versions the package claims: pyproject.toml's ``Python :: 3.X`` classifiers."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        classifiers = tomllib.load(f)["project"]["classifiers"]
    prefix = "Programming Language :: Python :: 3."
    return [c.removeprefix("Programming Language :: Python :: ") for c in classifiers
            if c.startswith(prefix) and c.removeprefix(prefix).isdigit()]  # fmt: skip


def _dir_of(base: Path, version: str) -> Path:
    return base / prebuilt.tag(tuple(int(p) for p in version.split(".")))


def slim(raw: bytes) -> bytes:
    """numba's cache entry without its type annotation (the kernel's source with the type
    of every variable, for ``inspect_types``; the build's paths in it): 40% of the entries'
    bytes, 0.4 MB of 2.4 MB a Python version compressed.  Loading never reads it."""
    from numba.core.serialize import dumps  # what numba's cache writes its entries with

    data = pickle.loads(raw)  # noqa: S301 - numba's own entry, just compiled
    # CompileResult._reduce: libdata, fndesc, env, signature, objectmode, lifted, typeann, ...
    if isinstance(data, tuple) and len(data) == 9 and isinstance(data[6], str) and data[6]:
        return dumps((*data[:6], "", *data[7:]))
    return raw


def repack(out: Path) -> None:
    """:func:`slim` the entries of one Python's directory ``out`` in place (this Python's)."""
    manifest = json.loads((out / prebuilt.MANIFEST).read_text())
    before = after = 0
    for k in manifest["kernels"]:
        path = out / k["file"]
        packed = path.read_bytes()
        raw = zlib.decompress(packed)
        if hashlib.sha256(raw).hexdigest() != k["sha256"]:
            raise SystemExit(f"{path}: not the entry its manifest names")
        raw = slim(raw)
        k["sha256"] = hashlib.sha256(raw).hexdigest()
        new = zlib.compress(raw, 9)
        path.write_bytes(new)
        before, after = before + len(packed), after + len(new)
    (out / prebuilt.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{out}: {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB")


def stale_one(out: Path) -> list[str]:
    """Why the kernels in ``out`` (one Python's directory) do not match the current sources."""
    try:
        manifest = json.loads((out / prebuilt.MANIFEST).read_text())
    except (OSError, ValueError) as e:
        return [f"no manifest: {e}"]
    from streamlearn.system import shipped

    try:
        index = json.loads((out / shipped.INDEX).read_text())
    except (OSError, ValueError) as e:
        return [f"no {shipped.INDEX}: {e}"]
    raw = (out / prebuilt.MANIFEST).read_bytes()
    if index.get("manifest") != hashlib.sha256(raw).hexdigest():
        return [f"{shipped.INDEX} was written for another manifest (--direct rewrites it)"]
    changed: dict[str, list[str]] = {}
    for module, deps in manifest["modules"].items():
        now = dependencies(PACKAGE / module) if (PACKAGE / module).is_file() else {}
        for path, _ in set(now.items()) ^ set(deps.items()):
            changed.setdefault(path, []).append(module)
    return [f"{path} changed (used by {len(set(mods))} kernel modules: "
            f"{', '.join(sorted(set(mods))[:3])}{', ...' if len(set(mods)) > 3 else ''})"
            for path, mods in sorted(changed.items())]  # fmt: skip


def stale(base: Path = prebuilt.BASE) -> list[str]:
    """Why the shipped kernels of some claimed Python version are missing or do not match
    the current sources (empty: every version's do)."""
    why = []
    for version in claimed_versions():
        out = _dir_of(base, version)
        try:
            built = json.loads((out / prebuilt.MANIFEST).read_text())["environment"]["python"]
        except (OSError, ValueError, KeyError):
            built = None
        if built is not None and built.rstrip("dmu") != version:
            why.append(f"Python {version}: {out.name}/ was built with Python {built}")
        why.extend(f"Python {version}: {line}" for line in stale_one(out))
    unclaimed = sorted({p.name for p in base.glob("py3*") if p.is_dir()}
                       - {_dir_of(base, v).name for v in claimed_versions()})  # fmt: skip
    why.extend(f"{name}/: a Python version the classifiers do not claim" for name in unclaimed)
    return why


def interpreter_version(python: str) -> str | None:
    """``3.12`` for an interpreter that can build (imports numba), else None."""
    try:
        r = subprocess.run([python, "-c", "import sys, numba, numpy, click, mmh3, tqdm; "
                            "print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def interpreters(given: list[str], every: bool) -> dict[str, str]:
    """Version -> interpreter to build with: each ``--python`` given, and with ``every``
    the claimed versions not given, found as ``python3.X`` on PATH (this one for its own)."""
    chosen: dict[str, str] = {}
    for python in given:
        version = interpreter_version(python)
        if version is None:
            raise SystemExit(f"{python}: not a Python that imports numba, numpy, click, mmh3, "
                             "tqdm (a virtualenv with pip install -e .)")  # fmt: skip
        chosen[version] = python
    if not every:
        return chosen
    for version in claimed_versions():
        if version in chosen:
            continue
        here = f"{sys.version_info[0]}.{sys.version_info[1]}"
        python = sys.executable if version == here else shutil.which(f"python{version}")
        if python is None or interpreter_version(python) != version:
            raise SystemExit(f"no Python {version} with numba found (python{version} on PATH): "
                             f"pass --python /path/to/python{version}")  # fmt: skip
        chosen[version] = python
    return chosen


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3], sys.argv[5:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if any claimed Python's shipped kernels are missing or stale")
    ap.add_argument("--python", action="append", default=[], metavar="PATH",
                    help="build with this interpreter (repeatable)")
    ap.add_argument("--all", action="store_true", help="build for every claimed Python version")
    ap.add_argument("--incremental", action="store_true",
                    help="compile only the kernels whose sources changed; merge them into "
                         "the shipped ones")
    ap.add_argument("--repack", action="store_true",
                    help="only strip the type annotations of built entries (slim), in place")
    ap.add_argument("--direct", action="store_true",
                    help="only (re)write direct.json and nrt.o.z of built kernels (what sl "
                         "calls without importing numba)")
    ap.add_argument("-o", "--output", type=Path, default=prebuilt.BASE,
                    help="the directory of the per-version directories (py311/, ...)")
    a = ap.parse_args()  # fmt: skip
    if a.check:
        why = stale(a.output)
        here = prebuilt.environment()
        try:
            built = json.loads((a.output / prebuilt.tag() / prebuilt.MANIFEST).read_text())
        except (OSError, ValueError):
            built = {}
        for key, value in built.get("environment", {}).items():
            if here.get(key) != value:
                print(f"note: {key} is {here.get(key)!r} here, {value!r} in the build")
        for line in why:
            print(f"stale: {line}")
        if why:
            print("run: python scripts/build_kernels.py --all (or --python for each version)")
        sys.exit(1 if why else 0)
    step = (["--repack"] if a.repack else ["--incremental"] if a.incremental
            else ["--direct"] if a.direct else [])  # fmt: skip
    if not a.python and not a.all:
        if a.repack:
            repack(a.output / prebuilt.tag())
        elif a.direct:
            write_direct(a.output / prebuilt.tag())
        else:
            build(a.output / prebuilt.tag(), a.incremental)
        return
    for version, python in sorted(interpreters(a.python, a.all).items()):
        print(f"== Python {version}: {python}", flush=True)
        subprocess.run([python, __file__, *step, "-o", str(a.output)], check=True)


if __name__ == "__main__":
    main()
