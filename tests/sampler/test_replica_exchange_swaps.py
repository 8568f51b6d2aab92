"""ReplicaExchangeSampler: the energies and swaps inside the model (VR energies at a refresh, whole-state
swaps, the exact swap law of frozen states, cooling, ladders of three chains, cached snapshot energies)."""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf
from _replica_exchange_models import (
    DELTA_U,
    N_MIX,
    bn_classifier,
    classification_data,
    mixture_sampler,
    scalar_model,
    two_state_nll,
)

import tf_vrre
from tf_vrre.sgmcmc import state
from tf_vrre.workflows.gaussian_mixture import target


def test_vr_energy_is_exact_at_refresh():
    data = target.make_data(N_MIX, seed=1)
    # The paper's penalty: no swap before the first sigma2 window, so the states stay in their slots.
    s = mixture_sampler(
        variance_reduction=tf_vrre.ControlVariates(period=5, batch_size=64),
        swap=tf_vrre.CorrectedSwap(penalty="window"),
    )
    s.chains[1].set_weights([np.float32(20.0)])
    s.set_reference_data(data)
    s.fit(tf.data.Dataset.from_tensor_slices(data).batch(40).take(1), epochs=1, verbose=0)
    exact = target.energy(np.array([30.0, 20.0]), data)
    np.testing.assert_allclose(s.state.swap.last_energy.numpy(), exact, rtol=1e-6)
    np.testing.assert_allclose(
        s.state.control_variates.snapshot_energy.numpy(),
        exact - 0.5 * np.array([30.0, 20.0]) ** 2 / target.PRIOR_SD**2,
        rtol=1e-6,
    )


def test_swap_moves_whole_state_and_rescales_velocity():
    data = target.make_data(N_MIX)
    s = mixture_sampler(
        dynamics="sghmc", learning_rates=[1e-4, 2e-4], variance_reduction=tf_vrre.ControlVariates(period=4)
    )
    s.chains[0].set_weights([np.float32(1.0)])
    s.chains[1].set_weights([np.float32(2.0)])
    s.snapshots[0].set_weights([np.float32(-1.0)])
    s.snapshots[1].set_weights([np.float32(-2.0)])
    s.state.chains.velocities[0][0].assign(0.5)
    s.state.chains.velocities[1][0].assign(-0.25)
    s.state.control_variates.snapshot_energy.assign([10.0, 20.0])
    lrs, temps = tf.constant([1e-4, 2e-4]), tf.constant([10.0, 1000.0])
    ((g0, g1),) = state.exchange(
        s.state.chains,
        s.state.control_variates,
        tf.constant([1, 0]),
        (lrs, temps),
        [[tf.constant(7.0), tf.constant(8.0)]],
    )
    assert (float(g0), float(g1)) == (8.0, 7.0)
    assert float(s.chains[0].weights[0].numpy()) == 2.0 and float(s.chains[1].weights[0].numpy()) == 1.0
    assert float(s.snapshots[0].weights[0].numpy()) == -2.0
    assert s.state.control_variates.snapshot_energy.numpy().tolist() == [20.0, 10.0]
    # slot 0 (lr 1e-4, tau 10) receives slot 1's velocity (lr 2e-4, tau 1000)
    velocities = s.state.chains.velocities
    assert float(velocities[0][0].numpy()) == pytest.approx(-0.25 * np.sqrt(1e-4 * 10 / (2e-4 * 1000)), rel=1e-5)
    assert float(velocities[1][0].numpy()) == pytest.approx(0.5 * np.sqrt(2e-4 * 1000 / (1e-4 * 10)), rel=1e-5)
    del data


def test_two_state_swap_rate_and_direction():
    """Exact energies (full batch, so sigma2 = 0): swaps follow min(1, exp(delta (U1 - U2)))."""
    x = np.zeros((100, 1), np.float32)
    s = tf_vrre.ReplicaExchangeSampler(
        scalar_model,
        data_size=100,
        num_chains=2,
        temperatures=[1.0, 2.0],
        learning_rates=1e-12,
        dynamics="sgld",
        nll=two_state_nll,
        swap=tf_vrre.CorrectedSwap(period=1),
        seed=2,
        independent_init=True,
    )
    s.chains[0].set_weights([np.float32(0.0)])
    s.chains[1].set_weights([np.float32(1.0)])
    states = []

    class Track(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            states.append(float(s.cold_model.weights[0].numpy()))

    steps = 1500
    s.fit(
        tf.data.Dataset.from_tensor_slices(x).batch(100).repeat(),
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        callbacks=[Track()],
    )
    cold_low = np.round(np.asarray(states)) == 0.0  # state after each step
    assert float(s.state.swap.sigma2.numpy()[0]) == 0.0
    p = np.exp(-(1.0 - 0.5) * DELTA_U)  # cold in the low state -> swap with prob exp(delta (U_lo - U_hi))
    # From the high state the swap is certain; from the low state it happens with probability p.
    before, after = cold_low[1:-1], cold_low[2:]
    assert np.all(after[~before]), "cold chain in the high-energy state must always swap down"
    n_low = before.sum()
    rate = np.mean(~after[before])
    assert abs(rate - p) <= 4.5 * np.sqrt(p * (1 - p) / n_low), (rate, p)
    frac = cold_low[1:].mean()
    pi = 1.0 / (1.0 + p)
    se = np.sqrt(pi * (1 - pi) * (1 - p) / (1 + p) / len(cold_low))
    assert abs(frac - pi) <= 4.5 * se, (frac, pi)
    assert frac > 0.5  # direction: the cold chain holds the low-energy state most of the time


def test_cooling_allows_at_most_one_swap_per_window():
    x = np.zeros((100, 1), np.float32)
    s = tf_vrre.ReplicaExchangeSampler(
        scalar_model,
        data_size=100,
        num_chains=2,
        temperatures=[1.0, 2.0],
        learning_rates=1e-12,
        dynamics="sgld",
        nll=two_state_nll,
        swap=tf_vrre.CorrectedSwap(period=1, cooling_steps=50),
        seed=2,
        independent_init=True,
    )
    s.chains[1].set_weights([np.float32(1.0)])
    hist = s.fit(tf.data.Dataset.from_tensor_slices(x).batch(100).repeat(), steps_per_epoch=51, epochs=4, verbose=0)
    swaps = np.diff([0.0] + hist.history["swaps"])
    assert np.all(swaps <= 1) and hist.history["swaps"][-1] >= 2


def test_ladder_of_three_chains_with_deo_and_random_pairs():
    data = target.make_data(N_MIX, seed=4)
    for pairs in ("deo", "random"):
        s = mixture_sampler(
            num_chains=3,
            temperatures=[10.0, 100.0, 1000.0],
            swap=tf_vrre.CorrectedSwap(pairs=pairs, period=4),
            variance_reduction=tf_vrre.ControlVariates(period=4),
        )
        s.set_reference_data(data)
        hist = s.fit(tf.data.Dataset.from_tensor_slices(data).batch(20), epochs=3, verbose=0)
        for key in ("sigma2_0", "sigma2_1", "swaps_0", "swaps_1", "accept_rate_0", "accept_rate_1", "c_2"):
            assert key in hist.history, key
        attempts = s.state.swap.attempt_count.numpy()
        if pairs == "deo":
            assert abs(int(attempts[0]) - int(attempts[1])) <= 1
        assert attempts.sum() == s.state.swap.attempt_index.numpy()  # one pair per attempt for 3 chains


def test_adaptive_coefficient_moves_and_stays_finite():
    data = target.make_data(N_MIX, seed=5)
    s = mixture_sampler(
        learning_rates=1e-3, variance_reduction=tf_vrre.ControlVariates(period=10, coefficient="adaptive")
    )
    s.set_reference_data(data)
    s.fit(tf.data.Dataset.from_tensor_slices(data).repeat().batch(20), steps_per_epoch=60, epochs=1, verbose=0)
    c = s.state.control_variates.coefficient.numpy()
    assert np.all(np.isfinite(c)) and np.any(c != -1.0)
    assert np.all((c < 0) & (c > -2))


@pytest.mark.parametrize("model_fn,mode", [(target.build_default_model, "train"), (bn_classifier, "inference")])
def test_cached_snapshot_energies_equal_snapshot_forwards(model_fn, mode):
    """Batches with example indices read snapshot NLLs from the full pass: same trajectory."""
    if model_fn is bn_classifier:
        x, y = classification_data()
        data, kw = (x, y), {}
    else:
        data, kw = target.make_data(N_MIX, seed=6), {"nll": target.nll, "weight_decay": target.weight_decay()}
    out = []
    for cache in (True, False):
        s = tf_vrre.ReplicaExchangeSampler(
            model_fn,
            data_size=len(data[0]) if isinstance(data, tuple) else len(data),
            num_chains=2,
            temperatures=[1.0, 30.0],
            learning_rates=1e-4,
            dynamics="sgld",
            seed=8,
            energy_mode=mode,
            variance_reduction=tf_vrre.ControlVariates(period=5, batch_size=64, cache=cache),
            **kw,
        )
        if "nll" not in kw:
            s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        s.set_reference_data(data)
        assert s._cache_exact == cache
        s.fit(s.make_dataset(40, seed=1), epochs=3, verbose=0)
        out.append((s.state.swap.last_energy.numpy(), s.state.swap.sigma2.numpy(), [c.get_weights() for c in s.chains]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-3)
    for a, b in zip(out[0][2], out[1][2]):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_train_mode_snapshot_uses_batch_statistics_like_the_chain():
    """energy_mode="train" with BatchNorm: at a refresh (snapshot == weights) the VR energy is
    U_hat + prior, U_hat summing training-mode (batch-statistics) losses over the reference
    batches; a snapshot evaluated with moving statistics gives something else."""
    x, y = classification_data(80)
    s = tf_vrre.ReplicaExchangeSampler(
        bn_classifier,
        data_size=80,
        num_chains=2,
        temperatures=[1.0, 2.0],
        learning_rates=1e-4,
        energy_mode="train",
        weight_decay=0.5,
        seed=0,
        independent_init=True,
        variance_reduction=tf_vrre.ControlVariates(period=5, batch_size=40),
    )
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
    expected = [
        float(loss(y[:40], c(x[:40], training=True)))
        + float(loss(y[40:], c(x[40:], training=True)))
        + 0.25 * sum(float(np.sum(np.square(v.numpy()))) for v in c.trainable_weights)
        for c in s.chains
    ]
    s.fit(tf.data.Dataset.from_tensor_slices((x[:40], y[:40])).batch(40).take(1), epochs=1, verbose=0)
    np.testing.assert_allclose(s.state.swap.last_energy.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("pairs,attempt_every", [("random", 1), ("deo", 1), ("random", 3)])
def test_ladder_swaps_sample_the_exact_permutation_law(pairs, attempt_every):
    """Three frozen states (exact energies U = 2.4 beta^2, beta in {0, 1, 1.5}) on the ladder
    tau = (1, 2, 4): the swap chain over assignments sigma must visit each with probability
    prop. to exp(-sum_h U(x_sigma(h)) / tau_h) (both pair schedules preserve it, and so does
    attempting swaps only every k-th step)."""
    x = np.zeros((100, 1), np.float32)
    temps, vals = [1.0, 2.0, 4.0], [0.0, 1.0, 1.5]
    s = tf_vrre.ReplicaExchangeSampler(
        scalar_model,
        data_size=100,
        num_chains=3,
        temperatures=temps,
        learning_rates=1e-12,
        dynamics="sgld",
        nll=two_state_nll,
        swap=tf_vrre.CorrectedSwap(period=1, pairs=pairs, attempt_every=attempt_every),
        seed=3,
        independent_init=True,
    )
    s.compile(steps_per_execution=4)  # the state every 4 steps
    for chain, b in zip(s.chains, vals):
        chain.set_weights([np.float32(b)])
    states = []

    class Track(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            states.append(tuple(round(float(c.weights[0].numpy()), 2) for c in s.chains))  # noise: ~1e-3 over the run

    s.fit(
        tf.data.Dataset.from_tensor_slices(x).batch(100).repeat(),
        steps_per_epoch=6000,
        epochs=1,
        verbose=0,
        callbacks=[Track()],
    )
    perms = list(itertools.permutations(vals))
    w = np.array([np.exp(-sum(DELTA_U * b * b / t for b, t in zip(p, temps))) for p in perms])
    w /= w.sum()
    seq = states[1:]  # sigma2 is ready after the first window
    assert set(seq) <= set(perms)
    ind = np.array([[st == p for p in perms] for st in seq], float)  # [T, 6]
    batches = 20
    t = len(ind) - len(ind) % batches
    means = ind[:t].reshape(batches, -1, len(perms)).mean(1)
    est, se = means.mean(0), means.std(0, ddof=1) / np.sqrt(batches)
    assert np.all(np.abs(est - w) <= 4.5 * se + 2e-3), (est, w, se)
