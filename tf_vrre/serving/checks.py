"""Checks of :func:`tf_vrre.export_ensemble`'s arguments that need no TensorFlow (``tf-vrre export``
runs them before TensorFlow starts): ``run.json``, the base path, the version, K and ``T``."""

import numbers
import os

import numpy as np

from tf_vrre.runs import run_json
from tf_vrre.runs.run_json import RUN_JSON


def check_int(value, name, lo=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def check_temperature(t):
    """``t`` as a float, checked in float32 (the graph's dtype): ``1e-46`` is 0 there, ``1e39`` inf."""
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or not (np.isfinite(t) and t > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {t!r}")
    tiny, big = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
    if not tiny <= float(t) <= big:
        raise ValueError(
            f"temperature must be in [{tiny:.3g}, {big:.3g}] (positive and finite in float32, the "
            f"serving graph's dtype), got {t!r}"
        )
    return float(t)


def read_run(run_dir):
    """``RUN/run.json`` (:func:`tf_vrre.runs.run_json.read_run`) with the preprocessing the
    exported model applies checked: normalisation numbers matching ``model.input_shape``."""
    run = run_json.read_run(run_dir)
    path = os.path.join(run_dir, RUN_JSON)
    pre = run.get("preprocessing")
    if not isinstance(pre, dict) or pre.get("kind") != "normalize":
        raise ValueError(f"{path}: preprocessing must be {{'kind': 'normalize', 'scale', 'mean', 'std'}}, got {pre!r}")
    try:
        scale = float(pre["scale"])
        mean, std = (np.asarray(pre[k], np.float64).reshape(-1) for k in ("mean", "std"))
        shape = [int(d) for d in run["model"]["input_shape"]]
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{path}: preprocessing needs numbers 'scale', 'mean', 'std' and model.input_shape [H, W, C] ({err!r})"
        ) from None
    if (
        len(shape) != 3
        or mean.shape != std.shape
        or len(mean) != shape[-1]
        or not np.all(std > 0)
        or not np.all(np.isfinite(std))
        or not np.all(np.isfinite(mean))
        or not (np.isfinite(scale) and scale > 0)
    ):
        raise ValueError(
            f"{path}: need model.input_shape [H, W, C], scale > 0 and C means and C stds > 0, "
            f"got input_shape {shape}, scale {scale}, mean {mean.tolist()}, std {std.tolist()}"
        )
    return run


def check_out(out):
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise ValueError(f"out must be a directory path, got {out!r}")
    out = str(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"out {out!r} exists and is not a directory")
    return out


def versions(out):
    """The TF Serving versions in ``out``: its subdirectories named by ASCII digits, as integers."""
    if not os.path.isdir(out):
        return []
    return sorted(
        int(n) for n in os.listdir(out) if n.isascii() and n.isdigit() and os.path.isdir(os.path.join(out, n))
    )


def choose_version(out, version):
    """The version to write: ``version`` (an integer >= 1 whose name is free in ``out``) or one above
    every digit-named entry of ``out`` (a file or link named ``3`` is passed over, never taken for
    a version to write into)."""
    existing = versions(out)
    taken = sorted(int(n) for n in (os.listdir(out) if os.path.isdir(out) else []) if n.isascii() and n.isdigit())
    if version is None:
        return taken[-1] + 1 if taken else 1
    version = check_int(version, "version")
    path = os.path.join(out, str(version))
    if os.path.lexists(path):
        what = (
            ""
            if os.path.isdir(path) and not os.path.islink(path)
            else f" (as a {'symbolic link' if os.path.islink(path) else 'file'}, not an exported version)"
        )
        raise ValueError(
            f"version {version} already exists in {out}{what} (versions there: {existing}); "
            f"an exported version is never overwritten: pick a new version, e.g. "
            f"{(taken[-1] if taken else 0) + 1}"
        )
    return version
