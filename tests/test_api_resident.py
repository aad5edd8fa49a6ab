"""The Python API's per-line path: a live learner between ``partial_fit(lines=...)`` calls,
a kept scorer between predictions, and a Model shared between threads."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

from streamlearn.api import Model
from streamlearn.learners.base import LIFETIME_STATS
from tests.unix import text_data

LINES = text_data(400, seed=3).splitlines()


def _same(a: Model, b: Model) -> None:
    ma, mb = a._model, b._model
    assert np.array_equal(ma.slots, mb.slots)
    assert np.array_equal(ma.weights, mb.weights)
    assert np.array_equal(ma.state, mb.state)
    assert np.array_equal(ma.gstate, mb.gstate)
    assert np.array_equal(ma.stats[LIFETIME_STATS], mb.stats[LIFETIME_STATS])


@pytest.fixture(scope="module")
def start():
    m = Model(loss="logistic")
    m.fit(lines=LINES[:100])
    return pickle.dumps(m)


@pytest.mark.parametrize("options", [{}, {"algo": "sgd", "l1": 1e-4}, {"algo": "ftrl"}])
def test_one_line_calls_learn_what_one_call_learns(options):
    a, b = Model(loss="logistic", **options), Model(loss="logistic", **options)
    a.fit(lines=LINES[:100])
    b.fit(lines=LINES[:100])
    for line in LINES[100:250]:
        a.partial_fit(lines=[line])  # live
    b.partial_fit(lines=LINES[100:250], quiet=True)  # a whole run (any run option: not live)
    _same(a, b)
    probe = LINES[300:320]
    assert np.array_equal(a.predict(lines=probe), b.predict(lines=probe))
    # the live learner continues after a capture (predict, save, pickle)
    a.partial_fit(lines=LINES[250:260])
    b.partial_fit(lines=LINES[250:260], quiet=True)
    _same(a, b)
    c = pickle.loads(pickle.dumps(a))
    _same(a, c)


def test_predictions_reuse_the_scorer_and_follow_learning(start):
    m = pickle.loads(start)
    one = [LINES[350]]
    p0 = m.predict(lines=one)
    assert np.array_equal(m.predict(lines=one), p0)
    for line in LINES[100:150]:
        m.partial_fit(lines=[line])
    assert not np.array_equal(m.predict(lines=one), p0)  # the new weights score


def test_threads_sharing_a_model_lose_no_update(start):
    m, ref = pickle.loads(start), pickle.loads(start)
    parts = [LINES[100:200], LINES[200:300]]
    errors = []

    def work(lines):
        try:
            for line in lines:
                m.partial_fit(lines=[line])
                m.predict(lines=[line])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    n0 = pickle.loads(start)._model.stats[LIFETIME_STATS][0]
    assert m._model.stats[LIFETIME_STATS][0] == n0 + 200  # every line learned once
    ref.partial_fit(lines=LINES[100:300], quiet=True)
    assert m._model.nnz > 0 and ref._model.nnz > 0


def test_a_failed_call_leaves_the_live_model_as_it_was(start, monkeypatch):
    """A call whose step diverges (raises) restores what its batch changed."""
    from streamlearn.errors import Diverged
    from streamlearn.run import resident

    m = pickle.loads(start)
    m.partial_fit(lines=[LINES[100]])
    before = m._model
    ref = pickle.loads(pickle.dumps(m))

    real = resident.run_kernel

    def diverging(*args, **kw):  # the kernel steps, and its prediction is not finite
        preds = real(*args, **kw)
        preds[:] = np.inf
        return preds

    monkeypatch.setattr(resident, "run_kernel", diverging)
    # the one-line path (Resident.learn_line) first: its step too, to be put back
    one_step = resident.OneLine.step

    def diverging_step(self, *args):  # noqa: ANN001, ANN002, ANN202
        preds = one_step(self, *args)
        preds[:] = np.inf
        return preds

    monkeypatch.setattr(resident.OneLine, "step", diverging_step)
    with pytest.raises(Diverged):
        m.partial_fit(lines=[LINES[101]])
    monkeypatch.undo()
    assert m._model is before  # nothing learned: the captured model stands
    m.partial_fit(lines=[LINES[102]])
    ref.partial_fit(lines=[LINES[102]])
    _same(m, ref)


def test_a_live_call_reports_its_figures_as_a_run_does(start):
    a, b = pickle.loads(start), pickle.loads(start)
    a.partial_fit(lines=LINES[100:110])  # live
    b.partial_fit(lines=LINES[100:110], quiet=True)  # a run
    ra, rb = a.report, b.report
    for key in ("examples", "weighted_example_sum", "average_loss", "nonzero_weights"):
        assert ra[key] == pytest.approx(rb[key]), key
    assert ra["curve"] == [] and ra["live"]
    assert pickle.loads(pickle.dumps(a)).report["examples"] == ra["examples"]
