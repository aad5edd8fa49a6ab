"""``--plt K`` (:mod:`streamlearn.reductions.plt`, :mod:`streamlearn.learners.plt`) against VW
9.11.9 on multilabel data of our own: stderr (its table, its precision and recall under
``-t``), ``-p`` (labels in VW's order, ``--probabilities``, ``--top_k``, ``--threshold``) and
model files byte for byte, models read by the other program; libstdc++'s set order and heap
beside their C++ definitions; the refusals."""

from __future__ import annotations

import dataclasses
import heapq
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.io import vwmodel
from streamlearn.learners import plt, plt_std
from tests.reductions.test_lrq import _sl, needs_vw


def _data(path: Path, n: int, k: int, seed: int) -> None:
    """Multilabel lines over two namespaces: one to three classes (a class K or more now and
    then), values, tags, an unlabeled line now and then."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        labs = rnd.sample(range(k), rnd.choice([1, 1, 2, 3]))
        feats = " ".join(f"f{rnd.randrange(25)}:{rnd.uniform(-1, 2):.3f}"
                         for _ in range(rnd.randint(1, 4)))  # fmt: skip
        label = ",".join(map(str, labs)) if rnd.random() > 0.05 else ""
        tag = f" 't{i}" if rnd.random() < 0.2 else ""
        lines.append(f"{label}{tag} |a {feats} |b x{labs[0] % 3}")
    path.write_text("\n".join(lines) + "\n")


def _vw(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)  # fmt: skip


def _lines(text: str) -> list[str]:
    """stderr as compared: the output files' names and VW's ``initial_t`` line of a model
    read aside (sl shows a plain-rate model's t as its own), sl's note of a kernel
    compiled and VW's warnings of NaN updates (sl stalls the node without a word)."""
    skipped = ("final_regressor", "predictions", "initial_t", "Traceback", "  ", "warning",
               "compiling", "[warning] update")  # fmt: skip
    return [ln for ln in text.splitlines() if not ln.startswith(skipped)]


CASES = [
    (7, "--plt 7", 1),
    (12, "--plt 12 --kary_tree 3 -l 2 --power_t 0.3", 2),
    (9, "--plt 9 --kary_tree 4 --sgd", 3),
    (20, "--plt 20 --kary_tree 2 --l2 1e-6", 4),
    (6, "--plt 6 --kary_tree 4", 5),  # (its last node's children run past the tree)
    (30, "--plt 30 --sgd -l 0.5", 11),  # (unlabeled lines outnumber a node's updates: VW's
    # plain rate at t <= 0 is no step, and VW warns of its NaN update on each)
]


@needs_vw
@pytest.mark.parametrize(("k", "args", "seed"), CASES)
def test_learning_and_models_are_vws(tmp_path: Path, k: int, args: str, seed: int) -> None:
    """A training run: stderr and ``-p`` as VW's, the model file VW's (but for the next
    table line's place, which sl does not keep); then ``-t`` runs over each program's model
    by the other, with ``--top_k``, ``--threshold`` and ``--probabilities``."""
    _data(tmp_path / "d.vw", 120, k, seed)
    base = [*args.split(), "--loss_function", "logistic", "-b", "16", "-d", "d.vw"]
    rv = _vw([*base, "-f", "vw.model", "-p", "vw.p"], tmp_path)
    rs = _sl([*base, "-f", "sl.model", "-p", "sl.p"], tmp_path)
    assert rs.returncode == 0, rs.stderr
    assert _lines(rs.stderr) == _lines(rv.stderr)
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    vm, sm = (tmp_path / "vw.model").read_bytes(), (tmp_path / "sl.model").read_bytes()
    hv, hs = vwmodel.read_header(vm), vwmodel.read_header(sm)
    assert (hs.version, hs.options, hs.bits) == (hv.version, hv.options, hv.bits)
    kary = int(args.split("--kary_tree ")[1].split()[0]) if "--kary_tree" in args else 2
    ev, es = plt.section_end(vm, hv.end, k, kary), plt.section_end(sm, hs.end, k, kary)
    assert sm[hs.end : es] == vm[hv.end : ev]  # (the nodes' clocks)
    hv, hs = dataclasses.replace(hv, end=ev), dataclasses.replace(hs, end=es)
    cols = 1 if "--sgd" in args else 3  # (gd's plain rules keep the weights alone)
    bv, bs = vwmodel.read_body(vm, hv, cols), vwmodel.read_body(sm, hs, cols)
    np.testing.assert_array_equal(bs.slots, bv.slots)
    assert bs.values.tobytes() == bv.values.tobytes()
    dumps = ("current_pass", "dump_interval", "sum_loss_since_last_dump",
             "old_weighted_labeled_examples")  # fmt: skip
    for key in dumps:  # (where VW's table is: sl keeps none of it)
        bs.resume.pop(key), bv.resume.pop(key)
    assert bs.resume == bv.resume
    for run in (["--top_k", "1"], ["--top_k", str(min(k, 4)), "--probabilities"],
                ["--threshold", "0.2"], ["--probabilities"]):  # fmt: skip
        test = ["-t", "-d", "d.vw", "--loss_function", "logistic", *run]
        rv = _vw([*test, "-i", "sl.model", "-p", "vw_t.p"], tmp_path)
        rs = _sl([*test, "-i", "vw.model", "-p", "sl_t.p"], tmp_path)
        assert rs.returncode == 0, rs.stderr
        assert _lines(rs.stderr) == _lines(rv.stderr), run
        assert (tmp_path / "sl_t.p").read_bytes() == (tmp_path / "vw_t.p").read_bytes(), run


@needs_vw
def test_readable_model_is_vws(tmp_path: Path) -> None:
    """``--readable_model``: the nodes' clocks, then gd's weights, as VW writes them."""
    _data(tmp_path / "d.vw", 60, 8, 9)
    base = ["--plt", "8", "--kary_tree", "3", "--loss_function", "logistic", "-b", "14",
            "-d", "d.vw", "--quiet"]  # fmt: skip
    _vw([*base, "--readable_model", "vw.txt"], tmp_path)
    r = _sl([*base, "--readable_model", "sl.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.txt").read_text() == (tmp_path / "vw.txt").read_text()


def _cxx_set_order(inserts: list[list[int]]) -> list[list[int]]:
    """The reference: libstdc++'s unordered_set<uint32_t> (prime buckets, reused after
    ``clear``) written plainly, one list per bucket, the buckets' order as it links them."""
    out = []
    nbkt, nxt_resize = 1, 0
    for keys in inserts:
        order: list[int] = []  # the linked list
        for key in keys:
            if key in order:
                continue
            if len(order) + 1 > nxt_resize:
                least = max(len(order) + 1, 0 if nxt_resize else 11)
                if least >= nbkt:
                    want = max(least + 1, nbkt * 2)
                    if want < 14:
                        nbkt = int(plt_std.FAST[want])
                    else:
                        nbkt = int(next(b for b in plt_std.BUCKETS[6:] if b >= want))
                    nxt_resize = nbkt
                    relinked: list[int] = []  # _M_rehash_aux: each node to its bucket's front
                    for p in order:
                        same = [q for q in relinked if q % nbkt == p % nbkt]
                        relinked.insert(relinked.index(same[0]) if same else 0, p)
                    order = relinked
                else:
                    nxt_resize = nbkt
            b = key % nbkt
            same = [q for q in order if q % nbkt == b]
            if same:  # after the bucket's first node's predecessor: at the bucket's front
                order.insert(order.index(same[0]), key)
            else:
                order.insert(0, key)
        out.append(order)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_set_order_is_libstdcxx(seed: int) -> None:
    """The kernel's sets (:func:`streamlearn.learners.plt_std.insert`) list their keys as the
    plain model of libstdc++'s buckets does, across clears and growth."""
    rnd = random.Random(seed)
    batches = [rnd.sample(range(300), rnd.randint(1, 80)) for _ in range(6)]
    st = np.array([-1, 0, 1, 0], dtype=np.int64)
    keys, nxt = np.zeros(301, np.int64), np.zeros(301, np.int64)
    buckets = np.full(plt_std.MAX_BUCKETS, plt_std.EMPTY, np.int64)
    inset = np.zeros(301, np.bool_)
    got = []
    for batch in batches:
        plt_std.clear(st, keys, buckets, inset)
        for key in batch:
            plt_std.insert(st, keys, nxt, buckets, inset, key)
        out = np.zeros(301, np.int64)
        got.append(out[: plt_std.listed(st, keys, nxt, out)].tolist())
    want = _cxx_set_order(batches)
    assert got == want


def test_heap_pops_in_order() -> None:
    """std::push_heap/pop_heap: the largest first (ties as the heap leaves them)."""
    rnd = random.Random(3)
    values = [np.float32(rnd.random()) for _ in range(40)]
    hn, hp = np.zeros(64, np.int64), np.zeros(64, np.float32)
    size = 0
    for i, v in enumerate(values):
        size = plt_std.heap_push(hn, hp, size, i, v)
    got = []
    while size:
        _, p, size = plt_std.heap_pop(hn, hp, size)
        got.append(p)
    assert got == heapq.nlargest(40, values)


@pytest.mark.parametrize(("args", "why"), [
    ("--plt 10", "--loss_function=logistic"),
    ("--plt 10 --loss_function logistic --kary_tree 1", "--kary_tree 1"),
    ("--plt 1 --loss_function logistic", "--plt 1"),
    ("--plt 5 --loss_function logistic --top_k 6", "--top_k 6"),
    ("--plt 5 --loss_function logistic --oaa 3", "--plt with --oaa"),
    ("--plt 5 --loss_function logistic --link logistic", "--link logistic"),
    ("--plt 5 --loss_function logistic -r r.txt", "-r"),
    ("--plt 5 --loss_function logistic --plt_force_load_legacy_model", "legacy"),
])  # fmt: skip
def test_refused_in_one_line(tmp_path: Path, args: str, why: str) -> None:
    (tmp_path / "d.vw").write_text("0,1 | a\n")
    r = _sl([*args.split(), "-d", "d.vw"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert why in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
