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
    MANIFEST,
    RunFileError,
    load_samples,
    locate,  # noqa: F401  (re-export: the rule lives with the other run files)
    read_json,
    read_log,
)

METADATA = ("energy", "temperature", "lr")
"""Per-sample numbers a SampleCollector records in each manifest entry (a manifest rebuilt by
``tf-vrre repair`` from the files alone has none of them)."""
SWAP_COLUMNS = (
    "step",
    "pair",
    "accepted",
    "accept_prob",
    "log_ratio",
    "energy_lo",
    "energy_hi",
    "temperature_lo",
    "temperature_hi",
    "sigma2",
)


def _read_csv(path, required=(), checks=None, steps=None):
    """Columns of a CSV log as float arrays (``None`` if absent).  Only a last row torn by a kill
    is dropped; any other unreadable row is a ``RunFileError`` (a ``ValueError``) naming the file
    and line (:func:`tf_vrre.runs.samples.read_log`), as is a value outside ``checks[column]``
    (``(test, what it must be)``) and, with ``steps`` (a :class:`_StepRule`), a ``step`` that
    decreases or lies beyond the run's steps."""
    if not os.path.isfile(path):
        return None
    header, lines = read_log(path)
    if header is None:
        return {k: np.zeros(0) for k in required}
    missing = [k for k in required if k not in header]
    if missing:
        raise RunFileError(f"{path}: missing columns {missing} (is it a tf_vrre SwapLogger file?)")
    rows = []
    for number, row in lines:
        try:
            values = [float(v) for v in row]
        except ValueError:
            raise RunFileError(f"{path}, line {number}: a value is not a number ({','.join(row)[:120]!r})") from None
        for column, (test, what) in (checks or {}).items():
            value = values[header.index(column)]
            if not test(value):
                raise RunFileError(f"{path}, line {number}: {column} = {value!r}, must be {what}")
        if steps is not None:
            steps.check(path, number, values[header.index("step")])
        rows.append(values)
    data = np.asarray(rows, np.float64).reshape(-1, len(header))
    return {k: data[:, i] for i, k in enumerate(header)}


MAX_STEP = 2**53
"""The largest step a log row may name when nothing tighter is known (float64 counts integers
exactly up to here; the step counter itself is an int64)."""


class _StepRule:
    """The steps a log's rows may name: never decreasing (rows are written in step order; a
    resume truncates to the restored step first), and below ``limit`` (``relative``: counted from
    the first step the log records), which ``why`` explains."""

    def __init__(self, limit=None, why="", relative=False):
        self.limit, self.why, self.relative = (
            (MAX_STEP, "the largest step a log counts exactly", False) if limit is None else (limit, why, relative)
        )
        self.first = self.previous = None

    def check(self, path, number, step):
        if self.previous is not None and step < self.previous[0]:
            raise RunFileError(
                f"{path}, line {number}: step {step:.0f} after step {self.previous[0]:.0f} on line "
                f"{self.previous[1]}; the steps of a log never decrease (a damaged row)"
            )
        self.first = step if self.first is None else self.first
        limit = self.first + self.limit if self.relative else self.limit
        if step >= limit:
            raise RunFileError(
                f"{path}, line {number}: step {step:.0f} lies beyond the run, whose steps end before "
                f"{limit:.0f} ({self.why}; a damaged row)"
            )
        self.previous = (step, number)


def run_steps(run):
    """The number of steps a run trains (``schedule.total_steps`` of its ``run.json`` dict, written
    by the image workflow), or ``None`` when it does not say."""
    schedule = run.get("schedule") if isinstance(run, dict) else None
    total = schedule.get("total_steps") if isinstance(schedule, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None


def _index(v):
    return np.isfinite(v) and v >= 0 and float(v).is_integer()


SWAP_CHECKS = {
    "step": (_index, "an integer >= 0"),
    "pair": (_index, "an integer >= 0"),
    "accepted": (lambda v: v in (0.0, 1.0), "0 or 1"),
    "accept_prob": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "temperature_lo": (lambda v: np.isfinite(v) and v > 0, "a finite number > 0"),
    "temperature_hi": (lambda v: np.isfinite(v) and v > 0, "a finite number > 0"),
}


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


def read_swap_log(directory, total_steps=None):
    """Reads ``swaps.csv`` (required), ``refresh.csv`` and ``epochs.csv`` of a SwapLogger directory.

    The covered steps are ``[start_step, end_step)``: ``end_step`` is one past the last step
    any file records; ``start_step`` is the first recorded step, or ``end_step`` minus the
    steps that ``epochs.csv`` counts when that is earlier (0 for a log written from the
    start of training).

    A row's step must not decrease from one row to the next, and must lie within the run:
    below ``total_steps`` when given (:func:`run_steps` of its ``run.json``), else at most the
    steps ``epochs.csv`` counts plus one epoch in progress after the first recorded step, else
    below :data:`MAX_STEP`.  A row beyond (``step = 10**12`` in a 4-step run) is damage, refused
    naming the file and line, not a run of ``10**12`` steps.

    Args:
      directory: the SwapLogger directory (``RUN/swaps``).
      total_steps: the number of steps the run trains, if known.

    Raises:
      RunFileError: naming the directory, or the file and line, when ``swaps.csv`` is missing or
        malformed (a ``ValueError``).

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
    if not os.path.isfile(os.path.join(directory, "swaps.csv")):
        raise RunFileError(f"no swap log in {directory!r}: swaps.csv is missing")
    epochs = _read_csv(
        os.path.join(directory, "epochs.csv"),
        ("epoch", "steps"),
        {"epoch": SWAP_CHECKS["step"], "steps": (_index, "an integer >= 0")},
    )
    if total_steps is not None:
        rule = (total_steps, "run.json schedule.total_steps")
    elif epochs is not None and epochs["steps"].size:
        counted, longest = int(epochs["steps"].sum()), int(epochs["steps"].max())
        rule = (
            counted + longest,
            f"the first step logged plus the {counted} steps epochs.csv counts and at most "
            f"one epoch of {longest} in progress",
            True,
        )
    else:
        rule = (None,)
    swaps = _read_csv(os.path.join(directory, "swaps.csv"), SWAP_COLUMNS, SWAP_CHECKS, _StepRule(*rule))
    refresh = _read_csv(
        os.path.join(directory, "refresh.csv"),
        ("step", "sigma2_updated"),
        {"step": SWAP_CHECKS["step"]},
        _StepRule(*rule),
    )
    if refresh is not None and any(k.startswith("c_") for k in refresh):
        num_chains = sum(k.startswith("c_") for k in refresh)
    else:
        num_chains = int(swaps["pair"].max()) + 2 if swaps["pair"].size else 2
    if swaps["pair"].size and (swaps["pair"].min() < 0 or swaps["pair"].max() > num_chains - 2):
        raise RunFileError(f"{directory}/swaps.csv: pair indices outside 0..{num_chains - 2}")
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
    ``weight_norm`` (``||w||_2`` over all weight arrays), ``excess_temperature`` when any entry
    records it (the heat of gradient noise in the cold slot, ``nan`` where an entry does not) and,
    when the collector stored predictives, ``predictive`` ``[S, V', C]``: the stored outputs
    (class probabilities, or regression outputs) of the first ``V' = min(points, V)``
    held-out inputs (all with ``points=None``); ``recorded``: the fields of :data:`METADATA`
    that every manifest entry records.  A manifest rebuilt by ``tf-vrre repair`` from the sample
    files records none of them: their arrays are then ``nan`` where missing, and a reader leaves
    out what is not in ``recorded``.  Every file's size and checksum is verified
    (:func:`tf_vrre.load_samples`).

    Args:
      directory: a SampleCollector directory.
      points: number of held-out inputs kept (>= 1), or ``None`` for all.

    Raises:
      RunFileError: naming the manifest (and the entry with a metadata value that is not a
        number) or a missing / corrupt sample file.

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> s = read_samples("runs/toy/samples"); s["energy"].shape, s["recorded"]
      ((8,), ('energy', 'temperature', 'lr'))
    """
    if points is not None and (isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1):
        raise ValueError(f"points must be an integer >= 1 or None, got {points!r}")
    sample_set = load_samples(os.fspath(directory))
    out = {k: [] for k in ("step", *METADATA, "weight_norm", "predictive", "excess_temperature")}
    missing = set()
    for entry in sample_set.entries:
        with np.load(os.path.join(sample_set.directory, entry["file"])) as z:
            ws = [z[k] for k in sorted(z.files) if k.startswith("w")]
            out["weight_norm"].append(float(np.sqrt(sum(np.sum(np.square(w, dtype=np.float64)) for w in ws))))
            if "predictive" in z.files:
                out["predictive"].append(np.asarray(z["predictive"][:points], np.float64))
        out["step"].append(entry["step"])
        for k in (*METADATA, "excess_temperature"):
            value = entry.get(k)
            if value is None:
                missing.add(k)  # excess_temperature: none before the first measurement, or not measured
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise RunFileError(
                    f"{os.path.join(sample_set.directory, MANIFEST)}: the entry of {entry['file']} "
                    f"has {k} = {value!r}, not a number"
                )
            out[k].append(np.nan if value is None else float(value))
    if out["predictive"] and len(out["predictive"]) != len(sample_set.entries):
        raise RunFileError(f"{directory}: only some samples store a predictive")
    result = {k: np.asarray(v, np.float64) for k, v in out.items() if k != "predictive"}
    if np.isnan(result["excess_temperature"]).all():  # written without it (older, or not measured)
        del result["excess_temperature"]
    result["step"] = np.asarray(out["step"], np.int64)
    result["recorded"] = tuple(k for k in METADATA if k not in missing)
    if out["predictive"]:
        result["predictive"] = np.stack(out["predictive"])
    return result


def read_run_json(run):
    """``RUN/run.json`` as a dict (``{}`` when absent)."""
    path = os.path.join(os.fspath(run), "run.json")
    if not os.path.lexists(path):
        return {}
    if not os.path.isfile(path):
        raise RunFileError(f"{path} is not a readable run.json: not a regular file (a directory?); move it away")
    try:
        run = read_json(path)
    except (OSError, ValueError) as err:
        raise RunFileError(f"{path} is not a readable run.json: {err}") from None
    if not isinstance(run, dict):
        raise RunFileError(f"{path} is not a readable run.json: not a JSON object")
    return run
