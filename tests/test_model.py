"""Model files: round trip, every corruption refused, atomic under SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.errors import ModelError
from streamlearn.learners import truncated
from streamlearn.learners.base import make_params
from streamlearn.learners.losses import LOGISTIC
from tests.streams import random_stream


def small_model(seed: int = 0, bits: int = 6, stream_bits: int | None = None,
                final: bool = False) -> model_io.Model:  # fmt: skip
    config = TrainConfig(bits=bits, algo="tg", loss="logistic", l1=0.01)
    params = config.params()
    stream = random_stream(seed, n=200, bits=stream_bits or bits)
    table = truncated.SPEC.new_table(bits)
    gstate = truncated.SPEC.init_gstate(params)
    from streamlearn.learners.base import new_rows, new_stats

    stats = new_stats()
    truncated.train_batch(
        table, gstate, params, LOGISTIC, stream.indptr, stream.indices, stream.values,
        stream.labels, stream.weights, stream.bases, stream.status, stats, new_rows(),
        np.empty(stream.n),
    )
    return model_io.from_training(
        config, truncated.SPEC, table, gstate, stats, params, names={3: ["a^b"]}, final=final
    )


def test_round_trip(tmp_path):
    m = small_model()
    path = tmp_path / "m.sl"
    model_io.save(m, path)
    back = model_io.load(path)
    assert back.config == m.config
    assert back.learner == "tg"
    np.testing.assert_array_equal(back.slots, m.slots)
    np.testing.assert_array_equal(back.state, m.state)
    np.testing.assert_array_equal(back.weights, m.weights)
    np.testing.assert_array_equal(back.gstate, m.gstate)
    np.testing.assert_array_equal(back.stats, m.stats)
    assert back.names == {3: ["a^b"]}
    assert b"pickle" not in path.read_bytes()


def test_file_size_follows_nnz(tmp_path):
    a, b = small_model(bits=10, stream_bits=6), small_model(bits=24, stream_bits=6)
    model_io.save(a, tmp_path / "a.sl")
    model_io.save(b, tmp_path / "b.sl")
    np.testing.assert_array_equal(a.weights, b.weights)
    assert abs((tmp_path / "a.sl").stat().st_size - (tmp_path / "b.sl").stat().st_size) < 100


def test_current_weights_match_flush():
    m = small_model()
    params = make_params(l1=0.01, learning_rate=0.5, power_t=0.5)
    table = m.table(truncated.SPEC.fresh)
    gstate = m.gstate.copy()
    truncated.rebase(table, gstate, params)
    np.testing.assert_array_equal(table[m.slots, 0], m.weights)


def test_every_byte_corruption_and_truncation_is_refused(tmp_path):
    path = tmp_path / "m.sl"
    model_io.save(small_model(bits=3), path)
    data = path.read_bytes()
    assert len(data) < 4000
    for i in range(len(data)):
        for flip in (0x01, 0x80):
            bad = bytearray(data)
            bad[i] ^= flip
            with pytest.raises(ModelError):
                model_io.decode(bytes(bad))
    for n in range(len(data)):
        with pytest.raises(ModelError):
            model_io.decode(data[:n])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", r"is empty \(0 bytes\), not an sl model"),
        (b"hello world" * 10, "not an sl model"),
        (b"SLMODEL\0\x09\0\0\0" + b"\0" * 40, "version 9"),
    ],
)
def test_foreign_files_are_refused_clearly(data, message):
    with pytest.raises(ModelError, match=message):
        model_io.decode(data)


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="cannot read model"):
        model_io.load(tmp_path / "nope.sl")


_SAVER = """
import sys, numpy as np
from streamlearn import model as model_io
from tests.test_model import small_model
m = small_model(seed=int(sys.argv[2]), bits=12)
print("ready", flush=True)
while True:
    model_io.save(m, sys.argv[1])
"""


@pytest.mark.slow
def test_sigkill_while_saving_leaves_old_or_new(tmp_path):
    path = tmp_path / "model.sl"
    old = small_model(seed=1, bits=12)
    model_io.save(old, path)
    new = small_model(seed=2, bits=12)
    rng = np.random.default_rng(0)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    for _ in range(100):
        proc = subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(path), "2"],
            stdout=subprocess.PIPE, env=env,
        )
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0, 0.02))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        m = model_io.load(path)
        assert np.array_equal(m.weights, old.weights) or np.array_equal(m.weights, new.weights)
    leftovers = [p for p in os.listdir(tmp_path) if p != "model.sl"]
    assert len(leftovers) <= 1  # the last killed save's temp file at most
    model_io.save(old, path)  # the next save clears temp files of dead savers
    assert os.listdir(tmp_path) == ["model.sl"]


@pytest.mark.parametrize("density", [0.0, 0.3, 0.5, 0.7, 1.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_final_models_rows_equal_the_tables_rows(density, dtype):
    """final_rows moves the kept rows to the table's front when they are most of it:
    the same rows as a copy, in order, whichever way it goes."""
    from streamlearn.learners.base import final_rows

    for seed in range(5):
        rng = np.random.default_rng(seed)
        rows = int(rng.integers(1, 3000))
        table = rng.normal(size=(rows, 4)).astype(dtype)
        slots = np.flatnonzero(rng.random(rows) < density).astype(np.uint32)
        expected = table[slots].copy()
        got = final_rows(table, slots)
        assert got.dtype == dtype and got.shape == (slots.shape[0], 4)
        np.testing.assert_array_equal(got, expected)
        if 2 * slots.shape[0] >= rows:  # moved in place: a view of the table's front
            assert np.shares_memory(got, table)


@pytest.mark.parametrize("bits", [6, 12])
def test_a_final_snapshot_is_the_snapshot(bits):
    """At -b 6 the 200 examples touch most slots (rows moved in place), at -b 12 few."""
    a, b = small_model(bits=bits), small_model(bits=bits, final=True)
    assert (2 * b.slots.shape[0] >= 1 << bits) == (bits == 6)
    for attr in model_io.FINITE_ARRAYS:
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    np.testing.assert_array_equal(a.slots, b.slots)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("attr", ["weights", "state", "gstate", "stats"])
def test_non_finite_names_the_array(bad, attr):
    m = small_model()
    assert model_io.non_finite(m) is None
    getattr(m, attr).flat[-1] = bad
    assert model_io.non_finite(m) == model_io.FINITE_ARRAYS[attr]


@pytest.mark.parametrize("rows", [1, 63, 64, 65, 1000, 4099])
@pytest.mark.parametrize("ncols", [1, 3])
def test_stored_slots_are_the_rows_with_a_nonzero_state(rows, ncols):
    """The compiled bitmap listing against numpy, on tables whose size is no multiple of 64."""
    from streamlearn.learners.base import stored_slots

    rng = np.random.default_rng(rows * 7 + ncols)
    table = np.zeros((rows, 4), dtype=np.float32)
    hit = rng.random((rows, 4)) < 0.1
    table[hit] = rng.normal(size=hit.sum()).astype(np.float32)
    table[-1, ncols - 1] = 1.0  # the last row, kept through its last stored column
    if rows > 2:
        table[1, ncols:] = 5.0  # only columns that are not stored: not kept
        table[1, :ncols] = 0.0
    got = stored_slots(table, ncols)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, np.flatnonzero((table[:, :ncols] != 0).any(axis=1)))


def test_a_float32_state_is_written_as_float32_and_read_back_exactly(tmp_path):
    """gd's and FTRL's tables are float32: the file keeps their state as it is
    (format version 2), not a float64 copy of the same numbers (version 1)."""
    import dataclasses

    from streamlearn.system.outputs import staging

    m64 = small_model(bits=8)
    m64.state[:] = np.float32(m64.state)  # values a float32 table holds exactly
    m32 = dataclasses.replace(m64, state=m64.state.astype(np.float32))
    wide, narrow = model_io._encode(m64), model_io._encode(m32)
    assert len(wide) - len(narrow) == 4 * m64.state.size + len(b"64") - len(b"32")
    model_io.save(m32, tmp_path / "direct.sl")
    with staging() as stage:
        model_io.save(m32, tmp_path / "staged.sl")
        stage.write()
        stage.commit()
    for name in ("direct.sl", "staged.sl"):
        assert (tmp_path / name).read_bytes() == narrow
        back = model_io.load(tmp_path / name)
        assert back.state.dtype == np.float32
        np.testing.assert_array_equal(back.state, m64.state)
        np.testing.assert_array_equal(back.weights, m64.weights)


def _as_version(data: bytes, version: int) -> bytes:
    """The same file under another format version number (its checksum made again)."""
    import hashlib

    _, _, hlen = model_io._PREFIX.unpack_from(data)
    body = model_io._PREFIX.pack(model_io.MAGIC, version, hlen) + data[model_io._PREFIX.size : -32]
    return body + hashlib.sha256(body).digest()


def test_versions_1_and_2_read_and_others_are_refused_by_number(tmp_path):
    """Version 1 (before the float32 state) still reads; a version 1 file cannot hold
    a float32 state; a version this sl does not know is refused by its number, which
    is also what an older sl says of a version 2 file."""
    import dataclasses

    m64 = small_model(bits=8)
    m32 = dataclasses.replace(m64, state=m64.state.astype(np.float32))
    old = tmp_path / "old.sl"
    old.write_bytes(_as_version(model_io._encode(m64), 1))
    back = model_io.load(old)
    assert back.state.dtype == np.float64
    np.testing.assert_array_equal(back.state, m64.state)
    crafted = tmp_path / "crafted.sl"
    crafted.write_bytes(_as_version(model_io._encode(m32), 1))
    with pytest.raises(ModelError, match="array state must be float64"):
        model_io.load(crafted)
    future = tmp_path / "future.sl"
    future.write_bytes(_as_version(model_io._encode(m64), 3))
    with pytest.raises(ModelError, match="format version 3; this sl reads versions 1, 2"):
        model_io.load(future)
