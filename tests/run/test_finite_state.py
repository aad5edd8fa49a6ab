"""Non-finite learner state is never saved (issue 30, item 5).

``1 1e39 |f a`` put inf/NaN in gd's float32 state: the model was saved with
exit 0 and the weights it touched never moved again.  Now the line is skipped
and counted ("number too large"), and a state that still overflows (products
of allowed numbers) stops the run with exit 6 and no model.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.errors import Diverged
from streamlearn.run.finite import check_model
from tests.test_model import small_model
from tests.unix import invoke, one_line_error, text_data

ALGOS = [["--algo", a] for a in ("gd", "sgd", "tg", "fobos", "smidas", "ftrl", "cd", "scd")]
ALGOS += [["--algo", "l0", "--top-k", "5"], ["--algo", "gd", "--l1", "1e-4", "--l2", "1e-3"],
          ["--algo", "sgd", "--minibatch", "4"], ["--sgd", "--l2", "1e-3"]]  # fmt: skip


@pytest.mark.parametrize("algo", ALGOS, ids=lambda a: " ".join(a))
def test_huge_importance_weights_are_skipped_and_the_model_is_finite(tmp_path, algo):
    lines = text_data(300).splitlines()
    lines[10] = "1 1e39 |a x:1 |b w1"
    lines[20] = "-1 1e38 |a y"
    lines[30] = "1e30 |a z"
    lines[40] = "1 |a big:1e20"
    (tmp_path / "d.vw").write_text("\n".join(lines) + "\n")
    m, rep = tmp_path / "m.sl", tmp_path / "r.json"
    r = invoke(["train", *algo, str(tmp_path / "d.vw"), "-f", str(m), "--report", str(rep),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    assert report["skipped_reasons"] == {"number too large (magnitude above 1e18)": 4}
    model = model_io.load(m)  # loads: every number finite
    assert model_io.non_finite(model) is None
    r = invoke(["train", *algo, "-i", str(m), str(tmp_path / "d.vw"), "-f", str(m), "--quiet"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("lines,extra", [
    (["1e9 |f a:1e18 b:3e16"] * 20, []),  # label x value: gd's sum of squared gradients
    (["1 |a x:1e15 |b y:1e15"] * 5, ["-q", "ab"]),  # a cross of two allowed values
    (["1e17 1e18 |f a:1e17"] * 5, ["--algo", "ftrl"]),
])  # fmt: skip
def test_a_state_that_overflows_anyway_is_never_saved(tmp_path, lines, extra):
    d = tmp_path / "d.vw"
    d.write_text("\n".join(lines) + "\n")
    m = tmp_path / "m.sl"
    m.write_bytes(b"old")
    r = invoke(["train", str(d), "-f", str(m), *extra])
    assert r.exit_code == 6, r.output
    one_line_error(r.output)
    assert m.read_bytes() == b"old"


@pytest.mark.parametrize("array", ["state", "gstate", "stats"])
def test_check_model_looks_beyond_the_weights(array):
    m = small_model()
    a = getattr(m, array).copy()
    a.reshape(-1)[0] = np.inf
    setattr(m, array, a)
    assert np.all(np.isfinite(m.weights))
    with pytest.raises(Diverged, match="not finite at the end of training"):
        check_model(m)


def test_the_api_refuses_numbers_too_large():
    from scipy import sparse

    from streamlearn import api

    X = sparse.csr_matrix(np.eye(3))
    y = np.array([1.0, -1.0, 1.0])
    for kw in ({"sample_weight": [1.0, 1e300, 1.0]}, {"base": [0.0, 1e19, 0.0]}):
        with pytest.raises(ValueError, match="magnitude above 1e18"):
            api.Model().fit(X, y, **kw)
    with pytest.raises(ValueError, match="magnitude above 1e18"):
        api.Model().fit(X * 1e20, y)
    with pytest.raises(ValueError, match="magnitude above 1e18"):
        api.Model().fit(X, y * 1e30)
    with pytest.raises(ValueError, match="finite"):
        api.Model().fit(X, np.array([1.0, np.inf, 1.0]))
    m = api.Model().fit(lines=["1 1e39 |f a", "1 |f a", "-1 |f b"])
    assert m.report["skipped_lines"] == 1 and np.all(np.isfinite(m.weights))
