"""Batches with ``"energy_inputs"``: gradients on augmented inputs, swap energies on the clean view."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre

N, BATCH = 96, 32


@keras.saving.register_keras_serializable(package="test_energy_inputs")
def net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(3)(keras.layers.Dense(6, activation="tanh")(inp)))


@keras.saving.register_keras_serializable(package="test_energy_inputs")
def bn_net():
    inp = keras.Input((4,))
    h = keras.layers.BatchNormalization()(keras.layers.Dense(6)(inp))
    return keras.Model(inp, keras.layers.Dense(3)(h))


def _data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64")
    return x, y


def _augmented(x, y, seed):
    """Fixed batches: x + noise for the gradient, x for the energies (as an augmentation pipeline)."""
    rng = np.random.default_rng(seed)
    xa = (x + 0.5 * rng.normal(size=x.shape)).astype("float32")
    idx = np.arange(N)
    return tf.data.Dataset.from_tensor_slices((xa, y, {"example_index": idx, "energy_inputs": x})).batch(BATCH)


def _sampler(model_fn=net, mode="auto", cache=True):
    s = tf_vrre.ReplicaExchangeSampler(
        model_fn,
        data_size=N,
        num_chains=2,
        temperatures=[0.5, 2.0],
        learning_rates=1e-3,
        seed=2,
        energy_mode=mode,
        swap=tf_vrre.CorrectedSwap(correction=4.0),
        variance_reduction=tf_vrre.ControlVariates(period=3, cache=cache),
    )
    s.set_reference_data(_data())
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return s


def _nll(model, x, y):
    logits = model(x, training=False)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)(y, logits).numpy()


class _Capture(keras.callbacks.Callback):
    """Copies chain and snapshot weights before each step (to recompute the step's energies)."""

    def __init__(self):
        super().__init__()
        self.before = []

    def on_train_batch_begin(self, batch, logs=None):
        s = self.model
        self.before.append(
            (
                [c.get_weights() for c in s.chains],
                [m.get_weights() for m in s.snapshots],
                s.state.control_variates.snapshot_energy.numpy().copy(),
                int(s.state.step.numpy()),
            )
        )


@pytest.mark.parametrize("cache", [True, False])
def test_swap_energy_is_the_clean_view_control_variate(cache):
    """At a step without refresh, ``last_energy`` equals the VR energy computed by hand on the
    un-augmented batch: (N/n) sum_B [l(beta) - l(beta_hat)] + U_hat (c = -1, no prior)."""
    x, y = _data()
    s = _sampler(cache=cache)
    cap = _Capture()
    s.fit(_augmented(x, y, 0), epochs=1, verbose=0, callbacks=[cap])  # steps 0, 1, 2; refresh at 0
    s.fit(_augmented(x, y, 0).take(2), epochs=1, verbose=0, callbacks=[cap])  # steps 3 (refresh), 4
    chains_w, snaps_w, u_hat, step = cap.before[-1]
    assert step == 4
    xb, yb = x[BATCH : 2 * BATCH], y[BATCH : 2 * BATCH]
    model = net()
    want = []
    for h in range(2):
        model.set_weights(chains_w[h])
        cur = _nll(model, xb, yb)
        model.set_weights(snaps_w[h])
        snap = _nll(model, xb, yb)
        want.append(N / BATCH * (cur.astype(np.float64) - snap).sum() + u_hat[h])
    row = s.state.swap.log.numpy()[4]  # step 4's record: energy_lo, energy_hi in columns 5, 6
    assert row[0] == 4
    np.testing.assert_allclose(row[5:7], want, rtol=1e-5)


def test_augmented_energies_without_energy_inputs_differ():
    """Control: without the clean view the energies are those of the augmented batch."""
    x, y = _data()
    runs = []
    for with_clean in (True, False):
        s = _sampler()
        ds = _augmented(x, y, 0)
        if not with_clean:
            ds = ds.map(lambda a, b, c: (a, b, {"example_index": c["example_index"]}))
        s.fit(ds, epochs=2, verbose=0)
        runs.append(s.state.swap.log.numpy()[:6, 5:7])
    assert np.abs(runs[0][1:] - runs[1][1:]).max() > 1e-3


def test_train_mode_with_batchnorm_and_energy_inputs_is_refused():
    x, y = _data()
    s = _sampler(bn_net, mode="train")
    with pytest.raises(ValueError, match="energy_inputs.*inference"):
        s.fit(_augmented(x, y, 0), epochs=1, verbose=0)
