"""``tf-vrre repair``: a damaged run keeps its readable samples (no TensorFlow, no --overwrite)."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from _paths import ROOT

from tf_vrre.runs import locks, repair, run_json, samples
from tf_vrre.workflows.image_classification import evaluation_checks

SCRIPT = os.path.join(os.path.dirname(sys.executable), "tf-vrre")
COMMAND = [SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "tf_vrre.cli"]
ENV = dict(os.environ, PYTHONPATH=ROOT)


def cli(*args):
    return subprocess.run(COMMAND + list(args), capture_output=True, text=True, env=ENV, timeout=120)


def make_run(run, steps=(2, 4, 6, 8), offset=0.0):
    """A run directory with ``steps`` samples as ``tf-vrre train`` writes them (weights ``step +
    offset``: another run of the same model has another ``offset``)."""
    sample_dir = run / "samples"
    sample_dir.mkdir(parents=True)
    entries = []
    for s in steps:
        path = sample_dir / f"sample-{s:09d}.npz"
        np.savez(path, w0000=np.full((3, 2), s + offset, np.float32), w0001=np.arange(2, dtype=np.float32))
        data = path.read_bytes()
        entries.append(
            {
                "file": path.name,
                "step": s,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "epoch": s // 4,
                "temperature": 1.0,
                "energy": 1.5,
            }
        )
    manifest = {"format": samples.FORMAT, "entries": entries, "events": list(steps), "run": {"fingerprint": "ab"}}
    (sample_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (run / "run.json").write_text(
        json.dumps(
            {
                "format": run_json.FORMAT,
                "method": "sghmc",
                "config": {},
                "model": {"name": "cnn", "kwargs": {}, "num_classes": 10, "input_shape": [3, 2, 1]},
                "data": {"dataset": "cifar10", "train_size": 64},
                "preprocessing": {"kind": "normalize", "scale": 255.0, "mean": [0.5], "std": [0.25]},
                "seed": 0,
                "status": "complete",
            }
        )
    )
    return sample_dir


def test_a_deleted_sample_is_dropped_and_the_rest_kept(tmp_path):
    sample_dir = make_run(tmp_path / "run")
    os.remove(sample_dir / "sample-000000004.npz")
    with pytest.raises(run_json.RunDirError, match=r"points at a missing file.*'tf-vrre repair .*run' keeps the"):
        evaluation_checks.check_run(str(tmp_path / "run"))
    before = (sample_dir / "manifest.json").read_bytes()
    dry = cli("repair", str(tmp_path / "run"), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "drop sample-000000004.npz: missing" in dry.stdout and "keep 3 sample(s)" in dry.stdout
    assert (sample_dir / "manifest.json").read_bytes() == before
    done = cli("repair", str(tmp_path / "run"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "rewrote" in done.stdout
    loaded = samples.load_samples(str(sample_dir))
    assert loaded.steps == [2, 6, 8]
    assert loaded.entries[1]["energy"] == 1.5  # metadata and identity kept
    manifest = json.loads((sample_dir / "manifest.json").read_text())
    assert manifest["run"] == {"fingerprint": "ab"} and manifest["events"] == [2, 4, 6, 8]
    assert manifest["repairs"] == [{"dropped": ["sample-000000004.npz"], "manifest_rebuilt": False}]
    np.testing.assert_array_equal(loaded.weights(1)[0], np.full((3, 2), 6, np.float32))
    again = cli("repair", str(tmp_path / "run"))
    assert "nothing to repair" in again.stdout


def test_truncated_and_foreign_samples_are_renamed_damaged(tmp_path):
    """Foreign samples: files of another run of the same model (same names, same array layout,
    readable), one copied over a listed sample, one beside them under a name the manifest does
    not list."""
    sample_dir = make_run(tmp_path / "run", steps=(2, 4, 6))
    other = make_run(tmp_path / "other", steps=(4, 10), offset=1000.0)
    with open(sample_dir / "sample-000000002.npz", "r+b") as f:
        f.truncate(40)
    shutil.copy(other / "sample-000000004.npz", sample_dir / "sample-000000004.npz")
    shutil.copy(other / "sample-000000010.npz", sample_dir / "sample-000000010.npz")
    result = repair.repair(str(sample_dir))
    dropped = dict(result["dropped"])
    assert sorted(dropped) == ["sample-000000002.npz", "sample-000000004.npz"], dropped
    assert dropped["sample-000000004.npz"].startswith("size or SHA-256 differs from the manifest")
    for name in ("sample-000000002.npz", "sample-000000004.npz"):
        assert os.path.exists(sample_dir / f"damaged-{name}") and not os.path.exists(sample_dir / name)
    foreign = (other / "sample-000000004.npz").read_bytes()
    assert (sample_dir / "damaged-sample-000000004.npz").read_bytes() == foreign  # kept for inspection
    loaded = samples.load_samples(str(sample_dir))
    assert loaded.steps == [6]  # the unlisted foreign file is not adopted (and left as it is)
    np.testing.assert_array_equal(loaded.weights(0)[0], np.full((3, 2), 6, np.float32))
    assert (sample_dir / "sample-000000010.npz").read_bytes() == (other / "sample-000000010.npz").read_bytes()


def test_an_unreadable_manifest_is_rebuilt_from_the_sample_files(tmp_path):
    sample_dir = make_run(tmp_path / "run", steps=(2, 4, 6))
    text = (sample_dir / "manifest.json").read_text()
    (sample_dir / "manifest.json").write_text(text[: len(text) // 2])  # torn
    np.savez(sample_dir / "sample-000000008.npz", w0000=np.zeros(5, np.float32))  # another model's arrays
    with open(sample_dir / "sample-000000006.npz", "r+b") as f:  # a flipped byte inside the data
        f.seek(60)
        byte = f.read(1)
        f.seek(60)
        f.write(bytes([byte[0] ^ 0xFF]))
    result = repair.repair(str(sample_dir))
    assert "is corrupt" in result["manifest_problem"]
    assert sorted(f for f, _ in result["dropped"]) == ["sample-000000006.npz", "sample-000000008.npz"]
    loaded = samples.load_samples(str(sample_dir))
    assert loaded.steps == [2, 4]
    assert json.loads((sample_dir / "manifest.json").read_text())["repairs"][0]["manifest_rebuilt"] is True


def test_export_names_repair_and_a_run_being_trained_is_refused(tmp_path):
    sample_dir = make_run(tmp_path / "run")
    os.remove(sample_dir / "sample-000000006.npz")
    result = cli("export", "--run", str(tmp_path / "run"), "--out", str(tmp_path / "export"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"'tf-vrre repair {tmp_path / 'run'}' keeps the readable samples" in result.stderr
    locks.lock_run(tmp_path / "run")
    try:
        held = cli("repair", str(tmp_path / "run"))
    finally:
        locks.unlock_run(tmp_path / "run")
    assert held.returncode == 2 and "being written by another process" in held.stderr
    assert not os.path.exists(sample_dir / "sample-000000006.npz")  # nothing renamed meanwhile
    assert "points at a missing file" in str(pytest.raises(ValueError, samples.load_samples, str(sample_dir)).value)


HOLD = (
    "import sys, time; from tf_vrre.runs import locks; lock = getattr(locks, sys.argv[2])(sys.argv[1]); "
    "print('held', flush=True); time.sleep(120)"
)


def _stat(root):
    out = {}
    for d, _, files in os.walk(root):
        out[d] = os.stat(d).st_mtime_ns
        out.update(
            {
                os.path.join(d, f): (os.stat(os.path.join(d, f)).st_mtime_ns, open(os.path.join(d, f), "rb").read())
                for f in files
            }
        )
    return out


@pytest.mark.parametrize(
    "target,lock,how,message",
    [
        ("run/samples", "run", "lock_run", "run' is being written by another process (pid"),  # tf-vrre train
        (
            "run/samples",
            "run/samples/.lock",
            "acquire",
            "is being written by another process (pid",
        ),  # a SampleCollector
        ("run", "run/samples/.lock", "acquire", "a SampleCollector collects samples there"),
    ],
)
def test_repair_is_refused_while_the_run_or_its_samples_are_written(tmp_path, target, lock, how, message):
    """``tf-vrre repair RUN/samples`` took no lock: while training ran, its rewrite was undone by the
    collector.  Now the run's lock and the sample directory's are taken (refused while held), and
    nothing changes."""
    sample_dir = make_run(tmp_path / "run")
    os.remove(sample_dir / "sample-000000006.npz")
    (sample_dir / ".lock").write_text("")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / lock), how],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=tmp_path,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = _stat(tmp_path / "run")  # with the holder's pid in its lock file
        result = subprocess.run(
            COMMAND + ["repair", target], capture_output=True, text=True, env=ENV, timeout=120, cwd=tmp_path
        )
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert message in result.stderr, result.stderr
        assert _stat(tmp_path / "run") == before
    finally:
        holder.kill()
        holder.wait()
    assert cli("repair", str(tmp_path / target)).returncode == 0  # once the writer has gone
    assert samples.load_samples(str(sample_dir)).steps == [2, 4, 8]
    assert (sample_dir / ".lock").read_text() == "" and (tmp_path / "run" / ".lock").read_text() == ""  # no stale pid


def test_a_sound_run_is_only_read(tmp_path):
    """A repair with nothing to do changes nothing: no lock file created, no mtime moved."""
    make_run(tmp_path / "run")
    before = _stat(tmp_path / "run")
    result = cli("repair", str(tmp_path / "run"))
    assert result.returncode == 0 and "nothing to repair" in result.stdout, result.stderr
    assert _stat(tmp_path / "run") == before


def test_nothing_to_repair_in_an_empty_directory(tmp_path):
    (tmp_path / "samples").mkdir()
    result = cli("repair", str(tmp_path))
    assert result.returncode == 2 and result.stderr.startswith("tf-vrre: error: repair: RUN: ")
    assert "nothing to repair" in result.stderr


def test_a_full_disk_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    import errno

    from tf_vrre import cli
    from tf_vrre.runs import fault_points

    sample_dir = make_run(tmp_path / "run")
    with open(sample_dir / "sample-000000004.npz", "r+b") as f:
        f.truncate(50)
    before = (sample_dir / "manifest.json").read_bytes()

    def full(name):
        if name == "atomic.write":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fault_points, "hook", full)
    assert cli.main(["repair", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"tf-vrre: error: repair: cannot write {sample_dir / 'manifest.json'}: No space left on device; "
        "free space or fix permissions and run the same command again"
    ]
    assert (sample_dir / "manifest.json").read_bytes() == before  # unchanged, nothing renamed
    assert os.path.exists(sample_dir / "sample-000000004.npz")
    assert not [n for n in os.listdir(sample_dir) if n.endswith(".tmp")]


def test_tensorflow_full_disk_errors_are_recognised():
    import tensorflow as tf

    from tf_vrre import cli

    err = tf.errors.ResourceExhaustedError(None, None, "runs/a/backup/ckpt-3_temp/part-0.data; No space left on device")
    assert cli._tensorflow_write_error(err) == "runs/a/backup/ckpt-3_temp/part-0.data; No space left on device"
    assert cli._tensorflow_write_error(tf.errors.InvalidArgumentError(None, None, "shape mismatch")) is None
    assert cli._tensorflow_write_error(ValueError("No space left on device")) is None


def test_a_rebuilt_manifest_adopts_no_stray_copy(tmp_path):
    """Files named like samples that cannot be samples of the run (a copy at step 99 in an 8-step run,
    a byte-for-byte copy of a lower step's sample) are dropped, not adopted as extra samples."""
    import shutil

    sample_dir = make_run(tmp_path / "run", steps=(2, 4, 6))
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    run["schedule"] = {"total_steps": 8}
    (tmp_path / "run" / "run.json").write_text(json.dumps(run))
    (sample_dir / "manifest.json").write_text("{")  # torn: rebuilt from the files
    shutil.copy(sample_dir / "sample-000000004.npz", sample_dir / "sample-000000099.npz")
    shutil.copy(sample_dir / "sample-000000002.npz", sample_dir / "sample-000000007.npz")
    result = repair.repair(str(sample_dir))
    reasons = dict(result["dropped"])
    assert reasons == {
        "sample-000000007.npz": "a copy of sample-000000002.npz (same SHA-256): a stray file",
        "sample-000000099.npz": "step 99 is outside the run's steps 1..8 (run.json): a stray file",
    }
    assert samples.load_samples(str(sample_dir)).steps == [2, 4, 6]
    assert os.path.exists(sample_dir / "damaged-sample-000000099.npz")


def test_repair_runs_without_importing_tensorflow(tmp_path):
    make_run(tmp_path / "run")
    probe = (
        "import sys\nfrom tf_vrre import cli\ncode = cli.main(['repair', sys.argv[1], '--dry-run'])\n"
        "print('exit', code, 'tensorflow' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "run")], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert proc.stdout.strip().splitlines()[-1] == "exit 0 False", proc
