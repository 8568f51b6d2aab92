"""The paper's 1-D Gaussian mixture where replica exchange is needed (N = 1e3, tau_2 = 3000).

At tau_1 = 10 the barrier at beta = 10 is ~375 nats for the cold chain and ~1.3 for the hot
one, so the cold chain can only reach the second mode through swaps.  Shortened run (2e4
steps); the CLI (`tf-vrre mixture`) runs the full one."""

import numpy as np
import pytest

from tf_vrre.workflows.gaussian_mixture import target

STEPS = 20000


@pytest.fixture(scope="module")
def runs():
    data = target.make_data(1000, seed=0)
    kw = dict(
        steps=STEPS,
        learning_rate=1e-4,
        batch_size=100,
        period=4,
        temperatures=(10.0, 3000.0),
        correction=2.0,
        seed=3,
        record_every=20,
    )
    return data, {m: target.run(m, data, **kw) for m in target.METHODS}


def test_exact_mode_weights():
    data = target.make_data(1000, seed=0)
    left, right = target.mode_weights(data, 10.0)
    assert left / right == pytest.approx(np.exp(3.0 / 10.0), rel=0.02)
    u = target.energy(np.linspace(-20, 40, 6001), data)
    barrier = u[np.argmin(np.abs(np.linspace(-20, 40, 6001) - 10))] - u.min()
    assert 3000 < barrier < 4500  # ~3.8e3 nats at N = 1e3


def test_sgld_stays_in_its_mode(runs):
    _, r = runs
    assert np.all(r["sgld"]["beta"] > 10.0)


def test_vr_cold_chain_visits_both_modes(runs):
    _, r = runs
    left = np.mean(r["vr-resgld"]["beta"] < 10.0)
    changes = target.mode_changes(r["vr-resgld"]["beta"], 10.0)
    assert changes >= 4 and 0.02 < left < 0.98, (changes, left)


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
