"""One writer per run directory (``tf_vrre.runs.locks``): ``RUN/.lock``, taken by ``tf-vrre train``
once its checks have passed, shared by readers.

A second ``tf-vrre train`` (``--overwrite`` or a resume) on a run another process holds is
refused with one line and exit 2, before TensorFlow starts, and deletes nothing; a refused command
changes nothing at all (no pid written, no file created, no mtime moved); a released lock keeps no
pid; a process whose lock file was deleted by hand (so that another process got in) removes
nothing.  The first process here is a tiny Python process holding the lock.
"""

import json
import os
import re
import subprocess
import sys

import pytest
from _cli_probe import run_cli
from _paths import ROOT

from tf_vrre.runs import locks, run_json

SCRIPT = os.path.join(os.path.dirname(sys.executable), "tf-vrre")
COMMAND = [SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "tf_vrre.cli"]
ENV = dict(os.environ, PYTHONPATH=ROOT)
HOLD = (
    "import sys, time; from tf_vrre.runs import locks; lock = getattr(locks, sys.argv[2])(sys.argv[1]); "
    "print('held', flush=True); time.sleep(120)"
)


def _fake_run(run, config=None):
    """A run directory as a running ``tf-vrre train`` leaves it (files whose loss would show)."""
    for d in ("samples", "swaps", "backup"):
        (run / d).mkdir(parents=True)
        (run / d / "keep.txt").write_text(d)
    (run / "samples" / "manifest.json").write_text('{"format": "tf_vrre.samples/1", "entries": []}')
    (run / "run.json").write_text(
        json.dumps(
            {
                "format": run_json.FORMAT,
                "status": "running",
                "method": "msgd",
                "config": config or {"method": "msgd"},
                "model": {},
                "data": {},
                "preprocessing": {},
                "seed": 0,
            }
        )
    )


def _snapshot(run, lock=False):
    return {
        os.path.relpath(os.path.join(d, f), run): open(os.path.join(d, f), "rb").read()
        for d, _, files in os.walk(run)
        for f in files
        if lock or f != run_json.LOCK
    }


def _stat(run):
    """Every entry's bytes and mtime, and the directories' mtimes (a file created and removed shows)."""
    out = {}
    for d, _dirs, files in os.walk(run):
        out[d] = os.stat(d).st_mtime_ns
        for f in files:
            p = os.path.join(d, f)
            out[p] = (os.stat(p).st_mtime_ns, open(p, "rb").read())
    return out


def _hold(path, how="lock_run"):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), how], stdout=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture()
def holder(tmp_path):
    run = tmp_path / "run"
    _fake_run(run)
    proc = _hold(run)
    try:
        yield run
    finally:
        proc.kill()
        proc.wait()


def tf_vrre_cli(*args):
    return subprocess.run(COMMAND + list(args), capture_output=True, text=True, env=ENV, timeout=120)


@pytest.mark.parametrize("extra", [["--overwrite"], []])
def test_a_second_writer_is_refused_before_tensorflow_and_deletes_nothing(holder, extra, tmp_path):
    before = _snapshot(holder)
    flags = ["train", "--config", "sghmc", "--out", str(holder), "--subset", "64", "--epochs", "1", *extra]
    result, tensorflow_imported = run_cli(*flags, marker=tmp_path / "tensorflow-imported", env=ENV)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("tf-vrre: error: train: --out: ") and str(holder) in lines[0]
    assert "being written by another process (pid " in lines[0]
    assert _snapshot(holder) == before and os.path.exists(holder / run_json.LOCK)
    assert not tensorflow_imported  # refused before TensorFlow starts


def test_a_refused_train_touches_nothing_in_the_run(tmp_path):
    """``tf-vrre train`` of another method into a finished run's directory is refused; it used to
    rewrite the run's ``.lock`` (its pid) first.  Every byte, mtime and entry stays."""
    run = tmp_path / "run"
    _fake_run(run)
    (run / run_json.LOCK).write_text("")  # as a finished run leaves it
    os.utime(run, ns=(1, 1))
    before = _stat(run)
    result = tf_vrre_cli("train", "--config", "sghmc", "--out", str(run), "--subset", "64", "--epochs", "1")
    assert result.returncode == 2 and "holds a different run (msgd)" in result.stderr, result.stderr
    assert _stat(run) == before
    os.remove(run / run_json.LOCK)  # a run directory written before the lock existed: none is created
    os.utime(run, ns=(1, 1))
    before = _stat(run)
    result = tf_vrre_cli("train", "--config", "sghmc", "--out", str(run), "--subset", "64", "--epochs", "1")
    assert result.returncode == 2 and _stat(run) == before, result.stderr


def test_lock_is_reentrant_in_process_exclusive_across_and_released_without_a_pid(tmp_path):
    first = locks.lock_run(tmp_path / "r")
    assert locks.lock_run(tmp_path / "r") is first and locks.holds_run_lock(tmp_path / "r")
    assert (tmp_path / "r" / run_json.LOCK).read_text() == str(os.getpid())
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tf_vrre.runs import locks; locks.lock_run(sys.argv[1])",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert other.returncode != 0 and f"being written by another process (pid {os.getpid()})" in other.stderr
    locks.unlock_run(tmp_path / "r")
    assert not locks.holds_run_lock(tmp_path / "r") and first.closed
    assert (tmp_path / "r" / run_json.LOCK).read_text() == ""  # no stale pid
    again = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tf_vrre.runs import locks; locks.lock_run(sys.argv[1])",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr


def test_readers_share_the_lock_touch_nothing_and_keep_writers_out(tmp_path):
    run = tmp_path / "run"
    _fake_run(run)
    (run / run_json.LOCK).write_text("")
    before = _stat(run)
    reader = _hold(run, "share_run")
    try:
        assert locks.share_run(run) is not None  # readers share it
        with pytest.raises(locks.RunLockedError, match="is being read by another process"):
            locks.lock_run(run)
    finally:
        reader.kill()
        reader.wait()
    assert _stat(run) == before
    os.remove(run / run_json.LOCK)
    assert locks.share_run(run) is None and not os.path.exists(run / run_json.LOCK)  # never creates it
    writer = _hold(run)
    try:
        assert locks.share_run(run) is None  # a run being trained is read as it is
    finally:
        writer.kill()
        writer.wait()


def test_library_train_refuses_a_run_another_process_writes(holder):
    from tf_vrre.workflows.image_classification import run_directory

    with pytest.raises(locks.RunLockedError, match="being written by another process"):
        locks.lock_run(holder)
    with pytest.raises(locks.RunLockedError, match="being written by another process"):
        run_directory.clear(str(holder))  # --overwrite's clear never runs without the lock ...
    assert (holder / "samples" / "keep.txt").exists()


def test_overwrite_never_removes_a_directory_another_process_writes(tmp_path):
    from tf_vrre.workflows.image_classification import run_directory

    run = tmp_path / "run"
    _fake_run(run)
    locks.lock_run(run)
    collector = _hold(run / "samples" / run_json.LOCK, "acquire")  # a SampleCollector of another process
    try:
        with pytest.raises(locks.RunLockedError, match=r"cannot replace .*samples: .*being written by another process"):
            run_directory.clear(str(run))
        assert (run / "samples" / "keep.txt").exists()
    finally:
        collector.kill()
        collector.wait()
        locks.unlock_run(run)


def test_a_process_whose_lock_was_deleted_by_hand_removes_nothing(tmp_path):
    """After ``RUN/.lock`` is deleted by hand, another process can lock a new file of that name; the
    first process then no longer owns the directory: its clean-up (a directory it made for a run
    that wrote nothing) and its ``--overwrite`` clear leave the second one's files alone."""
    from tf_vrre.workflows.image_classification import config, planning, run_directory

    out = tmp_path / "new"
    cfg = config.resolve(config.load("msgd"))
    pre = run_directory.take_run(planning.Preflight(cfg, str(out)))
    assert pre.created is not None and os.listdir(out) == [run_json.LOCK]
    os.remove(out / run_json.LOCK)  # by hand
    second = _hold(out)
    try:
        with pytest.raises(locks.RunLockedError, match="was deleted or replaced while this process held it"):
            run_directory.clear(str(out))
        with pytest.raises(locks.RunLockedError, match="was deleted or replaced"):
            locks.lock_run(out)
        run_directory.give_back(pre)
        assert os.listdir(out) == [run_json.LOCK] and (out / run_json.LOCK).read_text() == str(second.pid)
    finally:
        second.kill()
        second.wait()
    pre = run_directory.take_run(planning.Preflight(cfg, str(tmp_path / "empty")))
    run_directory.give_back(pre)  # still its own: the directory it made is removed again
    assert not os.path.exists(tmp_path / "empty")


def test_a_planted_link_at_the_run_lock_is_refused(tmp_path):
    target = tmp_path / "outside"
    target.write_text("keep")
    (tmp_path / "r").mkdir()
    os.symlink(target, tmp_path / "r" / run_json.LOCK)
    with pytest.raises(OSError, match="symbolic link"):
        locks.lock_run(tmp_path / "r")
    assert locks.share_run(tmp_path / "r") is None  # a reader reads on, through no link
    assert target.read_text() == "keep"


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_directory_or_fifo_at_a_lock_name_is_refused_by_name_without_blocking(kind, tmp_path):
    """A FIFO at ``.lock`` used to end as "File or stream is not seekable" (writers), and a reader's
    read-only open of a FIFO waits for a writer; a directory was a raw ``IsADirectoryError``."""
    from tf_vrre.runs import atomic

    run = tmp_path / "r"
    run.mkdir()
    (os.mkdir if kind == "directory" else os.mkfifo)(run / run_json.LOCK)
    what = "a directory" if kind == "directory" else "a FIFO (named pipe)"
    with pytest.raises(
        atomic.SpecialFileError,
        match=re.escape(
            f"lock file {run}/.lock is {what}, not a regular file; "
            "tf_vrre locks regular files only: remove it and run again"
        ),
    ):
        locks.lock_run(run)
    assert locks.share_run(run) is None  # a reader reads on, and does not wait
    locks.check_run_free(run)
    log = run / "log.csv"
    (os.mkdir if kind == "directory" else os.mkfifo)(log)
    with pytest.raises(atomic.SpecialFileError, match=re.escape(f"log file {log} is {what}, not a regular file")):
        atomic.open_append(log)


def test_overwrite_clears_derived_outputs_but_keeps_the_lock(tmp_path):
    from tf_vrre.workflows.image_classification import run_directory

    run = tmp_path / "run"
    _fake_run(run)
    for name in ("diagnostics.json", "replicas.png", "acceptance.png", "report.json", "entropies.npz"):
        (run / name).write_text("old")
    locks.lock_run(run)
    try:
        run_directory.clear(str(run))
    finally:
        locks.unlock_run(run)
    assert sorted(os.listdir(run)) == [".lock"]


def test_a_stale_pid_is_never_reported(tmp_path):
    """A killed holder's pid stays in the lock file; a holder still checking its inputs has not
    written its own yet: the refusal says so instead of naming the dead process (or any text)."""
    run = tmp_path / "r"
    run.mkdir()
    for text in ("2147483646", "rm -rf /"):
        (run / run_json.LOCK).write_text(text)
        held = locks.acquire(run / run_json.LOCK, mark=False)
        try:
            with pytest.raises(
                locks.RunLockedError,
                match=r"being written by another process \(still checking its "
                r"inputs\)",
            ):
                locks.check_run_free(run)
        finally:
            held.release()
        assert (run / run_json.LOCK).read_text() == text  # an unmarked lock leaves the file as it was


def test_library_evaluate_reads_the_run_under_a_shared_lock(tmp_path, monkeypatch):
    """``tf_vrre.evaluate`` (the library call, not only the CLI) holds a reader's lock while it
    reads: a writer is refused meanwhile and can take the run afterwards."""
    from tf_vrre.workflows.image_classification import evaluate, evaluation_checks

    run = tmp_path / "run"
    run.mkdir()
    (run / run_json.LOCK).write_text("")
    seen = []

    class Stop(Exception):
        pass

    def probe(run_dir):  # the first read of the run, under the lock
        with pytest.raises(locks.RunLockedError, match="is being read by another process"):
            locks.lock_run(run_dir)
        seen.append(run_dir)
        raise Stop

    monkeypatch.setattr(evaluation_checks, "check_run", probe)
    with pytest.raises(Stop):
        evaluate.evaluate(str(run), ood="none", fit_size=0)
    assert len(seen) == 1
    locks.lock_run(run)  # released when evaluate returned
    locks.unlock_run(run)
