"""The :class:`tf_vrre.LadderTuner`'s tuning record (``ladder.json``) across runs: a record of
another run refused or replaced, this run's adopted, each round written when it opens, and the
record reconciled with the step a :class:`tf_vrre.Checkpoint` restored (rounds that started after
it dropped and replayed, the traced weights of the round in progress reloaded), so that a resumed
run sets the same ladders as the uninterrupted one.

:class:`TuningRecord` is a mixin of :class:`tf_vrre.LadderTuner` (it reads the tuner's settings,
counters and ladder); the file's format is :mod:`tf_vrre.runs.ladder_file`.
"""

import os

import numpy as np

import tf_vrre._user_warning as _user_warning
from tf_vrre.runs import ladder_file, ownership
from tf_vrre.sgmcmc import tuning


class TuningRecord:
    """The tuner's record of its rounds: adopted or created when training begins, reconciled with
    the restored step at the first epoch, a round appended when it opens, written after each change."""

    def _adopt(self, run):
        """Refuses (or with ``overwrite`` replaces) a tuning record of another run, or one that does
        not read as a record (:func:`tf_vrre.runs.ladder_file.read`); loads this run's."""
        self._path = os.path.join(self.directory, ladder_file.FILE)
        if not os.path.exists(self._path):
            self._doc = self._new_doc(run)
            return
        try:
            stored = ladder_file.read(self._path)
        except ValueError as err:
            if not self.overwrite:
                raise ValueError(f"LadderTuner: {err}; move it away or pass overwrite=True") from None
            stored = None
        diff = ownership.difference(None if stored is None else stored.get("run"), run)
        if diff is not None:
            if not self.overwrite:
                raise ownership.refuse(self.directory, f"a tuning record ({ladder_file.FILE})", diff)
            stored = None
        self._doc = stored if stored is not None else self._new_doc(run)

    def _new_doc(self, run):
        return {
            "format": ladder_file.FORMAT,
            "run": run,
            "tuner": self._settings(),
            "target_acceptance": self.model.swap_rule.target_acceptance,
            "tuning_steps": self.tuning_steps,
            "initial": None,
            "rounds": [],
        }

    def _start(self):
        """First epoch of this fit (after every callback's ``on_train_begin``, so after a
        :class:`tf_vrre.Checkpoint` restore): reconcile the record with the restored step.

        Rounds that started after the restored step are dropped, the end of a round that ended
        after it is forgotten: the round in progress at the restored step continues as recorded.
        """
        step0 = int(self.model.state.step.numpy())
        self._started = True
        self._last_counts = self._counts()
        rounds = [dict(r) for r in self._doc["rounds"] if r["start_step"] <= step0]
        for r in rounds:
            if r.get("end_step", -1) > step0:
                for k in ladder_file.END_FIELDS:
                    r.pop(k, None)
        self._doc["rounds"] = rounds
        last = rounds[-1] if rounds else None
        ended = [r for r in rounds if "end_step" in r]
        self._floor = ended[-1].get("hot_floor") if ended else None
        self._round = None
        if last is not None and "end_step" not in last:
            self._round = last["round"]  # a resume inside this round
            segment = _segment_start(rounds)
            if self.directory is None or not self._tracks.load(self.directory, segment, step0):
                self._tracks.reset(segment)
            if step0 > segment:  # the restored state: recorded as the uninterrupted run did
                self._tracks.record(step0)
        elif last is not None and last["end_step"] < self.tuning_steps:
            self._tracks.reset(step0)
            self._restart(last["round"] + 1, last["end_step"], step0)  # its successor's start is lost
        elif last is None and step0 < self.tuning_steps:
            self._tracks.reset(step0)
            ends = tuning.round_ends(self.tuning_steps, self.first_round_steps)
            index = next(i for i, e in enumerate(ends) if step0 < e)
            self._restart(index, ends[index - 1] if index else 0, step0)
        self._write()

    def _restart(self, index, due_start, step0):
        """Opens round ``index`` at the restored step (it should have started at ``due_start``)."""
        if step0 > due_start:
            _user_warning.warn(
                f"LadderTuner: no record of the start of tuning round {index} (resumed at step {step0} "
                f"without the tuning record of this run); the round restarts at step {step0}, so the "
                "ladders may differ from an uninterrupted run's. Give the tuner a directory for exact "
                "resumes"
            )
        self._round = index
        self._open(index, step0)

    def _open(self, index, step):
        attempts, swaps = self._counts()
        temps, lrs = self._ladder()
        if self._doc.get("initial") is None:
            self._doc["initial"] = {"step": step, "temperatures": temps, "learning_rates": lrs}
        self._doc["rounds"].append(
            {
                "round": index,
                "start_step": step,
                "due_step": self._round_end(step, index),
                "start_attempts": attempts,
                "start_swaps": swaps,
                "temperatures": temps,
                "learning_rates": lrs,
            }
        )

    def _write(self):
        if self._path is not None:
            ladder_file.write(self._path, self._doc)

    def _save_tracks(self):
        """A checkpoint was committed: the traces of the round in progress up to its step go to
        ``directory`` (so a resume from it counts the same mode changes)."""
        if self._round is not None and self._tracks is not None:
            self._tracks.save(self.directory, int(self.model.listeners.committed_step))


def _segment_start(rounds: list) -> int:
    """The step since which the hot end of ``rounds`` has not moved (where its traces began)."""
    start = rounds[0]["start_step"]
    for r in rounds:
        if "end_step" in r and np.float32(r["new_temperatures"][-1]) != np.float32(r["temperatures"][-1]):
            start = r["end_step"]
    return start
