"""The tables of a method config: one frozen dataclass per TOML table, each field a key with its
default, its check (:mod:`tf_vrre.workflows.image_classification.config_values`) and the methods
it applies to (TensorFlow-free).  :func:`tf_vrre.workflows.image_classification.config.resolve`
fills them from a config file; the rules between keys are in
:mod:`tf_vrre.workflows.image_classification.config_rules` and, for ``[ladder]``,
:mod:`tf_vrre.workflows.image_classification.config_ladder`.

Example:
  >>> [f.name for f in dataclasses.fields(LadderConfig)][:3]
  ['chains', 'temperatures', 'learning_rates']
  >>> SECTIONS["ladder"] is LadderConfig, "ladder" in SECTIONS
  (True, True)
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

import tf_vrre.workflows.image_classification.config_values as config_values

__all__ = [
    "METHODS",
    "REPLICA",
    "VARIANCE_REDUCED",
    "CYCLICAL",
    "MAX_CHAINS",
    "DataConfig",
    "ModelConfig",
    "TrainingConfig",
    "SamplerConfig",
    "SwapConfig",
    "LadderConfig",
    "VarianceReductionConfig",
    "SamplesConfig",
    "SECTIONS",
    "TOP",
]

METHODS = ("msgd", "sghmc", "resghmc", "vr-resghmc", "cycsghmc", "cvr-resghmc")
REPLICA = ("resghmc", "vr-resghmc", "cvr-resghmc")  # K >= 2 chains with swaps (2 unless [ladder] says)
VARIANCE_REDUCED = ("vr-resghmc", "cvr-resghmc")
CYCLICAL = ("cycsghmc", "cvr-resghmc")
MAX_CHAINS = 1024
"""Most chains a config may ask for (``ladder.chains``)."""

_EXPONENTIAL = ("msgd", "sghmc", "resghmc", "vr-resghmc")
_TEMPERED = ("sghmc", "resghmc", "vr-resghmc", "cycsghmc", "cvr-resghmc")


def key(default: Any, check: config_values.Check, methods: tuple[str, ...] | None = None) -> Any:
    """A config key: its default, its check and the methods it applies to (``None``: all)."""
    if isinstance(default, dict):
        return dataclasses.field(
            default_factory=lambda: types.MappingProxyType(dict(default)),
            metadata={"check": check, "methods": methods, "default": default},
        )
    return dataclasses.field(default=default, metadata={"check": check, "methods": methods, "default": default})


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``[data]``: the data set, its split and the augmentation."""

    dataset: str = key("cifar10", config_values.dataset)
    batch_size: int = key(256, config_values.integer(1))
    subset: int = key(0, config_values.integer(0))  # training-set size N; 0 = the whole split
    holdout: int | float = key(0.05, config_values.count_or_fraction)  # held out of training (fitted T, running BMA)
    split_seed: int = key(0, config_values.integer(0))
    augment: bool = key(True, config_values.boolean)
    crop_padding: int = key(4, config_values.integer(0))  # < the image side (checked in resolve)
    flip: bool = key(True, config_values.boolean)
    erasing: float = key(0.0, config_values.number(0, 1))


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``[model]``: a model-zoo name and its builder's keyword arguments (read-only mapping)."""

    name: str = key("resnet20", config_values.choice(*config_values.MODEL_NAMES))
    kwargs: Mapping[str, Any] = key({}, config_values.kwargs_table)


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    """``[training]``: the run's epochs, the epochs its schedule is written for, the seed."""

    epochs: int = key(500, config_values.integer(1))
    schedule_epochs: int = key(500, config_values.integer(1))
    seed: int = key(0, config_values.integer(0))


@dataclasses.dataclass(frozen=True)
class SamplerConfig:
    """``[sampler]``: step size, prior, momentum, temperatures (``None`` where the method has none)."""

    lr: float = key(0.1, config_values.number(0, lo_open=True))
    lr_constant_epochs: int | None = key(200, config_values.integer(0), _EXPONENTIAL)
    lr_decay: float | None = key(0.984, config_values.number(0, 1, lo_open=True), _EXPONENTIAL)
    cycles: int | None = key(2, config_values.integer(1), CYCLICAL)
    weight_decay: float = key(5e-4, config_values.number(0))
    momentum: float = key(0.9, config_values.momentum)
    temperature: float | None = key(0.01, config_values.number(0, lo_open=True), _TEMPERED)
    temperature_annealing: float | None = key(1.02, config_values.number(1), _TEMPERED)
    burn_in_epochs: int | None = key(300, config_values.integer(0), _TEMPERED)
    hot_lr_multiplier: float | None = key(1.5, config_values.number(0, lo_open=True), REPLICA)
    hot_temperature_multiplier: float | None = key(5.0, config_values.number(1, lo_open=True), REPLICA)
    energy_mode: str = key("auto", config_values.choice("auto", "train", "inference"))


@dataclasses.dataclass(frozen=True)
class SwapConfig:
    """``[swap]``: the corrected swap of the replica methods."""

    correction: float = key(1.5e5, config_values.number(0, lo_open=True), REPLICA)
    correction_growth: float = key(1.02, config_values.number(1), REPLICA)
    smoothing: float = key(0.3, config_values.number(0, 1, lo_open=True), REPLICA)
    period: int = key(0, config_values.integer(0), REPLICA)  # sigma2 window; 0 = the VR period (1 without VR)
    cooling: bool = key(False, config_values.boolean, REPLICA)  # at most one swap per epoch (authors' code)


@dataclasses.dataclass(frozen=True)
class LadderConfig:
    """``[ladder]``: K chains, their ladder, the pairs attempted and the ladder's tuning (replica
    methods; a config without the table runs the two chains of ``sampler.hot_*_multiplier``).

    ``temperatures`` and ``learning_rates`` are per-chain multiples of ``sampler.temperature`` and
    ``sampler.lr`` (the cold chain's: the first entry is 1), filled in by
    :mod:`tf_vrre.workflows.image_classification.config_ladder` when not given; ``tune_bounds`` is a
    range of multiples of ``sampler.temperature`` too.
    """

    chains: int = key(2, config_values.integer(2, MAX_CHAINS), REPLICA)
    temperatures: tuple[float, ...] | None = key(None, config_values.ladder_ratios(increasing=True), REPLICA)
    learning_rates: tuple[float, ...] | None = key(None, config_values.ladder_ratios(increasing=False), REPLICA)
    pairs: str = key("random", config_values.choice("random", "deo"), REPLICA)
    deo_window: int = key(1, config_values.integer(1), REPLICA)
    tune_epochs: int = key(0, config_values.integer(0), REPLICA)  # 0 = a fixed ladder
    tune_first_round: int = key(0, config_values.integer(0), REPLICA)  # steps; 0 = 1/64 of the phase, >= 16
    tune_bounds: tuple[float, float] | None = key(None, config_values.bounds_pair, REPLICA)  # None = hottest stays


@dataclasses.dataclass(frozen=True)
class VarianceReductionConfig:
    """``[variance_reduction]``: the control variates of the VR methods."""

    period: int = key(392, config_values.integer(1), VARIANCE_REDUCED)
    coefficient: float | str = key(-1.0, config_values.coefficient, VARIANCE_REDUCED)
    smoothing: float = key(0.3, config_values.number(0, 1, lo_open=True), VARIANCE_REDUCED)
    batch_size: int = key(1000, config_values.integer(1), VARIANCE_REDUCED)


@dataclasses.dataclass(frozen=True)
class SamplesConfig:
    """``[samples]``: which cold-chain states are kept."""

    thinning: int = key(256, config_values.integer(1))
    burn_in_epochs: int | None = key(300, config_values.integer(0), _EXPONENTIAL)
    cycle_threshold: float | None = key(0.7, config_values.number(0, 1, lo_open=True, hi_open=True), CYCLICAL)
    max_samples: int = key(0, config_values.integer(0))  # 0 = keep all
    keep: str = key("last", config_values.choice("last", "reservoir"))
    validation: int = key(1000, config_values.integer(0))  # held-out images scored by the running BMA


SECTIONS = {
    "data": DataConfig,
    "model": ModelConfig,
    "training": TrainingConfig,
    "sampler": SamplerConfig,
    "swap": SwapConfig,
    "ladder": LadderConfig,
    "variance_reduction": VarianceReductionConfig,
    "samples": SamplesConfig,
}
"""The TOML tables and their dataclasses, in the order ``run.json`` records them."""
TOP = ("method", "description")
