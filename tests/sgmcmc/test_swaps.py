"""Swap math: acceptance rule, exact rates within binomial error, pair schedules, permutations."""

import numpy as np
import pytest
import tensorflow as tf

from tf_vrre.sgmcmc import swaps
from tf_vrre.sgmcmc.swaps import CorrectedSwap


def test_log_swap_ratio_formula():
    got = swaps.log_swap_ratio(105.0, 100.0, 1.0, 4.0, sigma2=8.0, correction=2.0)
    delta = 1.0 - 0.25
    assert float(got) == pytest.approx(delta * (105.0 - 100.0 - delta * 8.0 / 2.0))


@pytest.mark.parametrize("u_cold,u_hot", [(10.0, 12.0), (12.0, 10.0), (10.0, 10.5), (3.0, 3.0)])
def test_empirical_rate_matches_metropolis_within_binomial_error(u_cold, u_hot):
    delta = 1.0 / 1.0 - 1.0 / 3.0
    trials = 40000
    log_ratio = swaps.log_swap_ratio(tf.fill([trials], u_cold), tf.fill([trials], u_hot), 1.0, 3.0, 0.0, 2.0)
    res = swaps.decide_swaps(log_ratio, tf.ones([trials], tf.bool), tf.constant([3, 4], tf.int64))
    rate = float(tf.reduce_mean(tf.cast(res.accepted, tf.float64)))
    p = min(1.0, np.exp(delta * (u_cold - u_hot)))
    se = np.sqrt(max(p * (1 - p), 1e-12) / trials)
    assert abs(rate - p) <= 4.5 * se + 1e-12, (rate, p)


def test_unattempted_pairs_never_swap():
    res = swaps.decide_swaps(
        tf.constant([50.0, 50.0], tf.float64), tf.constant([False, True]), tf.constant([1, 2], tf.int64)
    )
    assert res.accepted.numpy().tolist() == [False, True]
    assert res.permutation.numpy().tolist() == [0, 2, 1]


def test_permutation_from_disjoint_pairs():
    perm = swaps.permutation_from_pairs(tf.constant([True, False, True, False]))
    assert perm.numpy().tolist() == [1, 0, 3, 2, 4]
    assert swaps.permutation_from_pairs(tf.constant([False])).numpy().tolist() == [0, 1]


def test_even_odd_schedule_alternates_and_is_disjoint():
    even = swaps.even_odd_pairs(5, tf.constant(0, tf.int64), None).numpy().tolist()
    odd = swaps.even_odd_pairs(5, tf.constant(1, tf.int64), None).numpy().tolist()
    assert even == [True, False, True, False]
    assert odd == [False, True, False, True]


def test_random_pair_is_one_hot_and_uniform():
    counts = np.zeros(3)
    for s in range(600):
        mask = swaps.random_pair(4, None, tf.constant([s, 9], tf.int64)).numpy()
        assert mask.sum() == 1
        counts += mask
    se = np.sqrt(600 * (1 / 3) * (2 / 3))
    assert np.all(np.abs(counts - 200) <= 4.5 * se), counts


@pytest.mark.parametrize(
    "kwargs,arg",
    [
        ({"correction": 0.0}, "correction"),
        ({"correction": -1.0}, "correction"),
        ({"smoothing": 0.0}, "smoothing"),
        ({"smoothing": 1.5}, "smoothing"),
        ({"period": 0}, "period"),
        ({"pairs": "all"}, "pairs"),
        ({"cooling_steps": -1}, "cooling_steps"),
        ({"correction": "auto"}, "target_acceptance"),
        ({"correction": "on"}, "correction"),
        ({"correction": "auto", "target_acceptance": 0.0}, r"target_acceptance must be a number in \(0, 1\)"),
        ({"correction": "auto", "target_acceptance": 1.0}, "target_acceptance"),
        ({"correction": "auto", "target_acceptance": float("nan")}, "target_acceptance"),
        ({"correction": "auto", "target_acceptance": True}, "target_acceptance"),
        ({"correction": 2.0, "target_acceptance": 0.3}, "target_acceptance=0.3 needs correction='auto'"),
    ],
)
def test_corrected_swap_rejects_bad_arguments(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        CorrectedSwap(**kwargs)


def test_corrected_swap_config_round_trip():
    import keras

    rule = CorrectedSwap(
        correction=1.5e5,
        smoothing=0.1,
        period=7,
        pairs="deo",
        cooling_steps=390,
        penalty="offset",
        attempt_every=4,
        deo_window=3,
    )
    back = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(rule))
    assert isinstance(back, CorrectedSwap)
    assert back.get_config() == rule.get_config()
    assert set(rule.get_config()) == {
        "correction",
        "smoothing",
        "period",
        "pairs",
        "cooling_steps",
        "penalty",
        "attempt_every",
        "deo_window",
        "target_acceptance",
    }
    auto = CorrectedSwap(correction="auto", target_acceptance=0.25, pairs="deo")
    back = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(auto))
    assert back.get_config() == auto.get_config() and back.target_acceptance == 0.25 and back.adaptive_correction
    assert back.initial_correction() == 2.0 and not back.scheduled_correction
    assert back.resolved(True).target_acceptance == 0.25
    assert (
        CorrectedSwap.from_config(
            {k: v for k, v in rule.get_config().items() if k != "target_acceptance"}
        ).target_acceptance
        is None
    )
    # a config saved before `penalty` existed keeps the paper's rule
    old = {k: v for k, v in rule.get_config().items() if k != "penalty"}
    assert CorrectedSwap.from_config(old).penalty == "window"
    assert CorrectedSwap().penalty == "auto"
    assert CorrectedSwap().resolved(True).penalty == "batch" and CorrectedSwap().resolved(False).penalty == "window"
    with pytest.raises(ValueError, match="penalty"):
        CorrectedSwap(penalty="per-step")
    with pytest.raises(ValueError, match="attempt_every must be an integer >= 1"):
        CorrectedSwap(attempt_every=0)
    assert CorrectedSwap.from_config(old).attempt_every == 4 and CorrectedSwap().attempt_every == 1


def test_attempt_every_k_steps_attempts_only_there():
    import tf_vrre
    from tf_vrre.workflows.gaussian_mixture import target

    data = target.make_data(120, seed=0)
    s = tf_vrre.ReplicaExchangeSampler(
        target.build_default_model,
        data_size=120,
        num_chains=2,
        temperatures=[10.0, 1000.0],
        learning_rates=1e-4,
        dynamics="sgld",
        weight_decay=target.weight_decay(),
        nll=target.nll,
        seed=0,
        swap=CorrectedSwap(attempt_every=3),
        variance_reduction=tf_vrre.ControlVariates(period=6),
    )
    s.set_reference_data(data)
    s.fit(tf.data.Dataset.from_tensor_slices(data).batch(20), epochs=4, verbose=0)
    log = s.state.swap.log.numpy()
    log = log[log[:, 0] >= 0]
    proposed = log[:, 3] > 0
    assert proposed.sum() == len(log) // 3 and (log[proposed, 0] % 3 == 0).all()
    assert int(s.state.swap.attempt_count.numpy()[0]) == proposed.sum()
