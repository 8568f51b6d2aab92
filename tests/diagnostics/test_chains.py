"""ESS and R-hat (TFP) against cases with a known answer: AR(1) chains, ESS = N (1 - rho) / (1 + rho);
iid chains with shifted means, R-hat^2 from the variance decomposition.  Tolerances are the
spread of the estimator over replicate chains."""

import numpy as np
import pytest

from tf_vrre import diagnostics

REPLICATES = 48


def ar1(rng, rho, chains, n):
    """Stationary AR(1) chains with unit variance: x_t = rho x_{t-1} + sqrt(1 - rho^2) e_t."""
    x = np.empty((chains, n))
    x[:, 0] = rng.normal(size=chains)
    e = rng.normal(size=(chains, n)) * np.sqrt(1 - rho**2)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return x


def exact_ess(rho, n):
    """Variance-matching ESS of the mean of n draws, N / (1 + 2 sum_k (1 - k/N) rho^k)
    (-> N (1 - rho) / (1 + rho) for large N)."""
    k = np.arange(1, n)
    return n / (1 + 2 * np.sum((1 - k / n) * rho**k))


@pytest.mark.parametrize("rho", [0.8, -0.4])
def test_single_chain_ess_of_ar1(rho):
    n = 3000
    x = ar1(np.random.default_rng(1), rho, REPLICATES, n)
    est = np.array([diagnostics.effective_sample_size(xi, split=False) for xi in x])
    mean, se = est.mean(), est.std(ddof=1) / np.sqrt(REPLICATES)
    exact = exact_ess(rho, n)
    assert abs(exact - n * (1 - rho) / (1 + rho)) < 0.01 * exact
    assert abs(mean - exact) <= 4 * se, (rho, mean, exact, se)
    assert se < 0.03 * exact  # the check has power: a 12% error would fail


def test_cross_chain_ess_sums_over_split_chains():
    rho, n, chains = 0.8, 2000, 4
    x = ar1(np.random.default_rng(2), rho, REPLICATES * chains, n).reshape(REPLICATES, chains, n)
    est = np.array([diagnostics.effective_sample_size(g) for g in x])  # 4 chains split in halves: 8 x 1000 draws
    mean, se = est.mean(), est.std(ddof=1) / np.sqrt(REPLICATES)
    exact = 2 * chains * exact_ess(rho, n // 2)
    assert abs(mean - exact) <= 4 * se, (mean, exact, se)


def test_rhat_of_shifted_iid_chains():
    """m (split) chains of n iid N(mu_c, 1): E W = 1, E B/n = var_c(mu_c) + 1/n, so
    V -> (m+1)/m ((n-1)/n + s2 + 1/n) - (n-1)/(m n), R-hat = sqrt(V)."""
    rng = np.random.default_rng(3)
    n, mus = 1000, np.array([0.0, 0.0, 0.5, -0.5])
    m = 2 * mus.size  # split halves share their chain's mean
    s2 = np.var(np.repeat(mus, 2), ddof=1)
    half = n // 2
    expected = np.sqrt((m + 1) / m * ((half - 1) / half + s2 + 1 / half) - (half - 1) / (m * half))
    est = np.array(
        [
            diagnostics.potential_scale_reduction(mus[:, None] + rng.normal(size=(mus.size, n)))
            for _ in range(REPLICATES)
        ]
    )
    mean, se = est.mean(), est.std(ddof=1) / np.sqrt(REPLICATES)
    assert abs(mean - expected) <= 4 * se, (mean, expected, se)
    assert expected > 1.05
    same = np.array([diagnostics.potential_scale_reduction(rng.normal(size=(4, n))) for _ in range(REPLICATES)])
    assert abs(same.mean() - 1.0) < 0.01


def test_one_chain_uses_split_halves_and_sees_drift():
    rng = np.random.default_rng(4)
    flat = rng.normal(size=2000)
    drift = flat + np.linspace(0, 3, 2000)
    assert diagnostics.potential_scale_reduction(flat) < 1.01
    assert diagnostics.potential_scale_reduction(drift) > 1.2
    with pytest.raises(ValueError, match="R-hat needs >= 2 chains"):
        diagnostics.potential_scale_reduction(flat, split=False)


def test_two_stuck_chains_have_tiny_ess_and_huge_rhat():
    rng = np.random.default_rng(5)
    x = np.stack([-5 + 0.1 * rng.normal(size=1000), 25 + 0.1 * rng.normal(size=1000)])
    s = diagnostics.chain_summary(x)
    assert s["rhat"] > 10 and s["ess"] < 10 and s["chains"] == 2 and s["draws"] == 1000


def test_chain_summary_fields_and_degenerate_cases():
    rng = np.random.default_rng(6)
    s = diagnostics.chain_summary(rng.normal(size=(2, 400)))
    assert s["mcse"] == pytest.approx(s["sd"] / np.sqrt(s["ess"]))
    assert not s["constant"] and abs(s["mean"]) < 0.2
    one = diagnostics.chain_summary(np.ones(50))  # one constant chain: no ESS / R-hat, not NaN
    assert one == {
        "chains": 1,
        "draws": 50,
        "split": True,
        "mean": 1.0,
        "sd": 0.0,
        "ess": None,
        "rhat": None,
        "mcse": None,
        "constant": True,
    }
    const = diagnostics.chain_summary(np.ones((2, 50)))
    assert const["constant"] and const["ess"] is None and const["rhat"] is None
    stuck = diagnostics.chain_summary(np.stack([np.zeros(50), np.ones(50)]))  # each chain constant: R-hat infinite
    assert stuck["rhat"] is None and not stuck["constant"]


@pytest.mark.parametrize(
    "values,match",
    [
        (np.array([1.0, np.nan, 2.0, 3.0]), "non-finite"),
        (np.ones(()), "must be"),
        (np.arange(6.0), "at least 4 draws"),
    ],
)
def test_bad_input_raises(values, match):
    with pytest.raises(ValueError, match=match):
        diagnostics.effective_sample_size(values)


def test_split_chains_layout():
    x = np.arange(7.0)[None]
    np.testing.assert_array_equal(diagnostics.split_chains(x), [[1, 2, 3], [4, 5, 6]])
    assert diagnostics.split_chains(x, split=False).shape == (1, 7)
