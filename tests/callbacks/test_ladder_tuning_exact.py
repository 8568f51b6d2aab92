"""LadderTuner on the real sampler against exact answers (small versions; benchmarks/ladder_tuning.py
runs the large ones).

- The 4-dimensional standard Gaussian tempered on tau in [1, 100] (b in [0.01, 1]), exact energies,
  K = 8, starting from a linear ladder: the tuned ladder is geometric and its pairs reject alike,
  within the Monte Carlo error of the last round's rates; the measured rates of the tuned ladder
  are the exact ones; the barrier estimate is its exact expectation within its error, and that
  expectation is within 1.5% of the exact Lambda = Gamma(5/2) / (sqrt(pi) Gamma(2)) log 100 = 3.454.
- A 3-dimensional two-mode mixture with weights 0.3 / 0.7 at cold temperature 1, mini-batch energies
  (noise linear in the weights), K = 4: after tuning, the cold chain's left-mode weight is the exact
  one within 3 batch-means standard errors.

Monte Carlo errors are batch means over 20 consecutive blocks of the post-tuning phase (they
include the autocorrelation of swap decisions and of the cold chain's mode); a rate estimated from
``n`` attempts has the standard error of one estimated from ``n'`` scaled by ``sqrt(n' / n)``.
"""

import math

import _ladder_targets
import keras
import numpy as np
import pytest
from scipy import special

from tf_vrre.callbacks.ladder_tuner import LadderTuner
from tf_vrre.sgmcmc import ladder, tempered_gaussian

DIM, K, TUNE, FIXED, LR = 4, 8, 6000, 6000, 0.03
SGLD_BIAS = 0.004
"""SGLD at eta = 0.03 samples N(0, tau / (1 - eta / 2)) instead of N(0, tau): every energy is 1.5%
too large, which moves a pair's rejection on this ladder by 0.003 (computed from the Gamma law with
the energies scaled by 1.015); the measured rates may differ from the exact ones by that much more."""


class Counts(keras.callbacks.Callback):
    """Per-pair attempt and swap counters after every executed block of the fixed-ladder phase."""

    def __init__(self, after):
        super().__init__()
        self.after, self.rows = after, []

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.state.step.numpy()) >= self.after:
            self.rows.append(
                (self.model.state.swap.attempt_count.numpy().copy(), self.model.state.swap.swap_count.numpy().copy())
            )


def _rates_and_errors(rows, blocks=20):
    """Rejection rate per pair over the rows and its batch-means standard error (ratio estimator)."""
    a = np.diff(np.array([r[0] for r in rows], np.float64), axis=0)
    s = np.diff(np.array([r[1] for r in rows], np.float64), axis=0)
    m = len(a) // blocks
    ab, sb = a[: m * blocks].reshape(blocks, m, -1).sum(1), s[: m * blocks].reshape(blocks, m, -1).sum(1)
    rate = 1 - sb.sum(0) / ab.sum(0)
    se = np.sqrt((((ab - sb) - rate * ab) ** 2).sum(0) / (blocks * (blocks - 1))) / ab.mean(0)
    return rate, se, ab.sum(0)


@pytest.fixture(scope="module")
def gaussian_run():
    s, ds = _ladder_targets.gaussian_sampler(DIM, np.linspace(1.0, 100.0, K), LR, seed=0, steps_per_execution=100)
    tuner = LadderTuner(TUNE, first_round_steps=250, learning_rates=None)
    counts = Counts(TUNE)
    s.fit(ds, steps_per_epoch=1000, epochs=(TUNE + FIXED) // 1000, verbose=0, callbacks=[tuner, counts])
    return s, tuner, _rates_and_errors(counts.rows)


def test_tuned_gaussian_ladder_is_geometric_with_equal_rejection(gaussian_run):
    s, tuner, (measured, se_fixed, n_fixed) = gaussian_run
    temps = s.state.ladder.temperature.numpy().astype(np.float64)
    assert temps[0] == 1.0 and temps[-1] == 100.0
    last = tuner.record["rounds"][-1]
    assert last["end_step"] == TUNE and list(temps.astype(np.float32)) == list(np.float32(last["new_temperatures"]))
    se_last = se_fixed * np.sqrt(n_fixed / np.asarray(last["attempts"], np.float64))  # the last round's error
    exact = tempered_gaussian.gaussian_rejection(temps[:-1] / temps[1:], DIM)
    assert np.all(np.abs(exact - exact.mean()) < 3.5 * se_last), (exact, se_last)
    # the same in log-temperature steps: delta method with the exact slope dr / dlog(ratio)
    steps = np.log(temps[1:] / temps[:-1])
    slope = np.abs((tempered_gaussian.gaussian_rejection(np.exp(-(steps + 1e-5)), DIM) - exact) / 1e-5)
    assert np.all(np.abs(steps - math.log(100) / (K - 1)) < 3.5 * se_last / slope), (steps, se_last / slope)
    # the swaps the sampler makes on the tuned ladder are the exact Metropolis rates
    assert np.all(np.abs(measured - exact) < 3.5 * se_fixed + SGLD_BIAS), (measured, exact, se_fixed)


def test_gaussian_barrier_estimate(gaussian_run):
    s, tuner, (_, se_fixed, n_fixed) = gaussian_run
    last = tuner.record["rounds"][-1]
    t = np.asarray(last["temperatures"], np.float64)
    r_exact = tempered_gaussian.gaussian_rejection(t[:-1] / t[1:], DIM)
    expected = float(ladder.pair_barriers(r_exact).sum())
    se_last = se_fixed * np.sqrt(n_fixed / np.asarray(last["attempts"], np.float64))
    slope = np.exp(special.erfinv(r_exact) ** 2)  # d/dr (2 / sqrt(pi)) erfinv(r)
    se_barrier = float(np.sqrt(np.sum((slope * se_last) ** 2)))
    assert abs(last["barrier"] - expected) < 3 * se_barrier + SGLD_BIAS * slope.sum(), (last["barrier"], expected)
    exact = tempered_gaussian.gaussian_barrier(DIM, 0.01)
    assert exact == pytest.approx(math.gamma(2.5) / (math.sqrt(math.pi) * math.gamma(2.0)) * math.log(100))
    assert abs(expected - exact) < 0.015 * exact, (expected, exact)
    assert last["recommended_chains"] == ladder.recommended_chains(last["barrier"])


def test_tuning_does_not_bias_the_cold_chain_of_an_unequal_mixture():
    tune, fixed = 3000, 15000
    s, ds, exact = _ladder_targets.mixture_sampler([1.0, 3.33, 5.67, 8.0], 0.1, seed=0, steps_per_execution=25)
    trace = _ladder_targets.ColdTrace()
    tuner = LadderTuner(tune, first_round_steps=100, learning_rates=0.0)
    s.fit(ds, steps_per_epoch=1000, epochs=(tune + fixed) // 1000, verbose=0, callbacks=[tuner, trace])
    assert s.state.ladder.temperature.numpy()[0] == 1.0
    post = np.asarray(trace.values)[np.asarray(trace.steps) > tune]
    left, se = _ladder_targets.batch_means(post < 0)
    assert abs(left - exact) < 3 * se, (left, se, exact)
    assert np.sum(np.diff(post < 0) != 0) >= 50  # the error is an honest one: the cold chain switched modes
