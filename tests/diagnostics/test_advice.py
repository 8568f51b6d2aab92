"""The advisor's rules (``tf_vrre.diagnostics.advice``): the swap acceptance under the unbiased
correction against Monte Carlo, the deconvolution of noisy energy differences, the multimodality
index, and the recommendation in each regime."""

import numpy as np
import pytest

from tf_vrre.diagnostics import advice, run_advice, swap_acceptance


@pytest.mark.parametrize("scaled_diff, noise", [(0.0, 1.0), (-2.0, 4.0), (1.5, 9.0), (-6.0, 0.25)])
def test_unbiased_acceptance_against_monte_carlo(scaled_diff, noise):
    rng = np.random.default_rng(0)
    xi = rng.normal(0.0, np.sqrt(noise), 400_000)
    draws = np.minimum(1.0, np.exp(scaled_diff + xi - noise / 2.0))
    se = draws.std() / np.sqrt(draws.size)
    got = float(advice.unbiased_acceptance(scaled_diff, noise, noise / 2.0))
    assert abs(got - draws.mean()) < 4 * se + 1e-12
    assert got <= min(1.0, np.exp(scaled_diff)) + 1e-12  # noise never helps an unbiased swap


def test_acceptance_model_against_monte_carlo():
    # dU varies over the run as N(-20, 6^2); the pilot sees it through mini-batch noise of variance
    # 64; an estimator of noise variance s with the unbiased correction accepts E min(1, exp(X))
    rng = np.random.default_rng(1)
    delta, T = 0.5, 400_000
    du = rng.normal(-20.0, 6.0, T)
    estimates = du + rng.normal(0.0, 8.0, T)
    for s in (0.0, 4.0, 64.0):  # (beyond, the Monte Carlo mean of so rare acceptances is unreliable)
        draws = np.minimum(1.0, np.exp(delta * (du + rng.normal(0.0, np.sqrt(s), T)) - delta**2 * s / 2))
        got = float(advice.acceptance_model(delta, estimates, 64.0, s))
        assert abs(got - draws.mean()) < 4 * draws.std() / np.sqrt(T) + 0.02 * draws.mean(), (s, got, draws.mean())


@pytest.mark.parametrize("dof", [1, 3, 20])
def test_noise_that_follows_the_pairs_distance_against_monte_carlo(dof):
    # two states of a D-weight Gaussian mode, apart by d ~ N(0, s I): the mini-batch noise variance is
    # c |d|^2 (mean c D s), the unbiased penalty follows it; the exact difference varies as N(-20, 6^2)
    rng = np.random.default_rng(2)
    delta, T, mean_noise = 0.5, 200_000, 64.0
    d2 = (rng.normal(0.0, 1.0, (T, dof)) ** 2).sum(1) / dof  # |d|^2 / E|d|^2: chi^2_D / D
    noise = mean_noise * d2
    du = rng.normal(-20.0, 6.0, T)
    draws = np.minimum(1.0, np.exp(delta * (du + rng.normal(0.0, 1.0, T) * np.sqrt(noise)) - delta**2 * noise / 2))
    got = float(swap_acceptance.acceptance_model(delta, du, 0.0, mean_noise, dof=dof))
    assert abs(got - draws.mean()) < 4 * draws.std() / np.sqrt(T) + 0.03 * draws.mean(), (dof, got, draws.mean())
    constant = float(swap_acceptance.acceptance_model(delta, du, 0.0, mean_noise))  # the mean noise at every step
    assert constant < got  # the acceptance is convex in the noise: close states swap more than the mean says
    # unequal directions (one weight dominating) spread |d|^2 more than chi^2_D / D: D bounds it from below
    w = np.linspace(1.0, 10.0, dof) / np.linspace(1.0, 10.0, dof).mean()
    uneven = mean_noise * (w * rng.normal(0.0, 1.0, (T, dof)) ** 2).sum(1) / dof
    draws = np.minimum(1.0, np.exp(delta * (du + rng.normal(0.0, 1.0, T) * np.sqrt(uneven)) - delta**2 * uneven / 2))
    assert got < draws.mean() + 4 * draws.std() / np.sqrt(T)


def test_the_noise_laws_degrees_of_freedom_from_the_records():
    # records of a pair's noise variance, c |d|^2 with d ~ N(mu, 1) in one dimension: two states of one
    # mode (mu = 0) spread as chi^2_1; a hot chain 3 sds away gives a narrower, non-central law whose
    # relative variance 2 (1 + 2 mu^2) / (1 + mu^2)^2 says nu = 100 / 19; a network's D stands
    rng = np.random.default_rng(4)
    central = (rng.normal(0.0, 1.0, (4000, 2)) ** 2) * [5.0, 50.0]
    apart = (rng.normal(3.0, 1.0, (4000, 2)) ** 2) * [5.0, 50.0]
    assert swap_acceptance.noise_dof(central, 1) == pytest.approx(1.0, abs=0.15)
    assert swap_acceptance.noise_dof(apart, 1) == pytest.approx(100 / 19, rel=0.1)
    assert swap_acceptance.noise_dof(apart, 5000) == 5000.0
    assert swap_acceptance.noise_dof(central[:1], 3) == 3.0  # one record says nothing of the spread
    assert swap_acceptance.noise_dof(central, None) is None
    assert swap_acceptance.noise_dof(np.ones((5, 2)), 3) is None  # records that never vary: a constant noise


def test_a_finer_ladders_noise_law():
    # the ladder prediction averages each new pair's rejection over the noise law: a one-weight model's
    # pairs swap where a constant noise says they cannot; a network's (D large) barely move
    args = ([10.0, 267.0], [0.6], [2.0e6], 6)
    constant = swap_acceptance.ladder_prediction(*args)
    one = swap_acceptance.ladder_prediction(*args, dof=1)
    wide = swap_acceptance.ladder_prediction(*args, dof=50_000)
    assert constant["temperatures"] == one["temperatures"] == wide["temperatures"]
    assert constant["penalty_nats"][0] > 10 and constant["rejection"][0] > 0.999
    assert one["rejection"][0] < 0.9 and one["barrier"] < constant["barrier"]
    assert np.allclose(wide["rejection"], constant["rejection"], atol=0.01)
    with pytest.raises(ValueError, match="dof"):
        swap_acceptance.ladder_prediction(*args, dof=0)


def test_multimodality_index():
    rng = np.random.default_rng(2)
    cold = rng.normal(0.0, 0.5, (3000, 2))
    one_mode = rng.normal(0.0, 0.5 * np.sqrt(9.0), (3000, 2))
    other = np.where(rng.random((3000, 1)) < 0.5, one_mode, one_mode + 6.0)
    assert advice.multimodality_index(cold, one_mode, 9.0) == pytest.approx(1.0, abs=0.1)
    assert advice.multimodality_index(cold, other, 9.0) > 3 * advice.MULTIMODAL
    both = np.where(rng.random((3000, 1)) < 0.5, cold, cold + 6.0)  # the cold chain already visits both
    assert advice.multimodality_index(both, other, 9.0) < 1 / advice.MULTIMODAL
    assert np.isnan(advice.multimodality_index(np.ones((10, 2)), other[:10], 9.0))


def _measurements(naive=400.0, vr=2.0, hot_shift=8.0, diff=-2.0, J=24, T=300, seed=3, N=10_000, m=20, covered=1.0):
    rng = np.random.default_rng(seed)
    energies = np.zeros((T, 2))
    energies[:, 0] = rng.normal(diff, 1.0, T) + rng.normal(0.0, np.sqrt(naive), T)  # U_lo - U_hi, with U_hi = 0
    return advice.Measurements(
        temperatures=[1.0, 4.0],
        batch_size=100,
        data_size=N,
        period=m,
        diff=rng.normal(diff, 1.0, (J, 1)),
        diff_var=np.zeros((J, 1)),
        naive_var=np.full((J, 1), naive),
        vr_var=np.full((J, 1), vr),
        offsets=np.arange(J) % 5,
        cold=rng.normal(0.0, 1.0, (T, 3)),
        hot=rng.normal(hot_shift, 2.0, (T, 3)),
        step_seconds=0.01,
        pass_seconds=0.2,
        pilot_vr_period=None,
        steps=400,
        attempts=[399],
        swaps=[0],
        exact=True,
        batch_energies=energies,
        period_covered=covered,
    )


def test_recommendations():
    # noisy mini-batch swaps, quiet control variates, a hot chain elsewhere: variance reduction
    a = advice.recommend(_measurements())
    assert (a.recommendation, a.chains, a.confident) == (advice.VARIANCE_REDUCED, 2, True)
    mb = a.numbers["estimators"]["mini-batch"]
    assert mb["pilot_penalty_nats"][0] == pytest.approx(0.75**2 * 400 / 2)  # delta^2 sigma^2 / 2 on the pilot's pair
    assert mb["recommended_chains"] > 2 and mb["penalty_nats"][0] < 1  # a finer ladder would shrink it
    # quiet mini-batch swaps: the full passes are not worth it
    a = advice.recommend(_measurements(naive=2.5))
    assert a.recommendation == advice.REPLICA_EXCHANGE and a.numbers["gain_ratio"] < 1
    # the hot chain spreads as one mode would: one chain, whatever the noise
    a = advice.recommend(_measurements(hot_shift=0.0))
    assert (a.recommendation, a.chains) == (advice.ONE_CHAIN, 1)
    assert 1 / advice.MULTIMODAL < a.numbers["multimodality_index"] < advice.MULTIMODAL
    # both estimators shut: nothing reaches the cold chain
    a = advice.recommend(_measurements(naive=1e8, vr=1e8))
    assert a.recommendation == advice.ONE_CHAIN and "carry nothing" in a.reasons[-1]
    # a budget too small for one round trip
    a = advice.recommend(_measurements(), budget=1e3)
    assert a.recommendation == advice.ONE_CHAIN and "round trips" in a.reasons[-1]
    # near the thresholds, or too few records: a best guess
    assert not advice.recommend(_measurements(naive=100.0)).confident  # gains within a factor 2
    assert not advice.recommend(_measurements(T=8)).confident


def test_a_variance_reduction_win_on_a_lower_bound_is_a_best_guess_and_a_loss_stands():
    # the control variates' noise measured over the first half of the period only: a lower bound
    for naive, pick in ((400.0, advice.VARIANCE_REDUCED), (2.5, advice.REPLICA_EXCHANGE)):
        whole, half = advice.recommend(_measurements(naive=naive)), advice.recommend(_measurements(naive, covered=0.5))
        assert whole.confident and (whole.recommendation, half.recommendation) == (pick, pick)
        assert whole.chains == half.chains and whole.numbers["gain_ratio"] == half.numbers["gain_ratio"]
        cv = half.numbers["estimators"]["control variates"]
        assert (cv["offsets"], cv["period_covered"], cv["noise_lower_bound"]) == ([1, 2, 3, 4], 0.5, True)
        assert not whole.numbers["estimators"]["control variates"]["noise_lower_bound"]
        assert "lower bound" in half.summary() and "lower bound" not in whole.summary()
        # a win that rests on it may vanish once the late offsets' noise is in: a best guess; a loss stands
        assert half.confident == (pick == advice.REPLICA_EXCHANGE)
    assert "evidence is too weak" in advice.recommend(_measurements(covered=0.5)).summary().splitlines()[0]
    # a record written before the field: a whole period (the pilots then held two)
    stored = _measurements(covered=0.5).to_dict()
    assert advice.Measurements.from_dict(stored).period_covered == 0.5
    del stored["period_covered"]
    assert advice.Measurements.from_dict(stored).period_covered == 1.0
    del stored["offsets"]
    with pytest.raises(KeyError, match="offsets"):
        advice.Measurements.from_dict(stored)


def test_advice_text_and_round_trip_of_measurements():
    m = _measurements()
    back = advice.Measurements.from_dict(m.to_dict())
    assert advice.recommend(back).to_dict() == advice.recommend(m).to_dict()
    text = advice.recommend(m).summary()
    assert text.splitlines()[0] == "advice: variance-reduced replica exchange with 2 chains"
    weak = advice.recommend(_measurements(naive=100.0)).summary()
    assert "evidence is too weak" in weak.splitlines()[0]


def _quench(chain, outputs, above, var=0.0):
    """A quenched state: outputs on probes and energy above each of two cold quenched states."""
    return {"chain": chain, "temperature": 1.0, "outputs": list(outputs),
            "energy_above_cold": [above, above], "energy_above_cold_var": [var, var]}  # fmt: skip


def test_modes_found_by_quenching():
    rng = np.random.default_rng(4)
    cold = rng.normal(0.0, 0.1, (400, 2))
    cold_q = [_quench(0, [0.0, 0.0], 0.0), _quench(0, [0.01, 0.0], 0.0)]
    near = _quench(3, [0.2, 0.1], -1.0)  # the same mode: 2 local sds away
    far_low = _quench(3, [2.0, -1.0], 2.0)  # another mode, 2 cold temperatures up: it matters
    far_high = _quench(3, [2.0, -1.0], 50.0)  # another mode that carries no weight
    far_noisy = _quench(3, [2.0, -1.0], 2.0, var=100.0)  # 2 - 2 x 10 sd: counted (a lower bound)
    out = advice.modes_found(cold_q + [near, far_high], cold, 1.0)
    assert out["found"] == 0 and not out["cold_modes"] and out["local_spread"] == pytest.approx(0.1, rel=0.1)
    out = advice.modes_found(cold_q + [near, far_low, far_noisy], cold, 1.0)
    assert out["found"] == 1 and out["modes"] == [[0, 1, 2], [3, 4]] and out["distance"][1] > advice.NOVEL
    alone = advice.modes_found(cold_q + [near, far_low], cold, 1.0)  # one state there: maybe a quench cut short
    assert alone["found"] == 0 and len(alone["modes"]) == 1 and alone["lone"] == 1 and alone["margin"]
    assert advice.modes_found(cold_q + [near, far_high], cold, 1.0)["lone"] == 0  # its energy rules it out
    assert advice.modes_found(cold_q + [near, far_high], cold, 0.01)["found"] == 0  # colder: even further out
    # the cold chain's records in two groups far apart: swaps already carry the modes to it
    hopping = np.where(np.arange(400)[:, None] % 4 == 0, cold + 3.0, cold)
    assert advice.modes_found(cold_q + [near], hopping, 1.0)["cold_modes"]
    drifting = cold + np.linspace(0.0, 3.0, 400)[:, None]  # a chain still converging: no groups
    assert not advice.modes_found(cold_q + [near], drifting, 1.0)["cold_modes"]


def test_recommendation_from_quenched_modes():
    m = _measurements(hot_shift=0.0)  # by the index alone: one chain
    cold_q = [_quench(0, [0.0] * 3, 0.0), _quench(0, [0.01] * 3, 0.0)]
    m.quenches = cold_q + [_quench(1, [0.05] * 3, 0.5)]
    assert advice.recommend(m).recommendation == advice.ONE_CHAIN
    m.quenches = cold_q + [_quench(1, [30.0] * 3, 0.5), _quench(1, [30.0] * 3, 0.4)]
    a = advice.recommend(m)
    assert a.recommendation == advice.VARIANCE_REDUCED and a.confident
    assert "reach 2 modes" in a.reasons[0] and "1 of them away" in a.reasons[0]
    # one quench alone far out, at an energy the pilot cannot resolve (2 +- 10 sd): a possible mode,
    # a best guess for replica exchange; resolved far above (50 +- 1): no mode, one chain
    m.quenches = cold_q + [_quench(1, [30.0] * 3, 2.0, var=100.0)]
    a = advice.recommend(m)
    assert a.recommendation == advice.VARIANCE_REDUCED and not a.confident and "sit alone" in a.reasons[0]
    m.quenches = cold_q + [_quench(1, [30.0] * 3, 50.0, var=1.0)]
    a = advice.recommend(m)
    assert a.recommendation == advice.ONE_CHAIN and a.confident


def test_from_run_with_only_a_tuning_record(tmp_path):
    import json

    from _ladder_records import record

    from tf_vrre.runs import ladder_file

    assert run_advice.from_run(tmp_path) is None  # nothing to read
    doc = record()  # round 0 kept its ladder (no barrier); round 1 measured Lambda 1.62, 4 chains
    (tmp_path / "ladder.json").write_text(json.dumps(doc))
    section = run_advice.from_run(tmp_path)
    assert section["source"] == "tuning record" and "barrier Lambda 1.62" in section["text"]
    assert section["advice"]["chains"] == 4 and not section["advice"]["confident"]
    assert "swap noise" not in section["text"]  # a record written before the tuner kept it
    doc["rounds"][1]["swap_noise"] = {
        "energies": "mini-batch",
        "sigma2": [40.0, 10.0, 5.0],
        "penalty_nats": [5, 0.3, 0.04],
    }
    (tmp_path / "ladder.json").write_text(json.dumps(doc))
    assert ladder_file.read(tmp_path / "ladder.json") == doc
    text = run_advice.from_run(tmp_path)["text"]
    assert "swap noise penalty per pair [5.0, 0.3, 0.04] nats with mini-batch energies" in text
    doc["rounds"][1]["swap_noise"]["sigma2"] = [40.0, -1.0, 5.0]
    (tmp_path / "ladder.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"rounds\[1\]\.swap_noise\.sigma2: must be >= 0"):
        run_advice.from_run(tmp_path)
