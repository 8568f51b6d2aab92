"""Mode changes counted from traces (tf_vrre.sgmcmc.mode_changes): two-level hops found, one-level
traces of any shape not (Gaussian, uniform, random walks, slow AR(1), drifts, oscillations,
a lone state's step), a hot state's moves counted against the levels of a colder one."""

import numpy as np
import pytest
from scipy import signal

import tf_vrre.sgmcmc.mode_changes as mode_changes


def _hops(rng, n, levels=(-5.0, 5.0), dwell=20, sd=1.0):
    """Alternates between the levels, staying 1 to 2 * dwell records at each."""
    stays = rng.integers(1, 2 * dwell, size=n)
    x = np.concatenate([np.full(k, levels[i % 2]) for i, k in enumerate(stays)])[:n]
    return x + sd * rng.normal(size=n)


def test_two_states_hopping_between_two_levels_change_modes():
    rng = np.random.default_rng(0)
    traces = np.stack([_hops(rng, 300), _hops(rng, 300), rng.normal(size=300)])[:, :, None]
    counts = mode_changes.mode_changes(traces)
    assert counts[0] >= 4 and counts[1] >= 4 and counts[2] == 0
    assert mode_changes.changes_modes(counts)


def test_a_hot_state_is_counted_against_the_levels_of_colder_ones():
    """A state spread 1.8x wider (a hotter chain) whose own trace is barely two-level: its moves
    between the levels that the narrow states show count."""
    rng = np.random.default_rng(1)
    cold = [_hops(rng, 400) for _ in range(2)]
    hot = _hops(rng, 400, dwell=5, sd=1.8)
    assert mode_changes.separation(hot) < mode_changes.MIN_SEPARATION
    counts = mode_changes.mode_changes(np.stack([*cold, hot])[:, :, None])
    assert counts[2] >= 10


KINDS = {
    "gaussian": lambda rng, n: rng.normal(size=n),
    "uniform": lambda rng, n: rng.uniform(size=n),
    "random walk": lambda rng, n: np.cumsum(rng.normal(size=n)),
    "ar(0.99)": lambda rng, n: signal.lfilter([1.0], [1.0, -0.99], rng.normal(size=n)),
    "drift": lambda rng, n: np.linspace(0.0, 10.0, n) + 0.3 * rng.normal(size=n),
    "oscillation": lambda rng, n: np.sin(np.arange(n) / 3.0) + 0.05 * rng.normal(size=n),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("n", [30, 300])
def test_one_level_traces_change_no_modes(kind, n):
    """64 weights of 4 states each: nothing counts as a mode change (no false alarm among 256 traces)."""
    rng = np.random.default_rng(n)
    traces = np.stack([np.stack([KINDS[kind](rng, n) for _ in range(64)], axis=1) for _ in range(4)])
    assert not mode_changes.changes_modes(mode_changes.mode_changes(traces))


def test_a_lone_state_stepping_between_levels_is_a_drift_not_a_mode():
    """One state settles from one level to another and back once (a network's weight during burn-in);
    no other state visits its levels: not counted."""
    rng = np.random.default_rng(2)
    step = np.concatenate([np.zeros(10), np.full(10, 2.0), np.zeros(10)]) + 0.1 * rng.normal(size=30)
    traces = np.stack([step, 0.1 * rng.normal(size=30) + 5.0, 0.1 * rng.normal(size=30) - 5.0])[:, :, None]
    assert mode_changes.mode_changes(traces) == [0, 0, 0]


def test_states_that_all_move_one_way_are_relaxing_not_changing_modes():
    """Two states each settle from the lower level to the upper once (weights of a network finding
    their place after a swap or a change of temperature), a third stays: a one-way flow counts
    nothing; a state that moves the other way makes the flow two-way, and the moves count."""
    rng = np.random.default_rng(3)
    up = [np.concatenate([np.full(k, -5.0), np.full(60 - k, 5.0)]) + rng.normal(size=60) for k in (20, 35)]
    stay = rng.normal(size=60) - 5.0
    assert mode_changes.mode_changes(np.stack([*up, stay])[:, :, None]) == [0, 0, 0]
    down = np.concatenate([np.full(40, 5.0), np.full(20, -5.0)]) + rng.normal(size=60)
    counts = mode_changes.mode_changes(np.stack([*up, down])[:, :, None])
    assert counts == [1, 1, 1] and mode_changes.changes_modes(counts)


def test_too_few_records_count_nothing_and_bad_shapes_are_refused():
    assert mode_changes.mode_changes(np.zeros((4, mode_changes.MIN_RECORDS - 1, 3))) is None
    assert not mode_changes.changes_modes(None)
    with pytest.raises(ValueError, match=r"traces must have shape \[K, n, M\]"):
        mode_changes.mode_changes(np.zeros((4, 30)))
    assert mode_changes.transitions([0, 10, 5, 0, 10], 0.0, 10.0) == 3
