"""Mixed precision: the network computes in bfloat16 / float16; weights, noise, energies, sigma2
and the swap decision stay in float32 / float64; float16 gets a dynamic loss scale."""

import contextlib

import keras
import numpy as np
import pytest

import tf_vrre

N = 96


@contextlib.contextmanager
def policy(name):
    old = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(old)


@keras.saving.register_keras_serializable(package="test_mixed_precision")
def net():
    inp = keras.Input((4,))
    h = keras.layers.Dense(16, activation="tanh")(inp)
    return keras.Model(inp, keras.layers.Dense(3)(h))


def _data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(N, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64")
    return x, y


def _run(name, **kw):
    with policy(name):
        s = tf_vrre.ReplicaExchangeSampler(
            net,
            data_size=N,
            num_chains=2,
            seed=4,
            variance_reduction=tf_vrre.ControlVariates(period=3),
            **{"temperatures": [0.01, 0.02], "learning_rates": 2e-3, **kw},
        )
        s.set_reference_data(_data())
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        x, y = _data()
        s.fit(x, y, batch_size=32, epochs=10, verbose=0, shuffle=False)
    return s


def test_bfloat16_computes_low_and_decides_in_float64():
    s = _run("mixed_bfloat16")
    dense = s.cold_model.layers[1]
    assert dense.compute_dtype == "bfloat16" and dense.kernel.dtype == "float32"
    assert all(v.dtype == "float32" for c in s.chains for v in c.weights)
    swap = s.state.swap
    assert swap.last_energy.dtype == "float64" and swap.sigma2.dtype == "float64" and swap.log.dtype == "float64"
    assert s.state.loss_scale is None
    assert np.isfinite(s.state.swap.last_energy.numpy()).all() and s.state.swap.attempt_count.numpy().sum() > 0


def test_bfloat16_swap_decisions_agree_with_float32_where_energy_gaps_are_large():
    """Temperatures 0.01 / 0.02 (delta = 50): log S is either >= 0 (accepted whatever u) or far
    below 0 on the attempts, so bfloat16 rounding of the energies cannot flip a decision; the
    runs are compared up to the first attempt where it could.  Chains start from different
    weights (with tied starts the two states are within ~0.03 nats at the first refreshes)."""
    logs = {}
    for name in ("float32", "mixed_bfloat16"):
        log = _run(name, independent_init=True).state.swap.log.numpy()
        logs[name] = log[log[:, 0] >= 0]
    f32, bf16 = logs["float32"], logs["mixed_bfloat16"]
    log_s = f32[:, 7]
    certain = (f32[:, 3] == 0) | (log_s >= 0) | (log_s < -5)
    upto = int(np.argmin(certain)) if not certain.all() else len(certain)
    assert upto >= 20, (upto, log_s)
    np.testing.assert_array_equal(f32[:upto, [3, 4]], bf16[:upto, [3, 4]])  # proposed, accepted
    attempted = f32[:upto, 3] > 0
    assert f32[:upto, 4].sum() >= 1 and (f32[:upto][attempted, 4] == 0).sum() >= 1  # both outcomes occur
    np.testing.assert_allclose(bf16[:upto][attempted, 5], f32[:upto][attempted, 5], rtol=0.05)


def test_float16_loss_scale_backs_off_on_overflow_and_the_chain_moves():
    with policy("mixed_float16"):
        s = tf_vrre.ReplicaExchangeSampler(
            net, data_size=N, num_chains=2, temperatures=[0.01, 0.02], learning_rates=2e-3, seed=4
        )
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        assert s.state.loss_scale is not None and s.state.loss_scale.scale.numpy() == pytest.approx(2.0**15 / N)
        s.state.loss_scale.scale.assign(1e12)  # float16 gradients overflow at this scale
        before = s.cold_model.get_weights()
        x, y = _data()
        s.fit(x, y, batch_size=32, epochs=10, verbose=0, shuffle=False)  # no DivergenceError
    scale = float(s.state.loss_scale.scale.numpy())
    assert scale < 1e12 / 2**10, scale  # halved at least 10 times ...
    after = s.cold_model.get_weights()
    assert all(np.isfinite(w).all() for w in after)
    assert any(np.abs(a - b).max() > 0 for a, b in zip(after, before))  # ... then the chain moved
