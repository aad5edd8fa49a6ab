"""``from streamlearn import vowpalwabbit``: VW 9's Workspace over sl's live learners.

Each case is a VW user's few calls; with VW's package installed (the ``bench`` extra) sl's
answers are compared with VW's, value for value; without it, with VW's answers recorded
here (VW 9.11.9)."""

from __future__ import annotations

import pytest

from streamlearn import vowpalwabbit as sl

ADF = "shared |U u=1\n|A a=1\n|A a=2\n|A a=3"
ADF_LABELED = "shared |U u=1\n|A a=1\n0:-1:0.5 |A a=2\n|A a=3"


def _simple(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--quiet")
    w.learn("1 | a b")
    out = [w.predict("1 | a b")]
    w.learn("-1 | b c:2")
    out.append(w.predict("| a c"))
    return [*out, w.get_sum_loss(), w.get_weighted_examples(), w.num_weights(),
            int(w.get_prediction_type()), int(w.get_label_type())]  # fmt: skip


def _oaa(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--oaa 3 --quiet")
    w.learn("2 | a b")
    w.learn("3 | c")
    return [w.predict("| a b"), w.predict("| c"), int(w.get_prediction_type())]


def _explore(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--cb_explore_adf --epsilon 0.2 --quiet -q UA")
    out = [w.predict(ADF)]
    w.learn(ADF_LABELED)
    out.append(w.predict(ADF))
    return [*out, int(w.get_prediction_type()), int(w.get_label_type()), w.get_sum_loss(),
            w.get_weighted_examples()]  # fmt: skip


def _cb_adf(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--cb_adf --quiet")
    w.learn(ADF_LABELED)
    return [w.predict(ADF), int(w.get_prediction_type())]


def _keywords(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace(quiet=True, cb_explore_adf=True, epsilon=0.1, q="UA")
    w.learn(ADF_LABELED.split("\n"))  # (a list of lines)
    return [w.predict(ADF)]


def _logistic(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--quiet --link logistic --loss_function logistic")
    w.learn("1 | a b")
    return [w.predict("| a b")]


def _parsed(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--cb_explore_adf --quiet")
    ex = w.parse(ADF_LABELED, mod.LabelType.CONTEXTUAL_BANDIT)
    w.learn(ex)
    w.finish_example(ex)
    return [len(ex), w.predict(w.parse(ADF))]


def _probabilities(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--oaa 3 --loss_function logistic --probabilities --quiet")
    for line in ("1 | a b", "2 | b c", "3 | c d:2", "2 | a c"):
        w.learn(line)
    return [w.predict("| a b"), w.predict("| c"), int(w.get_prediction_type())]


CCB = ["ccb shared |User a b", "ccb action |A x", "ccb action |A y",
       "ccb slot 0:0.5:0.3 |S s1", "ccb slot |S s2"]  # fmt: skip
SLATES = ["slates shared 0.5 |User a", "slates action 0 |A x", "slates action 0 |A y",
          "slates action 1 |A z", "slates slot 0:0.5 |S s1", "slates slot 0:1 |S s2"]  # fmt: skip


def _ccb(mod):  # noqa: ANN001, ANN202
    """Each slot's decisions, a labeled example predicted (counted, not learned), then
    learned; VW's counters after each."""
    w = mod.Workspace("--ccb_explore_adf --quiet")
    out = [w.predict("\n".join(CCB)), w.get_sum_loss(), w.get_weighted_examples()]
    w.learn(CCB)
    return [*out, w.predict(CCB), w.get_sum_loss(), w.get_weighted_examples(),
            int(w.get_prediction_type()), int(w.get_label_type())]  # fmt: skip


def _slates(mod):  # noqa: ANN001, ANN202
    w = mod.Workspace("--slates --quiet")
    out = [w.predict(SLATES)]
    w.learn(SLATES)
    return [*out, w.predict(SLATES), int(w.get_prediction_type()), int(w.get_label_type())]


CASES = {f.__name__[1:]: f for f in (_simple, _oaa, _explore, _cb_adf, _keywords, _logistic,
                                      _parsed, _probabilities, _ccb, _slates)}  # fmt: skip
RECORDED = {  # VW 9.11.9's answers
    "simple": [0.5793799757957458, 0.09462402015924454, 3.0986195355653763, 4.0, 262144, 0, 1],
    "oaa": [2, 3, 4],
    "explore": [[0.3333333432674408] * 3,
                [0.06666667014360428, 0.8666666746139526, 0.06666667014360428], 3, 4,
                -0.6666666865348816, 3.0],
    "cb_adf": [[-0.33795419335365295, -0.5069313049316406, -0.33795419335365295], 2],
    "logistic": [0.6695289015769958],
    "probabilities": [[0.3990054130554199, 0.3891146779060364, 0.21187984943389893],
                      [0.25970956683158875, 0.43087396025657654, 0.3094165027141571], 1],
    "ccb": [[[(0, 0.5), (1, 0.5)], [(1, 1.0)]], 0.8333333134651184, 1.0,
            [[(1, 0.9750000238418579), (0, 0.02500000223517418)], [(0, 1.0)]],
            1.6666666269302368, 3.0, 8, 6],
    "slates": [[[(0, 0.5), (1, 0.5)], [(0, 1.0)]],
               [[(1, 0.9750000238418579), (0, 0.02500000223517418)], [(0, 1.0)]], 8, 7],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_vws_answers(case: str) -> None:
    got = CASES[case](sl)
    if case in RECORDED:
        assert got == RECORDED[case]
    vw = pytest.importorskip("vowpalwabbit")
    assert got == CASES[case](vw)


def test_predict_learns_nothing() -> None:
    w = sl.Workspace("--cb_explore_adf --epsilon 0.2 --quiet")
    first = w.predict(ADF_LABELED)  # (a label, and still nothing learned)
    assert w.predict(ADF) == first
    w.learn(ADF_LABELED)
    assert w.predict(ADF) != first
    lin = sl.Workspace("--quiet")
    lin.predict("1 | a")
    assert lin.predict("| a") == 0.0 and lin.get_weighted_examples() == 2.0


def test_the_model_goes_where_vw_reads_it(tmp_path) -> None:
    path = tmp_path / "m.vw"
    w = sl.Workspace(f"--cb_explore_adf --epsilon 0.2 --quiet -f {path}")
    w.learn(ADF_LABELED)
    want = w.predict(ADF)
    assert not path.exists()
    w.finish()
    again = sl.Workspace(f"-i {path} --quiet")  # (its options come with it, as VW's do)
    assert again.predict(ADF) == want
    vw = pytest.importorskip("vowpalwabbit")
    assert vw.Workspace(f"-i {path} --quiet").predict(ADF) == want


@pytest.mark.parametrize("argv, says", [
    ("-d data.vw", "-d and --daemon"),
    ("--passes 3", "--passes"),
    ("--new_mf 2", "not supported by sl"),
    ("--cbify 3", "--cbify: not yet"),
    ("--ccb_explore_adf --dsjson", "VW's text"),
    ("-p out.txt", "-p in a Workspace"),
    ("-f /nonexistent/dir/m.vw", "does not exist"),  # (at once, not after the learning)
    ("-f /", "is a directory"),
])  # fmt: skip
def test_what_it_does_not_take_is_said(argv: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        sl.Workspace(argv + " --quiet")


@pytest.mark.parametrize("argv, line, says", [
    ("--oaa 3", "1.5 | a b", "label is not a class"),  # (4: no class; -1: no label, as VW)
    ("", "x | a", "bad label"),
    ("--cb_explore_adf", "shared |s a\n0:1:7 |a b", "probability"),
])  # fmt: skip
def test_a_malformed_example_is_a_valueerror_naming_it(argv: str, line: str, says: str) -> None:
    w = sl.Workspace(argv + " --quiet")
    for call in (w.learn, w.predict):
        with pytest.raises(ValueError, match=says):
            call(line)


def test_a_label_minus_one_of_oaa_is_no_label_as_vw_reads_it() -> None:
    w = sl.Workspace("--oaa 3 --quiet")
    w.learn("-1 | a b")
    assert w.get_weighted_examples() == 1 and w.get_sum_loss() == 0
    assert w.num_weights() and w.get_weight(0) == 0 and w.predict("| a b") == 1


def test_keywords_make_vws_command_line() -> None:
    from streamlearn.vowpalwabbit.workspace import command_line

    assert command_line("--quiet", None, {"q": ["ab", "cd"], "epsilon": 0.1, "cb_adf": True,
                                           "bag": None, "first": False}) == \
        ["--quiet", "-q", "ab", "-q", "cd", "--epsilon", "0.1", "--cb_adf"]  # fmt: skip


def _log(seed: int, n: int, labeled: bool = True) -> list[str]:
    import random

    r = random.Random(seed)
    out = []
    for _ in range(n):
        u, chosen = r.randrange(5), r.randrange(4)
        lines = [f"shared |U u{u} t{r.randrange(3)}"]
        for a in range(4):
            pre = f"0:{r.choice([0.0, -1.0])}:0.25 " if labeled and a == chosen else ""
            lines.append(f"{pre}|A a{a} f{(a * u) % 7}")
        out.append("\n".join(lines))
    return out


def test_a_stateful_explorer_continues_through_model_files_both_ways(tmp_path) -> None:
    """--squarecb keeps a counter in its model: half a log learned, saved with -f, the rest
    learned after -i gives the pmfs of one uninterrupted run (and VW's, from VW's files or
    sl's, when VW's package is installed)."""
    data, test = _log(3, 300), _log(4, 50, labeled=False)
    args = "--cb_explore_adf -q UA --squarecb --quiet"
    whole = sl.Workspace(args)
    for d in data:
        whole.learn(d)
    want = [whole.predict(t) for t in test]
    mods = [sl]
    try:
        import vowpalwabbit as vw_module

        mods.append(vw_module)
    except ImportError:
        pass
    for writer in mods:
        path = tmp_path / f"half-{writer.__name__}.vw"
        w = writer.Workspace(f"{args} -f {path}")
        for d in data[:150]:
            w.learn(d)
        w.finish()
        for reader in mods:
            r = reader.Workspace(f"-i {path} --quiet")
            for d in data[150:]:
                r.learn(d)
            assert [r.predict(t) for t in test] == want, (writer.__name__, reader.__name__)


@pytest.mark.parametrize("kind", ["--ccb_explore_adf", "--slates"])
def test_ccb_rounds_are_vws_and_sl_vws(tmp_path, kind: str) -> None:
    """A CCB (slates) Workspace, round for round: predictions between the learned examples
    (counted, nothing learned), each as VW's package gives it; the model it saves is the
    one sl vw -f writes from the same examples, and VW continues it; with VW's package
    installed, every answer and counter VW's."""
    import subprocess
    import sys

    from tests.run.test_ccb_outputs import _logs
    from tests.run.test_ccb_outputs import _slates as slates_logs

    text = (_logs if kind == "--ccb_explore_adf" else slates_logs)(11, 40)
    examples = [[ln for ln in e.split("\n") if ln.strip()] for e in text.split("\n\n")
                if e.strip()]  # fmt: skip

    def rounds(mod, args: str, every: int = 3) -> list:  # noqa: ANN001
        w = mod.Workspace(args)
        out = []
        for i, ex in enumerate(examples):
            if every and i % every == 0:
                out.append(w.predict(ex))
            w.learn(ex)
            out.append((w.get_sum_loss(), w.get_weighted_examples()))
        w.finish()
        return out

    got = rounds(sl, f"{kind} --epsilon 0.2 -q :: --quiet")
    # (learned only: a prediction is counted in the model's counters, as VW's)
    rounds(sl, f"{kind} --epsilon 0.2 -q :: --quiet -f {tmp_path / 'api.vw'}", every=0)
    (tmp_path / "d.txt").write_text(text)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", kind, "--epsilon", "0.2",
                        "-q", "::", "-d", "d.txt", "-f", "ref.vw", "--quiet"], cwd=tmp_path,
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "api.vw").read_bytes() == (tmp_path / "ref.vw").read_bytes()
    vw = pytest.importorskip("vowpalwabbit")
    assert got == rounds(vw, f"{kind} --epsilon 0.2 -q :: --quiet")
    again = vw.Workspace(f"-i {tmp_path / 'api.vw'} --quiet")
    assert again.predict(examples[0]) == sl.Workspace(
        f"-i {tmp_path / 'api.vw'} --quiet").predict(examples[0])
