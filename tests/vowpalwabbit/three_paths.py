"""Three workspaces of one command line over the same calls: the one kernel call of an
example (``Bandit.line``), the one-example parse then the learner's step (``one_example``
with ``line`` off), and the block path (both off).  The same answers and errors, call for
call, and the same state after (``tests/vowpalwabbit/test_cb_k.py``,
``test_cb_adf_one_call.py``)."""

from __future__ import annotations

import numpy as np

from streamlearn import vowpalwabbit as sl
from streamlearn.run.bandit import Bandit


def answer(w: sl.Workspace, example: object, learn: bool) -> object:
    """``learn`` or ``predict``'s answer, or the ``ValueError`` it raised."""
    try:
        return w.learn(example) if learn else w.predict(example)
    except ValueError as e:
        return ("ValueError", str(e))


def run_three(argv: str, examples: list, monkeypatch) -> tuple[list, dict[str, list]]:  # noqa: ANN001
    """Each example predicted then learned by the three workspaces (asserting equal
    answers); the workspaces, and what each path gave (None: it left the example on)."""
    fused, one, block = (sl.Workspace(argv + " --quiet") for _ in range(3))
    took: dict[str, list] = {"line": [], "one_example": []}
    originals = {name: getattr(Bandit, name) for name in took}

    def counted(name: str):  # noqa: ANN202
        def call(self, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
            took[name].append(originals[name](self, *args, **kw))
            return took[name][-1]

        return call

    for i, ex in enumerate(examples):
        for learn in (False, True):
            with monkeypatch.context() as m:
                m.setattr(Bandit, "line", counted("line"))
                a = answer(fused, ex, learn)
            with monkeypatch.context() as m:
                m.setattr(Bandit, "line", lambda *args, **kw: None)
                m.setattr(Bandit, "one_example", counted("one_example"))
                b = answer(one, ex, learn)
            with monkeypatch.context() as m:
                m.setattr(Bandit, "line", lambda *args, **kw: None)
                m.setattr(Bandit, "one_example", lambda *args, **kw: None)
                c = answer(block, ex, learn)
            assert a == b == c, (i, str(ex)[:200], a, b, c)
    return [fused, one, block], took


def assert_same_state(workspaces: list) -> None:
    """The first workspace's weights, sums, ``dr_prev`` and explorer statistics are the
    others'."""
    bf = workspaces[0]._live.bandit
    for other in workspaces[1:]:
        bs = other._live.bandit
        np.testing.assert_array_equal(bf.table, bs.table)
        np.testing.assert_array_equal(bf.gstate, bs.gstate)
        np.testing.assert_array_equal(bf.stats, bs.stats)
        np.testing.assert_array_equal(bf.dr_prev, bs.dr_prev)
        if bf.xp is not None:
            np.testing.assert_array_equal(bf.xp.xstats, bs.xp.xstats)
