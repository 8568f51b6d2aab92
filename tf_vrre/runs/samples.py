"""Files of a run, read and checked without TensorFlow: sample manifests, sample files, layout.

A sample directory (written by :class:`tf_vrre.SampleCollector`)::

    manifest.json            # {"format", "entries": [...], "events": [...], "run": {...}, ...}
    model.json               # the cold model's architecture (``to_json``), when serializable
    sample-000000256.npz     # cold-chain weights w0000, w0001, ... (+ "predictive" with BMA)

Every manifest entry names its file and stores the file's size and SHA-256.  :func:`load_samples`
checks the manifest's structure, every listed file (present, same size, same checksum) and that
all samples hold the same arrays with the same shapes; any failure is a ``ValueError`` naming
the manifest or the file.  Nothing here imports TensorFlow, so the command line checks a run's
files before it starts TensorFlow.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

import numpy as np

import tf_vrre.runs.atomic as atomic
from tf_vrre import errors

MANIFEST = "manifest.json"
MODEL_JSON = "model.json"
FORMAT = "tf_vrre.samples/1"
SAMPLE_FILE = re.compile(r"sample-\d{9}\.npz")
_ENTRY_FIELDS = {"file": str, "step": int, "bytes": int, "sha256": str}
MAX_LOG_BYTES = 1 << 31  # 2 GiB: a larger log or JSON file is not one tf_vrre wrote


class RunFileError(errors.TfVrreError, ValueError):
    """A run file (sample manifest, sample file, CSV log) is missing, damaged or not a tf_vrre file;
    the message names the file (and line)."""


def read_json(path: str | os.PathLike[str]) -> Any:
    """``json.load`` of ``path`` with every failure as one ``ValueError``-family error or
    ``OSError``: ``FileNotFoundError`` / ``OSError`` propagate; undecodable bytes, bad JSON,
    nesting too deep for the parser and files too large give ``ValueError("<what>")`` (the
    caller adds the path)."""
    if os.path.getsize(path) > MAX_LOG_BYTES:
        raise ValueError(f"{os.path.getsize(path)} bytes, too large")
    with open(path, "rb") as f:
        data = f.read()
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"not UTF-8 text (byte {err.start})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except MemoryError:
        raise ValueError("too large to parse") from None


def sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[Any]], object]) -> None:
    """``write(f)`` (binary) into a fresh temporary file, fsync, rename over ``path``
    (:func:`tf_vrre.runs.atomic.write`)."""
    atomic.write(path, write)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Writes ``obj`` as JSON to ``path`` atomically."""
    atomic.write_json(path, obj, indent=1)


def _bad(path: str, what: str) -> RunFileError:
    return RunFileError(f"sample manifest {path} is malformed: {what}")


def _check_entries(path: str, entries: Any) -> None:
    if not isinstance(entries, list):
        raise _bad(path, f"'entries' must be a list, got {type(entries).__name__}")
    files, steps = set(), set()
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise _bad(path, f"entry {i} is not an object: {e!r}")
        for key, kind in _ENTRY_FIELDS.items():
            value = e.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise _bad(path, f"entry {i} needs {key!r} ({kind.__name__}), got {value!r}")
        if not SAMPLE_FILE.fullmatch(e["file"]):
            raise _bad(path, f"entry {i} names {e['file']!r}, not a sample-<step>.npz file in the directory")
        if e["step"] < 0 or e["bytes"] < 0:
            raise _bad(path, f"entry {i} has a negative step or size: {e['step']}, {e['bytes']}")
        if e["file"] in files or e["step"] in steps:
            raise _bad(path, f"entry {i} repeats file {e['file']!r} or step {e['step']}")
        files.add(e["file"])
        steps.add(e["step"])


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The parsed ``directory/manifest.json``, its structure checked.

    Raises:
      ValueError: no manifest, not JSON, another format, or malformed entries (naming the
        manifest and the entry).
    """
    path = os.path.join(directory, MANIFEST)
    try:
        manifest = read_json(path)
    except FileNotFoundError:
        raise RunFileError(f"no sample manifest at {path}") from None
    except (OSError, ValueError) as err:
        raise RunFileError(f"sample manifest {path} is corrupt: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or "entries" not in manifest:
        raise RunFileError(f"sample manifest {path} is not a {FORMAT} manifest")
    _check_entries(path, manifest["entries"])
    events = manifest.setdefault("events", [])
    if not isinstance(events, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in events):
        raise _bad(path, "'events' must be a list of steps")
    return manifest


def check_entry(directory: str | os.PathLike[str], entry: dict[str, Any]) -> str:
    """Path of an entry's file after checking its size and SHA-256 (``ValueError`` naming it)."""
    path = os.path.join(directory, entry["file"])
    try:
        return _check_entry_file(directory, entry, path)
    except OSError as err:
        raise RunFileError(f"sample file {path}: cannot read it ({err.strerror or err})") from None


def _check_entry_file(directory: str | os.PathLike[str], entry: dict[str, Any], path: str) -> str:
    if not os.path.exists(path):
        raise RunFileError(f"sample manifest {os.path.join(directory, MANIFEST)} points at a missing file: {path}")
    size = os.path.getsize(path)
    if size != entry["bytes"] or sha256(path) != entry["sha256"]:
        raise RunFileError(
            f"sample file {path} is truncated or corrupt ({size} bytes, manifest says "
            f"{entry['bytes']}; checksum mismatch)"
        )
    return path


def read_log(path: str | os.PathLike[str]) -> tuple[list[str] | None, list[tuple[int, list[str]]]]:
    """``(header, [(line number, row)])`` of a CSV log written row by row, strictly.

    Only the last line may be incomplete (no newline, or fewer fields than the header: a row
    torn by a kill) and is then dropped; every other row must have the header's number of fields.  ``(None, [])`` for an
    empty file or a header torn before its newline.

    Raises:
      ValueError: naming the file (and line): not UTF-8 text, a NUL byte, or a row with the
        wrong number of fields.
    """
    import csv

    try:
        if os.path.getsize(path) > MAX_LOG_BYTES:
            raise RunFileError(f"{path}: {os.path.getsize(path)} bytes, too large for a tf_vrre log")
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise RunFileError(f"{path}: cannot read it ({err.strerror or err})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise RunFileError(f"{path}, line {line}: not UTF-8 text (byte {err.start}); not a tf_vrre log") from None
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise RunFileError(f"{path}, line {line}: a NUL byte; not a tf_vrre log")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines.pop()  # torn by a kill
    if not lines:
        return None, []
    try:
        parsed = list(csv.reader(lines))
    except csv.Error as err:
        raise RunFileError(f"{path}: not a CSV log ({err})") from None
    header, rows = parsed[0], []
    if len(parsed) > 1 and len(parsed[-1]) < len(header):
        parsed.pop()  # the last row cut short by a kill
    for number, row in enumerate(parsed[1:], start=2):
        if len(row) != len(header):
            raise RunFileError(
                f"{path}, line {number}: {len(row)} fields, the header has {len(header)} (a damaged "
                "row; only a last row torn by a kill is dropped)"
            )
        rows.append((number, row))
    return header, rows


def repair_hint(run: str | os.PathLike[str]) -> str:
    """The remedy named by every command that finds damaged samples in ``run``."""
    return (
        f"'tf-vrre repair {run}' keeps the readable samples and rewrites the manifest (--dry-run shows what "
        "it would drop)"
    )


def array_shapes(path: str | os.PathLike[str]) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{name: (shape, dtype str)}`` of the arrays in an ``.npz`` file, from their headers only."""
    out = {}
    try:
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                with z.open(name) as f:
                    major, _ = np.lib.format.read_magic(f)
                    read = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0}[major]
                    shape, _, dtype = read(f)
                out[name[:-4] if name.endswith(".npy") else name] = (tuple(shape), dtype.str)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        raise RunFileError(f"sample file {path} is not a readable .npz file: {err}") from None
    return out


def check_shapes(directory: str | os.PathLike[str], entries: Sequence[dict[str, Any]]) -> None:
    """``ValueError`` naming the first sample whose arrays differ from the first sample's."""
    first = None
    for entry in sorted(entries, key=lambda e: e["step"]):
        path = os.path.join(directory, entry["file"])
        shapes = array_shapes(path)
        if first is None:
            first, first_path = shapes, path
            continue
        if shapes != first:
            names = sorted(set(shapes) | set(first))
            name = next(n for n in names if shapes.get(n) != first.get(n))
            raise RunFileError(
                f"sample file {path}: array {name!r} is {_describe(shapes.get(name))}, but "
                f"{_describe(first.get(name))} in {first_path} (samples of different models "
                "in one directory)"
            )


def _describe(spec: tuple[tuple[int, ...], str] | None) -> str:
    return "absent" if spec is None else f"shape {spec[0]} dtype {np.dtype(spec[1]).name}"


class SampleSet:
    """Samples listed in a manifest; weights are read from disk on demand.

    Attributes:
      entries: manifest entries sorted by step (``file, step, epoch, temperature, lr,
        energy, bytes, sha256`` and BMA metrics when collected with validation data).
    """

    def __init__(self, directory: str, entries: Sequence[dict[str, Any]]) -> None:
        self.directory = directory
        self.entries = sorted(entries, key=lambda e: e["step"])

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def steps(self) -> list[int]:
        """The samples' steps, ascending."""
        return [e["step"] for e in self.entries]

    def weights(self, i: int) -> list[np.ndarray]:
        """The weight list of sample ``i`` (for ``model.set_weights``)."""
        path = check_entry(self.directory, self.entries[i])
        with np.load(path) as z:
            names = sorted(k for k in z.files if k.startswith("w"))
            return [z[k] for k in names]

    def check_finite(self) -> None:
        """Reads every sample's weights: a :class:`RunFileError` naming the first file and array
        holding a NaN or an infinity (a sample :class:`tf_vrre.SampleCollector` writes is finite: it
        refuses a diverged chain's weights, so such a file was changed or written by another tool).
        The Bayesian model average of such a sample would be NaN."""
        for entry in self.entries:
            path = os.path.join(self.directory, entry["file"])
            with np.load(path) as z:
                for name in sorted(k for k in z.files if k.startswith("w")):
                    w = z[name]
                    if w.dtype.kind in "fc" and not np.isfinite(w).all():
                        bad = int(np.size(w) - np.count_nonzero(np.isfinite(w)))
                        raise RunFileError(
                            f"sample file {path} (step {entry['step']}): weight array {name!r} holds {bad} "
                            f"non-finite value(s) (NaN or inf) of {np.size(w)}; such a sample cannot be averaged "
                            "(tf_vrre writes finite samples only: the file was changed after it was written): move "
                            "it out of the directory"
                        )

    def __iter__(self) -> Iterator[list[np.ndarray]]:
        for i in range(len(self)):
            yield self.weights(i)

    def predict(self, model: Any, x: Any, batch_size: int = 256, output: str = "logits") -> np.ndarray:
        """Bayesian model average ``mean_i softmax(model_i(x))`` (``output="probabilities"``:
        no softmax), streaming over the samples (one in memory at a time)."""
        if output not in ("logits", "probabilities"):
            raise ValueError(f"output must be 'logits' or 'probabilities', got {output!r}")
        if not len(self):
            raise ValueError(f"no samples in {self.directory}")
        total: np.ndarray | None = None
        for w in self:
            model.set_weights(w)
            p = np.asarray(model.predict(x, batch_size=batch_size, verbose=0), np.float64)
            p = softmax(p) if output == "logits" else p
            total = p if total is None else total + p
        assert total is not None  # len(self) > 0
        return np.asarray(total / len(self))


def softmax(z: np.ndarray) -> np.ndarray:
    """Softmax over the last axis (float64)."""
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def load_samples(directory: str | os.PathLike[str]) -> SampleSet:
    """Reads ``directory/manifest.json`` and checks every listed file and their shapes.

    Checks: the manifest's structure, each file's size and SHA-256, and that every sample
    holds the same arrays with the same shapes and dtypes.

    Raises:
      ValueError: naming the manifest, or the missing / truncated / mismatched sample file.

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0,
      ...                 callbacks=[tf_vrre.SampleCollector("runs/toy/samples", every=4)])
      >>> samples = load_samples("runs/toy/samples")
      >>> probs = samples.predict(net(), x[:3])   # BMA of the cold chain
      >>> len(samples), probs.shape
      (2, (3, 2))
    """
    directory = os.fspath(directory)
    manifest = read_manifest(directory)
    for entry in manifest["entries"]:
        check_entry(directory, entry)
    check_shapes(directory, manifest["entries"])
    return SampleSet(directory, manifest["entries"])


def locate(run: str | os.PathLike[str]) -> tuple[str | None, str | None]:
    """``(swaps_dir or None, samples_dir or None)`` of a run directory.

    Rule: ``RUN/swaps.csv`` -> ``RUN`` is the swap log; else ``RUN/swaps/swaps.csv``.
    ``RUN/manifest.json`` -> ``RUN`` holds the samples; else ``RUN/samples/manifest.json``.

    Raises:
      ValueError: ``run`` is not a directory, or holds neither a swap log nor samples.

    Example:
      >>> os.makedirs("runs/a/swaps")
      >>> open("runs/a/swaps/swaps.csv", "w").close()
      >>> locate("runs/a")
      ('runs/a/swaps', None)
    """
    run = os.fspath(run)
    if not os.path.isdir(run):
        raise ValueError(f"run {run!r} is not a directory")
    swaps = next((d for d in (run, os.path.join(run, "swaps")) if os.path.isfile(os.path.join(d, "swaps.csv"))), None)
    samples = next((d for d in (run, os.path.join(run, "samples")) if os.path.isfile(os.path.join(d, MANIFEST))), None)
    if swaps is None and samples is None:
        raise ValueError(
            f"run {run!r} has no swap log (swaps.csv or swaps/swaps.csv) and no samples "
            "(manifest.json or samples/manifest.json)"
        )
    return swaps, samples
