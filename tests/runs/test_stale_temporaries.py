"""A kill between a temporary file's creation and its rename (:mod:`tf_vrre.runs.atomic`) leaves
``.<target>.<random>.tmp`` behind; the writer that resumes removes its own, by that naming rule and
for the files it writes, in every directory it writes, and nothing else: another file ending in
``.tmp``, a temporary of a file it does not write, a link, or any file of another run."""

import os

import pytest
import tensorflow as tf
from _small_sampler import Interrupt, make_sampler

import tf_vrre
from tf_vrre.runs import atomic

OWN = {
    "swaps": [".swaps.csv.k3j9x2a_.tmp", ".refresh.csv.00000000.tmp", ".identity.json.abcdefgh.tmp"],
    "samples": [".manifest.json.qwertyui.tmp", ".sample-000000004.npz.a1b2c3d4.tmp", ".model.json.zzzzzzzz.tmp"],
    "checkpoint": [".identity.json.a_b_c_d_.tmp"],
    "ladder": [".ladder.json.12345678.tmp"],
    "": [".log.csv.abcdefgh.tmp", ".log.csv.identity.json.abcdefgh.tmp"],
}
FOREIGN = {
    "swaps": ["notes.tmp", ".swaps.csv.tmp", ".swaps.csv.ABCDEFGH.tmp", ".other.csv.abcdefgh.tmp"],
    "samples": [".sample-4.npz.a1b2c3d4.tmp", "keep.tmp", "sample-000000004.npz.bak"],
    "checkpoint": [".checkpoint.abcdefgh.tmp"],
    "ladder": [".ladder.json.1234567.tmp"],
    "": [".report.json.abcdefgh.tmp", ".run.json.abcdefgh.tmp"],
}


def callbacks(root):
    return [
        tf_vrre.SwapLogger(root / "swaps"),
        tf_vrre.SampleCollector(root / "samples", every=4),
        tf_vrre.LadderTuner(tuning_steps=8, first_round_steps=4, directory=root / "ladder"),
        tf_vrre.CSVLogger(root / "log.csv"),
        tf_vrre.Checkpoint(root / "checkpoint"),
    ]


def plant(root, names):
    for where, files in names.items():
        for name in files:
            (root / where / name).write_text("planted")


def test_temporaries_are_named_by_the_rule():
    for name in (".swaps.csv.k3j9x2a_.tmp", ".a.b.c.12345678.tmp"):
        assert atomic.temporary_target(name) in ("swaps.csv", "a.b.c")
    for name in ("notes.tmp", ".swaps.csv.tmp", ".swaps.csv.ABCDEFGH.tmp", ".x.1234567.tmp", "x.12345678.tmp"):
        assert atomic.temporary_target(name) is None, name


def test_write_makes_temporaries_of_that_form(tmp_path, monkeypatch):
    """The rule matches what :func:`tf_vrre.runs.atomic.write` creates (read at its rename)."""
    seen = []
    real = os.replace

    def replace(src, dst):
        seen.append((os.path.basename(src), os.path.basename(dst)))
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    for target in ("swaps.csv", "identity.json", "sample-000000004.npz"):
        atomic.write_text(tmp_path / target, "x")
    assert [atomic.temporary_target(src) for src, _ in seen] == [dst for _, dst in seen]


def test_a_resumed_run_removes_its_own_temporaries_and_nothing_else(tmp_path):
    root = tmp_path / "run"
    s, x, y = make_sampler(vr=False, temperatures=(1.0, 2.0, 4.0))
    batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    with pytest.raises(KeyboardInterrupt):  # stopped in epoch 2 (4 steps each), after the epoch-1 checkpoint
        s.fit(batches, epochs=2, verbose=0, callbacks=callbacks(root) + [Interrupt(6)])
    plant(root, OWN)
    plant(root, FOREIGN)
    os.symlink(tmp_path / "outside.txt", root / "swaps" / ".epochs.csv.linklink.tmp")
    (tmp_path / "outside.txt").write_text("not the run's")

    # another run's writers are refused in these directories and touch nothing there
    other, _, _ = make_sampler(vr=False, temperatures=(1.0, 3.0, 9.0))
    with pytest.raises(tf_vrre.RunMismatchError):
        other.fit(batches, epochs=2, verbose=0, callbacks=[tf_vrre.SwapLogger(root / "swaps")])
    assert all((root / where / name).exists() for where, names in OWN.items() for name in names if where == "swaps")

    s.fit(batches, epochs=2, verbose=0, callbacks=callbacks(root))  # resumed from the epoch-1 checkpoint
    assert int(s.state.step.numpy()) == 8
    left = [f"{where}/{name}" for where, names in OWN.items() for name in names if (root / where / name).exists()]
    assert left == []
    for where, names in FOREIGN.items():
        assert [(root / where / name).read_text() for name in names] == ["planted"] * len(names), where
    assert os.path.islink(root / "swaps" / ".epochs.csv.linklink.tmp")
    assert (tmp_path / "outside.txt").read_text() == "not the run's"
