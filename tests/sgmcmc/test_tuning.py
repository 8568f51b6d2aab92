"""The tuner's procedure on the host (tf_vrre.sgmcmc.tuning): rounds of doubling length counted from
where each started, the evidence a round needs, learning rates that follow the ladder (checked as
the sampler checks them), the bounds in float32, and F adapted to a swap-rate target."""

import math

import numpy as np
import pytest
from scipy import optimize, stats

import tf_vrre.sgmcmc.tuning as tuning


def test_round_ends_double_and_cover_the_phase():
    assert tuning.round_ends(100, 10) == [10, 30, 100]
    assert tuning.round_ends(70, 10) == [10, 30, 70]
    assert tuning.round_ends(9, 10) == [9]
    ends = tuning.round_ends(60_000, 32)
    lengths = np.diff([0] + ends)
    assert ends[-1] == 60_000 and np.all(lengths[1:-1] == 2 * lengths[:-2]) and lengths[-1] >= lengths[-2]
    for args, name in (((0, 4), "tuning_steps"), ((10, 0), "first_round_steps"), ((10.0, 4), "tuning_steps")):
        with pytest.raises(ValueError, match=name):
            tuning.round_ends(*args)


@pytest.mark.parametrize(
    "bounds,match",
    [
        ((2.0, 10.0), "contain the cold"),
        ((0.5, 1.0), "contain the cold"),
        ((5.0, 2.0), "0 < low < high"),
        ((0.0, 2.0), "0 < low < high"),
        ((1.0,), "pair"),
        ("ab", "pair"),
    ],
)
def test_bounds_checked(bounds, match):
    with pytest.raises(ValueError, match=match):
        tuning.check_bounds(bounds, 1.0)


def test_learning_rate_rules():
    t = np.array([1.0, 5.0, 25.0])
    assert np.allclose(tuning.ladder_learning_rates(t, 2e-6, 0.25), 2e-6 * (t / 1.0) ** 0.25)
    assert np.allclose(tuning.ladder_learning_rates(t, 2e-6, 0.0), 2e-6)
    assert np.allclose(tuning.ladder_learning_rates(t, 2e-6, lambda temps: 1e-3 * np.sqrt(temps)), 1e-3 * np.sqrt(t))
    with pytest.raises(ValueError, match="learning_rates must be > 0"):
        tuning.ladder_learning_rates(t, 1e-3, lambda temps: -temps)
    with pytest.raises(ValueError, match="3 entries"):
        tuning.ladder_learning_rates(t, 1e-3, lambda temps: [1.0])
    with pytest.raises(TypeError, match="learning_rates"):
        tuning.check_learning_rate_rule("fast")


def _noisy_acceptance(log_f, d, sigma):
    """E min(1, e^X) for X = d + eps - sigma^2 / F, eps ~ N(0, sigma^2) (delta = 1): the corrected
    rule's exact acceptance rate for a pair whose true energy term is d and whose noise is Gaussian."""
    m = d - sigma**2 / math.exp(log_f)
    return stats.norm.cdf(m / sigma) + math.exp(m + sigma**2 / 2) * stats.norm.cdf((-m - sigma**2) / sigma)


@pytest.mark.parametrize("target", [0.3, 0.55])
def test_correction_step_finds_the_f_of_the_target_rate(target):
    """The stochastic approximation of log F on simulated corrected-rule decisions (two per step,
    40,000 steps) ends at the F whose exact acceptance rate is the target: within 4 stationary
    standard deviations of the linearised recursion, sqrt(c a (1 - a) / (2 g)), with c the final
    gain per decision and g = da / dlog F at the solution."""
    d, sigma, steps, per_step = -0.5, 1.0, 40_000, 2
    rng = np.random.default_rng(7)
    noise = rng.normal(0.0, sigma, size=(steps, per_step))
    log_u = np.log(rng.uniform(size=(steps, per_step)))
    log_f = math.log(2.0)
    for t in range(steps):
        log_s = d + noise[t] - sigma**2 / math.exp(log_f)
        log_f = tuning.correction_step(log_f, target, per_step, int(np.sum(log_u[t] < log_s)), t + 1)
    exact = optimize.brentq(lambda v: _noisy_acceptance(v, d, sigma) - target, -5.0, 10.0)
    g = (_noisy_acceptance(exact + 1e-4, d, sigma) - _noisy_acceptance(exact - 1e-4, d, sigma)) / 2e-4
    c = tuning.CORRECTION_GAIN * (1 + steps / tuning.CORRECTION_GAIN_STEPS) ** -0.6
    sd = math.sqrt(c * target * (1 - target) / (2 * g))
    assert abs(log_f - exact) < 4 * sd, (math.exp(log_f), math.exp(exact), sd)


def test_correction_step_refuses_bad_input_and_stays_in_bounds():
    with pytest.raises(ValueError, match="target"):
        tuning.correction_step(0.0, 1.0, 4, 2, 0)
    with pytest.raises(ValueError, match="swaps <= attempts"):
        tuning.correction_step(0.0, 0.5, 4, 5, 0)
    lo, hi = (math.log(v) for v in tuning.CORRECTION_BOUNDS)
    assert tuning.correction_step(hi, 0.9, 1000, 0, 0) == hi and tuning.correction_step(lo, 0.1, 1000, 1000, 0) == lo


def test_min_round_attempts_is_the_fewest_that_can_differ_from_neutral():
    """MIN_ROUND_ATTEMPTS is the smallest n at which the most extreme outcome of n attempts (all
    accepted, or all rejected) differs from the neutral rejection 0.5 in a two-sided exact binomial
    test at EVIDENCE_LEVEL; below it no outcome does."""
    p = [stats.binomtest(0, n, 0.5).pvalue for n in range(1, 12)]
    fewest = 1 + next(i for i, v in enumerate(p) if v < tuning.EVIDENCE_LEVEL)
    assert tuning.MIN_ROUND_ATTEMPTS == fewest == 6
    assert tuning.too_few_attempts([6, 40, 6]) is None
    assert tuning.too_few_attempts([6, 5, 0]) == "pair 2 was attempted 0 times (at least 6 per pair are needed)"


def test_round_end_counts_from_where_the_round_started():
    assert [tuning.round_end(0, 0, 200, 16), tuning.round_end(20, 1, 200, 16), tuning.round_end(60, 2, 200, 16)] == [
        16,
        52,
        200,  # 60 + 64 = 124, and the next round (128) would not fit: the last round runs to 200
    ]
    assert tuning.round_end(16, 1, 200, 16) == 48 and tuning.round_end(199, 5, 200, 16) == 200
    for args, name in (((200, 0, 200, 16), "start"), ((-1, 0, 200, 16), "start"), ((0, -1, 200, 16), "index")):
        with pytest.raises(ValueError, match=name):
            tuning.round_end(*args)


def test_bounds_compared_in_float32_and_representable():
    cold = float(np.float32(1e-6))  # 9.99999997e-07, what the sampler holds for 1e-6
    assert cold < 1e-6 and tuning.check_bounds((1e-6, 1.0), cold) == (1e-6, 1.0)
    for bounds in ((1e-6, 1e39), (1e-45, 1.0), (1.0, 1.00000001)):  # inf / 0 / equal in float32
        with pytest.raises(ValueError, match=r"bounds must be temperatures with 0 < low < high, finite and distinct"):
            tuning.check_bounds(bounds, None)


def test_learning_rates_checked_in_float32_over_the_widest_ladder():
    t = np.array([1.0, 2.0, 4.0])
    with pytest.raises(
        ValueError, match=r"the rule gave \[1e-36, 9\.76[0-9]*e-40, 9\.5[0-9]*e-43\] for the temperatures"
    ):
        tuning.ladder_learning_rates(t, 1e-36, -10.0)  # > 0 in float64, below float32's normal range
    with pytest.raises(ValueError, match=r"learning_rates: the rule raised ZeroDivisionError"):
        tuning.ladder_learning_rates(t, 1e-3, lambda temps: 1 / 0)
    tuning.check_learning_rates_over_range(2.0, t, 1e-3, 4.0)  # 1.6e-2 at the top: fine
    with pytest.raises(ValueError, match=r"for the temperatures \[1\.0, 31\.6[0-9]*, 1000\.0\]"):
        tuning.check_learning_rates_over_range(15.0, t, 1e-3, 1000.0)  # fine on t, inf at the bound
