"""tf_vrre.numerics: float32 ranges and the one rule per hyperparameter kind (numbers and lists,
no TensorFlow: the import contract in pyproject.toml), with errors that name the argument and the
allowed range."""

import numpy as np
import pytest

from tf_vrre import numerics
from tf_vrre.numerics import check_hyperparameter


def test_numbers_and_lists_pass_in_their_form():
    assert check_hyperparameter("temperatures", [0.01, 0.05]) == [0.01, 0.05]
    assert check_hyperparameter("temperatures", np.array([1, 2])) == [1.0, 2.0]
    assert check_hyperparameter("learning_rates", 2e-6) == 2e-6
    assert check_hyperparameter("learning_rates", 2e-6, num_chains=3) == [2e-6] * 3
    assert check_hyperparameter("correction", 1.5e5, num_chains=3) == 1.5e5  # one F for the sampler
    assert check_hyperparameter("temperatures", 0.0, num_chains=1, swaps=False) == [0.0]
    # without swaps the chains are independent: equal temperatures (a deep ensemble of M-SGD runs)
    assert check_hyperparameter("temperatures", 0.0, num_chains=5, swaps=False) == [0.0] * 5
    assert check_hyperparameter("temperatures", [1.0, 1.0, 2.0], swaps=False) == [1.0, 1.0, 2.0]
    with pytest.raises(ValueError, match=r"must not decrease in float32 without swaps .*got \[2.0, 1.0\]"):
        check_hyperparameter("temperatures", [2.0, 1.0], swaps=False)


@pytest.mark.parametrize(
    "kind,value,kwargs,error,message",
    [
        (
            "temperatures",
            [0.05, 0.01],
            {},
            ValueError,
            r"temperatures must be strictly increasing in float32 .*"
            r"got \[0.05, 0.01\]",
        ),
        ("temperatures", 0.5, {"num_chains": 2}, ValueError, "strictly increasing"),  # one value for two chains
        ("temperatures", [1.0, 1.00000001], {}, ValueError, "strictly increasing in float32"),  # equal in float32
        (
            "temperatures",
            [0.0, 1.0],
            {},
            ValueError,
            r"temperatures must be finite and > 0 with swaps, got \[0.0, 1.0\]",
        ),
        ("temperatures", [-1.0, 1.0], {"swaps": False}, ValueError, "temperatures must be finite and >= 0"),
        ("temperatures", [1.0, 2.0, 3.0], {"num_chains": 2}, ValueError, r"one entry per chain \(2\), got 3"),
        ("temperatures", [], {}, ValueError, "one entry per chain"),
        ("temperatures", ["hot"], {}, TypeError, "temperatures entries must be numbers, got 'hot'"),
        ("temperatures", [True], {}, TypeError, "temperatures entries must be numbers"),
        ("temperatures", [1e39], {}, ValueError, r"temperatures entries must be in \[1.18e-38, 3.4e\+38\]"),
        ("temperatures", [1e-46], {"swaps": False}, ValueError, "temperatures entries must be 0 or of magnitude in"),
        ("learning_rates", 0.0, {}, ValueError, "learning_rates must be finite and > 0, got 0.0"),
        ("learning_rates", float("nan"), {}, ValueError, "learning_rates must be finite and > 0"),
        ("learning_rates", 1e-46, {}, ValueError, r"learning_rates entries must be in \[1.18e-38"),
        ("correction", -1.0, {}, ValueError, r"correction \(F\) must be a finite number > 0, got -1.0"),
        ("correction", float("inf"), {}, ValueError, r"correction \(F\) must be a finite number > 0"),
        ("correction", [1.0, 2.0], {}, TypeError, r"correction \(F\): one value for the sampler, not a list"),
        ("dropout", 0.5, {}, ValueError, "kind must be one of"),
    ],
)
def test_out_of_range_values_are_named(kind, value, kwargs, error, message):
    with pytest.raises(error, match=message):
        check_hyperparameter(kind, value, **kwargs)


def test_a_config_key_names_itself():
    with pytest.raises(ValueError, match=r"^\[sampler\] temperature \(in run.toml\) must be finite and > 0"):
        check_hyperparameter("temperatures", -0.01, name="[sampler] temperature (in run.toml)")
    assert check_hyperparameter("correction", 1e300) == 1e300  # F is float64: no float32 limit


def test_rules_describe_their_range():
    assert numerics.TEMPERATURES.allowed() == "> 0 with swaps (>= 0 without)"
    assert numerics.TEMPERATURES.allows_zero(swaps=False) and not numerics.TEMPERATURES.allows_zero(swaps=True)
    assert numerics.LEARNING_RATES.allowed(swaps=False) == "> 0"
    assert set(numerics.RULES) == {"temperatures", "learning_rates", "correction"}
