"""A small classifier and its sampler shared by the callback, collector, saving and export tests."""

import csv

import keras
import numpy as np

from tf_vrre import ControlVariates, CorrectedSwap, ReplicaExchangeSampler

N = 64


@keras.saving.register_keras_serializable(package="test_callbacks")
def small_net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(3)(inp))


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, 4)).astype("float32")
    y = (x[:, 0] + 0.5 * rng.normal(size=N) > 0).astype("int32") + (x[:, 1] > 1).astype("int32")
    return x, y


def make_sampler(
    vr=True, seed=0, correction=2.0, temperatures=(1.0, 4.0), lr=2e-3, period=4, target_acceptance=None, pairs="random"
):
    s = ReplicaExchangeSampler(
        small_net,
        data_size=N,
        num_chains=len(temperatures),
        temperatures=list(temperatures),
        learning_rates=lr,
        seed=seed,
        swap=CorrectedSwap(correction=correction, target_acceptance=target_acceptance, pairs=pairs),
        variance_reduction=ControlVariates(period=period) if vr else None,
    )
    x, y = data()
    if vr:
        s.set_reference_data((x, y))
    else:
        s._reference = None
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None), metrics=["accuracy"])
    return s, x, y


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Interrupt(keras.callbacks.Callback):
    """Raises KeyboardInterrupt after the step ``at_step`` (a simulated kill)."""

    def __init__(self, at_step):
        super().__init__()
        self.at_step = at_step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.state.step.numpy()) == self.at_step:
            raise KeyboardInterrupt("simulated kill")


class Subclassed(keras.Model):  # not registered: its JSON cannot be loaded back
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(3)

    def call(self, inputs):
        return self.dense(inputs)


def _subclassed_net():
    net = Subclassed()
    net(np.zeros((1, 4), "float32"))  # builds the weights
    return net
