"""Output directories of a run: whose files they hold, and who writes them now.

Every directory a tf_vrre callback writes (:class:`tf_vrre.SampleCollector`,
:class:`tf_vrre.SwapLogger`, :class:`tf_vrre.Checkpoint`) records the **run identity** of the
sampler that wrote it:

    {"fingerprint": sha256 of the rest, "sampler": the constructor arguments (get_config without
     the auto-generated name), "weights": [[shape, dtype] of every cold-model weight], ...}

A callback that finds files of a run with another identity refuses to touch them
(:class:`RunMismatchError` naming the first difference) unless built with
``overwrite=True``; files of the same run are reconciled with the restored step (a resume).
A directory is written by one callback at a time: :func:`claim` takes the exclusive lock of
``DIR/.lock`` (:mod:`tf_vrre.runs.locks`, released by the OS if the process dies), so two
callbacks in one fit, or two processes, on one directory get an error instead of interleaved files.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from typing import Any

import tf_vrre.runs.locks as locks
from tf_vrre import errors

LOCK = locks.LOCK


class RunMismatchError(errors.TfVrreError, ValueError):
    """A directory holds files of another run (or of a run with no recorded identity)."""


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=repr, separators=(",", ":"))


def run_identity(sampler: Any, **extra: Any) -> dict:
    """The identity of ``sampler``'s run as a JSON-ready dict (``extra`` fields are included).

    Args:
      sampler: a :class:`tf_vrre.ReplicaExchangeSampler`.
      **extra: more identifying fields (e.g. a callback's own configuration).

    Example:
      >>> run_identity(toy_sampler())["sampler"]["num_chains"]
      2
    """
    with warnings.catch_warnings():  # a lambda model_fn serializes with a warning meant for saving
        warnings.simplefilter("ignore")
        try:
            config = dict(sampler._config())
        except TypeError as err:  # e.g. model_fn=functools.partial(...): Keras cannot serialize it
            raise ValueError(
                "cannot record the run identity of this sampler: a constructor argument is not serializable "
                f"({str(err).splitlines()[0][:200]}); pass model_fn / nll as a module-level function or a "
                "Keras-registered class with get_config (e.g. models.Builder), not functools.partial"
            ) from None
    config.pop("name", None)
    ident = {
        "sampler": json.loads(_canonical(config)),
        "weights": [[list(v.shape), str(v.dtype)] for v in sampler.cold_model.weights],
    }
    ident.update(json.loads(_canonical(extra)))
    ident["fingerprint"] = fingerprint(ident)
    return ident


def fingerprint(identity: dict) -> str:
    """The fingerprint of a run identity: the first 16 hex digits of the SHA-256 of its fields
    (all but ``fingerprint``) as canonical JSON.  An identity read from a file whose recorded
    fingerprint is not this was edited after it was written (:func:`edited`)."""
    fields = {k: v for k, v in identity.items() if k != "fingerprint"}
    return hashlib.sha256(_canonical(fields).encode()).hexdigest()[:16]


def edited(identity: Any) -> str | None:
    """Why a run identity read from a file cannot be trusted, or ``None``: not a JSON object, or
    its recorded fingerprint does not match its fields (changed by hand after it was written)."""
    if not isinstance(identity, dict):
        return f"the recorded run identity is not a JSON object ({type(identity).__name__})"
    if identity.get("fingerprint") != fingerprint(identity):
        return "the recorded run identity was edited (its fingerprint does not match its fields)"
    return None


_FIRST = ("sampler", "num_chains", "model_fn", "weights", "state", "seed", "data_size")  # reported first


def _ordered(keys: Any) -> list:
    return sorted(keys, key=lambda k: (_FIRST.index(k) if k in _FIRST else len(_FIRST), k))


def difference(stored: dict | None, current: dict) -> str | None:
    """The first field in which two identities differ, as text, or ``None`` if they match.

    ``num_chains``, ``model_fn`` and the weight shapes are reported before other fields.  A
    ``stored`` identity whose fingerprint does not match its own fields (:func:`edited`) matches
    nothing: the fingerprint alone is never trusted.
    """
    if stored is None:
        return "no run identity recorded (written by an older tf_vrre or by hand)"
    tampered = edited(stored)
    if tampered is not None:
        return tampered
    if stored.get("fingerprint") == current.get("fingerprint"):
        return None
    for key in _ordered(set(stored) | set(current)):
        if key == "fingerprint":
            continue
        a, b = stored.get(key, "<absent>"), current.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            for sub in _ordered(set(a) | set(b)):
                if a.get(sub, "<absent>") != b.get(sub, "<absent>"):
                    return f"{key}.{sub}: {_short(a.get(sub, '<absent>'))} there, {_short(b.get(sub, '<absent>'))} here"
        elif a != b:
            if isinstance(a, list) and isinstance(b, list):
                return f"{key}: {len(a)} arrays {_short(a)} there, {len(b)} arrays {_short(b)} here"
            return f"{key}: {_short(a)} there, {_short(b)} here"
    return "fingerprint differs"


def _short(value: Any, limit: int = 120) -> str:
    text = _canonical(value)
    return text if len(text) <= limit else text[:limit] + "..."


def refuse(directory: str, what: str, diff: str) -> RunMismatchError:
    """:class:`RunMismatchError` for ``directory`` holding ``what`` of another run."""
    return RunMismatchError(
        f"{directory} holds {what} of another run ({diff}); use another directory, or pass overwrite=True "
        "to replace them"
    )


# ---- exclusive use ------------------------------------------------------------------------
_held: dict[str, tuple[Any, Any, locks.Lock]] = {}  # realpath of the lock file -> (owner, fit token, its lock)


def claim(target: str, owner: Any, token: Any, label: str, lock: str | None = None) -> None:
    """Makes ``owner`` the only writer of ``target`` until :func:`release`: an exclusive
    :func:`tf_vrre.runs.locks.acquire` of ``target/.lock`` (or of ``lock``).

    Args:
      target: the output directory (created; the lock is ``target/.lock``), or a file when
        ``lock`` names its lock file.
      owner: the callback claiming it.
      token: identifies the fit (the ``params`` dict Keras gives every callback of one fit):
        another owner with the same token is a second writer in the same fit (error); with
        another token it belongs to an earlier fit of this process that ended or was
        interrupted, and is replaced.
      label: the owner's name for messages (``"SampleCollector"``).
      lock: the lock file for a file ``target``.

    Raises:
      RunLockedError: another callback of this fit, or another process, writes ``target`` (naming
        its pid), or reads it (a ``ValueError``).
    """
    if lock is None:
        os.makedirs(target, exist_ok=True)
        lock = os.path.join(target, LOCK)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(lock)), exist_ok=True)
    real = os.path.realpath(lock)
    held = _held.get(real)
    if held is not None and held[0] is owner and held[2].owned():
        return
    if held is not None and held[0] is not owner:
        if token is not None and held[1] is token:
            raise locks.RunLockedError(
                f"{label}: two callbacks write to {target} in one fit; give each its own "
                f"{'directory' if lock.endswith(os.sep + LOCK) else 'file'}"
            )
        release(held[0])  # left by an earlier fit that did not reach on_train_end
        getattr(held[0], "_abandon", lambda: None)()
    elif held is not None:
        release(owner)  # its lock file was deleted or replaced: lock the file now at that name
    try:
        _held[real] = (owner, token, locks.acquire(lock))
    except locks.Busy as busy:
        who = "readers" if busy.readers else f"another process (pid {busy.pid or '?'})"
        raise locks.RunLockedError(f"{label}: {target} is in use by {who}; one writer at a time") from None


def release(owner: Any) -> None:
    """Gives up every claim of ``owner`` (no-op if it holds none); the lock files keep no pid."""
    for real, held in list(_held.items()):
        if held[0] is owner:
            del _held[real]
            held[2].release()


def stored_run(path: str, who: str) -> dict | None:
    """The run identity recorded in the JSON file ``path`` (``None`` if there is none);
    :class:`tf_vrre.runs.samples.RunFileError` (a ``ValueError``) naming ``who`` and the way out
    if the file is corrupt."""
    if not os.path.exists(path):
        return None
    import tf_vrre.runs.samples as samples

    try:
        return samples.read_json(path).get("run")
    except (OSError, ValueError, AttributeError) as err:
        raise samples.RunFileError(f"{who}: {path} is corrupt ({err}); move it away or pass overwrite=True") from None
