"""Several passes: holdout figures, early termination, the model kept, the cache.

Conventions checked (see ``streamlearn/run/passes.py``): with holdout period n,
every n-th *usable* example of each pass (malformed lines do not count,
unlabeled ones do) is held out on every pass, scored with the weights as they
are when the stream reaches it, and never learned; the learning-rate schedule
runs on across passes; the best pass is the first with the lowest holdout
loss, and its model is the one saved.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn import model as model_io
from streamlearn.cli import cli
from streamlearn.learners.base import S_LOSS, S_WLAB
from tests.reference import dloss_np, loss_np, rate_np

CONSTANT_SLOT = 11650396 & ((1 << 18) - 1)  # VW's constant feature at -b 18
LOGISTIC = 1


def invoke(args, input=None):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def models_equal(a: model_io.Model, b: model_io.Model) -> None:
    np.testing.assert_array_equal(a.slots, b.slots)
    np.testing.assert_array_equal(a.state, b.state)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.gstate, b.gstate)


# ---- (a) per-pass holdout loss against a dense reference ---------------------


def numeric_stream(n: int = 150, seed: int = 0) -> tuple[str, list]:
    """VW lines with numeric feature names in the default namespace.

    Numeric names hash to their value (namespace hash 0), so slot ``j`` is
    feature ``j`` and the reference needs no hashing.  Rows carry importance
    weights, bases and a duplicate feature; some lines are unlabeled, two are
    malformed (they are not rows).  Returns (text, rows) with rows
    ``(label or None, importance, base, [(slot, value), ...])``.
    """
    rng = np.random.default_rng(seed)
    lines, rows = [], []
    for i in range(n):
        if i in (20, 77):
            lines.append("x 1 | 3 4\n")  # bad label: skipped, not counted
            continue
        feats = [(int(rng.integers(1, 30)), float(rng.choice([0.5, 1.0, -1.5, 2.0])))
                 for _ in range(int(rng.integers(1, 5)))]
        if i % 11 == 0:
            feats.append(feats[0])  # a duplicate counts twice
        text = " ".join(f"{j}:{v:g}" for j, v in feats)
        if i % 17 == 5:
            lines.append(f"| {text}\n")
            rows.append((None, 1.0, 0.0, feats))
            continue
        # a planted rule so that later passes still learn something
        y = 1.0 if sum(v for j, v in feats if j % 2) > 0 else -1.0
        if rng.random() < 0.1:
            y = -y
        a = float(rng.choice([1.0, 0.5, 2.0]))
        base = 0.25 if i % 7 == 0 else 0.0
        lines.append(f"{y:g} {a:g} {base:g} | {text}\n")
        rows.append((y, a, base, feats))
    return "".join(lines), rows


events: list[tuple[float, float] | None] = []


def reference_passes(rows, passes, period, eta0, power_t, t0):
    """Dense plain SGD over ``passes`` passes with holdout; figures after each pass.

    Also fills the module-level ``events``, one per example read: None for one the
    table counts (learned, or unlabeled), (weighted loss, weight) for a held-out one.
    """
    events.clear()
    w = np.zeros(1 << 18)
    T = 0.0
    out = []
    for _ in range(passes):
        ho_loss = ho_w = 0.0
        ho_n = 0
        for n, (y, a, base, feats) in enumerate(rows, start=1):
            x = [*feats, (CONSTANT_SLOT, 1.0)]
            p = base + sum(w[j] * v for j, v in x)
            if y is None:
                events.append(None)
                continue
            if n % period == 0:  # held out: scored, never learned
                ho_loss += a * loss_np(LOGISTIC, p, y)
                ho_w += a
                ho_n += 1
                events.append((a * loss_np(LOGISTIC, p, y), a))
                continue
            events.append(None)
            T += a
            g = rate_np(eta0, power_t, t0, T) * a * dloss_np(LOGISTIC, p, y)
            for j, v in x:
                w[j] -= g * v
        out.append({"holdout_loss": ho_loss / ho_w, "holdout_examples": ho_n,
                    "examples": len(rows), "weights": w.copy()})
    return out


def test_per_pass_holdout_loss_equals_dense_reference(tmp_path):
    text, rows = numeric_stream()
    src, rep, m = tmp_path / "d.vw", tmp_path / "r.json", tmp_path / "m.sl"
    src.write_text(text)
    r = invoke(["train", str(src), "--algo", "sgd", "--loss", "logistic", "-l", "0.8",
                "--power-t", "0.5", "--initial-t", "2", "--passes", "4", "--holdout-period", "4",
                "--early-terminate", "4", "--report", str(rep), "-f", str(m), "--quiet"])
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    want = reference_passes(rows, 4, period=4, eta0=0.8, power_t=0.5, t0=2.0)
    assert report["passes_run"] == 4 and len(report["passes"]) == 4
    for got, ref in zip(report["passes"], want, strict=True):
        assert got["holdout_loss"] == pytest.approx(ref["holdout_loss"], rel=1e-12)
        assert got["holdout_examples"] == ref["holdout_examples"]
        assert got["examples"] == ref["examples"]
        assert got["seconds"] > 0
        assert got["examples_per_second"] == pytest.approx(got["examples"] / got["seconds"])
    # the progressive table, as VW's: its counter leaves out the held-out examples; the
    # losses are progressive on pass 1, then VW's "h" lines: the holdout loss of the run
    # so far, and since the previous "h" line (the first: since the start)
    after = []  # the holdout sums when the table has counted 1, 2, ... examples
    sums = np.zeros(2)
    for e in events:
        if e is None:
            after.append(sums.copy())
        else:
            sums += e
    per_pass = len(after) // 4
    last = np.zeros(2)
    h_lines = 0
    for line in report["curve"]:
        counter, flag = int(line[2]), line[7]
        k = (counter - 1) // per_pass  # 0-based pass of this line
        assert flag == (1.0 if k > 0 else 0.0)
        if k == 0:
            continue
        now = after[counter - 1]
        assert line[0] == pytest.approx(now[0] / now[1])
        if now[1] > last[1]:
            assert line[1] == pytest.approx((now[0] - last[0]) / (now[1] - last[1]))
        else:
            assert line[1] is None  # VW's "unknown"
        last = now
        h_lines += 1
    assert h_lines >= 2
    # VW's counters: examples read, and per pass those learned from (held-out ones excluded)
    assert report["examples"] == 4 * len(rows)
    assert report["examples_per_pass"] == len(rows) - want[0]["holdout_examples"]
    assert report["seconds"] >= sum(p["seconds"] for p in report["passes"])
    assert report["examples_per_second"] == pytest.approx(report["examples"] / report["seconds"])
    losses = [ref["holdout_loss"] for ref in want]
    best = int(np.argmin(losses)) + 1
    assert report["best_pass"] == best
    assert report["best_holdout_loss"] == pytest.approx(losses[best - 1], rel=1e-12)
    model = model_io.load(m)
    np.testing.assert_allclose(model.dense_weights(), want[best - 1]["weights"],
                               rtol=1e-12, atol=1e-15)


def test_the_reports_holdout_loss_is_the_one_the_summary_prints(tmp_path):
    """holdout_loss (and _examples, _accuracy) in the JSON report are the best pass's, as the
    console's summary prints them; the figures over every pass are pooled_holdout_*."""
    text, rows = numeric_stream()
    src, rep = tmp_path / "d.vw", tmp_path / "r.json"
    src.write_text(text)
    args = ["train", str(src), "--algo", "sgd", "--loss", "logistic", "-l", "0.8", "--power-t",
            "0.5", "--initial-t", "2", "--holdout-period", "4", "--early-terminate", "4",
            "--report", str(rep)]  # fmt: skip
    r = invoke([*args, "--passes", "4"])
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    want = reference_passes(rows, 4, period=4, eta0=0.8, power_t=0.5, t0=2.0)
    best = int(np.argmin([ref["holdout_loss"] for ref in want]))
    assert report["best_pass"] == best + 1
    assert report["holdout_loss"] == report["best_holdout_loss"]
    assert report["holdout_loss"] == pytest.approx(want[best]["holdout_loss"], rel=1e-12)
    assert report["holdout_examples"] == want[best]["holdout_examples"]
    assert report["holdout_accuracy"] == report["passes"][best]["holdout_accuracy"]
    printed = [ln for ln in r.output.splitlines() if ln.startswith("holdout loss = ")]
    assert printed == [f"holdout loss = {report['holdout_loss']:.6f} (pass {best + 1}, the best: "
                       "its model is the one kept)"]  # fmt: skip
    held = [e for e in events if e is not None]
    pooled = sum(loss for loss, _ in held) / sum(a for _, a in held)
    assert report["pooled_holdout_loss"] == pytest.approx(pooled, rel=1e-12)
    assert report["pooled_holdout_examples"] == sum(ref["holdout_examples"] for ref in want)
    assert 0 <= report["pooled_holdout_accuracy"] <= 1
    assert all(0 <= p["holdout_accuracy"] <= 1 for p in report["passes"])
    # one pass: the pass is the pool, and the summary prints that
    r = invoke([*args, "--passes", "1"])
    report = json.loads(rep.read_text())
    assert report["holdout_loss"] == report["pooled_holdout_loss"]
    assert report["holdout_examples"] == report["pooled_holdout_examples"] == \
        want[0]["holdout_examples"]  # fmt: skip
    assert f"holdout loss = {report['holdout_loss']:.6f} (" in r.output


# ---- (b) early termination keeps the best pass's model ------------------------


def disagreeing_holdout(holdout_line: str, n: int = 40) -> str:
    """Every 4th line (the holdout at period 4) is ``holdout_line``; the rest say y = 1."""
    return "".join(
        f"{holdout_line}\n" if (i + 1) % 4 == 0 else f"1 | 1 {2 + i % 5}:0.5\n" for i in range(n)
    )


SQUARED_CONSTANT_RATE = ["--algo", "sgd", "--noconstant", "-l", "0.005", "--power-t", "0",
                         "--holdout-period", "4"]  # fmt: skip


def test_early_termination_keeps_the_best_pass(tmp_path):
    # w1 climbs from 0 towards 1; the holdout wants 0.5: its loss falls, then rises
    src = tmp_path / "d.vw"
    src.write_text(disagreeing_holdout("0.5 | 1"))
    m, rep = tmp_path / "m.sl", tmp_path / "r.json"
    r = invoke(["train", str(src), *SQUARED_CONSTANT_RATE, "--passes", "8",
                "--early-terminate", "2", "-f", str(m), "--report", str(rep)])
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    losses = [p["holdout_loss"] for p in report["passes"]]
    j = int(np.argmin(losses)) + 1
    assert j == 3 and losses[0] > losses[1] > losses[2] < losses[3] < losses[4]
    assert report["passes_run"] == j + 2 == len(losses)
    assert report["best_pass"] == j and report["early_terminated"] is True
    assert "keeping the model of pass 3" in r.output
    assert "passes used = 5 (early termination)" in r.output
    alone = tmp_path / "j.sl"
    r = invoke(["train", str(src), *SQUARED_CONSTANT_RATE, "--passes", str(j), "-f", str(alone),
                "--quiet"])
    assert r.exit_code == 0
    kept, ref = model_io.load(m), model_io.load(alone)
    models_equal(kept, ref)
    np.testing.assert_array_equal(kept.stats, ref.stats)


def test_a_tie_is_no_improvement_and_the_first_best_is_kept(tmp_path):
    # the holdout only has a feature never learned: its loss is 1.0 on every pass
    src = tmp_path / "d.vw"
    src.write_text(disagreeing_holdout("1 | 99"))
    m, rep = tmp_path / "m.sl", tmp_path / "r.json"
    r = invoke(["train", str(src), *SQUARED_CONSTANT_RATE, "--passes", "6",
                "--early-terminate", "2", "-f", str(m), "--report", str(rep), "--quiet"])
    assert r.exit_code == 0
    report = json.loads(rep.read_text())
    assert [p["holdout_loss"] for p in report["passes"]] == [1.0, 1.0, 1.0]
    assert report["best_pass"] == 1 and report["passes_run"] == 3
    first = tmp_path / "1.sl"
    invoke(["train", str(src), *SQUARED_CONSTANT_RATE, "--passes", "1", "-f", str(first),
            "--quiet"])  # fmt: skip
    models_equal(model_io.load(m), model_io.load(first))


def test_no_early_termination_without_holdout(tmp_path):
    src = tmp_path / "d.vw"
    src.write_text(disagreeing_holdout("0.5 | 1"))
    rep = tmp_path / "r.json"
    args = ["--noconstant", "-l", "0.005", "--power-t", "0", "--holdout-period", "0"]
    r = invoke(["train", str(src), *args, "--passes", "5", "--early-terminate", "1",
                "--report", str(rep)])
    assert r.exit_code == 0
    report = json.loads(rep.read_text())
    assert report["passes_run"] == 5 and report["best_pass"] is None
    assert all(p["holdout_loss"] is None and p["holdout_examples"] == 0
               for p in report["passes"])
    assert "pass 5: 40 examples in" in r.output


# ---- (c) holdout examples are never learned ------------------------------------


@pytest.mark.parametrize(
    "algo",
    [
        ["--algo", "sgd"],
        ["--algo", "sgd", "--l1", "0.01", "--l2", "0.01"],
        ["--algo", "tg", "--l1", "0.01", "--period", "3"],
        ["--algo", "fobos", "--l1", "0.01", "--l2", "0.01"],
        ["--algo", "smidas", "--l1", "0.001", "--norm-refresh", "1"],
    ],
)
def test_holdout_examples_are_never_learned(tmp_path, algo):
    """One pass with holdout period 3 = one pass over the file without those lines.

    A held-out example is predicted, so a lazy learner settles what its
    features owe (the dense weights do not change, but the per-slot ledger is
    written at a different time): the current weights agree to rounding, the
    global state and the progressive loss exactly.  SMIDAS runs with an exact
    norm at every step (its lazy norm depends on when slots are settled).
    """
    text, _ = numeric_stream(n=90, seed=3)
    lines = text.splitlines(keepends=True)
    usable = [i for i, line in enumerate(lines) if not line.startswith("x")]
    held = {i for k, i in enumerate(usable, start=1) if k % 3 == 0}
    (tmp_path / "all.vw").write_text(text)
    (tmp_path / "kept.vw").write_text("".join(x for i, x in enumerate(lines) if i not in held))
    a, b = tmp_path / "a.sl", tmp_path / "b.sl"
    base = ["--loss", "logistic", "-l", "0.3", *algo, "--quiet"]
    assert invoke(["train", str(tmp_path / "all.vw"), "--holdout-period", "3", *base,
                   "-f", str(a)]).exit_code == 0
    assert invoke(["train", str(tmp_path / "kept.vw"), *base, "-f", str(b)]).exit_code == 0
    with_holdout, without = model_io.load(a), model_io.load(b)
    assert with_holdout.nnz == without.nnz > 20
    np.testing.assert_allclose(with_holdout.dense_weights(), without.dense_weights(),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(with_holdout.gstate, without.gstate)
    for k in (S_LOSS, S_WLAB):  # the same progressive loss over the learned examples
        assert with_holdout.stats[k] == without.stats[k]


# ---- malformed lines: reported once, with their text, also from a reused cache --


def test_malformed_lines_reported_once_with_text_also_from_a_reused_cache(tmp_path):
    src = tmp_path / "bad.vw"
    src.write_text("".join(
        "foo | b\n" if i == 5 else "1 | d:nan\n" if i == 30 else f"{1 - 2 * (i % 2)} | a{i % 4}\n"
        for i in range(40)
    ))
    c = tmp_path / "c.cache"
    args = [str(src), "--passes", "3", "--cache", str(c), "-f", str(tmp_path / "m.sl")]
    reports = []
    for run in range(2):
        rep = tmp_path / f"r{run}.json"
        r = invoke(["train", *args, "--report", str(rep)])
        assert r.exit_code == 0, r.output
        if run == 0:
            stamp = (c.stat().st_ino, c.stat().st_mtime_ns)
        else:  # the second run replayed the cache built by the first
            assert (c.stat().st_ino, c.stat().st_mtime_ns) == stamp
        assert r.output.count(f"{src}:6: bad label (not a number): foo | b") == 1
        assert r.output.count(f"{src}:31: non-finite value (nan or inf): 1 | d:nan") == 1
        assert "not available" not in r.output and "not kept" not in r.output
        assert "skipped lines = 2 (malformed; each counted once, skipped on every pass" in r.output
        reports.append(json.loads(rep.read_text()))
    for report in reports:
        assert report["skipped_lines"] == 2 and report["passes_run"] == 3
        assert report["examples_per_pass"] == 38 - 3  # as VW: without the 3 held out
    assert reports[0]["first_errors"] == reports[1]["first_errors"]
    assert len(reports[0]["first_errors"]) == 2


def test_predictions_with_tags_from_a_reused_cache(tmp_path):
    src = tmp_path / "t.vw"
    src.write_text("1 'a1| a\n-1 'bb2| b\n1 | c\nfoo | x\n-1 'c333| d\n")
    c = tmp_path / "t.cache"
    outs = []
    for run in range(2):
        p = tmp_path / f"p{run}.txt"
        r = invoke(["train", str(src), "--cache", str(c), "-p", str(p), "--quiet"])
        assert r.exit_code == 0 and c.exists()
        outs.append(p.read_text())
    assert outs[0] == outs[1]
    lines = outs[0].splitlines()  # one per example line; the malformed one gets nan
    assert [line.split(" ")[1:] for line in lines] == [["a1"], ["bb2"], [], [], ["c333"]]
    assert lines[3] == "nan"


# ---- a damaged cache: refused with exit 3, never handed to a kernel ------------


def _cache_run(tmp_path, c):
    src = tmp_path / "d.vw"
    if not src.exists():
        src.write_text("".join(f"{i % 2 * 2 - 1} 'r{i}| a{i % 5} b:{i % 3}\n" for i in range(40)))
    return invoke(["train", str(src), "--cache", str(c), "--passes", "2", "-b", "8", "--quiet"])


def _indices_offset(c) -> tuple[int, int]:
    """Byte offset and length of the first record's ``indices`` array."""
    import struct

    raw = c.read_bytes()
    (hlen,) = struct.unpack("<I", raw[8:12])
    pos = 12 + hlen
    _, mlen = struct.unpack("<QI", raw[pos : pos + 12])
    meta = json.loads(raw[pos + 12 : pos + 12 + mlen])
    off = pos + 12 + mlen
    for name, dt, shape, how in meta["arrays"]:  # how: None (as it is) or a packing
        if how is None:
            size = np.dtype(dt).itemsize * shape[0]
        elif "lengths" in how:
            size = np.dtype(how["lengths"]).itemsize * (shape[0] - 1)
        else:
            size = 0
        if name == "indices":
            return off, size
        off += size
    raise AssertionError("no indices array")


def test_a_slot_beyond_the_table_in_a_cache_is_refused(tmp_path):
    c = tmp_path / "c.cache"
    assert _cache_run(tmp_path, c).exit_code == 0
    off, _ = _indices_offset(c)
    raw = bytearray(c.read_bytes())
    raw[off : off + 4] = b"\xff\xff\xff\x7f"
    c.write_bytes(bytes(raw))
    r = CliRunner().invoke(cli, ["train", str(tmp_path / "d.vw"), "--cache", str(c), "-b", "8"])
    assert r.exit_code == 3
    assert "record 1 is corrupt (a slot is beyond the table's 256)" in r.output
    assert "delete it" in r.output


def test_a_cache_cut_between_records_is_refused(tmp_path):
    """A cache cut right after its header or after a whole record is no shorter input: with
    no end record the run exits 3 (it once learned nothing, or part, as if that were all)."""
    c = tmp_path / "c.cache"
    assert _cache_run(tmp_path, c).exit_code == 0
    good = c.read_bytes()
    (hlen,) = np.frombuffer(good[8:12], dtype="<u4")
    (first,) = np.frombuffer(good[12 + hlen : 20 + hlen], dtype="<u8")
    for cut in (12 + hlen, 12 + hlen + 12 + first, len(good) - 1):
        c.write_bytes(good[:cut])
        r = CliRunner().invoke(cli, ["train", str(tmp_path / "d.vw"), "--cache", str(c),
                                     "-b", "8", "--quiet"])  # fmt: skip
        assert r.exit_code == 3, (cut, r.output)
        assert "delete it" in r.output
    c.write_bytes(good)
    assert CliRunner().invoke(cli, ["train", str(tmp_path / "d.vw"), "--cache", str(c),
                                    "-b", "8", "--quiet"]).exit_code == 0  # fmt: skip


@pytest.mark.slow
def test_damaged_caches_never_reach_a_kernel(tmp_path):
    """Byte flips and truncations anywhere: the run learns, rebuilds or exits 3 (or 6)."""
    c = tmp_path / "c.cache"
    assert _cache_run(tmp_path, c).exit_code == 0
    good = c.read_bytes()
    rng = np.random.default_rng(0)
    codes = set()
    for trial in range(300):
        raw = bytearray(good)
        if trial % 5 == 4:
            raw = raw[: int(rng.integers(8, len(good)))]
        else:
            for _ in range(int(rng.integers(1, 4))):
                raw[int(rng.integers(0, len(raw)))] = int(rng.integers(0, 256))
        c.write_bytes(bytes(raw))
        r = CliRunner().invoke(cli, ["train", str(tmp_path / "d.vw"), "--cache", str(c),
                                     "-b", "8", "--quiet"])
        assert r.exit_code in (0, 3, 6), (trial, r.exit_code, r.output)
        if r.exit_code == 1:
            raise AssertionError(r.exception)
        codes.add(r.exit_code)
    assert 3 in codes


# ---- VW's pass options: --holdout-after, --examples, --decay-learning-rate, -k ---------


@pytest.fixture
def vwdata(tmp_path):
    from tests.unix import text_data

    p = tmp_path / "d.vw"
    p.write_text(text_data(1200, seed=5))
    return p


def _report(args, tmp_path):
    rep = tmp_path / "rep.json"
    r = invoke(["train", *args, "--report", str(rep), "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(rep.read_text())


def test_holdout_after_holds_out_the_rest_of_each_pass(tmp_path, vwdata):
    one = _report([str(vwdata), "--holdout-after", "1000"], tmp_path)
    assert one["holdout_examples"] == 200 and one["weighted_example_sum"] == 1000.0
    two = _report([str(vwdata), "--holdout_after", "1000", "--passes", "2"], tmp_path)
    assert two["passes"][0]["holdout_examples"] == 200  # not every 10th: the period is off
    # the first 1000 examples learned alone give the same model
    head = tmp_path / "head.vw"
    head.write_text("".join(vwdata.read_text().splitlines(True)[:1000]))
    a, b = tmp_path / "a.sl", tmp_path / "b.sl"
    assert invoke(["train", str(vwdata), "--holdout-after", "1000", "-f", str(a),
                   "--quiet"]).exit_code == 0  # fmt: skip
    assert invoke(["train", str(head), "-f", str(b), "--quiet"]).exit_code == 0
    models_equal(model_io.load(a), model_io.load(b))


def test_examples_reads_the_first_n_of_each_pass(tmp_path, vwdata):
    got = _report([str(vwdata), "--examples", "300", "--passes", "3", "--holdout-off"],
                  tmp_path)  # fmt: skip
    assert [p["examples"] for p in got["passes"]] == [300, 300, 300]
    head = tmp_path / "head.vw"
    head.write_text("".join(vwdata.read_text().splitlines(True)[:300]))
    same = _report([str(head), "--passes", "3", "--holdout-off"], tmp_path)
    assert got["average_loss"] == same["average_loss"]


def test_examples_stops_reading_an_endless_stream(tmp_path):
    from tests.unix import sl

    r = sl(["bash -c 'yes \"1 | a b\" | SL train --examples 5000 --quiet --report r.json'"],
           tmp_path, shell=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["examples"] == 5000


@pytest.mark.parametrize("algo", ["gd", "sgd"])
def test_decayed_rate_equals_continuing_at_the_decayed_rate(tmp_path, vwdata, algo):
    """Pass 2 at rate l·d is the run continued from pass 1's model with -l l·d."""
    a, m, b = tmp_path / "a.sl", tmp_path / "m.sl", tmp_path / "b.sl"
    common = ["--algo", algo, "--quiet", "-l", "0.5"]
    r = invoke(["train", str(vwdata), *common, "--passes", "2", "--holdout-off",
                "--decay-learning-rate", "0.5", "-f", str(a)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert invoke(["train", str(vwdata), *common, "-f", str(m)]).exit_code == 0
    r = invoke(["train", "-i", str(m), str(vwdata), "--algo", algo, "--quiet", "-l", "0.25",
                "-f", str(b)])  # fmt: skip
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(model_io.load(a).weights, model_io.load(b).weights)


def test_rebuild_cache_writes_it_anew(tmp_path, vwdata):
    """VW's -k: a cache that matches the inputs is not read but written again."""
    from streamlearn.errors import InputUnreadable
    from streamlearn.run.console import Console
    from streamlearn.run.options import Inputs, Outputs
    from streamlearn.run.train import train

    c = tmp_path / "c.cache"

    def run(**kw):
        inputs = Inputs(sources=[str(vwdata)], cache=str(c), **kw)
        return train({"passes": 2}, inputs, Outputs(), Console(True)).report["average_loss"]

    want = run()
    c.write_bytes(c.read_bytes()[:-100])  # its header still matches; its last batch is cut
    with pytest.raises(InputUnreadable):
        run()
    assert run(rebuild_cache=True) == want
    assert run() == want


def test_save_per_pass_writes_each_pass_beside_the_best(tmp_path):
    """VW's --save_per_pass: MODEL.N is the model after pass N (as a run of N passes
    leaves it), and -f MODEL is still the best pass's; it needs -f, and the batch
    learners (whose passes are epochs) refuse it."""
    text, _ = numeric_stream()
    src = tmp_path / "d.vw"
    src.write_text(text)
    args = ["train", str(src), "--loss", "logistic", "--holdout-period", "4", "--quiet"]
    r = invoke([*args, "--passes", "3", "--early-terminate", "3", "-f", str(tmp_path / "m.sl"),
                "--save-per-pass", "--report", str(tmp_path / "r.json")])  # fmt: skip
    assert r.exit_code == 0, r.output
    best = json.loads((tmp_path / "r.json").read_text())["best_pass"]
    per_pass = [model_io.load(tmp_path / f"m.sl.{k}") for k in (1, 2, 3)]
    models_equal(model_io.load(tmp_path / "m.sl"), per_pass[best - 1])
    for k in (1, 2):
        r = invoke([*args, "--passes", str(k), "-f", str(tmp_path / f"k{k}.sl"),
                    "--save-per-pass"])  # fmt: skip
        assert r.exit_code == 0, r.output
        models_equal(model_io.load(tmp_path / f"k{k}.sl.{k}"), per_pass[k - 1])
    assert not (tmp_path / "m.sl.4").exists()
    r = invoke([*args, "--save-per-pass"])
    assert r.exit_code == 2 and "give -f" in r.output
    r = invoke(["train", str(src), "--algo", "cd", "--save-per-pass", "-f",
                str(tmp_path / "cd.sl")])  # fmt: skip
    assert r.exit_code == 2 and "--algo cd fits all the data at once" in r.output
