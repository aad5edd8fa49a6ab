"""Learning to search (``--search K --search_task T``): the base learner's kernels
(:mod:`streamlearn.learners.search`) against VW's csoaa over gd written densely
(``tests/reference``), the search's pieces against VW's definitions, then ``sl vw`` beside VW
9.11.9 on sequences of our own (loss, ``-p``, every task, the roll-in and roll-out
policies, conditioning and neighbour features, caching, subsampled time steps) and models
both ways.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamlearn.learners.base import G_T, fresh_table, make_params
from streamlearn.learners.oaa import G_CLASS
from streamlearn.reductions.search_draws import Rand48, hoopla, parse_neighbors
from tests import unix
from tests.reference import VWClassesGD
from tests.streams import random_stream
from tests.unix import SL_VW, VW_MODULE

F = np.float32
FLT_MAX = float(F(3.4028234663852886e38))


@pytest.mark.parametrize("opts", [{}, dict(adaptive=False), dict(normalized=False),
                                  dict(invariant=False), dict(l1=1e-3), dict(l2=1e-2),
                                  dict(power_t=0.25, initial_t=3.0)])  # fmt: skip
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernels_are_csoaa_over_gd_written_densely(opts, seed):
    """Predictions and cost-sensitive updates of 2 policies x 4 actions (8 sub-models in
    one table, slot h·8 + policy·4 + action − 1) against VW's csoaa over gd, dense: each
    listed action regresses toward its cost (the range widened by it first; a cost
    FLT_MAX is scored only), a prediction is the lowest unclipped score (the lower action
    on ties); the caller's clock is gd's t."""
    from streamlearn.learners import search as kernels

    k, policies, bits = 4, 2, 5
    width = k * policies
    stream = random_stream(seed, n=220, bits=bits, importance=False, unlabeled=False)
    rnd = random.Random(seed)
    params = make_params(oaa=width, indexing=1,
                         **{"learning_rate": 0.5, "initial_t": 0.0, **opts})  # fmt: skip
    table = fresh_table(bits + 3, (0.0, 0.0, 0.0, 0.0), np.float32)
    gstate = np.zeros(G_CLASS + 2 * width)
    from streamlearn.learners import gd as gd_mod

    gstate[gd_mod.G_CONTRACTION] = 1.0
    t0 = float(opts.get("initial_t", 0.0))
    if t0 > 0:
        gstate[G_CLASS] = gstate[G_CLASS + 1] = t0
    ref = dict(opts)
    ref["eta0"] = 0.5
    ref["t0"] = ref.pop("initial_t", 0.0)
    dense = VWClassesGD(stream.d, 0, width, **ref)
    classes = np.arange(1, k + 1, dtype=np.int64)
    scores = np.empty(k, dtype=np.float32)
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, x = stream.row(i)
        val = x.astype(np.float64)
        policy = rnd.randrange(policies)
        model0 = policy * k
        if rnd.random() < 0.3:
            got, _ = kernels.predict(table, gstate, params, idx, val, width, model0, classes,
                                     scores)  # fmt: skip
            s = [dense.score(model0 + c, 0.0, idx, x.astype(np.float32)) for c in range(k)]
            assert got == 1 + int(np.argmin(s))
            continue
        costs = [rnd.choice([0.0, 1.0, 0.5, 2.0, FLT_MAX]) for _ in range(k)]
        if dense.shared["T"] == 0.0:  # (the first costs widen the range: none later does)
            costs = [-0.5, 2.5, 1.0, FLT_MAX]
        dense.shared["T"] += 1.0
        gstate[G_T] = dense.shared["T"]
        kernels.learn(table, gstate, params, 0, idx, val, width, model0, classes,
                      np.asarray(costs, dtype=np.float32), np.empty(idx.shape[0], np.uint32),
                      scores)  # fmt: skip
        for c, cost in enumerate(costs):
            if cost != FLT_MAX:
                dense.widen(cost)
            p = dense.score(model0 + c, 0.0, idx, x.astype(np.float32))
            if cost == FLT_MAX:
                continue
            dense.step(model0 + c, idx, x.astype(np.float32), dense.clip(p), cost, 1.0)
    from streamlearn.learners import csoaa
    from streamlearn.learners.base import G_LABEL_MAX, G_LABEL_MIN
    from tests.classes import class_weights

    # (the range each cost widened, the first included)
    assert (gstate[G_LABEL_MIN], gstate[G_LABEL_MAX]) == (dense.lo, dense.hi)
    w = class_weights(csoaa.GD, table, gstate, params, width, stream.d)
    w_ref = dense.weights()
    scale = max(float(np.max(np.abs(w_ref))), 1e-30)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=3e-4 * scale)


def test_hoopla_and_the_generator_are_vw_s():
    """VW's hoopla order (Curtis's darts board: neighbours far apart), its merand48 and
    its encoding of neighbour features."""
    assert hoopla([0, 1, 2, 3]) == [2, 0, 3, 1]  # (traced by hand through search.cc)
    assert hoopla([3]) == [3] and hoopla([]) == []
    for n in range(2, 40):
        assert sorted(hoopla(list(range(n)))) == list(range(n))
    r = Rand48(0)
    # state 0 -> 2147483647 (VW's constant c): its bits 25..47 are 63
    assert r.next() == F(63 / (1 << 23))
    assert r.peek() == r.next()
    assert parse_neighbors("-1:w,+1:w") == [-(1 << 24) + ord("w"), (1 << 24) | ord("w")]
    assert parse_neighbors("2") == [(2 << 24) | ord(" ")]


# --------------------------------------------------------------------------- beside VW


def _sequences(seed: int, n: int = 60, k: int = 4, tags: bool = False) -> str:
    r = random.Random(seed)
    out = []
    for _ in range(n):
        for _ in range(r.randint(1, 8)):
            y = r.randint(1, k)
            words = " ".join(f"w{r.randrange(12)}" for _ in range(r.randint(1, 3)))
            out.append(f"{y} | {words} c{y if r.random() < 0.7 else r.randint(1, k)}"
                       f" |x p{r.randrange(3)}:{r.choice([0.5, 1, 2])}")  # fmt: skip
        out.append("")
    return "\n".join(out) + "\n"


def _spans(seed: int, n: int = 50) -> str:
    r = random.Random(seed)
    out = []
    for _ in range(n):
        last = 1
        for _ in range(r.randint(1, 7)):
            if last == 1 or r.random() < 0.5:
                y = r.choice([1, 1, 2, 4])
            else:
                y = last + 1 if last % 2 == 0 else last
            last = y
            out.append(f"{y} | t{r.randrange(8)} s{y}")
        out.append("")
    return "\n".join(out) + "\n"


def _relations(seed: int, n: int = 30) -> str:
    """Entity-relation sentences: E_i lines, then R_i_j for each pair (i < j)."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        ents = r.randint(1, 3)
        for i in range(ents):
            out.append(f"{r.randint(1, 4)} 1.0 E_{i}|F a{r.randrange(6)} b{r.randrange(4)}")
        for j in range(ents):
            for i in range(j):
                out.append(f"{r.choice([5, 6, 7, 10, 10])} 1.0 R_{i}_{j}|F r{r.randrange(5)}")
        out.append("")
    return "\n".join(out) + "\n"


def _both(tmp_path, args: list[str]) -> tuple:
    vw = unix.run_module(VW_MODULE, [*args, "-p", "vw.p"], tmp_path)
    sl = unix.run_module(SL_VW, [*args, "-p", "sl.p"], tmp_path)
    loss = [[ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
            for r in (vw, sl)]  # fmt: skip
    return loss, (tmp_path / "vw.p").read_text(), (tmp_path / "sl.p").read_text()


CASES = [
    ("seq", ["--search", "4", "--search_task", "sequence"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "-c", "-k", "--passes", "3",
             "--holdout_off"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "-c", "-k", "--passes", "3"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "--search_rollout", "none",
             "--search_history_length", "2"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "--search_rollin", "learn",
             "--search_rollout", "mix_per_roll", "--search_alpha", "0.01"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "--search_rollin", "mix_per_roll",
             "--search_rollout", "learn", "--search_no_caching", "--invariant"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "--search_subsample_time", "0.4",
             "--search_perturb_oracle", "0.2", "-b", "6"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "--search_subsample_time", "2",
             "--search_linear_ordering", "--search_max_bias_ngram_length", "2",
             "--search_max_quad_ngram_length", "1", "--search_history_length", "2"]),
    ("seq", ["--search", "4", "--search_task", "sequence",
             "--search_neighbor_features", "-1:x,1,-2", "--search_rollout_num_steps", "2"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "--search_interpolation", "policy",
             "--search_passes_per_policy", "2", "-c", "-k", "--passes", "4", "--holdout_off",
             "--search_beta", "0.3"]),
    ("seq", ["--search", "4", "--search_task", "sequence", "--search_xv", "--sgd"]),
    ("seq", ["--search", "4", "--search_task", "sequence_ctg", "--search_rollout", "none"]),
    ("seq", ["--search", "4", "--search_task", "sequence_ctg"]),
    ("seq", ["--search", "4", "--search_task", "multiclasstask"]),
    ("span", ["--search", "5", "--search_task", "sequencespan"]),
    ("span", ["--search", "5", "--search_task", "sequencespan", "--search_span_bilou",
              "--search_span_multipass", "2"]),
    ("arg", ["--search", "2", "--search_task", "argmax", "--cost", "3"]),
    ("arg", ["--search", "2", "--search_task", "argmax", "--max"]),
    ("er", ["--search", "10", "--search_task", "entity_relation", "--constraints"]),
    ("er", ["--search", "10", "--search_task", "entity_relation", "--search_order", "1",
            "--constraints", "--relation_cost", "2", "--entity_cost", "0.5"]),
    ("er", ["--search", "10", "--search_task", "entity_relation", "--search_order", "2",
            "--skip_cost", "0.1"]),
]  # fmt: skip


def _data(tmp_path, kind: str, seed: int) -> str:
    text = {"seq": lambda: _sequences(seed), "span": lambda: _spans(seed),
            "er": lambda: _relations(seed),
            "arg": lambda: _sequences(seed, k=2)}[kind]()  # fmt: skip
    path = tmp_path / f"{kind}.txt"
    path.write_text(text)
    return path.name


@pytest.mark.parametrize(("kind", "args"), CASES)
def test_sl_vw_gives_vw_s_loss_and_predictions(tmp_path, kind, args):
    pytest.importorskip("vowpalwabbit")
    data = _data(tmp_path, kind, 3)
    (vw_loss, sl_loss), vw_p, sl_p = _both(tmp_path, ["-d", data, *args])
    assert sl_loss == vw_loss
    assert sl_p == vw_p


@pytest.mark.parametrize("args", [
    ["--search_task", "sequence"],
    ["--search_task", "sequence", "--search_history_length", "2",
     "--search_neighbor_features", "-1,1"],
    ["--search_task", "sequencespan", "--search_span_bilou"],
])  # fmt: skip
def test_models_move_both_ways(tmp_path, args):
    """A model sl writes gives VW's ``-t`` predictions when VW reads it, and VW's model
    gives them when sl reads it; VW reads the two files as the same model."""
    pytest.importorskip("vowpalwabbit")
    data = _data(tmp_path, "span" if "sequencespan" in args else "seq", 5)
    train = ["-d", data, "--search", "5", *args, "-c", "-k", "--passes", "2"]
    unix.run_module(VW_MODULE, [*train, "-f", "vw.m"], tmp_path)
    unix.run_module(SL_VW, [*train, "-f", "sl.m"], tmp_path)
    out = unix.scored_both_ways(data, tmp_path)
    assert len(set(out.values())) == 1, out
    text = {}
    for model in ("vw", "sl"):
        unix.run_module(VW_MODULE, ["-i", f"{model}.m", "-t", "--readable_model",
                                    f"{model}.txt", "--quiet"], tmp_path)  # fmt: skip
        text[model] = (tmp_path / f"{model}.txt").read_text().split("\n", 1)[1]
    assert text["sl"] == text["vw"]  # (all but the version line)


@pytest.mark.parametrize(("args", "said"), [
    (["--search", "4"], "--search_task"),
    (["--search", "0", "--search_task", "sequence"], "at least 1"),
    (["--search", "4", "--search_task", "hook"], "hook"),
    (["--search", "4", "--search_task", "sequence", "-q", "ab"], "interactions"),
    (["--search", "4", "--search_task", "sequence", "--search_rollout", "bogus"], "bogus"),
    (["--search", "4", "--search_task", "sequence", "--search_metatask", "selective_branching"],
     "search_metatask"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    (tmp_path / "s.txt").write_text(_sequences(1, n=3))
    r = unix.sl(["vw", "-d", "s.txt", *args], tmp_path, capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    unix.one_line_error(r.stderr)
    assert said in r.stderr


def test_a_class_that_is_not_a_number_skips_its_sequence_and_says_where(tmp_path):
    """VW reads an integer class (``+3`` too: strtol); a word is not one (VW warns, reads 0
    and drops the line): sl skips that sequence, naming the file and line."""
    (tmp_path / "s.txt").write_text("1 | the\nbad | dog\n2 | man\n\n+3 | ate\n\n")
    r = unix.sl(["vw", "-d", "s.txt", "--search", "4", "--search_task", "sequence", "-p",
                 "p.txt"], tmp_path, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "s.txt line 2: the class 'bad' of a --search line is not a number" in r.stderr
    assert (tmp_path / "p.txt").read_text() == "1 \n"  # (the second sequence only)


def test_a_count_beyond_memory_is_refused_before_allocation(tmp_path):
    """``--search K`` sizes per-action state: a K beyond the memory available is refused
    (exit 8) before anything is allocated, given on the command line or in a model's options
    (which are data)."""
    import dataclasses

    from streamlearn.io import vwmodel

    (tmp_path / "s.txt").write_text(_sequences(1, n=3))
    r = unix.sl(["vw", "-d", "s.txt", "--search", "4000000000", "--search_task", "sequence"],
                tmp_path, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 8, r.stderr
    unix.one_line_error(r.stderr)
    unix.sl(["vw", "-d", "s.txt", "--search", "4", "--search_task", "sequence", "-f", "m.vw",
             "--quiet"], tmp_path, check=True)  # fmt: skip
    data = (tmp_path / "m.vw").read_bytes()
    h = vwmodel.read_header(data)
    big = h.options.replace("--search 4", "--search 4000000000")
    (tmp_path / "big.vw").write_bytes(vwmodel.encode_header(dataclasses.replace(h, options=big))
                                      + data[h.end:])  # fmt: skip
    r = unix.sl(["vw", "-d", "s.txt", "-t", "-i", "big.vw"], tmp_path, capture_output=True,
                text=True)  # fmt: skip
    assert r.returncode == 8, r.stderr
    assert "-i big.vw: from its options, --search 4000000000" in r.stderr
