"""SampleCollector: thinning, burn-in, cycles, bounded disk, BMA, corrupt manifests, and a
kill-and-resume run that must reproduce the uninterrupted run's samples exactly (real SIGKILLs at
many instants: tests/callbacks/test_checkpoint_resume.py)."""

import json
import os
import shutil

import keras
import numpy as np
import pytest
from _small_sampler import Interrupt, _subclassed_net, data, make_sampler, read_csv, small_net

from tf_vrre import CorrectedSwap, ReplicaExchangeSampler
from tf_vrre.callbacks import SampleCollector, SwapLogger
from tf_vrre.callbacks.running_bma import RunningBMA
from tf_vrre.callbacks.sample_collector import load_samples, reservoir_slot
from tf_vrre.sgmcmc.schedules import CyclicalCosine

STEPS_PER_EPOCH = 4  # N = 64, batch 16


class WeightProbe(keras.callbacks.Callback):
    """Cold-chain weights after every batch, keyed by the step counter."""

    def __init__(self):
        super().__init__()
        self.weights = {}

    def on_train_batch_end(self, batch, logs=None):
        self.weights[int(self.model.state.step.numpy())] = self.model.cold_model.get_weights()


def test_thinning_burn_in_and_contents(tmp_path):
    s, x, y = make_sampler(vr=True)
    probe = WeightProbe()
    col = SampleCollector(str(tmp_path), every=3, burn_in_steps=8)
    s.fit(s.make_dataset(16), epochs=6, verbose=0, callbacks=[probe, col])
    samples = load_samples(str(tmp_path))
    assert samples.steps == [9, 12, 15, 18, 21, 24]
    for i, e in enumerate(samples.entries):
        for a, b in zip(samples.weights(i), probe.weights[e["step"]]):
            np.testing.assert_array_equal(a, b)
        assert e["epoch"] == (e["step"] - 1) // STEPS_PER_EPOCH
        assert e["temperature"] == pytest.approx(1.0) and e["lr"] == pytest.approx(2e-3)
        assert np.isfinite(e["energy"]) and e["energy"] > 0
    files = sorted(f for f in os.listdir(tmp_path) if f.startswith("sample-"))
    assert files == [f"sample-{t:09d}.npz" for t in samples.steps]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_keep_last_bounds_disk(tmp_path):
    s, _, _ = make_sampler(vr=False)
    s._reference = None
    x, y = data()
    col = SampleCollector(str(tmp_path), every=2, max_samples=3, keep="last")
    s.fit(x, y, batch_size=16, epochs=5, verbose=0, shuffle=False, callbacks=[col])
    samples = load_samples(str(tmp_path))
    assert samples.steps == [16, 18, 20]
    assert len([f for f in os.listdir(tmp_path) if f.startswith("sample-")]) == 3
    assert json.load(open(tmp_path / "manifest.json"))["events"] == list(range(2, 21, 2))


def test_reservoir_inclusion_is_uniform():
    """Algorithm R: after n items each is kept with probability k/n (simulated over seeds)."""
    k, n, seeds = 3, 12, 4000
    kept = np.zeros(n)
    for seed in range(seeds):
        slots = [None] * k
        for count in range(1, n + 1):
            j = reservoir_slot(seed, count, k)
            if j is not None:
                slots[j] = count
        assert None not in slots
        for c in slots:
            kept[c - 1] += 1
    p = k / n
    se = np.sqrt(p * (1 - p) / seeds)
    assert np.all(np.abs(kept / seeds - p) < 4.5 * se), kept / seeds


def test_reservoir_collector(tmp_path):
    s, x, y = make_sampler(vr=False)
    col = SampleCollector(str(tmp_path), every=1, max_samples=4, keep="reservoir", seed=3)
    s.fit(x, y, batch_size=16, epochs=5, verbose=0, shuffle=False, callbacks=[col])
    samples = load_samples(str(tmp_path))
    assert len(samples) == 4
    expected = [None] * 4
    for count in range(1, 21):
        j = reservoir_slot(3, count, 4)
        if j is not None:
            expected[j] = count
    assert samples.steps == sorted(expected)
    assert len([f for f in os.listdir(tmp_path) if f.startswith("sample-")]) == 4


def test_cyclical_sampling_phase(tmp_path):
    s, x, y = make_sampler(vr=False)
    cycle = CyclicalCosine(2e-3, total_steps=40, cycles=2)  # cycles of 20 steps, collect at r > 0.7
    col = SampleCollector(str(tmp_path), every=1, cycle=cycle)
    s.fit(x, y, batch_size=16, epochs=10, verbose=0, shuffle=False, callbacks=[col])
    steps = load_samples(str(tmp_path)).steps
    assert steps == [t for t in range(1, 41) if (t - 1) % 20 > 14]


def test_running_bma_metrics(tmp_path):
    s, x, y = make_sampler(vr=False)
    col = SampleCollector(str(tmp_path), every=4, burn_in_steps=4, validation_data=(x, y))
    hist = s.fit(x, y, batch_size=16, epochs=6, verbose=0, shuffle=False, callbacks=[col]).history
    samples = load_samples(str(tmp_path))
    probs = samples.predict(small_net(), x)
    acc = float(np.mean(probs.argmax(-1) == y))
    nll = float(-np.mean(np.log(probs[np.arange(len(y)), y])))
    assert hist["bma_accuracy"][-1] == pytest.approx(acc)
    assert hist["bma_nll"][-1] == pytest.approx(nll, rel=1e-5)
    assert hist["bma_samples"][-1] == len(samples) == 5
    assert hist["samples"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert samples.entries[-1]["bma_accuracy"] == pytest.approx(acc)
    # One-hot labels give the same metrics.
    one_hot = RunningBMA(np.eye(3)[y])
    one_hot.add(probs)
    assert one_hot.metrics()["bma_accuracy"] == pytest.approx(acc)


def _run(directory, epochs, callbacks_first=True, interrupt_at=None):
    s, x, y = make_sampler(vr=True, correction=1.0, temperatures=(1.0, 3.0), lr=3e-3, gradient_noise_every=3)
    probe = WeightProbe()
    ours = [
        SampleCollector(str(directory / "samples"), every=2, burn_in_steps=4, validation_data=(x, y)),
        SwapLogger(str(directory / "swaps")),
    ]
    backup = keras.callbacks.BackupAndRestore(str(directory / "backup"))
    cbs = [backup, *ours] if callbacks_first else [*ours, backup]
    if interrupt_at is not None:
        cbs.append(Interrupt(interrupt_at))
    cbs.append(probe)
    s.fit(s.make_dataset(16), epochs=epochs, verbose=0, callbacks=cbs)
    return s, probe


def test_entries_record_the_epochs_excess_temperature(tmp_path):
    """Each entry holds the cold slot's excess temperature measured so far in its epoch: at an
    epoch's last step that is the epoch's value in the history."""
    s, x, y = make_sampler(vr=False, gradient_noise_every=2)
    col = SampleCollector(str(tmp_path), every=STEPS_PER_EPOCH, validation_data=(x, y))
    hist = s.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[col]).history
    recorded = [e["excess_temperature"] for e in load_samples(str(tmp_path)).entries]
    assert recorded == pytest.approx(hist["excess_temperature_0"], rel=1e-12) and min(recorded) > 0


@keras.saving.register_keras_serializable(package="test_callbacks")
def _regression_net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(2)(keras.layers.Dense(6, activation="tanh")(inp)))


@keras.saving.register_keras_serializable(package="test_callbacks")
def _two_output_nll(x, y, y_pred):
    return keras.ops.sum(keras.ops.square(y - y_pred), axis=-1) / 2


def test_a_regressions_outputs_are_stored_as_they_are(tmp_path):
    """``output="values"``: the predictive is the model's output (no softmax), the running BMA is
    scored by the root mean squared error of the samples' mean output."""
    x, _ = data()
    y = np.stack([x[:, 0] + x[:, 1], x[:, 2]], 1).astype("float32")
    s = ReplicaExchangeSampler(
        _regression_net,
        data_size=len(x),
        num_chains=1,
        temperatures=1.0,
        learning_rates=1e-3,
        nll=_two_output_nll,
        seed=0,
    )
    col = SampleCollector(str(tmp_path), every=4, validation_data=(x, y), output="values")
    hist = s.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=[col]).history
    samples = load_samples(str(tmp_path))
    outputs = []
    for i, entry in enumerate(samples.entries):
        model = _regression_net()
        model.set_weights(samples.weights(i))
        outputs.append(np.asarray(model.predict(x, verbose=0), np.float64))
        with np.load(os.path.join(str(tmp_path), entry["file"])) as z:
            np.testing.assert_allclose(z["predictive"], outputs[-1], rtol=1e-5, atol=1e-6)
    rmse = float(np.sqrt(np.mean((np.mean(outputs, 0) - y) ** 2)))
    assert hist["bma_rmse"][-1] == pytest.approx(rmse, rel=1e-5) and "bma_accuracy" not in hist
    with pytest.raises(ValueError, match="output must be 'logits', 'probabilities' or 'values'"):
        SampleCollector(str(tmp_path), output="raw")


def test_kill_and_resume_reproduces_samples(tmp_path):
    full, _ = _run(tmp_path / "full", epochs=6)
    # Killed at step 15 (epoch 3; checkpoint at the end of epoch 2 = step 12; samples 14
    # already written after it), then the same command again, callbacks in another order.
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "resumed", epochs=6, interrupt_at=15)
    assert 14 in load_samples(str(tmp_path / "resumed" / "samples")).steps
    resumed, probe = _run(tmp_path / "resumed", epochs=6, callbacks_first=False)
    assert min(probe.weights) == 13  # restarted from the end-of-epoch-2 checkpoint

    a, b = load_samples(str(tmp_path / "full" / "samples")), load_samples(str(tmp_path / "resumed" / "samples"))
    assert a.steps == b.steps == list(range(6, 25, 2))
    for i, (ea, eb) in enumerate(zip(a.entries, b.entries)):
        for k in ("step", "epoch", "temperature", "lr", "energy", "excess_temperature", "bma_accuracy", "bma_nll"):
            assert ea[k] == eb[k], (k, ea[k], eb[k])
        assert ea["bma_samples"] == eb["bma_samples"]
        for wa, wb in zip(a.weights(i), b.weights(i)):
            np.testing.assert_array_equal(wa, wb)
    assert sum(e["excess_temperature"] is not None for e in a.entries) >= 6  # measured on steps 3, 6, 9, ...
    assert read_csv(tmp_path / "full" / "swaps" / "swaps.csv") == read_csv(tmp_path / "resumed" / "swaps" / "swaps.csv")
    assert read_csv(tmp_path / "full" / "swaps" / "epochs.csv") == read_csv(
        tmp_path / "resumed" / "swaps" / "epochs.csv"
    )
    for va, vb in zip(full.weights, resumed.weights):  # every chain, velocity, snapshot, sigma2, counter
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(va), keras.ops.convert_to_numpy(vb))


def test_corrupt_manifest_and_files_are_named(tmp_path):
    s, x, y = make_sampler(vr=False)
    d = tmp_path / "s"
    s.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[SampleCollector(str(d), every=2)])
    files = sorted(f for f in os.listdir(d) if f.startswith("sample-"))
    assert len(load_samples(str(d))) == 4

    good = tmp_path / "good"
    shutil.copytree(d, good)
    with open(d / files[1], "r+b") as f:  # truncated file
        f.truncate(os.path.getsize(d / files[1]) // 2)
    with pytest.raises(ValueError, match=files[1]):
        load_samples(str(d))
    with pytest.raises(ValueError, match=files[1]):  # resuming into a corrupt directory
        s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[SampleCollector(str(d), every=2)])
    os.remove(d / files[1])  # missing file
    with pytest.raises(ValueError, match=f"missing.*{files[1]}"):
        load_samples(str(d))
    (good / "manifest.json").write_text('{"format": "tf_vrre.samples/1", "entries": [')
    with pytest.raises(ValueError, match="manifest.json"):
        load_samples(str(good))
    with pytest.raises(ValueError, match="no sample manifest"):
        load_samples(str(tmp_path / "nowhere"))


def test_collector_errors_and_config(tmp_path):
    for kwargs, match in [
        ({"every": 0}, "every"),
        ({"burn_in_steps": -1}, "burn_in_steps"),
        ({"max_samples": 0}, "max_samples"),
        ({"keep": "first"}, "keep"),
        ({"output": "softmax"}, "output"),
        ({"validation_data": (np.zeros((3, 4)), np.zeros(2))}, "validation_data"),
    ]:
        with pytest.raises(ValueError, match=match):
            SampleCollector(str(tmp_path), **kwargs)
    with pytest.raises(TypeError, match="cycle"):
        SampleCollector(str(tmp_path), cycle=0.7)
    s, x, y = make_sampler(vr=False)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None), steps_per_execution=4)
    with pytest.raises(ValueError, match="multiple of steps_per_execution"):
        s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[SampleCollector(str(tmp_path), every=6)])
    col = SampleCollector(
        str(tmp_path),
        every=8,
        burn_in_steps=3,
        cycle=CyclicalCosine(1e-3, 100, 2),
        max_samples=5,
        keep="reservoir",
        validation_data=(np.ones((2, 4)), np.array([0, 1])),
        output="probabilities",
        batch_size=32,
        seed=7,
        overwrite=True,
    )
    config = col.get_config()
    assert set(config) == {
        "directory",
        "every",
        "burn_in_steps",
        "cycle",
        "max_samples",
        "keep",
        "validation_data",
        "output",
        "batch_size",
        "seed",
        "overwrite",
    }
    back = SampleCollector.from_config(json.loads(json.dumps(config)))
    assert back.get_config() == config
    assert [back.is_collection_step(t) for t in range(100)] == [col.is_collection_step(t) for t in range(100)]


def test_make_dataset_order_is_a_function_of_the_step():
    """Each data epoch is a new permutation; a fresh dataset (a restarted command) continues
    from the sampler's step counter, mid-epoch too with repeat=True."""
    s, _, _ = make_sampler(vr=True)

    def epoch_order(ds):
        return np.concatenate([e["example_index"].numpy() for _, _, e in ds])

    orders = []
    for e in range(3):
        s.state.step.assign(e * STEPS_PER_EPOCH)
        orders.append(epoch_order(s.make_dataset(16)))
        assert sorted(orders[-1]) == list(range(64))
    assert not np.array_equal(orders[0], orders[1]) and not np.array_equal(orders[1], orders[2])
    s.state.step.assign(1)  # mid-epoch: the non-repeating dataset yields the next whole epoch
    np.testing.assert_array_equal(epoch_order(s.make_dataset(16)), orders[1])
    s.state.step.assign(2 * STEPS_PER_EPOCH + 1)  # repeating stream: from batch 9 on
    it = iter(s.make_dataset(16, repeat=True))
    got = np.concatenate([next(it)[2]["example_index"].numpy() for _ in range(3)])
    np.testing.assert_array_equal(got, orders[2][16:])
    other = make_sampler(vr=True, seed=1)[0]
    assert not np.array_equal(epoch_order(other.make_dataset(16)), orders[0])


@pytest.mark.parametrize("keep", ["last", "reservoir"])
def test_running_bma_is_over_the_kept_samples(tmp_path, keep):
    s, x, y = make_sampler(vr=False)
    col = SampleCollector(str(tmp_path), every=2, max_samples=3, keep=keep, validation_data=(x, y), seed=1)
    hist = s.fit(x, y, batch_size=16, epochs=5, verbose=0, shuffle=False, callbacks=[col]).history
    samples = load_samples(str(tmp_path))
    assert len(samples) == 3 and hist["bma_samples"][-1] == 3.0
    probs = samples.predict(small_net(), x)
    assert hist["bma_accuracy"][-1] == pytest.approx(float(np.mean(probs.argmax(-1) == y)))
    assert hist["bma_nll"][-1] == pytest.approx(float(-np.mean(np.log(probs[np.arange(len(y)), y]))), rel=1e-5)


def test_model_json_rebuilds_the_sampled_architecture(tmp_path):
    """``model.json`` is written when collection starts; the model it describes takes the samples."""
    s, x, _ = make_sampler(vr=True)
    col = SampleCollector(str(tmp_path), every=4)
    s.fit(s.make_dataset(16), epochs=2, verbose=0, callbacks=[col])
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    rebuilt = keras.models.model_from_json(open(tmp_path / "model.json").read())
    samples = load_samples(str(tmp_path))
    rebuilt.set_weights(samples.weights(len(samples) - 1))
    np.testing.assert_array_equal(rebuilt.predict(x, verbose=0), s.cold_model.predict(x, verbose=0))


def test_unserializable_model_warns_and_writes_no_model_json(tmp_path):
    s = ReplicaExchangeSampler(
        _subclassed_net,
        data_size=64,
        num_chains=2,
        temperatures=[1.0, 4.0],
        learning_rates=2e-3,
        seed=0,
        swap=CorrectedSwap(correction=2.0),
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None))
    x, y = data()
    with pytest.warns(UserWarning, match="model=") as record:
        s.fit(
            x, y, batch_size=16, epochs=1, verbose=0, shuffle=False, callbacks=[SampleCollector(str(tmp_path), every=2)]
        )
    assert "model.json not written" in str(record[0].message)
    assert not os.path.exists(tmp_path / "model.json") and len(load_samples(str(tmp_path))) == 2
