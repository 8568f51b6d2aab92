"""Update rules against their formulas."""

import numpy as np
import pytest
import tensorflow as tf

from tf_vrre.sgmcmc import dynamics


def test_sgld_update():
    got = dynamics.sgld_update(tf.constant(1.0), tf.constant(2.0), 0.01, 4.0, tf.constant(0.5))
    assert float(got) == pytest.approx(1.0 - 0.02 + np.sqrt(2 * 0.01 * 4.0) * 0.5)


def test_sghmc_update_momentum_form():
    w, v = dynamics.sghmc_update(
        tf.constant(1.0), tf.constant(0.3), tf.constant(2.0), 0.01, 4.0, 0.1, tf.constant(-1.0)
    )
    v_exp = 0.9 * 0.3 - 0.02 + np.sqrt(2 * 0.1 * 0.01 * 4.0) * -1.0
    assert float(v) == pytest.approx(v_exp)
    assert float(w) == pytest.approx(1.0 + v_exp)


def test_msgd_has_no_noise():
    w, v = dynamics.sghmc_update(tf.constant(1.0), tf.constant(0.0), tf.constant(2.0), 0.1, 0.0, 0.1)
    assert float(v) == pytest.approx(-0.2)
    assert float(w) == pytest.approx(0.8)


def test_velocity_scale():
    s = dynamics.velocity_scale(
        tf.constant([1e-3, 0.0]), tf.constant([1.0, 0.0]), tf.constant([2e-3, 1.0]), tf.constant([4.0, 1.0])
    )
    assert s.numpy() == pytest.approx([np.sqrt(8.0), 1.0])
