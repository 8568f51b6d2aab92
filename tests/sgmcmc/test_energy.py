"""Energy estimators: the control-variate energy is unbiased, exact at the snapshot, and
has lower variance than the plain mini-batch energy near the snapshot."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_vrre.sgmcmc import control_variates, energy
from tf_vrre.workflows.gaussian_mixture import target


def _nll_vec(beta, x):
    return target.nll(tf.constant(x[:, None]), None, tf.fill([len(x), 1], np.float32(beta))).numpy().astype(np.float64)


def test_mixture_nll_matches_numpy_energy():
    x = target.make_data(200, seed=3)
    for beta in (-5.0, 3.0, 25.0):
        total = _nll_vec(beta, x).sum() + 0.5 * beta**2 / target.PRIOR_SD**2
        assert total == pytest.approx(target.energy(np.array([beta]), x)[0], rel=1e-5)


def _estimators(beta, snap, x, n, trials, rng):
    big_n = len(x)
    l_cur, l_snap = _nll_vec(beta, x), _nll_vec(snap, x)
    u_hat = l_snap.sum()
    plain, vr = [], []
    for _ in range(trials):
        b = rng.choice(big_n, n, replace=False)
        plain.append(float(energy.minibatch_energy(l_cur[b].sum(), n, big_n)))
        vr.append(float(energy.control_variate_energy(l_cur[b].sum(), l_snap[b].sum(), u_hat, -1.0, n, big_n)))
    return np.array(plain), np.array(vr), l_cur.sum()


def test_control_variate_energy_unbiased_exact_and_lower_variance():
    rng = np.random.default_rng(0)
    x = target.make_data(1000, seed=0)
    plain, vr, exact = _estimators(-4.9, -5.0, x, 100, 3000, rng)
    assert abs(vr.mean() - exact) <= 4.5 * vr.std(ddof=1) / np.sqrt(len(vr))
    assert abs(plain.mean() - exact) <= 4.5 * plain.std(ddof=1) / np.sqrt(len(plain))
    assert vr.var() < plain.var() / 100  # near the snapshot the control variate removes most noise
    # equal to the exact energy when beta is the snapshot
    _, vr0, exact0 = _estimators(-5.0, -5.0, x, 100, 20, rng)
    np.testing.assert_allclose(vr0, exact0, rtol=1e-12)


def test_adaptive_coefficient_formula():
    got = energy.control_variate_energy(10.0, 8.0, 75.0, -0.5, 10, 100, prior=1.0)
    assert float(got) == pytest.approx(100.0 - 0.5 * (80.0 - 75.0) + 1.0)


def test_prior_energy():
    w = [tf.constant([1.0, 2.0]), tf.constant([[3.0]])]
    assert float(energy.prior_energy(w, 0.5)) == pytest.approx(0.25 * 14.0)
    assert float(energy.prior_energy(w, 0.0)) == 0.0


def test_resolve_nll_is_per_example():
    nll = energy.resolve_nll(keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    logits = tf.constant([[2.0, 0.0], [0.0, 1.0]])
    got = nll(None, tf.constant([0, 0]), logits).numpy()
    exp = -np.log(np.exp([2.0, 0.0]) / np.exp([[2.0, 0.0], [0.0, 1.0]]).sum(1))
    np.testing.assert_allclose(got, exp, rtol=1e-5)
    with pytest.raises(ValueError, match="labels"):
        nll(None, None, logits)


def test_gaussian_nll():
    got = energy.gaussian_nll(None, tf.constant([1.0, 2.0]), tf.constant([[0.0], [2.0]]), scale=2.0).numpy()
    exp = np.array([0.125, 0.0]) + np.log(2.0 * np.sqrt(2 * np.pi))
    np.testing.assert_allclose(got, exp, rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs,arg",
    [
        ({"period": 0}, "period"),
        ({"period": 2.5}, "period"),
        ({"period": 4, "coefficient": "auto"}, "coefficient"),
        ({"period": 4, "smoothing": 0.0}, "smoothing"),
        ({"period": 4, "batch_size": 0}, "batch_size"),
    ],
)
def test_control_variates_rejects_bad_arguments(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        control_variates.ControlVariates(**kwargs)


def test_control_variates_config_round_trip():
    cv = control_variates.ControlVariates(
        period=392, coefficient="adaptive", smoothing=0.2, initial_coefficient=-0.8, batch_size=500
    )
    back = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(cv))
    assert back.get_config() == cv.get_config()
    assert back.adaptive
