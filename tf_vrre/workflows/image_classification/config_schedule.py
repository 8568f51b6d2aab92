"""The schedule of a checked config as a run uses it: stretched to the run's epochs, or with its
per-epoch rates kept.

Epoch numbers in ``[sampler]`` and ``[samples]`` refer to a run of ``training.schedule_epochs``
epochs.  A run of ``E`` epochs stretches the schedule by ``s = E / schedule_epochs``: epoch
counts are multiplied by ``s`` (rounded) and per-epoch factors raised to ``1 / s``, so the
learning-rate, temperature and ``F`` curves are the same functions of the fraction of training
(e.g. ``--epochs 10`` of the 500-epoch recipe decays the lr by ``0.984^50`` per epoch after
epoch 4).

A short run may instead keep the schedule's per-epoch rates (:func:`keep_rates`,
``tf-vrre train --schedule keep-rates``): the schedule is rewritten for the run's length.

Example:
  >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {"training.epochs": 10}))
  >>> schedule_values(cfg, data_size=50000, steps_per_epoch=195)["lr_constant_epochs"]   # 200 of 500 epochs
  4
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tf_vrre.workflows.image_classification.config as config
import tf_vrre.workflows.image_classification.config_ladder as config_ladder
import tf_vrre.workflows.image_classification.sampler_numbers as sampler_numbers

__all__ = ["SCHEDULE_EPOCH_KEYS", "keep_rates", "schedule_values"]

SCHEDULE_EPOCH_KEYS = (
    "sampler.lr_constant_epochs",
    "sampler.burn_in_epochs",
    "samples.burn_in_epochs",
    "ladder.tune_epochs",
)
"""The epoch counts of a config's schedule (numbers of epochs of a ``training.schedule_epochs`` run)."""


def keep_rates(raw: Mapping) -> config.RawConfig:
    """``raw`` with its schedule's per-epoch rates kept over the run's ``training.epochs``: the
    schedule is written for the run's length (``training.schedule_epochs = training.epochs``) and
    its epoch counts (:data:`SCHEDULE_EPOCH_KEYS`) scaled to it, so the run keeps the config's
    phases (the learning rate constant for the same fraction of the run, the same burn-in
    fraction) and its per-epoch factors (x0.984, x1.02 per epoch), with gentler total changes
    than the stretched schedule's (:func:`schedule_values`).  For short runs: 4 epochs of the
    paper's 500-epoch recipe stretched grow ``F`` x11.9 per epoch; kept, x1.02.
    (``tf-vrre train --schedule keep-rates``.)

    Raises:
      ConfigError: as :func:`tf_vrre.workflows.image_classification.config.resolve`; when the
        schedule with its rates kept cannot run for ``training.epochs`` epochs (e.g. the
        temperature, annealed x1.02 per epoch over a burn-in that grows with the run, falls below
        float32's smallest number), one naming ``training.epochs`` and the epochs it allows (the
        rule that failed, on a key the schedule derives from them, follows).

    Example:
      >>> raw = keep_rates(config.apply_overrides(config.load("vr-resghmc"), {"training.epochs": 10}))
      >>> cfg = config.resolve(raw)
      >>> cfg.training.schedule_epochs, cfg.sampler.lr_constant_epochs, cfg.sampler.burn_in_epochs, cfg.sampler.lr_decay
      (10, 4, 6, 0.984)
      >>> keep_rates(config.apply_overrides(config.load("vr-resghmc"), {"training.epochs": 10**8}))
      Traceback (most recent call last):
      ...
      tf_vrre.workflows.image_classification.config.ConfigError: config key training.epochs must be in [1, 6464] with the schedule's per-epoch rates kept (keep_rates: its burn-in and phases grow with the run's epochs), got 100000000 (override); at 100000000 epochs: config key sampler.temperature_annealing must be ...
    """
    kept = _kept(raw)
    try:
        config.resolve(kept)
    except config.ConfigError as err:
        epochs = config.resolve(raw).training.epochs
        most = _most_epochs(raw, epochs)
        if most is None:  # fails at 1 epoch too: not the run's length
            raise
        source = getattr(raw, "path", None)
        at = (
            " (override)"
            if "training.epochs" in getattr(raw, "overridden", ())
            else f" (in {source})"
            if source
            else ""
        )
        raise config.ConfigError(
            f"config key training.epochs must be in [1, {most}] with the schedule's per-epoch rates kept (keep_rates: "
            f"its burn-in and phases grow with the run's epochs), got {epochs}{at}; at {epochs} epochs: {err}"
        ) from None
    return kept


def _kept(raw: Mapping) -> config.RawConfig:
    """``raw`` with its schedule written for its ``training.epochs`` (what :func:`keep_rates` returns)."""
    cfg = config.resolve(raw)
    stretch = sampler_numbers.Stretch(cfg)
    over: dict[str, Any] = {"training.schedule_epochs": cfg.training.epochs}
    for key in SCHEDULE_EPOCH_KEYS:
        section, name = key.split(".")
        value = getattr(getattr(cfg, section), name, None)
        if value is not None:
            over[key] = stretch.epochs(value)
    return config.apply_overrides(raw, over)


def _most_epochs(raw: Mapping, epochs: int) -> int | None:
    """The most epochs below ``epochs`` whose kept schedule resolves (bisection: the schedule's
    burn-in, and what it anneals or grows, increase with the epochs), ``None`` if 1 epoch fails too."""

    def runs(e: int) -> bool:
        try:
            config.resolve(_kept(config.apply_overrides(raw, {"training.epochs": e})))
        except config.ConfigError:
            return False
        return True

    if not runs(1):
        return None
    lo, hi = 1, int(epochs)  # runs(lo), not runs(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if runs(mid) else (lo, mid)
    return lo


def schedule_values(cfg: config.Config, data_size: int, steps_per_epoch: int) -> dict:
    """The sampler's numbers for a run: ``eta``, prior precision and the time-stretched schedule.

    Returns a dict: ``eta`` (= lr / N), ``weight_decay`` (= weight_decay * N), ``scale``
    (``epochs / schedule_epochs``) and, as applicable, ``lr_constant_epochs``, ``lr_decay``,
    ``burn_in_epochs``, ``temperature_annealing``, ``correction_growth``,
    ``sample_burn_in_epochs``, ``total_steps``, ``sample_burn_in_steps``, ``cooling_steps``,
    ``tune_epochs`` and ``tune_steps`` (a tuned ladder) (all per epoch of this run).

    Example:
      >>> v = schedule_values(config.resolve(config.load("vr-resghmc")), data_size=50000, steps_per_epoch=195)
      >>> v["eta"]
      2e-06
    """
    s, sm, stretch = cfg.sampler, cfg.samples, sampler_numbers.Stretch(cfg)
    epochs = cfg.training.epochs
    out = {
        "eta": s.lr / data_size,
        "weight_decay": s.weight_decay * data_size,
        "scale": stretch.scale,
        "epochs": epochs,
        "steps_per_epoch": steps_per_epoch,
        "total_steps": epochs * steps_per_epoch,
    }
    if s.lr_constant_epochs is not None:
        out["lr_constant_epochs"] = stretch.epochs(s.lr_constant_epochs)
        out["lr_decay"] = stretch.factor(s.lr_decay)
    if s.temperature is not None:
        out["burn_in_epochs"] = stretch.epochs(s.burn_in_epochs)
        out["temperature_annealing"] = stretch.factor(s.temperature_annealing)
    if cfg.swap is not None:
        out["correction_growth"] = stretch.factor(cfg.swap.correction_growth)
        out["cooling_steps"] = steps_per_epoch if cfg.swap.cooling else 0
    if config_ladder.tuned(cfg):
        out["tune_epochs"] = stretch.epochs(cfg.ladder.tune_epochs)
        out["tune_steps"] = config_ladder.tune_steps(cfg, steps_per_epoch)
    if sm.burn_in_epochs is not None:
        out["sample_burn_in_epochs"] = stretch.epochs(sm.burn_in_epochs)
        out["sample_burn_in_steps"] = out["sample_burn_in_epochs"] * steps_per_epoch
    else:
        out["sample_burn_in_steps"] = 0
    return out
