"""Run in a fresh process: the sampler's own checks of what cannot run under a strategy of 2
replicas (one CPU split into 2 logical devices before TensorFlow starts).

``_execution_check.py``: for both placements, ``compile(steps_per_execution=2)``,
``compile(jit_compile=True)``, ``compile()`` with ``$TF_VRRE_JIT_COMPILE=1`` and ``fit`` on a
dataset of single examples; a ``model_fn`` with ``BatchNormalization(synchronized=True)`` under
``placement="chain_per_replica"`` (the allowed options train in ``tests/sampler/test_placement.py``).
Prints one JSON line: per case the error's class and message (``None`` if it ran), the steps
taken and the calls of ``model_fn``.
"""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras
import numpy as np

import tf_vrre

N = 32
CALLS = [0]


def net(synchronized=False):
    CALLS[0] += 1
    inp = keras.Input((4,))
    h = keras.layers.Dense(3)(inp)
    if synchronized:
        h = keras.layers.BatchNormalization(synchronized=True, name="bn_sync")(h)
    return keras.Model(inp, h)


def sync_net():
    return net(synchronized=True)


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 4)).astype("float32")
    return x, (x[:, 0] > 0).astype("int64")


def case(placement, model_fn=net, compile_kwargs=None, batched=True, env=None):
    """Builds, compiles and fits one sampler under the strategy; what happened."""
    CALLS[0] = 0
    old = os.environ.get("TF_VRRE_JIT_COMPILE")
    if env is not None:
        os.environ["TF_VRRE_JIT_COMPILE"] = env
    s = None
    try:
        with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
            s = tf_vrre.ReplicaExchangeSampler(
                model_fn,
                data_size=N,
                num_chains=2,
                temperatures=[1.0, 2.0],
                learning_rates=1e-3,
                seed=1,
                placement=placement,
            )
            s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), **(compile_kwargs or {}))
        ds = tf.data.Dataset.from_tensor_slices(data())
        s.fit(ds.batch(8) if batched else ds, epochs=1, verbose=0)
        error = None
    except Exception as err:  # noqa: BLE001  (the case reports any error)
        error = [type(err).__name__, str(err), isinstance(err, tf_vrre.TfVrreError)]
    finally:
        if old is None:
            os.environ.pop("TF_VRRE_JIT_COMPILE", None)
        else:
            os.environ["TF_VRRE_JIT_COMPILE"] = old
    steps = None if s is None else int(s.state.step.numpy())
    return {"error": error, "steps": steps, "calls": CALLS[0]}


report = {}
for placement in ("chain_per_replica", "replicated"):
    report[f"{placement}/steps_per_execution"] = case(placement, compile_kwargs={"steps_per_execution": 2})
    report[f"{placement}/jit_compile"] = case(placement, compile_kwargs={"jit_compile": True})
    report[f"{placement}/environment"] = case(placement, env="1")
    report[f"{placement}/unbatched"] = case(placement, batched=False)
report["chain_per_replica/synchronized"] = case("chain_per_replica", model_fn=sync_net)
print(json.dumps(report))
