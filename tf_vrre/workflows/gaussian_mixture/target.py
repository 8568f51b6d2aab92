"""The paper's 1-D Gaussian-mixture target (Section 5.1) with its exact tempered posterior.

``x_i | beta ~ 0.5 N(beta, s^2) + 0.5 N(phi - beta, s^2)``, prior ``beta ~ N(0, prior_sd^2)``;
the paper's numbers are the defaults (:data:`DEFAULT`: s = 5, phi = 20, prior sd 10, data drawn
at beta = -5), and :class:`Mixture` takes any others.  The likelihood is symmetric under
``beta -> phi - beta``, so the two modes (near ``beta`` and ``phi - beta``) differ only through
the prior; at temperature tau their weights are ``1 : exp(-(U(phi - b) - U(b)) / tau)`` (3 nats
for the defaults: 1 : exp(-3/tau)).  The posterior is 1-D, so the exact tempered density is
computed on a grid.  Every function takes ``target=`` (default :data:`DEFAULT`).
"""

import collections
import time

import keras
import numpy as np
import tensorflow as tf

from tf_vrre.sampler.replica_exchange import ReplicaExchangeSampler
from tf_vrre.sgmcmc.control_variates import ControlVariates
from tf_vrre.sgmcmc.swaps import CorrectedSwap

_trapezoid = getattr(np, "trapezoid", None) or np.trapz  # noqa: NPY201  (NumPy < 2.0 names it trapz)


class Mixture(
    collections.namedtuple("Mixture", ["phi", "sigma", "prior_sd", "true_beta"], defaults=(20.0, 5.0, 10.0, -5.0))
):
    """The target's parameters.

    Fields:
      phi: the mirror point: components at ``beta`` and ``phi - beta``.
      sigma: component standard deviation ``s > 0``.
      prior_sd: prior standard deviation of beta (``weight_decay = 1 / prior_sd^2``).
      true_beta: the beta the data are drawn at.
    """

    def check(self):
        """``ValueError`` naming the field unless sigma, prior_sd > 0 and all finite."""
        for name in self._fields:
            if not np.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)}")
        for name in ("sigma", "prior_sd"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        return self

    @property
    def split(self):
        """The mirror point ``phi / 2`` between the two modes."""
        return self.phi / 2.0

    @property
    def modes(self):
        """Approximate mode locations ``(min(b, phi - b), max(b, phi - b))`` for large N."""
        b, m = self.true_beta, self.phi - self.true_beta
        return min(b, m), max(b, m)


DEFAULT = Mixture()
SIGMA, PHI, PRIOR_SD, TRUE_BETA = DEFAULT.sigma, DEFAULT.phi, DEFAULT.prior_sd, DEFAULT.true_beta


def make_data(num_examples, beta=None, seed=0, target=DEFAULT):
    """Draws ``num_examples`` points from the mixture at ``beta`` (default ``target.true_beta``),
    float32 column ``[N, 1]``."""
    beta = target.true_beta if beta is None else beta
    rng = np.random.default_rng(seed)
    left = rng.random(num_examples) < 0.5
    centers = np.where(left, beta, target.phi - beta)
    return (centers + target.sigma * rng.normal(size=num_examples)).astype(np.float32)[:, None]


class Beta(keras.layers.Layer):
    """A layer holding the scalar parameter beta; outputs beta once per example."""

    def __init__(self, initial=30.0, **kwargs):
        super().__init__(**kwargs)
        self.initial = float(initial)
        self.beta = self.add_weight(name="beta", shape=(), initializer=keras.initializers.Constant(self.initial))

    def call(self, x):
        return tf.zeros_like(x[:, :1]) + self.beta

    def get_config(self):
        return {**super().get_config(), "initial": self.initial}


def build_model(initial=30.0):
    """A Keras model whose only weight is beta (``model(x) = beta`` for every x)."""
    inp = keras.Input((1,))
    return keras.Model(inp, Beta(initial, name="beta")(inp))


@keras.saving.register_keras_serializable(package="tf_vrre.mixture")
def build_default_model():
    return build_model(30.0)


@keras.saving.register_keras_serializable(package="tf_vrre.mixture")
class MixtureNLL:
    """Per-example ``-log p(x_i | beta)`` of the mixture with ``phi``, ``sigma`` (unlabeled).

    ``-log(0.5 N(x; beta, s^2) + 0.5 N(x; phi - beta, s^2))``; callable as ``nll(x, y, y_pred)``
    with ``y_pred = beta`` per example.
    """

    def __init__(self, phi=PHI, sigma=SIGMA):
        self.phi, self.sigma = float(phi), float(sigma)

    def __call__(self, x, y, y_pred):
        del y
        x = tf.reshape(tf.cast(x, tf.float32), [-1])
        beta = tf.reshape(y_pred, [-1])
        a = -0.5 * tf.square((x - beta) / self.sigma)
        b = -0.5 * tf.square((x - (self.phi - beta)) / self.sigma)
        return -(tf.reduce_logsumexp(tf.stack([a, b]), axis=0) + np.log(0.5) - np.log(self.sigma * np.sqrt(2 * np.pi)))

    def get_config(self):
        return {"phi": self.phi, "sigma": self.sigma}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="tf_vrre.mixture")
def nll(x, y, y_pred):
    """Per-example ``-log p(x_i | beta)`` of the default mixture (unlabeled: ``y`` is unused)."""
    return MixtureNLL()(x, y, y_pred)


def target_nll(target=DEFAULT):
    """The sampler's ``nll`` for ``target`` (the registered function for the default)."""
    return nll if (target.phi, target.sigma) == (PHI, SIGMA) else MixtureNLL(target.phi, target.sigma)


def weight_decay(target=DEFAULT):
    """Prior precision ``1 / prior_sd^2`` (the sampler's ``weight_decay``)."""
    return 1.0 / target.prior_sd**2


def energy(beta, x, chunk_elements=2**22, target=DEFAULT):
    """Exact ``U(beta) = sum_i -log p(x_i | beta) + beta^2 / (2 prior_sd^2)`` for an array of beta.

    Evaluated in blocks of about ``chunk_elements`` (beta, x) pairs, so a fine grid times
    N = 1e5 points stays within a few tens of MB.
    """
    beta = np.asarray(beta, np.float64)
    shape = beta.shape
    flat = beta.reshape(-1)
    x = np.asarray(x, np.float64).reshape(-1)
    out = np.empty(flat.shape, np.float64)
    step = max(1, int(chunk_elements) // max(1, x.size))
    sigma, phi = target.sigma, target.phi
    const = np.log(0.5) - np.log(sigma * np.sqrt(2 * np.pi))
    for i in range(0, flat.size, step):
        b_ = flat[i : i + step, None]
        a = -0.5 * ((x - b_) / sigma) ** 2
        b = -0.5 * ((x - (phi - b_)) / sigma) ** 2
        out[i : i + step] = -(np.logaddexp(a, b) + const).sum(-1)
    return (out + 0.5 * flat**2 / target.prior_sd**2).reshape(shape)


def default_grid(x, temperature=1.0, points=24001, lo=None, hi=None, target=DEFAULT):
    """Grid for the exact posterior: uniform for small N; for large N a coarse grid refined
    (2001 points each) where the tempered density is within ``exp(-60)`` of its maximum, since
    the modes narrow as ``1/sqrt(N)`` and a uniform fine grid would cost ``points * N``.

    ``lo, hi`` default to the modes -/+ ``max(15, 3 sigma)`` (-20, 40 for the default target)."""
    margin = max(15.0, 3.0 * target.sigma)
    lo = target.modes[0] - margin if lo is None else lo
    hi = target.modes[1] + margin if hi is None else hi
    x = np.asarray(x).reshape(-1)
    if x.size * points <= 5e7:
        return np.linspace(lo, hi, points)
    coarse = np.linspace(lo, hi, 1201)
    u = energy(coarse, x, target=target)
    hot = np.flatnonzero((u - u.min()) / temperature < 60.0)
    pieces = [coarse]
    for run in np.split(hot, np.flatnonzero(np.diff(hot) > 1) + 1):
        a, b = coarse[max(run[0] - 1, 0)], coarse[min(run[-1] + 1, coarse.size - 1)]
        pieces.append(np.linspace(a, b, 2001))
    return np.unique(np.concatenate(pieces))


def exact_posterior(x, temperature, grid=None, u=None, target=DEFAULT):
    """``(grid, density)`` of ``exp(-U / tau)`` normalised on a fine grid (``u``: U on the grid)."""
    if grid is None:
        grid = default_grid(x, temperature, target=target)
    if u is None:
        u = energy(grid, x, target=target)
    logp = -(u - u.min()) / temperature
    p = np.exp(logp)
    p /= _trapezoid(p, grid)
    return grid, p


def mode_weights(x, temperature, split=None, grid=None, u=None, target=DEFAULT):
    """Exact probability of ``beta < split`` and ``beta >= split`` (default ``phi / 2``) at ``temperature``."""
    split = target.split if split is None else split
    grid, p = exact_posterior(x, temperature, grid, u, target=target)
    left = _trapezoid(np.where(grid < split, p, 0.0), grid)
    return left, 1.0 - left


def barrier(x, temperature=1.0, split=None, grid=None, u=None, target=DEFAULT):
    """Height of the energy barrier at ``split`` above the lower mode, in units of ``temperature``.

    ``(U(split) - min U) / tau``: ~3.8e3 nats at N = 1e3 (tau = 1) for the default target, linear in N.
    """
    split = target.split if split is None else split
    if grid is None:
        grid = default_grid(x, target=target)
    if u is None:
        u = energy(grid, x, target=target)
    return float((energy(np.array([split]), x, target=target)[0] - u.min()) / temperature)


def exact_cdf(x, temperature, grid=None, u=None, target=DEFAULT):
    """``(grid, cdf)`` of the exact tempered posterior (trapezoid rule on the grid)."""
    grid, p = exact_posterior(x, temperature, grid, u, target=target)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (p[1:] + p[:-1]) * np.diff(grid))])
    return grid, cdf / cdf[-1]


def ks_distance(samples, grid, cdf):
    """Kolmogorov-Smirnov distance ``sup |F_emp - F_exact|`` of samples to a grid CDF."""
    s = np.sort(np.asarray(samples, np.float64).reshape(-1))
    if s.size == 0:
        raise ValueError("ks_distance needs at least one sample")
    f = np.interp(s, grid, cdf)
    i = np.arange(1, s.size + 1)
    return float(max(np.max(i / s.size - f), np.max(f - (i - 1) / s.size)))


def left_fraction(beta, split=PHI / 2, batches=10):
    """Fraction of a trace below ``split`` and its batch-means standard error (``batches`` blocks).

    Mode changes are rare events, so the batch-means error of one run is itself noisy: compare
    several chain seeds (``cli``: mean and standard error across seeds).
    """
    left = (np.asarray(beta) < split).astype(float)
    t = len(left) - len(left) % batches
    if t < 2 * batches:
        return float(left.mean()), float("nan")
    means = left[:t].reshape(batches, -1).mean(1)
    return float(left.mean()), float(means.std(ddof=1) / np.sqrt(batches))


def mode_changes(beta, split=PHI / 2, margin=2.0):
    """Number of times a trace moves from one mode to the other (``split +- margin`` hysteresis)."""
    state, count = None, 0
    for b in np.asarray(beta).reshape(-1):
        s = 0 if b < split - margin else (1 if b > split + margin else state)
        if state is not None and s != state:
            count += 1
        state = s
    return count


METHODS = ("sgld", "resgld", "vr-resgld")
LADDER = "vr-resgld-ladder"
ALL_METHODS = METHODS + (LADDER,)


def ladder(tau_low, tau_high, num_chains):
    """Geometric temperature ladder ``tau_low * (tau_high / tau_low) ** (h / (K - 1))``."""
    return [float(t) for t in np.geomspace(tau_low, tau_high, int(num_chains))]


def run(
    method,
    data,
    steps,
    learning_rate=1e-4,
    batch_size=100,
    period=4,
    temperatures=(10.0, 3000.0),
    correction=2.0,
    smoothing=0.3,
    initial=30.0,
    seed=0,
    record_every=10,
    callbacks=(),
    num_chains=4,
    target=DEFAULT,
    swap_options=None,
    jit_compile=None,
):
    """Samples the mixture posterior with one method through ``model.fit``; returns a dict.

    Args:
      method: ``"sgld"`` (one chain at ``temperatures[0]``), ``"resgld"`` (two chains, plain
        mini-batch energies), ``"vr-resgld"`` (control variates refreshed every ``period``) or
        ``"vr-resgld-ladder"`` (VR with ``num_chains`` chains on the geometric ladder from
        ``temperatures[0]`` to ``temperatures[-1]``; ``sigma2`` is then the cold pair's).
      data: ``[N, 1]`` float32 observations.
      steps: number of SGLD iterations.
      period: ``m`` (sigma^2 window and, for VR, snapshot period).
      record_every: the cold chain's beta and sigma^2 are recorded every this many steps.
      target: the :class:`Mixture` (its NLL and prior).
      swap_options: extra ``CorrectedSwap`` arguments (e.g. ``{"penalty": "window"}``).
      jit_compile: XLA for the train step (``None``: the sampler's default, ``"auto"`` unless
        ``$TF_VRRE_JIT_COMPILE`` says otherwise; XLA is about 3x faster for this tiny model on CPU).

    Returns:
      ``{"beta": [T] cold-chain trace, "sigma2": [T], "swaps", "attempts", "seconds", ...}``.
    """
    if method not in ALL_METHODS:
        raise ValueError(f"method must be one of {ALL_METHODS}, got {method!r}")
    if method == LADDER:
        temperatures = ladder(temperatures[0], temperatures[-1], num_chains)
    n_data = int(len(data))
    common = dict(
        data_size=n_data,
        learning_rates=learning_rate,
        dynamics="sgld",
        weight_decay=weight_decay(target),
        nll=target_nll(target),
        seed=seed,
    )
    vr = ControlVariates(period=period, batch_size=min(n_data, 10000)) if method in ("vr-resgld", LADDER) else None
    swap = None
    if method != "sgld":
        swap = CorrectedSwap(correction=correction, smoothing=smoothing, period=period, **(swap_options or {}))
    sampler = _make_sampler(data, initial, temperatures, swap, vr, common)
    sampler.compile(steps_per_execution=record_every, jit_compile=jit_compile)
    ds = _shuffled_batches(data, batch_size, seed)
    recorder = _ColdChainRecorder(sampler, record_sigma2=method != "sgld")
    start = time.perf_counter()
    sampler.fit(ds, steps_per_epoch=int(steps), epochs=1, verbose=0, shuffle=False, callbacks=[recorder, *callbacks])
    seconds = time.perf_counter() - start
    out = {
        "method": method,
        "beta": np.asarray(recorder.beta),
        "sigma2": np.asarray(recorder.sigma2),
        "seconds": seconds,
        "steps": int(steps),
        "record_every": record_every,
    }
    if method != "sgld":
        out.update(_swap_counts(sampler))
    return out


def _make_sampler(data, initial, temperatures, swap, variance_reduction, common):
    """The :class:`ReplicaExchangeSampler` of one method: one chain at ``temperatures[0]`` without
    swaps (SGLD, ``swap=None``), else one chain per temperature with ``swap`` and, with control
    variates, ``data`` as their reference data; ``common``: the remaining sampler arguments."""

    def builder():
        return build_model(initial)

    if swap is None:
        return ReplicaExchangeSampler(builder, num_chains=1, temperatures=float(temperatures[0]), swap=None, **common)
    sampler = ReplicaExchangeSampler(
        builder,
        num_chains=len(temperatures),
        temperatures=[float(t) for t in temperatures],
        swap=swap,
        variance_reduction=variance_reduction,
        **common,
    )
    if variance_reduction is not None:
        sampler.set_reference_data(data)
    return sampler


def _shuffled_batches(data, batch_size, seed):
    """The endless, shuffled mini-batches of ``data`` the chains read (incomplete batches dropped)."""
    n_data = int(len(data))
    return (
        tf.data.Dataset.from_tensor_slices(data)
        .repeat()
        .shuffle(min(n_data, 100000), seed=seed)
        .batch(batch_size, drop_remainder=True)
    )


class _ColdChainRecorder(keras.callbacks.Callback):
    """Records the cold chain's ``beta`` and, with ``record_sigma2``, the cold pair's ``sigma^2``
    estimate after every batch ``fit`` reports (every ``steps_per_execution`` steps)."""

    def __init__(self, sampler, record_sigma2):
        super().__init__()
        self.sampler = sampler
        self.weight = sampler.cold_model.trainable_weights[0]
        self.record_sigma2 = record_sigma2
        self.beta, self.sigma2 = [], []

    def on_train_batch_end(self, batch, logs=None):
        self.beta.append(float(self.weight.numpy()))
        if self.record_sigma2:
            self.sigma2.append(float(self.sampler.state.swap.sigma2.numpy()[0]))


def _swap_counts(sampler):
    """The swaps accepted and attempted (in total and per adjacent pair) and the ladder's final temperatures."""
    swap = sampler.state.swap
    return {
        "swaps": int(swap.swap_count.numpy().sum()),
        "attempts": int(swap.attempt_count.numpy().sum()),
        "pair_swaps": [int(v) for v in swap.swap_count.numpy()],
        "pair_attempts": [int(v) for v in swap.attempt_count.numpy()],
        "temperatures": [float(t) for t in sampler.state.ladder.temperature.numpy()],
    }
