"""A ladder the sampler proposes from the model's number of weights: :class:`ProposedLadder`.

**The Gaussian rule.**  Near a mode the posterior is locally Gaussian: with ``D`` weights the
energy at temperature ``tau`` is ``U = U_0 + tau G`` with ``G ~ Gamma(D / 2, 1)``, whatever the
curvature (each weight's quadratic term contributes ``tau chi^2_1 / 2``).  Two chains at
``tau < tau' = rho tau`` with exact energies then reject
``r(rho) = 1 - 2 I_{x}(D/2, D/2)``, ``x = 1 / (1 + rho)``, of their swaps
(:func:`tf_vrre.sgmcmc.tempered_gaussian.gaussian_rejection`; Predescu, Predescu & Ciobanu
2004), which for large ``D`` is ``erf(sqrt(D / 8) ln rho)``: about ``sqrt(D / 2 pi) ln rho``
while it is small.  Every pair of a geometric ladder rejects alike (the local barrier is
``~ 1 / b``), so the ladder of ``K`` chains whose pairs reject ``r`` is
``tau_h = tau_1 rho^h`` with ``rho`` solving ``r(rho) = r`` (:func:`gaussian_ratio`).  For
``D = 530`` and ``r = 0.5``: ``rho = 1.060``; for ``D = 78,000``: ``rho = 1.0048``.  A ladder by
analogy with the paper's ``tau_2 = 5 tau_1`` rejects every swap of any network of more than a
few weights.

Mini-batch energies add the noise penalty ``delta^2 sigma^2 / F`` to every pair's rejection, so
with them the same ``rho`` rejects more: the proposal is the widest ladder for ``r``, and
:class:`tf_vrre.LadderTuner` narrows (or widens) it to what the swaps actually do.

Example:
  >>> round(gaussian_ratio(530, 0.5), 4)
  1.0604
  >>> [round(t, 4) for t in ProposedLadder(cold=1.0).temperatures(num_chains=4, num_weights=530)]
  [1.0, 1.0604, 1.1244, 1.1923]
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
from scipy import optimize

import tf_vrre.sgmcmc.tempered_gaussian as tempered_gaussian
import tf_vrre.sgmcmc.tuning as tuning
from tf_vrre import numerics

DEFAULT_TARGET = 0.5
"""Default rejection rate per pair: the one at ``K ~ 2 Lambda`` chains, where round trips per
unit of compute are largest (:func:`tf_vrre.sgmcmc.ladder.recommended_chains`)."""


def check_target(target_rejection: float, name: str = "target_rejection") -> float:
    """``target_rejection`` as a float in ``(0, 1)``; else a ``ValueError`` naming it."""
    if (
        isinstance(target_rejection, bool)
        or not isinstance(target_rejection, numbers.Real)
        or not 0.0 < float(target_rejection) < 1.0
    ):
        raise ValueError(f"{name} must be a rejection rate in (0, 1), got {target_rejection!r}")
    return float(target_rejection)


def gaussian_ratio(num_weights: int, target_rejection: float) -> float:
    """``rho = tau' / tau`` at which two chains on a locally Gaussian posterior of ``num_weights``
    weights (exact energies) reject ``target_rejection`` of their swaps (the module's rule).

    Args:
      num_weights: ``D >= 1``, the trainable weights of one chain.
      target_rejection: ``r`` in ``(0, 1)``.

    Example:
      >>> round(gaussian_ratio(1, 0.5), 3), round(gaussian_ratio(10_000, 0.5), 5)
      (5.828, 1.01358)
    """
    if isinstance(num_weights, bool) or not isinstance(num_weights, numbers.Integral) or num_weights < 1:
        raise ValueError(f"num_weights must be an integer >= 1, got {num_weights!r}")
    r = check_target(target_rejection)

    def excess(log_rho: float) -> float:
        return float(tempered_gaussian.gaussian_rejection(math.exp(-log_rho), int(num_weights))) - r

    hi = 1.0
    while excess(hi) < 0:  # the rejection grows to 1 with rho: bracket the root
        hi *= 2.0
    return math.exp(optimize.brentq(excess, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))


@keras.saving.register_keras_serializable(package="tf_vrre")
class ProposedLadder:
    """Temperatures the sampler proposes: give the cold temperature, not the ladder.

    Pass it as ``ReplicaExchangeSampler(temperatures=ProposedLadder(cold=...), num_chains=K)``.
    The sampler counts the trainable weights ``D`` of one chain and sets the geometric ladder
    ``tau_h = cold * rho^h`` whose pairs reject ``target_rejection`` of their swaps on a locally
    Gaussian posterior (:func:`gaussian_ratio`; the module's docstring derives it).  A
    :class:`tf_vrre.LadderTuner` then moves the hottest temperature during its tuning phase,
    within ``bounds``, towards equal rejection at ``target_rejection`` as the swaps measure it
    (mini-batch noise included), and never colder than a temperature at which the chains were
    seen to change modes.  Without a tuner the proposed ladder stays.

    The proposal is deterministic (the same ``D``, ``K`` and arguments give the same ladder), so a
    sampler rebuilt from its config proposes the same ladder; the ladder in force after tuning is
    saved with the sampler's state.

    Args:
      cold: the cold temperature ``tau_1 > 0`` (``1.0``: the Bayesian posterior); it never moves.
      target_rejection: the rejection rate per adjacent pair in ``(0, 1)`` (default 0.5: the one
        at the number of chains with the most round trips per unit of compute).
      bounds: ``(low, high)``, the range the tuner may move the hottest temperature in
        (``low <= cold < high``), or ``None``: ``(cold, cold * data_size)``
        (:meth:`resolved_bounds`).  Why that default: at ``tau = N tau_1`` the whole data set
        weighs in the tempered posterior ``exp(-U / tau)`` as one example does at ``tau_1``; a
        hotter chain no longer sees the data, only the prior flattened by ``tau``.  The bound
        keeps the tuner's extrapolation finite; the swaps of ``K`` chains stop it far below on
        any model with more than a few weights.

    Example:
      >>> proposal = ProposedLadder(cold=1.0, target_rejection=0.3)
      >>> [round(t, 4) for t in proposal.temperatures(num_chains=3, num_weights=2_000)]
      [1.0, 1.0174, 1.0351]
      >>> proposal.resolved_bounds(data_size=500)
      (1.0, 500.0)
    """

    def __init__(
        self, cold: float = 1.0, target_rejection: float = DEFAULT_TARGET, bounds: Sequence[float] | None = None
    ) -> None:
        if isinstance(cold, bool) or not isinstance(cold, numbers.Real) or not math.isfinite(cold) or not cold > 0:
            raise ValueError(f"cold must be a finite temperature > 0, got {cold!r}")
        self.cold: float = numerics.check_float32("cold", float(cold), positive=True)
        self.target_rejection: float = check_target(target_rejection)
        self.bounds: tuple[float, float] | None = None if bounds is None else tuning.check_bounds(bounds, self.cold)

    def temperatures(self, num_chains: int, num_weights: int) -> list[float]:
        """The proposed ladder of ``num_chains`` temperatures for ``num_weights`` weights, checked
        as the sampler checks temperatures (strictly increasing in float32); a ``ValueError``
        naming ``ProposedLadder`` when the steps are below float32's resolution."""
        if isinstance(num_chains, bool) or not isinstance(num_chains, numbers.Integral) or num_chains < 2:
            raise ValueError(
                f"ProposedLadder needs num_chains >= 2 (a cold chain and at least one hotter one), got {num_chains!r}"
            )
        rho = gaussian_ratio(num_weights, self.target_rejection)
        temps = [self.cold * rho**h for h in range(int(num_chains))]
        try:
            return [float(v) for v in numerics.check_hyperparameter("temperatures", temps, num_chains=num_chains)]
        except ValueError as err:
            raise ValueError(
                f"ProposedLadder: for {num_weights} weights and target_rejection={self.target_rejection} the "
                f"ratio per pair is {rho:.9g}, which float32 temperatures from cold={self.cold} cannot hold "
                f"({err}); use a larger target_rejection or cold"
            ) from None

    def resolved_bounds(self, data_size: int) -> tuple[float, float]:
        """``bounds``, or the default ``(cold, cold * data_size)`` (at least twice the cold
        temperature), checked like :func:`tf_vrre.sgmcmc.tuning.check_bounds`."""
        if self.bounds is not None:
            return self.bounds
        high = float(np.float32(self.cold * max(2.0, float(data_size))))
        return tuning.check_bounds((self.cold, high), self.cold)

    def get_config(self) -> dict:
        return {
            "cold": self.cold,
            "target_rejection": self.target_rejection,
            "bounds": None if self.bounds is None else list(self.bounds),
        }

    @classmethod
    def from_config(cls, config: dict) -> ProposedLadder:
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProposedLadder) and self.get_config() == other.get_config()

    def __hash__(self) -> int:
        return hash((self.cold, self.target_rejection, self.bounds))

    def __repr__(self) -> str:
        return f"ProposedLadder(cold={self.cold!r}, target_rejection={self.target_rejection!r}, bounds={self.bounds!r})"


def check_sampler(temperatures: Any, num_chains: int, swap_rule: Any, dynamics: str) -> ProposedLadder | None:
    """The sampler's ``temperatures`` if they are a :class:`ProposedLadder` (``None`` otherwise),
    refused in one line naming ``temperatures`` when there is nothing to propose: fewer than 2
    chains or no swaps."""
    if not isinstance(temperatures, ProposedLadder):
        return None
    if num_chains < 2 or swap_rule is None or dynamics == "msgd":
        why = f"num_chains={num_chains}" if num_chains < 2 else f"swap=None / dynamics={dynamics!r}"
        raise ValueError(
            f"temperatures: a ProposedLadder is a ladder of chains that swap states (num_chains >= 2 and a swap "
            f"rule), got {why}; give the temperature itself"
        )
    return temperatures


def placeholder(proposal: ProposedLadder, num_chains: int) -> list[float]:
    """A ladder that passes the constructor's checks until the chains exist (``cold * 2^h``)."""
    return [proposal.cold * 2.0**h for h in range(num_chains)]


def num_weights(model: keras.Model) -> int:
    """``D``: the number of trainable weights of one chain (what the Gaussian rule counts)."""
    return int(sum(int(np.prod(v.shape)) for v in model.trainable_weights))
