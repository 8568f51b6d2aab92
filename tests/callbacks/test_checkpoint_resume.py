"""Exact resume for a kill at any instant: tf_vrre.Checkpoint + every tf_vrre writer.

``_ckpt_job.py`` is killed (SIGKILL) at several instants in a row, each time resumed by the same
command, and the final files and state must equal an uninterrupted run's bit for bit.  The
instants cover a step between two writers, a kill inside the checkpoint write (data files
written, index not yet committed), rows torn in the middle of a write, and a kill after a
sample manifest write with evicted samples pending deletion.  ``benchmarks/kill_sweep.py``
kills at every instrumented point, many occurrences each (minutes; see docs/benchmarks/kill-sweep.md).
"""

import json
import os
import re
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest
from _paths import HELPERS
from _small_sampler import make_sampler, small_net

import tf_vrre
from tf_vrre import _keras_compat
from tf_vrre.callbacks.checkpoint import Checkpoint, CheckpointError

JOB = [sys.executable, os.path.join(HELPERS, "_ckpt_job.py")]
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
CHAIN = ["batch:6", "checkpoint.data:1", "torn:3", "sample.manifest:4"]


def job(out, spec=None, wait=True):
    args = JOB + [str(out)] + ([spec] if spec else [])
    proc = subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return proc
    stdout, stderr = proc.communicate(timeout=600)
    return proc.returncode, stdout, stderr


def _strip(entries):  # np.savez stamps the zip members with the time: sizes/checksums may differ
    return [{k: v for k, v in e.items() if k not in ("bytes", "sha256")} for e in entries]


def assert_same_run(ref, out):
    """Every file the writers produced, and the final state, equal bit for bit."""
    a = tf_vrre.load_samples(os.path.join(ref, "samples"))
    b = tf_vrre.load_samples(os.path.join(out, "samples"))
    assert _strip(a.entries) == _strip(b.entries) and a.steps == [24, 26, 28, 30, 32]
    for i in range(len(a)):
        for wa, wb in zip(a.weights(i), b.weights(i)):
            np.testing.assert_array_equal(wa, wb)
    ma, mb = (json.load(open(os.path.join(d, "samples", "manifest.json"))) for d in (ref, out))
    assert ma["events"] == mb["events"] and ma["evicted"] == mb["evicted"] == []
    for name in ("swaps/swaps.csv", "swaps/refresh.csv", "swaps/epochs.csv", "swaps/offsets.csv", "log.csv"):
        assert open(os.path.join(ref, name)).read() == open(os.path.join(out, name)).read(), name
    fa, fb = np.load(os.path.join(ref, "final.npz")), np.load(os.path.join(out, "final.npz"))
    assert fa.files == fb.files
    for k in fa.files:  # every chain, velocity, snapshot, U_hat, sigma2, c, counter
        np.testing.assert_array_equal(fa[k], fb[k])
    listed = {e["file"] for e in b.entries} | {"manifest.json", "model.json", ".lock"}
    assert sorted(os.listdir(os.path.join(out, "samples"))) == sorted(listed)  # nothing stray, no .tmp


def test_killed_at_many_instants_resumes_bit_for_bit(tmp_path):
    reference = job(tmp_path / "ref", wait=False)  # in parallel with the chain of kills
    out = tmp_path / "killed"
    for spec in CHAIN:
        code, stdout, stderr = job(out, spec)
        assert code == -signal.SIGKILL, (spec, code, stderr[-2000:])
        assert "done" not in stdout
    code, stdout, stderr = job(out)
    assert code == 0 and "done 32" in stdout, stderr[-2000:]
    stdout, stderr = reference.communicate(timeout=600)
    assert reference.returncode == 0 and "done 32" in stdout, stderr[-2000:]
    assert_same_run(str(tmp_path / "ref"), str(out))


def test_killed_after_the_final_commit_settles_the_manifest(tmp_path):
    """Killed between the last checkpoint's commit and the collectors' purge of evicted samples:
    the rerun trains nothing, and still leaves the uninterrupted run's files (found by
    benchmarks/kill_sweep.py: the manifest kept its evicted list)."""
    reference = job(tmp_path / "ref", wait=False)
    out = tmp_path / "killed"
    code, stdout, stderr = job(out, "checkpoint.committed:8")  # 8 epochs: the final commit
    assert code == -signal.SIGKILL, (code, stderr[-2000:])
    code, stdout, stderr = job(out)
    assert code == 0 and "done 32" in stdout, stderr[-2000:]
    stdout, stderr = reference.communicate(timeout=600)
    assert reference.returncode == 0, stderr[-2000:]
    assert_same_run(str(tmp_path / "ref"), str(out))


# ---- in-process checks of the callback ----------------------------------------------------------
def _fit(sampler, directory, epochs, **kwargs):
    ckpt = Checkpoint(str(directory), **kwargs)
    hist = sampler.fit(sampler.make_dataset(16), epochs=epochs, verbose=0, callbacks=[ckpt])
    return ckpt, hist


def test_restores_state_and_epoch_and_keeps_newest(tmp_path):
    s, _, _ = make_sampler(vr=True)
    ckpt, hist = _fit(s, tmp_path, epochs=3, max_to_keep=2)
    assert ckpt.restored_epoch == 0 and len(hist.history["loss"]) == 3
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == ["ckpt-2.index", "ckpt-3.index"]

    fresh, _, _ = make_sampler(vr=True)  # what a new process builds
    ckpt, hist = _fit(fresh, tmp_path, epochs=5)
    assert ckpt.restored_epoch == 3 and len(hist.history["loss"]) == 2  # epochs 3 and 4 only
    assert int(fresh.state.step.numpy()) == 20
    state = [keras.ops.convert_to_numpy(v) for v in fresh.weights]

    third, _, _ = make_sampler(vr=True)
    ckpt, hist = _fit(third, tmp_path, epochs=5)  # as many epochs as done: restores, trains nothing
    assert ckpt.restored_epoch == 5 and hist.history == {}
    for a, b in zip(state, [keras.ops.convert_to_numpy(v) for v in third.weights]):
        np.testing.assert_array_equal(a, b)
    fourth, _, _ = make_sampler(vr=True)
    before = [keras.ops.convert_to_numpy(v) for v in fourth.weights]
    with pytest.raises(
        ValueError,
        match=r"holds the state after epoch 5, beyond fit\(epochs=3\): fit would train "
        r"nothing and leave the sampler at epoch 5\. Pass epochs >= 5",
    ):
        _fit(fourth, tmp_path, epochs=3)  # fewer epochs than done: said, nothing restored
    for a, b in zip(before, [keras.ops.convert_to_numpy(v) for v in fourth.weights]):
        np.testing.assert_array_equal(a, b)
    # A second fit of the same sampler in the same process continues the epochs too.
    _, hist = _fit(fresh, tmp_path, epochs=6)
    assert len(hist.history["loss"]) == 1 and _keras_compat.initial_epoch(fresh) is None


def test_every_epochs_and_final_checkpoint(tmp_path):
    s, x, y = make_sampler(vr=False)
    ckpt = Checkpoint(str(tmp_path), every_epochs=2, max_to_keep=5)
    s.fit(x, y, batch_size=16, epochs=5, verbose=0, shuffle=False, callbacks=[ckpt])
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == [
        "ckpt-2.index",
        "ckpt-4.index",
        "ckpt-5.index",
    ]


def test_refuses_another_runs_checkpoints_naming_the_difference(tmp_path):
    s, _, _ = make_sampler(vr=True)
    _fit(s, tmp_path, epochs=1)
    three, _, _ = make_sampler(vr=True, temperatures=(1.0, 2.0, 4.0))
    with pytest.raises(
        tf_vrre.RunMismatchError,
        match=r"holds checkpoints of another run \(sampler.num_chains: 2 "
        r"there, 3 here\).*overwrite=True",
    ):
        _fit(three, tmp_path, epochs=1)
    other_seed, _, _ = make_sampler(vr=True, seed=5)
    with pytest.raises(tf_vrre.RunMismatchError, match="sampler.seed: 0 there, 5 here"):
        _fit(other_seed, tmp_path, epochs=1)
    ckpt, _ = _fit(three, tmp_path, epochs=1, overwrite=True)
    assert ckpt.restored_epoch == 0
    assert json.load(open(tmp_path / "identity.json"))["run"]["sampler"]["num_chains"] == 3


def test_config_round_trip_and_argument_errors(tmp_path):
    ckpt = Checkpoint(str(tmp_path), every_epochs=3, max_to_keep=4, overwrite=True)
    config = ckpt.get_config()
    assert config == {"directory": str(tmp_path), "every_epochs": 3, "max_to_keep": 4, "overwrite": True}
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(ckpt)).get_config() == config
    for kwargs, match in [
        ({"every_epochs": 0}, "every_epochs must be an integer >= 1"),
        ({"max_to_keep": 1.5}, "max_to_keep must be an integer >= 1"),
    ]:
        with pytest.raises(ValueError, match=match):
            Checkpoint(str(tmp_path), **kwargs)
    with pytest.raises(TypeError, match="directory must be a path"):
        Checkpoint(None)
    with pytest.raises(TypeError, match="overwrite must be True or False"):
        Checkpoint(str(tmp_path), overwrite="yes")
    model = small_net()
    model.compile(loss="mse")
    with pytest.raises(TypeError, match="Checkpoint works with a tf_vrre.ReplicaExchangeSampler"):
        model.fit(np.zeros((4, 4)), np.zeros((4, 3)), verbose=0, callbacks=[Checkpoint(str(tmp_path / "m"))])


def test_a_directory_that_is_a_file_is_named(tmp_path):
    (tmp_path / "ckpt").write_text("not a directory")
    with pytest.raises(
        CheckpointError, match=re.escape(f"Checkpoint: directory {str(tmp_path / 'ckpt')!r} is a file, not a directory")
    ):
        Checkpoint(str(tmp_path / "ckpt"))  # was a raw FileExistsError when fit started


@pytest.mark.parametrize(
    "index,what",
    [
        (None, "is missing"),
        (
            'model_checkpoint_path: "ckpt-9"\nall_model_checkpoint_paths: "ckpt-9"\n',
            "names no readable checkpoint ({dir}/ckpt-9: its files are missing)",
        ),
        (
            'all_model_checkpoint_paths: "ckpt-2"\n',
            "is not a readable checkpoint index (Invalid checkpoint state loaded from",
        ),
    ],
    ids=["deleted", "names-a-missing-checkpoint", "no-latest"],
)
def test_an_index_that_cannot_be_trusted_is_refused_with_the_remedy(index, what, tmp_path):
    """A deleted index used to restart the run from epoch 0 without a word (redoing it, replacing its
    samples); an index naming a missing checkpoint gave TensorFlow's "Invalid checkpoint state" or
    "no readable checkpoint ... ()".  Now: refused, naming the files found and the two ways on; the
    first (recreate the index) resumes.  (A missing newest checkpoint with an older one the index
    names falls back to the older one with a warning, like a damaged one.)"""
    s, _, _ = make_sampler(vr=True)
    _fit(s, tmp_path, epochs=2)
    path = tmp_path / "checkpoint"
    path.unlink()
    if index is not None:
        path.write_text(index)
    files = sorted(os.listdir(tmp_path))
    again, _, _ = make_sampler(vr=True)
    with pytest.raises(CheckpointError) as exc:
        _fit(again, tmp_path, epochs=3)
    message = str(exc.value)
    assert (
        message.startswith(f"Checkpoint: {path} {what.format(dir=tmp_path)}")
        and "(checkpoint files: ckpt-1, ckpt-2)" in message
    )
    remedy = (
        f"restarting from epoch 0 would redo the run and replace its samples and logs: recreate the index to "
        f'resume from the newest one, python -c "import tensorflow as tf; '
        f"tf.compat.v1.train.update_checkpoint_state({str(tmp_path)!r}, 'ckpt-2')\", or remove {tmp_path} to "
        "restart"
    )
    assert remedy in message and sorted(os.listdir(tmp_path)) == files  # refused: nothing changed
    import tensorflow as tf

    tf.compat.v1.train.update_checkpoint_state(str(tmp_path), "ckpt-2")  # the remedy
    ckpt, hist = _fit(again, tmp_path, epochs=3)
    assert ckpt.restored_epoch == 2 and len(hist.history["loss"]) == 1


def test_a_missing_newest_checkpoint_falls_back_to_the_previous_with_a_warning(tmp_path):
    s, _, _ = make_sampler(vr=True)
    _fit(s, tmp_path, epochs=2)
    for name in os.listdir(tmp_path):
        if name.startswith("ckpt-2."):
            os.remove(tmp_path / name)
    again, _, _ = make_sampler(vr=True)
    with pytest.warns(
        UserWarning,
        match=re.escape(
            f"damaged checkpoint skipped ({tmp_path}/ckpt-2: its files are missing); resuming from {tmp_path}/ckpt-1"
        ),
    ) as caught:
        ckpt, _ = _fit(again, tmp_path, epochs=2)
    assert ckpt.restored_epoch == 1
    skipped = [w for w in caught if "damaged checkpoint skipped" in str(w.message)]
    assert [w.filename for w in skipped] == [__file__]  # at the fit call (in _fit), not inside Keras
