"""The tuning record of a run, ``ladder.json``: written by :class:`tf_vrre.LadderTuner`, read by
:mod:`tf_vrre.diagnostics.ladder_report` (no TensorFlow).

Layout::

    {"format": "tf_vrre.ladder/1", "run": identity, "tuner": the tuner's settings,
     "tuning_steps": T, "initial": {"step", "temperatures", "learning_rates"},
     "target_acceptance": r or null,                            # CorrectedSwap(correction="auto")
     "rounds": [{"round", "start_step", "due_step", "start_attempts", "start_swaps",
                 "temperatures", "learning_rates",              # written when the round starts
                 "end_step", "attempts", "swaps", "kept", "rejection", "pair_barrier", "barrier",
                 "rejection_sum", "recommended_chains", "round_trip_rate",
                 "new_temperatures", "new_learning_rates", "correction",
                 "mode_changes", "hot_floor",                    # added when it ends
                 "swap_noise": {"energies", "sigma2", "penalty_nats"}},  # optional (older records lack it)
                ...]}

A round's ``temperatures`` are the ladder in force during it, ``due_step`` where it was due to
end (:func:`tf_vrre.sgmcmc.tuning.round_end`) and ``end_step`` where it ended (the end of the
executed block that reached ``due_step``); its ``attempts`` / ``swaps`` are the per-pair counts
of the round, ``rejection`` / ``barrier`` what they say about that ladder, and
``new_temperatures`` the ladder set at its end (the last round's is the ladder of the rest of the
run).  ``mode_changes`` are the moves of each chain's state between two levels of a traced weight
since the hot end was last set, up to the round's end (``null``: too few records to count;
:mod:`tf_vrre.sgmcmc.mode_changes`), ``hot_floor`` the coldest hottest temperature at which the
chains changed modes so far (``null``: none yet), below which the tuner does not move the hot
end.  ``swap_noise`` is the swap rule's noise estimate ``sigma2`` per pair at the round's end, with
its penalty ``delta^2 sigma2 / 2`` in nats and the energies it was measured on (``"mini-batch"`` or
``"control variates"``), which the advisor reads (:func:`tf_vrre.diagnostics.run_advice.from_run`).
``kept`` is ``null``, or why the round kept its ladder; a round with too few swap attempts per
pair (:data:`tf_vrre.sgmcmc.tuning.MIN_ROUND_ATTEMPTS`) measured nothing, and its ``rejection``
... ``round_trip_rate`` are ``null``.  Records written before ``due_step`` and ``kept`` existed
have neither (and a ``round_ends`` list of the ends as scheduled), older ones no ``correction``
(nor ``mode_changes``, ``hot_floor``, ``swap_noise``) either.  The file is
rewritten atomically at every round start and end.

:func:`read` checks the whole layout (types, ``K`` or ``K - 1`` entries per list, finite numbers,
increasing temperatures and steps, counts with ``0 <= swaps <= attempts``, the run identity's
fingerprint) and names the file and the first bad field in a one-line ``ValueError``.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import tf_vrre.runs.ownership as ownership
from tf_vrre.runs.samples import read_json, write_json

FILE = "ladder.json"
FORMAT = "tf_vrre.ladder/1"
START_FIELDS = ("round", "start_step", "due_step", "start_attempts", "start_swaps", "temperatures", "learning_rates")
"""A round's fields written when it starts (``due_step`` absent from older records)."""
MEASURED_FIELDS = ("rejection", "pair_barrier", "barrier", "rejection_sum", "recommended_chains", "round_trip_rate")
"""What a round's swaps say about its ladder (``null`` when it had too few attempts)."""
END_FIELDS = (
    "end_step",
    "attempts",
    "swaps",
    "kept",
    *MEASURED_FIELDS,
    "new_temperatures",
    "new_learning_rates",
    "correction",
    "mode_changes",
    "hot_floor",
    "swap_noise",
)
"""A round's fields added when it ends."""
OPTIONAL_END_FIELDS = ("kept", "correction", "mode_changes", "hot_floor", "swap_noise")
"""End fields absent from records written before they existed."""


def locate(run: str | os.PathLike) -> str | None:
    """The ``ladder.json`` of a run directory (``RUN/ladder.json`` or ``RUN/ladder/ladder.json``),
    the file itself, or ``None``.

    Raises:
      ValueError: the directory holds both (naming both: which one describes the run is not
        for the reader to guess).
    """
    run = os.fspath(run)
    if os.path.isfile(run):
        return run
    found = [p for p in (os.path.join(run, FILE), os.path.join(run, "ladder", FILE)) if os.path.isfile(p)]
    if len(found) > 1:
        raise ValueError(f"{run} holds two tuning records, {found[0]} and {found[1]}: move one away or name the file")
    return found[0] if found else None


def read(path: str | os.PathLike) -> dict:
    """The record in ``path`` (a file or a run directory), checked field by field.

    Raises:
      ValueError: one line naming the file and the first field that is missing or wrong (or the
        directory holding no record, or two).
    """
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
    _Checker(found).document(doc)
    return doc


def write(path: str | os.PathLike, doc: dict) -> None:
    """Writes ``doc`` to ``path`` atomically."""
    write_json(path, doc)


def completed(doc: dict) -> list[dict]:
    """The rounds of ``doc`` that ended."""
    return [r for r in doc.get("rounds", []) if "end_step" in r]


def measured(doc: dict) -> list[dict]:
    """The rounds of ``doc`` that ended and measured a barrier (not kept for too few attempts)."""
    return [r for r in completed(doc) if r.get("barrier") is not None]


# ---- the checks -----------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class _Checker:
    """Checks a record read from ``path``; each failure is a one-line ``ValueError`` naming the
    file and the field."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.K: int | None = None

    def fail(self, field: str, what: str, value: Any) -> None:
        raise ValueError(f"{self.path}: {field}: {what}, got {_short(value)}")

    def field(self, obj: dict, key: str, where: str) -> Any:
        if key not in obj:
            raise ValueError(f"{self.path}: {where}{key}: missing")
        return obj[key]

    def integer(self, name: str, v: Any, minimum: int = 0) -> int:
        if not _is_int(v) or v < minimum:
            self.fail(name, f"must be an integer >= {minimum}", v)
        return v

    def number(
        self, name: str, v: Any, low: float = -math.inf, high: float = math.inf, positive: bool = False
    ) -> float:
        if not _is_number(v) or not low <= v <= high or (positive and not v > 0):
            bound = "> 0" if positive else f"in [{low:g}, {high:g}]"
            self.fail(name, f"must be a finite number {bound}", v)
        return float(v)

    def swap_noise(self, name: str, v: Any) -> None:
        if not isinstance(v, dict) or v.get("energies") not in ("mini-batch", "control variates"):
            self.fail(name, 'must be {"energies": "mini-batch" or "control variates", "sigma2", "penalty_nats"}', v)
        assert self.K is not None
        for key in ("sigma2", "penalty_nats"):
            if any(x < 0 for x in self.vector(f"{name}.{key}", v.get(key), self.K - 1)):
                self.fail(f"{name}.{key}", "must be >= 0", v.get(key))

    def vector(self, name: str, v: Any, size: int, kind: str = "number") -> list:
        ok = _is_int if kind == "count" else _is_number
        if not isinstance(v, list) or len(v) != size or not all(ok(x) for x in v):
            what = "integers >= 0" if kind == "count" else "finite numbers"
            self.fail(name, f"must be a list of {size} {what}", v)
        if kind == "count" and any(x < 0 for x in v):
            self.fail(name, "counts must be >= 0", v)
        return v

    def ladder(self, name: str, temps: Any, lrs: Any, lr_name: str) -> None:
        if self.K is None:
            if not isinstance(temps, list) or len(temps) < 2:
                self.fail(name, "must be a list of at least 2 temperatures", temps)
            self.K = len(temps)
        self.vector(name, temps, self.K)
        if any(t <= 0 for t in temps) or any(b <= a for a, b in zip(temps, temps[1:])):
            self.fail(name, "temperatures must be > 0 and strictly increasing", temps)
        self.vector(lr_name, lrs, self.K)
        if any(v <= 0 for v in lrs):
            self.fail(lr_name, "learning rates must be > 0", lrs)

    def counts(self, where: str, attempts: Any, swaps: Any, names: tuple[str, str]) -> None:
        assert self.K is not None
        self.vector(where + names[0], attempts, self.K - 1, "count")
        self.vector(where + names[1], swaps, self.K - 1, "count")
        if any(k > n for n, k in zip(attempts, swaps)):
            self.fail(where + names[1], f"must be <= {names[0]} per pair", swaps)

    def document(self, doc: dict) -> None:
        run = self.field(doc, "run", "")
        if run is not None and ownership.edited(run) is not None:
            raise ValueError(f"{self.path}: run: {ownership.edited(run)}")
        if not isinstance(self.field(doc, "tuner", ""), dict):
            self.fail("tuner", "must be an object (the tuner's settings)", doc["tuner"])
        T = self.integer("tuning_steps", self.field(doc, "tuning_steps", ""), 1)
        target = doc.get("target_acceptance")
        if target is not None and not (_is_number(target) and 0 < target < 1):
            self.fail("target_acceptance", "must be null or a number in (0, 1)", target)
        ends = doc.get("round_ends")  # written by older versions: the ends as scheduled
        if ends is not None and (not isinstance(ends, list) or not all(_is_int(e) and e > 0 for e in ends)):
            self.fail("round_ends", "must be a list of steps", ends)
        initial = self.field(doc, "initial", "")
        if initial is not None:
            if not isinstance(initial, dict):
                self.fail("initial", "must be null or an object", initial)
            self.integer("initial.step", self.field(initial, "step", "initial."))
            self.ladder(
                "initial.temperatures",
                self.field(initial, "temperatures", "initial."),
                self.field(initial, "learning_rates", "initial."),
                "initial.learning_rates",
            )
        rounds = self.field(doc, "rounds", "")
        if not isinstance(rounds, list):
            self.fail("rounds", "must be a list of round records", rounds)
        previous = None
        for i, r in enumerate(rounds):
            if not isinstance(r, dict):
                self.fail(f"rounds[{i}]", "must be an object", r)
            self.round(f"rounds[{i}].", r, T)
            if previous is not None:
                if "end_step" not in previous:
                    self.fail(f"rounds[{i - 1}].end_step", "missing in a round followed by another", None)
                if r["round"] <= previous["round"]:
                    self.fail(
                        f"rounds[{i}].round", f"must be above the previous round's {previous['round']}", r["round"]
                    )
                if r["start_step"] < previous["end_step"]:
                    self.fail(
                        f"rounds[{i}].start_step", f"must be >= the previous round's end_step {previous['end_step']}", r
                    )
            previous = r

    def round(self, where: str, r: dict, T: int) -> None:
        self.integer(where + "round", self.field(r, "round", where))
        start = self.integer(where + "start_step", self.field(r, "start_step", where))
        if start >= T:
            self.fail(where + "start_step", f"must be below tuning_steps {T}", start)
        if "due_step" in r:
            due = self.integer(where + "due_step", r["due_step"], start + 1)
            if due > T:
                self.fail(where + "due_step", f"must be <= tuning_steps {T}", due)
        self.ladder(
            where + "temperatures",
            self.field(r, "temperatures", where),
            self.field(r, "learning_rates", where),
            where + "learning_rates",
        )
        self.counts(
            where,
            self.field(r, "start_attempts", where),
            self.field(r, "start_swaps", where),
            ("start_attempts", "start_swaps"),
        )
        if "end_step" not in r:
            return
        missing = [k for k in END_FIELDS if k not in r and k not in OPTIONAL_END_FIELDS]
        if missing:
            self.fail(where + missing[0], "missing in an ended round", None)
        self.integer(where + "end_step", r["end_step"], start + 1)
        self.counts(where, r["attempts"], r["swaps"], ("attempts", "swaps"))
        kept = r.get("kept")
        if kept is not None and not isinstance(kept, str):
            self.fail(where + "kept", "must be null or the reason the round kept its ladder", kept)
        self.ladder(
            where + "new_temperatures", r["new_temperatures"], r["new_learning_rates"], where + "new_learning_rates"
        )
        if "correction" in r:
            self.number(where + "correction", r["correction"], positive=True)
        if r.get("mode_changes") is not None:
            assert self.K is not None
            self.vector(where + "mode_changes", r["mode_changes"], self.K, "count")
        if r.get("hot_floor") is not None:
            self.number(where + "hot_floor", r["hot_floor"], positive=True)
        if "swap_noise" in r:
            self.swap_noise(where + "swap_noise", r["swap_noise"])
        if all(r[k] is None for k in MEASURED_FIELDS):
            if kept is None:
                self.fail(where + "barrier", "null in a round that does not say why it kept its ladder (kept)", None)
            return
        assert self.K is not None
        rejection = self.vector(where + "rejection", r["rejection"], self.K - 1)
        if any(not 0 <= v <= 1 for v in rejection):
            self.fail(where + "rejection", "rates must be in [0, 1]", rejection)
        barriers = self.vector(where + "pair_barrier", r["pair_barrier"], self.K - 1)
        if any(v < 0 for v in barriers):
            self.fail(where + "pair_barrier", "barriers must be >= 0", barriers)
        self.number(where + "barrier", r["barrier"], 0.0)
        self.number(where + "rejection_sum", r["rejection_sum"], 0.0, self.K - 1.0)
        self.integer(where + "recommended_chains", r["recommended_chains"], 2)
        self.number(where + "round_trip_rate", r["round_trip_rate"], 0.0, 0.5)
