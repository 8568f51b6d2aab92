"""ReplicaExchangeSampler: bad constructor arguments, data, compile arguments, setter values and
make_dataset arguments fail with an error naming the argument."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from _replica_exchange_models import (
    N_MIX,
    classification_data,
    mixture_sampler,
    small_classifier,
)

import tf_vrre
from tf_vrre.workflows.gaussian_mixture import target


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
        mixture_sampler(**kwargs)


def test_type_errors():
    with pytest.raises(TypeError, match="model_fn"):
        tf_vrre.ReplicaExchangeSampler(None, data_size=10)
    with pytest.raises(TypeError, match="swap"):
        mixture_sampler(swap=3)
    with pytest.raises(TypeError, match="nll"):
        mixture_sampler(nll=lambda x: x)
    with pytest.raises(TypeError, match="temperatures"):
        mixture_sampler(temperatures=["a", "b"])


def test_model_fn_must_return_built_model():
    with pytest.raises(ValueError, match="built"):
        tf_vrre.ReplicaExchangeSampler(
            lambda: keras.Sequential([keras.layers.Dense(2)]), data_size=10, num_chains=1, nll=target.nll
        )


def test_dataset_structure_errors():
    x, y = classification_data()
    s = tf_vrre.ReplicaExchangeSampler(
        small_classifier, data_size=len(x), num_chains=2, temperatures=[1.0, 2.0], learning_rates=1e-3, seed=0
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match="labels"):
        s.fit(tf.data.Dataset.from_tensor_slices(x).batch(30), epochs=1, verbose=0)
    # VR without reference data
    v = mixture_sampler(swap=tf_vrre.CorrectedSwap(), variance_reduction=tf_vrre.ControlVariates(period=4))
    with pytest.raises(ValueError, match="set_reference_data"):
        v.fit(tf.data.Dataset.from_tensor_slices(target.make_data(N_MIX)).batch(50), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="data_size"):
        v.set_reference_data(target.make_data(N_MIX + 1))
    with pytest.raises(ValueError, match="variance_reduction"):
        mixture_sampler().set_reference_data(target.make_data(N_MIX))


def test_compile_errors():
    s = tf_vrre.ReplicaExchangeSampler(small_classifier, data_size=10, num_chains=1, learning_rates=1e-3)
    with pytest.raises(ValueError, match="loss"):
        s.compile()
    with pytest.raises(TypeError, match="optimizer"):
        s.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="nll"):
        mixture_sampler().compile(loss="mse")


def test_set_temperatures_validates():
    s = mixture_sampler()
    s.set_temperatures([5.0, 50.0])
    np.testing.assert_allclose(s.state.ladder.temperature.numpy(), [5.0, 50.0])
    with pytest.raises(ValueError, match="temperatures"):
        s.set_temperatures([50.0, 5.0])
    with pytest.raises(ValueError, match="learning_rates"):
        s.set_learning_rates([0.0, 1.0])


def test_make_dataset_structure_and_errors():
    x, y = classification_data()
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
