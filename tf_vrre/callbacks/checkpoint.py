"""Exact resume after a kill at any instant: :class:`Checkpoint`, an atomic epoch checkpoint.

Keras' ``BackupAndRestore`` writes the weights, then a JSON file with the epoch, each in
place: a kill between the two resumes at the wrong epoch, a kill inside the JSON write leaves
an empty file that every rerun fails to parse.  :class:`Checkpoint` keeps the sampler's whole
state (every variable: chains, BatchNorm statistics, velocities, snapshots, ``U_hat``, cached
energies, ``sigma2``, ``c``, counters, ``F``, the step counter) and the epoch in one
``tf.train.Checkpoint`` written through ``tf.train.CheckpointManager``: the data files are
complete before the ``checkpoint`` index file, rewritten atomically, points at them, so a
restore always finds the newest *complete* checkpoint.  The other tf_vrre writers reconcile
with the restored step: :class:`tf_vrre.SampleCollector` and :class:`tf_vrre.SwapLogger` drop
what they wrote after it, :class:`tf_vrre.CSVLogger` the later epochs, and the replay writes
them again identically (the noise is a function of ``(seed, step)``, ``make_dataset``'s order of
the step counter).
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

import tf_vrre._user_warning as _user_warning
from tf_vrre import _keras_compat, errors
from tf_vrre.runs import atomic, fault_points, ownership
from tf_vrre.runs.run_json import RunDirError
from tf_vrre.runs.samples import write_json
from tf_vrre.sampler.replica_exchange import require_sampler

IDENTITY = "identity.json"


class CheckpointError(RunDirError):
    """The checkpoint directory cannot be resumed from (an unreadable index, damaged checkpoints)."""


class EpochsError(errors.TfVrreError, ValueError):
    """``fit(epochs=...)`` ends before the epoch a checkpoint already holds."""


FORMAT = "tf_vrre.checkpoint/1"


def _first_line(err):
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def state_layout(sampler):
    """``[[name, shape, dtype], ...]`` of every sampler variable, in checkpoint order."""
    return [[v.name, list(v.shape), str(v.dtype)] for v in sampler.weights]


@keras.saving.register_keras_serializable(package="tf_vrre")
class Checkpoint(keras.callbacks.Callback):
    """Saves the sampler's state and the epoch atomically at epoch ends; resumes from the newest.

    At the start of ``fit`` the newest complete checkpoint in ``directory`` (if any) is
    restored into the sampler and ``fit`` continues at its epoch (Keras' ``initial_epoch``
    mechanism, as ``BackupAndRestore``); a rerun of a finished command restores the final state
    and trains no further epoch.  A checkpoint beyond ``fit``'s ``epochs`` (e.g. ``fit(epochs=3)``
    on a 5-epoch checkpoint) is a ``ValueError`` naming both numbers, before anything is restored.  A checkpoint is written when epoch ``e`` is over and
    ``(e + 1) % every_epochs == 0``, and when training ends, *after* every callback's
    ``on_epoch_end`` (it is taken when the next epoch begins), so its place in the callback list
    does not matter and every record of the epoch is on disk before it.  Kill the process at any
    instant and run the same command again: the result equals the uninterrupted run's, bit for
    bit (tested by killing at many instants, including inside the checkpoint write).

    ``directory/identity.json`` records the run identity (:mod:`tf_vrre.runs.ownership`, including
    every state variable's shape): checkpoints of another run (another config, ``num_chains``
    or architecture) are refused, naming the difference, unless ``overwrite=True`` (which
    deletes them).

    Args:
      directory: checkpoint directory (created): ``ckpt-<epoch>.index / .data-*``,
        ``checkpoint``, ``identity.json``.
      every_epochs: checkpoint every this many epochs (and at the end of training).
      max_to_keep: complete checkpoints kept (the newest ones; at least 1).
      overwrite: replace checkpoints of another run found in ``directory``.

    Example:
      >>> sampler = toy_sampler()
      >>> ckpt = Checkpoint("runs/toy/checkpoint")
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0, callbacks=[
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=4), tf_vrre.CSVLogger("runs/toy/log.csv"), ckpt])
      >>> int(sampler.state.step.numpy())
      8
      >>> # killed? run the same script again: it continues from the last epoch checkpoint
    """

    def __init__(
        self, directory: str | os.PathLike, every_epochs: int = 1, max_to_keep: int = 2, overwrite: bool = False
    ) -> None:
        super().__init__()
        if not isinstance(directory, (str, os.PathLike)) or not str(directory):
            raise TypeError(f"directory must be a path, got {directory!r}")
        for name, value in (("every_epochs", every_epochs), ("max_to_keep", max_to_keep)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not isinstance(overwrite, bool):
            raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
        self.directory = str(directory)
        self._check_directory()
        self.every_epochs = int(every_epochs)
        self.max_to_keep = int(max_to_keep)
        self.overwrite = overwrite
        self._manager = None

    # --- set-up and restore ----------------------------------------------------------------
    def _check_directory(self):
        """``CheckpointError`` if ``directory`` names something other than a directory."""
        if os.path.lexists(self.directory) and not os.path.isdir(self.directory):
            raise CheckpointError(
                f"Checkpoint: directory {self.directory!r} is a file, not a directory; pass the "
                "directory the checkpoints go to (it is created)"
            )

    def on_train_begin(self, logs=None):
        s = require_sampler(self.model, "Checkpoint")
        run = ownership.run_identity(s, state=state_layout(s))
        self._check_directory()
        ownership.claim(self.directory, self, self.params, "Checkpoint")
        try:
            self._adopt(run)
            atomic.remove_temporaries(self.directory, {IDENTITY})  # a killed run's half-written identity.json
            self._epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
            state = {f"{i:04d}_{v.name}": v.value for i, v in enumerate(s.weights)}
            self._ckpt = tf.train.Checkpoint(epoch=self._epoch, state=state)
            try:  # TensorFlow reads the index here: "Invalid checkpoint state" for one without a latest checkpoint
                self._manager = tf.train.CheckpointManager(self._ckpt, self.directory, max_to_keep=self.max_to_keep)
            except (ValueError, tf.errors.OpError) as err:
                raise CheckpointError(
                    self._index_problem(f"is not a readable checkpoint index ({_first_line(err)})")
                ) from None
            self.restored_epoch = self._restore()
        except Exception:
            ownership.release(self)
            raise
        s.listeners.committed_step = int(s.state.step.numpy())
        self._pending = self._completed = None
        self._last_saved = self.restored_epoch

    def _adopt(self, run):
        """Refuses (or with ``overwrite`` deletes) checkpoints of another run; records this run."""
        path = os.path.join(self.directory, IDENTITY)
        stored = ownership.stored_run(path, "Checkpoint")
        diff = ownership.difference(stored, run)
        found = sorted(n for n in os.listdir(self.directory) if n.startswith("ckpt-") or n == "checkpoint")
        if diff is not None and found:
            if not self.overwrite:
                raise ownership.refuse(self.directory, "checkpoints", diff)
            for name in found:
                os.remove(os.path.join(self.directory, name))
        if diff is not None:
            write_json(path, {"format": FORMAT, "run": run})

    def _check_epochs(self, stored):
        """Refuses a checkpoint beyond ``fit(epochs=...)``, before the sampler's state is touched."""
        epochs = (self.params or {}).get("epochs")
        if epochs is not None and stored > epochs:
            raise EpochsError(
                f"Checkpoint: {self.directory} holds the state after epoch {stored}, beyond "
                f"fit(epochs={epochs}): fit would train nothing and leave the sampler at epoch {stored}. "
                f"Pass epochs >= {stored} to continue that run, or use another directory"
            )

    def _found(self):
        """The complete checkpoints on disk (``ckpt-<epoch>`` with its ``.index``), oldest first."""
        names = [
            n[: -len(".index")] for n in os.listdir(self.directory) if n.startswith("ckpt-") and n.endswith(".index")
        ]
        return sorted(names, key=lambda n: int(n[5:]) if n[5:].isdigit() else -1)

    def _index_problem(self, what):
        """The message for a checkpoint index (``DIR/checkpoint``) that cannot be trusted: what, the
        files found, and the two ways on (resume from the newest file found, or restart)."""
        index, found = os.path.join(self.directory, "checkpoint"), self._found()
        resume = (
            f'recreate the index to resume from the newest one, python -c "import tensorflow as tf; '
            f'tf.compat.v1.train.update_checkpoint_state({self.directory!r}, {found[-1]!r})", or '
            if found
            else ""
        )
        return (
            f"Checkpoint: {index} {what} (checkpoint files: {', '.join(found) or 'none'}); restarting from "
            f"epoch 0 would redo the run and replace its samples and logs: {resume}remove {self.directory} to "
            "restart the run from epoch 0"
        )

    def _restore(self):
        """Restores the newest readable checkpoint; returns its epoch (0 without one).

        A damaged or missing newest checkpoint falls back to an older one the index names (the
        other writers reconcile with the restored step; a warning names the file).  An unreadable
        index, an index naming no readable checkpoint while others are on disk, a missing index
        beside checkpoint files (deleted by hand: a silent restart from epoch 0 would redo the
        run), or no readable checkpoint at all, is a :class:`CheckpointError` naming the file and
        the remedy.
        """
        index = os.path.join(self.directory, "checkpoint")
        if self._manager.latest_checkpoint is None:
            if os.path.exists(index):
                raise CheckpointError(self._index_problem("is not a readable checkpoint index"))
            if self._found():
                raise CheckpointError(self._index_problem("is missing"))
            return 0
        latest = self._manager.latest_checkpoint
        candidates = [latest] + [p for p in reversed(self._manager.checkpoints) if p != latest]  # newest first
        failures = []
        for path in candidates:
            if not tf.io.gfile.exists(path + ".index"):
                failures.append(f"{path}: its files are missing")
                continue
            try:
                self._check_epochs(int(tf.train.load_checkpoint(path).get_tensor("epoch/.ATTRIBUTES/VARIABLE_VALUE")))
                self._ckpt.restore(path).assert_consumed()
                self.model.chains_restored()  # chain_per_replica: the devices take the restored host copy
                break
            except EpochsError:
                raise
            except Exception as err:  # noqa: BLE001  (TensorFlow's many errors for damaged files)
                failures.append(f"{path}: {type(err).__name__}: {_first_line(err)[:160]}")
        else:
            tried = {os.path.basename(p) for p in candidates}
            if [name for name in self._found() if name not in tried]:  # complete files the index does not name
                raise CheckpointError(self._index_problem(f"names no readable checkpoint ({'; '.join(failures)})"))
            raise CheckpointError(
                f"Checkpoint: no readable checkpoint in {self.directory} ({'; '.join(failures)}); "
                f"remove {self.directory} to restart the run from epoch 0 (its samples and logs "
                "are then written again)"
            )
        if failures:
            _user_warning.warn(f"Checkpoint: damaged checkpoint skipped ({'; '.join(failures)}); resuming from {path}")
        epoch = int(self._epoch.numpy())
        if epoch > 0:
            _keras_compat.set_initial_epoch(self.model, epoch)  # as keras.callbacks.BackupAndRestore does
        return epoch

    # --- saving -----------------------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        _keras_compat.set_initial_epoch(self.model, None)  # read by fit already; a later fit must not inherit it
        if self._pending is not None:
            self._save(self._pending)

    def on_epoch_end(self, epoch, logs=None):
        self._completed = epoch + 1
        if (epoch + 1) % self.every_epochs == 0:
            self._pending = epoch + 1

    def on_train_end(self, logs=None):
        _keras_compat.set_initial_epoch(self.model, None)
        if self._completed is not None and self._completed != self._last_saved:
            self._save(self._completed)
        ownership.release(self)

    def _save(self, epoch):
        """Writes the checkpoint of the state at the start of ``epoch`` and commits it."""
        self._epoch.assign(epoch)
        self.model.sync_chains()  # placement="chain_per_replica": the host copy <- the devices, in rung order
        options = tf.train.CheckpointOptions(
            experimental_write_callbacks=[lambda path: fault_points.point("checkpoint.data")]
        )  # runs after the data files, before the index file is updated
        self._manager.save(checkpoint_number=epoch, options=options)
        step = int(self.model.state.step.numpy())
        self.model.listeners.committed_step = step
        fault_points.point("checkpoint.committed")
        self.model.listeners.checkpoint_committed(step)  # evicted samples no resume can need are deleted
        self._pending, self._last_saved = None, epoch

    def get_config(self) -> dict:
        return {
            "directory": self.directory,
            "every_epochs": self.every_epochs,
            "max_to_keep": self.max_to_keep,
            "overwrite": self.overwrite,
        }

    @classmethod
    def from_config(cls, config: dict) -> Checkpoint:
        return cls(**config)
