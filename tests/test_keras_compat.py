"""The private Keras APIs of :mod:`tf_vrre._keras_compat` exist in the installed Keras and behave
as the sampler assumes (run by both the main job and the minimum-versions job)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from _small_sampler import make_sampler

import tf_vrre
from tf_vrre import _keras_compat


def _net():
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Dense(2)(keras.layers.BatchNormalization()(inputs)))


def test_every_private_api_exists():
    assert _keras_compat.missing() == []


def test_keras_within_the_checked_range():
    """A newer Keras tried by hand (``pip install --no-deps keras==X``, docs/getting-started.md)
    fails only here when the other tests pass: add its version to the checked range."""
    major, minor = (int(v) for v in keras.__version__.split(".")[:2])
    lo, hi = (tuple(int(v) for v in s.split(".")) for s in _keras_compat.KERAS_CHECKED)
    assert lo <= (major, minor) <= hi, (
        f"keras {keras.__version__} outside the checked range {_keras_compat.KERAS_CHECKED}"
    )


def test_wrappers_read_what_keras_uses():
    net = _net()
    assert [type(layer).__name__ for layer in _keras_compat.flatten_layers(net)][-2:] == ["BatchNormalization", "Dense"]
    bn = net.layers[1]
    assert [v.name for v in _keras_compat.own_variables(bn)] == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert _keras_compat.input_signature(net)[0].shape == (None, 3)
    net.compile(loss="mse", metrics=["mae"])
    x, y = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(8, 3), np.ones((8, 2), "float32")
    logs = net.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)  # the trackers behind its logs:
    assert float(_keras_compat.loss_tracker(net).result()) == pytest.approx(logs["loss"], rel=1e-6)
    assert float(_keras_compat.compiled_metrics(net).result()["mae"]) == pytest.approx(logs["mae"], rel=1e-6)
    assert _keras_compat.has_distribute_strategy(net) is False
    extra = _keras_compat.compile_metrics(["mae"], None, "extra")
    _keras_compat.tracked_metrics(net).append(extra)
    assert extra in net.metrics or extra in _keras_compat.tracked_metrics(net)
    _keras_compat.tracked_metrics(net).remove(extra)


def test_initial_epoch_is_what_fit_starts_from():
    s, x, y = make_sampler(vr=False)
    _keras_compat.set_initial_epoch(s, 2)
    hist = s.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert len(hist.history["loss"]) == 1  # epoch 2 only
    _keras_compat.set_initial_epoch(s, None)
    assert _keras_compat.initial_epoch(s) is None


def test_first_batch_iterator_takes_the_last_item():
    it = iter(tf.data.Dataset.range(3))
    assert _keras_compat.first_batch_iterator([(0, it)]) is it  # Keras 3.9-3.10
    assert _keras_compat.first_batch_iterator([(0, 1, it)]) is it  # Keras 3.11+
    assert _keras_compat.first_batch_iterator([]) is None
    assert tf_vrre.ReplicaExchangeSampler._maybe_symbolic_build is not keras.Model._maybe_symbolic_build


def test_fit_under_a_strategy_builds_from_the_first_batch(monkeypatch):
    """The sampler's ``_maybe_symbolic_build`` override runs under a strategy and reads the epoch
    iterator of the installed Keras (2- or 3-tuples)."""
    built = []
    build = _keras_compat.symbolic_build
    monkeypatch.setattr(
        _keras_compat, "symbolic_build", lambda model, batch: built.append(batch) or build(model, batch)
    )
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        s, x, y = make_sampler(vr=False)
    assert _keras_compat.has_distribute_strategy(s)
    s.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    assert len(built) == 1 and built[0][0].shape[0] == 16
    assert int(s.state.step.numpy()) == -(-len(x) // 16)
