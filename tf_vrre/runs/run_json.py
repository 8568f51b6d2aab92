"""The run directory written by ``tf-vrre train`` and read by ``evaluate``, ``export``, ``diagnose``.

::

    RUN/
      run.json      format "tf_vrre.run/1": method, resolved config, model, data, preprocessing,
                    seed, versions, status ("running" | "complete"); written atomically
      samples/      SampleCollector directory (manifest.json, sample-*.npz, model.json)
      swaps/        SwapLogger directory (swaps.csv, refresh.csv, epochs.csv); replica methods
      ladder/       LadderTuner record (ladder.json); a tuned ladder
      log.csv       one row per epoch (every logged metric; NaN before a metric exists)
      tensorboard/  TensorBoard logs
      backup/       tf_vrre.Checkpoint state: running the same command again resumes
      report.json, entropy_cdf.png, reliability.png, swaps.png     (tf-vrre evaluate)
      entropies.npz  per-image BMA entropies (test_T_1, ood_T_1, test_T_2, ...), for plots across runs

Model input is ``(x_uint8 * scale - mean) / std`` (float32, NHWC) with the numbers of
``run.json["preprocessing"]`` (statistics of the training images).
"""

from __future__ import annotations

import os
from typing import Any

import tf_vrre.runs.atomic as atomic
from tf_vrre import errors

FORMAT = "tf_vrre.run/1"
RUN_JSON = "run.json"
SAMPLES = "samples"
SWAPS = "swaps"
LADDER = "ladder"
BACKUP = "backup"
LOG = "log.csv"
TENSORBOARD = "tensorboard"
REPORT = "report.json"
FIGURES = ("entropy_cdf.png", "reliability.png", "swaps.png")
MODEL_JSON = "model.json"
ENTROPIES = "entropies.npz"
LOCK = ".lock"
TRAIN_OUTPUTS = (RUN_JSON, SAMPLES, SWAPS, LADDER, BACKUP, LOG, TENSORBOARD)
EVAL_OUTPUTS = (REPORT,) + FIGURES + (ENTROPIES,)
DIAGNOSE_OUTPUTS = ("diagnostics.json", "replicas.png", "acceptance.png")
DERIVED_OUTPUTS = EVAL_OUTPUTS + DIAGNOSE_OUTPUTS

__all__ = [
    "FORMAT",
    "RUN_JSON",
    "SAMPLES",
    "SWAPS",
    "LADDER",
    "BACKUP",
    "LOG",
    "TENSORBOARD",
    "REPORT",
    "FIGURES",
    "MODEL_JSON",
    "LOCK",
    "write_json",
    "read_run",
    "field",
    "config_difference",
    "RunDirError",
]


class RunDirError(errors.TfVrreError, ValueError):
    """A run directory is missing, incomplete, or holds a different run (the message says which)."""


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Writes ``obj`` as JSON to ``path`` atomically (temporary file, fsync, rename)."""
    atomic.write_json(path, obj, indent=2, newline=True)


# the top-level entries every run.json has, with their JSON types
STATUSES = ("running", "complete")
REQUIRED = {"method": str, "config": dict, "model": dict, "data": dict, "preprocessing": dict, "seed": int}
_JSON_NAMES = {
    str: "a string",
    dict: "an object",
    int: "an integer",
    list: "a list",
    float: "a number",
    bool: "true or false",
}


def read_run(run_dir: str | os.PathLike, required: bool = True) -> dict | None:
    """The parsed ``RUN/run.json`` (``None`` if absent and not ``required``).

    Checked: the format tag, and that ``method``, ``config``, ``model``, ``data``,
    ``preprocessing`` and ``seed`` exist with their JSON types (:data:`REQUIRED`), and that
    ``status``, where present, is one of :data:`STATUSES`.

    Raises:
      RunDirError: naming the missing directory / file, a file that is not a run manifest, or the
        first entry that is missing or of the wrong type.

    Example:
      >>> os.makedirs("runs/c10-vr")
      >>> write_json(os.path.join("runs/c10-vr", RUN_JSON), {"format": FORMAT, "method": "vr-resghmc",
      ...     "config": {}, "model": {}, "data": {"train_size": 5000}, "preprocessing": {}, "seed": 0})
      >>> run = read_run("runs/c10-vr")
      >>> run["method"], run["data"]["train_size"]
      ('vr-resghmc', 5000)
    """
    run_dir = os.fspath(run_dir)
    path = os.path.join(run_dir, RUN_JSON)
    if not os.path.isfile(path):
        if os.path.isdir(path):
            raise RunDirError(f"{path} is a directory, not a run manifest; move it away")
        if not required:
            return None
        what = "directory" if not os.path.isdir(run_dir) else "file"
        missing = run_dir if what == "directory" else path
        raise RunDirError(f"run {what} {missing!r} does not exist (tf-vrre train --out {run_dir} writes it)")
    from tf_vrre.runs.samples import read_json

    try:
        run = read_json(path)
    except (OSError, ValueError) as err:
        raise RunDirError(f"{path}: not a readable run manifest ({err})"[:400]) from None
    if not isinstance(run, dict) or run.get("format") != FORMAT:
        found = run.get("format") if isinstance(run, dict) else f"a JSON {type(run).__name__}"
        raise RunDirError(f"{path}: expected format {FORMAT!r}, got {found!r}"[:400])
    for key, kind in REQUIRED.items():
        field(run, key, kind, path)
    if run.get("status", "running") not in STATUSES:  # absent: a run that has not finished
        raise RunDirError(
            f"{path}: key status must be one of {', '.join(map(repr, STATUSES))}, got {run['status']!r}"[:400]
        )
    return run


def field(run: dict, dotted: str, kind: type | tuple[type, ...], path: str) -> Any:
    """``run``'s entry at ``dotted`` (``"data.dataset"``), checked to be of JSON type ``kind``.

    Raises:
      RunDirError: naming ``path``, the key and the type expected, if the entry is missing or of
        another type (``bool`` is not an ``int`` here).

    Example:
      >>> field({"data": {"dataset": "cifar10"}}, "data.dataset", str, "RUN/run.json")
      'cifar10'
      >>> field({"data": []}, "data.dataset", str, "RUN/run.json")
      Traceback (most recent call last):
      ...
      tf_vrre.runs.run_json.RunDirError: RUN/run.json: key data must be an object, got a list
    """
    kinds = kind if isinstance(kind, tuple) else (kind,)
    value: Any = run
    done: list[str] = []
    for part in dotted.split("."):
        if not isinstance(value, dict):
            raise RunDirError(f"{path}: key {'.'.join(done)} must be an object, got {_json_name(value)}")
        done.append(part)
        if part not in value:
            raise RunDirError(f"{path}: missing key {'.'.join(done)!r}")
        value = value[part]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)
        raise RunDirError(f"{path}: key {dotted} must be {expected}, got {_json_name(value)}")
    return value


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_NAMES.get(type(value), type(value).__name__)


def config_difference(old: Any, new: Any, prefix: str = "") -> tuple[str, Any, Any] | None:
    """The first differing key of two nested dicts as ``(dotted key, old, new)``, or ``None``.

    Example:
      >>> config_difference({"training": {"seed": 0}}, {"training": {"seed": 1}})
      ('training.seed', 0, 1)
    """
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            d = config_difference(old.get(key, "<absent>"), new.get(key, "<absent>"), f"{prefix}{key}.")
            if d is not None:
                return d
        return None
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        old, new = list(old), list(new)
    return None if old == new else (prefix.rstrip("."), old, new)
