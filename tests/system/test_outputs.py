"""``system/outputs.py``: what a run writes, and what it must never touch.

* the outputs of a run are committed together, the model last: any failure
  of any output leaves the old model (and, before the renames, every file) as
  it was (issue 30, item 3);
* standard output that is one of the inputs is refused (item 2);
* the clean-up of killed runs' temporary files and directories removes only
  sl's own, orphaned ones (item 4);
* paths are resolved as the OS resolves them (item 6).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import subprocess
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.errors import OutputUnwritable
from streamlearn.system import outputs
from tests.marks import slow_except
from tests.unix import SL, env, invoke, leftovers, one_line_error, sl, text_data

TRAIN = ["train", "--algo", "sgd", "--quiet"]
FILES = {  # option -> (file, what the output is called)
    "-f": ("m.sl", "model"),
    "-p": ("p.txt", "predictions"),
    "--report": ("r.json", "report"),
    "--readable-model": ("rm.txt", "readable model"),
    "--invert-hash": ("ih.txt", "invert-hash model"),
}


def _digest(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _snapshot(d) -> dict:
    return {p.name: _digest(p) for p in d.iterdir() if p.is_file() and p.name != "m.sl.lock"}


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.fixture
def day(tmp_path, monkeypatch):
    """A model and yesterday's outputs; today's data.  The test runs in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "yesterday.vw").write_text(text_data(300, seed=1))
    (tmp_path / "today.vw").write_text(text_data(300, seed=2))
    args = [*TRAIN, "yesterday.vw"] + [x for o, (f, _) in FILES.items() for x in (o, f)]
    assert invoke(args).exit_code == 0
    return tmp_path


def _today(*extra):
    args = [*TRAIN, "-i", "m.sl", "today.vw"]
    return invoke(args + [x for o, (f, _) in FILES.items() for x in (o, f)] + list(extra))


# ---- item 3: an output that fails leaves the old model ------------------------------------


@pytest.mark.parametrize("option", ["--report", "--readable-model", "--invert-hash", "-p"])
def test_an_output_to_dev_full_leaves_the_model(day, option):
    """``sl train -i day.sl -f day.sl today.vw --report /dev/full``: exit 7, day.sl as it was
    (it used to hold today's examples, so the retry learned them twice)."""
    before = _snapshot(day)
    args = [*TRAIN, "-i", "m.sl", "-f", "m.sl", "today.vw", option, "/dev/full"]
    r = invoke(args)
    assert r.exit_code == 7 and "/dev/full" in r.output
    assert _snapshot(day) == before
    assert leftovers(day) == []


def _fail_on(monkeypatch, what: str, stage: str) -> None:
    """Make output ``what`` fail with ENOSPC when it is written, prepared or renamed."""
    full = OSError(errno.ENOSPC, "No space left on device")
    if stage == "rename":
        real = os.replace

        name = {w: f for f, w in FILES.values()}[what]

        def replace(src, dst):
            if os.path.basename(os.fspath(dst)) == name:
                raise full
            return real(src, dst)

        monkeypatch.setattr(outputs.os, "replace", replace)
        return
    method = {"write": "write", "prepare": "prepare"}[stage]
    real_method = getattr(outputs.Output, method)

    def failing(self, *a):
        if self.what == what:
            self._fail(full)
        return real_method(self, *a)

    monkeypatch.setattr(outputs.Output, method, failing)


@pytest.mark.parametrize("stage", ["write", "prepare", "rename"])
@pytest.mark.parametrize("what", [w for _, w in FILES.values()])
def test_any_output_failing_anywhere_leaves_the_old_model(day, monkeypatch, what, stage):
    """Every output, failing when written, fsynced or renamed: exit 7, the model as it was;
    before the renames, every other output as it was too."""
    before = _snapshot(day)
    _fail_on(monkeypatch, what, stage)
    r = _today("-f", "m.sl")
    assert r.exit_code == 7, r.output
    assert "no space left on device" in r.output.lower()
    after = _snapshot(day)
    assert after["m.sl"] == before["m.sl"]
    if stage != "rename":
        assert after == before
    assert leftovers(day) == []


def test_a_grid_with_a_failing_report_writes_no_model(day):
    r = invoke([*TRAIN, "today.vw", "--l1", "0,1e-5", "-f", "g-{l1}.sl", "--report", "/dev/full"])
    assert r.exit_code == 7
    assert not list(day.glob("g-*.sl")) and leftovers(day) == []


def test_predict_with_a_failing_report_keeps_the_predictions(day):
    before = _snapshot(day)
    r = invoke(["predict", "-i", "m.sl", "today.vw", "-p", "p.txt", "--report", "/dev/full"])
    assert r.exit_code == 7
    assert _snapshot(day) == before


def test_the_models_are_renamed_last(tmp_path, monkeypatch):
    order = []
    real = os.replace
    monkeypatch.setattr(outputs.os, "replace", lambda s, d: (order.append(d), real(s, d)))
    with outputs.staging() as stage:
        for name, what in [("m1", "model"), ("r", "report"), ("m2", "model"), ("p", "x")]:
            outputs.write_bytes(str(tmp_path / name), b"data", what)
        assert not any(tmp_path.iterdir())  # recorded only
        stage.write()
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) != []
        assert not (tmp_path / "m1").exists()  # written, not visible
        stage.commit()
    assert [os.path.basename(d) for d in order] == ["r", "p", "m1", "m2"]
    assert (tmp_path / "m2").read_bytes() == b"data"


def test_a_staging_block_that_raises_leaves_no_file(tmp_path):
    (tmp_path / "m").write_text("old")
    with pytest.raises(RuntimeError), outputs.staging() as stage:
        outputs.write_bytes(str(tmp_path / "m"), b"new", "model")
        stage.write()
        raise RuntimeError
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    assert (tmp_path / "m").read_text() == "old"


@pytest.mark.slow
def test_a_broken_pipe_on_a_staged_output_is_exit_7_not_141(tmp_path):
    """141 says the model was written: a report whose reader left before the outputs
    were made visible fails the run instead (7), with the old model in place."""
    (tmp_path / "d.vw").write_text(text_data(300))
    (tmp_path / "m.sl").write_bytes(b"old model")
    line = (f"{' '.join(SL)} train d.vw --algo sgd -f m.sl --report /dev/stdout --quiet "
            "| (exec 0<&-; sleep 3); echo ${PIPESTATUS[0]} >&2")  # fmt: skip
    r = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env(tmp_path),
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    *message, code = r.stderr.splitlines()
    assert code == "7", r.stderr
    one_line_error("\n".join(message))
    assert (tmp_path / "m.sl").read_bytes() == b"old model"
    assert leftovers(tmp_path) == []


# ---- item 2: standard output that is an input -------------------------------------------


@pytest.mark.parametrize("command", slow_except([
    "SL train big.vw -p - --quiet >> big.vw",
    "SL train big.vw --report - --quiet >> big.vw",
    "SL train big.vw -p /dev/stdout --quiet >> big.vw",
    "SL train big.vw -p /dev/fd/1 --quiet >> big.vw",
    "SL train big.vw -p /dev/fd/3 --quiet 3>> big.vw",
    "SL train -p - --quiet < big.vw >> big.vw",
    "SL predict -i m.sl big.vw -p - --quiet >> big.vw",
    "SL predict -i m.sl -p - --quiet < big.vw >> big.vw",
    "SL predict -i m.sl big.vw -p - --quiet >> m.sl",
    "SL train -i m.sl big.vw -p - --quiet >> m.sl",
], 0, 5, 8))  # fmt: skip
def test_stdout_appended_to_an_input_is_refused(tmp_path, command):
    """``cat``'s "input file is output file": the run would read its own lines back."""
    (tmp_path / "big.vw").write_text(text_data(400))
    assert sl(["train", "big.vw", "--algo", "sgd", "-f", "m.sl", "--quiet"],
              tmp_path).returncode == 0  # fmt: skip
    before = _snapshot(tmp_path)
    r = sl([command], tmp_path, shell=True)
    assert r.returncode == 2, r.stderr
    one_line_error(r.stderr)
    assert b"(input file is output file)" in r.stderr or b"is the initial model" in r.stderr
    assert _snapshot(tmp_path) == before


def test_stderr_appended_to_an_input_is_refused_too(tmp_path):
    """(The refusal itself then lands in the input: stderr is where errors go.)"""
    (tmp_path / "big.vw").write_text(text_data(400))
    before = (tmp_path / "big.vw").read_text()
    r = sl(["SL train big.vw --report /dev/stderr --quiet 2>> big.vw"], tmp_path, shell=True)
    assert r.returncode == 2
    added = (tmp_path / "big.vw").read_text()[len(before):]
    assert added.startswith("Error: report would be written to /dev/stderr (descriptor 2), "
                            "which is the input big.vw")  # fmt: skip
    assert added.count("\n") == 1


@pytest.mark.parametrize("command", slow_except([
    "SL predict -i m.sl big.vw -p - --quiet >> other.txt",
    "cat big.vw | SL predict -i m.sl -p - --quiet | cat > other.txt",
    "SL predict -i m.sl -p - --quiet < big.vw > other.txt",
], 1))  # fmt: skip
def test_stdout_elsewhere_is_fine(tmp_path, command):
    (tmp_path / "big.vw").write_text(text_data(400))
    assert sl(["train", "big.vw", "-f", "m.sl", "--quiet"], tmp_path).returncode == 0
    r = sl([command], tmp_path, shell=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "other.txt").read_text().count("\n") == 400


# ---- item 4: clean-up of temporary files and directories -----------------------------------


def test_a_temporary_file_is_named_and_locked_as_sl_s_own(tmp_path):
    out = outputs.Output(str(tmp_path / "m.sl"), "model")
    try:
        name = os.path.basename(out.tmp)
        assert re.fullmatch(rf"\.m\.sl\.sltmp-{os.getpid()}\.[a-z0-9_]{{8}}\.tmp", name)
        fd = os.open(out.tmp, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # held by its owner
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    finally:
        out.abort()


def test_only_orphaned_temporaries_of_sl_are_removed(tmp_path):
    """A user's files, other processes' temporaries, huge 'pids': all left alone."""
    dead, me = _dead_pid(), os.getpid()
    keep = [
        ".m.sl.123456.backup.tmp",  # the examples
        ".m.sl.4000000.notes.tmp",
        ".m.sl.99999999999999999999.x.tmp",  # crashed the run (OverflowError)
        f".m.sl.{dead}.abcdefgh.tmp",  # the old format: not certainly ours
        ".m.sl.sltmp-99999999999999999999.abcdefgh.tmp",  # no such pid
        ".m.sl.sltmp-0.abcdefgh.tmp",
        f".m.sl.sltmp-{dead}.abcdefgh.tmp.bak",
        f".m.sl.sltmp-{dead}.abcdefg.tmp",  # not our token
        f".m.sl.sltmp-{me}.abcdefgh.tmp",  # alive (this process)
        f".other.sl.sltmp-{dead}.abcdefgh.tmp",  # another target
        ".m.sl.sltmp-1.abcdefgh.tmp",  # pid 1 lives
    ]
    for name in keep:
        (tmp_path / name).write_text("mine")
    (tmp_path / "victim").write_text("keep me")
    (tmp_path / f".m.sl.sltmp-{dead}.linkedxx.tmp").symlink_to(tmp_path / "victim")
    os.mkdir(tmp_path / f".m.sl.sltmp-{dead}.adirxxxx.tmp")
    held = tmp_path / f".m.sl.sltmp-{dead}.heldxxxx.tmp"  # dead pid, but locked by someone
    held.write_text("")
    hfd = os.open(held, os.O_RDONLY)
    fcntl.flock(hfd, fcntl.LOCK_EX)
    orphan = tmp_path / f".m.sl.sltmp-{dead}.orphan_1.tmp"
    orphan.write_text("left by kill -9")
    try:
        outputs.write_bytes(str(tmp_path / "m.sl"), b"model", "model")
    finally:
        os.close(hfd)
    names = {p.name for p in tmp_path.iterdir()}
    assert orphan.name not in names
    assert set(keep) | {"victim", "m.sl", held.name} <= names
    assert (tmp_path / "victim").read_text() == "keep me"
    assert (tmp_path / f".m.sl.sltmp-{dead}.linkedxx.tmp").is_symlink()
    assert (tmp_path / f".m.sl.sltmp-{dead}.adirxxxx.tmp").is_dir()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(names=st.lists(st.text(st.sampled_from(".msl0123456789tpx-_abc~"), min_size=1,
                              max_size=40), max_size=8, unique=True))  # fmt: skip
def test_clean_up_never_crashes_nor_takes_a_name_it_did_not_make(tmp_path, names):
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp(dir=tmp_path))
    made = []
    for n in names:
        if n in (".", "..", "m.sl") or "/" in n:
            continue
        (d / n).write_text("x")
        made.append(n)
    outputs.write_bytes(str(d / "m.sl"), b"model", "model")
    ours = re.compile(r"\.m\.sl\.sltmp-[0-9]+\.[a-z0-9_]{8}\.tmp")
    left = {p.name for p in d.iterdir()}
    for n in made:  # only a name of sl's own pattern may go (and then only when orphaned)
        assert n in left or ours.fullmatch(n), n


def test_temporary_directories_carry_their_owner(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs.tempfile, "tempdir", str(tmp_path))
    dead, me = _dead_pid(), os.getpid()
    orphan = tmp_path / f"sl-cache-sltmp-{dead}.abcdefgh"
    orphan.mkdir()
    (orphan / "batches.cache").write_text("x")
    held = tmp_path / f"sl-cache-sltmp-{dead}.heldxxxx"
    held.mkdir()
    keep = [f"sl-cache-sltmp-{me}.abcdefgh", "sl-cache-mine", f"sl-cache-{dead}.abcdefgh",
            "sl-cache-sltmp-1.abcdefgh", f"other-sltmp-{dead}.abcdefgh"]  # fmt: skip
    for k in keep:
        (tmp_path / k).mkdir()
    hfd = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(hfd, fcntl.LOCK_EX)
    try:
        d = outputs.temp_dir("sl-cache-")
    finally:
        os.close(hfd)
    try:
        assert re.fullmatch(rf"sl-cache-sltmp-{me}\.[a-z0-9_]{{8}}", os.path.basename(d))
        names = {p.name for p in tmp_path.iterdir()}
        assert orphan.name not in names
        assert set(keep) | {held.name, os.path.basename(d)} <= names
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(BlockingIOError):  # locked by its owner, this process
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    finally:
        outputs.forget_temp(d)
    assert not os.path.exists(d)


def test_a_killed_run_s_temporary_cache_is_removed_by_the_next(tmp_path):
    """``kill -9`` during a run that caches stdin for --passes: the next run cleans up."""
    data = text_data(2000).encode()
    tmp = tmp_path / "tmpdir"
    proc = subprocess.Popen([*SL, "train", "--passes", "3", "--quiet"], stdin=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env(tmp_path), cwd=tmp_path)  # fmt: skip
    try:
        proc.stdin.write(data[:50000])
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not list(tmp.glob("sl-cache-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(tmp.glob("sl-cache-sltmp-*"))) == 1
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
    (tmp / "sl-cache-mine").mkdir()
    r = sl(["train", "--passes", "2", "--quiet"], tmp_path, input=data)
    assert r.returncode == 0, r.stderr
    assert [p.name for p in tmp.iterdir()] == ["sl-cache-mine"]


# ---- item 6: paths as the OS resolves them ------------------------------------------------


def test_a_missing_directory_before_dotdot_fails_as_the_os_would(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.vw").write_text(text_data(200))
    with pytest.raises(FileNotFoundError):
        open("no_such_dir/../y.sl", "w")  # what the OS says
    r = invoke([*TRAIN, "d.vw", "-f", "no_such_dir/../y.sl"])
    assert r.exit_code == 2 and "does not exist" in r.output
    assert not (tmp_path / "y.sl").exists()
    with pytest.raises(OutputUnwritable, match="(?i)no such file or directory"):
        outputs.write_bytes("no_such_dir/../y.sl", b"x", "model")  # without the check
    assert not (tmp_path / "y.sl").exists()


@pytest.mark.parametrize("option", list(FILES))
def test_a_symlink_loop_fails_with_eloop(tmp_path, monkeypatch, option):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.vw").write_text(text_data(200))
    os.symlink("loop", tmp_path / "loop")
    r = invoke([*TRAIN, "d.vw", option, "loop"])
    assert r.exit_code == 2 and "too many levels of symbolic links" in r.output.lower()
    assert os.readlink(tmp_path / "loop") == "loop"
    with pytest.raises(OutputUnwritable, match="(?i)too many levels of symbolic links"):
        outputs.write_bytes("loop", b"x", "model")
    assert os.readlink(tmp_path / "loop") == "loop"


def test_target_follows_links_as_the_os_does(tmp_path):
    real = tmp_path / "real"
    real.write_text("old")
    prev = real
    for k in range(outputs.MAXSYMLINKS):  # a chain of 40 links: followed
        link = tmp_path / f"l{k}"
        link.symlink_to(prev.name)
        prev = link
    assert outputs.target(str(prev)) == str(real)
    outputs.write_bytes(str(prev), b"new", "model")
    assert real.read_bytes() == b"new" and prev.is_symlink()
    (tmp_path / "l40").symlink_to(prev.name)  # 41: as the OS, refused
    with pytest.raises(OSError) as e:
        outputs.target(str(tmp_path / "l40"))
    assert e.value.errno == errno.ELOOP
    with pytest.raises(OSError) as e:
        open(tmp_path / "l40", "w")
    assert e.value.errno == errno.ELOOP
    (tmp_path / "dangling").symlink_to("sub/../created")  # the OS creates the target
    assert outputs.target(str(tmp_path / "dangling")) == str(tmp_path / "sub/../created")
    (tmp_path / "sub").mkdir()
    outputs.write_bytes(str(tmp_path / "dangling"), b"x", "model")
    assert (tmp_path / "created").read_bytes() == b"x"
    assert (tmp_path / "dangling").is_symlink()


def test_staging_is_this_thread_s_only(tmp_path):
    """A library caller saving from another thread meanwhile writes at once."""
    import threading

    with outputs.staging() as stage:
        t = threading.Thread(target=outputs.write_bytes, args=(str(tmp_path / "other"), b"x",
                                                                "model"))  # fmt: skip
        t.start()
        t.join()
        assert (tmp_path / "other").read_bytes() == b"x"
        outputs.write_bytes(str(tmp_path / "mine"), b"y", "model")
        assert not (tmp_path / "mine").exists()
        stage.write()
        stage.commit()
    assert (tmp_path / "mine").read_bytes() == b"y"


@pytest.mark.parametrize("spelling", ["./x.sl", "sub/../x.sl", "{tmp}/x.sl", "link/x.sl"])
def test_two_outputs_naming_one_new_file_are_refused_however_spelled(tmp_path, monkeypatch,
                                                                      spelling):  # fmt: skip
    """``-f ./x.sl --pid-file x.sl`` (neither there yet) was not caught: the paths were
    compared as typed.  A new file is its directory, as the OS resolves it, and its name."""
    from streamlearn.errors import UsageError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(".")
    other = spelling.format(tmp=tmp_path)
    with pytest.raises(UsageError, match="name the same file"):
        outputs.check_outputs([("x.sl", "final model"), (other, "pid file")], ["d.vw"])
    outputs.check_outputs([("x.sl", "final model"), ("y.sl", "pid file")], ["d.vw"])
