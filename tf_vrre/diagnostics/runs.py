"""Reading a run directory: the swap log (:class:`SwapLog`) and the collected samples.

A run directory follows the project's contract (``RUN/swaps/`` from
:class:`tf_vrre.SwapLogger`, ``RUN/samples/`` from :class:`tf_vrre.SampleCollector`); a bare
SwapLogger directory (``swaps.csv`` inside) or a bare sample directory (``manifest.json``
inside) is accepted too.  Nothing here imports TensorFlow.
"""

import dataclasses
import os

import numpy as np

from tf_vrre.runs.samples import (
    load_samples,
    locate,  # noqa: F401  (re-export: the rule lives with the other run files)
    read_json,
    read_log,
)

SWAP_COLUMNS = ("step", "pair", "accepted", "accept_prob", "log_ratio", "energy_lo", "energy_hi",
                "temperature_lo", "temperature_hi", "sigma2")


def _read_csv(path, required=(), checks=None):
    """Columns of a CSV log as float arrays (``None`` if absent).  Only a last row torn by a kill
    is dropped; any other unreadable row is a ``ValueError`` naming the file and line
    (:func:`tf_vrre.runs.samples.read_log`), as is a value outside ``checks[column]``
    (``(test, what it must be)``)."""
    if not os.path.isfile(path):
        return None
    header, lines = read_log(path)
    if header is None:
        return {k: np.zeros(0) for k in required}
    missing = [k for k in required if k not in header]
    if missing:
        raise ValueError(f"{path}: missing columns {missing} (is it a tf_vrre SwapLogger file?)")
    rows = []
    for number, row in lines:
        try:
            values = [float(v) for v in row]
        except ValueError:
            raise ValueError(f"{path}, line {number}: a value is not a number ({','.join(row)[:120]!r})") from None
        for column, (test, what) in (checks or {}).items():
            value = values[header.index(column)]
            if not test(value):
                raise ValueError(f"{path}, line {number}: {column} = {value!r}, must be {what}")
        rows.append(values)
    data = np.asarray(rows, np.float64).reshape(-1, len(header))
    return {k: data[:, i] for i, k in enumerate(header)}


def _index(v):
    return np.isfinite(v) and v >= 0 and float(v).is_integer()


SWAP_CHECKS = {"step": (_index, "an integer >= 0"), "pair": (_index, "an integer >= 0"),
               "accepted": (lambda v: v in (0.0, 1.0), "0 or 1"),
               "accept_prob": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
               "temperature_lo": (lambda v: np.isfinite(v) and v > 0, "a finite number > 0"),
               "temperature_hi": (lambda v: np.isfinite(v) and v > 0, "a finite number > 0")}


@dataclasses.dataclass
class SwapLog:
    """The rows of a SwapLogger directory as arrays.

    Attributes:
      directory: the SwapLogger directory.
      num_chains: K (from ``refresh.csv``'s ``c_h`` columns, else the largest pair + 2).
      swaps: ``swaps.csv`` columns (one entry per attempted pair): ``step, pair, accepted,
        accept_prob, log_ratio, energy_lo, energy_hi, temperature_lo, temperature_hi, sigma2``.
      refresh: ``refresh.csv`` columns (``step, sigma2_updated, sigma2_<p>...``) or ``None``.
      epochs: ``epochs.csv`` columns or ``None``.
      start_step, end_step: the steps covered, ``[start_step, end_step)``.
    """

    directory: str
    num_chains: int
    swaps: dict
    refresh: dict
    epochs: dict
    start_step: int
    end_step: int

    @property
    def num_steps(self):
        """Number of steps the log covers."""
        return self.end_step - self.start_step

    def temperatures(self):
        """The ladder ``[K]`` at the last attempt of each pair (``nan`` for a pair never attempted)."""
        t = np.full(self.num_chains, np.nan)
        for p in range(self.num_chains - 1):
            rows = np.flatnonzero(self.swaps["pair"] == p)
            if rows.size:
                t[p], t[p + 1] = self.swaps["temperature_lo"][rows[-1]], self.swaps["temperature_hi"][rows[-1]]
        return t


def read_swap_log(directory):
    """Reads ``swaps.csv`` (required), ``refresh.csv`` and ``epochs.csv`` of a SwapLogger directory.

    The covered steps are ``[start_step, end_step)``: ``end_step`` is one past the last step
    any file records; ``start_step`` is the first recorded step, or ``end_step`` minus the
    steps that ``epochs.csv`` counts when that is earlier (0 for a log written from the
    start of training).

    Raises:
      ValueError: naming the directory or file when ``swaps.csv`` is missing or malformed.

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> log = read_swap_log("runs/toy/swaps")
      >>> log.num_chains, log.num_steps
      (2, 16)
    """
    directory = os.fspath(directory)
    swaps = _read_csv(os.path.join(directory, "swaps.csv"), SWAP_COLUMNS, SWAP_CHECKS)
    if swaps is None:
        raise ValueError(f"no swap log in {directory!r}: swaps.csv is missing")
    refresh = _read_csv(os.path.join(directory, "refresh.csv"), ("step", "sigma2_updated"),
                        {"step": SWAP_CHECKS["step"]})
    epochs = _read_csv(os.path.join(directory, "epochs.csv"), ("epoch", "steps"),
                       {"epoch": SWAP_CHECKS["step"], "steps": (_index, "an integer >= 0")})
    if refresh is not None and any(k.startswith("c_") for k in refresh):
        num_chains = sum(k.startswith("c_") for k in refresh)
    else:
        num_chains = int(swaps["pair"].max()) + 2 if swaps["pair"].size else 2
    if swaps["pair"].size and (swaps["pair"].min() < 0 or swaps["pair"].max() > num_chains - 2):
        raise ValueError(f"{directory}/swaps.csv: pair indices outside 0..{num_chains - 2}")
    steps = [a["step"] for a in (swaps, refresh) if a is not None and a["step"].size]
    if not steps:
        return SwapLog(directory, num_chains, swaps, refresh, epochs, 0, 0)
    first = int(min(s.min() for s in steps))
    end = int(max(s.max() for s in steps)) + 1
    if epochs is not None and epochs["steps"].size:
        first = min(first, max(0, end - int(epochs["steps"].sum())))
    return SwapLog(directory, num_chains, swaps, refresh, epochs, first, end)


def read_samples(directory, points=4):
    """Scalar summaries of the collected cold-chain samples, in step order.

    Returns a dict of arrays over the ``S`` samples: ``step``, ``energy`` (the mini-batch
    energy ``U_B`` of the sampled state, see SampleCollector), ``temperature``, ``lr``,
    ``weight_norm`` (``||w||_2`` over all weight arrays) and, when the collector stored
    predictives, ``predictive`` ``[S, V', C]``: the stored ``softmax`` outputs of the first
    ``V' = min(points, V)`` validation points.  Every file's size and checksum is verified
    (:func:`tf_vrre.load_samples`).

    Args:
      directory: a SampleCollector directory.
      points: number of validation points kept (>= 1).

    Raises:
      ValueError: naming the manifest or a missing / corrupt sample file.

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> s = read_samples("runs/toy/samples"); s["energy"].shape
      (8,)
    """
    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1:
        raise ValueError(f"points must be an integer >= 1, got {points!r}")
    sample_set = load_samples(os.fspath(directory))
    out = {k: [] for k in ("step", "energy", "temperature", "lr", "weight_norm", "predictive")}
    for entry in sample_set.entries:
        with np.load(os.path.join(sample_set.directory, entry["file"])) as z:
            ws = [z[k] for k in sorted(z.files) if k.startswith("w")]
            out["weight_norm"].append(float(np.sqrt(sum(np.sum(np.square(w, dtype=np.float64)) for w in ws))))
            if "predictive" in z.files:
                out["predictive"].append(np.asarray(z["predictive"][:points], np.float64))
        for k in ("step", "energy", "temperature", "lr"):
            out[k].append(float(entry[k]))
    if out["predictive"] and len(out["predictive"]) != len(sample_set.entries):
        raise ValueError(f"{directory}: only some samples store a predictive")
    result = {k: np.asarray(v, np.float64) for k, v in out.items() if k != "predictive"}
    result["step"] = result["step"].astype(np.int64)
    if out["predictive"]:
        result["predictive"] = np.stack(out["predictive"])
    return result


def read_run_json(run):
    """``RUN/run.json`` as a dict (``{}`` when absent)."""
    path = os.path.join(os.fspath(run), "run.json")
    if not os.path.isfile(path):
        return {}
    try:
        run = read_json(path)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} is not a readable run.json: {err}") from None
    if not isinstance(run, dict):
        raise ValueError(f"{path} is not a readable run.json: not a JSON object")
    return run
