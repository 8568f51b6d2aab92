"""The swap penalty must match the estimator's noise at each step of the snapshot period.

On the 1-D mixture the exact energy of every state is known, so the error of each step's swap
energy difference ``e_t = (U~_lo - U~_hi) - (U_lo - U_hi)`` is observed.  The control-variate
estimator is exact at the refresh step and its noise grows through the period.  For the
corrected rule to target the tempered posterior, the sigma2 used at a step must be the
variance of that step's noise: per offset ``k = t mod m``, the mean sigma2 used must equal the
mean squared error ``E[e_t^2 | k]`` (both exactly 0 at ``k = 0``).  The default penalty
(``"batch"``: each step's own within-batch estimate, unbiased for the variance at the current
weights) passes; the paper's single window-averaged sigma2 fails the same check.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre
from tf_vrre.sgmcmc import swap_record
from tf_vrre.workflows.gaussian_mixture import target

TARGET = target.Mixture(phi=16.0, sigma=4.0, prior_sd=6.0)
N, BATCH, M, STEPS = 300, 30, 4, 2400
COLS = {c: i for i, c in enumerate(swap_record.swap_log_columns(2))}


class _States(keras.callbacks.Callback):
    """Both chains' beta before each step (the states whose energies the step estimates)."""

    def __init__(self):
        super().__init__()
        self.beta = []

    def on_train_batch_begin(self, batch, logs=None):
        self.beta.append([float(c.trainable_weights[0].numpy()) for c in self.model.chains])


def _run(penalty, seed=0, vr=True):
    data = target.make_data(N, seed=0, target=TARGET)
    s = tf_vrre.ReplicaExchangeSampler(
        lambda: target.build_model(30.0),
        data_size=N,
        num_chains=2,
        temperatures=[8.0, 1000.0],
        learning_rates=1e-3,
        dynamics="sgld",
        weight_decay=target.weight_decay(TARGET),
        nll=target.target_nll(TARGET),
        seed=seed,
        swap=tf_vrre.CorrectedSwap(correction=2.0, penalty=penalty),
        variance_reduction=tf_vrre.ControlVariates(period=M, batch_size=N) if vr else None,
    )
    if vr:
        s.set_reference_data(data)
    states, rows = _States(), []

    class _Rows(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(s.state.step.numpy()) - 1
            rows.append(s.state.swap.log.numpy()[step % swap_record.CAPACITY].copy())

    ds = tf.data.Dataset.from_tensor_slices(data).shuffle(N, seed=seed).repeat().batch(BATCH, drop_remainder=True)
    s.fit(ds, steps_per_epoch=STEPS, epochs=1, verbose=0, callbacks=[states, _Rows()])
    beta, rows = np.asarray(states.beta), np.asarray(rows)
    assert (rows[:, COLS["step"]] == np.arange(STEPS)).all()
    exact = target.energy(beta, data, target=TARGET)  # [steps, 2]
    estimated = rows[:, [COLS["energy_lo_0"], COLS["energy_hi_0"]]]
    err = (estimated[:, 0] - estimated[:, 1]) - (exact[:, 0] - exact[:, 1])
    return err, rows[:, COLS["sigma2_0"]], np.arange(STEPS) % M


def _by_offset(err, used, offset, burn_in=200):
    """Per offset: (MSE of the energy difference, its standard error, mean sigma2 used, its SE)."""
    out = []
    for k in range(M):
        sel = (offset == k) & (np.arange(len(err)) >= burn_in)
        e2, u = err[sel] ** 2, used[sel]
        out.append((e2.mean(), e2.std(ddof=1) / np.sqrt(e2.size), u.mean(), u.std(ddof=1) / np.sqrt(u.size)))
    return np.asarray(out)


def _matches(table, z=4.5):
    """Mean sigma2 used equals the MSE at every offset within ``z`` combined standard errors."""
    mse, mse_se, used, used_se = table.T
    return np.abs(used - mse) <= z * np.sqrt(mse_se**2 + used_se**2) + 1e-6 * (1 + mse)


@pytest.fixture(scope="module")
def batch_table():
    return _by_offset(*_run("batch"))


def test_estimator_is_exact_at_refresh_and_its_noise_grows_through_the_period(batch_table):
    mse = batch_table[:, 0]
    assert mse[0] < 1e-6 * mse[1:].mean()  # refresh step: U~ is the exact energy
    assert mse[3] > 1.5 * mse[1], mse  # the noise grows with the steps since refresh


def test_default_penalty_matches_the_noise_at_every_offset(batch_table):
    assert _matches(batch_table).all(), batch_table
    assert batch_table[0, 2] < 1e-6 * batch_table[1:, 2].mean()  # sigma2 used is 0 at the refresh step


def test_paper_window_penalty_does_not(batch_table):
    window = _by_offset(*_run("window"))
    assert not _matches(window)[0], window  # charges a penalty where the estimator is exact
    used = window[1:, 2]
    assert used.max() / used.min() < 1.3 < window[3, 0] / window[1, 0], window  # flat vs growing noise


def test_plain_minibatch_energies_keep_the_papers_rule_and_it_matches_their_noise():
    """Without control variates the noise has no period structure: the default is the paper's
    window rule (one sigma2), and it matches the noise at every offset."""
    err, used, offset = _run("auto", vr=False)
    table = _by_offset(err, used, offset)
    assert _matches(table).all(), table
    assert table[:, 0].min() > 0.5 * table[:, 0].max(), table  # flat: no growth through a period
