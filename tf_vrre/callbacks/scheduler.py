"""The :class:`HyperparameterScheduler` callback: per-epoch learning rates, temperatures and ``F``
from numbers, Python callables of the epoch, or step schedules."""

import numbers

import keras
import numpy as np

from tf_vrre.sampler import hyperparameters as _hyper
from tf_vrre.sampler.replica_exchange import require_sampler


def _check_value(value, name):
    if value is None or callable(value):
        return value
    if isinstance(value, (list, tuple)):
        return [_check_value(v, name) for v in value]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise TypeError(f"{name} must be a number, a LearningRateSchedule, a callable epoch -> value "
                        f"or a per-chain list of those, got {value!r}")
    return float(value)


def _evaluate(value, epoch, step):
    if isinstance(value, (list, tuple)):
        return [_evaluate(v, epoch, step) for v in value]
    if _hyper.is_schedule(value):
        return float(keras.ops.convert_to_numpy(value(step)))
    if callable(value):
        out = value(epoch)
        if isinstance(out, (list, tuple, np.ndarray)):
            return [float(v) for v in out]
        return float(out)
    return float(value)


def _serialize(value):
    if value is None or isinstance(value, float):
        return value
    if isinstance(value, list):
        return [_serialize(v) for v in value]
    return keras.saving.serialize_keras_object(value)


def _deserialize(value):
    if isinstance(value, list):
        return [_deserialize(v) for v in value]
    if isinstance(value, dict):
        return keras.saving.deserialize_keras_object(value)
    return value


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
    error.  After a ``BackupAndRestore`` resume the epoch index is restored, so the values are
    too.

    Args:
      learning_rates: per-chain ``eta > 0``.
      temperatures: per-chain ``tau``, strictly increasing.
      correction: ``F > 0`` (needs a sampler with swaps and a numeric ``CorrectedSwap``).
      verbose: print the values at each epoch start.

    Example:
      >>> x = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
      >>> y = (x[:, 0] > 0).astype("int64")
      >>> def net():
      ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
      >>> sampler = tf_vrre.ReplicaExchangeSampler(net, data_size=64, num_chains=2,
      ...     temperatures=[0.01, 0.05], learning_rates=1e-3,
      ...     variance_reduction=tf_vrre.ControlVariates(period=4), seed=0)
      >>> sampler.set_reference_data((x, y))
      >>> sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
      >>> sched = HyperparameterScheduler(
      ...     temperatures=lambda e: [0.01 / 1.02 ** min(e, 300), 0.05 / 1.02 ** min(e, 300)],
      ...     correction=lambda e: 1.5e5 * 1.02 ** min(e, 300))
      >>> history = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0, callbacks=[sched])
      >>> [round(t, 6) for t in history.history["temperature_0"]]
      [0.01, 0.009804]
    """

    def __init__(self, learning_rates=None, temperatures=None, correction=None, verbose=0):
        super().__init__()
        if learning_rates is None and temperatures is None and correction is None:
            raise ValueError("HyperparameterScheduler: give at least one of learning_rates, "
                             "temperatures, correction")
        if isinstance(correction, (list, tuple)):
            raise TypeError("correction: one F for the swap rule, not a list")
        self.learning_rates = _check_value(learning_rates, "learning_rates")
        self.temperatures = _check_value(temperatures, "temperatures")
        self.correction = _check_value(correction, "correction")
        self.verbose = int(verbose)

    def on_train_begin(self, logs=None):
        s = require_sampler(self.model, "HyperparameterScheduler")
        for arg, values in (("learning_rates", s._learning_rate_values),
                            ("temperatures", s._temperature_values)):
            if getattr(self, arg) is not None and any(_hyper.is_schedule(v) for v in values):
                raise ValueError(f"HyperparameterScheduler: {arg} is already a schedule of the sampler; "
                                 "set it in one place only")
        if self.correction is not None:
            if s.swap_rule is None:
                raise ValueError("HyperparameterScheduler: correction needs a sampler with swaps")
            if s.swap_rule.scheduled_correction:
                raise ValueError("HyperparameterScheduler: the swap rule's correction is already a "
                                 "schedule; set it in one place only")
            if s.swap_rule.adaptive_correction:
                raise ValueError("HyperparameterScheduler: the swap rule's correction is 'auto' (adapted by a "
                                 "LadderTuner); set it in one place only")

    def values(self, epoch, step=None):
        """The values for ``epoch`` as a dict of floats / lists (``step`` for step schedules)."""
        step = 0 if step is None else step
        out = {}
        for name in ("learning_rates", "temperatures", "correction"):
            value = getattr(self, name)
            if value is not None:
                out[name] = _evaluate(value, epoch, step)
        return out

    def on_epoch_begin(self, epoch, logs=None):
        s = self.model
        vals = self.values(epoch, int(s.step_counter.numpy()))
        if "learning_rates" in vals:
            s.set_learning_rates(vals["learning_rates"])
        if "temperatures" in vals:
            s.set_temperatures(vals["temperatures"])
        if "correction" in vals:
            s.set_correction(vals["correction"])
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: HyperparameterScheduler set {vals}")

    def get_config(self):
        return {"learning_rates": _serialize(self.learning_rates),
                "temperatures": _serialize(self.temperatures),
                "correction": _serialize(self.correction), "verbose": self.verbose}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for k in ("learning_rates", "temperatures", "correction"):
            config[k] = _deserialize(config.get(k))
        return cls(**config)


# ----------------------------------------------------------------------------------------
