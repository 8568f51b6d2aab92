"""The ``[ladder]`` table of a replica config: K chains, their ladder, the pairs attempted and the
tuning of the ladder (TensorFlow-free).

A replica config without ``[ladder]`` runs two chains, ``(lr, temperature)`` and
``(hot_lr_multiplier lr, hot_temperature_multiplier temperature)``, as the paper.  With it:

- ``chains = K`` (2 to :data:`~tf_vrre.workflows.image_classification.config_tables.MAX_CHAINS`;
  not given: the length of the lists given, else 2);
- ``temperatures``: K multiples of ``sampler.temperature`` (the cold chain's, so the first is 1),
  strictly increasing; default: geometric from 1 to ``sampler.hot_temperature_multiplier``
  (``m^(k / (K - 1))``: for K = 2 the paper's two chains);
- ``learning_rates``: K multiples of ``sampler.lr`` (the first 1); default
  ``hot_lr_multiplier^(k / (K - 1))``;
- ``pairs``: ``"random"`` (one adjacent pair per attempt) or ``"deo"`` (deterministic even/odd,
  non-reversible), ``deo_window``: attempts per parity (``pairs = "deo"`` only);
- ``tune_epochs > 0``: a :class:`tf_vrre.LadderTuner` places the temperatures during the first
  ``tune_epochs`` epochs (an epoch count of the ``training.schedule_epochs`` schedule, stretched
  like the others), in rounds of doubling length from ``tune_first_round`` steps (0: 1/64 of the
  tuning phase, at least 16 steps), then fixes them.  The cold temperature never moves; the
  hottest moves within ``tune_bounds`` (multiples of ``sampler.temperature``) when given, else
  stays.  Needs K >= 3 and a fixed temperature (no annealing); the learning rates keep their
  multiples.  Samples are collected only after the tuning phase (checked with the run's steps).

When the lists are given, ``sampler.hot_*_multiplier`` become their last entries (given in the
same place as well, file or overrides, they must agree; a list given as an override replaces the
file's multiplier).  :func:`complete` fills the table in (:func:`tf_vrre.workflows.image_classification.config.resolve`
calls it), :func:`check` checks what needs the whole config, :func:`rungs` gives the ladder.

Example:
  >>> from tf_vrre.workflows.image_classification import config
  >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {"ladder.chains": 3}))
  >>> [round(t, 4) for t in cfg.ladder.temperatures], [round(r, 4) for r in cfg.ladder.learning_rates]
  ([1.0, 2.2361, 5.0], [1.0, 1.2247, 1.5])
  >>> rungs(config.resolve(config.load("resghmc")))      # no [ladder]: the paper's two chains
  ((1.0, 5.0), (1.0, 1.5))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

import tf_vrre.workflows.image_classification.sampler_numbers as sampler_numbers
from tf_vrre.workflows.step_bounds import BoundError

__all__ = ["complete", "check", "rungs", "num_chains", "tuned", "tune_steps", "first_round"]

_KEY = "config key "


def _pick(keys: Iterable[str], prefer: Iterable[str]) -> str:
    """The first of ``keys`` the user gave explicitly (``prefer``), else the first."""
    keys = list(keys)
    return next((k for k in keys if k in set(prefer)), keys[0])


def _geometric(top: float, count: int) -> tuple[float, ...]:
    """``top^(k / (count - 1))`` for ``k = 0 .. count - 1`` (exactly 1 and ``top`` at the ends)."""
    return tuple([1.0] + [top ** (k / (count - 1)) for k in range(1, count - 1)] + [float(top)])


def complete(ladder: Any, sampler: Any, given: Mapping, sampler_given: Mapping, prefer: Iterable[str] = ()) -> tuple:
    """``(ladder, sampler)`` with the ladder's lists filled in and ``sampler.hot_*_multiplier``
    set to their last entries; refuses keys that contradict each other.

    Args:
      ladder, sampler: the checked ``[ladder]`` and ``[sampler]`` tables (each key fine by itself).
      given, sampler_given: the keys of those tables given in the file or as overrides.
      prefer: the keys given explicitly as overrides, named first when several could change.

    Raises:
      BoundError: naming the key to change (``err.key``).
    """
    prefer = tuple(prefer)
    if "chains" not in given:  # K from the lists given, else 2
        K = next((len(getattr(ladder, n)) for n in ("temperatures", "learning_rates") if getattr(ladder, n)), 2)
        ladder = dataclasses.replace(ladder, chains=K)
    K = ladder.chains
    lists = {}
    for name, hot_key, hot in (
        ("temperatures", "hot_temperature_multiplier", sampler.hot_temperature_multiplier),
        ("learning_rates", "hot_lr_multiplier", sampler.hot_lr_multiplier),
    ):
        values = getattr(ladder, name)
        dotted = f"ladder.{name}"
        if values is None:
            lists[name] = _geometric(hot, K)
            continue
        if len(values) != K:
            if _pick(("ladder.chains", dotted), prefer) == "ladder.chains":
                raise BoundError(
                    "ladder.chains",
                    f"{_KEY}ladder.chains must be {len(values)}, the number of entries of {dotted} (one per "
                    f"chain), got {K}",
                )
            raise BoundError(
                dotted, f"{_KEY}{dotted} must have ladder.chains = {K} entries (one per chain), got {len(values)}"
            )
        # a list given as an override replaces a multiplier of the file; given alike, they must agree
        contradicts = f"sampler.{hot_key}" in prefer or dotted not in prefer
        if hot_key in sampler_given and hot != values[-1] and contradicts:
            raise BoundError(
                f"sampler.{hot_key}",
                f"{_KEY}sampler.{hot_key} must equal the last entry of {dotted} ({values[-1]!r}, the hottest "
                f"chain's multiple), got {hot!r}; give one of them",
            )
        lists[name] = values
    if ladder.deo_window != 1 and ladder.pairs != "deo":
        raise BoundError(
            "ladder.deo_window",
            f'{_KEY}ladder.deo_window must be 1 with ladder.pairs = "{ladder.pairs}" (attempts per parity of '
            f'the even/odd schedule: pairs = "deo"), got {ladder.deo_window}',
        )
    _check_tuning(ladder, given, prefer)
    ladder = dataclasses.replace(ladder, **lists)
    sampler = dataclasses.replace(
        sampler, hot_temperature_multiplier=lists["temperatures"][-1], hot_lr_multiplier=lists["learning_rates"][-1]
    )
    return ladder, sampler


def _check_tuning(ladder: Any, given: Mapping, prefer: tuple) -> None:
    if ladder.tune_epochs == 0:
        for name in ("tune_first_round", "tune_bounds"):
            if given.get(name) not in (None, 0):
                raise BoundError(
                    f"ladder.{name}",
                    f"{_KEY}ladder.{name} applies only when the ladder is tuned (ladder.tune_epochs > 0, "
                    f"here 0); drop it or set ladder.tune_epochs",
                )
        return
    if ladder.chains < 3:
        if _pick(("ladder.tune_epochs", "ladder.chains"), prefer) == "ladder.chains":
            raise BoundError(
                "ladder.chains",
                f"{_KEY}ladder.chains must be >= 3 to tune the ladder (ladder.tune_epochs = {ladder.tune_epochs}; "
                f"with two chains both ends are fixed and there is nothing to place), got {ladder.chains}",
            )
        raise BoundError(
            "ladder.tune_epochs",
            f"{_KEY}ladder.tune_epochs must be 0 with ladder.chains = {ladder.chains}: tuning places the inner "
            f"temperatures of K >= 3 chains (with two both ends are fixed), got {ladder.tune_epochs}",
        )


def check(cfg: Any, prefer: Iterable[str] = ()) -> None:
    """The ladder's rules that need the whole config (by
    :func:`tf_vrre.workflows.image_classification.config_rules.check`): a tuned ladder needs
    temperatures that only the tuner sets (no annealing over a burn-in), and its tuning phase,
    stretched to the run's epochs, lasts at least one epoch, within the run and before the first
    sample (the exponential schedules' ``samples.burn_in_epochs``; a cyclical schedule's first
    sampling phase is checked with the run's steps, by
    :func:`tf_vrre.workflows.image_classification.planning.check_numbers`).

    Raises:
      BoundError: naming the key to change.
    """
    if not tuned(cfg):
        return
    s, stretch, tune = cfg.sampler, sampler_numbers.Stretch(cfg), cfg.ladder.tune_epochs
    if s.temperature_annealing > 1 and stretch.epochs(s.burn_in_epochs) > 0:
        raise BoundError(
            "sampler.temperature_annealing",
            f"{_KEY}sampler.temperature_annealing must be 1 (a fixed temperature) when the ladder is tuned "
            f"(ladder.tune_epochs = {tune}): the tuner sets the temperatures, and the annealing would too, "
            f"got {s.temperature_annealing:g}",
        )
    epochs, runs = stretch.epochs(tune), cfg.training.epochs
    of = f"{tune} of the {cfg.training.schedule_epochs}-epoch schedule"
    if epochs < 1:
        raise BoundError(
            "ladder.tune_epochs",
            f"{_KEY}ladder.tune_epochs ({of}) is no epoch of this {runs}-epoch run: raise it to at least "
            f"{math.ceil(0.5 / stretch.scale)} or set it to 0 (a fixed ladder)",
        )
    burn = cfg.samples.burn_in_epochs
    if burn is not None and epochs > stretch.epochs(burn):
        raise BoundError(
            "ladder.tune_epochs",
            f"{_KEY}ladder.tune_epochs ({of}, {epochs} of this run) must be <= samples.burn_in_epochs ({burn}, "
            f"{stretch.epochs(burn)} of this run): samples are kept only once the ladder is fixed",
        )
    if epochs > runs:
        raise BoundError(
            "ladder.tune_epochs",
            f"{_KEY}ladder.tune_epochs ({of}, {epochs} of this run) must be <= training.epochs ({runs}): "
            "the ladder would never be fixed",
        )


def tuned(cfg: Any) -> bool:
    """The config tunes its ladder (``ladder.tune_epochs > 0``)."""
    return getattr(cfg, "ladder", None) is not None and cfg.ladder.tune_epochs > 0


def tune_steps(cfg: Any, steps_per_epoch: int) -> int:
    """Steps of the tuning phase: ``ladder.tune_epochs`` stretched to the run's epochs, in steps
    (0 for a fixed ladder)."""
    return sampler_numbers.Stretch(cfg).epochs(cfg.ladder.tune_epochs) * steps_per_epoch if tuned(cfg) else 0


def first_round(cfg: Any, steps: int) -> int:
    """Steps of the first tuning round of a ``steps``-step tuning phase: ``ladder.tune_first_round``,
    or with 0 (auto) 1/64 of the phase, at least 16 steps (and at most the phase)."""
    return cfg.ladder.tune_first_round or min(steps, max(16, steps // 64))


def rungs(cfg: Any) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(temperature multiples, learning-rate multiples)`` of the chains, cold first: ``((1.0,),
    (1.0,))`` for one chain, the two multipliers without ``[ladder]``, else the ladder's lists."""
    if not cfg.replica:
        return (1.0,), (1.0,)
    if cfg.ladder is None:
        s = cfg.sampler
        return (1.0, s.hot_temperature_multiplier), (1.0, s.hot_lr_multiplier)
    return tuple(cfg.ladder.temperatures), tuple(cfg.ladder.learning_rates)


def num_chains(cfg: Any) -> int:
    """K: 1 for the single-chain methods, 2 for a replica config without ``[ladder]``."""
    return len(rungs(cfg)[0])
