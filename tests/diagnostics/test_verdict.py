"""``diagnose``'s verdict, decided in function space: synthetic predictives whose answer is known
(chains that agree, stuck chains, a drift, chains in different modes of the predictive, too few
effective draws, too few runs) are each judged right; the weight space is context; a run without a
predictive says what to add, in the terms of how it was made; gradient noise that heats the cold
chain is warned about."""

import numpy as np
import pytest

from tf_vrre.diagnostics import function_space, report

CHAINS, DRAWS, INPUTS = 4, 400, 60


def _probabilities(logits):
    """Two-class probabilities ``[..., 2]`` of logits ``[...]``."""
    p = 1 / (1 + np.exp(-logits))
    return np.stack([1 - p, p], -1)


def _agreeing(rng, chains=CHAINS, draws=DRAWS, inputs=INPUTS):
    """iid draws of every input's logit around its own centre, the same law in every chain."""
    centre = rng.normal(size=inputs)
    return _probabilities(centre + 0.5 * rng.normal(size=(chains, draws, inputs)))


def _diag(predictive, flow=None, summaries=None, made_by="python", heat=None, runs=None):
    fs = None if predictive is None else function_space.summarize(predictive)
    runs = runs or [f"runs/s{i}" for i in range(len(predictive) if predictive is not None else 1)]
    return {
        "runs": runs,
        "made_by": [made_by] * len(runs),
        "replica_flow": [flow] * len(runs),
        "function_space": fs,
        "predictive_missing": [] if predictive is not None else list(runs),
        "summaries": summaries or {},
        "heat": heat or [None] * len(runs),
    }


def _flow(swaps, trips, attempts=100):
    return {"attempts": attempts, "swaps": swaps, "round_trips": trips, "steps": 1000}


def test_chains_that_agree_are_mixing_and_weight_space_is_context_only():
    rng = np.random.default_rng(0)
    weight_norm = {"weight_norm": {"chains": 4, "draws": 400, "rhat": 2.51, "ess": 2.5, "mean": 1.0}}
    v = report.verdict(_diag(_agreeing(rng), flow=_flow(30, 2), summaries=weight_norm))
    assert v["status"] == report.MIXING and v["basis"] == "function space", v
    assert v["context"].startswith("weight_norm R-hat 2.51: weight-space statistics of a network drift")
    text = report.format_verdict(v)
    assert text.startswith("verdict: mixing in function space: R-hat of the predictive at 60 held-out inputs")
    assert "\n  weight space: weight_norm R-hat 2.51" in text and "try:" not in text


def test_stuck_chains_are_not_mixing():
    """Each chain sits at its own constant prediction: the draws agree within chains and not across."""
    levels = np.array([0.2, 0.4, 0.6, 0.8])[:, None, None] * np.ones((CHAINS, DRAWS, INPUTS))
    v = report.verdict(_diag(np.stack([1 - levels, levels], -1)))
    assert v["status"] == report.NOT_MIXING
    assert v["reasons"][0].startswith(f"predictive R-hat infinite at {INPUTS} of {INPUTS} held-out inputs")
    assert v["advice"][0].startswith("run longer (more steps: fit(..., epochs=...))")


def test_a_drift_is_not_mixing_even_in_one_run():
    """Every chain drifts the same way: the chains agree with each other, the halves of each do not
    (split R-hat), so one run alone shows it too."""
    rng = np.random.default_rng(1)
    drift = np.linspace(-2, 2, DRAWS)[None, :, None]
    pred = _probabilities(rng.normal(size=INPUTS) + drift + 0.3 * rng.normal(size=(CHAINS, DRAWS, INPUTS)))
    for chains in (CHAINS, 1):
        v = report.verdict(_diag(pred[:chains]))
        assert v["status"] == report.NOT_MIXING, (chains, v)
        assert v["reasons"][0].startswith("predictive R-hat above 1.1 at 100% of 60 held-out inputs"), v


def test_chains_in_different_modes_of_the_predictive_are_not_mixing():
    """Two chains predict class 1 at a third of the inputs, two predict class 0 there."""
    rng = np.random.default_rng(2)
    logits = rng.normal(size=INPUTS) + 0.5 * rng.normal(size=(CHAINS, DRAWS, INPUTS))
    logits[:2, :, : INPUTS // 3] += 3.0
    logits[2:, :, : INPUTS // 3] -= 3.0
    fs = function_space.summarize(_probabilities(logits))
    assert fs["rhat"]["above_1.1"] == pytest.approx(1 / 3)
    v = report.verdict(_diag(_probabilities(logits)))
    assert v["status"] == report.NOT_MIXING and "at 33% of 60 held-out inputs" in v["reasons"][0]


def test_a_few_disagreeing_inputs_leave_it_not_yet_established():
    """One chain in another mode at 3 of 60 inputs (5%, below the tenth that fails a run)."""
    rng = np.random.default_rng(3)
    logits = rng.normal(size=INPUTS) + 0.5 * rng.normal(size=(CHAINS, DRAWS, INPUTS))
    logits[0, :, :3] += 4.0
    v = report.verdict(_diag(_probabilities(logits)))
    assert v["status"] == report.NOT_YET
    assert v["reasons"][0].startswith("predictive R-hat above 1.1 at 5% of 60 held-out inputs"), v


def test_too_few_effective_draws_and_too_few_runs():
    rng = np.random.default_rng(4)
    rho, n = 0.995, DRAWS  # AR(1): ESS ~ 4 chains x 400 x (1 - rho) / (1 + rho) = 4
    x = np.empty((CHAINS, n, INPUTS))
    x[:, 0] = rng.normal(size=(CHAINS, INPUTS))
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=(CHAINS, INPUTS))
    v = report.verdict(_diag(_probabilities(x)))
    assert v["status"] == report.NOT_MIXING and any(r.startswith("predictive ESS median") for r in v["reasons"]), v
    v = report.verdict(_diag(_agreeing(rng, chains=2)))  # two runs that agree: not enough to say
    assert v["status"] == report.NOT_YET and v["reasons"] == [
        "2 runs as chains: R-hat over fewer than 4 independent runs can miss a mode no run left"
    ]
    assert v["advice"][0].startswith("train at least 4 runs that differ only in ReplicaExchangeSampler(seed=...)")
    short = report.verdict(_diag(_agreeing(rng, draws=6)))
    assert short["status"] == report.NOT_YET and "too few for R-hat / ESS" in short["reasons"][0]


def test_inputs_on_which_every_draw_agrees_are_left_out():
    rng = np.random.default_rng(5)
    pred = _agreeing(rng)
    pred[:, :, :5] = [0.0, 1.0]  # saturated in float32: nothing to judge there
    fs = function_space.summarize(pred)
    assert fs["constant_inputs"] == [0, 1, 2, 3, 4] and fs["judged_inputs"] == INPUTS - 5
    assert report.verdict(_diag(pred))["status"] == report.MIXING


def test_no_predictive_says_what_to_add_in_the_terms_of_the_run():
    summaries = {"weight_norm": {"chains": 2, "draws": 12, "rhat": 2.02, "ess": 2.7}}
    v = report.verdict(_diag(None, summaries=summaries, runs=["runs/a"]))
    assert v["status"] == report.NOT_YET and v["basis"] is None
    assert v["reasons"] == [
        "no predictive recorded (runs/a): the verdict is read off the predictive on held-out inputs",
        "weight space (not judged): weight_norm R-hat 2.02",
    ]
    assert "SampleCollector(directory, every=..., validation_data=(x_heldout, y_heldout))" in v["advice"][0]
    cli = report.verdict(_diag(None, summaries=summaries, runs=["runs/a"], made_by="cli"))
    assert cli["advice"][0].endswith("tf-vrre train --set samples.validation=1000")


def test_replica_flow_failures_are_not_mixing_whatever_the_predictive_says():
    rng = np.random.default_rng(6)
    v = report.verdict(_diag(_agreeing(rng), flow=_flow(0, 0)))
    assert v["status"] == report.NOT_MIXING and v["reasons"] == [f"0 of 100 swaps accepted (s{i})" for i in range(4)]
    assert v["advice"] == [report.ADVICE["swaps"]["python"]]
    v = report.verdict(_diag(_agreeing(rng), flow=_flow(12, 0), made_by="cli"))
    assert v["reasons"][0] == "12 swaps but 0 round trips cold -> hottest -> cold in 1000 steps (s0)"
    assert v["advice"] == [report.ADVICE["trips"]["cli"]]


def test_a_chain_heated_by_gradient_noise_is_warned_about():
    rng = np.random.default_rng(7)
    hot = {"excess_temperature": 0.7, "temperature": 0.01, "ratio": 70.0, "samples": 40}
    v = report.verdict(_diag(_agreeing(rng), heat=[hot, None, None, None]))
    assert v["status"] == report.MIXING
    assert v["warnings"] == [
        "gradient noise heats the cold chain to about 71x its temperature 0.01 (excess temperature 0.7, median "
        "over 40 samples) (s0): it samples a hotter posterior than the one asked for"
    ]
    assert v["advice"] == [report.ADVICE["heat"]["python"]]
    assert "\n  warning: gradient noise heats the cold chain to about 71x" in report.format_verdict(v)
    cool = {"excess_temperature": 1e-4, "temperature": 0.01, "ratio": 0.01, "samples": 40}
    assert report.verdict(_diag(_agreeing(rng), heat=[cool] * 4))["warnings"] == []
