"""tf_vrre's own errors (:class:`tf_vrre.TfVrreError`) end any subcommand with one line, wherever
they are raised (while a run trains too: they used to arrive as 30-40-line tracebacks); a
genuine bug keeps its traceback."""

import errno
import os
import shutil

import pytest
from _image_runs import cli_flags, stopped_run

import tf_vrre
from tf_vrre import cli, errors
from tf_vrre.cli import mixture
from tf_vrre.runs import atomic, locks, ownership, run_json, samples
from tf_vrre.workflows.image_classification import config
from tf_vrre.workflows.image_classification.data import tfds_source


def test_every_error_class_of_the_package_is_a_tf_vrre_error_and_keeps_its_base():
    from tf_vrre.callbacks import checkpoint
    from tf_vrre.sampler import execution, invariants, placements
    from tf_vrre.workflows import step_bounds

    kept = {
        run_json.RunDirError: ValueError,
        locks.RunLockedError: ValueError,
        checkpoint.CheckpointError: ValueError,
        samples.RunFileError: ValueError,
        ownership.RunMismatchError: ValueError,
        checkpoint.EpochsError: ValueError,
        config.ConfigError: ValueError,
        step_bounds.BoundError: ValueError,
        execution.ExecutionError: ValueError,
        placements.PlacementError: ValueError,
        atomic.SymlinkError: OSError,
        atomic.SpecialFileError: OSError,
        locks.Busy: OSError,
        tfds_source.OfflineError: FileNotFoundError,
        invariants.SamplerError: invariants.tf.errors.OpError,
        invariants.DivergenceError: invariants.tf.errors.InvalidArgumentError,
    }
    for cls, base in kept.items():
        assert issubclass(cls, errors.TfVrreError) and issubclass(cls, base), cls
    assert tf_vrre.TfVrreError is errors.TfVrreError
    err = atomic.SymlinkError(errno.ELOOP, "log file f is a symbolic link", "f")
    assert (err.errno, err.filename, str(err)) == (errno.ELOOP, "f", "log file f is a symbolic link")
    div = invariants.DivergenceError("at step 3 ...", "energy", 3, 0, float("nan"))
    assert div.message == "at step 3 ..." and div.step == 3


@pytest.mark.parametrize(
    "error",
    [
        locks.RunLockedError("'runs/a': its lock file .lock was deleted or replaced while this process held it"),
        atomic.SymlinkError(errno.ELOOP, "lock file runs/a/samples/.lock is a symbolic link; remove it", "x"),
        samples.RunFileError("runs/a/backup/identity.json is corrupt (Unterminated string)\nsecond line"),
    ],
)
def test_an_own_error_is_one_line_wherever_it_is_raised(error, monkeypatch, capsys, tmp_path):
    def fail(args):
        raise error

    out = ["mixture", "--out", str(tmp_path / "o")]
    monkeypatch.setattr(mixture, "run", fail)  # raised while the subcommand runs: exit 1
    assert cli.main(out) == 1
    text = " ".join(str(error).split("\n"))
    assert capsys.readouterr().err == f"tf-vrre: error: mixture: {text}\n"
    monkeypatch.setattr(mixture, "check", fail)  # raised while its inputs are checked: exit 2
    assert cli.main(out) == 2
    assert capsys.readouterr().err.startswith("tf-vrre: error: mixture: ")


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path):
    def bug(args):
        return {}["energy"]

    monkeypatch.setattr(mixture, "run", bug)
    with pytest.raises(KeyError, match="energy"):
        cli.main(["mixture", "--out", str(tmp_path / "o")])


@pytest.mark.parametrize(
    "damage,message",
    [
        (
            lambda run: (os.unlink(run / "samples" / ".lock"), os.mkdir(run / "samples" / ".lock")),
            "lock file {run}/samples/.lock is a directory, not a regular file; tf_vrre locks regular files only: remove it",
        ),
        (
            lambda run: (os.unlink(run / "samples" / ".lock"), os.mkfifo(run / "samples" / ".lock")),
            "lock file {run}/samples/.lock is a FIFO (named pipe), not a regular file",
        ),
        (
            lambda run: (os.unlink(run / "backup" / ".lock"), os.symlink(run / "elsewhere", run / "backup" / ".lock")),
            "lock file {run}/backup/.lock is a symbolic link; tf_vrre does not write through links (remove it)",
        ),
        (
            lambda run: os.truncate(run / "backup" / "identity.json", 20),
            "Checkpoint: {run}/backup/identity.json is corrupt (Unterminated string",
        ),
    ],
    ids=["lock-directory", "lock-fifo", "lock-symlink", "truncated-identity"],
)
def test_damage_met_while_resuming_is_one_line(damage, message, image_data_dir, tmp_path, capsys):
    run = tmp_path / "run"
    stopped_run(run, image_data_dir)
    damage(run)
    capsys.readouterr()
    try:
        status = cli.main(cli_flags("msgd", run, image_data_dir, epochs=2))
    except SystemExit as exit_:  # refused by the subcommand's own handler (--out: ...)
        status = exit_.code
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("tf-vrre: warning")]  # a short run warns
    assert status in (1, 2) and len(lines) == 1 and "Traceback" not in err, err[-3000:]
    assert lines[0].startswith("tf-vrre: error: ") and message.format(run=run) in lines[0], lines[0]
    shutil.rmtree(run)
