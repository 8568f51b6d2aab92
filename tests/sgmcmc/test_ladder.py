"""Ladder numerics (tf_vrre.sgmcmc.ladder) against exact answers: the tempered Gaussian's rejection
and barrier, the normal-energy barrier inversion, the equal-share ladder's fixed point, the tuning
procedure under Monte Carlo noise, NRPT's round-trip rate against a simulated index process."""

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

import tf_vrre.sgmcmc.ladder as ladder
import tf_vrre.sgmcmc.tempered_gaussian as tempered_gaussian
import tf_vrre.sgmcmc.tuning as tuning
from tf_vrre.diagnostics.replicas import round_trips, slot_paths


@pytest.mark.parametrize("ratio,dim", [(0.5, 1), (0.3, 4), (0.7, 10), (0.1, 2)])
def test_gaussian_rejection_is_the_metropolis_rate(ratio, dim):
    """Exact energies drawn from the Gamma law, the Metropolis acceptance averaged: within 4
    binomial-type standard errors (the sample standard deviation of min(1, e^W) / sqrt(n))."""
    rng = np.random.default_rng(dim)
    n = 400_000
    g_cold, g_hot = rng.gamma(dim / 2, size=n), rng.gamma(dim / 2, size=n)
    w = (1 - ratio) * g_cold - (1 / ratio - 1) * g_hot  # (b_c - b_h)(U_c - U_h) with b_c = 1
    rejection = 1 - np.minimum(1, np.exp(w))
    se = rejection.std() / math.sqrt(n)
    assert abs(rejection.mean() - float(tempered_gaussian.gaussian_rejection(ratio, dim))) < 4 * se


def test_gaussian_rejection_by_quadrature():
    """The incomplete beta law against a direct 1-D integral of E min(1, e^W) (d = 3, ratio 0.4)."""
    k, rho = 1.5, 0.4

    def accept_given(g_hot):
        c, a = (1 / rho - 1) * g_hot, 1 - rho
        t = c / a
        return stats.gamma.sf(t, k) + math.exp(-c) * (1 - a) ** (-k) * stats.gamma.cdf(t * (1 - a), k)

    accept = integrate.quad(lambda g: stats.gamma.pdf(g, k) * accept_given(g), 0, np.inf, limit=200)[0]
    assert float(tempered_gaussian.gaussian_rejection(rho, 3)) == pytest.approx(1 - accept, abs=1e-9)


@pytest.mark.parametrize("dim", [1, 3, 10])
def test_gaussian_local_barrier_is_half_the_mean_energy_difference(dim):
    rng = np.random.default_rng(0)
    beta, n = 0.25, 400_000
    u, v = rng.gamma(dim / 2, size=n) / beta, rng.gamma(dim / 2, size=n) / beta
    d = np.abs(u - v) / 2
    assert abs(d.mean() - float(tempered_gaussian.gaussian_local_barrier(beta, dim))) < 4 * d.std() / math.sqrt(n)


def test_gaussian_barrier_limits_and_fine_ladders():
    # large d: the normal limit sqrt(d / (2 pi)) log(1 / b0)
    assert tempered_gaussian.gaussian_barrier(10_000, 0.01) == pytest.approx(
        math.sqrt(1e4 / (2 * math.pi)) * math.log(100), rel=1e-4
    )
    # the sum of the pairs' barriers of a fine geometric ladder tends to the integral of lambda
    for dim in (2, 10):
        exact = tempered_gaussian.gaussian_barrier(dim, 0.01)
        estimates = []
        for K in (4, 8, 64):
            ratio = 0.01 ** (1 / (K - 1))
            r = np.full(K - 1, float(tempered_gaussian.gaussian_rejection(ratio, dim)))
            estimates.append((ladder.pair_barriers(r).sum(), r.sum()))
        assert estimates[-1][0] == pytest.approx(exact, rel=2e-3)
        # on coarse ladders the erfinv barrier is much closer than the plain sum of rejections
        for kofke, plain in estimates[:2]:
            assert abs(kofke - exact) < 0.5 * abs(plain - exact), (dim, kofke, plain, exact)


def test_pair_barrier_inverts_the_normal_energy_rejection():
    """Normal energies of constant sd sigma: acceptance erfc(sigma db / 2) (checked by Monte Carlo),
    and the pair barrier sigma db / sqrt(pi) recovered exactly from it."""
    rng = np.random.default_rng(1)
    n = 400_000
    for sigma, db in ((3.0, 0.2), (10.0, 0.3), (1.0, 0.05)):
        u_cold = rng.normal(0.0, sigma, n)
        u_hot = rng.normal(sigma**2 * db, sigma, n)  # d mean / d b = -Var U
        accept = np.minimum(1, np.exp(db * (u_cold - u_hot)))
        assert abs(accept.mean() - math.erfc(sigma * db / 2)) < 4 * accept.std() / math.sqrt(n)
        r = math.erf(sigma * db / 2)
        assert float(ladder.pair_barriers([r])[0]) == pytest.approx(sigma * db / math.sqrt(math.pi), rel=1e-12)
    small = np.array([1e-4, 1e-3])
    assert np.allclose(ladder.pair_barriers(small), small, rtol=1e-6)


def test_saturated_pairs_count_half_a_swap():
    assert ladder.pair_barriers([1.0], attempts=[50])[0] == pytest.approx(ladder.pair_barriers([1 - 1 / 100])[0])
    assert np.isfinite(ladder.pair_barriers([1.0])[0])


def test_rejection_rates_neutral_default_and_checks():
    assert ladder.rejection_rates([0, 4], [0, 1]).tolist() == [0.5, 0.75]
    with pytest.raises(ValueError, match="swaps <= attempts"):
        ladder.rejection_rates([2], [3])
    temps = [1.0, 2.0, 5.0, 9.0]
    untouched = ladder.equal_share_ladder(ladder.Barrier(temps, ladder.rejection_rates([0, 0, 0], [0, 0, 0])))
    assert np.allclose(untouched, temps)  # no evidence: the ladder stays


def test_barrier_is_monotone_and_local_barrier_nonnegative():
    b = ladder.Barrier([1.0, 1.5, 2.0, 8.0, 9.0], [0.9, 0.0, 0.4, 0.05])
    grid = np.linspace(*b.beta_range, 500)
    assert np.all(np.diff(b.cumulative(grid)) >= 0) and np.all(b.local(grid) >= 0)
    assert b.cumulative(1.0) == pytest.approx(b._knots[-1])
    for level in (0.1, 0.7, 1.3):
        assert float(b.cumulative(b.beta_at(level))) == pytest.approx(level, abs=1e-10)


def test_equal_share_fixed_point_from_linear_is_geometric():
    """Exact rejections of the tempered Gaussian (d = 4, tau 1 .. 100): from a linear ladder the
    iteration reaches the geometric ladder, where every pair rejects alike."""
    temps = np.linspace(1.0, 100.0, 8)
    for _ in range(15):
        r = tempered_gaussian.gaussian_rejection(temps[:-1] / temps[1:], 4)
        temps = ladder.equal_share_ladder(ladder.Barrier(temps, r))
    geometric = np.geomspace(1.0, 100.0, 8)
    assert np.max(np.abs(np.log(temps / geometric))) < 1e-4
    r = tempered_gaussian.gaussian_rejection(temps[:-1] / temps[1:], 4)
    assert np.ptp(r) < 1e-4 and temps[0] == 1.0 and temps[-1] == 100.0


def test_noisy_rounds_reach_geometric_within_monte_carlo_error():
    """The tuning procedure with binomial swap counts (exact Gaussian rates, d = 4, K = 8) in rounds
    of doubling length, repeated 200 times: the mean tuned log-temperatures sit within 3 standard
    errors (spread across repetitions / sqrt(200)) of the geometric ladder's; the procedure is
    unbiased at the resolution of its own noise."""
    rng = np.random.default_rng(7)
    K, reps, geometric = 8, 200, np.log(np.geomspace(1.0, 100.0, 8))
    finals = []
    for _ in range(reps):
        temps = np.linspace(1.0, 100.0, K)
        for n in tuning.round_ends(4000, 16):
            attempts = np.full(K - 1, max(1, n // 2))
            swaps = rng.binomial(attempts, 1 - tempered_gaussian.gaussian_rejection(temps[:-1] / temps[1:], 4))
            r = ladder.rejection_rates(attempts, swaps)
            temps = ladder.equal_share_ladder(ladder.Barrier(temps, r, attempts))
        finals.append(np.log(temps))
    finals = np.array(finals)
    se = finals.std(0, ddof=1) / math.sqrt(reps)
    inner = slice(1, K - 1)
    assert np.all(np.abs(finals.mean(0)[inner] - geometric[inner]) < 3 * se[inner]), (finals.mean(0), geometric, se)


def test_round_trip_rate_matches_a_simulated_even_odd_index_process():
    """DEO swaps with independent acceptances (efficient local exploration): the round trips per
    attempt of the simulated index process against 1 / (2 + 2 sum r / (1 - r)), within 4 batch-means
    standard errors (20 blocks)."""
    rng = np.random.default_rng(3)
    r = np.array([0.6, 0.2, 0.5, 0.4])
    K, T = r.size + 1, 60_000
    steps, pairs, accepted = [], [], []
    for t in range(T):
        for p in range(t % 2, K - 1, 2):
            steps.append(t)
            pairs.append(p)
            accepted.append(rng.random() < 1 - r[p])
    times, slots = slot_paths(steps, pairs, accepted, K)
    ends = np.asarray(round_trips(times, slots)["trip_ends"])
    per_block = np.bincount((ends * 20 // T).astype(int), minlength=20) / (T / 20)
    theory = ladder.round_trip_rate(r)
    assert abs(per_block.mean() - theory) < 4 * per_block.std(ddof=1) / math.sqrt(20), (per_block.mean(), theory)
    assert ladder.round_trip_rate([0.2, 1.0]) == 0.0


def test_recommended_chains_rule():
    assert [ladder.recommended_chains(v) for v in (0.0, 0.5, 1.0, 1.01, 5.67)] == [2, 2, 2, 3, 12]
    with pytest.raises(ValueError, match="barrier"):
        ladder.recommended_chains(float("nan"))


def test_hot_temperature_rule_bounds_and_cap():
    easy = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.05, 0.05, 0.05])
    assert ladder.hot_temperature(easy, (1.0, 100.0)) == 16.0  # at most x2 per round
    assert ladder.hot_temperature(easy, (1.0, 10.0)) == 10.0  # never beyond the bounds
    hard = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.95, 0.95, 0.95])
    hot = ladder.hot_temperature(hard, (1.0, 100.0))
    assert 4.0 <= hot < 8.0
    # where the barrier from the cold end is K / 2 = 2, unless the cap binds
    mid = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.7, 0.7, 0.7])
    hot = ladder.hot_temperature(mid, (1.0, 100.0))
    assert mid.total - float(mid.cumulative(1 / hot)) == pytest.approx(2.0, rel=1e-6)
    new = ladder.equal_share_ladder(mid, hot)
    assert new[0] == 1.0 and new[-1] == hot


def test_hot_temperature_when_the_hottest_pair_never_rejected():
    # a hottest pair with no rejection has a nudged, tiny barrier: the extrapolation beyond the
    # hottest chain underflows to b = 0; the hot end then moves out by the cap, within the bounds
    never = ladder.Barrier([1.0, 1.02, 1.04, 1.06], [0.3, 0.3, 0.0])
    assert never.beta_at(never.total - 2.0) == 0.0
    assert ladder.hot_temperature(never, (1.0, 100.0)) == pytest.approx(2.12)
    assert ladder.hot_temperature(never, (1.0, 1.25)) == 1.25


def test_pair_barrier_of_half_rejection():
    assert math.isclose(special.erfinv(0.5) * 2 / math.sqrt(math.pi), ladder.pair_barriers([0.5])[0])
