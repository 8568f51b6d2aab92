"""The range of the ladder: LadderTuner with a ProposedLadder or bounds, against exact answers.

- A multimodal target (a 30-dimensional two-mode mixture, modes at w_1 = -5 and 5 with weights
  0.3 / 0.7, barrier about 12 at cold temperature 1) whose hand ladder, hot end 4 (a third of
  the barrier), lets the cold chain change modes: with bounds the tuner must not shrink that
  range silently (before: it moved the hot end to 2.5, where the swaps of 4 chains reach equal
  rejection, without a word); it keeps the hot end where the chains changed modes (at most half
  way in, in log temperature, while the first crossings were one-way), warns at the fit call,
  and the cold chain's left-mode weight after tuning is the exact one within 3.5 batch-means
  standard errors.
- The proposed ladder on a tempered Gaussian with exact energies: its pairs reject the target
  (the Gaussian rule is exact there) within the Monte Carlo error.
- The proposed ladder on a Gaussian with mini-batch energies (the noise penalty widens every
  pair's rejection): the tuner narrows it, and after the tuning phase every pair rejects
  within the documented band (0.15) of the target.
- The warnings: a fixed ladder too wide says how to narrow it; later rounds revise the number of
  chains; no swap attempted, no number of chains.
- The traces follow the states through their swaps, and a run killed mid-round counts the same
  mode changes as an uninterrupted one.

Monte Carlo errors are batch means over 20 consecutive blocks.
"""

import warnings

import _ladder_targets
import keras
import numpy as np
import pytest
import tensorflow as tf
from _small_sampler import Interrupt, N, data, small_net

import tf_vrre
from tf_vrre.callbacks.chain_tracks import ChainTracks
from tf_vrre.callbacks.checkpoint import Checkpoint
from tf_vrre.callbacks.ladder_tuner import LadderTuner
from tf_vrre.diagnostics.replicas import slot_paths
from tf_vrre.sgmcmc import proposal, swap_record, tempered_gaussian

MODES = {"dim": 30, "offset": 5.0, "weight": 0.3, "noise": 0.02}


def test_a_range_in_which_the_chains_change_modes_is_not_shrunk_silently():
    tune, fixed = 4000, 6000
    s, ds, exact = _ladder_targets.mixture_sampler(
        np.geomspace(1.0, 4.0, 4).tolist(), 0.1, seed=0, batch_size=100, steps_per_execution=50, target=MODES
    )
    trace = _ladder_targets.ColdTrace()
    tuner = LadderTuner(tune, first_round_steps=250, learning_rates=0.0, bounds=(1.0, 4.0))
    with pytest.warns(UserWarning, match=r"may be too cold to cross the posterior's barriers") as caught:
        s.fit(ds, steps_per_epoch=1000, epochs=(tune + fixed) // 1000, verbose=0, callbacks=[tuner, trace])
    crossing = [w for w in caught if "too cold to cross" in str(w.message)]
    assert [w.filename for w in crossing] == [__file__]  # at the fit call
    hot = float(s.state.ladder.temperature.numpy()[-1])
    rounds = tuner.record["rounds"]
    # kept at the hot end where the chains changed modes (at most half way in while the first
    # crossings were one-way), far from the 2.5 at which the swaps of 4 chains reject half
    assert hot == np.float32(rounds[-1]["hot_floor"]) and hot >= 3.0, (hot, rounds[-1]["hot_floor"])
    assert any(sum(r["mode_changes"] or [0]) > 0 for r in rounds)
    post = np.asarray(trace.values)[np.asarray(trace.steps) > tune]
    left, se = _ladder_targets.batch_means(post < 0)
    assert abs(left - exact) < 3.5 * se, (left, se, exact)
    assert np.sum(np.diff(post < 0) != 0) >= 10  # the cold chain kept changing modes


def _gaussian(temperatures, dim, batch, seed=0, noise=0.0):
    """The standard Gaussian in ``dim`` dimensions as a sum over 100 examples (with ``noise``:
    a zero-sum linear term per example, so mini-batches of ``batch`` add noise linear in w)."""
    t = {"dim": dim, "offset": 0.0, "weight": 0.5, "noise": noise, "data_size": 100}
    data = _ladder_targets.mixture_data(dim, noise, 100)
    s = tf_vrre.ReplicaExchangeSampler(
        _ladder_targets.PointModel(dim),
        data_size=100,
        num_chains=4,
        temperatures=temperatures,
        learning_rates=0.05,
        dynamics="sgld",
        nll=_ladder_targets.MixtureNLL(t["weight"], t["offset"], 100),
        seed=seed,
        swap=tf_vrre.CorrectedSwap(pairs="deo"),
    )
    s.compile(steps_per_execution=50)
    ds = tf.data.Dataset.from_tensor_slices(data).repeat().shuffle(100, seed=seed).batch(batch, drop_remainder=True)
    return s, ds


class Counts(keras.callbacks.Callback):
    def __init__(self, after):
        super().__init__()
        self.after, self.rows = after, []

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.state.step.numpy()) >= self.after:
            self.rows.append((self.model.state.swap.attempt_count.numpy(), self.model.state.swap.swap_count.numpy()))


def _rates(rows, blocks=20):
    a = np.diff(np.array([r[0] for r in rows], np.float64), axis=0)
    k = np.diff(np.array([r[1] for r in rows], np.float64), axis=0)
    m = len(a) // blocks
    ab, kb = a[: m * blocks].reshape(blocks, m, -1).sum(1), k[: m * blocks].reshape(blocks, m, -1).sum(1)
    rate = 1 - kb.sum(0) / ab.sum(0)
    return rate, np.sqrt((((ab - kb) - rate * ab) ** 2).sum(0) / (blocks * (blocks - 1))) / ab.mean(0)


def test_the_proposed_ladder_rejects_the_target_on_a_gaussian():
    """Exact energies (one batch of all 100 examples): the proposal for D = 20 weights is the exact
    equal-rejection ladder; SGLD at eta = 0.05 samples every energy 2.5% too wide, which moves a
    pair's rejection by about 0.01 (added to the tolerance)."""
    s, ds = _gaussian(tf_vrre.ProposedLadder(cold=1.0, target_rejection=0.4), dim=20, batch=100)
    t = np.asarray(s.temperatures)
    assert np.allclose(tempered_gaussian.gaussian_rejection(t[:-1] / t[1:], 20), 0.4)
    counts = Counts(1000)
    s.fit(ds, steps_per_epoch=1000, epochs=5, verbose=0, callbacks=[counts])
    rate, se = _rates(counts.rows)
    assert np.all(np.abs(rate - 0.4) < 3.5 * se + 0.01), (rate, se)


def test_the_tuner_narrows_a_proposal_widened_by_mini_batch_noise():
    """Batches of 10 of 100 examples add a noise penalty to every swap: the proposed ladder
    rejects more than the target; the tuner narrows it, and after tuning every pair rejects
    within 0.15 of the target."""
    tune, fixed = 3000, 1500
    s, ds = _gaussian(tf_vrre.ProposedLadder(cold=1.0, target_rejection=0.5), dim=10, batch=10, noise=0.3)
    proposed = list(s.temperatures)
    tuner = LadderTuner(tune, first_round_steps=200, learning_rates=0.0)
    counts = Counts(tune)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="LadderTuner: the communication barrier")
        s.fit(ds, steps_per_epoch=500, epochs=(tune + fixed) // 500, verbose=0, callbacks=[tuner, counts])
    first = tuner.record["rounds"][0]
    assert min(first["rejection"]) > 0.65  # the noise: the proposal alone rejects too much
    final = s.state.ladder.temperature.numpy()
    assert final[0] == 1.0 and final[-1] < proposed[-1] / 1.2  # narrowed
    rate, se = _rates(counts.rows, blocks=10)
    assert np.all(np.abs(rate - 0.5) <= 0.15), (rate, se)


def test_a_fixed_ladder_too_wide_says_how_to_narrow_it():
    """d = 50, tau 1 .. 100 with 4 chains: every pair rejects every swap; the hot end is fixed (no
    bounds), so the warning gives the Gaussian rule's ladder for this model and says that later
    rounds revise the number of chains; the last round does, and says so."""
    s, ds = _ladder_targets.gaussian_sampler(50, [1.0, 4.64, 21.5, 100.0], 0.05, seed=0, steps_per_execution=20)
    with pytest.warns(UserWarning) as caught:
        s.fit(ds, steps_per_epoch=200, epochs=1, verbose=0, callbacks=[LadderTuner(200, first_round_steps=60)])
    text = [str(w.message) for w in caught if "LadderTuner" in str(w.message)]
    rule = [f"{t:.4g}" for t in proposal.ProposedLadder(cold=1.0).temperatures(4, 50)]
    wide = next(m for m in text if "is too wide" in m)
    assert f"gives [{', '.join(rule)}]" in wide and "ProposedLadder(cold=1)" in wide and "bounds=(low, high)" in wide
    assert "later rounds revise it as the ladder moves" in wide
    assert any(m.startswith("LadderTuner: the last tuning round (1) revised the number of chains") for m in text)
    assert all(w.filename == __file__ for w in caught if "LadderTuner" in str(w.message))


def test_no_swap_attempted_no_number_of_chains():
    """A sigma2 window of 64 steps: no swap is possible in a tuning phase of 40 steps, no round
    measures a barrier, and the tuner says in one line that it can recommend no number of chains."""
    s = tf_vrre.ReplicaExchangeSampler(
        small_net,
        data_size=N,
        num_chains=4,
        temperatures=[1.0, 2.0, 4.0, 8.0],
        learning_rates=2e-3,
        seed=0,
        swap=tf_vrre.CorrectedSwap(period=64, penalty="window", pairs="deo"),
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = data()
    with pytest.warns(UserWarning) as caught:
        s.fit(
            x, y, batch_size=16, epochs=10, verbose=0, shuffle=False, callbacks=[LadderTuner(40, first_round_steps=4)]
        )
    message = [str(w.message) for w in caught if "no number of chains" in str(w.message)]
    assert len(message) == 1 and "\n" not in message[0]
    assert message[0].startswith(
        "LadderTuner: no number of chains can be recommended: no tuning round attempted every pair at least 6 times"
    )
    assert "first_round_steps" in message[0]


# ---- the traces behind the mode changes -------------------------------------------------------


def test_the_traces_follow_the_states_through_their_swaps():
    """Each state's traced weights (ChainTracks), rebuilt from the per-slot weights and the swap
    log (tf_vrre.diagnostics.replicas.slot_paths) after every block."""
    s, ds = _ladder_targets.gaussian_sampler(3, [1.0, 1.3, 1.7, 2.2], 0.05, seed=1, steps_per_execution=5)
    tracks = ChainTracks(s)
    seen = []

    class Watch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(s.state.step.numpy())
            tracks.record(step)
            seen.append((step, np.stack([m.trainable_weights[0].numpy() for m in s.chains]), s.state.swap.log.numpy()))

    s.fit(ds, steps_per_epoch=200, epochs=1, verbose=0, callbacks=[Watch()])
    cols = swap_record.swap_log_columns(4)
    log = seen[-1][2]
    rows = [(t, p, log[t % swap_record.CAPACITY][cols.index(f"accepted_{p}")]) for t in range(200) for p in range(3)]
    times, slots = slot_paths(*np.array(rows).T, 4)
    assert len(times) > 20  # swaps happened
    traces = tracks.traces()
    for i, (step, by_slot, _) in enumerate(seen):
        where = slots[np.searchsorted(times, step) - 1]  # each state's slot after steps 0 .. step - 1
        np.testing.assert_array_equal(traces[:, i, :], by_slot[where])


def test_a_run_killed_mid_round_counts_the_same_mode_changes(tmp_path):
    """The multimodal target, rounds of 100 and 400 steps; killed at step 310 (checkpoint at 300,
    inside round 1) and resumed: the same ladders, mode changes and samples.  Every batch holds
    the 100 examples in the same order (a resumed dataset starts over: a shuffled one would sum
    them in another order)."""

    def run(out, kill=None):
        s, _, _ = _ladder_targets.mixture_sampler(
            np.geomspace(1.0, 4.0, 4).tolist(), 0.1, seed=0, batch_size=100, steps_per_execution=10, target=MODES
        )
        ds = tf.data.Dataset.from_tensor_slices(_ladder_targets.mixture_data(30, 0.02, 100)).batch(100).repeat()
        callbacks = [
            LadderTuner(500, first_round_steps=100, learning_rates=0.0, bounds=(1.0, 4.0), directory=f"{out}/ladder"),
            Checkpoint(f"{out}/ckpt"),
        ]
        if kill:
            callbacks.append(Interrupt(kill))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                s.fit(ds, steps_per_epoch=100, epochs=6, verbose=0, callbacks=callbacks)
        except KeyboardInterrupt:
            return None
        return s, callbacks[0].record

    ref, ref_record = run(str(tmp_path / "ref"))
    assert run(str(tmp_path / "k"), kill=310) is None
    s, record = run(str(tmp_path / "k"))
    assert ref_record["rounds"] == record["rounds"]
    assert record["rounds"][1]["mode_changes"] is not None  # the resumed round counted on its traces
    for a, b in zip(ref.weights, s.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
