"""ReplicaExchangeSampler: config, the training API (fit, logs, evaluate, predict), reproducibility, saving.

The argument checks are in test_replica_exchange_validation.py, the energies and swaps inside the
model in test_replica_exchange_swaps.py; the models they share in tests/helpers/_replica_exchange_models.py.
"""

import csv

import keras
import numpy as np
import pytest
import tensorflow as tf
from _replica_exchange_models import (
    N_MIX,
    bn_classifier,
    classification_data,
    mixture_sampler,
    small_classifier,
)

import tf_vrre
from tf_vrre.workflows.gaussian_mixture import target


def test_config_round_trip():
    sched = keras.optimizers.schedules.ExponentialDecay(1e-4, decay_steps=10, decay_rate=0.9)
    s = mixture_sampler(
        num_chains=3,
        temperatures=[1.0, 10.0, 100.0],
        learning_rates=[sched, 1e-4, 2e-4],
        swap=tf_vrre.CorrectedSwap(correction=5.0, pairs="deo", cooling_steps=3),
        variance_reduction=tf_vrre.ControlVariates(period=7, coefficient="adaptive"),
        energy_mode="train",
        independent_init=True,
    )
    cfg = s.get_config()
    assert set(cfg) == {
        "name",
        "model_fn",
        "data_size",
        "num_chains",
        "temperatures",
        "learning_rates",
        "dynamics",
        "momentum",
        "weight_decay",
        "swap",
        "variance_reduction",
        "energy_mode",
        "nll",
        "seed",
        "independent_init",
        "placement",
        "gradient_noise_every",
    }
    back = tf_vrre.ReplicaExchangeSampler.from_config(cfg)
    assert back.get_config() == cfg
    assert back.swap_rule.get_config() == s.swap_rule.get_config()
    assert isinstance(back.learning_rates[0], keras.optimizers.schedules.ExponentialDecay)
    # serialize_keras_object path (what Keras saving uses)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(s))
    assert again.get_config() == cfg


def test_classifier_fit_logs_and_csv(tmp_path):
    x, y = classification_data()
    s = tf_vrre.ReplicaExchangeSampler(
        small_classifier,
        data_size=len(x),
        num_chains=2,
        temperatures=[0.01, 0.05],
        learning_rates=[1e-3, 1.5e-3],
        weight_decay=1.0,
        seed=0,
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(120, seed=0).batch(30)
    path = tmp_path / "log.csv"
    hist = s.fit(ds, epochs=4, verbose=0, callbacks=[keras.callbacks.CSVLogger(str(path))])
    logs = {k: v[-1] for k, v in hist.history.items()}
    for key in (
        "loss",
        "loss_1",
        "accuracy",
        "accuracy_1",
        "swaps",
        "swap_attempts",
        "accept_rate",
        "sigma2_0",
        "temperature_0",
        "temperature_1",
        "lr_0",
        "lr_1",
        "correction",
    ):
        assert key in logs, key
        assert isinstance(logs[key], float), (key, type(logs[key]))
        assert np.isfinite(logs[key])
    assert logs["temperature_1"] == pytest.approx(0.05)
    assert logs["lr_1"] == pytest.approx(1.5e-3)
    assert logs["accuracy"] > 0.6
    rows = list(csv.DictReader(open(path)))
    assert len(rows) == 4 and "swaps" in rows[0] and "sigma2_0" in rows[0]
    ev = s.evaluate(ds, verbose=0, return_dict=True)
    assert set(ev) >= {"loss", "accuracy"}
    assert s.predict(x[:5], verbose=0).shape == (5, 3)
    np.testing.assert_allclose(s.predict(x[:5], verbose=0), s.cold_model.predict(x[:5], verbose=0))
    # Re-compiling without metrics drops the hot chains' metrics (they were built: stale ones
    # used to break fit's epoch logs).
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = s.fit(ds, epochs=1, verbose=0).history
    assert "accuracy_1" not in hist and "correction" in hist


def test_regression_with_compiled_mse_and_single_chain_msgd():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4)).astype("float32")
    y = (x @ np.array([1.0, 0.0, -1.0, 2.0]) + 0.1 * rng.normal(size=200)).astype("float32")[:, None]

    def build():
        inp = keras.Input((4,))
        return keras.Model(inp, keras.layers.Dense(1)(inp))

    s = tf_vrre.ReplicaExchangeSampler(
        build, data_size=200, num_chains=1, dynamics="msgd", learning_rates=1e-3, swap=None, seed=0
    )
    s.compile(loss="mse")
    hist = s.fit(x, y, batch_size=50, epochs=30, verbose=0)
    assert hist.history["loss"][-1] < 0.05
    assert "swaps" not in hist.history


def test_deep_ensemble_as_one_sampler_equal_temperatures_without_swaps():
    """K M-SGD chains at temperature 0 without swaps (a deep ensemble in one sampler): equal
    temperatures are allowed; the chains start apart and each reaches the least-squares weights."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 4)).astype("float32")
    w = np.array([1.0, 0.0, -1.0, 2.0], dtype="float32")
    y = (x @ w)[:, None]

    def build():
        inp = keras.Input((4,))
        return keras.Model(inp, keras.layers.Dense(1, use_bias=False)(inp))

    s = tf_vrre.ReplicaExchangeSampler(
        build,
        data_size=200,
        num_chains=3,
        dynamics="msgd",
        learning_rates=5e-4,
        swap=None,
        seed=0,
        independent_init=True,
    )
    start = [m.get_weights()[0][:, 0].copy() for m in s.chains]
    assert min(np.abs(a - b).max() for i, a in enumerate(start) for b in start[i + 1 :]) > 1e-3
    s.compile(loss="mse")
    s.fit(x, y, batch_size=50, epochs=60, verbose=0)
    np.testing.assert_array_equal(s.state.ladder.temperature.numpy(), [0.0, 0.0, 0.0])
    for m in s.chains:
        np.testing.assert_allclose(m.get_weights()[0][:, 0], w, atol=0.02)


def test_bn_model_uses_inference_energies_and_runs():
    x, y = classification_data()
    s = tf_vrre.ReplicaExchangeSampler(
        bn_classifier,
        data_size=len(x),
        num_chains=2,
        temperatures=[0.01, 0.1],
        learning_rates=1e-3,
        seed=0,
        variance_reduction=tf_vrre.ControlVariates(period=3, batch_size=64),
    )
    assert s.energy_mode == "inference"
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = s.fit(x, y, batch_size=40, epochs=3, verbose=0)
    assert np.isfinite(hist.history["sigma2_0"][-1])
    assert np.isfinite(hist.history["loss"][-1])


def test_reproducible_and_seed_dependent():
    def run(seed):
        s = mixture_sampler(seed=seed, variance_reduction=tf_vrre.ControlVariates(period=3))
        data = target.make_data(N_MIX, seed=1)
        s.set_reference_data(data)
        s.fit(tf.data.Dataset.from_tensor_slices(data).batch(40), epochs=3, verbose=0)
        return [c.get_weights()[0] for c in s.chains], s.state.swap.sigma2.numpy(), s.state.swap.swap_count.numpy()

    a, b, c = run(3), run(3), run(4)
    for u, v in zip(a[0], b[0]):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    assert not np.array_equal(a[0][0], c[0][0])


def test_reference_dataset_and_arrays_give_identical_trajectories():
    data = target.make_data(N_MIX, seed=2)
    out = []
    for ref in (data, tf.data.Dataset.from_tensor_slices(data).batch(33)):
        s = mixture_sampler(variance_reduction=tf_vrre.ControlVariates(period=2, batch_size=64), seed=9)
        s.set_reference_data(ref)
        s.fit(tf.data.Dataset.from_tensor_slices(data).batch(50), epochs=2, verbose=0)
        out.append((s.chains[0].get_weights()[0], s.state.control_variates.snapshot_energy.numpy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)


def test_keras_save_and_load_restores_full_sampler_state(tmp_path):
    x, y = classification_data()
    s = tf_vrre.ReplicaExchangeSampler(
        small_classifier,
        data_size=len(x),
        num_chains=2,
        temperatures=[0.01, 0.05],
        learning_rates=1e-3,
        seed=0,
        variance_reduction=tf_vrre.ControlVariates(period=3),
    )
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    s.fit(x, y, batch_size=30, epochs=2, verbose=0)
    path = str(tmp_path / "sampler.keras")
    s.save(path)
    back = keras.saving.load_model(path)
    assert isinstance(back, tf_vrre.ReplicaExchangeSampler) and back.compiled
    assert len(back.weights) == len(s.weights)
    for a, b in zip(s.weights, back.weights):  # weights of all chains, velocities, snapshots, sigma2, counters
        np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))
    np.testing.assert_allclose(back.predict(x[:3], verbose=0), s.predict(x[:3], verbose=0))


def test_divergence_is_reported_not_silent():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 4)).astype("float32")
    y = x.sum(1, keepdims=True)

    def linear():
        inp = keras.Input((4,))
        return keras.Model(inp, keras.layers.Dense(1)(inp))

    s = tf_vrre.ReplicaExchangeSampler(linear, data_size=100, num_chains=1, dynamics="sgld", learning_rates=1.0, seed=0)
    s.compile(loss="mse")
    with pytest.raises(tf.errors.InvalidArgumentError, match="not finite"):
        s.fit(x, y, batch_size=20, epochs=50, verbose=0)
