"""VW's model files for the multiline reductions, both ways (streamlearn/io/vwmodel_cb.py,
streamlearn/run/mlmodel.py; issue 39).

Each kind is trained by the real ``vowpalwabbit`` package and by ``sl vw`` on the same
bytes; then VW continues sl's model, sl continues VW's, and VW continues its own, each
with ``-p`` on the same later data: the three ``-p`` files are equal byte for byte (the
explorers' counters, mtr's sums, bagging's generator and interleaved copies carried
over), and so with ``-t``.  Truncated and corrupt cb models are one message and exit 5.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.errors import ModelError
from streamlearn.io import vwmodel
from streamlearn.run import mlmodel
from tests.paths import ROOT
from tests.unix import invoke

pytest.importorskip("vowpalwabbit")

VWMODELS = ROOT / "tests" / "data" / "vwmodels"


def adf_data(n: int, seed: int, actions: int = 4, unlabeled: float = 0.0) -> str:
    """cb ADF examples: a shared line, ``actions`` action lines, one labeled (cost, prob);
    a share ``unlabeled`` of them with no label."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        user = rng.integers(0, 5)
        lines = [f"shared |User u{user} t{rng.integers(0, 3)}"]
        chosen = rng.integers(0, actions)
        labeled = rng.random() >= unlabeled
        for a in range(actions):
            label = ""
            if a == chosen and labeled:
                cost = -1.0 if (a + user) % actions == 0 else 0.0
                label = f"0:{cost:g}:{[0.25, 0.5, 0.75][rng.integers(0, 3)]} "
            lines.append(f"{label}|Action a{a} k{(a * 7 + user) % 5}")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n\n"


def cs_data(n: int, seed: int) -> str:
    """csoaa_ldf examples (costs on every line)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.integers(0, 4)
        out.append("\n".join(f"{c + 1}:{float((c + x) % 3):g} |f x{x} c{c} y{rng.integers(0, 2)}"
                             for c in range(3)))  # fmt: skip
    return "\n\n".join(out) + "\n\n"


def cb_data(n: int, seed: int, k: int = 3) -> str:
    """--cb K examples (single lines, one action:cost:prob)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.integers(0, 4)
        a = rng.integers(1, k + 1)
        cost = 0.0 if a == x % k + 1 else 1.0
        out.append(f"{a}:{cost:g}:0.5 |f x{x} z{rng.integers(0, 3)}")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cbdata")
    for name, text in (("a.adf", adf_data(120, 1)), ("b.adf", adf_data(80, 2)),
                       ("a.cs", cs_data(100, 3)), ("b.cs", cs_data(60, 4)),
                       ("a.cb", cb_data(150, 5)), ("b.cb", cb_data(90, 6)),
                       ("a.u", adf_data(120, 7, unlabeled=0.2)),
                       ("b.u", adf_data(80, 8, unlabeled=0.2))):  # fmt: skip
        (d / name).write_text(text)
    return d


def vw(*args: str) -> float | None:
    """``vw ARGS`` (VW 9's own command line); its average loss."""
    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"^average loss = (\S+)", r.stderr, re.M)
    return float(m.group(1)) if m and m.group(1) != "n.a." else None


def slvw(*args: str) -> float | None:
    """``sl vw ARGS``; its average loss as VW prints it."""
    r = invoke(["vw", *args])
    assert r.exit_code == 0, r.output
    m = re.search(r"^average loss = (\S+)", r.output, re.M)
    return float(m.group(1)) if m and m.group(1) != "n.a." else None


KINDS = [
    ("--cb_adf", "adf"),
    ("--cb_adf --cb_type dr", "adf"),
    ("--cb_adf --cb_type ips -q UA", "adf"),
    ("--cb_explore_adf -q UA", "adf"),
    ("--cb_explore_adf --epsilon 0.2 --first_only", "adf"),
    ("--cb_explore_adf --first 40 -q UA", "adf"),
    ("--cb_explore_adf --squarecb -q UA", "adf"),
    ("--cb_explore_adf --squarecb --gamma_scale 5", "adf"),
    ("--cb_explore_adf --bag 3", "adf"),
    ("--cb_explore_adf --bag 2 --greedify --cb_type dr", "adf"),
    ("--cb_explore_adf --softmax --lambda 2", "adf"),
    ("--cb_explore_adf --cover 3 -q UA", "adf"),
    ("--cb_explore_adf --cover 2 --psi 0.5 --nounif --epsilon 0.1 --cb_type dr", "adf"),
    ("--cb_explore_adf --regcb -q UA", "adf"),
    ("--cb_explore_adf --squarecb --elim", "adf"),
    ("--cb_explore_adf --synthcover --synthcoverpsi 0.2 --synthcoversize 5", "adf"),
    ("--cb_explore_adf --rnd 2", "adf"),
    ("--cb_explore_adf --regcbopt --mellowness 0.01", "adf"),
    ("--cb_explore_adf --regcb --mellowness 0.01 --cb_max_cost 2", "adf"),
    ("--cb_explore_adf --rnd 1 --rnd_alpha 0.3 --epsilon 0.1 --random_seed 5", "adf"),
    ("--cb_explore_adf --epsilon 0.3 --predict_only_model", "adf"),
    ("--cb_explore_adf --noconstant -b 12", "adf"),
    ("--csoaa_ldf m", "cs"),
    ("--csoaa_ldf mc --csoaa_rank", "cs"),
    ("--cb 3", "cb"),
    ("--cb 3 --cb_type dr", "cb"),
    ("--cb 3 --cb_type dm --ngram 2 --skips 1 -b 20", "cb"),  # (n-grams: the header's fields)
    ("--cb_explore 3 --first 20", "cb"),
    ("--cb_explore 3 --epsilon 0.2", "cb"),
    ("--cb_explore 3 --cover 2", "cb"),
    # gd without adaptive rates reads VW's t, which starts at --initial_t (1 under --sgd)
    # and counts unlabeled examples too
    ("--cb_adf --sgd", "u"),
    ("--cb_explore_adf -q UA", "u"),
    ("--cb_explore_adf --regcb --sgd", "u"),
    ("--cb_explore_adf --squarecb --sgd --initial_t 3 --power_t 0.3", "u"),
    ("--cb_explore_adf --cover 2 --sgd", "u"),
    ("--cb_explore_adf --bag 2 --normalized --initial_t 2", "u"),
    ("--csoaa_ldf m --sgd", "cs"),
    ("--cb 3 --sgd", "cb"),
    # the ftrl family's learners: their columns kept (3, 4, 6), their own sums not
    ("--cb_explore_adf --coin -q UA", "u"),
    ("--cb_adf --ftrl --cb_type dr", "adf"),
    ("--csoaa_ldf m --pistol", "cs"),
    ("--cb_explore_adf --coin --squarecb --predict_only_model", "adf"),
    ("--cb 3 --ftrl --l1 0.001", "cb"),
]


@pytest.mark.parametrize(("train", "kind"), KINDS, ids=[k[0] for k in KINDS])
def test_cb_models_carry_over_both_ways(tmp_path, data, train, kind):
    a, b = str(data / f"a.{kind}"), str(data / f"b.{kind}")
    opts = train.split()
    vwm, slm = str(tmp_path / "vw.model"), str(tmp_path / "sl.model")
    assert slvw(*opts, "-d", a, "-f", slm) == vw(*opts, "-d", a, "-f", vwm)
    assert vwmodel.read_header((tmp_path / "sl.model").read_bytes()).options.split()
    for extra in ((), ("-t",)):
        outs = {}
        for who, model in (("vw<sl", slm), ("vw<vw", vwm), ("sl<vw", vwm), ("sl<sl", slm)):
            p = tmp_path / f"{who}{len(extra)}.p"
            run = vw if who.startswith("vw") else slvw
            loss = run("-d", b, "-i", model, "-p", str(p), *extra)
            outs[who] = (loss, p.read_text())
        assert outs["sl<vw"] == outs["vw<vw"], (extra, outs["sl<vw"][0], outs["vw<vw"][0])
        assert outs["vw<sl"] == outs["vw<vw"], (extra, outs["vw<sl"][0], outs["vw<vw"][0])
        assert outs["sl<sl"] == outs["vw<vw"]


def test_the_explorers_counter_is_written_as_vws(tmp_path, data):
    """--first's examples still to explore and --squarecb's and --cover's counts sit before
    mtr's sums."""
    for opts, counter in (("--first 200", 200 - 120), ("--first 30", 0), ("--squarecb", 120),
                          ("--cover 2", 120)):  # fmt: skip
        m = tmp_path / "m"
        slvw("--cb_explore_adf", *opts.split(), "-d", str(data / "a.adf"), "-f", str(m))
        raw = m.read_bytes()
        h = vwmodel.read_header(raw)
        assert int.from_bytes(raw[h.end : h.end + 8], "little") == counter
        assert int.from_bytes(raw[h.end + 8 : h.end + 16], "little") == 120  # event_sum


def test_command_line_options_override_the_models(tmp_path, data):
    """VW's suite test 207: ``--epsilon 0.3`` over a model's ``--epsilon 0.1``."""
    m = str(tmp_path / "m")
    vw("--cb_explore_adf", "--epsilon", "0.1", "-d", str(data / "a.adf"), "-f", m)
    p, q = tmp_path / "p", tmp_path / "q"
    b = str(data / "b.adf")
    mine = slvw("-i", m, "-d", b, "--epsilon", "0.3", "-p", str(p))
    assert mine == vw("-i", m, "-d", b, "--epsilon", "0.3", "-p", str(q))
    assert p.read_text() == q.read_text()
    # the suite's own 8.8.0 model (keeps mtr's sums, no counter)
    p2, q2 = tmp_path / "p2", tmp_path / "q2"
    old = str(VWMODELS / "epsilon.model")
    assert slvw("-i", old, "-d", b, "-p", str(p2)) == vw("-i", old, "-d", b, "-p", str(q2))
    assert p2.read_text() == q2.read_text()


@pytest.fixture(scope="module")
def good(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("good")
    m = d / "m"
    vw("--cb_explore_adf", "--squarecb", "-d", str(data / "a.adf"), "-f", str(m), "-b", "10")
    return m.read_bytes()


def _read(raw: bytes, tmp_path) -> None:
    from streamlearn.config import TrainConfig
    from streamlearn.run.multiline import Multiline

    p = tmp_path / "cut"
    p.write_bytes(raw)
    ml = Multiline("cb_adf", explore="squarecb")
    mlmodel.read(str(p), ml, TrainConfig(bits=10))


def test_a_truncated_cb_model_is_refused_wherever_it_ends(tmp_path, good):
    h = vwmodel.read_header(good)
    records = h.end + 8 + 16 + 1 + vwmodel.resume_size(1, h.version_tuple)
    for n in sorted({*range(h.end, records + 1), *range(records, len(good), 5)}):
        if n >= records and (n - records) % 16 == 0:
            continue  # between two records: a model of fewer slots, as VW reads it
        with pytest.raises(ModelError, match="truncated|corrupt|ends"):
            _read(good[:n], tmp_path)
    (tmp_path / "none").write_text("shared |User u\n|Action a\n\n")
    cut = tmp_path / "cut.model"
    cut.write_bytes(good[: h.end + 12])
    r = invoke(["vw", "-i", str(cut), "-d", str(tmp_path / "none")])
    assert r.exit_code == 5 and "truncated" in r.output and "Traceback" not in r.output


def test_a_hostile_cb_header_allocates_nothing(tmp_path, good):
    h = vwmodel.read_header(good)
    head = good[: 4 + int.from_bytes(good[:4], "little")]
    opts_at = len(head) + 4 + 1 + 1 + 4 + 4 + 4 + 4 + 4 + 4
    raw = good[:opts_at] + (0xFFFFFFF0).to_bytes(4, "little") + good[opts_at + 4 : h.end]
    p = tmp_path / "bad"
    p.write_bytes(raw)
    with pytest.raises(ModelError, match="claims"):
        mlmodel.kept_options(str(p))
    # a counter beyond any count
    huge = bytearray(good)
    huge[h.end : h.end + 8] = (1 << 63).to_bytes(8, "little")
    with pytest.raises(ModelError, match="corrupt"):
        _read(bytes(huge), tmp_path)
    (tmp_path / "none").write_text("shared |User u\n|Action a\n\n")
    p.write_bytes(bytes(huge))
    r = invoke(["vw", "-i", str(p), "-d", str(tmp_path / "none")])
    assert r.exit_code == 5 and "corrupt" in r.output and "Traceback" not in r.output


def test_models_of_reductions_sl_does_not_run_are_refused_by_name(tmp_path, data):
    (tmp_path / "none").write_text("1:1:0.5 |f a\n")
    # (VW 8.9.0's legacy --cb model, refused before: it runs as VW 9 runs it now)
    r = invoke(["vw", "-i", str(VWMODELS / "cb_compat_test.vwmodel"), "-d",
                str(tmp_path / "none")])  # fmt: skip
    assert r.exit_code == 0, r.output
    m = str(tmp_path / "dro")
    vw("--cb_explore_adf", "--cb_dro", "-d", str(data / "a.adf"), "-f", m)
    r = invoke(["vw", "-i", m, "-d", str(data / "b.adf")])
    assert r.exit_code == 5 and "--cb_dro" in r.output


@pytest.mark.parametrize("opts", ["--cb_explore_adf --sgd", "--cb_adf", "--csoaa_ldf m --sgd"])
def test_a_continued_model_s_header_says_its_t_as_vw(tmp_path, data, opts):
    """VW's "initial_t" line says the t of the model read with -i (the examples it learned
    from, and 1 more under --sgd), not the option's (csoaa_ldf alone never moves t)."""
    kind = "cs" if "csoaa" in opts else "u"
    m = str(tmp_path / "m")
    vw(*opts.split(), "-d", str(data / f"a.{kind}"), "-f", m)
    lines = []
    for cmd in (["vowpalwabbit"], ["streamlearn", "vw"]):
        r = subprocess.run([sys.executable, "-m", *cmd, "-i", m, "-d", str(data / f"b.{kind}")],
                           capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr[-2000:]
        lines.append([ln for ln in r.stderr.splitlines() if ln.startswith("initial_t")])
    assert lines[0] == lines[1]
    assert lines[0] == ["initial_t = 1" if "csoaa" in opts else "initial_t = 121"] or \
        "--sgd" not in opts, lines  # fmt: skip
