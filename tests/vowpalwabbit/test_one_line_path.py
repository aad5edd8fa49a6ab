"""A Workspace's one-line path (``Resident.learn_line``: one parse kernel call into kept
arrays, one learner call, no batch) gives what the batch path gives, call for call.

Two workspaces of the same command line see the same calls, one with the one-line path
turned off; every answer (or refusal), and at the end the weights, the learner's state and
its counters, must be equal.  The lines include what the one-line path leaves to the batch
path (malformed lines, a class outside ``--oaa K``, a tag touching ``|``, a value for
Python's ``float()``, two lines at once) so that the two paths alternate.
"""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import vowpalwabbit as sl
from streamlearn.run.resident import Resident


def _lines(rng: np.random.Generator, oaa: int) -> list[str]:
    out = []
    for _ in range(400):
        r = rng.random()
        if oaa:
            label = str(int(rng.integers(1, oaa + 1)))
        else:
            label = str(rng.choice(["1", "-1", "0", "0.5", "2"]))
        head = label
        if rng.random() < 0.2:
            head += f" {rng.choice(['0.5', '2', '1'])}"
        if rng.random() < 0.1:
            head += " 'tag"
        feats = " ".join(
            f"f{rng.integers(0, 40)}" + (f":{rng.choice(['0.5', '-1.25', '3', '1e-2'])}"
                                         if rng.random() < 0.4 else "")
            for _ in range(int(rng.integers(1, 6)))
        )  # fmt: skip
        line = f"{head} |a {feats} |b g{rng.integers(0, 5)}"
        if r < 0.03:
            line = "1 |a f:x:y"  # malformed
        elif r < 0.05:
            line = "7 |a f" if oaa else "1|a f1 f2"  # a class outside 1..K; a touching tag
        elif r < 0.06:
            line = "1 |a f:1.00000000000000000000000001"  # a value for Python's float()
        elif r < 0.07:
            line = f"{line}\n{line}"
        elif r < 0.1:
            line = f"|a {feats}"  # no label
        out.append(line)
    return out


ARGVS = [
    "--quiet",
    "--quiet -q ab --loss_function logistic --link logistic",
    "--quiet --binary --loss_function hinge",
    "--quiet --oaa 3",
    "--quiet --oaa 3 --probabilities --loss_function logistic",
    "--quiet --ftrl -b 12",
    "--quiet --coin --interactions ab",
    "--quiet --l1 1e-4 --l2 1e-3 --power_t 0.3",
]


def _answer(ws: sl.Workspace, line: str, learn: bool) -> object:
    try:
        return ws.learn(line) if learn else ws.predict(line)
    except ValueError as e:
        return ("ValueError", str(e))


@pytest.mark.parametrize("argv", ARGVS)
def test_one_line_path_answers_as_the_batch_path(argv: str, monkeypatch) -> None:
    rng = np.random.default_rng(len(argv))
    oaa = 3 if "--oaa" in argv else 0
    lines = _lines(rng, oaa)
    fast = sl.Workspace(argv)
    slow = sl.Workspace(argv)
    took = []
    one_line = Resident.learn_line

    def counted(self, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        took.append(one_line(self, *args, **kw))
        return took[-1]

    for line in lines:
        learn = rng.random() < 0.8
        with monkeypatch.context() as m:
            m.setattr(Resident, "learn_line", counted)
            a = _answer(fast, line, learn)
        with monkeypatch.context() as m:
            m.setattr(Resident, "learn_line", lambda *args, **kw: False)
            b = _answer(slow, line, learn)
        assert a == b, (line, a, b)
    assert sum(took) > 300 and not all(took)  # (both paths ran)
    rf, rs = fast._live.resident.learner, slow._live.resident.learner
    np.testing.assert_array_equal(rf.table, rs.table)
    np.testing.assert_array_equal(rf.gstate, rs.gstate)
    np.testing.assert_array_equal(rf.stats, rs.stats)
    assert fast.get_sum_loss() == slow.get_sum_loss()
    assert fast.get_weighted_examples() == slow.get_weighted_examples()
