"""Metrics against values computed by hand (TFP / Keras do the work in tf_vrre.workflows.image_classification.metrics)."""

import math

import numpy as np
import pytest

from tf_vrre.workflows.image_classification import metrics

P = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4], [0.25, 0.5, 0.25]])
Y = np.array([0, 2, 2, 1])


def test_classification_metrics_by_hand():
    assert metrics.accuracy(P, Y) == 0.75  # argmax 0, 1, 2, 1
    assert metrics.nll(P, Y) == pytest.approx(
        -(math.log(0.7) + math.log(0.3) + math.log(0.4) + math.log(0.5)) / 4, rel=1e-6
    )
    # sum_j (p_j - o_j)^2 per row: 0.14, 0.86, 0.54, 0.375
    assert metrics.brier(P, Y) == pytest.approx((0.14 + 0.86 + 0.54 + 0.375) / 4, rel=1e-6)
    # confidences 0.7, 0.6, 0.4, 0.5 (correct 1, 0, 1, 1), one per bin of width 1/15
    assert metrics.ece(P, Y, num_bins=15) == pytest.approx((0.3 + 0.6 + 0.6 + 0.5) / 4, abs=1e-6)
    # 2 bins: [0.5, 1] holds 0.7, 0.6, 0.5 (accuracy 2/3, confidence 0.6); [0, 0.5) holds 0.4 (correct)
    assert metrics.ece(P, Y, num_bins=2) == pytest.approx(0.75 * abs(2 / 3 - 0.6) + 0.25 * abs(1 - 0.4), abs=1e-6)
    bins = metrics.reliability_bins(P, Y, num_bins=2)
    assert bins[0][2:] == (1, pytest.approx(0.4), 1.0)
    assert bins[1][2] == 3 and bins[1][3] == pytest.approx(0.6) and bins[1][4] == pytest.approx(2 / 3)


def test_uncertainty_metrics_by_hand():
    h = metrics.entropy(P)
    assert h[0] == pytest.approx(-(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1)), rel=1e-9)
    assert metrics.entropy(np.full((1, 10), 0.1))[0] == pytest.approx(math.log(10))
    assert metrics.ood_brier(P) == pytest.approx((0.54 + 0.46 + 0.34 + 0.375) / 4)  # sum_j p_j^2 per row
    assert metrics.ood_brier(np.full((3, 10), 0.1)) == pytest.approx(0.1)  # optimum 1 / C
    neg, pos = [0.1, 0.4, 0.35, 0.8], [0.9, 0.3, 0.7, 0.4]
    # pairs pos > neg: 4 + 1 + 3 + 2, plus half of the tie (0.4, 0.4): 10.5 of 16
    assert metrics.auroc(neg, pos) == pytest.approx(10.5 / 16, abs=1e-6)
    assert metrics.auroc([0.0, 0.5], [1.5, 2.0], low=0.0, high=math.log(10)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least one score"):
        metrics.auroc([], [0.5])
    with pytest.raises(ValueError, match=r"labels must be 4 integers in \[0, 2\]"):
        metrics.accuracy(P, [0, 1, 2, 3])


def test_fitted_temperature_is_the_exact_optimum():
    # 8 of 10 binary predictions right, all with logits (a, -a): p_right = sigmoid(2a / T) and the
    # NLL is minimal at sigmoid(2a / T) = 0.8, i.e. T = 2a / log 4.
    a = 3.0
    logits = np.tile([a, -a], (10, 1))
    labels = np.array([0] * 8 + [1] * 2)
    t, value = metrics.fit_temperature(logits, labels)
    assert t == pytest.approx(2 * a / math.log(4), rel=1e-6)
    assert value == pytest.approx(-(0.8 * math.log(0.8) + 0.2 * math.log(0.2)), rel=1e-9)
    # BMA of two different samples: the fitted T minimises the NLL of mean_s softmax(z_s / T)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(2, 50, 4)) * 4
    y = rng.integers(0, 4, 50)
    t, value = metrics.fit_temperature(z, y)
    grid = np.exp(np.linspace(math.log(t) - 0.5, math.log(t) + 0.5, 2001))
    nll = [-np.mean(np.log(metrics.softmax(z, g).mean(0)[np.arange(50), y])) for g in grid]
    assert grid[int(np.argmin(nll))] == pytest.approx(t, rel=1e-3) and min(nll) >= value - 1e-9


def test_a_fit_without_an_interior_optimum_names_the_bound_it_hit():
    """Logits pointing away from the labels: the NLL falls as ``T`` grows towards the uniform
    prediction (log C), so the fit ends at the upper bound; all right with margin: the NLL falls
    as ``T`` shrinks, to the lower bound.  Neither returns a number such as T = 3.5e+102."""
    y = np.arange(30) % 3
    with pytest.raises(metrics.TemperatureFitError, match="upper bound T = 100") as err:
        metrics.fit_temperature(-2.0 * np.eye(3)[y], y)
    assert err.value.bound == "upper" and err.value.temperature == pytest.approx(100.0)
    # NLL at T = 100 of logits (-2 on the label, 0 elsewhere): 0.02 + log(exp(-0.02) + 2)
    assert err.value.nll == pytest.approx(0.02 + math.log(math.exp(-0.02) + 2), rel=1e-6)
    with pytest.raises(metrics.TemperatureFitError, match="lower bound T = 0.01") as err:
        metrics.fit_temperature(2.0 * np.eye(3)[y], y)
    assert err.value.bound == "lower" and err.value.temperature == pytest.approx(0.01)
    with pytest.raises(ValueError, match="bounds must be 0 < lo < initial < hi"):
        metrics.fit_temperature(np.eye(3)[y], y, bounds=(2.0, 10.0))
