"""Rules between the keys of a config, checked once each key is fine by itself (by
:func:`tf_vrre.workflows.image_classification.config.resolve`, which adds the file to the message).

The rules: ``sampler.cycles`` within ``training.epochs``, a ``data.crop_padding`` smaller than the
image, a tuned ladder's fixed temperature (:func:`tf_vrre.workflows.image_classification.config_ladder.check`;
the ``[ladder]`` table's own rules are checked as it is filled in), and the sampler's numbers that
do not depend on the data size (:func:`tf_vrre.workflows.image_classification.sampler_numbers.check_config`).

Example:
  >>> from tf_vrre.workflows.image_classification import config
  >>> raw = config.load("cvr-resghmc")
  >>> check(config.resolve(raw))
  >>> config.resolve(config.apply_overrides(raw, {"training.epochs": 1, "sampler.cycles": 2}))
  Traceback (most recent call last):
  ...
  tf_vrre.workflows.image_classification.config.ConfigError: config key sampler.cycles must be <= training.epochs (1), got 2 (override)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tf_vrre.workflows.image_classification.config_ladder as config_ladder
import tf_vrre.workflows.image_classification.sampler_numbers as sampler_numbers

__all__ = ["check"]


def check(cfg: Any, prefer: Iterable[str] = ()) -> None:
    """Checks the rules between the keys of checked config ``cfg``.

    Args:
      cfg: a :class:`tf_vrre.workflows.image_classification.config.Config` whose keys are each checked.
      prefer: the keys to name first when several could change (the overridden ones), as
        :func:`tf_vrre.workflows.image_classification.sampler_numbers.check_config`.

    Raises:
      tf_vrre.workflows.step_bounds.BoundError: naming the key to change (``err.key``) and its
        allowed values.
    """
    if cfg.cyclical and cfg.sampler.cycles > cfg.training.epochs:
        raise sampler_numbers.BoundError(
            "sampler.cycles",
            f"config key sampler.cycles must be <= training.epochs ({cfg.training.epochs}), got {cfg.sampler.cycles}",
        )
    from tf_vrre.workflows.image_classification.data.sources import image_shape

    side = min(image_shape(cfg.data.dataset)[:2])
    if cfg.data.crop_padding >= side:
        raise sampler_numbers.BoundError(
            "data.crop_padding",
            f"config key data.crop_padding must be an integer in [0, {side - 1}] (less than the "
            f"{side}-pixel side of {cfg.data.dataset} images: a larger padding crops padding alone), "
            f"got {cfg.data.crop_padding}",
        )
    config_ladder.check(cfg, prefer=prefer)
    sampler_numbers.check_config(cfg, prefer=prefer)
