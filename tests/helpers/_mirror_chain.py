"""Run in a fresh process: one CPU split into 2 logical devices (before any TF op).

One device and ``MirroredStrategy`` over 2 logical CPUs must run the same Markov chain: the
same noise, global-batch energies, sigma2, swap decisions and updates, up to float summation
order.  ``jit_compile`` is left to its default (``"auto"``), as a user would: the one-device
step of this dense net is XLA-compiled, the mirrored one is not (XLA has no CPU collectives),
so the comparison also covers draws that must not depend on the compiler.

A tiny tanh MLP regression (``tf_vrre.gaussian_nll``), 2 chains, ``CorrectedSwap(F=1e3)``,
20 steps of batch 32, in several variants: plain unshuffled ``(x, y)`` batches or
``sampler.make_dataset`` batches (cached snapshot NLLs), with or without
``ControlVariates(period=4, batch_size=64)``, ``penalty="batch"`` or ``"window"``.
Run one variant per process (several MirroredStrategy instances in one process can abort
with mismatched collective instance keys).  Prints one JSON line: per variant, the max relative difference of the cold chain's weights and
of every chain / velocity / snapshot variable, swap counts, swap records, sigma2, XLA flags.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras
import numpy as np

import tf_vrre

N, BATCH, STEPS = 160, 32, 20
VARIANTS = {  # name: (indexed batches, control variates, penalty)
    "plain_vr_batch": (False, True, "batch"),
    "indexed_vr_batch": (True, True, "batch"),
    "plain_vr_window": (False, True, "window"),
    "indexed_vr_window": (True, True, "window"),
    "plain_batch": (False, False, "batch"),
    "plain_window": (False, False, "window"),
}


@keras.saving.register_keras_serializable(package="mirror_chain")
def mlp():
    inp = keras.Input((3,))
    h = keras.layers.Dense(16, activation="tanh")(inp)
    return keras.Model(inp, keras.layers.Dense(1)(h))


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 3)).astype("float32")
    y = (np.sin(2.0 * x[:, :1]) + 0.1 * rng.normal(size=(N, 1))).astype("float32")
    return x, y


def train(strategy, indexed, vr, penalty):
    x, y = data()
    with strategy.scope():
        s = tf_vrre.ReplicaExchangeSampler(
            mlp,
            data_size=N,
            num_chains=2,
            temperatures=[0.05, 0.5],
            learning_rates=[1e-3, 2e-3],
            dynamics="sghmc",
            weight_decay=1.0,
            seed=3,
            nll=tf_vrre.gaussian_nll,
            swap=tf_vrre.CorrectedSwap(correction=1e3, penalty=penalty),
            variance_reduction=tf_vrre.ControlVariates(period=4, batch_size=64) if vr else None,
        )
        if vr:
            s.set_reference_data((x, y))
        s.compile()
    ds = s.make_dataset(BATCH, shuffle=False) if indexed else tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    s.fit(ds, epochs=STEPS // (N // BATCH), verbose=0)
    return s


def variables(s):
    out = {}
    groups = [("chain", s.chains)] + ([("snapshot", s.snapshots)] if s.variance_reduction is not None else [])
    for label, models in groups:
        for h, m in enumerate(models):
            out.update({f"{label}{h}/{i}": v.numpy() for i, v in enumerate(m.weights)})
    for h, vs in enumerate(s.state.chains.velocities or []):
        out.update({f"velocity{h}/{i}": v.numpy() for i, v in enumerate(vs)})
    return out


def rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1.0)) if a.size else 0.0


def swap_record(s):
    """(step, sigma2 updated, refreshed, proposed, accepted) of every row of the swap log."""
    log = s.state.swap.log.numpy()
    return [[int(v) for v in r[:5]] for r in log[log[:, 0] >= 0]]


def compare(indexed, vr, penalty):
    one = train(tf.distribute.get_strategy(), indexed, vr, penalty)
    two = train(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), indexed, vr, penalty)
    a, b = variables(one), variables(two)
    cold = [k for k in a if k.startswith("chain0/")]
    return {
        "cold_diff": max(rel_diff(a[k], b[k]) for k in cold),
        "state_diff": max(rel_diff(a[k], b[k]) for k in a),
        "steps": [int(one.state.step.numpy()), int(two.state.step.numpy())],
        "swaps": [int(one.state.swap.swap_count.numpy().sum()), int(two.state.swap.swap_count.numpy().sum())],
        "attempts": [int(one.state.swap.attempt_count.numpy().sum()), int(two.state.swap.attempt_count.numpy().sum())],
        "records": [swap_record(one), swap_record(two)],
        "sigma2": [float(one.state.swap.sigma2.numpy()[0]), float(two.state.swap.sigma2.numpy()[0])],
        "jit_compile": [bool(one.jit_compile), bool(two.jit_compile)],
    }


if __name__ == "__main__":
    names = sys.argv[1:] or list(VARIANTS)  # by name
    print(json.dumps({name: compare(*VARIANTS[name]) for name in names}))
