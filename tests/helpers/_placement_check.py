"""Run in a fresh process: one CPU split into K logical devices (must happen before any TF op).

``_placement_check.py K invariance EPOCHS``: trains the same sampler on one device (no strategy)
and with ``placement="chain_per_replica"`` under a MirroredStrategy over the K logical CPUs, and
prints a JSON report of the largest differences between the two runs: saved variables, cold
chain, logs, swap log rows, collected samples (the control-variate coefficient is fixed for K = 2,
adaptive for K = 4).

``_placement_check.py K traffic``: prints the bytes crossing devices per step
(:mod:`tf_vrre.sampler.traffic`) of both placements for 2 chains and two model widths, and of
chain-per-replica for K chains.

``_placement_check.py K job OUT [KILL_AT]``: the chain-per-replica run with a SampleCollector,
SwapLogger and Checkpoint into ``OUT`` (resuming from its checkpoint); ``KILL_AT``: SIGKILL after
that step.  Writes ``OUT/final.npz`` (every sampler variable) at the end.

``_placement_check.py 2 cli DATA OUT [METHOD]``: ``tf-vrre train --strategy mirrored --cpu-devices 2
--placement chain-per-replica`` of a tiny run of the shipped config ``METHOD`` (default
``vr-resghmc``) on ``DATA`` (the command line splits the CPU itself: this process has not split it);
prints the exit status and ``run.json``'s execution record.
"""

import json
import os
import signal
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

K = int(sys.argv[1])
if sys.argv[2] != "cli":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * K)

import keras
import numpy as np

import tf_vrre
from tf_vrre.sampler import traffic

N = 96


def build(width=8):
    """Dense(width) - BatchNormalization - tanh - Dense(3) (per-chain BN statistics)."""
    inp = keras.Input((4,))
    h = keras.layers.Dense(width)(inp)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.Activation("tanh")(h)
    return keras.Model(inp, keras.layers.Dense(3)(h))


def build_wide():
    return build(64)


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64")
    return x, y


def sampler(placement, chains=K, width=8):
    x, y = data()
    s = tf_vrre.ReplicaExchangeSampler(
        build if width == 8 else build_wide,
        data_size=N,
        num_chains=chains,
        temperatures=list(np.geomspace(0.05, 0.8, chains)),
        learning_rates=list(np.linspace(2e-3, 4e-3, chains)),
        dynamics="sghmc",
        weight_decay=1.0,
        seed=4,
        swap=tf_vrre.CorrectedSwap(correction=50.0, period=2),
        variance_reduction=tf_vrre.ControlVariates(
            period=3, batch_size=48, coefficient=-1.0 if chains == 2 else "adaptive"
        ),
        placement=placement,
        gradient_noise_every=2,  # measured on every other step: its logs are compared too
    )
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return s


def train(placement, epochs):
    x, y = data()
    if placement == "replicated":
        s = sampler(placement)
    else:
        with tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(K)]).scope():
            s = sampler(placement)
    out = tempfile.mkdtemp()
    callbacks = [
        tf_vrre.SwapLogger(os.path.join(out, "swaps")),
        tf_vrre.SampleCollector(os.path.join(out, "samples"), every=2, validation_data=(x, y)),
    ]
    hist = s.fit(s.make_dataset(24, shuffle=False), epochs=epochs, verbose=0, callbacks=callbacks)
    with open(os.path.join(out, "swaps", "swaps.csv")) as f:
        rows = [r.split(",") for r in f.read().strip().splitlines()[1:]]
    samples = tf_vrre.load_samples(os.path.join(out, "samples"))
    cold = [np.asarray(w) for w in s.cold_model.get_weights()]
    return s, hist.history, rows, samples, cold


def diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1.0)) if a.size else 0.0


def numeric(row):
    return [float(v) for v in row]


def compare(epochs):
    one, h1, rows1, samples1, cold1 = train("replicated", epochs)
    cpr, h2, rows2, samples2, cold2 = train("chain_per_replica", epochs)
    v1 = [keras.ops.convert_to_numpy(v) for v in one.weights]
    v2 = [keras.ops.convert_to_numpy(v) for v in cpr.weights]
    return {
        "variables": [len(v1), len(v2)],
        "variable_diff": max(diff(a, b) for a, b in zip(v1, v2)),
        "cold_diff": max(diff(a, b) for a, b in zip(cold1, cold2)),
        "log_keys": sorted(set(h1) ^ set(h2)),
        "log_diff": max(diff(h1[k], h2[k]) for k in h1 if k in h2),
        "excess_temperature": [[h[f"excess_temperature_{k}"] for k in range(K)] for h in (h1, h2)],
        "swaps": [h1["swaps"][-1], h2["swaps"][-1]],
        "attempts": [h1["swap_attempts"][-1], h2["swap_attempts"][-1]],
        "swap_rows": [len(rows1), len(rows2)],
        "swap_row_diff": max(diff(numeric(a), numeric(b)) for a, b in zip(rows1, rows2)),
        "sample_steps": [samples1.steps, samples2.steps],
        "sample_diff": max(diff(a, b) for ws1, ws2 in zip(samples1, samples2) for a, b in zip(ws1, ws2)),
        "rungs": keras.ops.convert_to_numpy(cpr.state.replica.rung).tolist(),
    }


def measure_traffic():
    """Bytes crossing devices per step, per (placement, chains, width)."""
    out = {}
    cases = [(p, 2, w) for p in ("replicated", "chain_per_replica") for w in (8, 64)]
    for placement, chains, width in cases + ([("chain_per_replica", K, 8)] if K > 2 else []):
        with tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(chains)]).scope():
            s = sampler(placement, chains, width)
        t = traffic.step_traffic(s, s.make_dataset(24, shuffle=False, drop_remainder=True))
        edges = [int(np.prod(e.shape)) for e in t.transfers if e.kind == "edge"]
        out[f"{placement}/{chains}/{width}"] = {
            "bytes": t.bytes,
            "largest": t.largest,
            "kinds": t.by_kind(),
            "largest_edge": max(edges, default=0),
        }
    return out


class Kill(keras.callbacks.Callback):
    def __init__(self, at):
        super().__init__()
        self.at = at

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.state.step.numpy()) == self.at:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)


def job(out, kill_at=None):
    x, y = data()
    with tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(K)]).scope():
        s = sampler("chain_per_replica")
    callbacks = [
        tf_vrre.SampleCollector(os.path.join(out, "samples"), every=2, validation_data=(x, y)),
        tf_vrre.SwapLogger(os.path.join(out, "swaps")),
        tf_vrre.Checkpoint(os.path.join(out, "checkpoint")),
    ]
    if kill_at is not None:
        callbacks.insert(1, Kill(kill_at))
    s.fit(s.make_dataset(24), epochs=3, verbose=0, callbacks=callbacks)
    np.savez(os.path.join(out, "final.npz"), *[keras.ops.convert_to_numpy(v) for v in s.weights])
    print(json.dumps({"step": int(s.state.step.numpy())}))


def command_line(data_dir, out, method="vr-resghmc"):
    from _image_runs import cli_flags

    from tf_vrre import cli

    flags = cli_flags(method, out, data_dir)
    flags += ["--strategy", "mirrored", "--cpu-devices", str(K), "--placement", "chain-per-replica"]
    code = cli.main(flags)
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(out, "log.csv")) as f:
        rows = f.read().strip().splitlines()
    print(
        json.dumps(
            {
                "code": code,
                "status": run["status"],
                "execution": run["execution"],
                "rungs": run["rungs"],
                "samples": len(tf_vrre.load_samples(os.path.join(out, "samples")).steps),
                "log_rows": len(rows),
            }
        )
    )


if sys.argv[2] == "invariance":
    print(json.dumps(compare(int(sys.argv[3]))))
elif sys.argv[2] == "traffic":
    print(json.dumps(measure_traffic()))
elif sys.argv[2] == "cli":
    command_line(*sys.argv[3:6])
else:
    job(sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
