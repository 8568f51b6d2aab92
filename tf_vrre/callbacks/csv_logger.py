"""A per-epoch CSV log that survives resumes and never replaces another run's log.

Keras' ``CSVLogger`` either truncates the file at every ``fit`` (``append=False``: a resumed
run loses the epochs before the checkpoint, or a new run silently replaces another run's log)
or appends (``append=True``: the epochs replayed after a resume are logged twice).
:class:`CSVLogger` keeps the rows of the epochs before the one the fit starts at, drops the
later ones (the replay writes them again, identically) and refuses the log of another run.
"""

from __future__ import annotations

import csv
import math
import os

import keras

import tf_vrre._user_warning as _user_warning
from tf_vrre.runs import atomic, fault_points, ownership
from tf_vrre.runs.samples import RunFileError, write_json
from tf_vrre.sampler.replica_exchange import require_sampler


def _read_rows(path, separator):
    """``(header, complete rows as lists)`` of a log file; only newline-terminated lines count (a
    line cut by a kill is dropped, a cut header drops the file), rows need every column."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except UnicodeDecodeError as err:
        raise RunFileError(f"{path}: not UTF-8 text (byte {err.start}); not a tf_vrre log: move it away") from None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines.pop()
    parsed = list(csv.reader(lines, delimiter=separator))
    if not parsed or not parsed[0] or parsed[0][0] != "epoch":
        return None, []
    header = parsed[0]
    return header, [r for r in parsed[1:] if len(r) == len(header) and r[0].isdigit()]


def _value(v):
    if isinstance(v, str):
        return v
    try:
        v = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "nan" if math.isnan(v) else repr(v)


@keras.saving.register_keras_serializable(package="tf_vrre")
class CSVLogger(keras.callbacks.Callback):
    """One CSV row per epoch of every value in ``logs``, consistent across kills and resumes.

    Columns are ``epoch`` and the sorted keys of the first logged epoch (as in Keras'
    ``CSVLogger``; callbacks that add keys later must put them into ``logs`` from the first
    epoch, as :class:`tf_vrre.SampleCollector` does with NaN).  At the first epoch of a fit the
    file keeps the rows of earlier epochs and drops the rest (after a resume at epoch ``e``,
    rows ``>= e`` are replayed); a row cut by a kill is dropped.  ``FILENAME.identity.json``
    records the run identity (:mod:`tf_vrre.runs.ownership`): the log of another run is refused
    (:class:`tf_vrre.RunMismatchError`) unless ``overwrite=True``.  Values are written with full
    precision (``repr``), NaN as ``nan``.

    Args:
      filename: the CSV file (its directory is created).
      separator: column separator.
      overwrite: replace the log of another run found at ``filename``.

    Example:
      >>> sampler = toy_sampler()  # the examples' toy set-up (see the API reference)
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0, callbacks=[
      ...     tf_vrre.SampleCollector("runs/a/samples", every=4), CSVLogger("runs/a/log.csv"),
      ...     tf_vrre.Checkpoint("runs/a/checkpoint")])
      >>> [row.split(",")[0] for row in open("runs/a/log.csv")]
      ['epoch', '0', '1']
    """

    def __init__(self, filename: str | os.PathLike, separator: str = ",", overwrite: bool = False) -> None:
        super().__init__()
        if not isinstance(filename, (str, os.PathLike)) or not str(filename):
            raise TypeError(f"filename must be a path, got {filename!r}")
        if not isinstance(separator, str) or len(separator) != 1:
            raise ValueError(f"separator must be one character, got {separator!r}")
        if not isinstance(overwrite, bool):
            raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
        self.filename = str(filename)
        self.separator = separator
        self.overwrite = overwrite
        self._file = None

    @property
    def _identity_path(self):
        return self.filename + ".identity.json"

    def on_train_begin(self, logs=None):
        run = ownership.run_identity(require_sampler(self.model, "CSVLogger"))
        self._abandon()
        ownership.claim(self.filename, self, self.params, "CSVLogger", lock=self.filename + ".lock")
        try:
            self._adopt(run)
            atomic.remove_temporaries(  # a killed run's half-written log or identity (its own temporaries only)
                os.path.dirname(os.path.abspath(self.filename)),
                {os.path.basename(self.filename), os.path.basename(self._identity_path)},
            )
        except Exception:
            ownership.release(self)
            raise
        self._started = False

    def _adopt(self, run):
        """Refuses (or with ``overwrite`` deletes) the log of another run; records this run."""
        stored = ownership.stored_run(self._identity_path, "CSVLogger")
        diff = ownership.difference(stored, run)
        if diff is not None and os.path.exists(self.filename) and os.path.getsize(self.filename):
            if not self.overwrite:
                raise ownership.refuse(self.filename, "the epoch log", diff)
            os.remove(self.filename)
        if diff is not None:
            write_json(self._identity_path, {"format": "tf_vrre.log/1", "run": run})

    def _start(self, epoch):
        """First epoch of this fit: keep the rows of epochs before ``epoch``, reopen for appending."""
        self._columns = None
        if os.path.exists(self.filename):
            header, rows = _read_rows(self.filename, self.separator)
            keep = [r for r in rows if int(r[0]) < epoch]
            self._columns = header if header else None
            atomic.write(
                self.filename,
                lambda f: csv.writer(f, delimiter=self.separator).writerows([header] + keep if header else []),
                text=True,
            )
        self._file = atomic.open_append(self.filename)
        self._writer = csv.writer(self._file, delimiter=self.separator)
        self._started = True

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._start(epoch)

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        if self._columns is None:
            self._columns = ["epoch"] + sorted(logs)
            self._writer.writerow(self._columns)
        extra = sorted(set(logs) - set(self._columns))
        if extra and not getattr(self, "_warned", False):
            _user_warning.warn(  # at the user's fit call, not inside Keras' callback list
                f"CSVLogger: {extra} appeared after the columns of {self.filename} were fixed; not "
                "logged (put every key into logs from the first epoch)"
            )
            self._warned = True
        self._writer.writerow([epoch] + [_value(logs.get(k, math.nan)) for k in self._columns[1:]])
        self._file.flush()
        fault_points.point("csv.row")

    def _abandon(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def on_train_end(self, logs=None):
        self._abandon()
        ownership.release(self)

    def get_config(self) -> dict:
        return {"filename": self.filename, "separator": self.separator, "overwrite": self.overwrite}

    @classmethod
    def from_config(cls, config: dict) -> CSVLogger:
        return cls(**config)
