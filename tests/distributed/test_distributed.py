"""``sl train --dask``: shards, averaging, exactness with one worker, retries.

The shard reader and the averaging are checked without Dask; the rest runs on
a LocalCluster of two worker processes (one thread each), shared by the tests
of this module, and skips when Dask is not installed.
"""

from __future__ import annotations

import builtins
import json
import os
import random
import signal
import threading
import time

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn import model as model_io
from streamlearn.api import Console, Inputs, Outputs
from streamlearn.cli import cli
from streamlearn.distributed.mixing import Rows, average, refusal
from streamlearn.io.ranges import Shard, cut, lines_before, read_all
from streamlearn.learners import resolve
from streamlearn.learners.base import S_N, make_params
from tests.paths import script

# ---- shards (no Dask) ---------------------------------------------------------


def test_byte_ranges_give_every_line_once(tmp_path):
    """Cut anywhere (mid-line, at a newline, empty ranges): each line in exactly one shard."""
    rng = random.Random(7)
    path = str(tmp_path / "f.vw")
    for _ in range(300):
        lines = [b"x" * rng.randint(0, 6) for _ in range(rng.randint(0, 30))]
        data = b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")
        with open(path, "wb") as f:
            f.write(data)
        points = sorted(rng.randint(0, len(data)) for _ in range(rng.randint(0, 6)))
        bounds = [0, *points, len(data)]
        shards = [Shard(path, a, b, False) for a, b in zip(bounds, bounds[1:], strict=False)]
        assert b"".join(read_all(s) for s in shards) == data
        assert b"".join(read_all(s) for s in cut(path, rng.randint(1, 9))) == data


def test_compressed_files_are_not_cut(tmp_path):
    import gzip

    path = str(tmp_path / "f.vw.gz")
    with gzip.open(path, "wb") as f:
        f.write(b"1 |f a\n" * 1000)
    assert cut(path, 4) == [Shard(path, 0, os.path.getsize(path), True)]


def test_lines_before_counts_newlines(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"a\nbb\n\nccc\n")
    assert [lines_before(str(path), k) for k in (0, 1, 2, 5, 6, 10)] == [0, 0, 1, 2, 3, 4]


# ---- averaging (no Dask) ---------------------------------------------------------


def test_average_weights_by_examples_and_sets_ledger_stamps():
    spec = resolve("sgd", l1=0.1, l2=0.2)  # sgd_elastic: columns weight, P(s), B(s)
    a = Rows(np.array([1, 4], np.uint32), np.array([[1.0, 1.0, 0.0], [2.0, 1.0, 0.0]]))
    b = Rows(np.array([4], np.uint32), np.array([[-2.0, 1.0, 0.0]]))
    m = average(spec, make_params(), [(a, 3.0), (b, 1.0)])
    assert m.slots.tolist() == [1, 4]
    np.testing.assert_allclose(m.state, [[0.75, 1.0, 0.0], [1.0, 1.0, 0.0]])


def test_average_of_ftrl_recomputes_weights_from_the_mean_state():
    spec = resolve("ftrl")
    params = make_params(l1=0.5, ftrl_alpha=0.5, ftrl_beta=1.0)
    # weights are FTRL's of (z, n): w = -(z - sign(z) l1) / ((beta + sqrt(n)) / alpha)
    a = Rows(np.array([3], np.uint32), np.array([[0.0, 1.0, 4.0]], np.float32))
    b = Rows(np.array([3], np.uint32), np.array([[0.0, 3.0, 4.0]], np.float32))
    m = average(spec, params, [(a, 1.0), (b, 1.0)])
    z, n = 2.0, 4.0
    assert m.state[0, 1:].tolist() == [z, n]
    assert m.state[0, 0] == np.float32(-(z - 0.5) / ((1.0 + np.sqrt(n)) / 0.5))


def test_learners_without_a_meaningful_average_are_refused():
    for algo in ("l0", "smidas", "cd", "scd", "subgrad"):
        assert refusal(algo, 1)
    assert refusal("sgd", 8)
    for algo in ("gd", "sgd", "tg", "fobos", "ftrl"):
        assert refusal(algo, 1) is None


# ---- on a LocalCluster ---------------------------------------------------------


def write_data(path, n, seed, bad_line=None):
    """``n`` logistic VW lines with numeric features from one ground truth."""
    rng = np.random.default_rng([seed, 0])
    truth = np.random.default_rng(99).normal(size=300)
    lines = []
    for i in range(n):
        feats = rng.choice(300, size=8, replace=False)
        vals = np.round(rng.lognormal(size=8), 2)
        y = 1 if rng.random() < 1 / (1 + np.exp(-(truth[feats] @ vals) / 3)) else -1
        lines.append(f"{y} |f " + " ".join(f"{f}:{v}" for f, v in zip(feats, vals, strict=True)))
        if bad_line is not None and i + 1 == bad_line:
            lines[-1] = "oops |f 1:2:3"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def make_data():
    """scripts/make_data.py (Zipf-distributed sparse features, one ground truth per seed)."""
    return script("make_data")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Four training files of 3000 lines and a test file, from one ground truth."""
    d = tmp_path_factory.mktemp("dask")
    lines = b"".join(make_data().generate(15000, 12, vocab=5000, seed=1)).splitlines(True)
    paths = []
    for k, name in enumerate(["part0", "part1", "part2", "part3", "test"]):
        (d / f"{name}.vw").write_bytes(b"".join(lines[3000 * k : 3000 * (k + 1)]))
        paths.append(str(d / f"{name}.vw"))
    return paths[:4], paths[4]


def single(explicit, sources, out, report=None):
    from streamlearn.run.train import train

    return train(dict(explicit), Inputs(sources=sources), Outputs(final_model=out, report=report),
                 Console(True))  # fmt: skip


def dask_train(client, explicit, sources, out, ranks=None, sync_every=None, report=None, **kw):
    from streamlearn.distributed.driver import train

    ins = {k: kw.pop(k) for k in ("initial_model", "cache", "strict", "block_size") if k in kw}
    return train(dict(explicit), Inputs(sources=sources, **ins),
                 Outputs(final_model=out, report=report, **kw), client=client, ranks=ranks,
                 sync_every=sync_every, console=Console(True))  # fmt: skip


def assert_same_model(a, b):
    a, b = model_io.load(a), model_io.load(b)
    for key in ("slots", "state", "weights", "gstate", "stats"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)
    assert a.config == b.config and a.learner == b.learner


ALGOS = [
    {"algo": "gd", "loss": "logistic"},
    {"algo": "gd", "loss": "logistic", "l1": 1e-5, "l2": 1e-4},
    {"algo": "sgd", "loss": "logistic", "learning_rate": 0.5},
    {"algo": "tg", "loss": "logistic", "l1": 1e-3, "period": 3, "theta": 0.5},
    {"algo": "fobos", "loss": "logistic", "l1": 1e-4, "l2": 1e-3},
    {"algo": "sgd", "loss": "squared", "learning_rate": 0.1, "l1": 1e-4, "l2": 1e-3},
    {"algo": "ftrl", "loss": "logistic", "l1": 0.5},
]


@pytest.mark.parametrize("explicit", ALGOS, ids=lambda e: "-".join(map(str, e.values())))
def test_one_worker_equals_the_single_process_exactly(client, files, tmp_path, explicit):
    """One rank, shards in input order, no averaging: the same model, byte for byte."""
    train, _ = files
    explicit = {**explicit, "passes": 2}
    single(explicit, train, str(tmp_path / "one.sl"))
    report = dask_train(client, explicit, train, str(tmp_path / "dask.sl"), ranks=1)
    assert_same_model(tmp_path / "one.sl", tmp_path / "dask.sl")
    assert report["distributed"]["ranks"] == 1


def test_two_workers_test_loss_within_two_percent(client, files, tmp_path):
    """Acceptance: 2 workers, 4 files, 3 passes: test loss within 2% of one process's."""
    from streamlearn.run.predict import predict

    train, test = files
    explicit = {"loss": "logistic", "passes": 3}
    single(explicit, train, str(tmp_path / "one.sl"))
    report = dask_train(client, explicit, train, str(tmp_path / "two.sl"),
                        report=str(tmp_path / "r.json"))  # fmt: skip
    losses = []
    for m in ("one", "two"):
        r = predict(Inputs(sources=[test], initial_model=str(tmp_path / f"{m}.sl")), Outputs(),
                    Console(True))  # fmt: skip
        losses.append(r["average_loss"])
    assert abs(losses[1] - losses[0]) <= 0.02 * losses[0], losses
    d = report["distributed"]
    assert d["ranks"] == 2 and d["syncs"] == 3
    assert [w["shards"] for w in d["workers"]] == [train[:2], train[2:]]
    assert sum(w["examples"] for w in d["workers"]) == 12000
    assert report["examples"] == 3 * 12000
    on_file = json.loads((tmp_path / "r.json").read_text())
    assert on_file["distributed"]["workers"][1]["shards"] == train[2:]


def test_byte_ranges_sync_every_and_file_line_numbers(client, tmp_path):
    """One file cut in two byte ranges, synced every 700 examples: every line once, and a
    malformed line in the second range reported with its line number in the file."""
    path = write_data(tmp_path / "big.vw", 5000, 3, bad_line=4321)
    report = dask_train(client, {"loss": "logistic"}, [path], str(tmp_path / "m.sl"),
                        sync_every=700)  # fmt: skip
    d = report["distributed"]
    assert d["ranks"] == 2 and all(not s.endswith(".vw") for w in d["workers"] for s in w["shards"])
    assert report["examples"] == 4999 and report["skipped_lines"] == 1
    assert report["first_errors"] == [f"{path}:4321: bad label (not a number): oops |f 1:2:3"]
    assert d["syncs"] == 4  # 2500 lines each: 700, 1400, 2100, then the rest
    m = model_io.load(str(tmp_path / "m.sl"))
    assert m.stats[S_N] == 4999


@pytest.mark.slow
def test_a_killed_worker_loses_and_doubles_nothing(tmp_path, files, monkeypatch):
    """Kill a worker process mid-pass: Dask reruns its task elsewhere, and the model is the
    one an undisturbed run gives (every shard counted once)."""
    distributed = pytest.importorskip("distributed")
    import logging

    from streamlearn.distributed.segment import TEST_DELAY

    train, _ = files
    explicit = {"loss": "logistic", "passes": 2}
    monkeypatch.setenv(TEST_DELAY, "0.05")  # inherited by the workers: tasks last seconds
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.CRITICAL)
    c = distributed.Client(cluster)  # fmt: skip
    try:
        dask_train(c, explicit, train, str(tmp_path / "calm.sl"), block_size=1 << 14)
        done = {}

        def run():
            done["report"] = dask_train(c, explicit, train, str(tmp_path / "killed.sl"),
                                        block_size=1 << 14)  # fmt: skip

        t = threading.Thread(target=run)
        t.start()
        killed = None
        deadline = time.monotonic() + 60
        while killed is None and time.monotonic() < deadline:
            busy = [w for w, keys in c.processing().items()
                    if any("sl-segment" in str(k) and "pass1" in str(k) for k in keys)]  # fmt: skip
            if busy:
                pids = c.run(os.getpid)
                killed = busy[0]
                time.sleep(0.3)  # mid-task
                os.kill(pids[killed], signal.SIGKILL)
            time.sleep(0.05)
        t.join(120)
        assert killed is not None and not t.is_alive()
        report = done["report"]
        assert report["examples"] == 2 * 12000
        ran = [a for w in report["distributed"]["workers"] for a in w["workers"]]
        assert killed not in ran  # its task was rerun elsewhere; no result came from it
        assert_same_model(tmp_path / "calm.sl", tmp_path / "killed.sl")
    finally:
        c.close()
        cluster.close()


# ---- the command line ----------------------------------------------------------


def test_cli_as_a_user(files, tmp_path):
    """sl train --dask local:2 ... --report; then sl predict and sl inspect read the model."""
    pytest.importorskip("distributed")
    train, test = files
    m, r = str(tmp_path / "m.sl"), str(tmp_path / "r.json")
    res = CliRunner().invoke(cli, ["train", "--dask", "local:2", *train, "--loss", "logistic",
                                   "-f", m, "--passes", "3", "--report", r])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "dask: 2 workers" in res.output and "finished run" in res.output
    report = json.loads(open(r).read())
    assert report["passes_run"] == 3 and len(report["distributed"]["workers"]) == 2
    res = CliRunner().invoke(cli, ["predict", "-i", m, test])
    assert res.exit_code == 0 and "average" in res.output
    res = CliRunner().invoke(cli, ["inspect", m])
    assert res.exit_code == 0 and "gd" in res.output


@pytest.mark.parametrize("args, words", [
    (["--algo", "l0", "--top-k", "5"], "heap"),
    (["--algo", "smidas"], "dual"),
    (["--algo", "sgd", "--minibatch", "4"], "mini-batch"),
    (["--algo", "cd"], "batch learner"),
    (["-p", "p.txt"], "sl predict"),
    (["--l1", "0,1e-4"], "single values"),
    (["--save-per-pass", "-f", "m.sl"], "each pass's model"),
])  # fmt: skip
def test_refused_before_any_work(files, args, words):
    pytest.importorskip("distributed")
    res = CliRunner().invoke(cli, ["train", "--dask", "local:2", files[0][0], *args])
    assert res.exit_code == 2 and words in res.output, res.output


def test_sync_every_needs_dask(files):
    res = CliRunner().invoke(cli, ["train", "--sync-every", "100", files[0][0]])
    assert res.exit_code == 2 and "--dask" in res.output


def test_without_dask_one_line_and_exit_2(files, monkeypatch):
    real = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    res = CliRunner().invoke(cli, ["train", "--dask", "local:2", files[0][0]])
    assert res.exit_code == 2
    assert res.output.strip() == "Error: --dask needs Dask: pip install 'streamlearn[dask]'"


def test_doctests_of_the_new_modules():
    import doctest

    from streamlearn.distributed import mixing
    from streamlearn.io import ranges

    for module in (mixing, ranges):
        assert doctest.testmod(module).failed == 0


def test_the_python_api_trains_on_the_cluster(client, files, tmp_path):
    """streamlearn.Model(...).fit(paths, dask=client): the same kind of model, continued too."""
    from streamlearn.api import Model

    train, test = files
    m = Model(loss="logistic").fit(train, dask=client, passes=2)
    assert m.report["distributed"]["ranks"] == 2 and m.nnz > 0
    alone = Model(loss="logistic").fit(train, passes=2)
    y = np.array([float(line.split()[0]) for line in open(test)])
    loss = [np.mean(np.logaddexp(0, -y * x.predict(test))) for x in (m, alone)]
    assert loss[0] < 1.05 * loss[1]
    before = m.report["examples"]
    m.partial_fit(train[:1], dask=client)
    assert m.report["examples"] > before  # continued: the counters carry on


# ---- hostile addresses, unreadable shards, a lost scheduler (issue 30) ----------------


@pytest.mark.parametrize("address", ["garbage", "foo://bar:1", "local:abc", "tcp://[::1", "",
                                     " ", "local:0", "local:99999999999999999", "bad.json",
                                     "notjson.json", "nofile.json"])  # fmt: skip
def test_a_bad_address_is_one_line_and_exit_2(files, tmp_path, monkeypatch, address):
    pytest.importorskip("distributed")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text('{"foo": 1}')
    (tmp_path / "notjson.json").write_text('{"address": 5')
    res = CliRunner().invoke(cli, ["train", "--dask", address, files[0][0], "--quiet"],
                             catch_exceptions=False)  # fmt: skip
    assert res.exit_code == 2, res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    shown = address if address.strip() else repr(address)
    assert len(errors) == 1 and f"--dask {shown}" in errors[0], res.output


def _truncated_gzip(tmp_path, files):
    import gzip

    data = gzip.compress(open(files[0][0], "rb").read())
    path = tmp_path / "cut.vw.gz"
    path.write_bytes(data[: len(data) // 2])
    return str(path)


def test_a_truncated_gzip_on_a_worker_is_what_it_is_locally(client, files, tmp_path):
    from streamlearn.errors import InputUnreadable

    cut = _truncated_gzip(tmp_path, files)
    with pytest.raises(InputUnreadable) as local:
        single({}, [cut], str(tmp_path / "a.sl"))
    with pytest.raises(InputUnreadable) as remote:
        dask_train(client, {}, [files[0][1], cut], str(tmp_path / "b.sl"))
    assert str(remote.value) == str(local.value)
    assert not (tmp_path / "b.sl").exists()


def test_a_truncated_gzip_with_dask_is_exit_3_in_one_line(files, tmp_path):
    pytest.importorskip("distributed")
    import subprocess
    import sys

    from tests.unix import env, one_line_error

    cut = _truncated_gzip(tmp_path, files)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "train", "--dask", "local:1", cut,
                        "-f", "m.sl", "--quiet"], cwd=tmp_path, env=env(tmp_path),
                       capture_output=True, timeout=300)  # fmt: skip
    assert r.returncode == 3, r.stderr
    one_line_error(r.stderr)
    assert b"cannot read " in r.stderr and not (tmp_path / "m.sl").exists()


@pytest.mark.slow
def test_a_scheduler_killed_mid_run_is_exit_11_in_one_line(files, tmp_path):
    """dask scheduler and dask worker as a user starts them; the scheduler killed mid-run."""
    pytest.importorskip("distributed")
    import shutil
    import subprocess
    import sys

    from streamlearn.distributed.segment import TEST_DELAY
    from tests.unix import env, one_line_error

    dask = shutil.which("dask")
    if dask is None:
        pytest.skip("no dask command")
    train, _ = files
    subprocess.run([sys.executable, "-m", "streamlearn", "train", train[0], "-f", "m.sl",
                    "--quiet"], cwd=tmp_path, env=env(tmp_path), timeout=120)  # fmt: skip
    before = (tmp_path / "m.sl").read_bytes()
    sf = tmp_path / "sf.json"
    e = env(tmp_path)
    procs = [subprocess.Popen([dask, "scheduler", "--scheduler-file", str(sf), "--port", "0",
                               "--dashboard-address", ":0"], env=e, stderr=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL)]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not sf.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(sf), "--nthreads",
                                       "1", "--nworkers", "2"], env=dict(e, **{TEST_DELAY: "0.2"}),
                                      stderr=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL))  # fmt: skip
        run = subprocess.Popen([sys.executable, "-m", "streamlearn", "train", *train, "--dask",
                                str(sf), "-i", "m.sl", "-f", "m.sl", "--passes", "3",
                                "--sync-every", "500"], cwd=tmp_path, env=e,
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)  # fmt: skip
        err = b""
        while b"dask: " not in err and run.poll() is None:  # the run has its workers
            err += run.stderr.read1(1 << 16)
        time.sleep(3)
        assert run.poll() is None, err
        procs[0].kill()
        t = time.monotonic()
        err += run.communicate(timeout=120)[1]
        assert time.monotonic() - t < 30
        assert run.returncode == 11, err.decode()
        assert b"lost the cluster" in err
        one_line_error(err)
        assert (tmp_path / "m.sl").read_bytes() == before
    finally:
        for p in procs:
            p.kill()
            p.wait()
