"""The experiment of ``posterior_fidelity.py``: the two problems and the contenders, by name.

A problem is a real data set that ships with scikit-learn, a fixed held-out split, inputs (and a
regression target) standardised with the training statistics, a small tanh MLP and its Gaussian
prior; the target of every method and of the NUTS reference is ``exp(-U(beta))`` (temperature 1)
with ``U = sum_i l(x_i | beta) + wd/2 ||beta||^2``.

A method is one entry of :data:`METHODS`; everything it needs is in its :class:`Method`, and
:func:`run_method` runs it at a budget of gradient evaluations.  **Unit of cost: one per-example
gradient evaluation** ``grad l(x_i | beta)`` of one chain (a forward and a backward pass of one
example); a forward-only evaluation (the control variates' full pass over the data) is charged as
one unit too.  A step of K chains on a batch of n costs ``K n``; a snapshot refresh of VR costs
``K N``; a full-batch leapfrog step of HMC costs ``N`` per chain.

Importing this module imports no TensorFlow (Keras is imported when a network, an NLL or a
sampler is built): ``posterior_fidelity.py`` checks its flags against :data:`PROBLEMS` and
:data:`METHODS`, and ``render_docs.py`` reads the labels, before TensorFlow starts.
"""

import dataclasses
import functools
import hashlib
import math
from collections.abc import Callable

import numpy as np

import tf_vrre


class GaussianNLL:
    """``tf_vrre.gaussian_nll`` at a fixed noise ``scale``, with a ``get_config``: a sampler built
    with it has a recordable run identity (which ``LadderTuner`` needs; a ``functools.partial``
    has none).  Registered with Keras as ``posterior_fidelity>GaussianNLL`` (:func:`_keras`)."""

    def __init__(self, scale):
        self.scale = float(scale)

    def __call__(self, x, y, y_pred):
        return tf_vrre.gaussian_nll(x, y, y_pred, scale=self.scale)

    def get_config(self):
        return {"scale": self.scale}


@functools.cache
def _keras():
    """Keras, imported on first use, with :class:`GaussianNLL` registered as serializable."""
    import keras

    keras.saving.register_keras_serializable(package="posterior_fidelity")(GaussianNLL)
    return keras


@dataclasses.dataclass(frozen=True)
class Problem:
    """One data set, its network, prior and the contenders' shared settings."""

    name: str
    kind: str  # "classification" or "regression"
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    hidden: tuple  # tanh layer widths
    outputs: int
    weight_decay: float  # prior precision wd (prior N(0, 1/wd) on every weight)
    noise_scale: float | None  # regression: the Gaussian likelihood's sd (standardised units)
    learning_rates: dict  # eta by dynamics (the sampler's N-scaled units): "sghmc" (also M-SGD), "sgld"
    batch_size: int
    pair_ratio: float  # hand ladder: tau_{h+1} / tau_h

    @property
    def data_size(self):
        return len(self.x_train)

    def model_fn(self):
        keras = _keras()
        layers = [keras.Input((self.x_train.shape[1],))]
        layers += [keras.layers.Dense(h, activation="tanh") for h in self.hidden]
        return keras.Sequential(layers + [keras.layers.Dense(self.outputs)])

    def nll(self):
        """The per-example NLL of the sampler and of the reference (``nll(x, y, y_pred)``)."""
        if self.kind == "classification":
            return _keras().losses.SparseCategoricalCrossentropy(from_logits=True)
        _keras()
        return GaussianNLL(self.noise_scale)

    def ladder(self, chains):
        """The hand-set ladder: geometric from tau = 1 with ratio ``pair_ratio`` per pair."""
        return [float(self.pair_ratio**h) for h in range(chains)]

    def fingerprint(self):
        """SHA-256 of the standardised data and of the density's settings (network, prior, noise):
        a reference is valid only for exactly these."""
        h = hashlib.sha256(
            repr((self.kind, self.hidden, self.outputs, "tanh", self.weight_decay, self.noise_scale)).encode()
        )
        for a in (self.x_train, self.y_train, self.x_test, self.y_test):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()


def _split(x, y, stratify, test_fraction=0.2, seed=0):
    from sklearn.model_selection import train_test_split

    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y if stratify else None
    )
    mu, sd = x_tr.mean(0), x_tr.std(0)
    sd[sd == 0] = 1.0  # constant pixels of the digits
    return (x_tr - mu) / sd, (x_te - mu) / sd, y_tr, y_te


def digits():
    """scikit-learn's 8x8 digits (1,797 images, 10 classes): 64 -> 32 -> 10, 2,410 weights."""
    from sklearn import datasets

    d = datasets.load_digits()
    x_tr, x_te, y_tr, y_te = _split(d.data.astype(np.float64), d.target, stratify=True)
    return Problem(
        "digits",
        "classification",
        x_tr.astype(np.float32),
        y_tr.astype(np.int64),
        x_te.astype(np.float32),
        y_te.astype(np.int64),
        hidden=(32,),
        outputs=10,
        weight_decay=1.0,
        noise_scale=None,
        learning_rates={"sghmc": 2e-4, "sgld": 3.2e-3},
        batch_size=64,
        pair_ratio=1.02,
    )


def diabetes():
    """scikit-learn's diabetes (442 patients, 10 features, disease progression): 10 -> 50 -> 50 -> 1,
    3,151 weights; Gaussian likelihood with sd 0.75 (in units of the target's training sd)."""
    from sklearn import datasets

    d = datasets.load_diabetes()
    x_tr, x_te, y_tr, y_te = _split(d.data.astype(np.float64), d.target.astype(np.float64), stratify=False)
    mu, sd = y_tr.mean(), y_tr.std()
    return Problem(
        "diabetes",
        "regression",
        x_tr.astype(np.float32),
        ((y_tr - mu) / sd).astype(np.float32),
        x_te.astype(np.float32),
        ((y_te - mu) / sd).astype(np.float32),
        hidden=(50, 50),
        outputs=1,
        weight_decay=1.0,
        noise_scale=0.75,
        learning_rates={"sghmc": 5e-5, "sgld": 2e-4},
        batch_size=32,
        pair_ratio=1.02,
    )


PROBLEMS = {"digits": digits, "diabetes": diabetes}


@dataclasses.dataclass(frozen=True)
class Method:
    """A contender: one entry of :data:`METHODS`.

    ``chains`` K run together in one ``ReplicaExchangeSampler`` on the problem's hand ladder
    (``K = 1``: tau = ``temperature``); ``members`` > 1 runs that many independent samplers, each
    with ``1/members`` of the budget (an ensemble); ``cycles`` > 0 uses a cyclical cosine learning
    rate and collects in each cycle's sampling phase; ``callbacks(method, problem, steps)`` returns
    extra Keras callbacks of a run of ``steps`` steps (e.g. :func:`ladder_tuner`).
    """

    label: str
    chains: int = 1
    dynamics: str = "sghmc"
    vr: bool = False
    members: int = 1
    cycles: int = 0
    lr_factor: float = 1.0  # times the problem's learning rate of these dynamics
    temperature: float = 1.0  # of the cold chain (1 = the posterior; others are deliberately wrong)
    swap: bool = True  # with K >= 2: the corrected swap (False: independent chains)
    callbacks: Callable = lambda method, problem, steps: []


TUNING_FRACTION = 0.2
"""The tuned ladders' tuning phase: the steps whose cost is within this fraction of the run's, so it
ends inside the burn-in that ``run`` discards at its default ``--burn-in 0.2``."""

LADDER_BOUNDS = (1.0, 1.25)
"""Where a tuned ladder's hottest temperature may move.  The cold end stays at 1 (the posterior).
1.25 is a guard, not a target: with exact energies four chains at half rejection per pair span
``ln tau_K = 2 / sqrt(D / 2 pi)``, tau_K ~ 1.10 (digits) and 1.09 (diabetes); mini-batch noise adds
rejection and so asks for less.  Up to 1.25 the equilibrium spread grows by at most
sqrt(1.25) = 1.12, within the range where every chain can keep the cold chain's step."""


def tuning_steps(method, problem, steps):
    """The largest number of steps costing at most :data:`TUNING_FRACTION` of ``steps`` steps: every
    record kept after the burn-in was taken after the tuning phase."""
    share = TUNING_FRACTION * cost(method, problem, steps)
    t = int(TUNING_FRACTION * steps)
    while t > 1 and cost(method, problem, t) > share:
        t -= 1
    return t


def ladder_tuner(method, problem, steps):
    """A :class:`tf_vrre.LadderTuner` whose tuning phase is the burn-in (:func:`tuning_steps`), in
    four rounds of doubling length, from the hand ladder; the hottest temperature moves within
    :data:`LADDER_BOUNDS`, every chain keeps the cold chain's learning rate (``learning_rates=0``,
    as on the hand ladder: only the ladder differs)."""
    t = tuning_steps(method, problem, steps)
    return [tf_vrre.LadderTuner(t, first_round_steps=max(1, t // 15), learning_rates=0.0, bounds=LADDER_BOUNDS)]


def _ladder_info(callbacks):
    """What the ladder tuners of a run found: the ladder it started and ended with, the last
    round's rejection rates, barrier Lambda and recommended number of chains."""
    out = []
    for cb in callbacks:
        if isinstance(cb, tf_vrre.LadderTuner) and cb.record["rounds"]:
            last = cb.record["rounds"][-1]
            out.append(
                {
                    "tuning_steps": cb.tuning_steps,
                    "rounds": len(cb.record["rounds"]),
                    "initial": [float(t) for t in cb.record["initial"]["temperatures"]],
                    "final": [float(t) for t in last["new_temperatures"]],
                    "rejection": [float(r) for r in last["rejection"]],
                    "barrier": float(last["barrier"]),
                    "recommended_chains": int(last["recommended_chains"]),
                }
            )
    return out


METHODS = {
    "sgld": Method("SGLD", dynamics="sgld"),
    "sghmc": Method("SGHMC"),
    "resghmc": Method("reSGHMC, K=2", chains=2),
    "vr-resghmc": Method("VR-reSGHMC, K=2", chains=2, vr=True),
    "resghmc-k4": Method("reSGHMC, K=4", chains=4),
    "vr-resghmc-k4": Method("VR-reSGHMC, K=4", chains=4, vr=True),
    "resghmc-k4-tuned": Method("reSGHMC, K=4, tuned ladder", chains=4, callbacks=ladder_tuner),
    "vr-resghmc-k4-tuned": Method("VR-reSGHMC, K=4, tuned ladder", chains=4, vr=True, callbacks=ladder_tuner),
    "cycsghmc": Method("cycSGHMC, 4 cycles", cycles=4, lr_factor=2.0),
    "ensemble": Method("ensemble, 5 x M-SGD", dynamics="msgd", members=5),
}
"""The contenders by name (``--methods``); cycSGHMC's cosine starts at twice SGHMC's ``eta`` (the
same mean step); the tuned rows start from the hand ladder and tune it during the burn-in
(:func:`ladder_tuner`; K = 2 has nothing to tune: the tuner needs K >= 3, as the ends stay put or
move only within bounds, and two chains are only ends).  Adding a row is adding an entry."""

VR_PERIOD_EPOCHS = 2
"""Snapshot refresh every two epochs of the cold chain's batches (the paper's m = 392 at n = 256)."""


@dataclasses.dataclass
class Trace:
    """What a run leaves: network outputs on the test inputs at the recorded steps."""

    budget: np.ndarray  # [S] gradient evaluations spent when each record was taken (whole run)
    outputs: np.ndarray  # [S, members, n_test, outputs]
    collect: np.ndarray  # [S] bool: the record is a sample (False: exploration phase of a cycle)
    info: dict


def _recorder(x, every, cycle=None):
    """A Keras callback recording, every ``every`` steps, the cold chain's outputs on ``x``
    (``steps_per_execution = every``)."""
    import tensorflow as tf

    class Recorder(_keras().callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.x, self.every, self.cycle = tf.constant(x), every, cycle
            self.steps, self.outputs, self.collect = [], [], []

        def on_train_batch_end(self, batch, logs=None):
            step = int(self.model.state.step.numpy())
            if step % self.every == 0:
                self.steps.append(step)
                self.outputs.append(self.model.cold_model(self.x, training=False).numpy())
                self.collect.append(self.cycle is None or self.cycle.in_sampling_phase(step - 1))

    return Recorder()


def _sampler(method, problem, steps, seed):
    import tensorflow as tf

    keras = _keras()
    K = method.chains
    lr = problem.learning_rates["sgld" if method.dynamics == "sgld" else "sghmc"] * method.lr_factor
    cycle = None
    if method.cycles:
        cycle = tf_vrre.CyclicalCosine(lr, total_steps=steps, cycles=method.cycles)
        lr = cycle
    spe = math.ceil(problem.data_size / problem.batch_size)
    kwargs = {"temperatures": [method.temperature * t for t in problem.ladder(K)] if K > 1 else method.temperature}
    if method.dynamics == "msgd":
        kwargs = {}
    if K > 1:
        kwargs["swap"] = tf_vrre.CorrectedSwap() if method.swap else None
    if method.vr:
        kwargs["variance_reduction"] = tf_vrre.ControlVariates(period=VR_PERIOD_EPOCHS * spe)
    nll = problem.nll()
    sampler = tf_vrre.ReplicaExchangeSampler(
        problem.model_fn,
        data_size=problem.data_size,
        num_chains=K,
        learning_rates=lr,
        dynamics=method.dynamics,
        weight_decay=problem.weight_decay,
        seed=seed,
        nll=None if isinstance(nll, keras.losses.Loss) else nll,
        **kwargs,
    )
    data = (problem.x_train, problem.y_train)
    if method.vr:  # batches carry their example index: the snapshot energies come from the full pass's cache
        sampler.set_reference_data(data)
        batches = sampler.make_dataset(problem.batch_size, repeat=True, drop_remainder=True)
    else:
        batches = (
            tf.data.Dataset.from_tensor_slices(data)
            .shuffle(problem.data_size, seed=seed)
            .batch(problem.batch_size, drop_remainder=True)
            .repeat()
        )
    return sampler, cycle, nll, batches


def cost(method, problem, steps):
    """Gradient evaluations of ``steps`` steps of one member: ``K n`` per step plus ``K N`` per VR refresh."""
    steps = np.asarray(steps)
    per_step = method.chains * problem.batch_size
    if not method.vr:
        return per_step * steps
    m = VR_PERIOD_EPOCHS * math.ceil(problem.data_size / problem.batch_size)
    return per_step * steps + method.chains * problem.data_size * -(-steps // m)


def steps_for(method, problem, budget):
    """The largest number of steps of one member whose cost is within ``budget / members``."""
    share = budget / method.members
    steps = int(share // (method.chains * problem.batch_size))
    while steps > 0 and cost(method, problem, steps) > share:
        steps -= 1
    return steps


def run_method(method, problem, budget, seed, records=200):
    """Runs ``method`` on ``problem`` within ``budget`` gradient evaluations; :class:`Trace` of
    about ``records`` records per member."""
    steps = steps_for(method, problem, budget)
    every = max(1, steps // records)
    steps -= steps % every
    outputs, info = [], {"steps": steps, "every": every, "members": method.members, "swaps": 0, "attempts": 0}
    ladders, keras = [], _keras()
    for member in range(method.members):
        sampler, cycle, nll, batches = _sampler(method, problem, steps, seed * 1000 + member)
        sampler.compile(
            loss=nll if isinstance(nll, keras.losses.Loss) else None, steps_per_execution=every, jit_compile=False
        )
        recorder = _recorder(problem.x_test, every, cycle)
        extra = list(method.callbacks(method, problem, steps))
        history = sampler.fit(batches, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[recorder, *extra])
        ladders += _ladder_info(extra)
        for key in ("swaps", "swap_attempts"):
            info[key.replace("swap_", "")] += float(history.history.get(key, [0.0])[-1])
        outputs.append(np.stack(recorder.outputs))
    if ladders:
        info["ladder"] = ladders
    budget_at = cost(method, problem, np.array(recorder.steps)) * method.members
    return Trace(budget_at, np.stack(outputs, 1), np.array(recorder.collect), info)
