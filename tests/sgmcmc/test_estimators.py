"""Within-batch variance estimator and stochastic approximation."""

import numpy as np
import pytest
import tensorflow as tf

from tf_vrre.sgmcmc import estimators


def test_moments_and_sample_variance():
    v = np.array([1.0, 2.0, 4.0, 7.0])
    m = estimators.moments(tf.constant(v)).numpy()
    assert m.tolist() == [4.0, 14.0, 70.0]
    assert float(estimators.sample_variance(*m)) == pytest.approx(np.var(v, ddof=1))


def test_estimator_variance_matches_sampling_without_replacement():
    rng = np.random.default_rng(0)
    big_n, n = 400, 40
    d = rng.gamma(2.0, 3.0, size=big_n)
    truth = big_n**2 * (1 - n / big_n) * np.var(d, ddof=1) / n
    trials = 4000
    ests, totals = [], []
    for _ in range(trials):
        b = d[rng.choice(big_n, n, replace=False)]
        totals.append(big_n / n * b.sum())
        ests.append(float(estimators.estimator_variance(*estimators.moments(tf.constant(b)).numpy(), big_n)))
    ests = np.array(ests)
    # unbiased for the true variance of the estimator ...
    assert abs(ests.mean() - truth) <= 4.5 * ests.std() / np.sqrt(trials)
    # ... which is the spread of (N/n) sum_B d over batches (chi-square SE of a variance).
    emp = np.var(totals, ddof=1)
    assert abs(emp - truth) <= 4.5 * truth * np.sqrt(2.0 / trials) * 1.5


def test_covariance_and_variance():
    rng = np.random.default_rng(1)
    a = rng.normal(size=50)
    b = 0.5 * a + rng.normal(size=50)
    cov, var = estimators.covariance_and_variance(estimators.cross_moments(tf.constant(a), tf.constant(b)))
    assert float(cov) == pytest.approx(np.cov(a, b)[0, 1])
    assert float(var) == pytest.approx(np.var(b, ddof=1))


def test_stochastic_approximation():
    assert float(estimators.stochastic_approximation(10.0, 20.0, 0.25, tf.constant(True))) == pytest.approx(12.5)
    assert float(estimators.stochastic_approximation(10.0, 20.0, 0.25, tf.constant(False))) == 20.0
