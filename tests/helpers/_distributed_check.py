"""Run in a fresh process: one CPU split into 2 logical devices (must happen before any TF op).

Trains the same sampler on one device and under MirroredStrategy over 2 logical CPUs and
prints a JSON report: max |difference| between the trajectories and the max difference
between mirrored copies of every variable (must be exactly 0).  ``_distributed_check.py noise``:
under the strategy (each replica measures the gradient noise on its half of every batch), the
logged excess temperature of a linear regression and its closed form.
"""

import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import _bn_net
import keras
import numpy as np

import tf_vrre

N = 160


def data():
    return _bn_net.data(N)


def train(strategy, indexed):
    x, y = data()
    with strategy.scope():
        s = tf_vrre.ReplicaExchangeSampler(
            _bn_net.build,
            data_size=N,
            num_chains=2,
            temperatures=[0.05, 0.5],
            learning_rates=[2e-3, 3e-3],
            dynamics="sghmc",
            weight_decay=1.0,
            seed=4,
            swap=tf_vrre.CorrectedSwap(correction=2.0, period=3),
            variance_reduction=tf_vrre.ControlVariates(period=3, batch_size=48),
        )
        s.set_reference_data((x, y))
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    # indexed: batches carry example indices, snapshot NLLs come from the all-reduced cache
    ds = s.make_dataset(40, shuffle=False) if indexed else tf.data.Dataset.from_tensor_slices((x, y)).batch(40)
    out = tempfile.mkdtemp()
    callbacks = [
        tf_vrre.SwapLogger(os.path.join(out, "swaps")),
        tf_vrre.SampleCollector(os.path.join(out, "samples"), every=2, validation_data=(x, y)),
    ]
    hist = s.fit(ds, epochs=int(sys.argv[1]) if len(sys.argv) > 1 else 4, verbose=0, callbacks=callbacks)
    s.log_dir = out
    return s, hist.history


def callback_outputs(s):
    """Swap records, sample steps and sample weights written under the strategy."""
    with open(os.path.join(s.log_dir, "swaps", "swaps.csv")) as f:
        rows = f.read().strip().splitlines()[1:]
    samples = tf_vrre.load_samples(os.path.join(s.log_dir, "samples"))
    return rows, samples.steps, [w for ws in samples for w in ws]


def values(s):
    return [np.asarray(keras.ops.convert_to_numpy(v)) for v in s.weights]


def compare(indexed):
    single, h1 = train(tf.distribute.OneDeviceStrategy("/cpu:0"), indexed)
    mirrored, h2 = train(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), indexed)
    copy_diff = 0.0
    for v in mirrored.weights:
        parts = mirrored.distribute_strategy.experimental_local_results(v.value)
        if len(parts) != 2:
            raise SystemExit(f"variable {v.path} is not mirrored: {len(parts)} copies")
        a, b = (np.asarray(p.numpy(), np.float64) for p in parts)
        copy_diff = max(copy_diff, float(np.max(np.abs(a - b))) if a.size else 0.0)
    traj_diff = max(rel_diff(a, b) for a, b in zip(values(single), values(mirrored)))
    (rows1, steps1, w1), (rows2, steps2, w2) = callback_outputs(single), callback_outputs(mirrored)
    return {
        "swap_rows": [len(rows1), len(rows2)],
        "accepted_rows": [sum(r.split(",")[9] == "1" for r in rows1), sum(r.split(",")[9] == "1" for r in rows2)],
        "sample_steps": [steps1, steps2],
        "sample_diff": max(rel_diff(a, b) for a, b in zip(w1, w2)),
        "copy_diff": copy_diff,
        "trajectory_diff": traj_diff,
        "swaps": [h1["swaps"][-1], h2["swaps"][-1]],
        "attempts": [h1["swap_attempts"][-1], h2["swap_attempts"][-1]],
        "loss": [h1["loss"][-1], h2["loss"][-1]],
        "sigma2": [h1["sigma2_0"][-1], h2["sigma2_0"][-1]],
    }


def rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1.0)) if a.size else 0.0


@keras.saving.register_keras_serializable(package="distributed_check")
def linear():
    inp = keras.Input((5,))
    return keras.Model(inp, keras.layers.Dense(1)(inp))


def gradient_noise():
    """SGLD at lr 1e-9 (the weights stay put) on 512 examples, batch 32 split over 2 replicas,
    measured on every step: the epochs' mean excess temperature, its standard error and the
    closed form ``eta N^2 (1/n - 1/N) mean_j S_j^2 / 2`` (tests/sgmcmc/test_gradient_noise.py)."""
    n_total, batch = 512, 32
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n_total, 5)).astype("float32")
    y = (x @ rng.normal(size=5) + 0.5 * rng.normal(size=n_total)).astype("float32")[:, None]
    with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
        s = tf_vrre.ReplicaExchangeSampler(
            linear,
            data_size=n_total,
            num_chains=1,
            temperatures=[1e-3],
            learning_rates=1e-9,
            dynamics="sgld",
            swap=None,
            seed=0,
            gradient_noise_every=1,
        )
        s.compile(loss=keras.losses.MeanSquaredError(reduction=None))
    kernel, bias = (np.asarray(w, np.float64) for w in s.cold_model.get_weights())
    r = y[:, 0] - (x @ kernel[:, 0] + bias[0])
    s2 = float((-2.0 * r[:, None] * np.concatenate([x, np.ones((n_total, 1))], 1)).var(0, ddof=1).mean())
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n_total, seed=1).batch(batch)
    logged = np.asarray(s.fit(data, epochs=20, verbose=0).history["excess_temperature_0"])
    return {
        "mean": float(logged.mean()),
        "se": float(logged.std(ddof=1) / np.sqrt(len(logged))),
        "exact": 1e-9 * n_total**2 * (1 / batch - 1 / n_total) * s2 / 2,
    }


if sys.argv[1:2] == ["noise"]:  # a process of its own: strategies over the same devices share collective keys
    print(json.dumps(gradient_noise()))
else:
    print(json.dumps({"forward": compare(False), "cached": compare(True)}))
