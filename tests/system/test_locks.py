"""``system/locks.py``: the lock of a model continued in place is sl's own regular file."""

from __future__ import annotations

import hashlib
import os

import pytest

from streamlearn.system.locks import model_lock
from tests.unix import invoke, leftovers, text_data

TRAIN = ["train", "--algo", "sgd", "--quiet"]


@pytest.fixture
def model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.vw").write_text(text_data(300))
    assert invoke([*TRAIN, "d.vw", "-f", "m.sl"]).exit_code == 0
    return tmp_path / "m.sl"


def _digest(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("target", ["victim", "missing_dir/victim", "/dev/null"])
def test_a_symlink_at_the_lock_is_not_followed(tmp_path, model, target):
    """A link planted at m.sl.lock would make every run create or lock a file elsewhere."""
    os.symlink(target, tmp_path / "m.sl.lock")
    before = _digest(model)
    r = invoke([*TRAIN, "-i", "m.sl", "d.vw", "-f", "m.sl"])
    assert r.exit_code == 7
    assert "m.sl.lock: it is a symbolic link" in r.output
    assert _digest(model) == before
    assert not (tmp_path / "victim").exists()
    assert os.readlink(tmp_path / "m.sl.lock") == target
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("kind", ["fifo", "dir"])
def test_anything_but_a_regular_file_at_the_lock_is_refused(tmp_path, model, kind):
    lock = tmp_path / "m.sl.lock"
    os.mkfifo(lock) if kind == "fifo" else lock.mkdir()
    before = _digest(model)
    r = invoke([*TRAIN, "-i", "m.sl", "d.vw", "-f", "m.sl"])
    assert r.exit_code == 7 and "m.sl.lock" in r.output
    assert _digest(model) == before


def test_the_lock_sits_beside_the_model_s_real_file(tmp_path, model):
    """Through a symlink to the model, runs lock the same file (beside the target)."""
    os.mkdir(tmp_path / "real")
    os.rename(model, tmp_path / "real" / "m.sl")
    os.symlink("real/m.sl", tmp_path / "m.sl")
    r = invoke([*TRAIN, "-i", "m.sl", "d.vw", "-f", "m.sl"])
    assert r.exit_code == 0
    assert (tmp_path / "real" / "m.sl.lock").is_file()
    assert not (tmp_path / "m.sl.lock").exists()
    assert os.path.islink(tmp_path / "m.sl")


def test_an_existing_lock_file_is_reused(tmp_path, model):
    (tmp_path / "m.sl.lock").write_text("")
    with model_lock("m.sl", "m.sl", 1.0, print):
        pass
    assert (tmp_path / "m.sl.lock").is_file()
