"""Contextual bandits through sl's own interface (``sl train --cb-adf ...``, ``sl predict``,
``Model.choose``/``Model.learn``): the same pmfs and weights as ``sl vw`` on the same data
(``sl vw`` is checked against VW 9.11.9 in tests/learners and tests/test_vw_suite.py)."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import numpy as np
import pytest

from streamlearn import api
from streamlearn import model as model_io
from streamlearn.api import Console, Inputs, Outputs
from streamlearn.run import bandit as bd
from streamlearn.run.multiline import Multiline, fit
from tests.cb_logs import adf_log

SETS = {
    "epsilon": ({"explore": "epsilon", "epsilon": 0.1}, {"explore": "greedy", "epsilon": 0.1}),
    "bag": ({"explore": "bag", "bags": 3}, {"explore": "bag", "bag": 3}),
    "squarecb": ({"explore": "squarecb"}, {"explore": "squarecb"}),
    "first": ({"explore": "first", "tau": 7}, {"explore": "first", "tau": 7}),
    "softmax-ips": ({"explore": "softmax", "lam": 2.0, "cb_type": "ips"},
                    {"explore": "softmax", "lam": 2.0, "cb_type": "ips"}),
    "dr": ({"cb_type": "dr"}, {"cb_type": "dr"}),
    "cover": ({"explore": "cover", "cover_policies": 2, "psi": 0.5},
              {"explore": "cover", "cover": 2, "psi": 0.5}),
    "regcbopt": ({"explore": "regcb", "regcbopt": True, "mellowness": 0.01},
                 {"explore": "regcb", "regcbopt": True, "mellowness": 0.01}),
    "squarecb-elim": ({"explore": "squarecb", "elim": True}, {"explore": "squarecb", "elim": True}),
    "synthcover": ({"explore": "synthcover", "synthcover_size": 5},
                   {"explore": "synthcover", "synthcoversize": 5}),
    "rnd": ({"explore": "rnd", "rnd_models": 2}, {"explore": "rnd", "rnd": 2}),
}  # fmt: skip


def _write(tmp: Path, name: str, text: str) -> str:
    p = tmp / name
    p.write_text(text)
    return str(p)


def _train(tmp: Path, opts: dict, files: list[str], final: str | None = None,
           initial: str | None = None,
           learn: dict | None = None) -> tuple[dict, list[str]]:  # fmt: skip
    pred = str(tmp / "p.txt")
    out = api.train_bandit(dict(learn or {}), {"cb_adf": True, **opts} if initial is None
                           else {}, Inputs(sources=files, initial_model=initial),
                           Outputs(predictions=pred, final_model=final), Console(True))  # fmt: skip
    return out, Path(pred).read_text().splitlines()


def _vw_fit(ml: dict, path: str, learn: dict | None = None):  # noqa: ANN202
    """``sl vw``'s run (run.multiline.fit) of the same options: its -p lines and weights."""
    f = fit(dict(learn or {}), Multiline(reduction="cb_adf", **ml), Inputs(sources=[path]),
            Console(True), predictions=True)  # fmt: skip
    lines = [ln for ln in "".join(f.predictions).splitlines() if ln]
    return f, lines


@pytest.mark.parametrize("name", sorted(SETS))
def test_train_equals_sl_vw_and_continues_exactly(tmp_path: Path, name: str) -> None:
    sl_opts, ml = SETS[name]
    a = _write(tmp_path, "a.txt", adf_log(11, 150))
    b = _write(tmp_path, "b.txt", adf_log(12, 120))
    ab = _write(tmp_path, "ab.txt", adf_log(11, 150) + adf_log(12, 120))
    whole, p_ab = _train(tmp_path, sl_opts, [ab], final=str(tmp_path / "ab.sl"))
    vw, p_vw = _vw_fit(ml, ab)
    assert p_ab == p_vw  # sl's -p: VW's lines without the blank lines between examples
    assert whole["loss"] == pytest.approx(vw.summary["loss"], rel=1e-12)
    m_ab = model_io.load(tmp_path / "ab.sl")
    assert np.array_equal(m_ab.table((0.0,) * 4, np.float32), vw.table)  # sl vw's weights
    _, p_a = _train(tmp_path, sl_opts, [a], final=str(tmp_path / "a.sl"))
    _, p_b = _train(tmp_path, {}, [b], final=str(tmp_path / "b.sl"),
                    initial=str(tmp_path / "a.sl"))  # fmt: skip
    assert p_a + p_b == p_ab
    m_b = model_io.load(tmp_path / "b.sl")
    assert np.array_equal(m_b.slots, m_ab.slots)
    assert np.array_equal(m_b.state, m_ab.state)
    assert np.array_equal(m_b.gstate, m_ab.gstate)
    assert m_b.meta["bandit"] == m_ab.meta["bandit"]


def test_predict_scores_without_learning(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.txt", adf_log(3, 100))
    b = _write(tmp_path, "b.txt", adf_log(4, 60))
    _train(tmp_path, {"explore": "epsilon"}, [a], final=str(tmp_path / "m.sl"))
    before = (tmp_path / "m.sl").read_bytes()
    pred = tmp_path / "q.txt"
    out = api.predict(Inputs(sources=[b], initial_model=str(tmp_path / "m.sl")),
                      Outputs(predictions=str(pred)), Console(True))  # fmt: skip
    assert out["examples"] == 60
    assert (tmp_path / "m.sl").read_bytes() == before
    # -t over the same model and data: the same pmfs; and they differ from learning ones
    _, p_t = _train(tmp_path, {}, [b], initial=str(tmp_path / "m.sl"), learn={"test_only": True})
    assert pred.read_text().splitlines() == p_t
    _, p_learn = _train(tmp_path, {}, [b], initial=str(tmp_path / "m.sl"))
    assert p_learn != p_t and p_learn[0] == p_t[0]


def test_cli_train_and_predict(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from streamlearn.cli.commands import cli

    a = _write(tmp_path, "a.txt", adf_log(5, 80))
    r = CliRunner().invoke(cli, ["train", "--cb-adf", "--explore", "bag", "--bags", "2",
                                 "--greedify", a, "-f", str(tmp_path / "m.sl"), "-p",
                                 str(tmp_path / "p.txt"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    _, p_vw = _vw_fit({"explore": "bag", "bag": 2, "greedify": True}, a)
    assert (tmp_path / "p.txt").read_text().splitlines() == p_vw
    r = CliRunner().invoke(cli, ["predict", "-i", str(tmp_path / "m.sl"), a, "-p",
                                 str(tmp_path / "q.txt"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["train", "--explore", "bag", a])
    assert r.exit_code != 0 and "--bags" in r.output
    r = CliRunner().invoke(cli, ["train", "--epsilon", "0.1", a])
    assert r.exit_code != 0


# --------------------------------------------------------------------------- the Python API


def _examples(text: str) -> list[tuple]:
    """(context, actions, label or None) of each multiline example of ``text``."""
    out = []
    for ex in text.strip("\n").split("\n\n"):
        ctx, acts, label = None, [], None
        for line in ex.split("\n"):
            if line.startswith("shared "):
                ctx = line[len("shared ") :]
                continue
            head, bar, rest = line.partition("|")
            if head.strip():
                _, c, p = head.strip().split(":")
                label = (len(acts), float(c), float(p))
            acts.append(bar + rest)
        out.append((ctx, acts, label))
    return out


@pytest.mark.parametrize("name", sorted(SETS))
def test_api_learn_equals_sl_vw(tmp_path: Path, name: str, monkeypatch) -> None:
    """One example a call (the one-call step: ``bandit._one``) learns what one call of
    all of them learns and what ``sl vw`` learns; ``choose`` between them counts nothing."""
    sl_opts, ml = SETS[name]
    stepped = []
    one_call = bd._one

    def counted(*a):  # noqa: ANN002, ANN202
        seen = one_call(*a)
        stepped.append(seen is not None)
        return seen

    monkeypatch.setattr(bd, "_one", counted)
    text = adf_log(21, 120, unlabeled=0.0)
    path = _write(tmp_path, "a.txt", text)
    vw, p_vw = _vw_fit(ml, path)
    exs = _examples(text)
    one = api.Model(cb_adf=True, **sl_opts)
    pmfs = []
    for i, (ctx, acts, lab) in enumerate(exs):
        if i % 3 == 0:  # choose() between learns changes nothing
            ch = one.choose(ctx, acts)
            # (the probability sampled with: the pmf's, negatives 0 and normalised, as VW's
            # sample_after_normalizing -- regcbopt and squarecb --elim give 1 to each
            # action they keep, --elim -1 to the others, as VW's)
            kept = np.maximum(ch.pmf, 0.0)
            assert 0 <= ch.action < len(acts) and ch.probability == pytest.approx(
                kept[ch.action] / kept.sum(), rel=1e-6)  # fmt: skip
        pmfs.append(one.learn(ctx, acts, *lab))
    many = api.Model(cb_adf=True, **sl_opts)
    batch = many.learn([e[0] for e in exs], [e[1] for e in exs], [e[2][0] for e in exs],
                       [e[2][1] for e in exs], [e[2][2] for e in exs])  # fmt: skip
    for line, p1, p2 in zip(p_vw, pmfs, batch, strict=True):
        want = np.zeros(len(p1))
        if ":" not in line:  # no explorer (dr alone): the actions by score, the first 1
            want[int(line.split(",")[0])] = 1.0
        for cell in line.split(",") if ":" in line else ():
            a, p = cell.split(":")
            want[int(a)] = float(p)
        assert np.allclose(p1, want, atol=5e-7) and np.array_equal(p1, p2)
    for m in (one, many):
        got = m._fitted()
        assert np.array_equal(got.table((0.0,) * 4, np.float32), vw.table)
    assert np.array_equal(one._bandit.stats, many._bandit.stats)
    if name in ("epsilon", "first", "softmax-ips", "dr"):  # (step_example's explorers)
        assert sum(stepped) >= len(exs)  # each single learn and choose: one kernel call
    one.save(tmp_path / "m.sl")
    back = api.Model.load(tmp_path / "m.sl")
    ctx, acts, _ = exs[0]
    assert np.array_equal(back.choose(ctx, acts, seed=5).pmf, one.choose(ctx, acts, seed=5).pmf)
    copy = pickle.loads(pickle.dumps(one))
    assert np.array_equal(copy.learn(ctx, acts, 0, 1.0, 0.5), one.learn(ctx, acts, 0, 1.0, 0.5))


def test_api_dicts_strings_and_sampling() -> None:
    m = api.Model(cb_adf=True, explore="epsilon", epsilon=0.2, seed=3)
    ctx_s = "|user u=tom |time morning"
    ctx_d = {"user": {"u": "tom"}, "time": ["morning"]}
    acts_s = ["|a sports x:2", "|a politics", "|a music"]
    acts_d = [{"a": {"sports": True, "x": 2}}, {"a": "politics"}, {"a": ["music"]}]
    assert bd.feature_text(ctx_d) == "|user u=tom |time morning"
    assert bd.feature_text(acts_d[0]) == "|a sports x:2.0"
    c1 = m.choose(ctx_s, acts_s, seed=11)
    c2 = m.choose(ctx_d, acts_d, seed=11)
    assert np.array_equal(c1.pmf, c2.pmf) and c1.action == c2.action
    assert c1.pmf.sum() == pytest.approx(1.0, abs=1e-6)
    # VW's sampling: the same seed, the same action; over seeds, the pmf's frequencies
    draws = m.choose([ctx_s] * 3000, [acts_s] * 3000)
    freq = np.bincount([d.action for d in draws], minlength=3) / 3000
    assert np.allclose(freq, c1.pmf, atol=0.04)
    m.learn(ctx_s, acts_s, 1, -1.0, c1.pmf[1])
    assert m.choose(ctx_s, acts_s, seed=1).pmf[1] == pytest.approx(0.8 + 0.2 / 3, rel=1e-6)
    with pytest.raises(ValueError):
        m.learn(ctx_s, acts_s, 3, 1.0, 0.5)  # not an action
    with pytest.raises(ValueError):
        m.learn(ctx_s, acts_s, 0, 1.0, 0.0)  # probability 0
    with pytest.raises(ValueError):
        m.choose({"a b": "x"}, acts_s)
    with pytest.raises(ValueError):
        api.Model(explore="nope")
    with pytest.raises(ValueError):
        api.Model().choose(ctx_s, acts_s)


def test_api_threads_lose_no_update() -> None:
    exs = _examples(adf_log(31, 80, unlabeled=0.0))
    m = api.Model(cb_adf=True, explore="epsilon")
    ref = api.Model(cb_adf=True, explore="epsilon")
    for ctx, acts, lab in exs:
        ref.learn(ctx, acts, *lab)

    def work(part: list) -> None:
        for ctx, acts, lab in part:
            m.learn(ctx, acts, *lab)

    # each thread learns its own examples; the counts add up to all of them
    ts = [threading.Thread(target=work, args=(exs[i::4],)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert m._bandit.stats[1] == ref._bandit.stats[1] == len(exs)


def test_api_fit_and_partial_fit_read_multiline_text(tmp_path: Path) -> None:
    text = adf_log(51, 90)
    path = _write(tmp_path, "a.txt", text)
    vw, _ = _vw_fit({"explore": "squarecb"}, path)
    m = api.Model(cb_adf=True, explore="squarecb").fit(path)
    assert np.array_equal(m._fitted().table((0.0,) * 4, np.float32), vw.table)
    assert m.report["examples"] == 90
    exs = text.strip("\n").split("\n\n")
    p = api.Model(cb_adf=True, explore="squarecb")
    p.partial_fit(lines="\n\n".join(exs[:40]) + "\n\n")
    p.partial_fit(lines=[line for ex in exs[40:] for line in (*ex.split("\n"), "")])
    assert np.array_equal(p._fitted().table((0.0,) * 4, np.float32), vw.table)
    with pytest.raises(ValueError):
        p.fit(np.zeros((2, 2)), [1, 2])


@pytest.mark.parametrize(("sl_opts", "ml", "kind"), [
    ({"csoaa_ldf": "m", "csoaa_rank": True}, {"reduction": "csoaa_ldf", "csoaa_rank": True}, "cs"),
    ({"csoaa_ldf": "mc"}, {"reduction": "csoaa_ldf", "classifier": True}, "cs"),
    ({"cb": 3}, {"reduction": "cb", "actions": 3}, "cb"),
])  # fmt: skip
def test_csoaa_ldf_and_cb_k_equal_sl_vw(tmp_path: Path, sl_opts: dict, ml: dict,
                                        kind: str) -> None:  # fmt: skip
    from tests.cb_logs import cb_log

    text = adf_log(61, 80, cs=True) if kind == "cs" else cb_log(62, 3, 150)
    path = _write(tmp_path, "a.txt", text)
    pred = tmp_path / "p.txt"
    api.train_bandit({}, sl_opts, Inputs(sources=[path]),
                     Outputs(predictions=str(pred), final_model=str(tmp_path / "m.sl")),
                     Console(True))  # fmt: skip
    f = fit({}, Multiline(**ml), Inputs(sources=[path]), Console(True), predictions=True)
    m = model_io.load(tmp_path / "m.sl")
    assert np.array_equal(m.table((0.0,) * 4, np.float32), f.table)
    got = pred.read_text().splitlines()
    vw = [b.strip("\n") for b in "".join(f.predictions).split("\n\n") if b.strip("\n")]
    if ml.get("classifier"):  # VW: one line per action line, the class on the predicted one
        vw = [str(max(int(x) for x in b.split("\n"))) for b in vw]
    assert got == vw


def test_api_predict_and_vws_model_file_of_a_bandit(tmp_path: Path) -> None:
    """``Model.predict`` on a bandit gives each example's pmf, as ``sl vw -t -p`` does,
    learning and counting nothing; ``save(format="vw")`` writes VW's model of the reduction,
    its options kept, which ``sl vw -i`` reads back to the same pmfs."""
    text = adf_log(7, 60)
    test = adf_log(8, 20)
    m = api.Model(cb_adf=True, explore="epsilon", epsilon=0.2).fit(_write(tmp_path, "a.txt", text))
    before = m._bandit.stats.copy()
    pmfs = m.predict(lines=test)
    assert len(pmfs) == 20 and all(abs(p.sum() - 1.0) < 1e-6 for p in pmfs)
    assert np.array_equal(m._bandit.stats, before)
    assert all(np.array_equal(a, b) for a, b in zip(pmfs, m.predict(lines=test), strict=True))
    path = str(tmp_path / "m.vw")
    m.save(path, format="vw")
    from streamlearn.vwargs import model_argv

    assert "--cb_explore_adf" in model_argv(path, []) and "--epsilon" in model_argv(path, [])
    again = api.Model.load(path)
    got = again.predict(lines=test)
    assert all(np.allclose(a, b) for a, b in zip(pmfs, got, strict=True))
    loaded = api.Model.load(_save_sl(m, tmp_path))
    assert all(np.array_equal(a, b) for a, b in zip(pmfs, loaded.predict(lines=test), strict=True))
    from streamlearn.errors import UsageError
    from streamlearn.run.mlmodel import start

    with pytest.raises(UsageError, match="continue it with sl train -i, or write VW's model"):
        start(_save_sl(m, tmp_path), Multiline(reduction="cb_adf", explore="greedy"), {})


def _save_sl(m: api.Model, tmp_path: Path) -> str:
    path = str(tmp_path / "m.sl")
    m.save(path)
    return path
