"""Where replica exchange pays: from what a pilot measured to a recommendation (NumPy and SciPy only).

The numbers that decide whether replica exchange, and then variance reduction, pays on a model
(``docs/benchmarks/regimes.md`` maps them against exact answers):

- **the swap noise penalty.**  The swap of the pair ``(tau_lo, tau_hi)`` tests
  ``delta (U~_lo - U~_hi)`` with ``delta = 1 / tau_lo - 1 / tau_hi``; an estimator whose difference
  has noise variance ``sigma^2`` pays ``delta^2 sigma^2 / 2`` nats per swap under the unbiased
  correction (``F = 2``).  With mini-batch energies ``sigma^2 = (N^2 / n)(1 - n / N) Var_i(l_i(beta_lo) -
  l_i(beta_hi))`` grows like ``N^2 / n``; control variates replace the per-example differences by
  their change since the snapshot (``m`` steps at most).  Measured over the early offsets of a
  period only (a pilot shorter than two periods), their noise is a lower bound: a win of variance
  reduction that rests on it is a best guess, a loss stands.
- **the acceptance each estimator gives** with that correction
  (:func:`tf_vrre.diagnostics.swap_acceptance.unbiased_acceptance`), over the law of the exact
  differences ``dU`` during the pilot (:func:`tf_vrre.diagnostics.swap_acceptance.acceptance_model`),
  and from it each pair's rejection, the communication barrier ``Lambda`` and the recommended number
  of chains (:mod:`tf_vrre.sgmcmc.ladder`), and NRPT's round trips per step;
- **the cost per step** in per-example gradient evaluations (:mod:`tf_vrre.sampler.cost`: ``K n``,
  plus ``K N / m`` for the full passes of the control variates) and in measured seconds;
- **whether the hot chains find modes that matter to the cold chain**
  (:func:`tf_vrre.diagnostics.modes.modes_found`): states
  of the hot chains, quenched (descended to their nearest mode), whose outputs on probe inputs lie
  far from the cold chain's own quenched states (in units of the cold chain's local spread) at an
  energy within a few cold temperatures of them: a mode the cold posterior weighs and predicts
  differently with.  (The multimodality index,
  :func:`tf_vrre.diagnostics.modes.multimodality_index`, is reported beside it.)

:func:`recommend` turns a :class:`Measurements` (a pilot's, from
:func:`tf_vrre.diagnostics.advisor.advise`) into an :class:`Advice`: one chain, replica exchange
with ``K`` chains, or replica exchange with variance-reduced swap energies, with the numbers, the
expected gain per unit of compute, and whether the evidence is strong enough to decide.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from tf_vrre.diagnostics.modes import DECISIVE, NOVEL, RELEVANT, modes_found, multimodality_index
from tf_vrre.diagnostics.swap_acceptance import acceptance_model, ladder_prediction, noise_dof
from tf_vrre.diagnostics.swap_acceptance import unbiased_acceptance as unbiased_acceptance

ONE_CHAIN, REPLICA_EXCHANGE, VARIANCE_REDUCED = "one chain", "replica exchange", "variance-reduced replica exchange"
RECOMMENDATIONS = (ONE_CHAIN, REPLICA_EXCHANGE, VARIANCE_REDUCED)
"""What :func:`recommend` may recommend (the methods a user would run: one SGHMC / SGLD chain;
``K`` chains with mini-batch swap energies; ``K`` chains with control-variate swap energies)."""

MULTIMODAL = 3.0
"""A multimodality index above ``MULTIMODAL`` (or below its inverse) says the predictions along the
ladder do not spread like one locally Gaussian mode's (variance proportional to the temperature):
the hottest chain visits functions the cold chain's mode does not hold (index above), or the cold
chain's own spread is already the modes' (index below: replica exchange carries them)."""

SHUT = 1e-3
"""A cold pair accepting fewer than this fraction of its swaps with the better estimator carries
(almost) nothing from the hot chains: replica exchange then cannot pay, whatever it would find."""

MIN_TRIPS = 1.0
"""Replica exchange is recommended only if the ladder's round trips within the budget (NRPT's
ceiling, :func:`tf_vrre.sgmcmc.ladder.round_trip_rate`) are at least this many."""

MIN_RECORDS = 16
"""Fewer prediction records than this (or fewer than 2 energy measurements) is too weak to decide."""


@dataclasses.dataclass
class Measurements:
    """What a pilot measured (:func:`tf_vrre.diagnostics.advisor.advise`); arrays per measurement
    ``j`` and adjacent pair ``p``.

    Fields:
      temperatures: the ladder ``[K]``.
      batch_size, data_size: ``n``, ``N``.
      period: ``m``, the control variates' refresh period the variance-reduced noise was measured at.
      diff: ``[J, P]`` energy differences ``U_lo - U_hi`` (prior included) at the measurements.
      diff_var: ``[J, P]`` the variance of those differences as estimates (0: exact, full data).
      naive_var: ``[J, P]`` the mini-batch estimator's noise variance at batch ``n``.
      vr_var: ``[J, P]`` the control-variate estimator's noise variance (``nan`` at a snapshot).
      offsets: ``[J]`` steps since the snapshot (0 at a snapshot).
      cold, hot: ``[T, ...]`` outputs of the cold and hottest chain on the probe inputs.
      step_seconds: seconds of one step of the pilot sampler, without the measurements.
      pass_seconds: seconds of one chain's forward pass over the ``N`` examples.
      pilot_vr_period: the pilot sampler's own refresh period (``None`` without control variates).
      steps: the pilot's steps; attempts, swaps: ``[P]`` its swap counts.
      exact: whether the differences were computed on all ``N`` examples.
      batch_energies: ``[T, K]`` every chain's mini-batch energy at the steps of the second half.
      quenches: quenched states (``{"chain", "temperature", "outputs", "energy_above_cold",
        "energy_above_cold_var"}``: outputs on the probe inputs; energy above each quenched state of
        the cold chain, in their order, and the variance of that estimate).
      period_covered: the largest offset at which ``vr_var`` was measured, as a fraction of
        ``period`` (1: a whole refresh period).  Below 1 (a pilot shorter than two periods) the mean
        of ``vr_var`` is a lower bound of its mean over a period: the noise grows as a chain moves
        away from its snapshot.
      num_weights: a chain's trainable weights ``D``: the degrees of freedom of the law a pair's
        noise variance follows over a run (:func:`tf_vrre.diagnostics.swap_acceptance.noise_law`);
        ``None`` (a record written before the field): the noise variance taken as constant.
    """

    temperatures: Any
    batch_size: int
    data_size: int
    period: int
    diff: Any
    diff_var: Any
    naive_var: Any
    vr_var: Any
    offsets: Any
    cold: Any
    hot: Any
    step_seconds: float
    pass_seconds: float
    pilot_vr_period: int | None
    steps: int
    attempts: Any
    swaps: Any
    exact: bool
    quenches: list = dataclasses.field(default_factory=list)
    batch_energies: Any = None
    period_covered: float = 1.0
    num_weights: int | None = None

    def to_dict(self) -> dict:
        """JSON-ready (arrays as lists)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = np.asarray(v).tolist() if isinstance(v, (np.ndarray, list, tuple)) else v
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Measurements:
        """From :meth:`to_dict`; a field with a default may be missing (a record written before it)."""
        required = (dataclasses.MISSING, dataclasses.MISSING)
        return cls(
            **{
                f.name: d[f.name]
                for f in dataclasses.fields(cls)
                if f.name in d or (f.default, f.default_factory) == required
            }
        )


@dataclasses.dataclass
class Advice:
    """A recommendation and the numbers behind it (:func:`recommend`).

    Fields:
      recommendation: one of :data:`RECOMMENDATIONS`.
      chains: the recommended number of chains (1 for one chain).
      confident: ``False`` when the evidence is too weak to decide (``recommendation`` is then the
        best guess) or was not measured.
      reasons: sentences with the numbers that decided.
      numbers: every number (per pair: ``delta``, noise variances, penalties, acceptances; per
        estimator: ``Lambda``, recommended chains, round trips per step and per 10^6 gradient
        evaluations, cost per step; the multimodality index).
    """

    recommendation: str
    chains: int
    confident: bool
    reasons: list
    numbers: dict

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def summary(self) -> str:
        """The advice as text (:func:`format_advice`)."""
        return format_advice(self)


MAX_CHAINS = 64
"""The most chains the advisor recommends."""


def _estimator(delta: np.ndarray, m: Measurements, noise: np.ndarray | None, vr: bool, dof: float | None) -> dict:
    """One estimator (``noise``: ``[J, P]`` noise variances, ``None`` for exact energies; ``dof``: the
    degrees of freedom of its law, :func:`tf_vrre.diagnostics.swap_acceptance.noise_dof`): its
    acceptance on the pilot's ladder, then on its own ladder (as many chains as its barrier asks,
    :func:`tf_vrre.diagnostics.swap_acceptance.ladder_prediction`): barrier, chains, round trips per step
    and per gradient evaluation."""
    from tf_vrre.sgmcmc import ladder  # here: the package imports Keras, diagnose reads files without it

    keep = np.asarray(m.offsets) > 0  # the same measurements for every estimator: offsets 1..m of a period
    naive = np.asarray(m.naive_var, np.float64)[keep].mean(0)
    var = np.zeros_like(naive) if noise is None else np.asarray(noise, np.float64)[keep].mean(0)
    if m.batch_energies is not None:  # every step's mini-batch differences, with the mini-batch noise
        u = np.asarray(m.batch_energies, np.float64)
        estimates, estimate_var = u[:, :-1] - u[:, 1:], naive
    else:  # a record without them: the measured differences and their own variance
        estimates, estimate_var = np.asarray(m.diff, np.float64), np.asarray(m.diff_var, np.float64).mean(0)
    acc = acceptance_model(delta, estimates, estimate_var, var, dof=dof)
    exact = acceptance_model(delta, estimates, estimate_var, np.zeros_like(var))
    K = len(m.temperatures)
    for _ in range(8):  # the number of chains its own barrier asks for, on its own ladder
        own = ladder_prediction(m.temperatures, 1.0 - exact, var, K, dof=dof)
        new = min(MAX_CHAINS, ladder.recommended_chains(own["barrier"]))
        if new == K:
            break
        K = new
    trips = ladder.round_trip_rate(np.minimum(own["rejection"], 1.0 - 1e-12))
    n, N = m.batch_size, m.data_size
    cost = K * (n + (N / m.period if vr else 0.0))
    return {
        "pilot_acceptance": acc.tolist(),
        "pilot_penalty_nats": (delta**2 * var / 2.0).tolist(),
        "noise_var": var.tolist(),
        "noise_dof": dof,
        "recommended_chains": K,
        "ladder": own,
        "acceptance": (1.0 - np.asarray(own["rejection"])).tolist(),
        "penalty_nats": own["penalty_nats"],
        "barrier": own["barrier"],
        "round_trips_per_step": trips,
        "gradient_evaluations_per_step": cost,
        "round_trips_per_million": 1e6 * trips / cost,
    }


def recommend(m: Measurements, budget: float | None = None) -> Advice:
    """The recommendation of a pilot's :class:`Measurements` (rules in the module docstring).

    1. The quenched states decide between one chain and replica exchange
       (:func:`tf_vrre.diagnostics.modes.modes_found`):
       without a mode that the hot chains reach, the cold chain lacks and the cold posterior weighs,
       ``K`` chains would cost ``K`` times as much per step for no new mode.  A quenched state that
       sits alone far from every other, at an energy the pilot cannot rule out, is a possible mode:
       missing a mode biases every answer while ``K`` chains cost a constant factor, so it counts
       as one, and the evidence is weak.  (Records without quenches fall back on the
       multimodality index: outside ``(1 / MULTIMODAL, MULTIMODAL)``.)
    2. Otherwise the estimator with more round trips per gradient evaluation wins (mini-batch or
       control-variate energies), unless even it leaves the cold pair's acceptance under
       :data:`SHUT`, or completes fewer than :data:`MIN_TRIPS` round trips within ``budget``
       gradient evaluations (then no estimator carries the hot chains' modes down: one chain).
    3. The evidence is weak when the one deciding quenched state, or the ratio of the gains, is
       within a factor :data:`DECISIVE` of its threshold, or there are too few records, or variance
       reduction wins on a lower bound of its noise (``m.period_covered < 1``: the pilot measured the
       early offsets of the period only).  A loss on a lower bound is as decisive as the rest allows.

    Args:
      m: the pilot's measurements.
      budget: the gradient evaluations of the run being planned (``None``: no round-trip check).

    Example:
      >>> rng = np.random.default_rng(1)
      >>> J, T = 24, 200                                   # two chains; U_lo - U_hi seen with noise 40^2
      >>> u = np.stack([rng.normal(-2.0, 1.0, T) + rng.normal(0.0, 40.0, T), np.zeros(T)], 1)
      >>> m = Measurements(temperatures=[1.0, 4.0], batch_size=100, data_size=10_000, period=20,
      ...     diff=np.zeros((J, 1)), diff_var=np.zeros((J, 1)), naive_var=np.full((J, 1), 1600.0),
      ...     vr_var=np.full((J, 1), 2.0), offsets=np.arange(J) % 4, cold=rng.normal(0.0, 1.0, (T, 2)),
      ...     hot=rng.normal(8.0, 2.0, (T, 2)), step_seconds=0.01, pass_seconds=0.2, pilot_vr_period=None,
      ...     steps=400, attempts=[399], swaps=[0], exact=True, batch_energies=u)
      >>> a = recommend(m)              # no quenched states: the multimodality index decides (8^2 / 4: 16)
      >>> a.recommendation, a.chains, a.confident
      ('variance-reduced replica exchange', 4, True)
    """
    temps = np.asarray(m.temperatures, np.float64)
    K, n = temps.size, int(m.batch_size)
    delta = 1.0 / temps[:-1] - 1.0 / temps[1:]
    estimators = _estimators(m, delta, budget)
    index = multimodality_index(m.cold, m.hot, temps[-1] / temps[0])
    numbers = {
        "delta": delta.tolist(),
        "multimodality_index": index,
        "estimators": estimators,
        "one_chain_gradient_evaluations_per_step": n,
        "pilot": {"steps": m.steps, "attempts": list(m.attempts), "swaps": list(m.swaps), "exact_energies": m.exact},
    }
    gains = {k: estimators[k]["round_trips_per_million"] for k in ("mini-batch", "control variates")}
    numbers["budget"] = budget
    numbers["gain_ratio"] = gains["control variates"] / gains["mini-batch"] if gains["mini-batch"] else math.inf
    reasons, weak = [], len(np.asarray(m.cold)) < MIN_RECORDS or np.asarray(m.diff).shape[0] < 2
    if weak:
        reasons.append(f"too few measurements ({len(np.asarray(m.cold))} prediction records)")
    noise_text = _noise_text(m, temps, estimators)
    evidence = _mode_evidence(m, temps, index, numbers)
    if evidence is None:  # no quenches (an older record) and an index that is not a number
        return Advice(ONE_CHAIN, 1, False, reasons + ["the cold chain's predictions did not move"], numbers)
    multimodal, close, what = evidence
    weak = weak or close
    if not multimodal:
        reasons.append(what + f": {K} chains would cost {K}x a chain's gradient evaluations per step for no mode")
        return Advice(ONE_CHAIN, 1, not weak, reasons + [noise_text], numbers)
    reasons.append(what)
    return _with_swaps(numbers, noise_text, budget, weak, reasons)


def _estimators(m: Measurements, delta: np.ndarray, budget: float | None) -> dict:
    """Exact, mini-batch and control-variate energies (:func:`_estimator`), with the seconds per step
    the pilot measured and the round trips within ``budget`` gradient evaluations (``None``: no budget)."""
    K = len(m.temperatures)
    vr = np.asarray(m.vr_var, np.float64)
    dof = noise_dof(m.naive_var, m.num_weights)  # the law of the pairs' distance, also the control variates'
    estimators = {
        "exact": _estimator(delta, m, None, False, None),
        "mini-batch": _estimator(delta, m, np.asarray(m.naive_var, np.float64), False, dof),
        "control variates": _estimator(delta, m, vr, True, dof),
    }
    vr_extra = K * m.pass_seconds / m.period
    plain_seconds = m.step_seconds - (K * m.pass_seconds / m.pilot_vr_period if m.pilot_vr_period else 0.0)
    estimators["mini-batch"]["seconds_per_step"] = plain_seconds
    estimators["control variates"]["seconds_per_step"] = plain_seconds + vr_extra
    offsets = np.asarray(m.offsets)
    measured = offsets[(offsets > 0) & np.isfinite(vr).all(axis=1)] if vr.size else offsets[:0]
    estimators["control variates"] |= {
        "period": int(m.period),
        "offsets": sorted({int(o) for o in measured}),
        "period_covered": float(m.period_covered),
        "noise_lower_bound": bool(m.period_covered < 1.0),
    }
    for e in estimators.values():
        e["round_trips_in_budget"] = None if budget is None else budget * e["round_trips_per_million"] / 1e6
    return estimators


def _noise_text(m: Measurements, temps: np.ndarray, estimators: dict) -> str:
    """The sentence on the swap noise: the pilot's cold pair with either estimator, and the ladder each asks for."""
    e_mb, e_cv = estimators["mini-batch"], estimators["control variates"]
    bound = (
        f"; the control variates' noise is a lower bound, measured at offsets {e_cv['offsets']} only, "
        f"{e_cv['period_covered']:.0%} of the period (it grows as a chain moves away from its snapshot)"
        if e_cv["noise_lower_bound"]
        else ""
    )
    dof = e_mb["noise_dof"]
    law = (
        ""
        if dof is None
        else f"; averaged over the noise's law as the pairs' states move (chi^2 with {dof:.3g} degrees of freedom)"
    )
    return (
        f"pilot's cold pair (tau {temps[0]:.4g}, {temps[1]:.4g}): noise penalty {e_mb['pilot_penalty_nats'][0]:.3g} "
        f"nats with mini-batch energies (acceptance {e_mb['pilot_acceptance'][0]:.3g}), "
        f"{e_cv['pilot_penalty_nats'][0]:.3g} with control variates every {m.period} steps (acceptance "
        f"{e_cv['pilot_acceptance'][0]:.3g}); on the ladder each asks for, {e_mb['recommended_chains']} chains "
        f"(barrier {e_mb['barrier']:.3g}, cold-pair penalty {e_mb['penalty_nats'][0]:.3g} nats) and "
        f"{e_cv['recommended_chains']} chains (barrier {e_cv['barrier']:.3g}, penalty {e_cv['penalty_nats'][0]:.3g})"
        + law
        + bound
    )


def _mode_evidence(m: Measurements, temps: np.ndarray, index: float, numbers: dict) -> tuple[bool, bool, str] | None:
    """Rule 1 of :func:`recommend`: whether the hot chains reach modes that matter to the cold chain,
    whether that is a close call (rule 3), and the sentence that says so; the modes go into
    ``numbers``.  ``None`` when there are no quenched states and the index is not a number."""
    modes = modes_found(m.quenches, m.cold, float(temps[0]))
    numbers["modes"] = modes
    if modes["distance"]:
        multimodal = len(modes["modes"]) >= 2 or modes["cold_modes"]
        close = modes["margin"] and not modes["cold_modes"]
        if not multimodal and modes["lone"]:  # a possible mode: missing one costs more than K chains do
            return (
                True,
                True,
                f"{modes['lone']} quenched state(s) of the hot chains sit alone, farther than {NOVEL:g} local sds "
                f"from every other, within {RELEVANT:g} cold temperatures of the cold chain's lowest energy as far "
                "as the pilot resolves it: a mode only one quench reached, or a quench that stopped short; a missed "
                "mode biases every answer while K chains cost a constant factor, so the best guess is that it is one",
            )
        if multimodal:
            what = (
                "the cold chain's outputs fall into groups far apart: it jumps between modes (swaps carry them)"
                if modes["cold_modes"] and len(modes["modes"]) < 2
                else f"the quenched states reach {len(modes['modes'])} modes that matter at the cold temperature "
                f"(farther apart than {NOVEL:g} local sds of the cold chain, within {RELEVANT:g} cold temperatures "
                f"of its lowest energy), {modes['found']} of them away from the cold chain's records"
            )
        else:
            what = (
                f"no quenched state of the hot chains is a mode that matters: nearest distances "
                f"{min(modes['distance']):.3g}-{max(modes['distance']):.3g} local sds of the cold chain, energies "
                f"{min(modes['excess']):.3g} cold temperatures or more above its own"
            )

        return multimodal, close, what
    # no quenches (an older record): the index alone
    if not math.isfinite(index):
        return None
    multimodal = index > MULTIMODAL or index < 1.0 / MULTIMODAL
    close = MULTIMODAL / DECISIVE < index < MULTIMODAL * DECISIVE
    close = close or DECISIVE / MULTIMODAL > index > 1 / (MULTIMODAL * DECISIVE)
    return multimodal, close, f"multimodality index {index:.3g}"


def _with_swaps(numbers: dict, noise_text: str, budget: float | None, weak: bool, reasons: list) -> Advice:
    """Rule 2 of :func:`recommend`, once the hot chains reach modes: the estimator with more round trips
    per gradient evaluation, unless its swaps are shut or too few round trips fit in ``budget``."""
    estimators = numbers["estimators"]
    e_mb, e_cv = estimators["mini-batch"], estimators["control variates"]
    gains = {k: estimators[k]["round_trips_per_million"] for k in ("mini-batch", "control variates")}
    acc = {k: min(estimators[k]["acceptance"]) for k in ("mini-batch", "control variates")}
    best = "control variates" if numbers["gain_ratio"] > 1 else "mini-batch"
    if acc[best] < SHUT:
        reasons.append(
            noise_text
            + f": a pair accepts under {SHUT:g} of its swaps with either, so swaps carry nothing down the ladder"
        )
        return Advice(ONE_CHAIN, 1, not weak, reasons, numbers)
    trips = estimators[best]["round_trips_in_budget"]
    if trips is not None and trips < MIN_TRIPS:
        reasons.append(
            noise_text + f"; the ladder would complete {trips:.2g} round trips in {budget:.3g} gradient "
            f"evaluations with {best} energies (fewer than {MIN_TRIPS:g}): the hot chains' modes would not reach the cold one"
        )
        return Advice(ONE_CHAIN, 1, not weak, reasons, numbers)
    ratio = numbers["gain_ratio"]
    weak = weak or 1.0 / DECISIVE < ratio < DECISIVE
    reasons.append(
        noise_text + f"; round trips per 10^6 gradient evaluations {gains['mini-batch']:.3g} (mini-batch, "
        f"{e_mb['gradient_evaluations_per_step']:.4g} per step) and {gains['control variates']:.3g} (control "
        f"variates, {e_cv['gradient_evaluations_per_step']:.4g} per step, full passes included): {ratio:.3g}x "
        "with control variates"
    )
    if best == "control variates" and e_cv["noise_lower_bound"]:  # a loss on a lower bound stands; a win may not
        weak = True
        reasons.append(
            f"variance reduction wins on a lower bound of its noise ({e_cv['period_covered']:.0%} of the refresh "
            f"period measured): a pilot of {2 * e_cv['period']} steps or more measures all of it"
        )
    chains = estimators[best]["recommended_chains"]
    return Advice(
        VARIANCE_REDUCED if best == "control variates" else REPLICA_EXCHANGE, chains, not weak, reasons, numbers
    )


def format_advice(advice: Advice) -> str:
    """Lines of text: the recommendation (and whether it is a best guess), then the reasons."""
    what = advice.recommendation + (f" with {advice.chains} chains" if advice.chains > 1 else "")
    head = f"advice: {what}" + ("" if advice.confident else " (best guess: the evidence is too weak to decide)")
    return "\n".join([head] + [f"  {r}" for r in advice.reasons])


# ---- from a run's files: tf-vrre diagnose -----------------------------------------------------------
FILE = "advice.json"
"""Where :func:`tf_vrre.diagnostics.advisor.advise` writes its pilot's measurements and advice."""

FORMAT = "tf_vrre.advice/1"
