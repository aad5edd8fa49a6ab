"""The ``sl`` process around a command (:mod:`streamlearn.system.process`)."""

from __future__ import annotations

import pytest

from tests.paths import ROOT
from tests.unix import sl


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["predict", str(ROOT / "data" / "sample.vw")], "Missing option '-i' / '--initial-model'"),
        (["plot", "report.json"], "Missing option '-o' / '--output'"),
        (["inspect"], "Missing argument 'MODEL'"),
    ],
)
def test_a_missing_option_or_argument_says_what_is_missing(tmp_path, args, missing):
    """click keeps the text of MissingParameter in format_message(), not in .message."""
    r = sl(args, tmp_path)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert f"Error: {missing}." in err
    assert f"Try 'sl {args[0]} --help' for help." in err
    assert r.stdout == b""
