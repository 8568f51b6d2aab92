"""The paper's 1-D Gaussian mixture where replica exchange is needed (N = 1e3, tau_2 = 3000).

At tau_1 = 10 the barrier at beta = 10 is ~375 nats for the cold chain and ~1.3 for the hot
one, so the cold chain can only reach the second mode through swaps.  Shortened runs (1e4
steps); the CLI (`tf-vrre mixture`) runs the full one.  Whether the cold chain samples the
right posterior is checked against the exact mode weights (quadrature, ``_mixture_exact``) on
a smaller target whose cold chain changes mode often enough for a few seeds to measure its
weight to a few percent."""

import _mixture_exact
import numpy as np
import pytest

from tf_vrre.workflows.gaussian_mixture import target

STEPS = 10000


@pytest.fixture(scope="module")
def runs():
    data = target.make_data(1000, seed=0)
    kw = dict(
        learning_rate=1e-4,
        batch_size=100,
        period=4,
        temperatures=(10.0, 3000.0),
        correction=2.0,
        seed=3,
        record_every=20,
    )
    steps = {"sgld": STEPS // 2, "resgld": STEPS, "vr-resgld": STEPS}  # SGLD cannot cross a 375-nat barrier
    return data, {m: target.run(m, data, steps=steps[m], **kw) for m in target.METHODS}


# The weight check: N = 100 and prior sd 3.5, so the prior puts 24.5 nats between the modes and
# the left one's exact weight at tau = 10 is 0.909; the cold chain (barrier ~35 nats at tau = 10)
# changes mode only through swaps with the hot chain (tau = 1000, barrier ~0.35).
WEIGHTS_TARGET = target.Mixture(prior_sd=3.5)
WEIGHT_SEEDS, WEIGHT_STEPS, BURN_IN = (0, 1, 2, 3), 3000, 0.1


@pytest.fixture(scope="module")
def weight_runs():
    data = target.make_data(100, seed=0, target=WEIGHTS_TARGET)
    kw = dict(learning_rate=3e-2, batch_size=50, period=4, temperatures=(10.0, 1000.0), correction=2.0)
    traces = [
        target.run("vr-resgld", data, steps=WEIGHT_STEPS, seed=seed, record_every=10, target=WEIGHTS_TARGET, **kw)[
            "beta"
        ]
        for seed in WEIGHT_SEEDS
    ]
    return data, [t[int(len(t) * BURN_IN) :] for t in traces]


@pytest.mark.parametrize("size, prior_sd, temperature", [(1000, 10.0, 10.0), (100, 3.5, 10.0)])
def test_exact_mode_weights(size, prior_sd, temperature):
    """The library's grid answers (mode weights, barrier) equal an independent quadrature
    (``_mixture_exact``): for the study's target and the weight check's."""
    mixture = target.Mixture(prior_sd=prior_sd)
    data = target.make_data(size, seed=0, target=mixture)
    left, right = target.mode_weights(data, temperature, target=mixture)
    exact_left, exact_right = _mixture_exact.mode_weights(data, temperature, prior_sd=prior_sd)
    assert left == pytest.approx(exact_left, abs=1e-6) and right == pytest.approx(exact_right, abs=1e-6)
    barrier = target.barrier(data, target=mixture)
    assert barrier == pytest.approx(_mixture_exact.barrier(data, prior_sd=prior_sd), rel=1e-6)
    if (size, prior_sd) == (1000, 10.0):
        assert 3700 < barrier < 3900  # ~3.8e3 nats at N = 1e3 (the algorithm notes)


def test_sgld_stays_in_its_mode(runs):
    _, r = runs
    assert np.all(r["sgld"]["beta"] > 10.0)


def test_vr_cold_chain_visits_both_modes(runs):
    _, r = runs
    changes = target.mode_changes(r["vr-resgld"]["beta"], 10.0)
    assert changes >= 4, changes


def _left_weight_and_se(traces, split, batches=10):
    """The mean over chain seeds of each trace's time below ``split`` and its standard error: the
    seeds' spread over sqrt(seeds), or the seeds' batch means (``batches`` blocks each) where
    that is larger (with 4 seeds the spread alone may come out small by chance; batch means
    alone understate the error of a trace with a few dozen mode changes)."""
    left = np.array([np.mean(t < split) for t in traces])
    blocks = [(t[: len(t) - len(t) % batches] < split).reshape(batches, -1).mean(1) for t in traces]
    batch_se = np.sqrt(sum(b.var(ddof=1) / batches for b in blocks)) / len(traces)
    return left.mean(), max(left.std(ddof=1) / np.sqrt(left.size), batch_se), left


def test_vr_cold_chain_samples_the_exact_mode_weights(weight_runs):
    """The cold chain's time in the left mode, averaged over independent chain seeds, equals the
    exact weight (quadrature) within 4 standard errors, which are small enough to tell it from 1/2
    (the prior ignored by the swaps, or a cold chain as hot as the hot one)."""
    data, traces = weight_runs
    exact, _ = _mixture_exact.mode_weights(data, 10.0, prior_sd=WEIGHTS_TARGET.prior_sd)
    mean, se, left = _left_weight_and_se(traces, WEIGHTS_TARGET.split)
    assert min(target.mode_changes(t, WEIGHTS_TARGET.split) for t in traces) >= 4, left  # every seed visits both
    assert 4 * se < exact - 0.5, (left, se)
    assert abs(mean - exact) <= 4 * se, (mean, se, exact, left)


def test_variance_reduction_and_more_swaps(runs):
    _, r = runs
    vr, re = r["vr-resgld"], r["resgld"]
    s_vr, s_re = vr["sigma2"][len(vr["sigma2"]) // 10 :].mean(), re["sigma2"][len(re["sigma2"]) // 10 :].mean()
    assert s_re / s_vr >= 10.0, (s_re, s_vr)
    assert vr["swaps"] > re["swaps"], (vr["swaps"], re["swaps"])


def test_variance_reduction_shrinks_when_chains_move_far_between_refreshes(runs):
    """The paper's bound grows with m^2 eta / n: at eta = 1e-3, m = 40 the control variate no
    longer helps (the reference simulation even found it slightly worse)."""
    data, r = runs

    def mean_sigma2(res):
        s = res["sigma2"]
        return s[len(s) // 10 :].mean()

    base = mean_sigma2(r["resgld"]) / mean_sigma2(r["vr-resgld"])
    far = {
        m: target.run(
            m,
            data,
            steps=5000,
            learning_rate=1e-3,
            batch_size=100,
            period=40,
            temperatures=(10.0, 3000.0),
            correction=2.0,
            seed=3,
            record_every=20,
        )
        for m in ("resgld", "vr-resgld")
    }
    factor = mean_sigma2(far["resgld"]) / mean_sigma2(far["vr-resgld"])
    assert factor < 2.0 and factor < base / 10, (factor, base)
