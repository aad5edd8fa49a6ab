"""``streamlearn.vowpalwabbit.dftovw``: VW's DataFrame-to-lines converter, line for line.

VW's own examples (its docstrings) are checked as they read; with VW's package installed
(the ``bench`` extra) every frame below is converted by both and the lines (or the error's
type) compared, random frames included.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from streamlearn.vowpalwabbit import dftovw as sl  # noqa: E402

try:
    from vowpalwabbit import dftovw as vw
except ImportError:  # the bench extra's absence
    vw = None


def test_vws_examples_read_as_documented():
    df = pd.DataFrame({"y": [1], "a": [2], "b": [3], "c": [4]})
    assert sl.DFtoVW(df=df, label=sl.SimpleLabel("y"), features=sl.Feature("a")).convert_df() \
        == ["1 | a:2"]  # fmt: skip
    assert sl.DFtoVW(df=df, label=sl.SimpleLabel("y"),
                     features=[sl.Feature(c) for c in "ab"]).convert_df() == ["1 | a:2 b:3"]
    conv = sl.DFtoVW(df=df, label=sl.SimpleLabel("y"), namespaces=sl.Namespace(
        name="DoubleIt", value=2, features=sl.Feature(value="a", rename_feature="feat_a")))
    assert conv.convert_df() == ["1 |DoubleIt:2 feat_a:2"]
    conv = sl.DFtoVW(df=df, label=sl.SimpleLabel("y"), namespaces=[
        sl.Namespace(name="NS1", features=[sl.Feature(c) for c in "ac"]),
        sl.Namespace(name="NS2", features=sl.Feature("b"))])
    assert conv.convert_df() == ["1 |NS1 a:2 c:4 |NS2 b:3"]
    df2 = pd.DataFrame({"y": [1], "x1": [2], "x2": [3], "x3": [4]})
    assert sl.DFtoVW.from_column_names(y="y", x=["x1", "x2", "x3"], df=df2).convert_df() \
        == ["1 | x1:2 x2:3 x3:4"]  # fmt: skip


def test_the_lines_learn_in_a_workspace():
    from streamlearn.vowpalwabbit import Workspace

    df = pd.DataFrame({"y": [1.0, -1.0] * 20, "a": np.arange(40) % 3, "c": ["u v", "w"] * 20})
    lines = sl.DFtoVW(df=df, label=sl.SimpleLabel("y"),
                      features=[sl.Feature("a"), sl.Feature("c")]).convert_df()  # fmt: skip
    ws = Workspace("--quiet")
    for line in lines:
        ws.learn(line)
    assert ws.get_weighted_examples() == 40


def _frames() -> list[tuple[str, pd.DataFrame, object]]:
    """(what, frame, how to convert it: a function of the module)."""
    df = pd.DataFrame({
        "y": [1, -1, 1, 1], "w": [1.0, 2.5, 0.5, 3.0], "k": [1, 2, 3, 2], "k2": [2, 3, 1, 1],
        "f": [0.1, np.nan, -2.5e-7, 3.0], "f32": np.float32([0.1, 1.5, -3.25, 7.0]),
        "i": [0, 5, -3, 12], "s": ["red", "a b", None, "x:y|z"], "cost": [0.0, 1.0, 0.5, 2.0],
        "p": [0.25, 0.5, 1.0, 0.1], "a": [1, 2, 3, 4], "t": ["r1", "r2", "r3", "r4"],
        "b": [True, False, True, False], "bad name:1": [1, 2, 3, 4],
        "cat": pd.Categorical(["p", "q", "p", "q"]),
    })
    return [
        ("simple", df, lambda m: m.DFtoVW(df=df, label=m.SimpleLabel("y"),
                                          features=[m.Feature("f"), m.Feature("i")])),
        ("weight", df, lambda m: m.DFtoVW(df=df, label=m.SimpleLabel("y", "w"),
                                          features=m.Feature("f32"))),
        ("strings", df, lambda m: m.DFtoVW(df=df, label=m.SimpleLabel("y"),
                                           features=[m.Feature("s"), m.Feature("cat")])),
        ("string", df, lambda m: m.DFtoVW(df=df, label=m.SimpleLabel("y"),
                                          features=[m.Feature("s"), m.Feature("t")])),
        ("as_type", df, lambda m: m.DFtoVW(df=df, features=[
            m.Feature("i", as_type="categorical"), m.Feature("f", as_type="numerical"),
            m.Feature("t", rename_feature="the tag")])),
        ("multiclass", df, lambda m: m.DFtoVW(df=df, label=m.MulticlassLabel("k", "w"),
                                              features=m.Feature("f"))),
        ("multilabel", df, lambda m: m.DFtoVW(df=df, label=m.MultiLabel(["k", "k2"]),
                                              features=m.Feature("i"))),
        ("multilabels", df, lambda m: m.DFtoVW(df=df, label=[m.MultiLabel("k"),
                                                            m.MultiLabel("k2")],
                                               features=m.Feature("i"))),
        ("cb", df, lambda m: m.DFtoVW(df=df, label=m.ContextualbanditLabel("a", "cost", "p"),
                                      features=m.Feature("s"), tag="t")),
        ("cbs", df, lambda m: m.DFtoVW(df=df, label=[m.ContextualbanditLabel("a", "cost", "p"),
                                                     m.ContextualbanditLabel("k", "i", "p")],
                                       features=m.Feature("f"))),
        ("tag only", df, lambda m: m.DFtoVW(df=df, features=m.Feature("f"), tag="t")),
        ("namespaces", df, lambda m: m.DFtoVW(df=df, label=m.SimpleLabel("y"), namespaces=[
            m.Namespace(m.Feature("f"), name="user", value=0.5),
            m.Namespace([m.Feature("s"), m.Feature("bad name:1")], name="it em"),
            m.Namespace(m.Feature("i"))])),
        ("no label bool", df, lambda m: m.DFtoVW(df=df, features=m.Feature("b"))),
        ("column names", df, lambda m: m.DFtoVW.from_column_names(x=["f", "s"], df=df)),
        ("column names y", df, lambda m: m.DFtoVW.from_column_names(
            y=["k", "k2"], x="i", df=df, label_type="multi_label")),
        ("colnames", df, lambda m: m.DFtoVW.from_colnames(y="k", x=["f"], df=df,
                                                         label_type="multiclass_label")),
        # refused, as VW refuses them
        ("bool with label", df, lambda m: m.DFtoVW(df=df, label=m.SimpleLabel("y"),
                                                   features=m.Feature("b"))),
        ("class 0", df, lambda m: m.DFtoVW(df=df, label=m.MulticlassLabel("i"),
                                           features=m.Feature("f"))),
        ("float class", df, lambda m: m.DFtoVW(df=df, label=m.MulticlassLabel("w"),
                                               features=m.Feature("f"))),
        ("probability", df, lambda m: m.DFtoVW(df=df, label=m.ContextualbanditLabel(
            "a", "cost", "w"), features=m.Feature("f"))),
        ("missing", df, lambda m: m.DFtoVW(df=df, label=m.SimpleLabel("nope"),
                                           features=m.Feature("gone"))),
        ("both", df, lambda m: m.DFtoVW(df=df, features=m.Feature("f"),
                                        namespaces=m.Namespace(m.Feature("i")))),
        ("neither", df, lambda m: m.DFtoVW(df=df)),
        ("mixed list", df, lambda m: m.DFtoVW(df=df, label=[m.MultiLabel("k"),
                                                           m.ContextualbanditLabel("a", "cost",
                                                                                   "p")],
                                              features=m.Feature("f"))),
        ("value without name", df, lambda m: m.Namespace(m.Feature("f"), value=2)),
        ("as_type", df, lambda m: m.Feature("f", as_type="number")),
        ("label type", df, lambda m: m.DFtoVW.from_column_names(y="y", x="f", df=df,
                                                               label_type="cb")),
    ]


def _outcome(make, module) -> object:  # noqa: ANN001
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            conv = make(module)
            out = conv.convert_df() if hasattr(conv, "convert_df") else conv.process()
        except (TypeError, ValueError, KeyError) as e:
            out = type(e).__name__
    return out, len([w for w in seen if "renamed" in str(w.message)])


@pytest.mark.skipif(vw is None, reason="VW's package (the bench extra) is not installed")
@pytest.mark.parametrize("case", range(len(_frames())), ids=[c[0] for c in _frames()])
def test_the_lines_are_vws(case):
    _, _, make = _frames()[case]
    assert _outcome(make, sl) == _outcome(make, vw)


@pytest.mark.skipif(vw is None, reason="VW's package (the bench extra) is not installed")
@pytest.mark.parametrize("seed", range(20))
def test_random_frames_give_vws_lines(seed):
    r = random.Random(seed)
    n = r.randint(1, 30)
    cells = {
        "int": lambda: r.randint(-5, 5),
        "float": lambda: r.choice([r.uniform(-1e3, 1e3), float("nan"), 0.0, 1e-9, -2.5]),
        "str": lambda: r.choice(["a", "b c", "x:y", "|p", " pad ", "", None, "é"]),
    }
    cols = {}
    kinds = []
    for j in range(r.randint(1, 6)):
        kind = r.choice(list(cells))
        kinds.append(kind)
        cols[f"c{j}" if r.random() < 0.8 else f"c {j}:"] = [cells[kind]() for _ in range(n)]
    cols["y"] = [r.choice([-1, 1]) for _ in range(n)]
    df = pd.DataFrame(cols)
    names = [c for c in df.columns if c != "y"]

    def make(m):  # noqa: ANN001, ANN202
        r2 = random.Random(seed)
        feats = [m.Feature(c, as_type=r2.choice([None, None, "numerical", "categorical"]))
                 for c in names]  # fmt: skip
        if r2.random() < 0.5:
            return m.DFtoVW(df=df, label=m.SimpleLabel("y"), features=feats)
        half = max(1, len(feats) // 2)
        return m.DFtoVW(df=df, label=m.SimpleLabel("y"), namespaces=[
            m.Namespace(feats[:half], name="n", value=r2.choice([None, 2, 0.5])),
            *([m.Namespace(feats[half:])] if feats[half:] else [])])

    assert _outcome(make, sl) == _outcome(make, vw)
