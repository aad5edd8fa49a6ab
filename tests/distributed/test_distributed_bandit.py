"""``sl train --dask`` of a bandit: shards cut at example ends, one rank equal to ``sl train``,
several ranks averaged after each pass, what is refused.

The shard cutter is checked without Dask; the rest runs on a LocalCluster of two worker
processes, shared by this module's tests, and skips when Dask is not installed.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from streamlearn import api
from streamlearn import model as model_io
from streamlearn.api import Console, Inputs, Outputs
from streamlearn.errors import UsageError
from streamlearn.io.ranges import cut_examples, read_all
from tests.cb_logs import adf_log


def _examples(data: bytes) -> list[bytes]:
    """The examples of ``data``, each ended by a line of only blanks (VW's rule)."""
    return [e for e in re.split(rb"(?:^|\n)[ \t\r]*\n", data) if e.strip()]


@pytest.mark.parametrize("seed", range(12))
def test_cuts_fall_between_examples(tmp_path, seed):
    """Every example in exactly one shard, whole, in order, whatever the number of pieces
    (blank lines of spaces and CRLF files too)."""
    rng = random.Random(seed)
    lines = []
    for e in range(rng.randint(1, 60)):
        if rng.random() < 0.7:
            lines.append(f"shared |s u{e}")
        for a in range(rng.randint(1, 5)):
            lines.append(f"{'0:1:0.5 ' if a == 0 else ''}|a x{a} " + "y " * rng.randint(0, 40))
        lines.append(rng.choice(["", " ", "\t", "\r"]))
    data = ("\n".join(lines) + "\n").encode()
    p = tmp_path / "logs.txt"
    p.write_bytes(data)
    for pieces in (1, 2, 3, 7, 50):
        shards = cut_examples(str(p), pieces)
        got = [read_all(s) for s in shards]
        assert b"".join(got) == data
        assert sum(len(_examples(g)) for g in got) == len(_examples(data))
        assert all(s.start < s.end for s in shards)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cbdask")
    p = d / "logs.txt"
    p.write_text(adf_log(5, 3000, kmax=4))
    return str(p)


def _train(bandit, sources, out, client=None, ranks=None, **learn):  # noqa: ANN001, ANN202
    inputs = Inputs(sources=list(sources))
    outputs = Outputs(final_model=str(out))
    if client is None:
        return api.train_bandit(dict(learn), bandit, inputs, outputs, Console(True))
    from streamlearn.distributed import bandit as dist
    from streamlearn.run.bandit_options import multiline_of

    return dist.train(dict(learn), multiline_of(bandit), inputs, outputs, client=client,
                      ranks=ranks, console=Console(True))  # fmt: skip


@pytest.mark.parametrize("bandit", [
    {"cb_adf": True},
    {"cb_adf": True, "explore": "squarecb"},
    {"cb_adf": True, "cb_type": "dr", "explore": "first", "tau": 50},
])  # fmt: skip
def test_one_rank_is_sl_train(client, logs, tmp_path, bandit):
    """One rank: nothing averaged, the same model file as sl train's, state and all."""
    _train(bandit, [logs], tmp_path / "one.sl", passes=2)
    _train(bandit, [logs], tmp_path / "dask.sl", client=client, ranks=1, passes=2)
    assert (tmp_path / "one.sl").read_bytes() == (tmp_path / "dask.sl").read_bytes()


def test_two_ranks_learn_every_example_once(client, logs, tmp_path):
    """Two ranks: every example learned once a pass, the averaged policy about as good as
    one process's, and the model continues and scores as any bandit model."""
    one = _train({"cb_adf": True}, [logs], tmp_path / "one.sl", passes=3)
    two = _train({"cb_adf": True}, [logs], tmp_path / "two.sl", client=client, ranks=2,
                 passes=3)  # fmt: skip
    assert two["ranks"] == 2 and two["examples"] == one["examples"]
    assert abs(two["loss"] - one["loss"]) < 0.05
    m = model_io.load(str(tmp_path / "two.sl"))
    assert m.meta["multiline"]["reduction"] == "cb_adf"
    again = api.train_bandit({}, {}, Inputs(sources=[logs], initial_model=str(tmp_path / "two.sl")),
                             Outputs(), Console(True))  # fmt: skip
    assert again["examples"] == one["examples"] // 3


def test_refused(client, logs, tmp_path):
    with pytest.raises(UsageError, match="-p"):
        from streamlearn.distributed import bandit as dist

        dist.train({}, {"reduction": "cb_adf"}, Inputs(sources=[logs]),
                   Outputs(predictions=str(tmp_path / "p")), client=client)  # fmt: skip
    with pytest.raises(UsageError, match="stdin"):
        dist.train({}, {"reduction": "cb_adf"}, Inputs(sources=["-"]), Outputs(), client=client)
    assert not np.any([p.name == "p" for p in tmp_path.iterdir()])
