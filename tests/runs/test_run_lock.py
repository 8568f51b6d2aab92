"""One writer per run directory: ``tf-vrre train`` takes ``RUN/.lock`` before any check or clear.

A second ``tf-vrre train`` (``--overwrite`` or a resume) on a run another process holds is
refused with one line and exit 2, before TensorFlow starts, and deletes nothing.  The first
process here is a tiny Python process holding the lock (``tf_vrre.runs.run_json.lock_run``).
"""

import json
import os
import subprocess
import sys
import time

import pytest

from tf_vrre.runs import run_json as rundir

from _paths import ROOT  # noqa: E402
SCRIPT = os.path.join(os.path.dirname(sys.executable), "tf-vrre")
COMMAND = [SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "tf_vrre.cli"]
ENV = dict(os.environ, PYTHONPATH=ROOT)
HOLD = ("import sys, time; from tf_vrre.runs import run_json as rundir; lock = rundir.lock_run(sys.argv[1]); "
        "print('held', flush=True); time.sleep(120)")
LOCK_ONCE = "import sys; from tf_vrre.runs import run_json; run_json.lock_run(sys.argv[1])"


def _fake_run(run):
    """A run directory as a running ``tf-vrre train`` leaves it (files whose loss would show)."""
    for d in ("samples", "swaps", "backup"):
        (run / d).mkdir(parents=True)
        (run / d / "keep.txt").write_text(d)
    (run / "samples" / "manifest.json").write_text('{"format": "tf_vrre.samples/1", "entries": []}')
    (run / "run.json").write_text(json.dumps({"format": rundir.FORMAT, "status": "running"}))


def _snapshot(run):
    return {os.path.relpath(os.path.join(d, f), run): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(run) for f in files if f != rundir.LOCK}


@pytest.fixture()
def holder(tmp_path):
    run = tmp_path / "run"
    _fake_run(run)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield run
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("extra", [["--overwrite"], []])
def test_a_second_writer_is_refused_before_tensorflow_and_deletes_nothing(holder, extra):
    before = _snapshot(holder)
    start = time.perf_counter()
    result = subprocess.run(COMMAND + ["train", "--config", "sghmc", "--out", str(holder), "--subset", "64",
                                       "--epochs", "1"] + extra, capture_output=True, text=True, env=ENV,
                            timeout=120)
    seconds = time.perf_counter() - start
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("tf-vrre: error: --out: ") and str(holder) in lines[0]
    assert "being written by another process (pid " in lines[0]
    assert _snapshot(holder) == before and os.path.exists(holder / rundir.LOCK)
    assert seconds < 30, seconds  # refused before TensorFlow starts


def test_lock_is_reentrant_in_process_exclusive_across_and_released(tmp_path):
    first = rundir.lock_run(tmp_path / "r")
    assert rundir.lock_run(tmp_path / "r") is first and rundir.holds_lock(tmp_path / "r")
    other = subprocess.run([sys.executable, "-c", LOCK_ONCE, str(tmp_path / "r")], capture_output=True, text=True, env=ENV, timeout=60)
    assert other.returncode != 0 and f"being written by another process (pid {os.getpid()})" in other.stderr
    rundir.unlock_run(tmp_path / "r")
    assert not rundir.holds_lock(tmp_path / "r") and first.closed
    again = subprocess.run([sys.executable, "-c", LOCK_ONCE, str(tmp_path / "r")], capture_output=True, text=True, env=ENV, timeout=60)
    assert again.returncode == 0, again.stderr


def test_library_train_refuses_a_run_another_process_writes(holder):
    from tf_vrre.workflows.image_classification import train as training

    with pytest.raises(rundir.RunLockedError, match="being written by another process"):
        training._worker_root(object(), str(holder), overwrite=True)  # not multi-worker: the chief
    assert (holder / "samples" / "keep.txt").exists()  # --overwrite's clear never ran


def test_a_planted_link_at_the_run_lock_is_refused(tmp_path):
    target = tmp_path / "outside"
    target.write_text("keep")
    (tmp_path / "r").mkdir()
    os.symlink(target, tmp_path / "r" / rundir.LOCK)
    with pytest.raises(OSError, match="symbolic link"):
        rundir.lock_run(tmp_path / "r")
    assert target.read_text() == "keep"


def test_overwrite_clears_derived_outputs_but_keeps_the_lock(tmp_path):
    from tf_vrre.workflows.image_classification import train as training

    run = tmp_path / "run"
    _fake_run(run)
    for name in ("diagnostics.json", "replicas.png", "acceptance.png", "report.json", "entropies.npz", ".lock"):
        (run / name).write_text("old")
    training._clear(str(run))
    assert sorted(os.listdir(run)) == [".lock"]
