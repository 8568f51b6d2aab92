"""The proposed ladder (tf_vrre.sgmcmc.proposal): the Gaussian rule against a Monte Carlo of the
tempered Gaussian's swaps, its configuration and bad input; where a round moves the hot end
(tf_vrre.sgmcmc.tuning.next_hot_temperature, tf_vrre.sgmcmc.ladder.hot_temperature with a target)."""

import math

import keras
import numpy as np
import pytest
from scipy import special

import tf_vrre.sgmcmc.ladder as ladder
import tf_vrre.sgmcmc.proposal as proposal
import tf_vrre.sgmcmc.tempered_gaussian as tempered_gaussian
import tf_vrre.sgmcmc.tuning as tuning


@pytest.mark.parametrize("dim,target", [(1, 0.5), (30, 0.3), (530, 0.5), (78_330, 0.7)])
def test_gaussian_ratio_rejects_the_target_by_monte_carlo(dim, target):
    """Energies U = tau G, G ~ Gamma(D / 2), at tau = 1 and rho: the Metropolis rejection of the
    swap averaged over 200,000 pairs is the target within 4 standard errors."""
    rho = proposal.gaussian_ratio(dim, target)
    rng = np.random.default_rng(dim)
    n = 200_000
    g_cold, g_hot = rng.gamma(dim / 2, size=n), rng.gamma(dim / 2, size=n)
    w = (1 - 1 / rho) * (g_cold - rho * g_hot)  # (1/tau - 1/tau')(U - U') with tau = 1, tau' = rho
    rejection = 1 - np.minimum(1, np.exp(w))
    assert abs(rejection.mean() - target) < 4 * rejection.std() / math.sqrt(n)
    # for large D it is the small-rejection rule's sqrt(D / 2 pi) ln rho = r to first order
    if dim > 100:  # the pair's barrier (2 / sqrt(pi)) erfinv(r) = sqrt(D / 2 pi) ln rho (normal energies)
        assert math.sqrt(dim / (2 * math.pi)) * math.log(rho) == pytest.approx(
            2 / math.sqrt(math.pi) * float(special.erfinv(target)), rel=0.02
        )


def test_the_proposed_ladder_is_geometric_with_equal_exact_rejection():
    temps = proposal.ProposedLadder(cold=0.5, target_rejection=0.4).temperatures(num_chains=6, num_weights=100)
    t = np.asarray(temps)
    assert t[0] == 0.5 and np.allclose(t[1:] / t[:-1], t[1] / t[0])
    assert np.allclose(tempered_gaussian.gaussian_rejection(t[:-1] / t[1:], 100), 0.4)
    # the same D, K and arguments give the same ladder (a sampler rebuilt from its config)
    assert proposal.ProposedLadder(0.5, 0.4).temperatures(6, 100) == temps


def test_config_round_trip_and_default_bounds():
    p = proposal.ProposedLadder(cold=2.0, target_rejection=0.3, bounds=(1.0, 40.0))
    back = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(p))
    assert isinstance(back, proposal.ProposedLadder) and back == p and back.get_config() == p.get_config()
    assert set(p.get_config()) == {"cold", "target_rejection", "bounds"}
    assert p.resolved_bounds(data_size=10) == (1.0, 40.0)
    assert proposal.ProposedLadder(cold=2.0).resolved_bounds(data_size=500) == (2.0, 1000.0)
    assert proposal.ProposedLadder(cold=2.0).resolved_bounds(data_size=1) == (2.0, 4.0)  # at least 2x


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"target_rejection": 0.0}, r"^target_rejection must be a rejection rate in \(0, 1\), got 0\.0$"),
        ({"target_rejection": 1.5}, r"^target_rejection must be a rejection rate in \(0, 1\), got 1\.5$"),
        ({"target_rejection": True}, r"^target_rejection must be"),
        ({"cold": 0.0}, r"^cold must be a finite temperature > 0, got 0\.0$"),
        ({"cold": float("nan")}, r"^cold must be"),
        ({"cold": 1.0, "bounds": (2.0, 10.0)}, r"^bounds \(2\.0, 10\.0\) must contain the cold temperature 1\.0"),
        ({"cold": 1.0, "bounds": (0.5,)}, r"^bounds must be a pair"),
    ],
)
def test_bad_input_refused_in_one_line_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match) as err:
        proposal.ProposedLadder(**kwargs)
    assert "\n" not in str(err.value)


def test_ratios_below_float32_resolution_refused_naming_the_proposal():
    with pytest.raises(ValueError, match=r"^ProposedLadder: for 100000000 weights and target_rejection=1e-05"):
        proposal.ProposedLadder(cold=1.0, target_rejection=1e-5).temperatures(4, 100_000_000)
    with pytest.raises(ValueError, match=r"num_chains >= 2"):
        proposal.ProposedLadder().temperatures(1, 10)


# ---- where a round moves the hottest temperature ------------------------------------------------


def test_hot_temperature_with_a_target_gives_equal_rejection_at_the_target():
    """On a 10-dimensional tempered Gaussian (exact rejection rates of a geometric ladder over
    tau 1 .. 100), the hot end for target r with K = 4 is where the Gaussian rule puts it."""
    t = np.geomspace(1.0, 100.0, 4)
    r = tempered_gaussian.gaussian_rejection(t[:-1] / t[1:], 10)
    hot = ladder.hot_temperature(ladder.Barrier(t, r), (1.0, 100.0), target_rejection=0.5)
    rule = proposal.gaussian_ratio(10, 0.5) ** 3
    assert hot == pytest.approx(rule, rel=0.03)  # within the barrier's interpolation error


def test_a_colder_hot_end_waits_for_the_last_round():
    b = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.9, 0.9, 0.9])
    assert tuning.next_hot_temperature(b, (1.0, 8.0), 0.5, None, narrow=False) == (8.0, None)
    hot, affordable = tuning.next_hot_temperature(b, (1.0, 8.0), 0.5, None, narrow=True)
    assert affordable is None and 1.0 < hot < 4.0
    # every pair rejecting nearly all swaps: no state moves, so it narrows at once
    wide = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.99, 0.97, 0.96])
    assert tuning.next_hot_temperature(wide, (1.0, 8.0), 0.5, None, narrow=False)[0] < 4.0
    # easy swaps: out at once (at most twice as hot per round), within the bounds
    easy = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.1, 0.1, 0.1])
    assert tuning.next_hot_temperature(easy, (1.0, 100.0), 0.5, None, narrow=False) == (16.0, None)
    assert tuning.next_hot_temperature(easy, (1.0, 10.0), 0.5, None, narrow=False) == (10.0, None)


def test_the_floor_keeps_a_range_in_which_the_chains_changed_modes():
    b = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.9, 0.9, 0.9])
    hot, affordable = tuning.next_hot_temperature(b, (1.0, 8.0), 0.5, floor=8.0, narrow=True)
    assert hot == 8.0 and 1.0 < affordable < 4.0
    hot, affordable = tuning.next_hot_temperature(b, (1.0, 8.0), 0.5, floor=2.0, narrow=True)
    assert affordable is None and 2.0 < hot < 4.0  # the floor does not bind
    assert tuning.next_hot_temperature(b, (1.0, 6.0), 0.5, floor=8.0, narrow=True)[0] == 6.0  # bounds first


@pytest.mark.parametrize("cold", [1.0, 0.05])
def test_too_cold_to_cross_compares_ranges_not_temperatures(cold):
    """A network's ladder spans a few percent above the cold temperature: a hot end the swaps would
    move from 1.0635 to 1.001 (a sixtieth of the range) is far too cold, though the temperature
    moves by 6%; the rule is the same at any cold temperature."""
    assert tuning.too_cold_to_cross(1.001 * cold, 1.0635 * cold, cold)
    assert tuning.too_cold_to_cross(2.46 * cold, 4.0 * cold, cold)
    assert not tuning.too_cold_to_cross(3.9 * cold, 4.0 * cold, cold)
    assert not tuning.too_cold_to_cross(1.058 * cold, 1.0635 * cold, cold)
