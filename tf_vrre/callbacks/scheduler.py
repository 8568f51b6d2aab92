"""The :class:`HyperparameterScheduler` callback: per-epoch learning rates, temperatures and ``F``
from numbers, Python callables of the epoch, or step schedules.

Its arguments are checked by the rule of their kind (:func:`tf_vrre.sgmcmc.schedules.validated`:
at construction, again with the sampler's number of chains at the start of ``fit``), and the
values of each epoch by the sampler's setters, which apply the same rule.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np

from tf_vrre.sampler.replica_exchange import require_sampler
from tf_vrre.sgmcmc import schedules

NAMES = ("learning_rates", "temperatures", "correction")
"""The hyperparameters the callback sets, by their argument names."""


def evaluate(value: Any, epoch: int, step: int) -> float | list:
    """A scheduled value at ``epoch`` (first step ``step``): a number as is, a schedule at
    ``step``, a callable at ``epoch``; a per-chain list entry by entry."""
    if isinstance(value, (list, tuple)):
        return [evaluate(v, epoch, step) for v in value]
    if schedules.is_schedule(value):
        return schedules.value_at(value, step)
    if callable(value):
        out = value(epoch)
        if isinstance(out, (list, tuple, np.ndarray)):
            return [float(v) for v in out]
        return float(out)
    return float(value)


@keras.saving.register_keras_serializable(package="tf_vrre")
class HyperparameterScheduler(keras.callbacks.Callback):
    """Sets learning rates, temperatures and the correction ``F`` at the start of every epoch.

    For epoch ``e`` (zero-based, as in ``keras.callbacks.LearningRateScheduler``)::

        sampler.set_learning_rates(learning_rates(e))
        sampler.set_temperatures(temperatures(e))
        sampler.set_correction(correction(e))

    Each argument is ``None`` (left alone), a number, a Python callable ``epoch -> value``, a
    ``LearningRateSchedule`` (evaluated at the epoch's first step), or, for learning rates and
    temperatures, a per-chain list of those (a callable may also return a per-chain list).  The noise of every step uses the values in
    force.  Schedules that should change *within* an epoch belong in the sampler itself
    (``learning_rates=EpochExponential(...)``); giving the same hyperparameter both ways is an
    error, and so is a second callback of the same ``fit`` that sets it (a
    :class:`tf_vrre.LadderTuner` sets the temperatures, and the learning rates unless built with
    ``learning_rates=None``).  After a ``BackupAndRestore`` resume the epoch index is restored, so the values are
    too.

    Args:
      learning_rates: per-chain ``eta > 0``.
      temperatures: per-chain ``tau``, strictly increasing.
      correction: ``F > 0`` (needs a sampler with swaps and a numeric ``CorrectedSwap``).
      verbose: print the values at each epoch start.

    Example:
      >>> sampler = toy_sampler(temperatures=[0.01, 0.05])
      >>> sched = HyperparameterScheduler(
      ...     temperatures=lambda e: [0.01 / 1.02 ** min(e, 300), 0.05 / 1.02 ** min(e, 300)],
      ...     correction=lambda e: 1.5e5 * 1.02 ** min(e, 300))
      >>> history = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0, callbacks=[sched])
      >>> [round(t, 6) for t in history.history["temperature_0"]]
      [0.01, 0.009804]
    """

    def __init__(self, learning_rates: Any = None, temperatures: Any = None, correction: Any = None, verbose: int = 0):
        super().__init__()
        if learning_rates is None and temperatures is None and correction is None:
            raise ValueError("HyperparameterScheduler: give at least one of learning_rates, temperatures, correction")
        # Without the sampler: no number of chains yet, and 0 is a temperature without swaps.
        self.learning_rates, self.temperatures, self.correction = (
            None if v is None else schedules.validated(name, v, swaps=False, epoch_callables=True)
            for name, v in zip(NAMES, (learning_rates, temperatures, correction))
        )
        self.verbose = int(verbose)

    def hyperparameters_set(self) -> tuple[str, ...]:
        """The sampler's hyperparameters this scheduler sets (a second callback of the same ``fit``
        setting one of them, e.g. a :class:`tf_vrre.LadderTuner` for temperatures, is refused
        before it starts)."""
        return tuple(name for name in NAMES if getattr(self, name) is not None)

    def on_train_begin(self, logs: dict | None = None) -> None:
        s = require_sampler(self.model, "HyperparameterScheduler")
        for arg in ("learning_rates", "temperatures"):
            if getattr(self, arg) is None:
                continue
            if any(schedules.is_schedule(v) for v in getattr(s, arg)):
                raise ValueError(
                    f"HyperparameterScheduler: {arg} is already a schedule of the sampler; set it in one place only"
                )
            schedules.validated(
                arg, getattr(self, arg), s.num_chains, swaps=s.swap_rule is not None, epoch_callables=True
            )  # a list of another length: refused now
        if self.correction is not None:
            if s.swap_rule is None:
                raise ValueError("HyperparameterScheduler: correction needs a sampler with swaps")
            if s.swap_rule.scheduled_correction:
                raise ValueError(
                    "HyperparameterScheduler: the swap rule's correction is already a "
                    "schedule; set it in one place only"
                )
            if s.swap_rule.adaptive_correction:
                raise ValueError(
                    "HyperparameterScheduler: the swap rule's correction is 'auto' (adapted by a "
                    "LadderTuner); set it in one place only"
                )

    def values(self, epoch: int, step: int | None = None) -> dict:
        """The values for ``epoch`` as a dict of floats / lists (``step`` for step schedules)."""
        step = 0 if step is None else step
        return {name: evaluate(getattr(self, name), epoch, step) for name in NAMES if getattr(self, name) is not None}

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        s = self.model
        vals = self.values(epoch, int(s.state.step.numpy()))
        if "learning_rates" in vals:
            s.set_learning_rates(vals["learning_rates"])
        if "temperatures" in vals:
            s.set_temperatures(vals["temperatures"])
        if "correction" in vals:
            s.set_correction(vals["correction"])
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: HyperparameterScheduler set {vals}")

    def get_config(self) -> dict:
        return {**{name: schedules.serialize(getattr(self, name)) for name in NAMES}, "verbose": self.verbose}

    @classmethod
    def from_config(cls, config: dict) -> HyperparameterScheduler:
        config = dict(config)
        for name in NAMES:
            config[name] = schedules.deserialize(config.get(name))
        return cls(**config)


# ----------------------------------------------------------------------------------------
