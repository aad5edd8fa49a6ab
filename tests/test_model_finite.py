"""``model.load`` refuses a model holding NaN or inf; ``model.save`` never writes one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn import model as model_io
from streamlearn.errors import ModelError
from tests.test_model import small_model
from tests.unix import invoke, one_line_error, text_data

ARRAYS = list(model_io.FINITE_ARRAYS)


def _poisoned(array: str, at: int, value: float) -> model_io.Model:
    m = small_model()
    a = getattr(m, array).copy()
    a.reshape(-1)[at % a.size] = value
    setattr(m, array, a)
    return m


def _write(model: model_io.Model, path) -> None:  # noqa: ANN001
    """A valid file (checksum and all) holding ``model``'s numbers, as an older sl, another
    program or a bit flip before the checksum was made could leave it: ``model.save``
    refuses to write one (and says so)."""
    from streamlearn.errors import Diverged

    before = path.read_bytes() if path.exists() else None
    with pytest.raises(Diverged, match="no model written"):
        model_io.save(model, path)
    assert (path.read_bytes() if path.exists() else None) == before
    path.write_bytes(model_io._encode(model))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(array=st.sampled_from(ARRAYS), at=st.integers(0, 10**6),
       value=st.sampled_from([np.nan, np.inf, -np.inf]))  # fmt: skip
def test_any_non_finite_number_is_refused(tmp_path, array, at, value):
    path = tmp_path / "bad.sl"
    _write(_poisoned(array, at, value), path)
    with pytest.raises(ModelError, match=model_io.FINITE_ARRAYS[array]):
        model_io.load(path)
    assert model_io.non_finite(model_io.decode(path.read_bytes())) == model_io.FINITE_ARRAYS[array]


def test_a_finite_model_loads():
    assert model_io.non_finite(small_model()) is None


@pytest.mark.parametrize("array", ARRAYS)
@pytest.mark.parametrize("command", ["predict", "train", "inspect"])
def test_every_command_refuses_it_in_one_line(tmp_path, array, command):
    """NaN weights used to score ``nan`` for every line with exit 0."""
    path = tmp_path / "bad.sl"
    _write(_poisoned(array, 0, np.nan), path)
    data = tmp_path / "d.vw"
    data.write_text(text_data(50))
    args = {"predict": ["predict", "-i", str(path), str(data), "-p", str(tmp_path / "p")],
            "train": ["train", "-i", str(path), str(data), "-f", str(path)],
            "inspect": ["inspect", str(path)]}[command]  # fmt: skip
    before = path.read_bytes()
    r = invoke(args)
    assert r.exit_code == 5, r.output
    one_line_error(r.output)
    assert "non-finite numbers" in r.output
    assert path.read_bytes() == before and not (tmp_path / "p").exists()


def test_the_api_refuses_it(tmp_path):
    from streamlearn import api

    path = tmp_path / "bad.sl"
    _write(_poisoned("state", 0, np.inf), path)
    with pytest.raises(ModelError):
        api.Model.load(path)
