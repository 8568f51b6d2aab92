"""The tuning record of a run, ``ladder.json``: written by :class:`tf_vrre.LadderTuner`, read by
:mod:`tf_vrre.diagnostics.ladder_report` (no TensorFlow).

Layout::

    {"format": "tf_vrre.ladder/1", "run": identity, "tuner": the tuner's get_config,
     "tuning_steps": T, "round_ends": [steps], "initial": {"step", "temperatures", "learning_rates"},
     "target_acceptance": r or null,                            # CorrectedSwap(correction="auto")
     "rounds": [{"round", "start_step", "start_attempts", "start_swaps", "temperatures",
                 "learning_rates",                              # written when the round starts
                 "end_step", "attempts", "swaps", "rejection", "pair_barrier", "barrier",
                 "rejection_sum", "recommended_chains", "round_trip_rate",
                 "new_temperatures", "new_learning_rates", "correction",  # added when it ends
                 "swap_noise": {"energies", "sigma2", "penalty_nats"}},  # optional (older records lack it)
                ...]}

A round's ``temperatures`` are the ladder in force during it, its ``attempts`` / ``swaps`` the
per-pair counts of the round, ``rejection`` / ``barrier`` what they say about that ladder, and
``new_temperatures`` the ladder set at its end (the last round's is the ladder of the rest of the
run); ``swap_noise`` the swap rule's noise estimate ``sigma2`` per pair at the round's end, with
its penalty ``delta^2 sigma2 / 2`` in nats and the energies it was measured on (``"mini-batch"`` or
``"control variates"``), which the advisor reads (:func:`tf_vrre.diagnostics.advice.from_run`).  The file is rewritten atomically at every round start and end.
"""

import os

from tf_vrre.runs.samples import read_json, write_json

FILE = "ladder.json"
FORMAT = "tf_vrre.ladder/1"
END_FIELDS = (
    "end_step",
    "attempts",
    "swaps",
    "rejection",
    "pair_barrier",
    "barrier",
    "rejection_sum",
    "recommended_chains",
    "round_trip_rate",
    "new_temperatures",
    "new_learning_rates",
    "correction",
)


def locate(run: str | os.PathLike) -> str | None:
    """The ``ladder.json`` of a run directory (``RUN/ladder.json`` or ``RUN/ladder/ladder.json``),
    or ``None``."""
    run = os.fspath(run)
    if os.path.isfile(run):
        return run
    return next((p for p in (os.path.join(run, FILE), os.path.join(run, "ladder", FILE)) if os.path.isfile(p)), None)


def read(path: str | os.PathLike) -> dict:
    """The record in ``path`` (a file or a run directory), checked; ``ValueError`` naming the file
    when it is not a tuning record."""
    found = locate(path)
    if found is None:
        raise ValueError(f"{os.fspath(path)!r} holds no {FILE} (written by tf_vrre.LadderTuner(directory=...))")
    try:
        doc = read_json(found)
    except ValueError as err:
        raise ValueError(f"{found}: unreadable tuning record ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found_format = doc.get("format") if isinstance(doc, dict) else None
        raise ValueError(f"{found}: not a tuning record (format {found_format!r}, expected {FORMAT!r})")
    rounds = doc.get("rounds")
    if not isinstance(rounds, list) or not all(isinstance(r, dict) and "start_step" in r for r in rounds):
        raise ValueError(f"{found}: 'rounds' must be a list of round records")
    return doc


def write(path: str | os.PathLike, doc: dict) -> None:
    """Writes ``doc`` to ``path`` atomically."""
    write_json(path, doc)


def completed(doc: dict) -> list[dict]:
    """The rounds of ``doc`` that ended."""
    return [r for r in doc.get("rounds", []) if "end_step" in r]
