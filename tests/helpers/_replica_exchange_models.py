"""Models, data and samplers shared by the ReplicaExchangeSampler tests (tests/sampler/test_replica_exchange*.py):
a small classifier (with and without BatchNorm), the scalar Gaussian-mixture model and its sampler, and
the two-state energy whose swap law is known exactly."""

import keras
import numpy as np
import tensorflow as tf

import tf_vrre
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


def classification_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 1).astype("int64")
    return x, y


def mixture_sampler(**kw):
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


DELTA_U = 2.4


@keras.saving.register_keras_serializable(package="tests")
def two_state_nll(x, y, y_pred):
    # U(beta) = N * l(beta) = DELTA_U * beta^2 with N = 100 examples: states beta = 0 and 1.
    return tf.reshape(DELTA_U / 100.0 * tf.square(y_pred), [-1]) + 0.0 * tf.reshape(x, [-1])
