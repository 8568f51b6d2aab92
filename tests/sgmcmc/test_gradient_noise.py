"""The excess temperature of mini-batch gradient noise against its closed form.

Linear regression with the squared error ``l_i = (y_i - w.x_i - b)^2`` has per-example gradients
``-2 r_i [x_i, 1]``, so the variance ``S_j^2`` of each coordinate over the N examples, the variance
``V_j = N^2 S_j^2 (1/n - 1/N)`` of a mini-batch gradient and the excess temperature
``eta mean_j V_j / (2 alpha)`` are exact numbers.  At a learning rate of 1e-9 the weights do not
move within a test, so every measurement estimates the same number: the tolerance is four
standard errors of the measurements' mean (epochs of a reshuffled dataset are independent).
"""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre
from tf_vrre.sampler import batch as batch_module
from tf_vrre.sgmcmc import gradient_noise

N, D_IN = 512, 5


def regression(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, D_IN)).astype("float32")
    y = (x @ rng.normal(size=D_IN) + 0.5 * rng.normal(size=N)).astype("float32")[:, None]
    return x, y


@keras.saving.register_keras_serializable(package="test_gradient_noise")
def linear():
    inp = keras.Input((D_IN,))
    return keras.Model(inp, keras.layers.Dense(1)(inp))


def per_example_variance(model, x, y):
    """``mean_j S_j^2``: the per-example gradient variance over the N examples, in closed form."""
    kernel, bias = (np.asarray(w, np.float64) for w in model.get_weights())
    r = y[:, 0] - (x @ kernel[:, 0] + bias[0])
    grads = -2.0 * r[:, None] * np.concatenate([x, np.ones((len(x), 1))], 1)
    return float(grads.var(0, ddof=1).mean())


def squared_error(x, y, y_pred, sample_weight):
    return tf.reduce_sum(tf.square(tf.cast(y, y_pred.dtype) - y_pred), -1)


@pytest.mark.parametrize("n", [32, 33])  # equal halves, and 16 / 17
def test_half_batch_statistic_is_unbiased_for_the_per_example_variance(n):
    x, y = regression()
    model = linear()
    exact = per_example_variance(model, x, y)

    @tf.function
    def statistic(xb, yb):
        minibatch = batch_module.Batch(xb, yb, None, None, tf.constant(float(n), tf.float64))
        return gradient_noise.half_batch_statistic(model, minibatch, squared_error)

    rng = np.random.default_rng(1)
    q = np.array([statistic(x[i], y[i]).numpy() for i in (rng.choice(N, n, replace=False) for _ in range(800))])
    assert (q[:, 1] == 1).all()
    se = q[:, 0].std(ddof=1) / np.sqrt(len(q))
    assert abs(q[:, 0].mean() - exact) < 4 * se, (q[:, 0].mean(), exact, se)
    one = batch_module.Batch(x[:1], y[:1], None, None, tf.constant(1.0, tf.float64))
    assert gradient_noise.half_batch_statistic(model, one, squared_error).numpy().tolist() == [0.0, 0.0]


def _fit(dynamics, epochs, every=1, batch=32, lr=(1e-9, 3e-9), **kwargs):
    x, y = regression()
    s = tf_vrre.ReplicaExchangeSampler(
        linear,
        data_size=N,
        num_chains=len(lr),
        temperatures=None if dynamics == "msgd" else [1e-3] * len(lr),
        learning_rates=list(lr),
        dynamics=dynamics,
        swap=None,
        seed=0,
        gradient_noise_every=every,
        **kwargs,
    )
    s.compile(loss=keras.losses.MeanSquaredError(reduction=None))
    exact = per_example_variance(s.chains[0], x, y)
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(N, seed=1).batch(batch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = s.fit(data, epochs=epochs, verbose=0)
    return history.history, exact, caught


@pytest.mark.parametrize("dynamics,alpha", [("sgld", 1.0), ("sghmc", 0.1), ("msgd", 0.1)])
def test_logged_excess_temperature_matches_the_closed_form(dynamics, alpha):
    """Two independent chains (the same initial weights, learning rates 1e-9 and 3e-9): each
    chain's ``excess_temperature_h`` estimates ``eta_h N^2 (1/n - 1/N) mean_j S_j^2 / (2 alpha)``."""
    history, exact_s2, _ = _fit(dynamics, epochs=16)
    for h, lr in enumerate((1e-9, 3e-9)):
        logged = np.asarray(history[f"excess_temperature_{h}"])
        exact = lr * N**2 * (1 / 32 - 1 / N) * exact_s2 / (2 * alpha)
        se = logged.std(ddof=1) / np.sqrt(len(logged))
        assert abs(logged.mean() - exact) < 4 * se, (h, logged.mean(), exact, se)
        assert se < 0.1 * exact  # the test resolves the number


def test_full_batches_carry_no_gradient_noise_and_a_sparse_period_leaves_epochs_unmeasured():
    history, _, caught = _fit("sgld", epochs=2, batch=N, lr=(1e-4,))
    assert history["excess_temperature_0"] == [0.0, 0.0]  # 1/n - 1/N = 0
    assert not [w for w in caught if issubclass(w.category, gradient_noise.GradientNoiseWarning)]
    history, _, _ = _fit("sgld", epochs=4, every=32, lr=(1e-4,))  # 16 steps per epoch: steps 32, 64 measure
    ex = history["excess_temperature_0"]
    assert np.isnan(ex[0]) and ex[1] > 0 and np.isnan(ex[2]) and ex[3] > 0
    history, _, _ = _fit("sgld", epochs=1, every=None, lr=(1e-4,))
    assert "excess_temperature_0" not in history


def test_fit_warns_at_the_callers_line_when_the_chain_runs_hot():
    """lr 1e-4 at batch 32 of 512: the excess is hundreds of times tau = 1e-3."""
    history, exact_s2, caught = _fit("sgld", epochs=2, lr=(1e-4,))
    hot = [w for w in caught if issubclass(w.category, gradient_noise.GradientNoiseWarning)]
    assert len(hot) == 1 and hot[0].filename == __file__, [(w.filename, str(w.message)) for w in caught]
    ratio = history["excess_temperature_0"][-1] / 1e-3
    assert f"chain 0 runs at about {1 + ratio:.3g}x its temperature 0.001" in str(hot[0].message)
    assert "history key excess_temperature_0" in str(hot[0].message)


def test_measuring_changes_nothing_in_the_step():
    """BatchNorm statistics, dropout draws, swaps and the control variates: a run that measures
    on every step ends with every variable bit-identical to one that never measures."""

    def run(every):
        x, y = regression()
        x, labels = x[:128], (y[:128, 0] > 0).astype("int64")
        s = tf_vrre.ReplicaExchangeSampler(
            _bn_dropout_net,
            data_size=len(x),
            num_chains=2,
            temperatures=[0.01, 0.05],
            learning_rates=[1e-4, 2e-4],
            weight_decay=1.0,
            seed=3,
            swap=tf_vrre.CorrectedSwap(correction=2.0),
            variance_reduction=tf_vrre.ControlVariates(period=4),
            gradient_noise_every=every,
        )
        s.set_reference_data((x, labels))
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gradient_noise.GradientNoiseWarning)
            history = s.fit(s.make_dataset(32), epochs=2, verbose=0).history
        return [np.asarray(v.numpy()) for v in s.weights], history

    plain, _ = run(None)
    measured, history = run(1)
    assert len(plain) == len(measured) > 20
    for a, b in zip(plain, measured):
        np.testing.assert_array_equal(a, b)
    assert history["swaps"][-1] > 0 and all(v > 0 for v in history["excess_temperature_1"])


@keras.saving.register_keras_serializable(package="test_gradient_noise")
def _bn_dropout_net():
    inp = keras.Input((D_IN,))
    h = keras.layers.BatchNormalization()(keras.layers.Dense(8)(inp))
    h = keras.layers.Dropout(0.3)(keras.layers.Activation("relu")(h))
    return keras.Model(inp, keras.layers.Dense(2)(h))


def test_gradient_noise_every_is_checked_and_round_trips():
    with pytest.raises(ValueError, match=r"gradient_noise_every must be an integer >= 1 \(steps\) or None"):
        tf_vrre.ReplicaExchangeSampler(linear, data_size=N, num_chains=1, gradient_noise_every=0)
    s = tf_vrre.ReplicaExchangeSampler(linear, data_size=N, num_chains=1, gradient_noise_every=7)
    config = s.get_config()
    assert config["gradient_noise_every"] == 7
    again = tf_vrre.ReplicaExchangeSampler.from_config(config)
    assert again.gradient_noise_every == 7 and again.get_config() == config
    old = {k: v for k, v in config.items() if k != "gradient_noise_every"}  # a config saved before it existed
    assert tf_vrre.ReplicaExchangeSampler.from_config(old).gradient_noise_every == gradient_noise.PERIOD
    assert "gradient_noise_every" not in s._config()  # not part of a run's identity: the samples do not change
