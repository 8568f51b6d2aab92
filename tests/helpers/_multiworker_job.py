"""One worker of the multi-worker test: ``python _multiworker_job.py OUT`` (TF_CONFIG in the env).

Without TF_CONFIG it is the single-worker reference (one replica, the same global batch).  The
chief (or the single worker) writes every sampler variable to ``OUT/state.npz``.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(__file__))

import _bn_net
import keras
import numpy as np
import tensorflow as tf

import tf_vrre

N, GLOBAL_BATCH = 96, 24


def data():
    return _bn_net.data(N)


def main(out):
    multi = "TF_CONFIG" in os.environ
    strategy = tf.distribute.MultiWorkerMirroredStrategy() if multi else tf.distribute.get_strategy()
    with strategy.scope():
        s = tf_vrre.ReplicaExchangeSampler(
            _bn_net.build,
            data_size=N,
            num_chains=2,
            temperatures=[0.05, 0.5],
            learning_rates=[2e-3, 3e-3],
            weight_decay=1.0,
            seed=4,
            energy_mode="inference",
            swap=tf_vrre.CorrectedSwap(correction=2.0),
            variance_reduction=tf_vrre.ControlVariates(period=3, batch_size=32),
        )
        s.set_reference_data(data())
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    s.fit(s.make_dataset(GLOBAL_BATCH, drop_remainder=True), epochs=3, verbose=0)
    chief = not multi or json.loads(os.environ["TF_CONFIG"])["task"]["index"] == 0
    if chief:
        state = {f"chain{h}/{i}": v.numpy() for h, c in enumerate(s.chains) for i, v in enumerate(c.weights)}
        state.update(
            {
                "sigma2": s.state.swap.sigma2.numpy(),
                "swap_log": s.state.swap.log.numpy(),
                "swap_count": s.state.swap.swap_count.numpy(),
                "snapshot_energy": s.state.control_variates.snapshot_energy.numpy(),
                "step": s.state.step.numpy(),
                "replicas": strategy.num_replicas_in_sync,
            }
        )
        os.makedirs(out, exist_ok=True)
        np.savez(os.path.join(out, "state.npz"), **state)
    print("done", int(s.state.step.numpy()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
