"""Writes never follow a planted symbolic link; a full disk is one clear error (tf_vrre.runs.atomic).

A link planted at any name a run writes (the final name, the old ``<name>.tmp`` temporary
name, a ``.lock`` file) points at a file outside the run directory whose content must stay
unchanged: the writers create temporary files with ``mkstemp`` and open logs and locks with
``O_NOFOLLOW``.
"""

import errno
import os

import numpy as np
import pytest
from _small_sampler import make_sampler

from tf_vrre.callbacks import Checkpoint, CSVLogger, EpochCSVLogger, SampleCollector, SwapLogger
from tf_vrre.runs import atomic, fault_points, run_json
from tf_vrre.workflows.image_classification import evaluate

OUTSIDE = b"precious data outside the run directory\n"

# names written by one fit with every run writer
FIT_NAMES = [
    "samples/manifest.json",
    "samples/manifest.json.tmp",
    "samples/.lock",
    "samples/model.json.tmp",
    "samples/sample-000000002.npz.tmp",
    "swaps/swaps.csv",
    "swaps/swaps.csv.tmp",
    "swaps/epochs.csv",
    "swaps/offsets.csv.tmp",
    "swaps/identity.json.tmp",
    "swaps/.lock",
    "log.csv",
    "log.csv.tmp",
    "log.csv.lock",
    "log.csv.identity.json.tmp",
    "elog.csv",
    "elog.csv.tmp",
    "backup/.lock",
    "backup/identity.json.tmp",
]


def _plant(run, name, tmp_path):
    target = tmp_path / "outside" / name.replace("/", "_")
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(OUTSIDE)
    link = run / name
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    return target, link


@pytest.mark.parametrize("name", FIT_NAMES)
def test_fit_writers_never_write_through_a_planted_link(tmp_path, name):
    run = tmp_path / "run"
    target, link = _plant(run, name, tmp_path)
    s, x, y = make_sampler(vr=False, seed=0)
    cbs = [
        SampleCollector(str(run / "samples"), every=2),
        SwapLogger(str(run / "swaps")),
        CSVLogger(str(run / "log.csv")),
        EpochCSVLogger(str(run / "elog.csv")),
        Checkpoint(str(run / "backup")),
    ]
    try:
        s.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False, callbacks=cbs)
    except (atomic.SymlinkError, ValueError) as err:  # refusing the name is fine, writing through is not
        assert str(run) in str(err) or name in str(err), err
    assert target.read_bytes() == OUTSIDE
    if not name.endswith(".tmp"):
        assert not os.path.islink(link) or os.readlink(link) == str(target)


@pytest.mark.parametrize(
    "name",
    [
        "run.json",
        "run.json.tmp",
        "report.json.tmp",
        "diagnostics.json",
        "diagnostics.json.tmp",
        "entropies.npz",
        "entropies.tmp.npz",
        "swaps.png.tmp.png",
    ],
)
def test_run_level_writers_never_write_through_a_planted_link(tmp_path, name):
    from tf_vrre import _figures
    from tf_vrre.cli import diagnose

    run = tmp_path / "run"
    target, link = _plant(run, name, tmp_path)
    base = run_json.ENTROPIES if name.startswith("entropies") else name.split(".tmp")[0]
    if base == run_json.ENTROPIES:
        evaluate.atomic.savez(str(run / run_json.ENTROPIES), test_T_1=np.zeros(3, np.float32))
    elif base.endswith(".png"):
        _figures.save(_figures.new(), str(run / "swaps.png"))
    elif base.startswith("diagnostics"):
        diagnose._write_json(str(run / "diagnostics.json"), {"a": 1})
    else:
        run_json.write_json(str(run / base), {"format": run_json.FORMAT})
    assert target.read_bytes() == OUTSIDE
    assert os.path.isfile(run / base) and not os.path.islink(run / base)
    assert not [n for n in os.listdir(run) if n.startswith(".") and n.endswith(".tmp")]  # no leftover


def test_append_and_lock_refuse_a_link(tmp_path):
    target = tmp_path / "outside"
    target.write_bytes(OUTSIDE)
    os.symlink(target, tmp_path / "log.csv")
    with pytest.raises(atomic.SymlinkError, match="log.csv is a symbolic link"):
        atomic.open_append(str(tmp_path / "log.csv"))
    os.symlink(target, tmp_path / ".lock")
    with pytest.raises(atomic.SymlinkError, match="lock file .*lock is a symbolic link"):
        atomic.open_lock(str(tmp_path / ".lock"))
    assert target.read_bytes() == OUTSIDE


def test_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    path.write_text("old")

    def full(name):
        if name == "atomic.write":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fault_points, "hook", full)
    with pytest.raises(OSError) as exc:
        run_json.write_json(str(path), {"new": 1})
    assert exc.value.errno == errno.ENOSPC and exc.value.filename == str(path)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["run.json"]


def test_new_files_get_the_umask_permissions(tmp_path):
    path = tmp_path / "a.json"
    atomic.write_json(str(path), {})
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask


# ---- damaged checkpoints -----------------------------------------------------------------
def _fit_with_checkpoint(directory, epochs):
    s, x, y = make_sampler(vr=False, seed=0)
    ckpt = Checkpoint(str(directory))
    s.fit(x, y, batch_size=16, epochs=epochs, verbose=0, shuffle=False, callbacks=[ckpt])
    return ckpt


def test_a_garbage_checkpoint_index_is_refused_not_restarted(tmp_path):
    from tf_vrre.callbacks.checkpoint import CheckpointError

    _fit_with_checkpoint(tmp_path / "backup", 2)
    (tmp_path / "backup" / "checkpoint").write_bytes(b"\x00garbage {{")
    with pytest.raises(CheckpointError) as exc:
        _fit_with_checkpoint(tmp_path / "backup", 3)
    message = str(exc.value)
    assert f"{tmp_path / 'backup' / 'checkpoint'} is not a readable checkpoint index" in message
    assert "ckpt-1, ckpt-2" in message and f"remove {tmp_path / 'backup'} to restart" in message
    assert isinstance(exc.value, run_json.RunDirError)  # tf-vrre train: one line, exit 2


def test_a_damaged_newest_checkpoint_falls_back_and_none_readable_is_refused(tmp_path):
    from tf_vrre.callbacks.checkpoint import CheckpointError

    _fit_with_checkpoint(tmp_path / "backup", 2)
    (tmp_path / "backup" / "ckpt-2.index").write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="ckpt-2.*resuming from .*ckpt-1"):
        ckpt = _fit_with_checkpoint(tmp_path / "backup", 2)
    assert ckpt.restored_epoch == 1
    for name in os.listdir(tmp_path / "backup"):
        if name.startswith("ckpt-") and name.endswith(".index"):
            (tmp_path / "backup" / name).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="no readable checkpoint in .*backup.*remove .*backup to restart"):
        _fit_with_checkpoint(tmp_path / "backup", 3)
