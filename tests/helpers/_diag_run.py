"""A small real run directory (RUN/swaps, RUN/samples with stored predictives) for the
diagnostics, CLI and ArviZ tests: a 3-chain DEO ladder on a toy classifier."""

import os

import keras
import numpy as np

import tf_vrre


def data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + 0.5 * x[:, 1] > 0).astype("int64")


@keras.saving.register_keras_serializable(package="tests.diag")
def net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(2)(keras.layers.Dense(8, activation="tanh")(inp)))


def make_run(run, seed=0, epochs=12, num_chains=3):
    """Trains 12 epochs of 8 steps with a SwapLogger and a SampleCollector; returns ``run``."""
    x, y = data()
    s = tf_vrre.ReplicaExchangeSampler(
        net,
        data_size=len(x),
        num_chains=num_chains,
        temperatures=list(np.geomspace(1.0, 4.0, num_chains)),
        learning_rates=1e-3,
        weight_decay=1.0,
        swap=tf_vrre.CorrectedSwap(pairs="deo", period=4),
        variance_reduction=tf_vrre.ControlVariates(period=4),
        seed=seed,
    )
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=4)
    callbacks = [
        tf_vrre.SwapLogger(os.path.join(run, "swaps")),
        tf_vrre.SampleCollector(
            os.path.join(run, "samples"), every=4, burn_in_steps=8, validation_data=(x[:16], y[:16])
        ),
    ]
    s.fit(s.make_dataset(32), epochs=epochs, verbose=0, callbacks=callbacks)
    return run
