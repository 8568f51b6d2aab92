"""The problems of ``regimes.py``: three families with exact answers, each at several data sizes N
and cold temperatures tau.

- ``mixture``: the paper's Gaussian mixture (``tf_vrre.workflows.gaussian_mixture``), beta in R,
  two modes (-5 and 25) that differ only through the prior (3 nats) and predict the same: the
  answer is the weight of the left mode (exact, on a grid).  Chains start in the right mode.
- ``sine``: regression ``y = sin(theta x) + N(0, 0.5^2)`` with inputs on the integers 1, 2, 3 and a
  prior ``theta ~ N(0, 4^2)``: the likelihood is exactly periodic in theta (``sin((theta + 2 pi) x) =
  sin(theta x)`` on the integers), so the aliases ``theta = 1 + 2 pi k`` are modes whose weights only
  the prior sets (0.60, 0.26, 0.12, ... at tau = 1), and at half-integer inputs neighbouring aliases
  predict opposite signs.  The answer is the posterior predictive at the held-out inputs 0.5, 1.5,
  2.5 and 3.5 (exact, on a grid); chains start at the alias k = 1 (theta = 7.28).
- ``linear``: Bayesian linear regression in 4 dimensions (Gaussian prior and likelihood): one
  Gaussian mode, exact; the answer is the posterior of ``f(x) = x^T w`` at 64 held-out inputs.

Every problem uses batches of ``n = 100``, SGHMC with momentum 0.9 and a cold chain's step
``eta = 0.01 / H`` with ``H`` the energy's curvature at the posterior mode (the same for every
method, so ``eta`` scales like ``1 / N``).  The ladders run from the cold temperature to ``hot``:
half the energy barrier between the modes for the two multimodal families (their hottest chain
then crosses it), ten times the cold temperature for the linear one (it has no barrier).
"""

import dataclasses
import functools
import math

import keras
import numpy as np
import tensorflow as tf
from scipy import stats

import tf_vrre
from tf_vrre.workflows.gaussian_mixture import target as mixture_target

BATCH = 100
STEP_CURVATURE = 0.01
"""The cold chain's ``eta H``: ``eta = 0.01 / H``, with ``H`` the curvature at the mode."""
SINE = {"omega": 1.0, "noise": 0.5, "prior_sd": 4.0, "inputs": (1, 2, 3), "held_out": (0.5, 1.5, 2.5, 3.5)}
LINEAR = {"weights": (1.0, -0.5, 0.25, 2.0), "noise": 1.0, "weight_decay": 1.0, "held_out": 64}


@keras.saving.register_keras_serializable(package="regimes")
class Frequency(keras.layers.Layer):
    """The sine family's model: ``sin(theta x)`` with one weight theta."""

    def __init__(self, initial=0.0, **kwargs):
        super().__init__(**kwargs)
        self.initial = float(initial)
        self.theta = self.add_weight(name="theta", shape=(), initializer=keras.initializers.Constant(self.initial))

    def call(self, x):
        return tf.sin(self.theta * x[:, :1])

    def get_config(self):
        return {**super().get_config(), "initial": self.initial}


@keras.saving.register_keras_serializable(package="regimes")
class GaussianNLL:
    """``tf_vrre.gaussian_nll`` at a fixed noise ``scale`` (a callable with a ``get_config``)."""

    def __init__(self, scale):
        self.scale = float(scale)

    def __call__(self, x, y, y_pred):
        return tf_vrre.gaussian_nll(x, y, y_pred, scale=self.scale)

    def get_config(self):
        return {"scale": self.scale}


def _grid_curvature(energy, at):
    h = 1e-4 * max(1.0, abs(at))
    u = energy(np.array([at - h, at, at + h]))
    return float((u[0] - 2 * u[1] + u[2]) / h**2)


@dataclasses.dataclass(frozen=True)
class Problem:
    """One point of the map: a family at a data size and a cold temperature."""

    family: str
    data_size: int
    temperature: float

    @property
    def name(self):
        return f"{self.family} N={self.data_size:.0e} tau={self.temperature:g}".replace("e+0", "e")

    @property
    def key(self):
        return f"{self.family}-N{self.data_size}-t{self.temperature:g}"

    @functools.cached_property
    def _parts(self):
        return {"mixture": _mixture, "sine": _sine, "linear": _linear}[self.family](self.data_size, self.temperature)

    def __getattr__(self, name):  # the family's parts: data, model_fn, nll, weight_decay, exact, ...
        if name.startswith("__") or name == "_parts":
            raise AttributeError(name)
        return self._parts[name]

    @property
    def learning_rate(self):
        return STEP_CURVATURE / self.curvature

    @property
    def period(self):
        """The control variates' refresh period: 0.4 epochs (the mixture study's m = 4 at N = 1e3)."""
        return max(1, round(0.4 * self.data_size / BATCH))

    def ladder(self, chains):
        return [float(t) for t in np.geomspace(self.temperature, self.hot, chains)]


# ---- the mixture ---------------------------------------------------------------------------------
def _mixture(N, tau):
    x = mixture_target.make_data(N, seed=0)
    grid = mixture_target.default_grid(x, tau)
    u = mixture_target.energy(grid, x)
    left, _ = mixture_target.mode_weights(x, tau, grid=grid, u=u)
    barrier = mixture_target.barrier(x, grid=grid, u=u)
    mode = float(grid[np.argmin(u)])
    curvature = _grid_curvature(lambda b: mixture_target.energy(b, x), mode)

    def distance(params):
        """The error of the left mode's weight (and the KS distance to the exact posterior)."""
        b = np.asarray(params).reshape(-1)
        _, cdf = mixture_target.exact_cdf(x, tau, grid=grid, u=u)
        return {
            "mode_weight_error": abs(float(np.mean(b < mixture_target.PHI / 2)) - left),
            "ks": mixture_target.ks_distance(b, grid, cdf),
        }

    return {
        "data": (x,),
        "model_fn": mixture_target.build_default_model,
        "nll": mixture_target.nll,
        "weight_decay": mixture_target.weight_decay(),
        "distance": distance,
        "headline": "mode_weight_error",
        "exact": {"left_mode_weight": float(left), "barrier_nats": float(barrier)},
        "curvature": curvature,
        "hot": barrier / 2.0,
        "probe": x[:1],
        "dimension": 1,
    }


# ---- the aliased sine ----------------------------------------------------------------------------
@keras.saving.register_keras_serializable(package="regimes")
def sine_model():
    inp = keras.Input((1,))
    return keras.Model(inp, Frequency(SINE["omega"] + 2 * math.pi, name="frequency")(inp))


def _sine_energy(theta, x, y):
    """``U(theta)`` on an array of theta, from each input value's count, sum of y and sum of y^2."""
    theta = np.asarray(theta, np.float64).reshape(-1)
    out = theta**2 / (2 * SINE["prior_sd"] ** 2)
    for v in np.unique(x):
        yv = y[x == v]
        f = np.sin(theta * v)
        out = out + (np.sum(yv**2) - 2 * f * np.sum(yv) + yv.size * f**2) / (2 * SINE["noise"] ** 2)
    return out


def _sine(N, tau):
    rng = np.random.default_rng(0)
    xs = rng.choice(np.array(SINE["inputs"], np.float64), N)
    ys = np.sin(SINE["omega"] * xs) + SINE["noise"] * rng.normal(size=N)
    energy = functools.partial(_sine_energy, x=xs, y=ys)
    coarse = np.linspace(-15.0, 15.0, 12001)
    u0 = energy(coarse)
    keep = (u0 - u0.min()) / tau < 60.0  # refine where the tempered density is not negligible
    fine = [coarse]
    for run in np.split(np.flatnonzero(keep), np.flatnonzero(np.diff(np.flatnonzero(keep)) > 1) + 1):
        lo, hi = coarse[max(run[0] - 1, 0)], coarse[min(run[-1] + 1, coarse.size - 1)]
        fine.append(np.linspace(lo, hi, 4001))
    grid = np.unique(np.concatenate(fine))
    u = energy(grid)
    w = np.exp(-(u - u.min()) / tau) * np.gradient(grid)
    w /= w.sum()
    mode = float(grid[np.argmin(u)])
    aliases = mode + 2 * math.pi * np.arange(-3, 4)
    between = (coarse > aliases[3] - 2 * math.pi) & (coarse < aliases[3] + 2 * math.pi)
    barrier = float(u0[between].max() - u0.min())
    held = np.array(SINE["held_out"], np.float64)
    y_grid = np.linspace(-4.0, 4.0, 1601)
    s = SINE["noise"]

    edges = np.linspace(-1.0, 1.0, 801)  # sin in [-1, 1]: f binned finely against the noise sd 0.5
    kernel = stats.norm.pdf(y_grid[None, :], (0.5 * (edges[1:] + edges[:-1]))[:, None], s)

    def predictive_density(f_values, weights):  # [points, y]: sum_j w_j N(y; f_j, s^2)
        return np.stack([np.histogram(f, bins=edges, weights=weights)[0] @ kernel for f in f_values])

    exact_f = np.sin(np.outer(held, grid))  # [points, grid]
    # the exact predictive density, on the grid points that carry weight
    heavy = w > 1e-12 * w.max()
    exact_pred = predictive_density(exact_f[:, heavy], w[heavy] / w[heavy].sum())
    nearest = lambda t: np.argmin(np.abs(np.asarray(t)[:, None] - aliases[None, :]), 1)  # noqa: E731
    exact_modes = np.bincount(nearest(grid), weights=w, minlength=aliases.size)

    def distance(params):
        """TV of the posterior predictive of y at the held-out inputs (mean over inputs), and the TV
        of the aliases' weights."""
        t = np.asarray(params, np.float64).reshape(-1)
        pred = predictive_density(np.sin(np.outer(held, t)), np.full(t.size, 1.0 / t.size))
        dy = y_grid[1] - y_grid[0]
        tv = 0.5 * np.abs(pred - exact_pred).sum(1) * dy
        modes = np.bincount(nearest(t), minlength=aliases.size) / t.size
        return {"predictive_tv": float(tv.mean()), "mode_tv": float(0.5 * np.abs(modes - exact_modes).sum())}

    return {
        "data": (xs.astype(np.float32)[:, None], ys.astype(np.float32)[:, None]),
        "model_fn": sine_model,
        "nll": GaussianNLL(SINE["noise"]),
        "weight_decay": 1.0 / SINE["prior_sd"] ** 2,
        "distance": distance,
        "headline": "predictive_tv",
        "exact": {"alias_weights": exact_modes[exact_modes > 1e-4].round(4).tolist(), "barrier_nats": barrier},
        "curvature": _grid_curvature(energy, mode),
        "hot": barrier / 2.0,
        "probe": held.astype(np.float32)[:, None],
        "dimension": 1,
    }


# ---- Bayesian linear regression ------------------------------------------------------------------
@keras.saving.register_keras_serializable(package="regimes")
def linear_model():
    inp = keras.Input((len(LINEAR["weights"]),))
    return keras.Model(inp, keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")(inp))


def _linear(N, tau):
    rng = np.random.default_rng(0)
    d, s, wd = len(LINEAR["weights"]), LINEAR["noise"], LINEAR["weight_decay"]
    x = rng.normal(size=(N, d))
    y = x @ np.array(LINEAR["weights"]) + s * rng.normal(size=N)
    held = np.random.default_rng(1).normal(size=(LINEAR["held_out"], d))
    precision = x.T @ x / s**2 + wd * np.eye(d)
    cov = np.linalg.inv(precision)
    mean = cov @ x.T @ y / s**2
    f_mean, f_sd = held @ mean, np.sqrt(tau * np.einsum("ij,jk,ik->i", held, cov, held))
    quantiles = stats.norm.ppf((np.arange(2000) + 0.5) / 2000)

    def distance(params):
        """W1 of the posterior of f(x) at each held-out input, in exact posterior sds (mean)."""
        w = np.asarray(params, np.float64).reshape(len(params), -1)
        f = w @ held.T  # [S, points]
        out = [stats.wasserstein_distance(f[:, i], f_mean[i] + f_sd[i] * quantiles) / f_sd[i] for i in range(len(held))]
        return {"wasserstein_1": float(np.mean(out))}

    return {
        "data": (x.astype(np.float32), y.astype(np.float32)[:, None]),
        "model_fn": linear_model,
        "nll": GaussianNLL(s),
        "weight_decay": wd,
        "distance": distance,
        "headline": "wasserstein_1",
        "exact": {"posterior_sd_of_f": float(np.median(f_sd))},
        "curvature": float(np.linalg.eigvalsh(precision).max()),
        "hot": 10.0 * tau,
        "probe": held.astype(np.float32),
        "dimension": d,
    }


HEADLINES = {
    "mode_weight_error": "error of the left mode's weight",
    "predictive_tv": "TV of the posterior predictive at held-out inputs",
    "wasserstein_1": "W1 of the posterior of f(x), in posterior sds",
}

AXES = {
    "mixture": {"anchor": (1000, 10.0), "sizes": (1000, 10_000, 100_000), "temperatures": (10.0, 1.0, 0.1)},
    "sine": {"anchor": (1000, 1.0), "sizes": (1000, 10_000, 100_000), "temperatures": (1.0, 0.1, 0.01)},
    "linear": {"anchor": (1000, 1.0), "sizes": (1000, 10_000, 100_000), "temperatures": (1.0, 0.1, 0.01)},
}
"""Each family is swept along N at its anchor temperature and along tau at its anchor N (the
mixture's anchor is the paper's study, tau = 10; the others' the Bayes posterior, tau = 1)."""


def problems(families=tuple(AXES)):
    """The map's problems, in order (each family's N sweep, then its temperature sweep)."""
    out = []
    for fam in families:
        a = AXES[fam]
        out += [Problem(fam, n, a["anchor"][1]) for n in a["sizes"]]
        out += [Problem(fam, a["anchor"][0], t) for t in a["temperatures"] if t != a["anchor"][1]]
    return out
