"""``sl vw --print`` next to VW 9.11.9: VW's print learner in gd's place writes each example
on stderr (a labeled one twice: at predict and at learn), predicts 0 and learns nothing;
stderr byte for byte and ``-p`` the same, on data of our own."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE, refused


def _run(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    r = subprocess.run([sys.executable, "-m", *prog, *args], cwd=cwd, capture_output=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    return r


@pytest.fixture
def data(tmp_path):
    """Labels with and without weights, initial values and tags, unlabeled lines, features
    with values (0, negative, tiny, large), a namespace given twice, a scaled namespace, a
    name that is not ASCII."""
    rng = np.random.default_rng(5)
    lines = []
    for i in range(300):
        feats = " ".join(f"x{int(j)}" + (f":{v:.4g}" if v != 1 else "")
                         for j, v in zip(rng.integers(0, 50, 3),
                                         rng.choice([1, 0.5, -2, 0, 1e-7, 123456.5], 3),
                                         strict=True))  # fmt: skip
        head = ""
        if i % 9:
            head = f"{rng.choice(['1', '-1', '0', '0.25', '3.5', '1e-3'])}"
            if i % 5 == 0:
                head += f" {rng.choice(['2', '0.5'])}"
                if i % 10 == 0:
                    head += " 0.125"
        if i % 7 == 0:
            head += " 'tag" if head else "'tag"
        bar = "|" if head.endswith("tag") else " |"
        more = f" |b y{i % 4} |a again{i % 3}" if i % 4 == 0 else ""
        scaled = f" |c:2 z{i % 6}:0.5" if i % 6 == 0 else ""
        lines.append(f"{head}{bar}a {feats}{more}{scaled} |é ü{i % 2}")
    (tmp_path / "d.vw").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("args", [[], ["-t"], ["--noconstant", "-b", "6"],
                                  ["--loss_function", "quantile"],
                                  ["-P", "7"], ["--quiet"]])  # fmt: skip
def test_print_writes_what_vw_writes(data, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    common = ["--print", "-d", "d.vw", *args]
    v = _run(VW_MODULE, [*common, "-p", "vw.p"], data)
    s = _run(SL_VW, [*common, "-p", "sl.p"], data)
    vw_err = v.stderr.replace(b"predictions = vw.p", b"predictions = sl.p")
    assert s.stderr.decode() == vw_err.decode()
    assert (data / "sl.p").read_bytes() == (data / "vw.p").read_bytes()
    if args == ["--quiet"]:
        assert s.stderr == b""
    else:
        assert b"Enabled learners: print, scorer-" in s.stderr
        assert s.stderr.count(b"| ") >= 300  # (each example written; labeled ones twice)


@pytest.mark.parametrize(("args", "said"), [
    (["-q", "ab"], "--print with interactions"),
    (["--oaa", "3"], "--print with a reduction"),
    (["--cb_explore_adf"], "--print with cb_adf"),
    (["-f", "m.vw"], "--print with -f"),
    (["--passes", "2", "-c"], "--print with --passes"),
    (["--link", "logistic"], "--print with --link logistic"),
])  # fmt: skip
def test_print_refuses_what_it_does_not_write_before_reading(data, args: list[str],
                                                              said: str) -> None:  # fmt: skip
    refused(["--print", "-d", "d.vw", *args], data, said)
    assert not (data / "m.vw").exists()
