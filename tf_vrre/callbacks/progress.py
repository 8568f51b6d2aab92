"""Callbacks of the training command: an epoch CSV log that survives resumes, a progress bar.

- :class:`EpochCSVLogger` - one row per epoch with *every* key seen so far (a metric that
  appears later, e.g. ``bma_accuracy`` after burn-in, is added as a column and is empty
  before); the file is rewritten atomically each epoch, and rows at or after the epoch a
  ``BackupAndRestore`` resume starts from are dropped (they are replayed), so no duplicates.
- :class:`EpochProgress` - a text progress bar per epoch on stderr and a one-line summary
  (loss, accuracy, swaps, sigma^2, samples, running BMA accuracy, seconds).
- :class:`EpochTimer` - ``epoch_seconds`` (wall time of the epoch) into ``logs``.
- :class:`HostStepCounter` - a host (CPU) copy of the sampler's step counter for input pipelines.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import sys
import time

import keras
import tensorflow as tf

from tf_vrre.runs import atomic
from tf_vrre.runs.samples import RunFileError, read_log

__all__ = ["EpochCSVLogger", "EpochProgress", "EpochTimer", "HostStepCounter"]


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


@keras.saving.register_keras_serializable(package="tf_vrre")
class EpochCSVLogger(keras.callbacks.Callback):
    """Per-epoch CSV log with a growing set of columns, exact under resume.

    Row of epoch ``e``: ``epoch`` then every ``logs`` key seen up to ``e`` (sorted); missing
    values are empty.  Put it after the callbacks that add to ``logs`` (``SwapLogger``,
    ``SampleCollector``) and before ``BackupAndRestore``.

    Args:
      filename: the CSV file (its directory must exist).

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0,
      ...                 callbacks=[tf_vrre.SwapLogger("run/swaps"), EpochCSVLogger("run/log.csv")])
      >>> [row.split(",")[0] for row in open("run/log.csv")]
      ['epoch', '0', '1']
    """

    def __init__(self, filename: str | os.PathLike) -> None:
        super().__init__()
        if not isinstance(filename, (str, os.PathLike)) or not str(filename):
            raise TypeError(f"filename must be a path, got {filename!r}")
        self.filename = str(filename)
        self._rows = None

    def on_epoch_begin(self, epoch, logs=None):
        if self._rows is None:  # first epoch of this fit: after BackupAndRestore restored the epoch
            self._rows = []
            if os.path.exists(self.filename):
                header, rows = read_log(self.filename)  # damaged: RunFileError naming the file and line
                for number, values in rows:
                    row = dict(zip(header, values))
                    try:
                        if int(row["epoch"]) < epoch:
                            self._rows.append(row)
                    except (KeyError, ValueError):
                        raise RunFileError(f"{self.filename}, line {number}: no epoch number; move the file away "
                                           "(its rows are then lost) and run again") from None

    def on_epoch_end(self, epoch, logs=None):
        row = {"epoch": str(epoch)}
        row.update({k: repr(_float(v)) for k, v in (logs or {}).items()})
        self._rows.append(row)
        keys = []
        for r in self._rows:
            keys += [k for k in r if k != "epoch" and k not in keys]
        header = ["epoch"] + sorted(keys)
        def write(f):
            writer = csv.DictWriter(f, fieldnames=header, restval="")
            writer.writeheader()
            writer.writerows(self._rows)

        atomic.write(self.filename, write, text=True)

    def on_train_end(self, logs=None):
        self._rows = None

    def get_config(self):
        return {"filename": self.filename}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="tf_vrre")
class EpochProgress(keras.callbacks.Callback):
    """A progress bar per epoch (``keras.utils.Progbar``, on stderr by default) and a summary
    line at each epoch end.

    Args:
      epochs: total epochs of the run (for the ``epoch e/E`` label).
      steps_per_epoch: batches per epoch.
      stream: ``"stderr"`` or ``"stdout"``.

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0, callbacks=[EpochProgress(2, 4)])
    """

    SUMMARY = (("loss", "loss {:.3f}"), ("accuracy", "acc {:.3f}"), ("swaps", "swaps {:.0f}"),
               ("swap_attempts", "/{:.0f}"), ("sigma2_0", "sigma2 {:.3g}"), ("samples", "samples {:.0f}"),
               ("bma_accuracy", "BMA acc {:.3f}"))

    def __init__(self, epochs: int, steps_per_epoch: int, stream: str = "stderr") -> None:
        super().__init__()
        for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if stream not in ("stderr", "stdout"):
            raise ValueError(f"stream must be 'stderr' or 'stdout', got {stream!r}")
        self.epochs, self.steps_per_epoch, self.stream = epochs, steps_per_epoch, stream

    def _out(self):
        return sys.stderr if self.stream == "stderr" else sys.stdout

    def _write(self, text):
        self._out().write(text)
        self._out().flush()

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        self._write(f"epoch {epoch + 1}/{self.epochs}\n")
        with contextlib.redirect_stdout(self._out()):  # Progbar writes to sys.stdout
            self._progbar = keras.utils.Progbar(self.steps_per_epoch)
        self._done = 0

    def on_train_batch_end(self, batch, logs=None):
        self._done = batch + 1
        with contextlib.redirect_stdout(self._out()):
            self._progbar.update(self._done, finalize=False)

    def on_epoch_end(self, epoch, logs=None):
        with contextlib.redirect_stdout(self._out()):  # the bar's final state and a line break
            self._progbar.update(self._done, finalize=True)
        logs = logs or {}
        parts = []
        for key, fmt in self.SUMMARY:
            if key in logs and math.isfinite(_float(logs[key])):
                text = fmt.format(_float(logs[key]))
                if key == "swap_attempts" and parts:
                    parts[-1] += text
                else:
                    parts.append(text)
        self._write(f"  epoch {epoch + 1}/{self.epochs}: {', '.join(parts)}  "
                    f"({time.perf_counter() - self._start:.1f}s)\n")

    def get_config(self):
        return {"epochs": self.epochs, "steps_per_epoch": self.steps_per_epoch, "stream": self.stream}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="tf_vrre")
class EpochTimer(keras.callbacks.Callback):
    """Puts ``epoch_seconds``, the wall time from epoch begin to epoch end, into ``logs``.

    Put it first among the callbacks so the time includes the others' per-batch work.

    Example:
      >>> sampler = toy_sampler()
      >>> history = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0,
      ...                       callbacks=[EpochTimer(), EpochCSVLogger("log.csv")])
      >>> len(history.history["epoch_seconds"]), "epoch_seconds" in open("log.csv").readline()
      (2, True)
    """

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["epoch_seconds"] = time.perf_counter() - self._start

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="tf_vrre")
class HostStepCounter(keras.callbacks.Callback):
    """A CPU copy of ``sampler.state.step`` for input pipelines, set at every epoch begin.

    ``TrainingData.dataset(..., counter)`` reads its counter when an epoch's iterator starts
    (Keras creates it after ``on_epoch_begin``, so after a ``BackupAndRestore`` restore).  The
    pipeline runs on the host CPU; under ``TPUStrategy`` (or on a GPU) the sampler's own counter
    lives on the accelerator, which ``tf.data`` cannot read, so the pipeline reads ``counter``,
    an int64 variable placed on the CPU, which this callback sets to ``step_counter``.

    Example:
      >>> from tf_vrre import Preprocessing, TrainingData
      >>> images = np.random.default_rng(0).integers(0, 256, size=(32, 4, 4, 3), dtype=np.uint8)
      >>> train = TrainingData(images, np.arange(32) % 2, Preprocessing.from_images(images), 2)
      >>> def net():
      ...     return keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
      >>> sampler = tf_vrre.ReplicaExchangeSampler(net, data_size=32, num_chains=2,
      ...     temperatures=[0.01, 0.05], learning_rates=1e-3,
      ...     variance_reduction=tf_vrre.ControlVariates(period=4), seed=0)
      >>> sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
      >>> sampler.set_reference_data(train.reference)
      >>> mirror = HostStepCounter()
      >>> ds = train.dataset(16, seed=0, counter=mirror.counter)
      >>> _ = sampler.fit(ds, epochs=3, verbose=0, callbacks=[mirror])
      >>> int(mirror.counter.numpy())   # set at the last epoch's start: 2 epochs x 2 steps
      4
    """

    def __init__(self):
        super().__init__()
        with tf.device("/cpu:0"):
            self.counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="host_step_counter")

    def on_epoch_begin(self, epoch, logs=None):
        self.counter.assign(int(keras.ops.convert_to_numpy(self.model.state.step)))

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
