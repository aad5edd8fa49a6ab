"""The ftrl family's learners under the multiline reductions (``--ftrl``, ``--coin``,
``--pistol`` with ``--cb_adf``, ``--cb_explore_adf``, ``--csoaa_ldf``, ``--cb K``) against
VW 9.11.9: the same progressive loss and the same ``-p`` file, and the ones sl does not run
yet refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.marks import slow_except
from tests.run.test_cb_explore import _logs, _run
from tests.unix import sl

BASES = ["--ftrl", "--coin", "--pistol"]

ADF = [
    "--cb_adf",
    "--cb_adf --cb_type dr -q sa",
    "--cb_adf --cb_type ips --ftrl_alpha 0.2 --ftrl_beta 0.5",
    "--cb_explore_adf --epsilon 0.1 -q sa",
    "--cb_explore_adf --squarecb",
    "--cb_explore_adf --bag 3",
    "--cb_explore_adf --cover 2",
    "--cb_explore_adf --softmax --lambda 2",
    "--cb_explore_adf --synthcover",
    "--cb_explore_adf --first 5",
    "--cb_explore_adf --epsilon 0.1 --explore_eval",
]


def _same(tmp_path: Path, text: str, args: list[str]) -> None:
    """VW's loss and -p, from sl's kernels interpreted (a tiny input) and compiled."""
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "d.txt"
    data.write_text(text)
    args = [*args, "-d", str(data)]
    want = _run(["vowpalwabbit"], args, tmp_path)
    assert _run(["streamlearn", "vw"], args, tmp_path) == want
    with pytest.MonkeyPatch.context() as m:
        m.setenv("SL_JIT", "1")
        assert _run(["streamlearn", "vw"], args, tmp_path) == want


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("flags", ADF)
def test_adf_on_the_ftrl_family_equals_vw(tmp_path: Path, base: str, flags: str) -> None:
    if base == "--pistol" and "--cover" in flags:
        pytest.skip("refused (test_what_does_not_run_on_the_ftrl_family_is_one_line)")
    seed = sum(map(ord, flags + base)) % 97
    _same(tmp_path, _logs(seed, 80), [*flags.split(), base])


@pytest.mark.parametrize("base", BASES)
def test_a_model_on_the_ftrl_family_continues_as_vw_s(tmp_path: Path, base: str) -> None:
    """VW keeps the first model's normalizer sums with the ftrl family's models too
    (``--coin`` divides by their ratio): VW's model continued by sl as by VW."""
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "d.txt"
    data.write_text(_logs(5, 120))
    _run(["vowpalwabbit"], ["--cb_explore_adf", base, "-d", str(data), "-f", "m"], tmp_path)
    args = ["-i", "m", "-d", str(data)]
    assert _run(["streamlearn", "vw"], args, tmp_path) == _run(["vowpalwabbit"], args, tmp_path)


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("flags", ["--csoaa_ldf m", "--csoaa_ldf mc", "--cb 3",
                                   "--cb_explore 3 --epsilon 0.2"])  # fmt: skip
def test_single_line_forms_on_the_ftrl_family_equal_vw(tmp_path: Path, base: str,
                                                      flags: str) -> None:  # fmt: skip
    pytest.importorskip("vowpalwabbit")
    from tests.test_vw_model_cb import cb_data, cs_data

    text = cs_data(60, 5) if "csoaa" in flags else cb_data(90, 6)
    _same(tmp_path, text, [*flags.split(), base])


@pytest.mark.parametrize("flags", slow_except(["--cb_explore_adf --regcb",
                                               "--cb_explore_adf --squarecb --elim",
                                               "--ccb_explore_adf", "--cb 2 --cb_force_legacy",
                                               "--cb_explore_adf --cover 2 --pistol"],
                                              0, 1, 2))  # fmt: skip
def test_what_does_not_run_on_the_ftrl_family_is_one_line(tmp_path: Path, flags: str) -> None:
    (tmp_path / "d.txt").write_text(_logs(1, 5))
    base = [] if "--pistol" in flags else ["--coin"]
    r = sl(["vw", *flags.split(), *base, "-d", "d.txt"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count(b"\n") == 1 and (b"coin" in r.stderr or b"pistol" in r.stderr), r.stderr
