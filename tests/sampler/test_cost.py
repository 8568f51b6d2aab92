"""The cost of a run in the logs: ``history["gradient_evaluations"]`` is ``K`` times the examples of
the steps taken plus ``K N`` per refresh of the control variates, for every batch layout."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre
from tf_vrre.sampler import cost

N, K, M = 100, 2, 3


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 4)).astype("float32")
    return x, (x[:, 0] > 0).astype("int64")


def _net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(2)(inp))


def _sampler(vr=True, chains=K):
    x, y = _data()
    s = tf_vrre.ReplicaExchangeSampler(
        _net,
        data_size=N,
        num_chains=chains,
        temperatures=[1.0, 2.0][:chains] if chains > 1 else 1.0,
        learning_rates=1e-3,
        seed=0,
        swap=None if chains == 1 else "auto",
        variance_reduction=tf_vrre.ControlVariates(period=M) if vr else None,
    )
    if vr:
        s.set_reference_data((x, y))
    s.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=2, jit_compile=False
    )
    return s


def _brute(batch_sizes, chains, period):
    """The rule, summed step by step: chains x (examples so far + N per refresh at steps 0, m, 2m, ...)."""
    steps = np.arange(1, len(batch_sizes) + 1)
    refreshes = 0 if period is None else np.ceil(steps / period)
    return chains * (np.cumsum(batch_sizes) + N * refreshes)


def test_arrays_with_a_smaller_last_batch_then_make_dataset_streams():
    x, y = _data()
    s = _sampler()
    hist = s.fit(x, y, batch_size=16, epochs=3, verbose=0).history["gradient_evaluations"]
    sizes = [16] * 6 + [4]  # 100 = 6 x 16 + 4, each epoch
    want = _brute(sizes * 3, K, M)
    assert hist == [want[6], want[13], want[20]]
    # make_dataset without drop_remainder: passes of N with a smaller last batch, counted from step 21
    hist = s.fit(s.make_dataset(16), epochs=2, verbose=0).history["gradient_evaluations"]
    want = _brute(sizes * 5, K, M)
    assert hist == [want[27], want[34]]
    assert int(s.state.step.numpy()) == 35


@pytest.mark.parametrize("vr", [False, True])
def test_whole_batches_of_a_dataset(vr):
    x, y = _data()
    s = _sampler(vr=vr)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(10, drop_remainder=True)
    hist = s.fit(ds, steps_per_epoch=8, epochs=2, verbose=0).history["gradient_evaluations"]
    want = _brute([10] * 16, K, M if vr else None)
    assert hist == [want[7], want[15]]
    assert hist[-1] == cost.gradient_evaluations(16, K, 10, N, M if vr else None)


def test_one_chain():
    x, y = _data()
    s = _sampler(vr=False, chains=1)
    hist = s.fit(x, y, batch_size=25, epochs=2, verbose=0).history["gradient_evaluations"]
    assert hist == [100.0, 200.0]


def test_host_rule_matches_step_by_step_sums():
    sizes = [64] * 22 + [1437 - 22 * 64]  # passes of 1,437 examples in batches of 64
    for steps in (1, 22, 23, 24, 69, 70):
        seen = sum((sizes * 4)[:steps])
        assert cost.examples(steps, cost.BatchLayout(64, 1437)) == seen
        assert cost.gradient_evaluations(steps, 3, 64, 1437, 44, pass_size=1437) == 3 * (seen + 1437 * -(-steps // 44))
    assert cost.steps_within(cost.gradient_evaluations(70, 3, 64, 1437, 44), 3, 64, 1437, 44) == 70


def test_layout_of_fit_arguments():
    x, _ = _data()
    assert cost.layout_of({"x": x, "batch_size": 20}) == cost.BatchLayout(20)
    assert cost.layout_of({"x": x, "batch_size": None}) == cost.BatchLayout(32, 100)
    assert cost.layout_of({"x": x, "batch_size": 10, "validation_split": 0.25}) == cost.BatchLayout(10, 75)
    assert cost.layout_of({"x": tf.data.Dataset.from_tensor_slices(x).batch(7)}) == cost.BatchLayout()
    assert cost.layout_of(
        {"x": tf.data.Dataset.from_tensor_slices(x).batch(7, drop_remainder=True)}
    ) == cost.BatchLayout(7)
