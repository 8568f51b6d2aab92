"""Posterior samples on disk: the :class:`SampleCollector` callback and :func:`load_samples`.

Layout of a sample directory::

    manifest.json            # {"format", "entries": [...], "events": [...], ...}
    sample-000000256.npz     # cold-chain weights w000, w001, ... (+ "predictive" with BMA)

Every file is written to ``<name>.tmp`` and renamed (atomic on POSIX), the sample before the
manifest that points at it; each manifest entry stores the file's size and SHA-256, so a
missing or truncated file is detected on load (``ValueError`` naming the file).  Memory is
bounded: a sample is written as soon as it is taken and never kept in RAM.
"""

import hashlib
import json
import numbers
import os

import keras
import numpy as np

from tf_vrre.sampler import require_sampler
from tf_vrre.schedules import CyclicalCosine

MANIFEST = "manifest.json"
FORMAT = "tf_vrre.samples/1"
KEEP = ("last", "reservoir")


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path, write):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _write_json(path, obj):
    _atomic_write(path, lambda f: f.write(json.dumps(obj, indent=1).encode()))


def _check_entry(directory, entry):
    path = os.path.join(directory, entry["file"])
    if not os.path.exists(path):
        raise ValueError(f"sample manifest {os.path.join(directory, MANIFEST)} points at a missing file: {path}")
    size = os.path.getsize(path)
    if size != entry["bytes"] or _sha256(path) != entry["sha256"]:
        raise ValueError(f"sample file {path} is truncated or corrupt ({size} bytes, manifest says "
                         f"{entry['bytes']}; checksum mismatch)")
    return path


def _read_manifest(directory):
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path) as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"no sample manifest at {path}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"sample manifest {path} is corrupt: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or "entries" not in manifest:
        raise ValueError(f"sample manifest {path} is not a {FORMAT} manifest")
    return manifest


class SampleSet:
    """Samples listed in a manifest; weights are read from disk on demand.

    Attributes:
      entries: manifest entries sorted by step (``file, step, epoch, temperature, lr,
        energy, bytes, sha256`` and BMA metrics when collected with validation data).
    """

    def __init__(self, directory, entries):
        self.directory = directory
        self.entries = sorted(entries, key=lambda e: e["step"])

    def __len__(self):
        return len(self.entries)

    @property
    def steps(self):
        return [e["step"] for e in self.entries]

    def weights(self, i):
        """The weight list of sample ``i`` (for ``model.set_weights``)."""
        path = _check_entry(self.directory, self.entries[i])
        with np.load(path) as z:
            names = sorted(k for k in z.files if k.startswith("w"))
            return [z[k] for k in names]

    def __iter__(self):
        for i in range(len(self)):
            yield self.weights(i)

    def predict(self, model, x, batch_size=256, output="logits"):
        """Bayesian model average ``mean_i softmax(model_i(x))`` (``output="probabilities"``:
        no softmax), streaming over the samples (one in memory at a time)."""
        if output not in ("logits", "probabilities"):
            raise ValueError(f"output must be 'logits' or 'probabilities', got {output!r}")
        if not len(self):
            raise ValueError(f"no samples in {self.directory}")
        total = None
        for w in self:
            model.set_weights(w)
            p = np.asarray(model.predict(x, batch_size=batch_size, verbose=0), np.float64)
            p = _softmax(p) if output == "logits" else p
            total = p if total is None else total + p
        return total / len(self)


def load_samples(directory):
    """Reads ``directory/manifest.json`` and checks every listed file (size and SHA-256).

    Raises:
      ValueError: naming the manifest or the missing / truncated sample file.

    Example:
      >>> samples = load_samples("runs/cifar/samples")
      >>> probs = samples.predict(resnet20(), x_test)   # BMA of the cold chain
    """
    manifest = _read_manifest(directory)
    for entry in manifest["entries"]:
        _check_entry(directory, entry)
    return SampleSet(directory, manifest["entries"])


def reservoir_slot(seed, count, capacity):
    """Reservoir sampling (Algorithm R) for the ``count``-th item (1-based): the slot it
    takes, or ``None`` when it is not kept.  After ``n`` items each one is in the reservoir
    with probability ``capacity / n``; the choice is a pure function of ``(seed, count)``."""
    if count <= capacity:
        return count - 1
    j = int(np.random.default_rng([int(seed), int(count)]).integers(0, count))
    return j if j < capacity else None


def _softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


@keras.saving.register_keras_serializable(package="tf_vrre")
class SampleCollector(keras.callbacks.Callback):
    """Saves the cold chain's weights every ``every`` steps after burn-in, one file per sample.

    Sample ``beta^(1)_{iT}`` (paper Algorithm 1, thinning ``T``) is taken after the step that
    brings the step counter to ``s``, when ``s % every == 0``, ``s > burn_in_steps`` and, with
    ``cycle``, the step ``s - 1`` lies in the cycle's sampling phase
    (``cycle.in_sampling_phase``: position > 0.7 by default).  The manifest entry records
    ``step, epoch, temperature, lr`` (cold slot) and ``energy``: the mini-batch energy
    ``U_B`` of the sampled state's chain on step ``s - 1``'s batch, before its update.

    ``max_samples`` bounds the disk use: ``keep="last"`` keeps the newest, ``keep="reservoir"``
    a uniform random subset of all samples taken (reservoir sampling; the choices are a
    function of ``seed`` and the sample count, so resumes repeat them).

    With ``validation_data=(x, y)`` (integer or one-hot labels) every sample's predictive
    ``softmax(logits)`` on ``x`` is stored with it, and the running Bayesian model average of
    the kept samples is scored: ``bma_accuracy``, ``bma_nll`` (and ``bma_samples``) go into
    ``logs`` at each epoch end and into the manifest entry.

    Resume: with ``keras.callbacks.BackupAndRestore`` (or any restore of the sampler's
    weights) the collector drops samples taken after the restored step before training
    continues; the replayed steps take them again, so no sample is lost or duplicated and the
    final set equals the uninterrupted run's.

    Args:
      directory: where samples and ``manifest.json`` go (created).
      every: thinning ``T`` in steps (paper: 256); a multiple of ``steps_per_execution``.
      burn_in_steps: no sample at or before this step.
      cycle: optional :class:`tf_vrre.schedules.CyclicalCosine`; collect only in the sampling
        phase of each cycle.
      max_samples: keep at most this many on disk (``None``: all).
      keep: ``"last"`` or ``"reservoir"`` (with ``max_samples``).
      validation_data: optional ``(x, y)`` arrays for running BMA metrics.
      output: ``"logits"`` (softmax applied) or ``"probabilities"`` (model output used as is).
      batch_size: prediction batch size for ``validation_data``.
      seed: seed of the reservoir choices.

    Example:
      >>> collector = SampleCollector("runs/c10/samples", every=256, burn_in_steps=300 * 196,
      ...                             validation_data=(x_test, y_test))
      >>> sampler.fit(ds, epochs=500, callbacks=[collector])
      >>> load_samples("runs/c10/samples").predict(resnet20(), x_test)
    """

    def __init__(self, directory, every=256, burn_in_steps=0, cycle=None, max_samples=None, keep="last",
                 validation_data=None, output="logits", batch_size=256, seed=0):
        super().__init__()
        if not isinstance(directory, (str, os.PathLike)) or not str(directory):
            raise TypeError(f"directory must be a path, got {directory!r}")
        for name, value, lo in (("every", every, 1), ("burn_in_steps", burn_in_steps, 0),
                                ("batch_size", batch_size, 1)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
        if isinstance(cycle, dict):
            cycle = keras.saving.deserialize_keras_object(cycle)
        if cycle is not None and not isinstance(cycle, CyclicalCosine):
            raise TypeError(f"cycle must be a tf_vrre.schedules.CyclicalCosine or None, got {cycle!r}")
        if max_samples is not None and (isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Integral)
                                        or max_samples < 1):
            raise ValueError(f"max_samples must be an integer >= 1 or None, got {max_samples!r}")
        if keep not in KEEP:
            raise ValueError(f"keep must be one of {KEEP}, got {keep!r}")
        if output not in ("logits", "probabilities"):
            raise ValueError(f"output must be 'logits' or 'probabilities', got {output!r}")
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
                raise TypeError("validation_data must be a pair (x, y) of arrays")
            vx, vy = (np.asarray(v) for v in validation_data)
            if len(vx) != len(vy) or not len(vx):
                raise ValueError(f"validation_data: x and y must have the same non-zero length, "
                                 f"got {len(vx)} and {len(vy)}")
            validation_data = (vx, vy)
        self.directory = str(directory)
        self.every = int(every)
        self.burn_in_steps = int(burn_in_steps)
        self.cycle = cycle
        self.max_samples = None if max_samples is None else int(max_samples)
        self.keep = keep
        self.validation_data = validation_data
        self.output = output
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self._state = None

    # --- eligibility ----------------------------------------------------------------------
    def is_collection_step(self, step):
        """True when the state after ``step`` updates (counter ``step``) is collected."""
        step = int(step)
        if step <= self.burn_in_steps or step % self.every:
            return False
        return self.cycle is None or self.cycle.in_sampling_phase(step - 1)

    # --- start / resume --------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        s = require_sampler(self.model, "SampleCollector")
        spe = int(getattr(s, "steps_per_execution", 1) or 1)
        if self.every % spe:
            raise ValueError(f"every ({self.every}) must be a multiple of steps_per_execution ({spe}): "
                             "callbacks only see the weights every steps_per_execution steps")
        self._started = False

    def _start(self):
        """First epoch of this fit, after every on_train_begin (so after a restore)."""
        os.makedirs(self.directory, exist_ok=True)
        step0 = int(self.model.step_counter.numpy())
        path = os.path.join(self.directory, MANIFEST)
        if os.path.exists(path):
            manifest = _read_manifest(self.directory)
            for entry in manifest["entries"]:
                if entry["step"] <= step0:
                    _check_entry(self.directory, entry)
        else:
            manifest = {"format": FORMAT, "entries": [], "events": []}
        manifest["entries"] = [e for e in manifest["entries"] if e["step"] <= step0]
        manifest["events"] = [t for t in manifest["events"] if t <= step0]
        manifest["config"] = {k: v for k, v in self.get_config().items() if k != "validation_data"}
        _write_json(path, manifest)
        listed = {e["file"] for e in manifest["entries"]} | {MANIFEST}
        for name in os.listdir(self.directory):  # replayed or half-written files
            if (name.startswith("sample-") or name.endswith(".tmp")) and name not in listed:
                os.remove(os.path.join(self.directory, name))
        self._state = manifest
        self._bma_sum = None
        if self.validation_data is not None:
            for entry in manifest["entries"]:
                self._bma_add(self._stored_predictive(entry["file"]), +1)
        self._started = True

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._start()
        self._epoch = epoch

    # --- collection ----------------------------------------------------------------------
    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.step_counter.numpy())
        if self.is_collection_step(step) and (not self._state["events"] or self._state["events"][-1] < step):
            self._collect(step)

    def _collect(self, step):
        """Takes the sample of ``step``: decides where it goes, then writes file and manifest."""
        st = self._state
        st["events"].append(step)
        entries, slot, evicted = st["entries"], None, None
        if self.max_samples is not None and self.keep == "reservoir":  # Algorithm R
            slot = reservoir_slot(self.seed, len(st["events"]), self.max_samples)
            if slot is None:  # not kept: only the event is recorded
                _write_json(os.path.join(self.directory, MANIFEST), st)
                return
            evicted = next((e for e in entries if e.get("slot") == slot), None)
        elif self.max_samples is not None and len(entries) >= self.max_samples:  # keep="last"
            evicted = entries[0]

        s = self.model
        name = f"sample-{step:09d}.npz"
        path = os.path.join(self.directory, name)
        arrays = {f"w{i:04d}": w for i, w in enumerate(s.cold_model.get_weights())}
        entry = {"file": name, "step": step, "epoch": int(self._epoch),
                 "temperature": float(s.temperature.numpy()[0]), "lr": float(s.learning_rate.numpy()[0]),
                 "energy": float(s.batch_energy.numpy()[0])}
        if slot is not None:
            entry["slot"] = slot
        if self.validation_data is not None:
            # The running sum uses the stored (float32) values, so a resume that rebuilds it
            # from the files gets bit-identical metrics.
            arrays["predictive"] = self._predictive().astype(np.float32)
        _atomic_write(path, lambda f: np.savez(f, **arrays))
        entry["bytes"] = os.path.getsize(path)
        entry["sha256"] = _sha256(path)

        if evicted is not None:
            entries.remove(evicted)
        entries.append(entry)
        if self.validation_data is not None:
            self._bma_add(arrays["predictive"].astype(np.float64), +1)
            if evicted is not None:
                self._bma_add(self._stored_predictive(evicted["file"]), -1)
            entry.update(self._bma_metrics())
        _write_json(os.path.join(self.directory, MANIFEST), st)  # the sample exists before this
        if evicted is not None:  # the manifest no longer points at it
            os.remove(os.path.join(self.directory, evicted["file"]))

    # --- BMA -------------------------------------------------------------------------------
    def _predictive(self):
        x, _ = self.validation_data
        p = np.asarray(self.model.cold_model.predict(x, batch_size=self.batch_size, verbose=0), np.float64)
        if self.output == "logits":
            p = _softmax(p)
        return p

    def _stored_predictive(self, name):
        with np.load(os.path.join(self.directory, name)) as z:
            return z["predictive"].astype(np.float64)

    def _bma_add(self, pred, sign):
        if self._bma_sum is None:
            self._bma_sum, self._bma_count = np.zeros_like(pred), 0
        self._bma_sum += sign * pred
        self._bma_count += sign

    def _bma_metrics(self):
        if not getattr(self, "_bma_count", 0):
            return {}
        _, y = self.validation_data
        labels = y.argmax(-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(-1).astype(int)
        avg = self._bma_sum / self._bma_count
        picked = np.clip(avg[np.arange(len(labels)), labels], 1e-12, 1.0)
        return {"bma_accuracy": float(np.mean(avg.argmax(-1) == labels)),
                "bma_nll": float(-np.mean(np.log(picked))), "bma_samples": float(self._bma_count)}

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["samples"] = float(len(self._state["entries"])) if self._state else 0.0
            if self.validation_data is not None:
                logs.update(self._bma_metrics())

    def samples(self):
        """The :class:`SampleSet` collected so far."""
        return load_samples(self.directory)

    def get_config(self):
        vd = None
        if self.validation_data is not None:
            vd = [self.validation_data[0].tolist(), self.validation_data[1].tolist()]
        cycle = keras.saving.serialize_keras_object(self.cycle) if self.cycle is not None else None
        return {"directory": self.directory, "every": self.every, "burn_in_steps": self.burn_in_steps,
                "cycle": cycle, "max_samples": self.max_samples, "keep": self.keep, "validation_data": vd,
                "output": self.output, "batch_size": self.batch_size, "seed": self.seed}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
