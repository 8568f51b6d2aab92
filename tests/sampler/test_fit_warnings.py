"""``fit`` on the sampler's own dataset warns nothing a user would see.

The warnings are recorded with every filter reset (``simplefilter("always")``), so neither the
test settings nor an earlier test can hide one; the control case shows the recorder sees Keras'
"``shuffle=True`` was passed" warning where Keras gives it."""

import warnings

import _doctest_namespace
import keras
import pytest
import tensorflow as tf

from tf_vrre.sampler import datasets

SHUFFLE = "`shuffle=True` was passed"


def _fit_warnings(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught]


def test_keras_warns_for_a_dataset_with_the_default_shuffle():
    """The control: a plain Keras model fitted on a dataset (the recorder sees the warning)."""
    x, y = _doctest_namespace.x, _doctest_namespace.y
    model = keras.Sequential([keras.Input((x.shape[1],)), keras.layers.Dense(3)])
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    found = _fit_warnings(lambda: model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(16), epochs=1, verbose=0))
    assert any(SHUFFLE in m for m in found), found


def test_make_dataset_fits_without_the_shuffle_warning():
    sampler = _doctest_namespace.toy_sampler()
    found = _fit_warnings(lambda: sampler.fit(sampler.make_dataset(16), epochs=1, verbose=0))
    assert not any(SHUFFLE in m for m in found), found


@pytest.mark.parametrize("shuffle", [True, False])
def test_an_explicit_shuffle_is_passed_on(shuffle):
    """``shuffle`` given by the caller is Keras' to judge (``True`` on a dataset still warns)."""
    sampler = _doctest_namespace.toy_sampler()
    found = _fit_warnings(lambda: sampler.fit(sampler.make_dataset(16), epochs=1, verbose=0, shuffle=shuffle))
    assert any(SHUFFLE in m for m in found) == shuffle, found


def test_carries_order():
    sampler = _doctest_namespace.toy_sampler()
    assert datasets.carries_order(sampler.make_dataset(16))
    assert not datasets.carries_order(_doctest_namespace.x)
