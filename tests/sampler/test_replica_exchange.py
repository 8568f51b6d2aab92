"""ReplicaExchangeSampler: API, validation, logs, swaps at the model level, reproducibility."""

import csv

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre
from tf_vrre.sgmcmc import state
from tf_vrre.workflows.gaussian_mixture import target

N_MIX = 200


@keras.saving.register_keras_serializable(package="tests")
def small_classifier():
    inp = keras.Input((4,))
    h = keras.layers.Dense(8, activation="tanh")(inp)
    return keras.Model(inp, keras.layers.Dense(3)(h))


@keras.saving.register_keras_serializable(package="tests")
def bn_classifier():
    inp = keras.Input((4,))
    h = keras.layers.Dense(8)(inp)
    h = keras.layers.BatchNormalization()(h)
    return keras.Model(inp, keras.layers.Dense(3)(keras.layers.Activation("relu")(h)))


@keras.saving.register_keras_serializable(package="tests")
def scalar_model():
    return target.build_model(0.0)


def _classification_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 1).astype("int64")
    return x, y


def _mixture_sampler(**kw):
    args = dict(
        data_size=N_MIX,
        num_chains=2,
        temperatures=[10.0, 1000.0],
        learning_rates=1e-4,
        dynamics="sgld",
        weight_decay=target.weight_decay(),
        nll=target.nll,
        seed=5,
    )
    args.update(kw)
    return tf_vrre.ReplicaExchangeSampler(target.build_default_model, **args)


# ---- validation ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"temperatures": [2.0, 1.0]}, "strictly increasing"),
        ({"temperatures": [1.0, 1.0]}, "strictly increasing"),
        ({"temperatures": [0.0, 1.0]}, "> 0"),
        ({"temperatures": [1.0]}, "one entry per chain"),
        ({"temperatures": None}, "temperatures"),
        ({"learning_rates": 0.0}, "learning_rates"),
        ({"learning_rates": [-1e-4, 1e-4]}, "learning_rates"),
        ({"num_chains": 0}, "num_chains"),
        ({"num_chains": 1, "temperatures": 1.0, "swap": "corrected"}, "num_chains >= 2"),
        ({"num_chains": 1, "temperatures": 1.0, "swap": tf_vrre.CorrectedSwap()}, "num_chains >= 2"),
        ({"data_size": None}, "data_size"),
        ({"data_size": 0}, "data_size"),
        ({"dynamics": "hmc"}, "dynamics"),
        ({"momentum": 1.0}, "momentum"),
        ({"weight_decay": -1.0}, "weight_decay"),
        ({"energy_mode": "eval"}, "energy_mode"),
        ({"swap": "bogus"}, "swap"),
        ({"swap": None, "variance_reduction": tf_vrre.ControlVariates(period=4)}, "variance_reduction"),
        ({"dynamics": "msgd"}, "swap"),
        ({"dynamics": "msgd", "num_chains": 1, "temperatures": 1.0, "swap": None}, "temperatures"),
    ],
)
def test_invalid_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _mixture_sampler(**kwargs)


def test_type_errors():
    with pytest.raises(TypeError, match="model_fn"):
        tf_vrre.ReplicaExchangeSampler(None, data_size=10)
    with pytest.raises(TypeError, match="swap"):
        _mixture_sampler(swap=3)
    with pytest.raises(TypeError, match="nll"):
        _mixture_sampler(nll=lambda x: x)
    with pytest.raises(TypeError, match="temperatures"):
        _mixture_sampler(temperatures=["a", "b"])


def test_model_fn_must_return_built_model():
    with pytest.raises(ValueError, match="built"):
        tf_vrre.ReplicaExchangeSampler(
            lambda: keras.Sequential([keras.layers.Dense(2)]), data_size=10, num_chains=1, nll=target.nll
        )


def test_dataset_structure_errors():
    x, y = _classification_data()
    s = tf_vrre.ReplicaExchangeSampler(
        small_classifier, data_size=len(x), num_chains=2, temperatures=[1.0, 2.0], learning_rates=1e-3, seed=0
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match="labels"):
        s.fit(tf.data.Dataset.from_tensor_slices(x).batch(30), epochs=1, verbose=0)
    # VR without reference data
    v = _mixture_sampler(swap=tf_vrre.CorrectedSwap(), variance_reduction=tf_vrre.ControlVariates(period=4))
    with pytest.raises(ValueError, match="set_reference_data"):
        v.fit(tf.data.Dataset.from_tensor_slices(target.make_data(N_MIX)).batch(50), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="data_size"):
        v.set_reference_data(target.make_data(N_MIX + 1))
    with pytest.raises(ValueError, match="variance_reduction"):
        _mixture_sampler().set_reference_data(target.make_data(N_MIX))


def test_compile_errors():
    s = tf_vrre.ReplicaExchangeSampler(small_classifier, data_size=10, num_chains=1, learning_rates=1e-3)
    with pytest.raises(ValueError, match="loss"):
        s.compile()
    with pytest.raises(TypeError, match="optimizer"):
        s.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="nll"):
        _mixture_sampler().compile(loss="mse")


# ---- config ---------------------------------------------------------------------------------
def test_config_round_trip():
    sched = keras.optimizers.schedules.ExponentialDecay(1e-4, decay_steps=10, decay_rate=0.9)
    s = _mixture_sampler(
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
    }
    back = tf_vrre.ReplicaExchangeSampler.from_config(cfg)
    assert back.get_config() == cfg
    assert back.swap_rule.get_config() == s.swap_rule.get_config()
    assert isinstance(back.learning_rates[0], keras.optimizers.schedules.ExponentialDecay)
    # serialize_keras_object path (what Keras saving uses)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(s))
    assert again.get_config() == cfg


# ---- training API -----------------------------------------------------------------------------
def test_classifier_fit_logs_and_csv(tmp_path):
    x, y = _classification_data()
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
    x, y = _classification_data()
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
        s = _mixture_sampler(seed=seed, variance_reduction=tf_vrre.ControlVariates(period=3))
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
        s = _mixture_sampler(variance_reduction=tf_vrre.ControlVariates(period=2, batch_size=64), seed=9)
        s.set_reference_data(ref)
        s.fit(tf.data.Dataset.from_tensor_slices(data).batch(50), epochs=2, verbose=0)
        out.append((s.chains[0].get_weights()[0], s.state.control_variates.snapshot_energy.numpy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)


# ---- energies and swaps inside the model --------------------------------------------------------
def test_vr_energy_is_exact_at_refresh():
    data = target.make_data(N_MIX, seed=1)
    # The paper's penalty: no swap before the first sigma2 window, so the states stay in their slots.
    s = _mixture_sampler(
        variance_reduction=tf_vrre.ControlVariates(period=5, batch_size=64),
        swap=tf_vrre.CorrectedSwap(penalty="window"),
    )
    s.chains[1].set_weights([np.float32(20.0)])
    s.set_reference_data(data)
    s.fit(tf.data.Dataset.from_tensor_slices(data).batch(40).take(1), epochs=1, verbose=0)
    exact = target.energy(np.array([30.0, 20.0]), data)
    np.testing.assert_allclose(s.state.swap.last_energy.numpy(), exact, rtol=1e-6)
    np.testing.assert_allclose(
        s.state.control_variates.snapshot_energy.numpy(),
        exact - 0.5 * np.array([30.0, 20.0]) ** 2 / target.PRIOR_SD**2,
        rtol=1e-6,
    )


def test_swap_moves_whole_state_and_rescales_velocity():
    data = target.make_data(N_MIX)
    s = _mixture_sampler(
        dynamics="sghmc", learning_rates=[1e-4, 2e-4], variance_reduction=tf_vrre.ControlVariates(period=4)
    )
    s.chains[0].set_weights([np.float32(1.0)])
    s.chains[1].set_weights([np.float32(2.0)])
    s.snapshots[0].set_weights([np.float32(-1.0)])
    s.snapshots[1].set_weights([np.float32(-2.0)])
    s.state.chains.velocities[0][0].assign(0.5)
    s.state.chains.velocities[1][0].assign(-0.25)
    s.state.control_variates.snapshot_energy.assign([10.0, 20.0])
    lrs, temps = tf.constant([1e-4, 2e-4]), tf.constant([10.0, 1000.0])
    ((g0, g1),) = state.exchange(
        s.state.chains,
        s.state.control_variates,
        tf.constant([1, 0]),
        (lrs, temps),
        [[tf.constant(7.0), tf.constant(8.0)]],
    )
    assert (float(g0), float(g1)) == (8.0, 7.0)
    assert float(s.chains[0].weights[0].numpy()) == 2.0 and float(s.chains[1].weights[0].numpy()) == 1.0
    assert float(s.snapshots[0].weights[0].numpy()) == -2.0
    assert s.state.control_variates.snapshot_energy.numpy().tolist() == [20.0, 10.0]
    # slot 0 (lr 1e-4, tau 10) receives slot 1's velocity (lr 2e-4, tau 1000)
    velocities = s.state.chains.velocities
    assert float(velocities[0][0].numpy()) == pytest.approx(-0.25 * np.sqrt(1e-4 * 10 / (2e-4 * 1000)), rel=1e-5)
    assert float(velocities[1][0].numpy()) == pytest.approx(0.5 * np.sqrt(2e-4 * 1000 / (1e-4 * 10)), rel=1e-5)
    del data


@keras.saving.register_keras_serializable(package="tests")
def two_state_nll(x, y, y_pred):
    # U(beta) = N * l(beta) = DELTA_U * beta^2 with N = 100 examples: states beta = 0 and 1.
    return tf.reshape(DELTA_U / 100.0 * tf.square(y_pred), [-1]) + 0.0 * tf.reshape(x, [-1])


DELTA_U = 2.4


def test_two_state_swap_rate_and_direction():
    """Exact energies (full batch, so sigma2 = 0): swaps follow min(1, exp(delta (U1 - U2)))."""
    x = np.zeros((100, 1), np.float32)
    s = tf_vrre.ReplicaExchangeSampler(
        scalar_model,
        data_size=100,
        num_chains=2,
        temperatures=[1.0, 2.0],
        learning_rates=1e-12,
        dynamics="sgld",
        nll=two_state_nll,
        swap=tf_vrre.CorrectedSwap(period=1),
        seed=2,
        independent_init=True,
    )
    s.chains[0].set_weights([np.float32(0.0)])
    s.chains[1].set_weights([np.float32(1.0)])
    states = []

    class Track(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            states.append(float(s.cold_model.weights[0].numpy()))

    steps = 1500
    s.fit(
        tf.data.Dataset.from_tensor_slices(x).batch(100).repeat(),
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        callbacks=[Track()],
    )
    cold_low = np.round(np.asarray(states)) == 0.0  # state after each step
    assert float(s.state.swap.sigma2.numpy()[0]) == 0.0
    p = np.exp(-(1.0 - 0.5) * DELTA_U)  # cold in the low state -> swap with prob exp(delta (U_lo - U_hi))
    # From the high state the swap is certain; from the low state it happens with probability p.
    before, after = cold_low[1:-1], cold_low[2:]
    assert np.all(after[~before]), "cold chain in the high-energy state must always swap down"
    n_low = before.sum()
    rate = np.mean(~after[before])
    assert abs(rate - p) <= 4.5 * np.sqrt(p * (1 - p) / n_low), (rate, p)
    frac = cold_low[1:].mean()
    pi = 1.0 / (1.0 + p)
    se = np.sqrt(pi * (1 - pi) * (1 - p) / (1 + p) / len(cold_low))
    assert abs(frac - pi) <= 4.5 * se, (frac, pi)
    assert frac > 0.5  # direction: the cold chain holds the low-energy state most of the time


def test_cooling_allows_at_most_one_swap_per_window():
    x = np.zeros((100, 1), np.float32)
    s = tf_vrre.ReplicaExchangeSampler(
        scalar_model,
        data_size=100,
        num_chains=2,
        temperatures=[1.0, 2.0],
        learning_rates=1e-12,
        dynamics="sgld",
        nll=two_state_nll,
        swap=tf_vrre.CorrectedSwap(period=1, cooling_steps=50),
        seed=2,
        independent_init=True,
    )
    s.chains[1].set_weights([np.float32(1.0)])
    hist = s.fit(tf.data.Dataset.from_tensor_slices(x).batch(100).repeat(), steps_per_epoch=51, epochs=4, verbose=0)
    swaps = np.diff([0.0] + hist.history["swaps"])
    assert np.all(swaps <= 1) and hist.history["swaps"][-1] >= 2


def test_ladder_of_three_chains_with_deo_and_random_pairs():
    data = target.make_data(N_MIX, seed=4)
    for pairs in ("deo", "random"):
        s = _mixture_sampler(
            num_chains=3,
            temperatures=[10.0, 100.0, 1000.0],
            swap=tf_vrre.CorrectedSwap(pairs=pairs, period=4),
            variance_reduction=tf_vrre.ControlVariates(period=4),
        )
        s.set_reference_data(data)
        hist = s.fit(tf.data.Dataset.from_tensor_slices(data).batch(20), epochs=3, verbose=0)
        for key in ("sigma2_0", "sigma2_1", "swaps_0", "swaps_1", "accept_rate_0", "accept_rate_1", "c_2"):
            assert key in hist.history, key
        attempts = s.state.swap.attempt_count.numpy()
        if pairs == "deo":
            assert abs(int(attempts[0]) - int(attempts[1])) <= 1
        assert attempts.sum() == s.state.swap.attempt_index.numpy()  # one pair per attempt for 3 chains


def test_adaptive_coefficient_moves_and_stays_finite():
    data = target.make_data(N_MIX, seed=5)
    s = _mixture_sampler(
        learning_rates=1e-3, variance_reduction=tf_vrre.ControlVariates(period=10, coefficient="adaptive")
    )
    s.set_reference_data(data)
    s.fit(tf.data.Dataset.from_tensor_slices(data).repeat().batch(20), steps_per_epoch=60, epochs=1, verbose=0)
    c = s.state.control_variates.coefficient.numpy()
    assert np.all(np.isfinite(c)) and np.any(c != -1.0)
    assert np.all((c < 0) & (c > -2))


def test_set_temperatures_validates():
    s = _mixture_sampler()
    s.set_temperatures([5.0, 50.0])
    np.testing.assert_allclose(s.state.ladder.temperature.numpy(), [5.0, 50.0])
    with pytest.raises(ValueError, match="temperatures"):
        s.set_temperatures([50.0, 5.0])
    with pytest.raises(ValueError, match="learning_rates"):
        s.set_learning_rates([0.0, 1.0])


def test_keras_save_and_load_restores_full_sampler_state(tmp_path):
    x, y = _classification_data()
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


@pytest.mark.parametrize("model_fn,mode", [(target.build_default_model, "train"), (bn_classifier, "inference")])
def test_cached_snapshot_energies_equal_snapshot_forwards(model_fn, mode):
    """Batches with example indices read snapshot NLLs from the full pass: same trajectory."""
    if model_fn is bn_classifier:
        x, y = _classification_data()
        data, kw = (x, y), {}
    else:
        data, kw = target.make_data(N_MIX, seed=6), {"nll": target.nll, "weight_decay": target.weight_decay()}
    out = []
    for cache in (True, False):
        s = tf_vrre.ReplicaExchangeSampler(
            model_fn,
            data_size=len(data[0]) if isinstance(data, tuple) else len(data),
            num_chains=2,
            temperatures=[1.0, 30.0],
            learning_rates=1e-4,
            dynamics="sgld",
            seed=8,
            energy_mode=mode,
            variance_reduction=tf_vrre.ControlVariates(period=5, batch_size=64, cache=cache),
            **kw,
        )
        if "nll" not in kw:
            s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        s.set_reference_data(data)
        assert s._cache_exact == cache
        s.fit(s.make_dataset(40, seed=1), epochs=3, verbose=0)
        out.append((s.state.swap.last_energy.numpy(), s.state.swap.sigma2.numpy(), [c.get_weights() for c in s.chains]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-3)
    for a, b in zip(out[0][2], out[1][2]):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_make_dataset_structure_and_errors():
    x, y = _classification_data()
    s = tf_vrre.ReplicaExchangeSampler(
        small_classifier,
        data_size=len(x),
        num_chains=2,
        temperatures=[1.0, 2.0],
        variance_reduction=tf_vrre.ControlVariates(period=4),
    )
    with pytest.raises(ValueError, match="set_reference_data"):
        s.make_dataset(10)
    s.set_reference_data((x, y))
    xb, yb, extra = next(iter(s.make_dataset(16, shuffle=False)))
    np.testing.assert_array_equal(extra["example_index"].numpy(), np.arange(16))
    np.testing.assert_array_equal(xb.numpy(), x[:16])
    np.testing.assert_array_equal(yb.numpy(), y[:16])
    seen = np.concatenate([e["example_index"].numpy() for _, _, e in s.make_dataset(32, seed=3)])
    assert sorted(seen.tolist()) == list(range(len(x)))
    with pytest.raises(ValueError, match="batch_size"):
        s.make_dataset(0)


def test_train_mode_snapshot_uses_batch_statistics_like_the_chain():
    """energy_mode="train" with BatchNorm: at a refresh (snapshot == weights) the VR energy is
    U_hat + prior, U_hat summing training-mode (batch-statistics) losses over the reference
    batches; a snapshot evaluated with moving statistics gives something else."""
    x, y = _classification_data(80)
    s = tf_vrre.ReplicaExchangeSampler(
        bn_classifier,
        data_size=80,
        num_chains=2,
        temperatures=[1.0, 2.0],
        learning_rates=1e-4,
        energy_mode="train",
        weight_decay=0.5,
        seed=0,
        independent_init=True,
        variance_reduction=tf_vrre.ControlVariates(period=5, batch_size=40),
    )
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
    expected = [
        float(loss(y[:40], c(x[:40], training=True)))
        + float(loss(y[40:], c(x[40:], training=True)))
        + 0.25 * sum(float(np.sum(np.square(v.numpy()))) for v in c.trainable_weights)
        for c in s.chains
    ]
    s.fit(tf.data.Dataset.from_tensor_slices((x[:40], y[:40])).batch(40).take(1), epochs=1, verbose=0)
    np.testing.assert_allclose(s.state.swap.last_energy.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("pairs,attempt_every", [("random", 1), ("deo", 1), ("random", 3)])
def test_ladder_swaps_sample_the_exact_permutation_law(pairs, attempt_every):
    """Three frozen states (exact energies U = 2.4 beta^2, beta in {0, 1, 1.5}) on the ladder
    tau = (1, 2, 4): the swap chain over assignments sigma must visit each with probability
    prop. to exp(-sum_h U(x_sigma(h)) / tau_h) (both pair schedules preserve it, and so does
    attempting swaps only every k-th step)."""
    import itertools

    x = np.zeros((100, 1), np.float32)
    temps, vals = [1.0, 2.0, 4.0], [0.0, 1.0, 1.5]
    s = tf_vrre.ReplicaExchangeSampler(
        scalar_model,
        data_size=100,
        num_chains=3,
        temperatures=temps,
        learning_rates=1e-12,
        dynamics="sgld",
        nll=two_state_nll,
        swap=tf_vrre.CorrectedSwap(period=1, pairs=pairs, attempt_every=attempt_every),
        seed=3,
        independent_init=True,
    )
    s.compile(steps_per_execution=4)  # the state every 4 steps
    for chain, b in zip(s.chains, vals):
        chain.set_weights([np.float32(b)])
    states = []

    class Track(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            states.append(tuple(round(float(c.weights[0].numpy()), 2) for c in s.chains))  # noise: ~1e-3 over the run

    s.fit(
        tf.data.Dataset.from_tensor_slices(x).batch(100).repeat(),
        steps_per_epoch=6000,
        epochs=1,
        verbose=0,
        callbacks=[Track()],
    )
    perms = list(itertools.permutations(vals))
    w = np.array([np.exp(-sum(DELTA_U * b * b / t for b, t in zip(p, temps))) for p in perms])
    w /= w.sum()
    seq = states[1:]  # sigma2 is ready after the first window
    assert set(seq) <= set(perms)
    ind = np.array([[st == p for p in perms] for st in seq], float)  # [T, 6]
    batches = 20
    t = len(ind) - len(ind) % batches
    means = ind[:t].reshape(batches, -1, len(perms)).mean(1)
    est, se = means.mean(0), means.std(0, ddof=1) / np.sqrt(batches)
    assert np.all(np.abs(est - w) <= 4.5 * se + 2e-3), (est, w, se)
