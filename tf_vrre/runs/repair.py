"""Repairs a damaged sample directory, keeping every readable sample (no TensorFlow).

A deleted or truncated sample file, or a truncated / corrupt ``manifest.json``, makes
:func:`tf_vrre.load_samples` refuse the whole directory, and with it ``tf-vrre evaluate``,
``export`` and a resume.  :func:`repair` checks every sample and rewrites the manifest
(atomically) to list the good ones:

- with a readable manifest: every entry whose file is present, has the recorded size and
  SHA-256 and is a readable ``.npz`` is kept, with its metadata (epoch, temperature, energy,
  BMA metrics) and the manifest's run identity, events and settings;
- with an unreadable manifest: every ``sample-<step>.npz`` file that is a complete, readable
  ``.npz`` is listed again (step from its name, size and SHA-256 computed); the metadata and the
  run identity are lost, so a resume cannot check that the samples belong to it (it refuses
  them; ``evaluate`` and ``export`` work); a file named like a sample that cannot be one is not
  adopted: a byte-for-byte copy of a lower step's sample, or (in ``RUN/samples``) a step beyond
  the run's last step;
- samples whose arrays differ from the majority's (another model) are dropped.

A dropped file that exists is renamed ``damaged-<name>`` (kept for inspection, never read).

A repair that changes something first takes the locks of the writers it would race
(:mod:`tf_vrre.runs.locks`): the sample directory's (``samples/.lock``, held by a
:class:`tf_vrre.callbacks.sample_collector.SampleCollector` while it collects) and, for
``RUN/samples``, the run's (``RUN/.lock``, held by ``tf-vrre train``); either held elsewhere is an
error and nothing changes.  It then plans again under the locks, and writes.  A directory that
needs no repair is only read.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from collections.abc import Iterator
from typing import Any

import tf_vrre.runs.atomic as atomic
import tf_vrre.runs.locks as locks
import tf_vrre.runs.run_json as run_json
from tf_vrre.runs.samples import FORMAT, MANIFEST, SAMPLE_FILE, array_shapes, check_entry, read_manifest, sha256

DAMAGED_PREFIX = "damaged-"


def _readable(path: str) -> str | None:
    """``None`` if ``path`` is a complete, readable ``.npz`` (every member's CRC checked), else why not."""
    try:
        array_shapes(path)
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
        return str(err)
    return None if bad is None else f"member {bad} fails its CRC check"


def _check(directory: str, entry: dict[str, Any], listed: bool) -> str | None:
    """Why ``entry`` cannot be kept, or ``None``."""
    path = os.path.join(directory, entry["file"])
    if not os.path.isfile(path):
        return "missing"
    if listed:
        try:
            check_entry(directory, entry)
        except ValueError:
            return (
                f"size or SHA-256 differs from the manifest ({os.path.getsize(path)} bytes, manifest says "
                f"{entry['bytes']})"
            )
    return _readable(path)


def plan(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """What :func:`repair` would do: ``{"manifest_problem", "kept", "dropped", "manifest"}``.

    ``kept``: entries of the new manifest; ``dropped``: ``[(file, reason)]``; ``manifest``: the
    new manifest; ``manifest_problem``: why the old manifest was unreadable (``None`` if it was).
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise ValueError(f"{directory!r} is not a directory")
    try:
        old, problem = read_manifest(directory), None
    except ValueError as err:
        old, problem = None, str(err)
    files = sorted(n for n in os.listdir(directory) if SAMPLE_FILE.fullmatch(n))
    if old is None and not files:
        raise ValueError(
            f"{directory} holds no sample-<step>.npz file and no readable manifest ({problem}); nothing to repair"
        )
    if old is not None:
        candidates = [(e, True) for e in old["entries"]]
    else:
        candidates = []
        for name in files:
            path = os.path.join(directory, name)
            candidates.append(
                ({"file": name, "step": int(name[7:16]), "bytes": os.path.getsize(path), "sha256": sha256(path)}, False)
            )
    kept: list[dict[str, Any]] = []
    dropped: list[tuple[str, str]] = []
    strays = {} if old is not None else _strays(directory, [e for e, _ in candidates])
    for entry, listed in candidates:
        why = strays.get(entry["file"]) or _check(directory, entry, listed)
        (kept.append(entry) if why is None else dropped.append((entry["file"], why)))
    kept, other = _majority(directory, kept)
    dropped += other
    manifest: dict[str, Any] = dict(old) if old is not None else {"format": FORMAT, "events": [], "evicted": []}
    manifest["entries"] = sorted(kept, key=lambda e: e["step"])
    if old is None:
        manifest["events"] = [e["step"] for e in manifest["entries"]]
    else:
        manifest["evicted"] = [
            e
            for e in old.get("evicted", [])
            if isinstance(e, dict) and os.path.isfile(os.path.join(directory, str(e.get("file"))))
        ]
    manifest.setdefault("repairs", [])
    manifest["repairs"] = list(manifest["repairs"]) + [
        {"dropped": [f for f, _ in dropped], "manifest_rebuilt": old is None}
    ]
    return {
        "manifest_problem": problem,
        "kept": manifest["entries"],
        "dropped": dropped,
        "manifest": manifest,
        "changed": bool(dropped) or problem is not None,
    }


def _strays(directory: str, entries: list[dict[str, Any]]) -> dict[str, str]:
    """``{file: why}`` of the sample files a rebuilt manifest must not adopt: a step beyond the
    run's last (``RUN/run.json``'s ``schedule.total_steps``, for ``RUN/samples``) and a byte-for-byte
    copy of a sample of a lower step (two draws of a chain never have equal weights)."""
    why: dict[str, str] = {}
    run = run_of(directory)
    total = None
    if run is not None:
        try:
            doc = run_json.read_run(run, required=True)  # required: a dict, never None
            total = doc["schedule"]["total_steps"] if doc is not None else None
        except (ValueError, KeyError, TypeError):
            total = None
    seen: dict[str, str] = {}
    for e in sorted(entries, key=lambda e: e["step"]):
        if isinstance(total, int) and not isinstance(total, bool) and not 0 < e["step"] <= total:
            why[e["file"]] = f"step {e['step']} is outside the run's steps 1..{total} (run.json): a stray file"
        elif e["sha256"] in seen:
            why[e["file"]] = f"a copy of {seen[e['sha256']]} (same SHA-256): a stray file"
        else:
            seen[e["sha256"]] = e["file"]
    return why


def _majority(directory: str, entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Entries whose arrays match the most common array layout, and ``[(file, reason)]`` of the rest."""
    layouts = [array_shapes(os.path.join(directory, e["file"])) for e in entries]
    keys = [repr(sorted(s.items())) for s in layouts]
    if not keys:
        return [], []
    best = max(set(keys), key=lambda k: (keys.count(k), -keys.index(k)))
    keep = [e for e, k in zip(entries, keys) if k == best]
    return keep, [
        (e["file"], "its arrays differ from the other samples' (another model)")
        for e, k in zip(entries, keys)
        if k != best
    ]


def repair(directory: str | os.PathLike[str], dry_run: bool = False) -> dict[str, Any]:
    """Rewrites ``directory/manifest.json`` to list the readable samples (see the module docstring).

    Args:
      directory: a sample directory (``RUN/samples``).
      dry_run: only compute what would be kept and dropped; change nothing.

    Returns:
      the :func:`plan` dict (``changed`` False: the directory was sound, nothing written).

    Raises:
      ValueError: ``directory`` is not a directory or holds nothing to repair;
        :class:`tf_vrre.runs.locks.RunLockedError` (a ``ValueError``) if another process writes
        the run or the samples.

    Example:
      >>> import os
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0,
      ...                 callbacks=[tf_vrre.SampleCollector("samples", every=2)])
      >>> lost = sorted(f for f in os.listdir("samples") if f.startswith("sample-"))[0]
      >>> os.remove(os.path.join("samples", lost))              # a sample deleted by accident
      >>> result = repair("samples")
      >>> len(result["kept"]), [why for _, why in result["dropped"]]
      (3, ['missing'])
      >>> len(tf_vrre.load_samples("samples"))                  # the manifest lists the good ones
      3
    """
    directory = os.fspath(directory)
    result = plan(directory)
    if dry_run or not result["changed"]:
        return result
    with writer_locks(directory):
        result = plan(directory)  # again, now that no writer can change it
        if not result["changed"]:
            return result
        atomic.write_json(os.path.join(directory, MANIFEST), result["manifest"], indent=1)  # first: lists none of them
        for name, _ in result["dropped"]:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                os.replace(path, os.path.join(directory, DAMAGED_PREFIX + name))
    return result


def run_of(directory: str | os.PathLike) -> str | None:
    """The run directory whose ``samples/`` is ``directory`` (``None`` for a bare sample directory)."""
    directory = os.path.abspath(os.fspath(directory))
    parent = os.path.dirname(directory)
    if os.path.basename(directory) == run_json.SAMPLES and os.path.isfile(os.path.join(parent, run_json.RUN_JSON)):
        return parent
    return None


def _collector_free(directory: str, take: Any, lock: str) -> Any:
    """``take(lock)`` of the sample directory's writer lock; ``RunLockedError`` if a collector holds it."""
    try:
        return take(lock)
    except locks.Busy as busy:
        raise locks.RunLockedError(
            f"{directory!r} is being written by "
            f"{'this process' if busy.pid == str(os.getpid()) else 'another process'} "
            f"(pid {busy.pid or '?'}: a SampleCollector collects samples there); repair it "
            "when that fit has ended"
        ) from None


@contextlib.contextmanager
def writer_locks(directory: str) -> Iterator[None]:
    """Holds the run's lock (if ``directory`` is a run's ``samples/``) and the sample directory's
    writer lock; :class:`tf_vrre.runs.locks.RunLockedError` naming the holder if either is taken."""
    run = run_of(directory)
    lock = os.path.join(directory, locks.LOCK)
    if run is not None:
        locks.check_run_free(run)  # both probed first: a refusal changes nothing
    _collector_free(directory, locks.check_free, lock)
    taken = run is not None and not locks.holds_run_lock(run)
    if run is not None:
        locks.lock_run(run)  # marks it too (this repair writes)
    try:
        held = _collector_free(directory, locks.acquire, lock)
        try:
            yield
        finally:
            held.release(remove=True)
    finally:
        if taken and run is not None:  # taken implies a run
            locks.unlock_run(run)
