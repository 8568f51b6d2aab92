"""What cannot run under a strategy of several replicas is refused by the sampler itself, in one
line naming the argument, before the first step (it used to crash there with raw graph errors:
"You must feed a value for placeholder tensor", an XLA error, a Keras error deep in ``fit``, or a
synchronized BatchNormalization found after every chain was built).

The two-replica cases run in a subprocess (``tests/helpers/_execution_check.py``): the logical
devices must be configured before TensorFlow initialises."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from _paths import HELPERS, ROOT

import tf_vrre

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HELPERS, os.environ.get("PYTHONPATH", "")]))


@pytest.fixture(scope="module")
def cases():
    out = subprocess.run(
        [sys.executable, os.path.join(HELPERS, "_execution_check.py")],
        check=False,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def refused(r, kind, *parts):
    """``r`` was refused before any step with one line of class ``kind`` holding ``parts``."""
    assert r["error"] is not None, r
    name, message, own = r["error"]
    assert name == kind and own, r
    assert "\n" not in message, message
    for part in parts:
        assert part in message, (part, message)
    assert r["steps"] in (None, 0), r


@pytest.mark.parametrize("placement", ["chain_per_replica", "replicated"])
def test_options_that_cannot_run_are_refused_at_compile(cases, placement):
    refused(
        cases[f"{placement}/steps_per_execution"],
        "ExecutionError",
        "compile: steps_per_execution=2 cannot run under MirroredStrategy with 2 replicas",
        "allowed here: steps_per_execution=1",
    )
    refused(
        cases[f"{placement}/jit_compile"],
        "ExecutionError",
        "compile: jit_compile=True cannot run under MirroredStrategy with 2 replicas on CPU devices",
        "allowed here: jit_compile=False or 'auto'",
    )
    refused(
        cases[f"{placement}/environment"],
        "ExecutionError",
        "jit_compile=True (from jit_compile=None: $TF_VRRE_JIT_COMPILE)",
        "allowed here: jit_compile=False or 'auto'",
    )


@pytest.mark.parametrize("placement", ["chain_per_replica", "replicated"])
def test_a_dataset_of_single_examples_is_refused_before_the_first_step(cases, placement):
    r = cases[f"{placement}/unbatched"]
    assert r["error"] is not None and r["error"][0] == "ValueError", r
    assert r["error"][1] == (
        "fit: x is a tf.data.Dataset of single examples (an element of shape (4,), the model's input takes "
        "batches of shape (n, 4)); batch it: dataset.batch(n)"
    )
    assert r["steps"] == 0, r


def test_synchronized_batch_norm_is_refused_at_the_first_model(cases):
    """Found in the first model ``model_fn`` returns: no other chain, snapshot or replica copy is
    built first."""
    r = cases["chain_per_replica/synchronized"]
    refused(r, "PlacementError", "BatchNormalization(synchronized=True) ('bn_sync')", "across chains")
    assert r["calls"] == 1, r


def test_one_replica_runs_every_option():
    """Without a strategy (one replica) nothing is refused: XLA and several steps per call run."""
    from tf_vrre.sampler import execution

    class TwoCpuReplicas:
        num_replicas_in_sync = 2

    execution.check(tf.distribute.get_strategy(), True, 8)
    with pytest.raises(ValueError, match=r"steps_per_execution must be an integer >= 1, got 0"):
        execution.check(tf.distribute.get_strategy(), False, 0)
    if not tf.config.list_logical_devices("GPU"):
        with pytest.raises(execution.ExecutionError, match="jit_compile=True") as err:
            execution.check(TwoCpuReplicas(), True, 1)
        assert (err.value.argument, err.value.value, err.value.source) == ("jit_compile", True, None)
    execution.check(TwoCpuReplicas(), "auto", 1)


def test_a_dataset_of_single_examples_is_refused_on_one_device():
    def net():
        inp = keras.Input((4,))
        return keras.Model(inp, keras.layers.Dense(2)(inp))

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(16, 4)).astype("float32"), rng.integers(0, 2, 16)
    s = tf_vrre.ReplicaExchangeSampler(net, data_size=16, num_chains=1, learning_rates=1e-3, seed=0)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    single = tf.data.Dataset.from_tensor_slices((x, y))
    with pytest.raises(ValueError, match=r"fit: x is a tf.data.Dataset of single examples .*dataset.batch\(n\)$"):
        s.fit(single, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"fit: validation_data is a tf.data.Dataset of single examples"):
        s.fit(single.batch(8), validation_data=single, epochs=1, verbose=0)
    assert int(s.state.step.numpy()) == 0
    s.fit(single.batch(8), epochs=1, verbose=0)  # batched: trains
    assert int(s.state.step.numpy()) == 2
