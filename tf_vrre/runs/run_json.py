"""The run directory written by ``tf-vrre train`` and read by ``evaluate``, ``export``, ``diagnose``.

::

    RUN/
      run.json      format "tf_vrre.run/1": method, resolved config, model, data, preprocessing,
                    seed, versions, status ("running" | "complete"); written atomically
      samples/      SampleCollector directory (manifest.json, sample-*.npz, model.json)
      swaps/        SwapLogger directory (swaps.csv, refresh.csv, epochs.csv); replica methods
      log.csv       one row per epoch (every logged metric; NaN before a metric exists)
      tensorboard/  TensorBoard logs
      backup/       tf_vrre.Checkpoint state: running the same command again resumes
      report.json, entropy_cdf.png, reliability.png, swaps.png     (tf-vrre evaluate)
      entropies.npz  per-image BMA entropies (test_T_1, ood_T_1, test_T_2, ...), for plots across runs

Model input is ``(x_uint8 * scale - mean) / std`` (float32, NHWC) with the numbers of
``run.json["preprocessing"]`` (statistics of the training images).
"""

import os

import tf_vrre.runs.atomic as atomic

FORMAT = "tf_vrre.run/1"
RUN_JSON = "run.json"
SAMPLES = "samples"
SWAPS = "swaps"
BACKUP = "backup"
LOG = "log.csv"
TENSORBOARD = "tensorboard"
REPORT = "report.json"
FIGURES = ("entropy_cdf.png", "reliability.png", "swaps.png")
MODEL_JSON = "model.json"
ENTROPIES = "entropies.npz"
LOCK = ".lock"
TRAIN_OUTPUTS = (RUN_JSON, SAMPLES, SWAPS, BACKUP, LOG, TENSORBOARD)
EVAL_OUTPUTS = (REPORT,) + FIGURES + (ENTROPIES,)
DIAGNOSE_OUTPUTS = ("diagnostics.json", "replicas.png", "acceptance.png")
DERIVED_OUTPUTS = EVAL_OUTPUTS + DIAGNOSE_OUTPUTS

__all__ = ["FORMAT", "RUN_JSON", "SAMPLES", "SWAPS", "BACKUP", "LOG", "TENSORBOARD", "REPORT", "FIGURES",
           "MODEL_JSON", "write_json", "read_run", "config_difference", "lock_run", "RunDirError", "RunLockedError"]


class RunDirError(ValueError):
    """A run directory is missing, incomplete, or holds a different run (the message says which)."""


class RunLockedError(RunDirError):
    """Another process holds the run directory's lock (it is training into it)."""


_held = {}  # realpath of a run directory -> its open, locked RUN/.lock (this process)


def holds_lock(run_dir):
    """Whether this process holds ``run_dir``'s lock (:func:`lock_run`)."""
    return os.path.realpath(os.fspath(run_dir)) in _held


def unlock_run(run_dir):
    """Releases this process's lock of ``run_dir`` (no-op if it holds none)."""
    f = _held.pop(os.path.realpath(os.fspath(run_dir)), None)
    if f is not None:
        f.close()


def lock_run(run_dir):
    """Makes this process the one writer of ``run_dir``: an exclusive, non-blocking ``flock`` on
    ``RUN/.lock`` (opened ``O_NOFOLLOW``; the directory is created).  Held until
    :func:`unlock_run` or the end of the process (the OS releases it if the process dies); a
    second call in the same process returns the same open file.  The lock file itself is never
    deleted (``--overwrite`` clears everything else).

    Raises:
      RunLockedError: another process holds the lock (naming the directory and its pid).

    Example:
      >>> lock = lock_run("runs/c10-vr")     # before any check or clear of the directory
    """
    import fcntl

    run_dir = os.fspath(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    real = os.path.realpath(run_dir)
    if real in _held:
        return _held[real]
    f = atomic.open_lock(os.path.join(run_dir, LOCK))
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        pid = f.read().strip()[:20] or "?"
        f.close()
        raise RunLockedError(f"{run_dir!r} is being written by another process (pid {pid}); wait for it to end "
                             "or stop it, then run again") from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    _held[real] = f
    return f


def write_json(path, obj):
    """Writes ``obj`` as JSON to ``path`` atomically (temporary file, fsync, rename)."""
    atomic.write_json(path, obj, indent=2, newline=True)


def read_run(run_dir, required=True):
    """The parsed ``RUN/run.json`` (``None`` if absent and not ``required``).

    Raises:
      RunDirError: naming the missing directory / file, or a file that is not a run manifest.

    Example:
      >>> os.makedirs("runs/c10-vr")
      >>> write_json(os.path.join("runs/c10-vr", RUN_JSON), {"format": FORMAT, "method": "vr-resghmc",
      ...     "config": {}, "model": {}, "data": {"train_size": 5000}, "preprocessing": {}, "seed": 0})
      >>> run = read_run("runs/c10-vr")
      >>> run["method"], run["data"]["train_size"]
      ('vr-resghmc', 5000)
    """
    run_dir = str(run_dir)
    path = os.path.join(run_dir, RUN_JSON)
    if not os.path.isfile(path):
        if not required:
            return None
        what = "directory" if not os.path.isdir(run_dir) else "file"
        missing = run_dir if what == "directory" else path
        raise RunDirError(f"run {what} {missing!r} does not exist (tf-vrre train --out {run_dir} writes it)")
    from tf_vrre.runs.samples import read_json

    try:
        run = read_json(path)
    except (OSError, ValueError) as err:
        raise RunDirError(f"{path}: not a readable run manifest ({err})") from None
    if not isinstance(run, dict) or run.get("format") != FORMAT:
        found = run.get("format") if isinstance(run, dict) else f"a JSON {type(run).__name__}"
        raise RunDirError(f"{path}: expected format {FORMAT!r}, got {found!r}"[:400])
    for key in ("method", "config", "model", "data", "preprocessing", "seed"):
        if key not in run:
            raise RunDirError(f"{path}: missing key {key!r}")
    return run


def config_difference(old, new, prefix=""):
    """The first differing key of two nested dicts as ``(dotted key, old, new)``, or ``None``."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            d = config_difference(old.get(key, "<absent>"), new.get(key, "<absent>"), f"{prefix}{key}.")
            if d is not None:
                return d
        return None
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        old, new = list(old), list(new)
    return None if old == new else (prefix.rstrip("."), old, new)
