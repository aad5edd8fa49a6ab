"""``sl train --dask``: an input without examples writes nothing; a failed report
leaves the model as it was (the same guarantees as a local run)."""

from __future__ import annotations

import hashlib

import pytest

from streamlearn.api import Console, Inputs, Outputs
from streamlearn.errors import NoExamples, OutputUnwritable
from tests.unix import text_data


def _train(client, sources, out, **kw):
    from streamlearn.distributed.driver import train

    ins = {k: kw.pop(k) for k in ("initial_model", "allow_empty") if k in kw}
    return train({"algo": "sgd"}, Inputs(sources=sources, **ins), Outputs(final_model=out, **kw),
                 client=client, console=Console(True))  # fmt: skip


def _digest(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def model(client, tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(text_data(400))
    m = tmp_path / "m.sl"
    _train(client, [str(data)], str(m))
    return m


@pytest.mark.parametrize("contents", [[b"", b""], [b"\n\n", b"x |f a\n"]])
def test_no_examples_on_any_worker_writes_nothing(client, tmp_path, model, contents):
    paths = []
    for k, c in enumerate(contents):
        (tmp_path / f"e{k}.vw").write_bytes(c)
        paths.append(str(tmp_path / f"e{k}.vw"))
    before = _digest(model)
    with pytest.raises(NoExamples):
        _train(client, paths, str(model), initial_model=str(model),
               report=str(tmp_path / "r.json"))  # fmt: skip
    assert _digest(model) == before and not (tmp_path / "r.json").exists()
    _train(client, paths, str(tmp_path / "empty.sl"), allow_empty=True)
    assert (tmp_path / "empty.sl").exists()


def test_a_report_that_cannot_be_written_leaves_the_model(client, tmp_path, model):
    data = tmp_path / "d2.vw"
    data.write_text(text_data(300, seed=3))
    before = _digest(model)
    with pytest.raises(OutputUnwritable):
        _train(client, [str(data)], str(model), initial_model=str(model), report="/dev/full")
    assert _digest(model) == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
