"""The :class:`SwapLogger` callback: every swap attempt and every sigma^2 / snapshot refresh to
CSV (and TensorBoard), per-epoch swap counts into ``logs``.

The callbacks of :mod:`tf_vrre.callbacks` write Python floats into ``logs`` (CSVLogger /
TensorBoard pick them up), have a ``get_config`` listing exactly their constructor arguments,
and survive ``keras.callbacks.BackupAndRestore`` resumes: records after the restored step are
dropped and replayed, never duplicated.
"""

from __future__ import annotations

import csv
import math
import os

import keras
import tensorflow as tf

from tf_vrre.runs import atomic, fault_points, ownership
from tf_vrre.runs.samples import read_log, write_json
from tf_vrre.sampler.replica_exchange import require_sampler
from tf_vrre.sgmcmc import swap_record

IDENTITY = "identity.json"
SWAP_LOG_FORMAT = "tf_vrre.swaps/1"


def _complete(row, header):
    try:
        return all(row.get(k) not in (None, "") for k in header) and int(row[header[0]]) >= 0
    except ValueError:
        return False


def _truncate_csv(path, header, keep):
    """Rewrites ``path`` keeping the complete rows for which ``keep(row)`` holds (atomic); a
    row cut short by a kill is dropped."""
    if not os.path.exists(path):
        return
    found, lines = read_log(path)  # damaged: RunFileError naming the file and line
    rows = [r for r in (dict(zip(found, v)) for _, v in lines) if _complete(r, header)] if found else []

    def write(f):
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        for row in rows:
            if keep(row):
                w.writerow({k: row.get(k, "") for k in header})

    atomic.write(path, write, text=True)


class _CsvAppender:
    def __init__(self, path, header):
        self.path, self.header = path, header
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        self.file = atomic.open_append(path)
        self.writer = csv.writer(self.file)
        if new:
            self.writer.writerow(header)

    def write(self, row):
        self.writer.writerow(row)

    def close(self):
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()


@keras.saving.register_keras_serializable(package="tf_vrre")
class SwapLogger(keras.callbacks.Callback):
    """Logs every swap attempt and every sigma^2 / control-variate refresh.

    The sampler records each step's swap diagnostics in an in-graph ring buffer
    (``sampler.state.swap.log``, no host copy inside the step); this callback drains it after
    every ``train_function`` call, so it works with any ``steps_per_execution`` up to
    ``tf_vrre.sgmcmc.swap_record.CAPACITY``.  Files in ``log_dir``:

    - ``swaps.csv``: one row per attempted pair: ``step, epoch, pair, temperature_lo,
      temperature_hi, energy_lo, energy_hi, log_ratio, accept_prob, accepted, sigma2,
      correction``.  ``log_ratio = delta (U_lo - U_hi - delta sigma2 / F)`` and
      ``accept_prob = min(1, exp(log_ratio))``.
    - ``refresh.csv``: one row at every step where ``sigma2`` was updated (end of a window)
      or the control-variate snapshot was refreshed: ``step, epoch, sigma2_updated,
      snapshot_refreshed, sigma2_<p>..., c_<h>..., correction``.
    - ``epochs.csv``: per epoch: ``epoch, steps, attempts, swaps, accept_rate`` (this epoch
      only) and the totals.
    - ``offsets.csv``: per epoch, pair and offset ``k = step mod m`` (steps since the snapshot
      refresh): ``attempts, swaps, accept_rate, mean_sigma2_used`` (the penalty's sigma2 as
      used, see ``CorrectedSwap(penalty=...)``).

    ``logs`` get ``epoch_swaps``, ``epoch_attempts`` and ``epoch_accept_rate`` (floats); the
    sampler already puts the running ``swaps`` / ``accept_rate`` there for the progress bar.
    With ``tensorboard_dir`` the same records go to TensorBoard scalars (``swap/*``,
    ``sigma2/*``, ``c/*``, ``epoch/*``) at the global step.

    On a resume (:class:`tf_vrre.Checkpoint`, or any restore of the sampler's state), rows at
    or after the restored step are removed before training continues (they are replayed), so
    files never hold duplicates.  ``identity.json`` records the run identity
    (:mod:`tf_vrre.runs.ownership`): logs of another run in ``log_dir`` are refused
    (:class:`tf_vrre.RunMismatchError`) unless ``overwrite=True``, which deletes them; one
    writer per directory.

    Args:
      log_dir: directory of the CSV files (created).
      tensorboard_dir: optional TensorBoard log directory.
      overwrite: replace swap logs of another run found in ``log_dir``.

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0, callbacks=[SwapLogger("runs/swaps")])
      >>> import csv
      >>> rows = list(csv.DictReader(open("runs/swaps/swaps.csv")))
      >>> len(rows) == int(sampler.state.swap.attempt_count.numpy().sum())   # one row per attempted pair
      True
    """

    def __init__(
        self, log_dir: str | os.PathLike, tensorboard_dir: str | os.PathLike | None = None, overwrite: bool = False
    ) -> None:
        super().__init__()
        if not isinstance(log_dir, (str, os.PathLike)) or not str(log_dir):
            raise TypeError(f"log_dir must be a path, got {log_dir!r}")
        if not isinstance(overwrite, bool):
            raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
        self.log_dir = str(log_dir)
        self.tensorboard_dir = None if tensorboard_dir is None else str(tensorboard_dir)
        self.overwrite = overwrite
        self._files = None
        self._writer = None

    # --- set-up -------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        s = require_sampler(self.model, "SwapLogger")
        if s.swap_rule is None:
            raise ValueError("SwapLogger: the sampler has no swap rule (num_chains >= 2 and swap != None)")
        spe = int(getattr(s, "steps_per_execution", 1) or 1)
        if spe > swap_record.CAPACITY:
            raise ValueError(f"SwapLogger: steps_per_execution must be <= {swap_record.CAPACITY}, got {spe}")
        self._columns = swap_record.swap_log_columns(s.num_chains)
        self._col = {c: i for i, c in enumerate(self._columns)}
        K, P = s.num_chains, s.num_chains - 1
        self._headers = {
            "swaps": [
                "step",
                "epoch",
                "pair",
                "temperature_lo",
                "temperature_hi",
                "energy_lo",
                "energy_hi",
                "log_ratio",
                "accept_prob",
                "accepted",
                "sigma2",
                "correction",
            ],
            "refresh": (
                ["step", "epoch", "sigma2_updated", "snapshot_refreshed"]
                + [f"sigma2_{p}" for p in range(P)]
                + [f"c_{h}" for h in range(K)]
                + ["correction"]
            ),
            "epochs": ["epoch", "steps", "attempts", "swaps", "accept_rate", "total_attempts", "total_swaps"],
            "offsets": ["epoch", "pair", "offset", "attempts", "swaps", "accept_rate", "mean_sigma2_used"],
        }
        self._offsets = s.state.swap.offsets
        self._run = ownership.run_identity(s)
        self._abandon()
        ownership.claim(self.log_dir, self, self.params, "SwapLogger")
        try:
            self._adopt()
            # a killed run's half-written files (its own temporaries only): tf_vrre.runs.atomic
            atomic.remove_temporaries(self.log_dir, {IDENTITY} | {f"{name}.csv" for name in self._headers})
        except Exception:
            ownership.release(self)
            raise
        self._started = False

    def _adopt(self):
        """Refuses (or with ``overwrite`` deletes) swap logs of another run; records this run."""
        path = os.path.join(self.log_dir, IDENTITY)
        stored = ownership.stored_run(path, "SwapLogger")
        diff = ownership.difference(stored, self._run)
        logs = [f"{name}.csv" for name in self._headers if os.path.exists(os.path.join(self.log_dir, f"{name}.csv"))]
        if diff is not None and logs:
            if not self.overwrite:
                raise ownership.refuse(self.log_dir, f"swap logs ({', '.join(logs)})", diff)
            for name in logs:
                os.remove(os.path.join(self.log_dir, name))
        if diff is not None:
            write_json(path, {"format": SWAP_LOG_FORMAT, "run": self._run})

    def _start(self, epoch):
        """First epoch of this fit (after every callback's on_train_begin, i.e. after a
        BackupAndRestore restore): drop replayed rows, open the files."""
        s = self.model
        step0 = int(s.state.step.numpy())
        for name, header in self._headers.items():
            path = os.path.join(self.log_dir, f"{name}.csv")
            if name in ("epochs", "offsets"):
                _truncate_csv(path, header, lambda r: int(r["epoch"]) < epoch)
            else:
                _truncate_csv(path, header, lambda r: int(r["step"]) < step0)
        self._files = {
            name: _CsvAppender(os.path.join(self.log_dir, f"{name}.csv"), header)
            for name, header in self._headers.items()
        }
        if self.tensorboard_dir is not None and self._writer is None:
            self._writer = tf.summary.create_file_writer(self.tensorboard_dir)
        self._next_step = step0
        self._started = True

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._start(epoch)
        self._epoch = epoch
        self._epoch_start = (self._next_step, self._totals())
        self._by_offset = {}  # (pair, offset) -> [attempts, swaps, sum of sigma2 used]

    def _totals(self):
        s = self.model
        return int(s.state.swap.attempt_count.numpy().sum()), int(s.state.swap.swap_count.numpy().sum())

    # --- draining -------------------------------------------------------------------------
    def _drain(self):
        s = self.model
        end = int(s.state.step.numpy())
        if end <= self._next_step:
            return
        if end - self._next_step > swap_record.CAPACITY:
            raise RuntimeError(
                f"SwapLogger: {end - self._next_step} steps since the last read exceed the "
                f"record buffer ({swap_record.CAPACITY}); records would be lost"
            )
        buf = keras.ops.convert_to_numpy(s.state.swap.log)
        temps = keras.ops.convert_to_numpy(s.state.ladder.temperature).astype(float)
        c = self._col
        P, K = s.num_chains - 1, s.num_chains
        tb = []
        for step in range(self._next_step, end):
            row = buf[step % swap_record.CAPACITY]
            if int(row[c["step"]]) != step:
                raise RuntimeError(f"SwapLogger: record of step {step} missing from the buffer")
            corr = float(row[c["correction"]])
            for p in range(P):
                if row[c[f"proposed_{p}"]] > 0.5:
                    lr = float(row[c[f"log_ratio_{p}"]])
                    acc = int(row[c[f"accepted_{p}"]] > 0.5)
                    tally = self._by_offset.setdefault((p, step % self._offsets), [0, 0, 0.0])
                    tally[0] += 1
                    tally[1] += acc
                    tally[2] += float(row[c[f"sigma2_{p}"]])
                    self._files["swaps"].write(
                        [
                            step,
                            self._epoch,
                            p,
                            temps[p],
                            temps[p + 1],
                            float(row[c[f"energy_lo_{p}"]]),
                            float(row[c[f"energy_hi_{p}"]]),
                            lr,
                            math.exp(min(lr, 0.0)),
                            acc,
                            float(row[c[f"sigma2_{p}"]]),
                            corr,
                        ]
                    )
                    tb += [(f"swap/log_ratio_{p}", lr, step), (f"swap/accepted_{p}", acc, step)]
            upd, ref = row[c["sigma2_updated"]] > 0.5, row[c["refreshed"]] > 0.5
            if upd or ref:
                sig = [float(row[c[f"sigma2_new_{p}"]]) for p in range(P)]
                cs = [float(row[c[f"c_{h}"]]) for h in range(K)]
                self._files["refresh"].write([step, self._epoch, int(upd), int(ref), *sig, *cs, corr])
                tb += [(f"sigma2/{p}", v, step) for p, v in enumerate(sig)]
                if s.variance_reduction is not None:
                    tb += [(f"c/{h}", v, step) for h, v in enumerate(cs)]
        self._next_step = end
        for f in self._files.values():  # on disk before any later checkpoint
            f.file.flush()
        fault_points.point("swaps.drained")
        if self._writer is not None and tb:
            with self._writer.as_default():
                for name, value, step in tb:  # float64: a log ratio beyond float32's range is logged, not refused
                    tf.summary.scalar(name, tf.constant(value, tf.float64), step=step)

    def on_train_batch_end(self, batch, logs=None):
        self._drain()

    def on_epoch_end(self, epoch, logs=None):
        self._drain()
        step0, (att0, sw0) = self._epoch_start
        att, sw = self._totals()
        d_att, d_sw = att - att0, sw - sw0
        rate = d_sw / d_att if d_att else 0.0
        self._files["epochs"].write([epoch, self._next_step - step0, d_att, d_sw, rate, att, sw])
        for (p, k), (n_att, n_sw, s2) in sorted(self._by_offset.items()):
            self._files["offsets"].write([epoch, p, k, n_att, n_sw, n_sw / n_att, s2 / n_att])
        for f in self._files.values():
            f.file.flush()
        if logs is not None:
            logs.update({"epoch_swaps": float(d_sw), "epoch_attempts": float(d_att), "epoch_accept_rate": float(rate)})
        if self._writer is not None:
            with self._writer.as_default():
                tf.summary.scalar("epoch/swaps", d_sw, step=self._next_step)
                tf.summary.scalar("epoch/accept_rate", rate, step=self._next_step)
            self._writer.flush()

    def _abandon(self):
        """Closes files a fit left open when it was interrupted (before the next fit reconciles them)."""
        if self._files:
            for f in self._files.values():
                f.file.close()
        self._files = None

    def on_train_end(self, logs=None):
        if self._files:
            for f in self._files.values():
                f.close()
        self._files = None
        self._started = False
        if self._writer is not None:
            self._writer.flush()
        ownership.release(self)

    def get_config(self) -> dict:
        return {"log_dir": self.log_dir, "tensorboard_dir": self.tensorboard_dir, "overwrite": self.overwrite}

    @classmethod
    def from_config(cls, config: dict) -> SwapLogger:
        return cls(**config)
