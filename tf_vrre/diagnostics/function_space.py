"""The verdict's basis for networks: R-hat and ESS of the predictive at every held-out input.

A network's posterior is judged in function space.  Izmailov, Vikram, Hoffman and Wilson (2021,
"What are Bayesian neural network posteriors really like?", ICML, Section 5) compute R-hat on
the predictions at each test input across independent HMC chains: weight-space statistics are
not identified across chains (permutation and rescaling symmetries map one set of weights to many
with the same function), and they find function-space R-hat mostly below the conventional 1.1
where weight-space R-hat is not.  Sommer, Wimmer, Papamarkou, Bothmann, Bischl and Ruegamer (2024,
"Connecting the Dots: Is Mode-Connectedness the Key to Feasible Sample-Based Inference in Bayesian
Neural Networks?", ICML) make the same case in their guidelines for diagnosing BNN samplers:
weight-space R-hat of a network stays far from 1 even for chains whose predictions agree, so
convergence is to be read off the predictive, over several chains.  Under weight decay the
weight norm and the energy also drift for far longer than the predictions do.

Here every input ``j`` and output ``c`` of the stored predictive (class probability or regression
output; :class:`tf_vrre.SampleCollector` with ``validation_data``) is one summary; its
rank-normalised split R-hat and bulk ESS (Vehtari et al. 2021) come from
:mod:`tf_vrre.diagnostics.chains` over the runs (seeds) as chains.  An input's R-hat is the
largest over its outputs and its ESS the smallest.  The verdict reads their distribution over the
inputs (Vehtari et al.'s per-quantity thresholds, applied to all but a tenth of the inputs, since
among hundreds of inputs a few pass 1.01 by chance alone):

- **not mixing**: more than a tenth of the inputs above :data:`RHAT_FAIL` (1.1: the chains
  disagree on what the network predicts there, e.g. chains in different modes of the predictive),
  an input whose chains each sit at their own constant prediction, or a median ESS below
  :data:`ESS_FAIL` (100, below which ESS and R-hat are themselves unreliable);
- **not yet established**: more than a tenth above :data:`RHAT_OK` (1.01), any input above 1.1, a
  tenth of the inputs with ESS below :data:`ESS_OK` (400), or fewer than :data:`MIN_CHAINS` (4)
  runs: one run's split R-hat sees a drift within it, not a mode it never left, and Vehtari et al.
  recommend at least four chains;
- otherwise the predictive mixes.

Example:
  >>> rng = np.random.default_rng(0)
  >>> agree = rng.uniform(size=(4, 200, 50, 2))                    # 4 chains, 200 draws, 50 inputs
  >>> s = summarize(agree)
  >>> s["inputs"], s["rhat"]["q90"] < 1.01, reasons(s)
  (50, True, ([], []))
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tf_vrre.diagnostics.chains as chains

RHAT_OK, RHAT_FAIL = 1.01, 1.1
"""Per-input R-hat thresholds: above RHAT_OK not yet established, above RHAT_FAIL the chains disagree."""
ESS_FAIL, ESS_OK = 100.0, 400.0
"""Per-input bulk ESS thresholds (Vehtari et al. 2021)."""
SHARE = 0.1
"""The share of inputs that may cross a threshold (the 90th percentile of R-hat, the 10th of ESS)."""
MIN_CHAINS = 4
"""Runs (chains) needed before the predictive can be called mixing."""
MIN_DRAWS = 8
"""Draws per chain needed to compute anything (4 per half-chain)."""


def draws(loaded_runs: list, keep: list) -> tuple[np.ndarray | None, list]:
    """``([chains, draws, inputs, outputs] or None, runs without a stored predictive)``: the
    predictive of every run that stored one, at the samples ``keep[i]`` (a boolean mask per run)
    after burn-in, each cut to the fewest draws.

    Raises:
      ValueError: naming two runs that stored predictives of different shapes (other held-out data).
    """
    parts, missing, first = [], [], None
    for loaded, mask in zip(loaded_runs, keep):
        s = loaded["samples"]
        if s is None or "predictive" not in s:
            missing.append(loaded["path"])
            continue
        pred = s["predictive"]
        pred = pred.reshape(*pred.shape[:2], -1)  # [samples, inputs, outputs]
        if first is not None and pred.shape[1:] != first[1]:
            raise ValueError(
                f"runs {first[0]!r} and {loaded['path']!r} stored predictives of different shapes "
                f"{first[1]} and {pred.shape[1:]} (different held-out data)"
            )
        first = first or (loaded["path"], pred.shape[1:])
        parts.append(pred[mask])
    if not parts:
        return None, missing
    n = min(len(p) for p in parts)
    return np.stack([p[:n] for p in parts]), missing


def _finite(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def summarize(predictive: np.ndarray, split: bool = True) -> dict:
    """The distribution over inputs of the predictive's R-hat and ESS, JSON-ready.

    Args:
      predictive: ``[chains, draws, inputs, outputs]`` (``[chains, draws, inputs]`` for one output).
      split: split every chain in halves (split-R-hat: one run alone then sees a drift).

    Returns:
      ``{"chains", "draws", "inputs", "outputs", "split"}`` and, with at least :data:`MIN_DRAWS`
      draws per chain, ``"rhat"`` (``median``, ``q90``, ``max``, ``above_1.01``, ``above_1.1``:
      shares of the inputs), ``"ess"`` (``min``, ``q10``, ``median``), ``"constant_inputs"``
      (every draw alike: nothing to judge, left out), ``"stuck_inputs"`` (each chain at its own
      constant: infinite R-hat), ``"worst_inputs"`` (the five highest R-hat) and ``"per_input"``
      (``rhat``, ``ess``; ``None`` where undefined); else ``"too_short": True``.
    """
    x = np.asarray(predictive, np.float64)
    x = x[..., None] if x.ndim == 3 else x
    out: dict[str, Any] = {
        "chains": int(x.shape[0]),
        "draws": int(x.shape[1]),
        "inputs": int(x.shape[2]),
        "outputs": int(x.shape[3]),
        "split": bool(split),
    }
    if x.shape[1] < MIN_DRAWS or (x.shape[0] < 2 and not split):
        return out | {"too_short": True}
    with np.errstate(invalid="ignore"):
        rhat = chains.rank_normalized_rhat(x, split)  # [inputs, outputs]
        ess = chains.bulk_ess(x, split)
    constant = np.isnan(rhat).all(axis=1)
    per_rhat = np.where(constant, np.nan, np.nanmax(np.where(np.isnan(rhat), -np.inf, rhat), axis=1))
    per_ess = np.where(constant, np.nan, np.nanmin(np.where(np.isnan(ess), np.inf, ess), axis=1))
    judged = ~constant
    r, e = per_rhat[judged], per_ess[judged]
    stuck = np.flatnonzero(np.isinf(per_rhat))
    worst = [int(i) for i in np.argsort(np.where(judged, per_rhat, -np.inf))[::-1][:5] if judged[i]]
    with np.errstate(invalid="ignore"):  # quantiles among infinite R-hat (stuck inputs) stay infinite
        quantiles = (
            (np.median(r), np.quantile(r, 1 - SHARE), np.quantile(e, SHARE), np.median(e)) if r.size else (None,) * 4
        )
    return out | {
        "judged_inputs": int(judged.sum()),
        "constant_inputs": [int(i) for i in np.flatnonzero(constant)],
        "stuck_inputs": [int(i) for i in stuck],
        "rhat": {
            "median": _finite(quantiles[0]) if r.size else None,
            "q90": _finite(quantiles[1]) if r.size else None,
            "max": _finite(r.max()) if r.size else None,
            "above_1.01": float(np.mean(r > RHAT_OK)) if r.size else None,
            "above_1.1": float(np.mean(r > RHAT_FAIL)) if r.size else None,
        },
        "ess": {
            "min": _finite(np.min(e)) if e.size else None,
            "q10": _finite(quantiles[2]) if e.size else None,
            "median": _finite(quantiles[3]) if e.size else None,
        },
        "worst_inputs": worst,
        "per_input": {
            "rhat": [_finite(v) for v in per_rhat],
            "ess": [_finite(v) for v in per_ess],
        },
    }


def reasons(summary: dict) -> tuple[list, list]:
    """``(failures, doubts)``: the numbers of :func:`summarize`'s result that make the predictive
    not mixing, or not yet established (thresholds in the module docstring)."""
    fail: list[str] = []
    doubt: list[str] = []
    chains_n, where = summary["chains"], f"{summary['inputs']} held-out inputs"
    if summary.get("too_short"):
        doubt.append(f"predictive: {summary['draws']} draws per run, too few for R-hat / ESS (< {MIN_DRAWS})")
        return fail, doubt
    if not summary["judged_inputs"]:
        doubt.append(f"predictive: every draw alike at all {where}: nothing to judge")
        return fail, doubt
    r, e = summary["rhat"], summary["ess"]
    if summary["stuck_inputs"]:
        fail.append(
            f"predictive R-hat infinite at {len(summary['stuck_inputs'])} of {where} (each chain at its own "
            f"constant prediction; inputs {summary['stuck_inputs'][:5]})"
        )
    share_fail, share_ok = r["above_1.1"], r["above_1.01"]
    text = (
        f"predictive R-hat above {{t}} at {{share:.0%}} of {where} (median {_fmt(r['median'])}, 90th "
        f"percentile {_fmt(r['q90'])}, max {_fmt(r['max'])})"
    )
    if share_fail > SHARE:
        fail.append(text.format(t=RHAT_FAIL, share=share_fail))
    elif share_ok > SHARE or share_fail > 0:
        doubt.append(
            text.format(
                t=RHAT_OK if share_ok > SHARE else RHAT_FAIL, share=share_ok if share_ok > SHARE else share_fail
            )
        )
    draws = f"{chains_n} x {summary['draws']} draws"
    if e["median"] is not None and e["median"] < ESS_FAIL:
        fail.append(f"predictive ESS median {e['median']:.3g} < {ESS_FAIL:g} ({draws})")
    elif e["q10"] is not None and e["q10"] < ESS_OK:
        doubt.append(
            f"predictive ESS below {ESS_OK:g} at more than a tenth of the inputs (10th percentile {e['q10']:.3g}; {draws})"
        )
    if chains_n < MIN_CHAINS:
        doubt.append(
            f"{chains_n} run{'s' if chains_n > 1 else ''} as chains: R-hat over fewer than {MIN_CHAINS} independent runs "
            "can miss a mode no run left"
        )
    return fail, doubt


def _fmt(v: float | None) -> str:
    return "inf" if v is None else f"{v:.3f}"


def describe(summary: dict) -> str:
    """One line on the function-space numbers (for the table and a passing verdict)."""
    if summary.get("too_short") or not summary.get("judged_inputs"):
        return f"{summary['inputs']} held-out inputs, {summary['chains']} x {summary['draws']} draws: not judged"
    r, e = summary["rhat"], summary["ess"]
    return (
        f"R-hat of the predictive at {summary['judged_inputs']} held-out inputs: median {_fmt(r['median'])}, 90th "
        f"percentile {_fmt(r['q90'])}, max {_fmt(r['max'])} ({r['above_1.01']:.0%} above {RHAT_OK}, "
        f"{r['above_1.1']:.0%} above {RHAT_FAIL}); bulk ESS min {_fmt_ess(e['min'])}, 10th percentile "
        f"{_fmt_ess(e['q10'])}, median {_fmt_ess(e['median'])}; {summary['chains']} run{'s' if summary['chains'] > 1 else ''} "
        f"x {summary['draws']} draws"
    )


def _fmt_ess(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"
