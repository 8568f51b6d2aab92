"""The posterior-fidelity metrics against values computed by hand, and their refusals."""

import re

import numpy as np
import pytest

from tf_vrre import diagnostics


def test_agreement_and_total_variation_by_hand():
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.5, 0.5, 0.0]])
    q = np.array([[0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8], [0.4, 0.6, 0.0]])
    # argmax p: 0, 1, 2, 0 (a tie goes to the first class); argmax q: 0, 2, 2, 1 -> 2 of 4 agree
    assert diagnostics.agreement(p, q) == 0.5
    # 1/2 sum_c |p - q| per point: (0.1+0.1+0)/2, (0.1+0.2+0.1)/2, (0.2+0.2+0.4)/2, (0.1+0.1)/2
    assert diagnostics.total_variation(p, q) == pytest.approx(np.mean([0.1, 0.2, 0.4, 0.1]), abs=1e-12)
    assert diagnostics.total_variation(p, p) == 0.0 and diagnostics.agreement(p, p) == 1.0
    assert diagnostics.total_variation(np.eye(2), np.eye(2)[::-1]) == 1.0  # disjoint


def test_wasserstein_1_and_ks_by_hand():
    # point 0: draws {0, 1} vs reference {0, 2}: F - G = 1 - 1/2 on [1, 2) -> W1 = 1/2, KS = 1/2
    # point 1: draws {5, 5} vs reference {1, 3}: W1 = mean |sorted difference| = (4 + 2) / 2 = 3, KS = 1
    d = np.array([[0.0, 5.0], [1.0, 5.0]])
    r = np.array([[0.0, 1.0], [2.0, 3.0]])
    assert diagnostics.wasserstein_1(d, r, standardize=False) == pytest.approx((0.5 + 3.0) / 2, abs=1e-12)
    sd = r.std(0, ddof=1)  # sqrt(2) at both points
    assert diagnostics.wasserstein_1(d, r) == pytest.approx((0.5 / sd[0] + 3.0 / sd[1]) / 2, abs=1e-12)
    assert diagnostics.ks_distance(d, r) == pytest.approx((0.5 + 1.0) / 2, abs=1e-12)
    # unequal numbers of draws: {0} vs {0, 1, 2, 3}: W1 = mean distance to 0 = 1.5; KS = 1 - 1/4
    one, four = np.zeros((1, 1)), np.arange(4.0)[:, None]
    assert diagnostics.wasserstein_1(one, four, standardize=False) == pytest.approx(1.5)
    assert diagnostics.ks_distance(one, four) == pytest.approx(0.75)
    assert diagnostics.wasserstein_1(d[..., None], r[..., None], standardize=False) == pytest.approx(1.75)  # [S, n, 1]


def test_predictive_nll_by_hand():
    p = np.array([[0.5, 0.5], [0.1, 0.9]])
    assert diagnostics.classification_nll(p, [1, 1]) == pytest.approx(-(np.log(0.5) + np.log(0.9)) / 2)
    # two draws f = 0 and f = 2 at one point, y = 1, sigma = 1: p(y) = N(1; 0, 1) (both at distance 1)
    assert diagnostics.regression_nll(np.array([[0.0], [2.0]]), [1.0], 1.0) == pytest.approx(
        0.5 + 0.5 * np.log(2 * np.pi)
    )
    # draws 0 and 10 at y = 0, sigma = 2: p = (N(0; 0, 4) + N(0; 10, 4)) / 2
    dens = (np.exp(0) + np.exp(-12.5)) / 2 / (2 * np.sqrt(2 * np.pi))
    assert diagnostics.regression_nll(np.array([[0.0], [10.0]]), [0.0], 2.0) == pytest.approx(-np.log(dens), rel=1e-12)


def test_fidelity_dicts():
    p = np.array([[0.9, 0.1], [0.2, 0.8]])
    out = diagnostics.classification_fidelity(p, p[::-1], labels=[0, 1])
    assert out == {
        "agreement": 0.0,
        "total_variation": pytest.approx(0.7),
        "nll": pytest.approx(-(np.log(0.9) + np.log(0.8)) / 2),
        "reference_nll": pytest.approx(-(np.log(0.2) + np.log(0.1)) / 2),
    }
    assert set(diagnostics.classification_fidelity(p, p)) == {"agreement", "total_variation"}
    r = np.random.default_rng(0).normal(size=(50, 3))
    assert set(diagnostics.regression_fidelity(r, r, labels=[0, 0, 0], noise_scale=1.0)) == {
        "wasserstein_1",
        "ks_distance",
        "nll",
        "reference_nll",
    }
    assert diagnostics.regression_fidelity(r, r)["wasserstein_1"] == 0.0


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: diagnostics.agreement(np.full((2, 2), 0.5), np.full((3, 2), 0.5)), "same shape"),
        (lambda: diagnostics.total_variation(np.array([[0.5, 0.6]]), np.array([[0.5, 0.5]])), "sum to 1"),
        (lambda: diagnostics.total_variation(np.array([0.5, 0.5]), np.array([0.5, 0.5])), "[points, classes"),
        (lambda: diagnostics.wasserstein_1(np.zeros((3, 2)), np.zeros((3, 4))), "same points"),
        (lambda: diagnostics.wasserstein_1(np.zeros((3, 2)), np.zeros((1, 2))), "draws >= 2"),
        (lambda: diagnostics.wasserstein_1(np.zeros((3, 2)), np.zeros((3, 2))), "standardize=False"),
        (lambda: diagnostics.ks_distance(np.full((3, 2), np.nan), np.zeros((3, 2))), "finite"),
        (lambda: diagnostics.classification_nll(np.full((2, 2), 0.5), [0, 2]), "[0, 2)"),
        (lambda: diagnostics.classification_nll(np.full((2, 2), 0.5), [0.0, 1.0]), "integer"),
        (lambda: diagnostics.classification_nll(np.full((2, 2), 0.5), [0]), "one entry per point"),
        (lambda: diagnostics.regression_nll(np.zeros((3, 2)), [0.0, 0.0], 0.0), "noise_scale"),
    ],
)
def test_refusals_name_the_argument(call, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        call()
