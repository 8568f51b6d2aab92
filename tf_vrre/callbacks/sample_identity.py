"""Whose samples a directory holds: the run identity a :class:`tf_vrre.callbacks.SampleCollector`
records in its manifest, and what it does with a directory written by another run.

The identity (:func:`tf_vrre.runs.ownership.run_identity`) is the sampler's constructor
arguments, the cold model's weight shapes and the collector's own settings (the validation data
by a digest of its arrays).  A directory whose manifest names another run is refused (a
:class:`tf_vrre.RunMismatchError` naming the difference), or with ``overwrite`` emptied of that
run's samples; a run that collected nothing has nothing to lose and is replaced silently.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from tf_vrre.runs import ownership
from tf_vrre.runs.samples import MANIFEST, MODEL_JSON, read_manifest


def digest(arrays: Iterable[np.ndarray]) -> str:
    """A short SHA-256 of ``arrays`` (dtypes, shapes and bytes): the validation data in an identity.

    Example:
      >>> digest([np.zeros(2)]) == digest([np.zeros(2)]) != digest([np.ones(2)])
      True
    """
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def collector_identity(sampler: Any, settings: dict, validation_data: Any = None) -> dict:
    """The run identity of a collector with ``settings`` (its config without the directory,
    the validation data, the batch size and ``overwrite``) on ``sampler``."""
    settings = dict(settings)
    if validation_data is not None:
        settings["validation_data"] = digest(validation_data)
    return ownership.run_identity(sampler, collector=settings)


def adopt(directory: str, run: dict, overwrite: bool) -> dict | None:
    """The manifest of ``run`` found in ``directory``, or ``None`` (a new directory, or another
    run's files deleted with ``overwrite``); :class:`tf_vrre.RunMismatchError` otherwise.
    Writes nothing else."""
    path = os.path.join(directory, MANIFEST)
    files = [n for n in os.listdir(directory) if n.startswith("sample-")]
    manifest = read_manifest(directory) if os.path.exists(path) else None
    stored = None if manifest is None else manifest.get("run")
    diff = ownership.difference(stored, run)
    if diff is None:
        return manifest
    if manifest is None and not files:
        return None  # a new directory
    if manifest is not None and not files and not manifest["entries"] and not manifest["events"]:
        return None  # another run that collected nothing: nothing to lose
    if not overwrite:
        what = f"{len(files)} sample files" + ("" if manifest is not None else " and no manifest")
        raise ownership.refuse(directory, what, diff)
    for name in files + [MANIFEST, MODEL_JSON]:
        if os.path.exists(os.path.join(directory, name)):
            os.remove(os.path.join(directory, name))
    return None
