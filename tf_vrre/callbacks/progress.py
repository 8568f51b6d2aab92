"""Callbacks of the training command: an epoch CSV log that survives resumes, a progress bar.

- :class:`EpochCSVLogger` - one row per epoch with *every* key seen so far (a metric that
  appears later, e.g. ``bma_accuracy`` after burn-in, is added as a column and is empty
  before); the file is rewritten atomically each epoch, and rows at or after the epoch a
  ``BackupAndRestore`` resume starts from are dropped (they are replayed), so no duplicates.
- :class:`EpochProgress` - progress per epoch on stderr (a bar on a terminal, plain lines in a
  file: :class:`StepProgress`) and a one-line summary (loss, accuracy, swaps, sigma^2, samples,
  running BMA accuracy, seconds).
- :class:`StepProgress` - progress of a task counted in steps: ``keras.utils.Progbar`` on a
  terminal (or a notebook), a plain line every ``interval`` seconds elsewhere (a log file gets
  no escape codes and no carriage returns).
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

__all__ = ["EpochCSVLogger", "EpochProgress", "EpochTimer", "HostStepCounter", "StepProgress"]


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
                        raise RunFileError(
                            f"{self.filename}, line {number}: no epoch number; move the file away "
                            "(its rows are then lost) and run again"
                        ) from None

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


def interactive(stream) -> bool:
    """Whether ``stream`` shows a live progress bar: a terminal, or a Jupyter / IPython kernel
    (whose front end draws carriage returns and colours).  A file or a pipe does not."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty()) or "ipykernel" in sys.modules
    except (OSError, ValueError):  # a closed stream
        return False


class StepProgress:
    """Progress of a task of ``total`` steps on ``stream``.

    On a terminal (:func:`interactive`) a ``keras.utils.Progbar``, as ``fit(verbose=1)`` draws
    it.  Elsewhere (stderr sent to a file, a CI log) plain lines: one when the task starts to
    report, then at most one every ``interval`` seconds, and one at the end, e.g.
    ``  1500/3000 steps (50%), 12 s, about 12 s left`` (the time left from the steps after the
    first, which often includes compiling): no escape codes, no carriage returns.

    Args:
      total: the number of steps (>= 1).
      stream: a text stream (default ``sys.stderr`` at each write).
      interval: seconds between plain lines (>= 0).
      bar: ``True`` / ``False`` to force the bar / the plain lines (default: :func:`interactive`).
      unit: what a step is called (``"step"``, ``"sample"``).

    Example:
      >>> import io
      >>> out = io.StringIO()
      >>> p = StepProgress(4, stream=out, interval=0.0)
      >>> for done in range(1, 5):
      ...     p.update(done)
      >>> print(out.getvalue().splitlines()[-1].split(",")[0])
        4/4 steps (100%)
    """

    def __init__(
        self, total: int, stream=None, interval: float = 30.0, bar: bool | None = None, unit: str = "step"
    ) -> None:
        if isinstance(total, bool) or not isinstance(total, int) or total < 1:
            raise ValueError(f"total must be an integer >= 1, got {total!r}")
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
            raise ValueError(f"interval must be a number of seconds >= 0, got {interval!r}")
        self.total, self.interval, self._stream = total, float(interval), stream
        self.bar = interactive(self.stream) if bar is None else bool(bar)
        self.unit = unit
        self._start = time.perf_counter()
        self._last: float | None = None  # time of the last plain line
        self._first: tuple[float, int] | None = None  # (time, steps) after the first update
        self._done = 0
        self._progbar = None
        if self.bar:
            with contextlib.redirect_stdout(self.stream):  # Progbar writes to sys.stdout
                self._progbar = keras.utils.Progbar(total, unit_name=unit)

    @property
    def stream(self):
        """Where the progress goes."""
        return self._stream if self._stream is not None else sys.stderr

    def update(self, done: int, finalize: bool | None = None) -> None:
        """``done`` steps of ``total`` are finished (``finalize``: the last update, default
        ``done >= total``)."""
        self._done = done
        final = done >= self.total if finalize is None else finalize
        if self._progbar is not None:
            with contextlib.redirect_stdout(self.stream):
                self._progbar.update(done, finalize=final)
            return
        now = time.perf_counter()
        if self._first is None:  # the first step often includes compiling: rates are timed after it
            self._first = (now, done)
        if not final and self._last is not None and now - self._last < self.interval:
            return
        self._last = now
        line = f"  {done}/{self.total} {self.unit}s ({100 * done // self.total}%), {now - self._start:.0f} s"
        t0, d0 = self._first if self._first is not None else (now, done)
        if not final and d0 < done < self.total:
            line += f", about {(now - t0) / (done - d0) * (self.total - done):.0f} s left"
        self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """The final state (the bar's line break; the last plain line)."""
        self.update(self._done, finalize=True)


@keras.saving.register_keras_serializable(package="tf_vrre")
class EpochProgress(keras.callbacks.Callback):
    """Progress per epoch (:class:`StepProgress` on stderr by default: a bar on a terminal, a
    plain line every ``interval`` seconds elsewhere) and a summary line at each epoch end.

    Args:
      epochs: total epochs of the run (for the ``epoch e/E`` label).
      steps_per_epoch: batches per epoch.
      stream: ``"stderr"`` or ``"stdout"``.
      interval: seconds between plain progress lines when the stream is not a terminal.

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0, callbacks=[EpochProgress(2, 4)])
    """

    SUMMARY = (
        ("loss", "loss {:.3f}"),
        ("accuracy", "acc {:.3f}"),
        ("swaps", "swaps {:.0f}"),
        ("swap_attempts", "/{:.0f}"),
        ("sigma2_0", "sigma2 {:.3g}"),
        ("samples", "samples {:.0f}"),
        ("bma_accuracy", "BMA acc {:.3f}"),
    )

    def __init__(self, epochs: int, steps_per_epoch: int, stream: str = "stderr", interval: float = 30.0) -> None:
        super().__init__()
        for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if stream not in ("stderr", "stdout"):
            raise ValueError(f"stream must be 'stderr' or 'stdout', got {stream!r}")
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
            raise ValueError(f"interval must be a number of seconds >= 0, got {interval!r}")
        self.epochs, self.steps_per_epoch, self.stream = epochs, steps_per_epoch, stream
        self.interval = float(interval)

    def _out(self):
        return sys.stderr if self.stream == "stderr" else sys.stdout

    def _write(self, text):
        self._out().write(text)
        self._out().flush()

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        self._write(f"epoch {epoch + 1}/{self.epochs}\n")
        self._progress = StepProgress(self.steps_per_epoch, self._out(), self.interval)

    def on_train_batch_end(self, batch, logs=None):
        self._progress.update(batch + 1, finalize=False)

    def on_epoch_end(self, epoch, logs=None):
        self._progress.finish()  # the bar's final state and a line break
        logs = logs or {}
        parts = []
        for key, fmt in self.SUMMARY:
            if key in logs and math.isfinite(_float(logs[key])):
                text = fmt.format(_float(logs[key]))
                if key == "swap_attempts" and parts:
                    parts[-1] += text
                else:
                    parts.append(text)
        self._write(
            f"  epoch {epoch + 1}/{self.epochs}: {', '.join(parts)}  ({time.perf_counter() - self._start:.1f}s)\n"
        )

    def get_config(self):
        return {
            "epochs": self.epochs,
            "steps_per_epoch": self.steps_per_epoch,
            "stream": self.stream,
            "interval": self.interval,
        }

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
