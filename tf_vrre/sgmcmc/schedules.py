"""Schedules of the step for learning rates, temperatures and the correction factor ``F``, and
the one path by which a hyperparameter argument is checked and serialised.

Every schedule here is a ``keras.optimizers.schedules.LearningRateSchedule`` of the global
step, so it can be passed anywhere the sampler takes a hyperparameter
(``learning_rates=``, ``temperatures=``, ``CorrectedSwap(correction=...)``), is evaluated
inside the compiled train step (noise always uses the current value), and resumes exactly
from the restored step counter.  Epoch-based schedules take ``steps_per_epoch`` and use the
epoch ``e = floor(step / steps_per_epoch)``.

A hyperparameter argument is a :data:`ScalarOrSchedule` or, for temperatures and learning
rates, a list of ``K`` of those (one per chain).  :func:`validated` checks every such argument
(the sampler's constructor and setters, ``CorrectedSwap``, :class:`tf_vrre.callbacks.HyperparameterScheduler`)
against its kind's rule (:data:`tf_vrre.numerics.RULES`; schedules by their value at step 0),
and :func:`serialize` / :func:`deserialize` write and read it in configs.

The paper's CIFAR recipe (Section 5.2, ``algorithm-notes.md`` section 5) is
:func:`paper_cifar_schedules`; Python callables of the epoch go to
:class:`tf_vrre.callbacks.HyperparameterScheduler` instead.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, TypeAlias, TypeGuard

import keras
import numpy as np
import tensorflow as tf

from tf_vrre import numerics

Schedule: TypeAlias = keras.optimizers.schedules.LearningRateSchedule
ScalarOrSchedule: TypeAlias = float | Schedule
"""A hyperparameter's value: a number, or a ``LearningRateSchedule`` of the step."""


def is_schedule(value: Any) -> TypeGuard[Schedule]:
    """True if ``value`` is a ``keras.optimizers.schedules.LearningRateSchedule``."""
    return isinstance(value, keras.optimizers.schedules.LearningRateSchedule)


def value_at(value: ScalarOrSchedule, step: int = 0) -> float:
    """A number, or a schedule's value at ``step`` (evaluated eagerly), as a Python float."""
    return float(keras.ops.convert_to_numpy(value(step))) if is_schedule(value) else float(value)


def validated(
    kind: str, value: Any, num_chains: int | None = None, swaps: bool = True, epoch_callables: bool = False
) -> Any:
    """A hyperparameter argument checked against its kind's rule, in its normal form.

    ``value`` is a number, a ``LearningRateSchedule`` or, for ``"temperatures"`` and
    ``"learning_rates"``, a list of one of those per chain; with ``epoch_callables`` (the
    callback :class:`tf_vrre.callbacks.HyperparameterScheduler`) also a Python callable of the
    epoch, checked by the setter its values go to.  Numbers are checked as they are, schedules
    by their value at step 0, by :func:`tf_vrre.numerics.check_hyperparameter`.

    Args:
      kind: ``"temperatures"``, ``"learning_rates"`` or ``"correction"``.
      value: the argument.
      num_chains: ``K`` (a list must have ``K`` entries; one value is expanded to ``K``), or
        ``None`` while ``K`` is not known (a list is then checked entry by entry and for order).
      swaps: the sampler swaps (temperatures ``> 0``; without swaps ``>= 0``).
      epoch_callables: allow callables of the epoch.

    Returns:
      Per-chain kinds: a list (of ``K`` entries when ``num_chains`` is given) of floats,
      schedules (and callables); a single number or schedule when one was given and
      ``num_chains`` is ``None``.  ``"correction"``: a float or a schedule.

    Example:
      >>> validated("learning_rates", 1e-3, num_chains=2)
      [0.001, 0.001]
      >>> validated("temperatures", [0.05, 0.01], num_chains=2)
      Traceback (most recent call last):
      ...
      ValueError: temperatures must be strictly increasing in float32 (tau_1 < tau_2 < ...), got [0.05, 0.01]
    """
    rule = numerics.RULES[kind]
    many = isinstance(value, (list, tuple, np.ndarray))
    if many and not rule.per_chain:
        raise TypeError(f"{rule.label}: one value for the swap rule, not a list, got {value!r}")
    entries = list(value) if many else [value]
    kinds = "a number, a LearningRateSchedule" + (", a callable epoch -> value" if epoch_callables else "")
    for v in entries:
        callable_ok = epoch_callables and callable(v)
        if not (is_schedule(v) or callable_ok or (isinstance(v, numbers.Real) and not isinstance(v, bool))):
            what = f"{kinds} or a per-chain list of those" if rule.per_chain else kinds
            raise TypeError(f"{rule.label} must be {what}, got {v!r}")
    if many and num_chains is not None and len(entries) != num_chains:
        raise ValueError(f"{rule.label} must have one entry per chain ({num_chains}), got {len(entries)}")
    if not many and rule.per_chain and num_chains is not None:
        entries, many = entries * num_chains, True
    checked = [v for v in entries if is_schedule(v) or not callable(v)]  # callables: when evaluated
    if checked:
        scheduled = any(is_schedule(v) for v in checked)
        label = f"{rule.label} (at step 0)" if scheduled else rule.label
        values = [value_at(v) for v in checked]
        numerics.check_hyperparameter(kind, values if many else values[0], swaps=swaps, name=label)
    out = [v if is_schedule(v) or callable(v) else float(v) for v in entries]
    return out if many else out[0]


def serialize(value: Any) -> Any:
    """A hyperparameter argument for a config: numbers as floats, schedules and callables as
    Keras serialises them, lists entry by entry, ``None`` as is (inverse: :func:`deserialize`)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [serialize(v) for v in value]
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return keras.saving.serialize_keras_object(value)


def deserialize(value: Any) -> Any:
    """The argument :func:`serialize` wrote (serialised objects rebuilt, lists entry by entry)."""
    if isinstance(value, list):
        return [deserialize(v) for v in value]
    if isinstance(value, dict):
        return keras.saving.deserialize_keras_object(value)
    return value


def _positive(name: str, value: Any, integer: bool = False, allow_zero: bool = False) -> Any:
    ok_type = isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real)
    if (
        isinstance(value, bool)
        or not ok_type
        or not np.isfinite(value)
        or not (value >= 0 if allow_zero else value > 0)
    ):
        kind = "an integer" if integer else "a finite number"
        raise ValueError(f"{name} must be {kind} {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    if integer:
        return int(value)
    return numerics.check_float32(name, value, positive=not allow_zero)  # the schedules' values are float32


@keras.saving.register_keras_serializable(package="tf_vrre")
class EpochExponential(Schedule):
    """Constant for ``constant_epochs`` epochs, then multiplied by ``factor`` every epoch.

    ``value(e) = initial * factor ** k(e)`` with
    ``k(e) = max(0, min(e, stop_epoch) - constant_epochs + 1)`` (``e`` zero-based), i.e.
    epochs ``0 .. constant_epochs - 1`` use ``initial``, epoch ``constant_epochs`` the first
    multiplied value, and the value is frozen from ``stop_epoch`` on.

    Paper (Section 5.2): lr ``2e-6`` for 200 epochs then ``x0.984`` per epoch is
    ``EpochExponential(2e-6, 0.984, spe, constant_epochs=200)``; the annealed temperature
    ``tau_e = 0.01 / 1.02^e`` fixed after a 300-epoch burn-in is
    ``EpochExponential(0.01, 1 / 1.02, spe, constant_epochs=1, stop_epoch=300)``; and
    ``F_e = F_0 1.02^e`` alongside it is ``EpochExponential(1.5e5, 1.02, spe, 1, 300)``.

    Args:
      initial: value in the first epochs (> 0).
      factor: multiplier per epoch (> 0; < 1 decays, > 1 grows).
      steps_per_epoch: optimizer steps (batches) per epoch.
      constant_epochs: epochs at ``initial`` before the first multiplication (>= 0).
      stop_epoch: epoch from which the value is frozen (``None``: never).

    Example:
      >>> lr = EpochExponential(2e-6, 0.984, steps_per_epoch=196, constant_epochs=200)
      >>> round(float(lr(201 * 196)), 12)  # epoch 201: two decays, 2e-6 * 0.984 ** 2
      1.936512e-06
    """

    def __init__(
        self,
        initial: float,
        factor: float,
        steps_per_epoch: int,
        constant_epochs: int = 1,
        stop_epoch: int | None = None,
    ):
        self.initial = _positive("initial", initial)
        self.factor = _positive("factor", factor)
        self.steps_per_epoch = _positive("steps_per_epoch", steps_per_epoch, integer=True)
        self.constant_epochs = _positive("constant_epochs", constant_epochs, integer=True, allow_zero=True)
        if stop_epoch is not None:
            stop_epoch = _positive("stop_epoch", stop_epoch, integer=True, allow_zero=True)
        self.stop_epoch = stop_epoch

    def exponent(self, epoch: Any) -> tf.Tensor:
        """``k(e)``: the number of multiplications applied at epoch ``e`` (a tensor)."""
        e = tf.cast(epoch, tf.float64)
        if self.stop_epoch is not None:
            e = tf.minimum(e, float(self.stop_epoch))
        return tf.maximum(tf.constant(0.0, tf.float64), e - float(self.constant_epochs) + 1.0)

    def __call__(self, step: Any) -> tf.Tensor:
        epoch = tf.math.floordiv(tf.cast(step, tf.int64), self.steps_per_epoch)
        value = self.initial * tf.pow(tf.constant(self.factor, tf.float64), self.exponent(epoch))
        return tf.cast(value, tf.float32)

    def get_config(self) -> dict:
        return {
            "initial": self.initial,
            "factor": self.factor,
            "steps_per_epoch": self.steps_per_epoch,
            "constant_epochs": self.constant_epochs,
            "stop_epoch": self.stop_epoch,
        }


@keras.saving.register_keras_serializable(package="tf_vrre")
class Scaled(Schedule):
    """``multiplier * base(step)``: a per-chain multiple of another schedule or number.

    Paper: the hot chain uses ``eta_2 = 1.5 eta_1`` and ``tau_2 = 5 tau_1``:
    ``learning_rates=[lr, Scaled(lr, 1.5)]``, ``temperatures=[tau, Scaled(tau, 5.0)]``.

    Args:
      base: a ``LearningRateSchedule`` or a number.
      multiplier: a number > 0.
    """

    def __init__(self, base: ScalarOrSchedule | dict, multiplier: float):
        if isinstance(base, dict):
            base = keras.saving.deserialize_keras_object(base)
        if not is_schedule(base):
            base = _positive("base", base)
        self.base = base
        self.multiplier = _positive("multiplier", multiplier)

    def __call__(self, step: Any) -> tf.Tensor:
        value = self.base(step) if is_schedule(self.base) else self.base
        return tf.cast(value, tf.float32) * self.multiplier

    def get_config(self) -> dict:
        base = keras.saving.serialize_keras_object(self.base) if is_schedule(self.base) else self.base
        return {"base": base, "multiplier": self.multiplier}


@keras.saving.register_keras_serializable(package="tf_vrre")
class CyclicalCosine(Schedule):
    """Cyclical cosine learning rate (cSG-MCMC, Zhang et al. 2020).

    With cycle length ``L = ceil(total_steps / cycles)`` and position
    ``r(k) = (k mod L) / L`` in ``[0, 1)``::

        eta_k = initial / 2 * (cos(pi * r(k)) + 1)

    Each cycle starts at ``initial`` and decays to ~0.  The cycle is split into an
    *exploration* phase (``r <= threshold``) and a *sampling* phase (``r > threshold``: the
    paper collects when the position exceeds 0.7); :meth:`in_sampling_phase` tells them apart and
    :class:`tf_vrre.callbacks.SampleCollector` accepts ``cycle=`` this schedule.

    Args:
      initial: ``eta_0 > 0``.
      total_steps: steps of the whole run (> 0).
      cycles: number of cycles ``C >= 1``.
      threshold: start of the sampling phase in ``(0, 1)`` (default 0.7).

    Example:
      >>> lr = CyclicalCosine(1e-5, total_steps=1000 * 196, cycles=5)
      >>> lr.in_sampling_phase(39200 - 1)   # end of the first cycle
      True
    """

    def __init__(self, initial: float, total_steps: int, cycles: int, threshold: float = 0.7):
        self.initial = _positive("initial", initial)
        self.total_steps = _positive("total_steps", total_steps, integer=True)
        self.cycles = _positive("cycles", cycles, integer=True)
        if self.cycles > self.total_steps:
            raise ValueError(f"cycles must be <= total_steps ({self.total_steps}), got {cycles}")
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not 0 < threshold < 1:
            raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
        self.threshold: float = float(threshold)

    @property
    def cycle_length(self) -> int:
        """``L = ceil(total_steps / cycles)``, steps per cycle."""
        return int(math.ceil(self.total_steps / self.cycles))

    def position(self, step: int) -> float:
        """``r(k)`` in ``[0, 1)``: the position of ``step`` inside its cycle (Python float)."""
        return (int(step) % self.cycle_length) / self.cycle_length

    def cycle(self, step: int) -> int:
        """Zero-based cycle index of ``step``."""
        return int(step) // self.cycle_length

    def in_sampling_phase(self, step: int) -> bool:
        """True when ``position(step) > threshold`` (collect samples here)."""
        return self.position(step) > self.threshold

    def __call__(self, step: Any) -> tf.Tensor:
        length = tf.constant(self.cycle_length, tf.int64)
        r = tf.cast(tf.math.floormod(tf.cast(step, tf.int64), length), tf.float64) / tf.cast(length, tf.float64)
        value = 0.5 * self.initial * (tf.cos(np.pi * r) + 1.0)
        return tf.cast(value, tf.float32)

    def get_config(self) -> dict:
        return {
            "initial": self.initial,
            "total_steps": self.total_steps,
            "cycles": self.cycles,
            "threshold": self.threshold,
        }


def paper_cifar_schedules(
    steps_per_epoch: int,
    learning_rate: float = 2e-6,
    constant_epochs: int = 200,
    decay: float = 0.984,
    hot_lr_multiplier: float = 1.5,
    temperature: float = 0.01,
    annealing: float = 1.02,
    burn_in_epochs: int = 300,
    hot_temperature_multiplier: float = 5.0,
    correction: float = 1.5e5,
) -> dict[str, Any]:
    """The paper's CIFAR (VR-)reSGHMC schedules for two chains (Section 5.2).

    Returns ``{"learning_rates": [eta_1, 1.5 eta_1], "temperatures": [tau_1, 5 tau_1],
    "correction": F}`` with ``eta_1`` :class:`EpochExponential` (constant for
    ``constant_epochs``, then ``x decay`` per epoch), ``tau_1(e) = temperature /
    annealing^min(e, burn_in_epochs)`` and ``F(e) = correction * annealing^min(e, burn_in_epochs)``.

    Example:
      >>> s = paper_cifar_schedules(steps_per_epoch=196)
      >>> eta, hot_eta = s["learning_rates"]
      >>> [round(float(v(0)), 12) for v in (eta, hot_eta, s["correction"])]
      [2e-06, 3e-06, 150000.0]
      >>> sampler = tf_vrre.ReplicaExchangeSampler(net, data_size=50000, num_chains=2,
      ...     learning_rates=s["learning_rates"], temperatures=s["temperatures"],
      ...     swap=tf_vrre.CorrectedSwap(correction=s["correction"]))
    """
    lr = EpochExponential(learning_rate, decay, steps_per_epoch, constant_epochs=constant_epochs)
    tau = EpochExponential(temperature, 1.0 / annealing, steps_per_epoch, constant_epochs=1, stop_epoch=burn_in_epochs)
    f = EpochExponential(correction, annealing, steps_per_epoch, constant_epochs=1, stop_epoch=burn_in_epochs)
    return {
        "learning_rates": [lr, Scaled(lr, hot_lr_multiplier)],
        "temperatures": [tau, Scaled(tau, hot_temperature_multiplier)],
        "correction": f,
    }
