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


BLOCKS = 10  # batch means: 2200 steps after burn-in in blocks of 220, far longer than the chain's memory


def _blocks(err, used, burn_in=200):
    """Batch means per offset: ``(squared error, sigma2 used)``, each ``[BLOCKS, M]``: the means over
    each of ``BLOCKS`` contiguous blocks of whole periods after ``burn_in``.

    The steps of a chain are correlated (the window penalty's sigma2 is one smoothed value for
    many steps, ESS about 1/7 of its draws), so the standard error of a mean over steps is the spread
    of the block means over ``sqrt(BLOCKS)``, not the steps' spread over ``sqrt(steps)``.
    """
    periods = (len(err) - burn_in) // M
    usable = periods - periods % BLOCKS
    e2 = (err[burn_in : burn_in + usable * M] ** 2).reshape(BLOCKS, -1, M).mean(1)
    u = used[burn_in : burn_in + usable * M].reshape(BLOCKS, -1, M).mean(1)
    return e2, u


def _mean_se(values):
    """Mean over blocks and its batch-means standard error (per column)."""
    return values.mean(0), values.std(0, ddof=1) / np.sqrt(len(values))


def _matches(blocks, z=4.5):
    """Per offset: the mean sigma2 used equals the mean squared error of the energy difference
    within ``z`` batch-means standard errors of their difference (paired by block)."""
    e2, used = blocks
    diff, se = _mean_se(used - e2)
    return np.abs(diff) <= z * se + 1e-6 * (1 + e2.mean(0))


def _growth(values):
    """Per block, how much ``values`` grow from offset 1 to offset 3 of the period."""
    return values[:, 3] - values[:, 1]


@pytest.fixture(scope="module")
def batch_blocks():
    err, used, _ = _run("batch")
    return _blocks(err, used)


def test_estimator_is_exact_at_refresh_and_its_noise_grows_through_the_period(batch_blocks):
    e2, _ = batch_blocks
    mse = e2.mean(0)
    assert mse[0] < 1e-6 * mse[1:].mean()  # refresh step: U~ is the exact energy
    growth, se = _mean_se(_growth(e2))
    assert growth > 4 * se, (growth, se)  # the noise grows with the steps since refresh


def test_default_penalty_matches_the_noise_at_every_offset(batch_blocks):
    assert _matches(batch_blocks).all(), batch_blocks
    used = batch_blocks[1].mean(0)
    assert used[0] < 1e-6 * used[1:].mean()  # sigma2 used is 0 at the refresh step


def test_paper_window_penalty_does_not():
    err, used, _ = _run("window")
    blocks = _blocks(err, used)
    assert not _matches(blocks)[0], blocks  # charges a penalty where the estimator is exact
    e2, u = blocks
    penalty, penalty_se = _mean_se(_growth(u))
    assert abs(penalty) <= 4.5 * penalty_se + 1e-6 * u.mean(), (penalty, penalty_se)  # one value per period
    lag, lag_se = _mean_se(_growth(e2) - _growth(u))
    assert lag > 4 * lag_se, (lag, lag_se)  # while the noise grows: too much early, too little late


def test_plain_minibatch_energies_keep_the_papers_rule_and_it_matches_their_noise():
    """Without control variates the noise has no period structure: the default is the paper's
    window rule (one sigma2), and it matches the noise at every offset."""
    err, used, _ = _run("auto", vr=False)
    blocks = _blocks(err, used)
    assert _matches(blocks).all(), blocks
    mse = blocks[0].mean(0)
    growth, se = _mean_se(_growth(blocks[0]))
    assert abs(growth) <= 4.5 * se and mse.min() > 0.5 * mse.max(), (growth, se, mse)  # flat through a period
