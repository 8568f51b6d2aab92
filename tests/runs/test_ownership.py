"""Output directories and run files are never lost or silently replaced.

A run pointed at another run's samples, swap logs, epoch log or checkpoints refuses them, naming
the difference (``overwrite=True`` replaces them); one writer per directory; ``load_samples``
checks the manifest's structure and that every sample has the same arrays; the ``bma_*`` columns
reach a CSV log from the first epoch.
"""

import csv
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from _small_sampler import (
    Interrupt,  # raises KeyboardInterrupt at a given step
    make_sampler,
    read_csv,
)

import tf_vrre
from tf_vrre import _keras_compat
from tf_vrre.callbacks import CSVLogger, SampleCollector, SwapLogger
from tf_vrre.runs import samples


def writers(run, **kwargs):
    return [
        SampleCollector(str(run / "samples"), every=2, **kwargs),
        SwapLogger(str(run / "swaps"), **kwargs),
        CSVLogger(str(run / "log.csv"), **kwargs),
    ]


def snapshot(directory):
    """``{relative path: bytes}`` of every file below ``directory``."""
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, directory)] = open(path, "rb").read()
    return out


@pytest.fixture()
def finished_run(tmp_path):
    s, x, y = make_sampler(vr=False, seed=0)
    s.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False, callbacks=writers(tmp_path / "run"))
    return tmp_path / "run", x, y


def test_another_run_is_refused_naming_the_difference_and_nothing_changes(finished_run):
    run, x, y = finished_run
    before = snapshot(run)
    assert len(tf_vrre.load_samples(str(run / "samples"))) == 4
    other, _, _ = make_sampler(vr=False, seed=1)
    for i, message in enumerate(
        [
            "samples holds 4 sample files of another run (sampler.seed: 0 there, 1 here)",
            "swaps holds swap logs (swaps.csv, refresh.csv, epochs.csv, offsets.csv) of another "
            "run (sampler.seed: 0 there, 1 here)",
            "log.csv holds the epoch log of another run (sampler.seed: 0 there, 1 here)",
        ]
    ):
        with pytest.raises(tf_vrre.RunMismatchError) as exc:
            other.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[writers(run)[i]])
        assert message in str(exc.value) and "overwrite=True" in str(exc.value)
    assert snapshot(run) == before and int(other.state.step.numpy()) == 0
    other.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False, callbacks=writers(run, overwrite=True))
    samples = tf_vrre.load_samples(str(run / "samples"))
    assert samples.steps == [2, 4]
    assert json.load(open(run / "samples" / "manifest.json"))["run"]["sampler"]["seed"] == 1
    assert all(int(r["step"]) < 4 for r in read_csv(run / "swaps" / "swaps.csv"))  # the old run's rows are gone
    assert [r["epoch"] for r in read_csv(run / "log.csv")] == ["0"]


def test_the_same_run_resumes_and_keeps_what_was_written_before(finished_run):
    run, x, y = finished_run
    s, _, _ = make_sampler(vr=False, seed=0)  # the same run again (a rerun from scratch) ...
    with pytest.raises(KeyboardInterrupt):
        s.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False, callbacks=writers(run) + [Interrupt(3)])
    assert tf_vrre.load_samples(str(run / "samples")).steps == [2]  # ... replaces what comes after its start
    s.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False, callbacks=writers(run))  # the interrupted
    assert tf_vrre.load_samples(str(run / "samples")).steps == [2, 4, 6, 8, 10]  # fit's writers are taken over


def test_legacy_and_unexplained_files_are_refused(tmp_path):
    s, x, y = make_sampler(vr=False)
    legacy = tmp_path / "legacy"
    s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[SampleCollector(str(legacy), every=2)])
    manifest = json.load(open(legacy / "manifest.json"))
    del manifest["run"]
    (legacy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(tf_vrre.RunMismatchError, match="no run identity recorded"):
        s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[SampleCollector(str(legacy), every=2)])
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "sample-000000002.npz").write_bytes(b"someone's")
    with pytest.raises(tf_vrre.RunMismatchError, match="holds 1 sample files and no manifest of another run"):
        s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[SampleCollector(str(stray), every=2)])
    assert (stray / "sample-000000002.npz").read_bytes() == b"someone's"


def test_one_writer_per_directory(tmp_path):
    s, x, y = make_sampler(vr=False)
    for pair, message in [
        (
            [SampleCollector(str(tmp_path / "a"), every=2), SampleCollector(str(tmp_path / "a"), every=4)],
            "SampleCollector: two callbacks write to",
        ),
        ([SwapLogger(str(tmp_path / "b")), SwapLogger(str(tmp_path / "b"))], "SwapLogger: two callbacks write to"),
        ([CSVLogger(str(tmp_path / "c.csv")), CSVLogger(str(tmp_path / "c.csv"))], "CSVLogger: two callbacks write to"),
    ]:
        with pytest.raises(ValueError, match=message):
            s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=pair)
    assert int(s.state.step.numpy()) == 0
    (tmp_path / "d").mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, sys, time\nf = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
                "import os\nf.write(str(os.getpid())); f.flush(); print('locked', flush=True); time.sleep(120)"
            ),
            str(tmp_path / "d" / ".lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            ValueError, match=rf"SampleCollector: .*d is in use by another process \(pid {holder.pid}\)"
        ):
            s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[SampleCollector(str(tmp_path / "d"))])
    finally:
        holder.kill()
        holder.wait()
    s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[SampleCollector(str(tmp_path / "d"), every=2)])
    assert len(tf_vrre.load_samples(str(tmp_path / "d"))) == 2  # the lock died with its process


def _manifest(directory, **change):
    m = json.load(open(directory / "manifest.json"))
    m.update(change)
    (directory / "manifest.json").write_text(json.dumps(m))
    return m


def test_load_samples_checks_manifest_structure_and_shapes(finished_run, tmp_path):
    run, _, _ = finished_run
    d = run / "samples"
    entries = json.load(open(d / "manifest.json"))["entries"]
    cases = [
        ({"entries": {"a": 1}}, "'entries' must be a list, got dict"),
        ({"entries": [dict(entries[0], sha256=None)]}, "entry 0 needs 'sha256' (str), got None"),
        ({"entries": [dict(entries[0], file="../../etc/passwd")]}, "not a sample-<step>.npz file"),
        ({"entries": [entries[0], dict(entries[1], step=entries[0]["step"])]}, "repeats file"),
        ({"entries": [dict(entries[0], step=-2)]}, "negative step"),
        ({"events": "all"}, "'events' must be a list of steps"),
    ]
    original = (d / "manifest.json").read_text()
    for change, message in cases:
        _manifest(d, **change)
        with pytest.raises(ValueError) as exc:
            tf_vrre.load_samples(str(d))
        assert f"sample manifest {d / 'manifest.json'} is malformed" in str(exc.value) and message in str(exc.value)
        (d / "manifest.json").write_text(original)
    # A sample of another architecture in the directory (its manifest entry made consistent).
    victim = d / entries[2]["file"]
    np.savez(victim, w0000=np.zeros((5, 3), "float32"), w0001=np.zeros(3, "float32"))
    _manifest(
        d,
        entries=[
            dict(e, bytes=os.path.getsize(victim), sha256=samples.sha256(victim))
            if e["file"] == entries[2]["file"]
            else e
            for e in entries
        ],
    )
    with pytest.raises(
        ValueError,
        match=rf"sample file .*{entries[2]['file']}: array 'w0000' is shape \(5, 3\) "
        r"dtype float32, but shape \(4, 3\) dtype float32 in .*samples of different",
    ):
        tf_vrre.load_samples(str(d))


def test_bma_columns_reach_csv_logs_from_the_first_epoch(tmp_path):
    s, x, y = make_sampler(vr=False)
    collector = SampleCollector(str(tmp_path / "samples"), every=4, burn_in_steps=8, validation_data=(x, y))
    s.fit(
        x,
        y,
        batch_size=16,
        epochs=4,
        verbose=0,
        shuffle=False,
        callbacks=[
            collector,
            CSVLogger(str(tmp_path / "ours.csv")),
            keras.callbacks.CSVLogger(str(tmp_path / "keras.csv")),
        ],
    )
    # the last epoch's BMA, recomputed from the two samples written
    avg = tf_vrre.load_samples(str(tmp_path / "samples")).predict(s.cold_model, x)
    labels = np.asarray(y).reshape(-1)
    accuracy = np.mean(avg.argmax(-1) == labels)
    nll = -np.mean(np.log(avg[np.arange(labels.size), labels]))
    for name in ("ours.csv", "keras.csv"):
        rows = read_csv(tmp_path / name)
        assert [r["bma_samples"] for r in rows] == ["0.0", "0.0", "1.0", "2.0"], name
        assert rows[0]["bma_accuracy"] == rows[1]["bma_nll"] == "nan"
        assert float(rows[3]["bma_accuracy"]) == pytest.approx(accuracy, abs=1e-12), name
        assert float(rows[3]["bma_nll"]) == pytest.approx(nll, rel=1e-5), name


def test_csv_logger_resumes_drops_torn_rows_and_keeps_full_precision(tmp_path):
    s, x, y = make_sampler(vr=False)
    log = tmp_path / "log.csv"
    with pytest.raises(KeyboardInterrupt):
        s.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[CSVLogger(str(log)), Interrupt(10)])
    with open(log, "a") as f:
        f.write("2,0.5,0.")  # a row cut by a kill
    assert [r[0] for r in csv.reader(open(log))] == ["epoch", "0", "1", "2"]
    _keras_compat.set_initial_epoch(s, 1)  # a restore of epoch 1's end (what tf_vrre.Checkpoint does)
    hist = s.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[CSVLogger(str(log))]).history
    rows = list(csv.reader(open(log)))
    assert rows[0][0] == "epoch" and [r[0] for r in rows[1:]] == ["0", "1", "2"]
    assert all(len(r) == len(rows[0]) for r in rows)
    loss = rows[0].index("loss")
    assert [float(r[loss]) for r in rows[2:]] == hist["loss"]  # written with every digit
    log.write_text("epoch,accept_ra")  # killed while writing the header: nothing was logged
    _keras_compat.set_initial_epoch(s, None)
    s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[CSVLogger(str(log))])
    rows = list(csv.reader(open(log)))
    assert rows[0][0] == "epoch" and "loss" in rows[0] and [r[0] for r in rows[1:]] == ["0"]


def test_csv_logger_config_round_trip(tmp_path):
    logger = CSVLogger(str(tmp_path / "l.csv"), separator=";", overwrite=True)
    config = logger.get_config()
    assert config == {"filename": str(tmp_path / "l.csv"), "separator": ";", "overwrite": True}
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(logger)).get_config() == config
    with pytest.raises(ValueError, match="separator must be one character"):
        CSVLogger("x.csv", separator=";;")
    with pytest.raises(TypeError, match="overwrite must be True or False"):
        SampleCollector("x", overwrite=1)


def test_a_non_finite_sample_is_never_written(tmp_path):
    s, x, y = make_sampler(vr=False)

    class Poison(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if int(self.model.state.step.numpy()) == 6:  # before the collector sees step 6
                w = self.model.cold_model.weights[0]
                w.assign(np.full(w.shape, np.nan, "float32"))

    with pytest.raises(
        FloatingPointError,
        match=r"weights after step 6 are not finite \(NaN or inf in w0000\); "
        r"sample not written, 2 earlier samples .* stay loadable",
    ):
        s.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[Poison(), SampleCollector(str(tmp_path), every=2)])
    assert tf_vrre.load_samples(str(tmp_path)).steps == [2, 4]
    assert sorted(os.listdir(tmp_path)) == [
        ".lock",
        "manifest.json",
        "model.json",
        "sample-000000002.npz",
        "sample-000000004.npz",
    ]


def test_an_unserializable_model_fn_is_named_before_anything_is_written(tmp_path):
    """``functools.partial`` cannot be serialized by Keras, so no run identity: a ValueError naming
    the fix, not a TypeError from inside Keras, and no directory; ``models.Builder`` works."""
    import functools

    from tf_vrre import CorrectedSwap, ReplicaExchangeSampler
    from tf_vrre.workflows.image_classification import models

    def sampler(model_fn):
        s = ReplicaExchangeSampler(
            model_fn,
            data_size=64,
            num_chains=2,
            temperatures=[1.0, 4.0],
            learning_rates=1e-3,
            swap=CorrectedSwap(correction=2.0),
        )
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None))
        return s

    x = np.random.default_rng(0).integers(0, 256, (64, 32, 32, 3)).astype(np.float32) / 255.0
    y = np.arange(64) % 10
    partial = functools.partial(models.build, "cnn", num_classes=10, width=2)
    with pytest.raises(ValueError, match="cannot record the run identity.*not functools.partial"):
        sampler(partial).fit(
            x, y, batch_size=32, epochs=1, verbose=0, callbacks=[SampleCollector(str(tmp_path / "p"), every=1)]
        )
    assert not (tmp_path / "p").exists()
    sampler(models.Builder("cnn", num_classes=10, width=2)).fit(
        x, y, batch_size=32, epochs=1, verbose=0, callbacks=[SampleCollector(str(tmp_path / "b"), every=1)]
    )
    assert len(tf_vrre.load_samples(str(tmp_path / "b"))) == 2
