"""``Model.partial_fit(lines=[line])`` and ``Model.predict(lines=[line])`` of one VW line
(two kernel calls, no batch: ``Resident.learn_line``, ``Scoring.score_line``, and
``Resident.score_line`` for a prediction after a live ``partial_fit``: no snapshot) give
what the batch path gives, call for call (the paths turned off in a twin model)."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import api
from streamlearn.run.resident import Resident, Scoring
from tests.vowpalwabbit.test_one_line_path import _lines

OPTIONS = [
    dict(),
    dict(loss="logistic", interactions=["ab"]),
    dict(loss="hinge", binary=True),
    dict(oaa=3, loss="logistic"),
    dict(algo="ftrl", bits=12),
    dict(algo="coin", loss="logistic"),
    dict(algo="pistol", binary=True, loss="logistic"),
    dict(l1=1e-4),  # (the live learner does not score: the snapshot's scorer settles l1)
]


def _call(m: api.Model, line: str, learn: bool, oaa: int) -> object:
    try:
        if learn:
            m.partial_fit(lines=[line])
            return None
        if oaa:
            return m.predict(lines=[line]).tolist(), m.predict_proba(lines=line).tolist()
        return m.predict(lines=[line], link="logistic").tolist()
    except ValueError as e:
        return ("ValueError", str(e))


@pytest.mark.parametrize("options", OPTIONS)
def test_one_line_calls_give_the_batch_path_s_answers(options: dict, monkeypatch,
                                                      tmp_path) -> None:  # fmt: skip
    rng = np.random.default_rng(3)
    oaa = options.get("oaa", 0)
    lines = _lines(rng, oaa)
    start = [ln for ln in lines[:40] if "\n" not in ln and ":x" not in ln and "7 |" not in ln]
    fast = api.Model(**options).fit(lines=start)
    slow = api.Model(**options).fit(lines=start)
    took = []
    learn_line, score_line = Resident.learn_line, Scoring.score_line
    live_score = Resident.score_line
    live = []

    def counted_learn(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        took.append(learn_line(self, *a, **kw))
        return took[-1]

    def counted_score(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        r = score_line(self, *a, **kw)
        took.append(r is not None)
        return r

    def counted_live(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        r = live_score(self, *a, **kw)
        took.append(r is not None)
        live.append(r is not None)
        return r

    for line in lines:
        learn = rng.random() < 0.7
        with monkeypatch.context() as m:
            m.setattr(Resident, "learn_line", counted_learn)
            m.setattr(Scoring, "score_line", counted_score)
            m.setattr(Resident, "score_line", counted_live)
            a = _call(fast, line, learn, oaa)
        with monkeypatch.context() as m:
            m.setattr(Resident, "learn_line", lambda *a, **kw: False)
            m.setattr(Scoring, "score_line", lambda *a, **kw: None)
            m.setattr(Resident, "score_line", lambda *a, **kw: None)
            b = _call(slow, line, learn, oaa)
        assert a == b, (line, a, b)
    assert sum(took) > 300 and not all(took)
    # the live learner scored the lines after a learned one, unless l1 is to be settled
    assert (sum(live) > 50) == (not options.get("l1")), sum(live)
    np.testing.assert_array_equal(fast.weights, slow.weights)
    # scoring on the live learner changed nothing: its table, state and counters
    fast.save(tmp_path / "fast.sl")
    slow.save(tmp_path / "slow.sl")
    assert (tmp_path / "fast.sl").read_bytes() == (tmp_path / "slow.sl").read_bytes()


def test_a_vw_model_scores_one_line_as_the_batch_path(tmp_path, monkeypatch) -> None:
    """A model read from VW's model file records no format ("auto"): a VW text line is
    scored by the one-line path, an svmlight line by the batch path, both as before."""
    fitted = api.Model().fit(lines=["1 |a x y", "-1 |a z", "1 |b q"] * 20)
    fitted.save(tmp_path / "m.vw", format="vw")
    m = api.Model.load(tmp_path / "m.vw")
    assert m.config.format == "auto"
    scored = []
    score_line = Scoring.score_line

    def counted(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        scored.append(score_line(self, *a, **kw))
        return scored[-1]

    for line in ["1 |a x", "|b q z", "1 3:1 7:0.5", "0 |a y"]:
        with monkeypatch.context() as mp:
            mp.setattr(Scoring, "score_line", counted)
            a = m.predict(lines=[line]).tolist()
        with monkeypatch.context() as mp:
            mp.setattr(Scoring, "score_line", lambda *a, **kw: None)
            b = m.predict(lines=[line]).tolist()
        assert a == b
    assert [x is not None for x in scored] == [True, True, False, True]


def test_a_list_of_interactions_continues_in_partial_fit() -> None:
    """``interactions=["ab"]`` (a list) fitted, then continued: it conflicted with the
    fitted model's own ``("ab",)``."""
    m = api.Model(interactions=["ab"]).fit(lines=["1 |a x |b y"] * 3)
    m.partial_fit(lines=["1 |a x |b y"])
    assert m.config.interactions == ("ab",)
