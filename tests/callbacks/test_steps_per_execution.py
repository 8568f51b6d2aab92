"""Callbacks under ``steps_per_execution`` that does not divide an epoch's steps.

Keras then shortens the last ``train_function`` call of every epoch, so the step counter the
callbacks see drifts off the multiples of ``steps_per_execution``.  The sampler's trajectory
does not depend on ``steps_per_execution``; the callbacks must not lose what they record.
"""

import csv
import os

import keras
import numpy as np
from _small_sampler import make_sampler

from tf_vrre.callbacks import HyperparameterScheduler, SampleCollector, SwapLogger
from tf_vrre.runs.samples import load_samples

EPOCHS, BATCH = 4, 24  # N = 64: 3 steps per epoch (24, 24, 16)


class BlockEnds(keras.callbacks.Callback):
    """Step counter and cold-chain weights at every callback (the end of each executed block)."""

    def __init__(self):
        super().__init__()
        self.weights = {}

    def on_train_batch_end(self, batch, logs=None):
        self.weights[int(self.model.state.step.numpy())] = self.model.cold_model.get_weights()


def _run(tmp_path, spe):
    s, x, y = make_sampler(vr=False, temperatures=(0.05, 0.5), correction=50.0)
    s.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None), steps_per_execution=spe
    )
    out = str(tmp_path / f"spe{spe}")
    probe = BlockEnds()
    sched = HyperparameterScheduler(temperatures=lambda e: [0.05 / (1 + e), 0.5 / (1 + e)])
    callbacks = [
        sched,
        probe,
        SwapLogger(os.path.join(out, "swaps")),
        SampleCollector(os.path.join(out, "samples"), every=2),
    ]
    s.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=callbacks)
    with open(os.path.join(out, "swaps", "swaps.csv")) as f:
        swaps = list(csv.DictReader(f))
    return s, probe, load_samples(os.path.join(out, "samples")), swaps


def test_no_sample_is_lost_when_steps_per_execution_does_not_divide_the_epoch(tmp_path):
    ref, ref_probe, ref_samples, ref_swaps = _run(tmp_path, 1)
    s, probe, samples, swaps = _run(tmp_path, 2)
    assert sorted(probe.weights) == [2, 3, 5, 6, 8, 9, 11, 12]  # the blocks Keras executes
    assert ref_samples.steps == [2, 4, 6, 8, 10, 12]
    # Due steps 4 and 10 lie inside the blocks ending at 5 and 11: sampled there, labelled so
    # (the old collector kept only [2, 6, 8, 12]).
    assert samples.steps == [2, 5, 6, 8, 11, 12]
    for i, step in enumerate(samples.steps):
        for got, block_end, same_step in zip(samples.weights(i), probe.weights[step], ref_probe.weights[step]):
            np.testing.assert_array_equal(got, block_end)  # the weights of that step
            np.testing.assert_allclose(got, same_step, rtol=1e-5, atol=1e-6)  # the same chain as spe=1
    # SwapLogger drains every step of every block; the scheduler acts at the same epoch starts.
    assert [r["step"] for r in swaps] == [r["step"] for r in ref_swaps] and len(swaps) > 0
    assert [r["accepted"] for r in swaps] == [r["accepted"] for r in ref_swaps]
    assert [r["temperature_lo"] for r in swaps] == [r["temperature_lo"] for r in ref_swaps]
    np.testing.assert_allclose(s.state.ladder.temperature.numpy(), [0.05 / EPOCHS, 0.5 / EPOCHS], rtol=1e-6)
    for a, b in zip(s.cold_model.get_weights(), ref.cold_model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_due_steps_of_a_block():
    col = SampleCollector("unused", every=4, burn_in_steps=4)
    assert col.due_in_block(0, 4) == []  # burn-in
    assert col.due_in_block(4, 7) == []
    assert col.due_in_block(7, 9) == [8]
    assert col.due_in_block(8, 12) == [12]
    assert col.due_in_block(12, 12) == []
