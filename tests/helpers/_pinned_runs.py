"""Short sampler runs whose final state is pinned in ``tests/fixtures/`` (behaviour guard).

The swap penalty is the paper's window rule (``penalty="window"``) and XLA is off
(``jit_compile=False``), both named explicitly since the defaults changed.
``python tests/helpers/_pinned_runs.py`` rewrites ``pinned_state.npz`` (the ``.keras`` file, the
checkpoint and their state dump are kept: they were written by older code on purpose).  ``tests/test_pinned.py`` checks that
today's code reproduces every variable of every configuration, loads a ``.keras`` file and
resumes a ``BackupAndRestore`` checkpoint written by that code.

Each configuration exercises a different path of the train step: cached / forward / train-mode
snapshot energies, adaptive coefficient, scheduled F and lr, K = 1 / 2 / 3, random and DEO
pairs, cooling, SGLD / SGHMC / M-SGD.
"""

import contextlib
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

import tf_vrre
from tf_vrre.workflows.gaussian_mixture import target

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
N = 64


@keras.saving.register_keras_serializable(package="pinned")
def mlp():
    inp = keras.Input((4,))
    h = keras.layers.Dense(6, activation="tanh")(inp)
    return keras.Model(inp, keras.layers.Dense(3)(h))


@keras.saving.register_keras_serializable(package="pinned")
def bn_mlp():
    inp = keras.Input((4,))
    h = keras.layers.Dense(6)(inp)
    h = keras.layers.BatchNormalization()(h)
    return keras.Model(inp, keras.layers.Dense(3)(keras.layers.Activation("relu")(h)))


def data():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(N, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.7).astype("int64")
    return x, y


def _loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def build(name):
    """``(sampler, fit_kwargs)`` of configuration ``name`` (compiled, reference data set);
    ``fit_kwargs(sampler)`` gives the data arguments of ``fit`` for that sampler."""
    x, y = data()
    spe = 4  # steps per epoch at batch 16
    if name == "vr_sghmc_cached":
        s = tf_vrre.ReplicaExchangeSampler(
            mlp,
            data_size=N,
            num_chains=2,
            temperatures=[1.0, 2.0],
            learning_rates=[2e-3, 3e-3],
            weight_decay=0.5,
            seed=3,
            swap=tf_vrre.CorrectedSwap(correction=10.0, penalty="window"),
            variance_reduction=tf_vrre.ControlVariates(period=4, batch_size=24),
        )
        s.set_reference_data((x, y))
        s.compile(loss=_loss(), metrics=["accuracy"], jit_compile=False)
        return s, lambda smp: dict(x=smp.make_dataset(16))
    if name == "vr_bn_forward_adaptive":
        s = tf_vrre.ReplicaExchangeSampler(
            bn_mlp,
            data_size=N,
            num_chains=2,
            temperatures=[0.2, 1.0],
            learning_rates=2e-3,
            seed=4,
            weight_decay=1.0,
            energy_mode="inference",
            swap=tf_vrre.CorrectedSwap(
                correction=tf_vrre.EpochExponential(1.0, 1.5, spe), smoothing=0.5, penalty="window"
            ),
            variance_reduction=tf_vrre.ControlVariates(period=3, coefficient="adaptive", cache=False),
        )
        s.set_reference_data((x, y))
        s.compile(loss=_loss(), jit_compile=False)
        return s, lambda smp: dict(x=x, y=y, batch_size=16, shuffle=False)
    if name == "vr_bn_train_ladder":
        s = tf_vrre.ReplicaExchangeSampler(
            bn_mlp,
            data_size=N,
            num_chains=3,
            temperatures=[0.2, 0.6, 2.0],
            learning_rates=1e-3,
            seed=5,
            energy_mode="train",
            independent_init=True,
            swap=tf_vrre.CorrectedSwap(correction=3.0, pairs="random", period=2, penalty="window"),
            variance_reduction=tf_vrre.ControlVariates(period=4, batch_size=16),
        )
        s.set_reference_data((x, y))
        s.compile(loss=_loss(), metrics=["accuracy"], jit_compile=False)
        return s, lambda smp: dict(x=x, y=y, batch_size=16, shuffle=False)
    if name == "sgld_deo_cooling":
        d = target.make_data(N, seed=2)
        s = tf_vrre.ReplicaExchangeSampler(
            target.build_default_model,
            data_size=N,
            num_chains=3,
            temperatures=[10.0, 100.0, 1000.0],
            learning_rates=tf_vrre.EpochExponential(1e-3, 0.5, spe),
            dynamics="sgld",
            weight_decay=target.weight_decay(),
            nll=target.nll,
            seed=6,
            swap=tf_vrre.CorrectedSwap(correction=2.0, pairs="deo", cooling_steps=2, penalty="window"),
        )
        s.compile(jit_compile=False)
        return s, lambda smp: dict(x=d, batch_size=16, shuffle=False)
    if name == "msgd_single":
        s = tf_vrre.ReplicaExchangeSampler(
            mlp, data_size=N, num_chains=1, dynamics="msgd", swap=None, learning_rates=1e-2, weight_decay=0.1, seed=7
        )
        s.compile(loss=_loss(), metrics=["accuracy"], jit_compile=False)
        return s, lambda smp: dict(x=x, y=y, batch_size=16, shuffle=False)
    raise KeyError(name)


CONFIGS = ("vr_sghmc_cached", "vr_bn_forward_adaptive", "vr_bn_train_ladder", "sgld_deo_cooling", "msgd_single")
EPOCHS = 3


def state(sampler):
    """Every variable of the sampler, keyed by a name that does not depend on attribute layout."""
    out = {}
    for h, chain in enumerate(sampler.chains):
        for i, v in enumerate(chain.weights):
            out[f"chain{h}/{i}"] = np.asarray(v.numpy())
    for h, snap in enumerate(getattr(sampler, "snapshots", None) or []):
        for i, v in enumerate(snap.weights):
            out[f"snapshot{h}/{i}"] = np.asarray(v.numpy())
    own = {id(v) for c in sampler.chains for v in c.weights}
    own |= {id(v) for c in (getattr(sampler, "snapshots", None) or []) for v in c.weights}
    for v in sampler.weights:
        if id(v) not in own:
            key = f"state/{v.name}"
            assert key not in out, key
            out[key] = np.asarray(v.numpy())
    return out


def assign_state(sampler, state):
    """Sets every variable of ``sampler`` from a :func:`state` dict."""
    for h, chain in enumerate(sampler.chains):
        for i, v in enumerate(chain.weights):
            v.assign(state[f"chain{h}/{i}"])
    for h, snap in enumerate(getattr(sampler, "snapshots", None) or []):
        for i, v in enumerate(snap.weights):
            v.assign(state[f"snapshot{h}/{i}"])
    own = {id(v) for c in sampler.chains for v in c.weights}
    own |= {id(v) for c in (getattr(sampler, "snapshots", None) or []) for v in c.weights}
    for v in sampler.weights:
        if id(v) not in own:
            v.assign(state[f"state/{v.name}"])


def run(name, epochs=EPOCHS, callbacks=None, sampler=None):
    s, fit_kwargs = build(name)
    s = s if sampler is None else sampler
    s.fit(**fit_kwargs(s), epochs=epochs, verbose=0, callbacks=callbacks or [])
    return s


class _StopAt(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError("stop for the fixture")


def write_fixtures(old_files=False):
    """Rewrites ``pinned_state.npz``; with ``old_files`` also the ``.keras`` file and the
    checkpoint (only meaningful with the code whose files the tests must keep loading)."""
    os.makedirs(FIXTURES, exist_ok=True)
    arrays = {}
    for name in CONFIGS:
        for key, value in state(run(name)).items():
            arrays[f"{name}:{key}"] = value
    np.savez_compressed(os.path.join(FIXTURES, "pinned_state.npz"), **arrays)
    if old_files:
        s = run("vr_sghmc_cached", epochs=2)  # a .keras file after 2 epochs (resumed for 1 more)
        s.save(os.path.join(FIXTURES, "vr_sghmc_cached_2epochs.keras"))
        np.savez_compressed(os.path.join(FIXTURES, "vr_sghmc_cached_2epochs_state.npz"), **state(s))
        backup = os.path.join(FIXTURES, "vr_sghmc_cached_backup")  # checkpoint at the end of epoch 2
        with contextlib.suppress(RuntimeError):
            run("vr_sghmc_cached", epochs=EPOCHS, callbacks=[_StopAt(2), keras.callbacks.BackupAndRestore(backup)])
    print("wrote", sorted(os.listdir(FIXTURES)))


if __name__ == "__main__":
    sys.exit(write_fixtures(old_files="--old-files" in sys.argv))
