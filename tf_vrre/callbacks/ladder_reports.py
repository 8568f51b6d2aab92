"""What the :class:`tf_vrre.LadderTuner` says when a round ends: one printed line (``verbose``)
and its warnings, each once per ``fit`` and pointing at the ``fit`` call (the range kept for the
chains' mode changes, too few chains, too wide, a revised number of chains, none measured).  The
texts are :mod:`tf_vrre.callbacks.ladder_advice`'s; :class:`RoundReports` is a mixin of the tuner
(it reads the tuner's record, floor and bounds).
"""

import numpy as np

import tf_vrre._user_warning as _user_warning
import tf_vrre.callbacks.ladder_advice as ladder_advice
from tf_vrre.runs import ladder_file
from tf_vrre.sgmcmc import proposal as proposals
from tf_vrre.sgmcmc import tuning

WARN_MIN_ATTEMPTS = 20
"""A round tells whether K is far too small only when every pair was attempted this often."""


class RoundReports:
    """The ended round's printed line and warnings (each warning once per ``fit``)."""

    def _report(self, record):
        """The ended round in one printed line (``verbose``), and its warnings (at the ``fit`` call)."""
        steps = f"round {record['round']} (steps {record['start_step']}-{record['end_step']})"
        if self.verbose:
            found = "no barrier" if record["barrier"] is None else f"Lambda = {record['barrier']:.3g}"
            found += "" if record["rejection"] is None else f", rejection {np.round(record['rejection'], 3).tolist()}"
            kept = "" if record["kept"] is None else " (kept)"
            moves = "" if record["mode_changes"] is None else f", mode changes per state {record['mode_changes']}"
            print(
                f"LadderTuner {steps}: {found}{moves}, temperatures "
                f"{[float(f'{t:.4g}') for t in record['new_temperatures']]}{kept}"
            )
        if record["kept"] is not None:
            hint = "; use longer rounds (first_round_steps)" if record["barrier"] is None else ""
            _user_warning.warn(f"LadderTuner: {steps} keeps its ladder: {record['kept']}{hint}")
        self._maybe_warn(record, record["attempts"])
        if record["end_step"] >= self.tuning_steps:
            self._warn_at_the_end()

    def _warn_once(self, key, message, record):
        if message is not None and key not in self._warned:
            self._warned[key] = record
            _user_warning.warn(message)

    def _maybe_warn(self, record, attempts):
        """The round's warnings (each once per ``fit``): the range kept for its mode changes, too
        wide, too few chains (these two on rounds that attempted every pair often enough)."""
        s = self.model
        K = s.num_chains
        if self._affordable is not None and tuning.too_cold_to_cross(
            self._affordable, self._floor, float(record["temperatures"][0])
        ):  # the round that set the floor: the coldest hot end with mode changes
            seen = next(r for r in ladder_file.completed(self._doc) if r.get("hot_floor") == self._floor)
            self._warn_once(
                "cross", ladder_advice.too_cold_to_cross(record, K, self._affordable, self._floor, seen), record
            )
        if record["barrier"] is None or np.min(attempts) < WARN_MIN_ATTEMPTS:
            return
        proposal = None
        if s.proposal is None:
            try:
                proposal = proposals.ProposedLadder(cold=record["temperatures"][0]).temperatures(
                    K, proposals.num_weights(s.chains[0])
                )
            except ValueError:  # steps below float32's resolution: no ladder to show
                proposal = None
        wide = ladder_advice.too_wide(record, self._bounds is not None, proposal)
        self._warn_once("chains", ladder_advice.too_few_chains(record, K, wide), record)

    def _warn_at_the_end(self):
        """At the end of the tuning phase: a revised number of chains, or none measured at all."""
        measured = ladder_file.measured(self._doc)
        if not measured:
            ended = ladder_file.completed(self._doc)
            self._warn_once("none", ladder_advice.unrecommendable(ended, tuning.MIN_ROUND_ATTEMPTS), None)
            return
        first = self._warned.get("chains")
        if first is not None:
            self._warn_once("revised", ladder_advice.revised(first, measured[-1]), measured[-1])
