"""Posterior samples on disk: the :class:`SampleCollector` callback (reading: :mod:`tf_vrre.runs.samples`).

Layout of a sample directory::

    manifest.json            # {"format", "run": identity, "entries": [...], "events": [...], ...}
    model.json               # the cold model's architecture (``to_json``), when serializable
    sample-000000256.npz     # cold-chain weights w0000, w0001, ... (+ "predictive" with BMA)
    .lock                    # held while a collector writes here

Every file is written to a fresh ``.<name>.<random>.tmp`` and renamed (:mod:`tf_vrre.runs.atomic`), the sample before the
manifest that points at it; each manifest entry stores the file's size and SHA-256, so a
missing or truncated file is detected on load (``ValueError`` naming the file).  Memory is
bounded: a sample is written as soon as it is taken and never kept in RAM.  The collector's
parts: which samples are kept (:mod:`tf_vrre.callbacks.sample_reservoir`), the running BMA
metrics (:mod:`tf_vrre.callbacks.running_bma`) and the run identity that keeps another run's
collector from deleting these samples (:mod:`tf_vrre.callbacks.sample_identity`).
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import keras
import numpy as np

import tf_vrre._user_warning as _user_warning
import tf_vrre.callbacks.running_bma as running_bma
import tf_vrre.callbacks.sample_identity as sample_identity
import tf_vrre.callbacks.sample_reservoir as sample_reservoir
from tf_vrre.callbacks.sample_reservoir import KEEP, exploding, reservoir_slot
from tf_vrre.runs import atomic, fault_points, ownership
from tf_vrre.runs.samples import (
    FORMAT,
    MANIFEST,
    MODEL_JSON,
    SAMPLE_FILE,
    SampleSet,
    atomic_write,
    check_entry,
    load_samples,
    sha256,
    write_json,
)
from tf_vrre.sampler.invariants import DivergenceError
from tf_vrre.sampler.replica_exchange import require_sampler
from tf_vrre.sgmcmc.schedules import CyclicalCosine

__all__ = ["KEEP", "SampleCollector", "SampleSet", "exploding", "load_samples", "reservoir_slot"]


def _writes(name: str) -> bool:
    """Whether a collector writes the file ``name`` in its directory (manifest, model, samples)."""
    return name in (MANIFEST, MODEL_JSON) or SAMPLE_FILE.fullmatch(name) is not None


@keras.saving.register_keras_serializable(package="tf_vrre")
class SampleCollector(keras.callbacks.Callback):
    """Saves the cold chain's weights every ``every`` steps after burn-in, one file per sample.

    Sample ``beta^(1)_{iT}`` (paper Algorithm 1, thinning ``T``) is taken after the step that
    brings the step counter to ``s``, when ``s % every == 0``, ``s > burn_in_steps`` and, with
    ``cycle``, the step ``s - 1`` lies in the cycle's sampling phase
    (``cycle.in_sampling_phase``: position > 0.7 by default).  With ``steps_per_execution``
    callbacks see the weights only at the end of each executed block, and Keras shortens an
    epoch's last block when ``steps_per_execution`` does not divide the epoch's steps; a
    block that contains such an ``s`` without ending on it is sampled at its end, and the
    entry's ``step`` is that end (the step whose weights were saved).  No sample is skipped;
    only its step moves, by less than ``steps_per_execution``, to a step fixed in advance (so
    the samples remain draws of the chain).  The manifest entry records
    ``step, epoch, temperature, lr`` (cold slot) and ``energy``: the mini-batch energy
    ``U_B`` of the sampled state's chain on step ``s - 1``'s batch, before its update.

    ``max_samples`` bounds the disk use: ``keep="last"`` keeps the newest, ``keep="reservoir"``
    a uniform random subset of all samples taken (reservoir sampling; the choices are a
    function of ``seed`` and the sample count, so resumes repeat them).  With a
    :class:`tf_vrre.Checkpoint`, an evicted sample's file is deleted once a checkpoint after
    its eviction is committed (so a resume can restore it): up to one checkpoint interval's
    evictions more than ``max_samples`` files may exist meanwhile.

    With ``validation_data=(x, y)`` (integer or one-hot labels) every sample's predictive
    ``softmax(logits)`` on ``x`` is stored with it, and the Bayesian model average of the kept
    samples is scored: ``bma_accuracy``, ``bma_nll`` and ``bma_samples`` go into ``logs`` at
    every epoch end from the first one (NaN, NaN, 0 before the first sample, so
    ``CSVLogger``, which fixes its columns at the first epoch end, has them) and into the
    manifest entry.  For a regression (``output="values"``, real targets ``y``) the outputs are
    stored as they are and scored by ``bma_rmse``.  The stored predictive is what
    ``tf-vrre diagnose`` judges mixing on (its R-hat and ESS at every input of ``x`` across runs:
    :mod:`tf_vrre.diagnostics.function_space`), so a few hundred held-out inputs serve best.  The
    entry also records ``excess_temperature``, the epoch's mean so far of the heat gradient noise
    adds to the cold slot (``ReplicaExchangeSampler(gradient_noise_every=...)``; ``null`` before the
    epoch's first measurement or without one).

    Output directory: the manifest records the run identity (:mod:`tf_vrre.callbacks.sample_identity`:
    the sampler's constructor arguments, the cold model's weight shapes, this collector's
    settings).  A directory holding samples of another run is refused
    (:class:`tf_vrre.RunMismatchError` naming the difference) unless ``overwrite=True``, which
    deletes them.  Samples of the same run are kept up to the step the sampler starts from
    (a resume with :class:`tf_vrre.Checkpoint`, or the same command again from scratch) and the
    later ones are taken again by the replay, identically.  One writer per directory: a second
    collector (this fit or another process) gets a ``ValueError``.

    Args:
      directory: where samples, ``manifest.json`` and ``model.json`` (the architecture,
        written when collection starts if the cold model serializes) go (created).
      every: thinning ``T`` in steps (paper: 256); a multiple of ``steps_per_execution``
        (see above for epochs that ``steps_per_execution`` does not divide).
      burn_in_steps: no sample at or before this step.
      cycle: optional :class:`tf_vrre.CyclicalCosine`; collect only in the sampling
        phase of each cycle.
      max_samples: keep at most this many on disk (``None``: all).
      keep: ``"last"`` or ``"reservoir"`` (with ``max_samples``).
      validation_data: optional ``(x, y)`` arrays for running BMA metrics.
      output: ``"logits"`` (softmax applied), ``"probabilities"`` (model output used as is) or
        ``"values"`` (a regression's outputs, used as they are).
      batch_size: prediction batch size for ``validation_data``.
      seed: seed of the reservoir choices.
      overwrite: replace samples of another run found in ``directory``.

    Example:
      >>> sampler = toy_sampler()
      >>> collector = SampleCollector("runs/toy/samples", every=4, burn_in_steps=4,
      ...                             validation_data=(x[:32], y[:32]))
      >>> history = sampler.fit(sampler.make_dataset(16), epochs=3, verbose=0, callbacks=[collector])
      >>> history.history["bma_samples"]
      [0.0, 1.0, 2.0]
      >>> load_samples("runs/toy/samples").predict(net(), x[:32]).shape
      (32, 2)
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        every: int = 256,
        burn_in_steps: int = 0,
        cycle: CyclicalCosine | None = None,
        max_samples: int | None = None,
        keep: str = "last",
        validation_data: Any = None,
        output: str = "logits",
        batch_size: int = 256,
        seed: int = 0,
        overwrite: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(directory, (str, os.PathLike)) or not str(directory):
            raise TypeError(f"directory must be a path, got {directory!r}")
        for name, value, lo in (
            ("every", every, 1),
            ("burn_in_steps", burn_in_steps, 0),
            ("batch_size", batch_size, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
        if isinstance(cycle, dict):
            cycle = keras.saving.deserialize_keras_object(cycle)
        if cycle is not None and not isinstance(cycle, CyclicalCosine):
            raise TypeError(f"cycle must be a tf_vrre.CyclicalCosine or None, got {cycle!r}")
        if max_samples is not None and (
            isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Integral) or max_samples < 1
        ):
            raise ValueError(f"max_samples must be an integer >= 1 or None, got {max_samples!r}")
        if keep not in KEEP:
            raise ValueError(f"keep must be one of {KEEP}, got {keep!r}")
        if output not in running_bma.OUTPUTS:
            raise ValueError(f"output must be 'logits', 'probabilities' or 'values', got {output!r}")
        if not isinstance(overwrite, bool):
            raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
        self.directory = str(directory)
        self.every = int(every)
        self.burn_in_steps = int(burn_in_steps)
        self.cycle = cycle
        self.max_samples = None if max_samples is None else int(max_samples)
        self.keep = keep
        self.validation_data = running_bma.check_validation_data(validation_data)
        self.output = output
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.overwrite = overwrite
        self._state: dict[str, Any] | None = None  # the manifest being written (from the first epoch on)
        self._bma = None if self.validation_data is None else running_bma.RunningBMA(self.validation_data[1], output)
        self._started = False

    # --- eligibility ----------------------------------------------------------------------
    def is_collection_step(self, step: int) -> bool:
        """True when the state after ``step`` updates (counter ``step``) is collected."""
        step = int(step)
        if step <= self.burn_in_steps or step % self.every:
            return False
        return self.cycle is None or self.cycle.in_sampling_phase(step - 1)

    # --- start / resume --------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        s = require_sampler(self.model, "SampleCollector")
        spe = int(getattr(s, "steps_per_execution", 1) or 1)
        if self.every % spe:
            raise ValueError(
                f"every ({self.every}) must be a multiple of steps_per_execution ({spe}): "
                "callbacks only see the weights every steps_per_execution steps"
            )
        settings = {
            k: v
            for k, v in self.get_config().items()
            if k not in ("directory", "validation_data", "batch_size", "overwrite")
        }
        self._run = sample_identity.collector_identity(s, settings, self.validation_data)
        ownership.claim(self.directory, self, self.params, "SampleCollector")
        s.listeners.add(
            self._listener_key(), on_divergence=self.flag_divergence, on_checkpoint_committed=self.checkpoint_committed
        )
        try:
            self._existing = sample_identity.adopt(self.directory, self._run, self.overwrite)
        except Exception:
            ownership.release(self)
            raise
        self._started = False

    def _start(self) -> None:
        """First epoch of this fit, after every on_train_begin (so after a restore): keep the
        samples up to the restored step, drop the later ones (the replay takes them again)."""
        step0 = int(self.model.state.step.numpy())
        manifest = self._existing or {"format": FORMAT, "entries": [], "events": []}
        evicted = manifest.get("evicted", [])
        back = [
            e
            for e in evicted
            if e["evicted_at"] > step0
            and e["step"] <= step0
            and os.path.exists(os.path.join(self.directory, e["file"]))
        ]
        entries = [e for e in manifest["entries"] if e["step"] <= step0]
        entries += [{k: v for k, v in e.items() if k != "evicted_at"} for e in back]
        for entry in entries:
            check_entry(self.directory, entry)
        manifest.update(
            {
                "format": FORMAT,
                "run": self._run,
                "entries": sorted(entries, key=lambda e: e["step"]),
                "events": [t for t in manifest["events"] if t <= step0],
                "evicted": [],
                "config": {k: v for k, v in self.get_config().items() if k != "validation_data"},
            }
        )
        write_json(os.path.join(self.directory, MANIFEST), manifest)
        self._write_architecture()
        listed = {e["file"] for e in manifest["entries"]}
        for name in os.listdir(self.directory):  # replayed or evicted samples
            if SAMPLE_FILE.fullmatch(name) and name not in listed:
                os.remove(os.path.join(self.directory, name))
        atomic.remove_temporaries(self.directory, _writes)  # half-written files: its own temporaries only
        self._state = manifest
        if self._bma is not None:
            self._bma.recompute(self.directory, manifest["entries"])
        self._started = True

    def _write_architecture(self) -> None:
        """Writes ``model.json`` (``cold_model.to_json()``, checked to load back) atomically, so
        the weights-only sample files can be rebuilt into models (``tf_vrre.export_ensemble``);
        a model that does not serialize (subclassed, unregistered) gets a warning instead."""
        path = os.path.join(self.directory, MODEL_JSON)
        try:
            text = self.model.cold_model.to_json()
            keras.models.model_from_json(text)
        except Exception as err:  # noqa: BLE001  (any failure means: not rebuildable from JSON)
            _user_warning.warn(
                f"SampleCollector: the cold model does not serialize to JSON ({type(err).__name__}: "
                f"{err}); {path} not written. Export its samples with "
                "tf_vrre.export_ensemble(..., model=<built model or model_fn>)."
            )
            return
        atomic_write(path, lambda f: f.write(text.encode()))

    def due_in_block(self, start: int, end: int) -> list[int]:
        """Collection steps (:meth:`is_collection_step`) in the executed block ``(start, end]``.

        Callbacks run once per ``train_function`` call, so with ``steps_per_execution > 1`` only
        the state at the block's end exists; Keras also shortens the last block of an epoch
        whose steps ``steps_per_execution`` does not divide, so block ends drift off the
        multiples of ``every``.  A block holding a due step is sampled at its end."""
        first = (int(start) // self.every + 1) * self.every
        return [t for t in range(first, int(end) + 1, self.every) if self.is_collection_step(t)]

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if not self._started:
            self._start()
            self._block_start = int(self.model.state.step.numpy())
        self._epoch = epoch

    # --- collection ----------------------------------------------------------------------
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        step = int(self.model.state.step.numpy())
        due, self._block_start = self.due_in_block(self._block_start, step), step
        # A due step inside the block: the weights at its end are the sample, labelled with
        # the step they belong to (a block is at most every steps long: at most one per block).
        st = self._state
        if due and st is not None and (not st["events"] or st["events"][-1] < step):
            self._collect(st, step)

    def _collect(self, st: dict[str, Any], step: int) -> None:
        """Takes the sample of ``step`` into the manifest ``st``: decides where it goes, then writes
        file and manifest."""
        st["events"].append(step)
        kept, evicted, slot = sample_reservoir.choose(st, self.keep, self.max_samples, self.seed)
        if not kept:  # only the event is recorded
            write_json(os.path.join(self.directory, MANIFEST), st)
            return
        s = self.model
        name = f"sample-{step:09d}.npz"
        path = os.path.join(self.directory, name)
        arrays = {f"w{i:04d}": w for i, w in enumerate(s.cold_model.get_weights())}
        bad = next((k for k, w in arrays.items() if w.dtype.kind == "f" and not np.isfinite(w).all()), None)
        if bad is not None:  # never write a sample that cannot be used; the earlier ones stay loadable
            raise FloatingPointError(
                f"SampleCollector: the cold chain's weights after step {step} are not finite "
                f"(NaN or inf in {bad}); sample not written, {len(st['entries'])} earlier "
                f"samples in {self.directory} stay loadable"
            )
        ladder = s.state.ladder
        entry = {
            "file": name,
            "step": step,
            "epoch": int(self._epoch),
            "temperature": float(ladder.temperature.numpy()[0]),
            "lr": float(ladder.learning_rate.numpy()[0]),
            "energy": float(s.state.batch_energy.numpy()[0]),
            "excess_temperature": _excess_temperature(s),
        }
        if slot is not None:
            entry["slot"] = slot
        if self.validation_data is not None:
            # The BMA sums the stored (float32) values in step order, so a resume that rebuilds
            # it from the files gets bit-identical metrics.
            x = self.validation_data[0]
            arrays["predictive"] = running_bma.predictive(s.cold_model, x, self.output, self.batch_size).astype(
                np.float32
            )
        atomic_write(path, lambda f: np.savez(f, **arrays))
        fault_points.point("sample.file")
        entry["bytes"] = os.path.getsize(path)
        entry["sha256"] = sha256(path)
        if evicted is not None:
            st["entries"].remove(evicted)
            st["evicted"].append({**evicted, "evicted_at": step})
        st["entries"].append(entry)
        if self._bma is not None:
            if evicted is None:
                self._bma.add(arrays["predictive"].astype(np.float64))
            else:
                self._bma.recompute(self.directory, st["entries"])
            entry.update(self._bma.metrics())
        gone = sample_reservoir.purge_evicted(st, self.model.listeners.committed_step)
        write_json(os.path.join(self.directory, MANIFEST), st)  # the sample exists before this
        fault_points.point("sample.manifest")
        for old in gone:  # the manifest no longer points at them
            os.remove(os.path.join(self.directory, old["file"]))

    def checkpoint_committed(self) -> None:
        """Called by :class:`tf_vrre.Checkpoint` after a commit: deletes the evicted files no
        resume can need any more."""
        if not self._started or self._state is None or not self._state["evicted"]:
            return
        gone = sample_reservoir.purge_evicted(self._state, self.model.listeners.committed_step)
        if gone:
            write_json(os.path.join(self.directory, MANIFEST), self._state)
            for old in gone:
                os.remove(os.path.join(self.directory, old["file"]))

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["samples"] = float(len(self._state["entries"])) if self._state else 0.0
            if self._bma is not None:
                logs.update(self._bma.metrics())

    def flag_divergence(self, error: DivergenceError) -> None:
        """Marks ``"exploding": true`` on the entries :func:`exploding` picks and records the
        divergence (step, chain slot, message) in the manifest; the samples stay loadable."""
        if not self._started or self._state is None:
            return
        st = self._state
        for entry, bad in zip(st["entries"], exploding([e["energy"] for e in st["entries"]])):
            if bad:
                entry["exploding"] = True
        st["divergence"] = {
            "step": int(error.step),
            "chain": int(error.chain),
            "kind": error.kind,
            "message": str(error.message),
        }
        write_json(os.path.join(self.directory, MANIFEST), st)

    def on_train_end(self, logs: dict | None = None) -> None:
        if not self._started and getattr(self, "_existing", None) is not None:
            self._start()  # no epoch ran (a finished run resumed): settle the restored manifest
        ownership.release(self)

    def _listener_key(self) -> tuple[str, str]:
        return ("SampleCollector", os.path.realpath(self.directory))

    def samples(self) -> SampleSet:
        """The :class:`SampleSet` collected so far."""
        return load_samples(self.directory)

    def get_config(self) -> dict:
        vd = None
        if self.validation_data is not None:
            vd = [self.validation_data[0].tolist(), self.validation_data[1].tolist()]
        cycle = keras.saving.serialize_keras_object(self.cycle) if self.cycle is not None else None
        return {
            "directory": self.directory,
            "every": self.every,
            "burn_in_steps": self.burn_in_steps,
            "cycle": cycle,
            "max_samples": self.max_samples,
            "keep": self.keep,
            "validation_data": vd,
            "output": self.output,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "overwrite": self.overwrite,
        }

    @classmethod
    def from_config(cls, config: dict) -> SampleCollector:
        return cls(**config)


def _excess_temperature(sampler) -> float | None:
    """The cold slot's excess temperature, the epoch's mean of its measurements so far (``None``
    before the first one, or when the sampler does not measure)."""
    metrics = getattr(sampler, "_excess_temperature", None)
    if not metrics:
        return None
    value = float(keras.ops.convert_to_numpy(metrics[0].result()))
    return value if np.isfinite(value) else None
