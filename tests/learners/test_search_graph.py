"""The graph labeller of learning to search (``--search_task graph``,
:mod:`streamlearn.reductions.search_graph`): its breadth-first order written plainly, then
``sl vw`` beside VW 9.11.9 on graphs of our own (loss, ``-p``, directed and hyper-edges,
no structure, a learner per pass, several passes, mixed roll-in, ``-q ::``), models both
ways, and one-line refusals.
"""

from __future__ import annotations

import random

import pytest

from tests import unix
from tests.unix import SL_VW, VW_MODULE


def _graphs(seed: int, n: int = 16, spaces: bool = False) -> str:
    """Graphs of 2-7 nodes (classes 1-3): edges, hyper-edges, some with a 0 between their
    sources and sinks; ``spaces``: the nodes' features in namespaces ``n``, ``m`` (or now
    and then ``z``) and the default one."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        size = r.randint(2, 7)
        labels = [r.randint(1, 3) for _ in range(size)]
        for i, y in enumerate(labels):
            if spaces:
                other = "z" if r.random() < 0.15 else "m"
                out.append(f"{y} |n f{y}_{r.randint(0, 2)} |{other} a{r.randint(0, 4)}:"
                           f"{r.random():.3f} | b{i % 3}")  # fmt: skip
                continue
            out.append(f"{y} |n f{y}_{r.randint(0, 2)} a{r.randint(0, 4)}:{r.random():.3f} "
                       f"b{i % 3}")  # fmt: skip
        for _ in range(r.randint(0, size + 1)):
            a, b = r.sample(range(1, size + 1), 2)
            rest = [x for x in range(1, size + 1) if x not in (a, b)]
            kind = r.random()
            if kind < 0.2 and rest:
                out.append(f"{a},{b},0,{r.choice(rest)} |e h{r.randint(0, 3)} x:{r.random():.2f}")
            elif kind < 0.35 and rest:
                out.append(f"{a},{b},{r.choice(rest)} |e t{r.randint(0, 3)}")
            else:
                out.append(f"{a},{b} |e e{labels[a - 1]}{labels[b - 1]} w:{r.random():.2f}")
        out.append("")
    return "\n".join(out) + "\n"


class _Tok:
    def __init__(self, labels: list[int]) -> None:
        self.multilabel = labels


def test_nodes_are_visited_breadth_first_component_by_component():
    """VW's ``run_bfs``: from node 1 through its edges' nodes, the next unreached node
    starting the next component."""
    from streamlearn.reductions.search_graph import Graph

    g = Graph()
    g.k = 3
    toks = [_Tok([1]) for _ in range(6)] + [_Tok([1, 4]), _Tok([4, 2]), _Tok([5, 6])]
    g.setup(None, toks)
    assert g.adj == [[6], [7], [], [6, 7], [8], [8]]
    assert g.bfs == [0, 3, 1, 2, 4, 5]


def _both(tmp_path, args: list[str]) -> tuple:
    vw = unix.run_module(VW_MODULE, [*args, "-p", "vw.p"], tmp_path)
    sl = unix.run_module(SL_VW, [*args, "-p", "sl.p"], tmp_path)
    shown = ("average loss", "total feature", "K=")
    lines = [[ln for ln in r.stderr.splitlines() if ln.startswith(shown)] for r in (vw, sl)]
    return lines, (tmp_path / "vw.p").read_text(), (tmp_path / "sl.p").read_text()


CASES = [
    ["--search", "3"],
    ["--search", "6", "--search_graph_num_loops", "2"],
    ["--search", "4", "--search_graph_no_structure", "--search_graph_num_loops", "3"],
    ["--search", "3", "--search_graph_separate_learners", "--search_graph_num_loops", "3",
     "--search_graph_directed"],
    ["--search", "3", "--search_graph_num_loops", "1", "--search_graph_separate_learners",
     "--passes", "2", "-c", "-k", "--holdout_off"],
    ["--search", "3", "--search_rollin", "mix_per_state", "--search_rollout", "mix_per_roll",
     "--search_alpha", "0.1"],
    ["--search", "3", "-q", "::", "--search_graph_num_loops", "3", "-b", "10"],
    ["--search", "3", "-q", "::", "--search_graph_directed", "--search_xv"],
]  # fmt: skip


@pytest.mark.parametrize("args", CASES)
def test_sl_vw_gives_vw_s_loss_and_predictions(tmp_path, args):
    """With ``-q ::`` the nodes carry several namespaces, some only now and then: VW's pairs
    of the namespaces seen so far, and the stale ones of its learning copy, are met."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_graphs(5, spaces="-q" in args))
    lines, vw_p, sl_p = _both(tmp_path, ["-d", "d.txt", "--search_task", "graph", *args])
    assert lines[1] == lines[0]
    assert sl_p == vw_p


@pytest.mark.parametrize("pairs", [[], ["-q", "::"]])
def test_models_move_both_ways(tmp_path, pairs):
    """A model sl writes gives VW's ``-t`` predictions when VW reads it, and VW's model
    gives them when sl reads it (``-q ::`` kept with it); their weights are the same."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_graphs(7, spaces=bool(pairs)))
    train = ["-d", "d.txt", "--search_task", "graph", "--search", "3", *pairs,
             "--search_graph_directed", "--search_graph_separate_learners",
             "--search_graph_num_loops", "3", "-c", "-k", "--passes", "2"]  # fmt: skip
    unix.run_module(VW_MODULE, [*train, "-f", "vw.m"], tmp_path)
    unix.run_module(SL_VW, [*train, "-f", "sl.m"], tmp_path)
    out = unix.scored_both_ways("d.txt", tmp_path)
    assert len(set(out.values())) == 1, out
    text = {}
    for model in ("vw", "sl"):
        unix.run_module(VW_MODULE, ["-i", f"{model}.m", "-t", "--readable_model",
                                    f"{model}.txt", "--quiet"], tmp_path)  # fmt: skip
        lines = (tmp_path / f"{model}.txt").read_text().splitlines()
        text[model] = [ln for ln in lines if ln.split(":")[0].isdigit()]
    assert text["sl"] == text["vw"]
    assert text["sl"]  # (the weights)


@pytest.mark.parametrize(("args", "said"), [
    (["-q", "ab"], "interactions"),
    (["--interactions", "::"], "interactions"),
    (["-q", "::", "--leave_duplicate_interactions"], "--leave_duplicate_interactions"),
    (["--search_neighbor_features", "-1:n"], "--search_neighbor_features"),
    (["--ftrl"], "--ftrl"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    (tmp_path / "d.txt").write_text(_graphs(1, n=2))
    r = unix.sl(["vw", "-d", "d.txt", "--search", "3", "--search_task", "graph", *args],
                tmp_path, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2, r.stderr
    unix.one_line_error(r.stderr)
    assert said in r.stderr


def test_a_graph_option_under_another_task_is_refused_as_vw_does(tmp_path):
    (tmp_path / "d.txt").write_text("1 | a\n2 | b\n\n")
    r = unix.sl(["vw", "-d", "d.txt", "--search", "3", "--search_task", "sequence",
                 "--search_graph_directed"], tmp_path, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2, r.stderr
    unix.one_line_error(r.stderr)
    assert "unrecognised option '--search_graph_directed'" in r.stderr


@pytest.mark.parametrize(("text", "said"), [
    ("1 | a\n1,2 |e x\n2 | b\n\n", "got a node after getting edges"),
    ("1,2 |e x\n\n", "got edges without any nodes"),
    ("1 | a\n2 | b\n1,5 |e x\n\n", "too large a node id: 5 > 2"),
    ("1 | a\n7 | b\n1,2 |e x\n\n", "class 7 is above 3"),
])  # fmt: skip
def test_a_malformed_graph_is_a_one_line_error(tmp_path, text, said):
    (tmp_path / "d.txt").write_text(text)
    r = unix.sl(["vw", "-d", "d.txt", "--search", "3", "--search_task", "graph"],
                tmp_path, capture_output=True, text=True)  # fmt: skip
    assert r.returncode != 0
    unix.one_line_error(r.stderr)
    assert said in r.stderr
