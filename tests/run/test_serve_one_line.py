"""A server's one-line requests (``Served._one_line``: two kernel calls, no batch) are
answered as the batch path answers them, request for request.

Two :class:`Served` models see the same reads, one with the one-line path turned off;
every answer, and at the end the weights and counters, must be equal.  The reads include
what the one-line path leaves to the batch path (malformed lines, touching tags, several
lines at once, Python-float tokens) so that the paths alternate.
"""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.run.console import Console
from streamlearn.run.serve_model import Served
from streamlearn.run.serve_options import ServeOptions
from tests.vowpalwabbit.test_one_line_path import _lines

CASES = [
    (dict(), dict(learn=True, vw_format=True)),
    (dict(), dict(learn=True, vw_format=False)),
    (dict(loss="logistic"), dict(learn=True, vw_format=True, link="logistic")),
    (dict(loss="hinge", binary=True), dict(learn=True, vw_format=True)),
    (dict(interactions=("ab",)), dict(learn=True, vw_format=False)),
    (dict(algo="ftrl", bits=12), dict(learn=True, vw_format=True)),
]


@pytest.mark.parametrize(("config", "opts"), CASES)
def test_one_line_answers_as_the_batch_path(config: dict, opts: dict, monkeypatch) -> None:
    from streamlearn import api

    cfg = TrainConfig(**config)
    rng = np.random.default_rng(7)
    lines = [ln.encode() + b"\n" for ln in _lines(rng, 0)]
    model = api.Model(**config).fit(lines=[ln.decode() for ln in lines[:50]])._model
    took = []
    one_line = Served._one_line

    def counted(self, line):  # noqa: ANN001, ANN202
        took.append(one_line(self, line))
        return took[-1]

    for learn in (opts["learn"], False):
        o = ServeOptions(**{**opts, "learn": learn})
        fast = Served(model, cfg, o, Console(True))
        slow = Served(model, cfg, o, Console(True))
        for n, line in enumerate(lines, 1):
            with monkeypatch.context() as m:
                m.setattr(Served, "_one_line", counted)
                a = fast.answer(line, "c", n)
            with monkeypatch.context() as m:
                m.setattr(Served, "_one_line", lambda *args: None)
                b = slow.answer(line, "c", n)
            assert a == b, (line, a, b)
        if learn:
            np.testing.assert_array_equal(fast.learner.table, slow.learner.table)
            np.testing.assert_array_equal(fast.learner.gstate, slow.learner.gstate)
        np.testing.assert_array_equal(fast.stats, slow.stats)
        assert fast.checks.examples == slow.checks.examples
    assert sum(x is not None for x in took) > 500 and None in took  # (both paths ran)
