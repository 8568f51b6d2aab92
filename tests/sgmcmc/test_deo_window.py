"""Windowed DEO: the parity kept for W attempts, the authors' window rule, config round trips and
old configs, and the schedule inside a real sampler (read back from the swap record)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_vrre.sgmcmc import swaps
from tf_vrre.sgmcmc.swap_record import swap_log_columns
from tf_vrre.sgmcmc.swaps import CorrectedSwap


def _parities(num_chains, attempts, window):
    rows = [swaps.even_odd_pairs(num_chains, tf.constant(a, tf.int64), None, window).numpy() for a in attempts]
    return np.array(rows)


def test_window_keeps_parity_for_w_attempts():
    rows = _parities(5, range(12), 3)
    even, odd = [True, False, True, False], [False, True, False, True]
    expected = [even] * 3 + [odd] * 3 + [even] * 3 + [odd] * 3
    assert rows.tolist() == expected


def test_window_one_is_the_plain_schedule():
    a = _parities(6, range(9), 1)
    b = np.array([swaps.even_odd_pairs(6, tf.constant(i, tf.int64), None).numpy() for i in range(9)])
    assert (a == b).all()
    assert [r[0] for r in a] == [i % 2 == 0 for i in range(9)]


def test_window_rule_matches_formula_and_bound():
    for chains in (2, 3, 4, 8, 16):
        for rate in (0.01, 0.05, 0.2, 0.5, 0.9):
            w = swaps.deo_window_rule(chains, rate)
            exact = (math.log(chains) + math.log(math.log(chains))) / -math.log(1 - rate)
            assert w == max(1, math.ceil(exact))
            if w > 1:  # the smallest window with (1 - r)^W <= 1 / (P log P)
                assert (1 - rate) ** w <= 1 / (chains * math.log(chains)) + 1e-12
                assert (1 - rate) ** (w - 1) > 1 / (chains * math.log(chains))


@pytest.mark.parametrize(
    "args,match",
    [
        ((1, 0.1), "num_chains"),
        ((2.5, 0.1), "num_chains"),
        ((True, 0.1), "num_chains"),
        ((4, 0.0), "swap_rate"),
        ((4, 1.0), "swap_rate"),
        ((4, -0.2), "swap_rate"),
        ((4, float("nan")), "swap_rate"),
    ],
)
def test_window_rule_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        swaps.deo_window_rule(*args)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"pairs": "deo", "deo_window": 0}, "deo_window must be an integer >= 1"),
        ({"pairs": "deo", "deo_window": 2.0}, "deo_window must be an integer"),
        ({"pairs": "deo", "deo_window": True}, "deo_window must be an integer"),
        ({"pairs": "random", "deo_window": 4}, "deo_window: .* needs pairs='deo'"),
    ],
)
def test_window_argument_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CorrectedSwap(**kwargs)


def test_window_config_round_trip_and_old_configs():
    rule = CorrectedSwap(pairs="deo", deo_window=7)
    back = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(rule))
    assert back.deo_window == 7 and back.get_config() == rule.get_config()
    assert rule.resolved(True).deo_window == 7  # penalty="auto" made concrete keeps the window
    old = {k: v for k, v in rule.get_config().items() if k != "deo_window"}  # written before the option
    assert CorrectedSwap.from_config(old).deo_window == 1


def test_sampler_follows_the_window_schedule():
    """Four chains, exact energies, W = 3: the pairs proposed at attempt a are those of parity
    floor(a / 3) mod 2, read from the sampler's own swap record."""
    import tf_vrre
    from tf_vrre.workflows.gaussian_mixture import target

    data = target.make_data(40, seed=0)
    s = tf_vrre.ReplicaExchangeSampler(
        target.build_default_model,
        data_size=40,
        num_chains=4,
        temperatures=[10.0, 50.0, 200.0, 1000.0],
        learning_rates=1e-4,
        dynamics="sgld",
        weight_decay=target.weight_decay(),
        nll=target.nll,
        seed=0,
        swap=CorrectedSwap(pairs="deo", deo_window=3),
    )
    s.compile()
    s.fit(tf.data.Dataset.from_tensor_slices(data).batch(40), epochs=20, verbose=0)
    log = s.state.swap.log.numpy()
    log = log[np.argsort(log[:, 0])]
    log = log[log[:, 0] >= 0]
    cols = swap_log_columns(4)
    proposed = np.stack([log[:, cols.index(f"proposed_{p}")] > 0.5 for p in range(3)], 1)
    attempted_steps = proposed.any(1)
    assert attempted_steps.sum() >= 18  # every step attempts once sigma2 (exact: 0) is ready
    rows = proposed[attempted_steps]
    # attempt index of each attempted step: the attempts are counted from 0 at the first one
    first = int(s.state.swap.attempt_index.numpy()) - len(rows)
    for i, row in enumerate(rows):
        parity = ((first + i) // 3) % 2
        assert row.tolist() == [p % 2 == parity for p in range(3)], (i, row)


def test_window_and_counts_bounded_by_the_int64_counters():
    """A window (or a count compared with the step) beyond int64 cannot be the parity schedule's:
    refused where the rule is built, naming the argument and the range; 2**63 - 1 still works."""
    for name, value in (
        ("deo_window", 2**63),
        ("deo_window", 2**70),
        ("cooling_steps", 2**63),
        ("attempt_every", 2**64),
    ):
        args = {"pairs": "deo", name: value}
        with pytest.raises(ValueError, match=rf"{name} must be an integer >= \d and <= 2\*\*63 - 1 \(the step and"):
            CorrectedSwap(**args)
    widest = CorrectedSwap(pairs="deo", deo_window=2**63 - 1)
    assert CorrectedSwap.from_config(widest.get_config()).deo_window == 2**63 - 1
    assert _parities(5, [0, 1, 2**40], 2**63 - 1)[:, 0].tolist() == [True, True, True]  # one parity throughout
