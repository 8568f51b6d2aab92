"""The callbacks of a training run (:func:`tf_vrre.workflows.image_classification.train.train`), in the
order ``fit`` calls them: ``EpochTimer`` -> the host's step counter -> ``SwapLogger`` ->
``LadderTuner`` (a tuned ladder) -> ``SampleCollector`` -> progress -> CSV -> TensorBoard ->
:class:`tf_vrre.callbacks.checkpoint.Checkpoint` in ``out/backup`` (atomic; it saves after every
callback's epoch end, so every record of an epoch is on disk before its checkpoint).

Example:
  >>> from tf_vrre.workflows.image_classification import config, config_schedule
  >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc-ladder"), {"training.epochs": 10}))
  >>> tuner = ladder_tuner(cfg, config_schedule.schedule_values(cfg, 20000, 78), "runs/ladder")
  >>> tuner.tuning_steps, tuner.first_round_steps, tuner.directory
  (156, 16, 'runs/ladder/ladder')
"""

from __future__ import annotations

import os
from typing import Any

import keras

import tf_vrre.workflows.image_classification.config as config
import tf_vrre.workflows.image_classification.config_ladder as config_ladder
from tf_vrre.callbacks.checkpoint import Checkpoint
from tf_vrre.callbacks.ladder_tuner import LadderTuner
from tf_vrre.callbacks.progress import EpochCSVLogger, EpochProgress, EpochTimer
from tf_vrre.callbacks.sample_collector import SampleCollector
from tf_vrre.callbacks.swap_logger import SwapLogger
from tf_vrre.runs import run_json
from tf_vrre.sgmcmc.schedules import CyclicalCosine

__all__ = ["callbacks", "ladder_tuner"]


def callbacks(cfg: config.Config, p: dict, sampler: Any, out: str, verbose: Any, mirror: Any) -> list:
    """The callbacks of a run of ``cfg`` writing into ``out`` (``p``: :func:`tf_vrre.workflows.image_classification.train.plan`;
    ``mirror``: the host's step counter the input pipeline reads)."""
    sm, values = cfg.samples, p["values"]
    cbs = [EpochTimer(), mirror]  # EpochTimer first: its epoch time includes the other callbacks' work
    if sampler.swap_rule is not None:
        cbs.append(
            SwapLogger(
                os.path.join(out, run_json.SWAPS), tensorboard_dir=os.path.join(out, run_json.TENSORBOARD, "swaps")
            )
        )
    tuner = ladder_tuner(cfg, values, out)
    if tuner is not None:  # before the samples (collected once the ladder is fixed) and the logs (its columns)
        cbs.append(tuner)
    validation = None
    xh, yh = p["holdout"]
    if sm.validation and len(xh):
        k = min(sm.validation, len(xh))
        validation = (p["train"].preprocessing.apply(xh[:k]), yh[:k])
    cycle = None
    if cfg.cyclical:
        cycle = CyclicalCosine(values["eta"], values["total_steps"], cfg.sampler.cycles, sm.cycle_threshold)
    cbs.append(
        SampleCollector(
            os.path.join(out, run_json.SAMPLES),
            every=sm.thinning,
            burn_in_steps=values["sample_burn_in_steps"],
            cycle=cycle,
            max_samples=sm.max_samples or None,
            keep=sm.keep,
            validation_data=validation,
            seed=cfg.training.seed,
        )
    )
    if verbose:
        cbs.append(EpochProgress(values["epochs"], values["steps_per_epoch"]))
    cbs.append(EpochCSVLogger(os.path.join(out, run_json.LOG)))
    cbs.append(keras.callbacks.TensorBoard(os.path.join(out, run_json.TENSORBOARD), write_graph=False))
    cbs.append(Checkpoint(os.path.join(out, run_json.BACKUP)))  # atomic: exact resume after a kill at any instant
    return cbs


def ladder_tuner(cfg: config.Config, values: dict, out: str) -> LadderTuner | None:
    """The :class:`tf_vrre.LadderTuner` of a tuned ladder (``None`` for a fixed one): tuning over
    the first ``values["tune_steps"]`` steps, its record in ``out/ladder/ladder.json``; the
    learning rates keep their multiples (they follow the config's schedule); the hottest
    temperature moves within ``ladder.tune_bounds`` (multiples of ``sampler.temperature``) or stays."""
    if not config_ladder.tuned(cfg):
        return None
    steps, bounds = values["tune_steps"], cfg.ladder.tune_bounds
    return LadderTuner(
        steps,
        first_round_steps=config_ladder.first_round(cfg, steps),
        learning_rates=None,
        bounds=None if bounds is None else [b * cfg.sampler.temperature for b in bounds],
        directory=os.path.join(out, run_json.LADDER),
    )
