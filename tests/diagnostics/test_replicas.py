"""Replica flow from swap logs: hand-checked paths, file reading, and frozen-state ladders run
through the real sampler whose per-pair acceptance and round-trip rate are compared with their
exact values (a finite Markov chain over slot assignments, computed here)."""

import itertools
import os

import numpy as np
import pytest
import tensorflow as tf
from _swap_logs import write_log

import tf_vrre
from tf_vrre import diagnostics
from tf_vrre.workflows.gaussian_mixture import target

DELTA_U = 2.4  # U(beta) = DELTA_U * beta^2 (N = 100 examples of nll DELTA_U / 100 * beta^2)


# ---- pure functions -------------------------------------------------------------------------
def test_slot_paths_follow_accepted_swaps_only():
    # K = 3: step 2 swaps (0,1); step 3 rejected; step 5 swaps (1,2); step 7 swaps (0,1) and nothing else.
    times, slots = diagnostics.slot_paths([2, 3, 5, 7], [0, 1, 1, 0], [1, 0, 1, 1], 3)
    np.testing.assert_array_equal(times, [0, 2, 5, 7])
    np.testing.assert_array_equal(slots, [[0, 1, 2], [1, 0, 2], [2, 0, 1], [2, 1, 0]])
    # DEO: two disjoint pairs at one step
    times, slots = diagnostics.slot_paths([4, 4], [2, 0], [1, 1], 4, start_step=1)
    np.testing.assert_array_equal(times, [1, 4])
    np.testing.assert_array_equal(slots[1], [1, 0, 3, 2])


def test_round_trips_and_passages_by_hand():
    # K = 3.  state 0: slot 0 -> 1 (t=2) -> 2 (t=5): up-passage 5; -> 1 (t=9) -> 0 (t=12): trip of 12.
    events = [(2, 0), (5, 1), (9, 1), (12, 0)]
    times, slots = diagnostics.slot_paths([t for t, _ in events], [p for _, p in events], [1] * 4, 3)
    rt = diagnostics.round_trips(times, slots)
    assert list(rt["per_state"]) == [1, 0, 0]
    # state 1 reaches slot 0 at t=2 (starts going up), moves to 1 at t=12, never the top: no passage.
    # state 2 starts at the top, is at slot 1 at t=5, 2 at t=9: never at 0, no trip.
    assert rt["up_passages"] == [5] and rt["round_trip_times"] == [12] and rt["trip_ends"] == [12]


def test_k2_every_second_swap_completes_a_trip():
    steps = np.arange(1, 41, 3)  # 14 accepted swaps of the only pair
    times, slots = diagnostics.slot_paths(steps, np.zeros_like(steps), np.ones_like(steps), 2)
    rt = diagnostics.round_trips(times, slots)
    # state 0 starts cold: trips end at swaps 2, 4, ..., 14 (7); state 1 first reaches cold at swap 1,
    # then trips end at swaps 3, 5, ..., 13 (6).
    assert list(rt["per_state"]) == [7, 6]
    # up-passages: state 0's first from the start of the log (1 step), then 3 steps each (6 + 7)
    assert sorted(rt["up_passages"]) == [1] + [3] * 13


@pytest.mark.parametrize(
    "args,match",
    [
        (([1], [0], [1], 1), "num_chains"),
        (([1, 2], [0], [1], 2), "same length"),
        (([1], [2], [1], 3), "pair must be in 0..1"),
    ],
)
def test_slot_paths_errors(args, match):
    with pytest.raises(ValueError, match=match):
        diagnostics.slot_paths(*args)


def test_read_swap_log_layouts_cut_rows_and_errors(tmp_path):
    rows = [f"{s},0,0,1.0,2.0,1.5,1.0,-0.25,0.7788,{a},3.0,2.0" for s, a in [(3, 1), (4, 0), (5, 1), (6, 0)]]
    rows.append("7,0,0,1.0,2.0,1.5")  # cut short by a kill: dropped
    write_log(
        tmp_path / "run" / "swaps",
        rows,
        refresh=["3,0,1,0,2.0,0,0,2.0", "7,0,1,0,4.0,0,0,2.0"],
        epochs=["0,8,4,2,0.5,4,2"],
    )
    for where in (tmp_path / "run", tmp_path / "run" / "swaps"):  # run dir or bare SwapLogger dir
        swaps_dir, samples_dir = diagnostics.locate(where)
        assert samples_dir is None and os.path.samefile(swaps_dir, tmp_path / "run" / "swaps")
    log = diagnostics.read_swap_log(tmp_path / "run" / "swaps")
    assert log.num_chains == 2 and log.swaps["step"].tolist() == [3, 4, 5, 6]
    assert (log.start_step, log.end_step) == (0, 8)  # epochs.csv counts 8 steps ending at step 7
    assert log.temperatures().tolist() == [1.0, 2.0]
    flow = diagnostics.replica_flow(log, blocks=2)
    assert flow["swaps"] == 2 and flow["round_trips"] == 1 and flow["round_trips_per_1000_steps"] == 125.0
    p = flow["pairs"][0]
    assert p["acceptance"] == 0.5 and p["mean_accept_prob"] == pytest.approx(0.7788)
    # blocks [0, 4) and [4, 8): (1 of 1), (1 of 3): r = 0.5, se = sqrt((0.5^2 + 0.5^2) / 2) / 2
    assert p["acceptance_se"] == pytest.approx(np.sqrt(0.25) / 2)
    assert flow["sigma2_trend"][0]["first"] == 2.0 and flow["sigma2_trend"][0]["ratio"] == 2.0
    with pytest.raises(ValueError, match="not a directory"):
        diagnostics.locate(tmp_path / "missing")
    with pytest.raises(ValueError, match="no swap log"):
        diagnostics.locate(tmp_path)
    with pytest.raises(ValueError, match="swaps.csv is missing"):
        diagnostics.read_swap_log(tmp_path)
    with pytest.raises(ValueError, match="blocks"):
        diagnostics.pair_acceptance(log, blocks=1)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "swaps.csv").write_text("step,pair\n1,0\n")
    with pytest.raises(ValueError, match="missing columns"):
        diagnostics.read_swap_log(tmp_path / "bad")


def test_log_without_attempts(tmp_path):
    """A run stopped before sigma2 was ready: header-only swaps.csv, nothing to divide by."""
    write_log(tmp_path, [], refresh=["3,0,1,0,2.0,0,0,2.0"])
    flow = diagnostics.replica_flow(diagnostics.read_swap_log(tmp_path))
    assert flow["swaps"] == flow["attempts"] == flow["round_trips"] == 0
    assert flow["pairs"][0]["acceptance"] is None and flow["mean_first_passage_cold_to_hot"] is None
    assert flow["round_trips_per_1000_steps"] == 0.0 and flow["steps"] == 1


# ---- exact reference: the swap chain over slot assignments ---------------------------------
def exact_flow(energies, temperatures, pairs):
    """Stationary per-pair acceptance and round trips per step of frozen states.

    The chain's state is (state in each slot, each state's direction: 1 once it has visited
    the top since it last held slot 0, phase of the DEO schedule).  A round trip ends when a
    state with direction 1 arrives in slot 0.  The stationary law solves pi (P - I) = 0,
    sum pi = 1 (states that cannot recur, e.g. slot 0 with direction 1, get pi = 0)."""
    K = len(energies)
    u, beta = np.asarray(energies, float), 1.0 / np.asarray(temperatures, float)
    perms = list(itertools.permutations(range(K)))
    phases = 2 if pairs == "deo" else 1
    space = [(p, d, ph) for p in perms for d in itertools.product((0, 1), repeat=K) for ph in range(phases)]
    index = {s: i for i, s in enumerate(space)}
    P = np.zeros((len(space), len(space)))
    trips = np.zeros(len(space))  # expected round trips completed by the next step
    acc = np.zeros((len(space), K - 1))  # acceptance probability if pair p is attempted

    def prob(perm, p):
        return min(1.0, np.exp((beta[p] - beta[p + 1]) * (u[perm[p]] - u[perm[p + 1]])))

    for i, (perm, d, ph) in enumerate(space):
        acc[i] = [prob(perm, p) for p in range(K - 1)]
        if pairs == "random":
            proposals = [([p], 1.0 / (K - 1)) for p in range(K - 1)]
        else:
            proposals = [([p for p in range(K - 1) if p % 2 == ph], 1.0)]
        for proposed, w in proposals:
            for outcome in itertools.product((0, 1), repeat=len(proposed)):
                pr = w * np.prod([acc[i, p] if o else 1 - acc[i, p] for p, o in zip(proposed, outcome)])
                new = list(perm)
                for p, o in zip(proposed, outcome):
                    if o:
                        new[p], new[p + 1] = new[p + 1], new[p]
                nd = list(d)
                done = 0
                for slot, state in enumerate(new):
                    if slot == K - 1:
                        nd[state] = 1
                    elif slot == 0:
                        done += nd[state] and new[0] != perm[0]
                        nd[state] = 0
                j = index[(tuple(new), tuple(nd), (ph + 1) % phases)]
                P[i, j] += pr
                trips[i] += pr * done
    a = (P - np.eye(len(space))).T  # pi (P - I) = 0 and sum(pi) = 1 (unique: one recurrent class)
    a[-1] = 1.0
    pi = np.linalg.solve(a, np.eye(len(space))[-1])
    np.testing.assert_allclose(pi @ P, pi, atol=1e-12)
    pi_perm = {}
    for (perm, _, _), v in zip(space, pi):
        pi_perm[perm] = pi_perm.get(perm, 0.0) + v
    w = np.array([np.exp(-sum(u[perm[h]] * beta[h] for h in range(K))) for perm in perms])
    np.testing.assert_allclose([pi_perm[p] for p in perms], w / w.sum(), atol=1e-9)  # the permutation law
    return {"acceptance": pi @ acc, "trips_per_step": float(pi @ trips)}


def _nll(x, y, y_pred):
    return tf.reshape(DELTA_U / 100.0 * tf.square(y_pred), [-1]) + 0.0 * tf.reshape(x, [-1])


def _frozen_run(directory, values, temperatures, pairs, steps, seed=3):
    """Frozen states (lr 1e-12, full batch: exact energies, sigma2 = 0) with a SwapLogger."""
    s = tf_vrre.ReplicaExchangeSampler(
        lambda: target.build_model(0.0),
        data_size=100,
        num_chains=len(values),
        temperatures=list(temperatures),
        learning_rates=1e-12,
        dynamics="sgld",
        nll=_nll,
        swap=tf_vrre.CorrectedSwap(period=1, pairs=pairs),
        seed=seed,
        independent_init=True,
    )
    s.compile(steps_per_execution=1000)
    for chain, b in zip(s.chains, values):
        chain.set_weights([np.float32(b)])
    x = np.zeros((100, 1), np.float32)
    s.fit(
        tf.data.Dataset.from_tensor_slices(x).batch(100).repeat(),
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        callbacks=[tf_vrre.SwapLogger(directory)],
    )
    return diagnostics.read_swap_log(directory)


LADDERS = {
    "K2": ([0.0, 1.0], [1.0, 2.0], "random"),
    "K4-random": (list(np.linspace(0.0, 1.2, 4)), list(np.geomspace(1.0, 4.0, 4)), "random"),
    "K4-deo": (list(np.linspace(0.0, 1.2, 4)), list(np.geomspace(1.0, 4.0, 4)), "deo"),
}
STEPS = 10000
BLOCKS = 25


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    out = {}
    for name, (values, temps, pairs) in LADDERS.items():
        log = _frozen_run(str(tmp_path_factory.mktemp(name)), values, temps, pairs, STEPS)
        exact = exact_flow([DELTA_U * b * b for b in values], temps, pairs)
        out[name] = (diagnostics.replica_flow(log, blocks=BLOCKS), log, exact)
    return out


@pytest.mark.parametrize("name", list(LADDERS))
def test_pair_acceptance_matches_exact_expectation(frozen, name):
    flow, _, exact = frozen[name]
    assert flow["steps"] == STEPS and flow["num_chains"] == len(LADDERS[name][0])
    for p, e in zip(flow["pairs"], exact["acceptance"]):
        assert p["attempts"] > 1000
        assert abs(p["acceptance"] - e) <= 4.5 * p["acceptance_se"], (name, p, e)
        assert abs(p["mean_accept_prob"] - e) <= 4.5 * p["acceptance_se"], (name, p, e)


def _trip_rate(log):
    """Round trips per step and its batch-means standard error over BLOCKS blocks of steps."""
    times, slots = diagnostics.slot_paths(log.swaps["step"], log.swaps["pair"], log.swaps["accepted"], log.num_chains)
    ends = np.asarray(diagnostics.round_trips(times, slots)["trip_ends"])
    per_block = np.bincount((ends * BLOCKS // log.end_step).astype(int), minlength=BLOCKS)[:BLOCKS]
    rates = per_block / (log.end_step / BLOCKS)
    return rates.mean(), rates.std(ddof=1) / np.sqrt(BLOCKS)


@pytest.mark.parametrize("name", list(LADDERS))
def test_round_trip_rate_matches_exact_markov_chain(frozen, name):
    flow, log, exact = frozen[name]
    rate, se = _trip_rate(log)
    assert flow["round_trips_per_1000_steps"] == pytest.approx(1000 * rate, rel=0.02)  # same trips, edges
    assert abs(rate - exact["trips_per_step"]) <= 4.5 * se, (name, rate, exact["trips_per_step"], se)
    assert flow["mean_first_passage_cold_to_hot"] > 0 and flow["first_passages"] >= flow["round_trips"] - 4


def test_deo_round_trips_beat_random_pairs_on_k4(frozen):
    (deo, deo_log, deo_exact), (rnd, rnd_log, rnd_exact) = frozen["K4-deo"], frozen["K4-random"]
    (r_deo, se_deo), (r_rnd, se_rnd) = _trip_rate(deo_log), _trip_rate(rnd_log)
    assert deo_exact["trips_per_step"] > 1.5 * rnd_exact["trips_per_step"]
    assert r_deo - r_rnd > 4.5 * np.hypot(se_deo, se_rnd), (r_deo, r_rnd)
    assert deo["mean_first_passage_cold_to_hot"] < rnd["mean_first_passage_cold_to_hot"]
