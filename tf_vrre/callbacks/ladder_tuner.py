"""The :class:`LadderTuner` callback: the sampler chooses its own temperature ladder during a tuning
phase, reports the communication barrier and how many chains it needs, then fixes the ladder.

The numerics (rejection -> barrier -> equal-share ladder, learning rates, rounds, the number of
chains) are in :mod:`tf_vrre.sgmcmc.ladder`; the record it writes is :mod:`tf_vrre.runs.ladder_file`,
kept across runs by :mod:`tf_vrre.callbacks.ladder_record`; what a round's end prints and warns
is :mod:`tf_vrre.callbacks.ladder_reports`.
"""

import math
import os
from collections.abc import Callable, Sequence

import keras
import numpy as np

import tf_vrre.callbacks.chain_tracks as chain_tracks
import tf_vrre.callbacks.ladder_record as ladder_record
import tf_vrre.callbacks.ladder_reports as ladder_reports
from tf_vrre import _keras_compat, numerics
from tf_vrre.runs import atomic, ladder_file, ownership
from tf_vrre.sampler.replica_exchange import require_sampler
from tf_vrre.sgmcmc import ladder, mode_changes, schedules, tuning

DEFAULT_EXPONENT = 0.25
"""``eta_h = eta_1 (tau_h / tau_1)^0.25``: the paper's hand-tuned CIFAR ladder (``tau_2 = 5 tau_1``,
``eta_2 = 1.5 eta_1``) has ``a = log 1.5 / log 5 = 0.25``."""

SETS = ("temperatures", "learning_rates")
"""The sampler's hyperparameters a tuner sets (learning rates unless ``learning_rates=None``)."""


def _serialize_rule(rule):
    return rule if rule is None or isinstance(rule, float) else keras.saving.serialize_keras_object(rule)


@keras.saving.register_keras_serializable(package="tf_vrre")
class LadderTuner(ladder_record.TuningRecord, ladder_reports.RoundReports, keras.callbacks.Callback):
    """Tunes the temperature ladder (and the learning rates with it) during a tuning phase.

    Non-reversible parallel tempering's adaptive scheme (Syed et al. 2021, JRSS-B, Algorithm 4,
    as Pigeons.jl runs it) on the sampler's own swaps.  The tuning phase, steps
    ``0 .. tuning_steps`` of the run, is cut into rounds of doubling length
    (``first_round_steps``, twice that, ...; the last round takes the rest).  At the end of each
    round the tuner

    1. reads every adjacent pair's attempts and accepted swaps in the round from the sampler's
       counters (``attempt_count`` / ``swap_count``: the swap rule actually in force, with its
       noise penalty and correction ``F``).  A round in which some pair was attempted fewer than
       :data:`tf_vrre.sgmcmc.tuning.MIN_ROUND_ATTEMPTS` (6) times measures nothing: it keeps
       the ladder, records why (``kept``) and no barrier, and warns;
    2. turns each rejection rate ``r`` into the pair's barrier ``(2 / sqrt(pi)) erfinv(r)``
       (:func:`tf_vrre.sgmcmc.ladder.pair_barriers`), cumulates them over inverse temperature
       ``b = 1 / tau`` and interpolates monotonically (PCHIP): the global barrier ``Lambda`` and the
       local barrier ``lambda(b)``;
    3. places the new inverse temperatures so that every pair has the same share of ``Lambda``
       (equal rejection rates: the ladder with the most round trips).  The cold temperature never
       moves (slot 0 samples the posterior); the hottest moves only with ``bounds`` or a
       :class:`tf_vrre.ProposedLadder` (then towards its ``target_rejection`` per pair), and
       never colder than a hot end at which the chains were seen to change modes (below);
    4. computes the learning rates that follow the new ladder (unless ``learning_rates`` is
       ``None``), checks both as the sampler's setters do, and only then sets both
       (``sampler.set_temperatures``, ``sampler.set_learning_rates``) and records the round's
       end: a round ends in one step or not at all;
    5. with ``CorrectedSwap(correction="auto", target_acceptance=r)``: after every executed
       block of the tuning phase, adapts ``log F`` towards the acceptance rate ``r`` over all
       attempted pairs (:func:`tf_vrre.sgmcmc.tuning.correction_step`) and sets it through
       ``sampler.set_correction``; each round records the ``F`` it ended with.

    **Mode changes.**  Equal rejection says how well the chains exchange states, not whether the
    hottest one crosses the posterior's barriers.  During each round the tuner traces up to 128
    weights of every chain's state, following the states through their swaps
    (:mod:`tf_vrre.callbacks.chain_tracks`), and counts each state's moves between two
    well-separated levels of a weight (:mod:`tf_vrre.sgmcmc.mode_changes`; the record's
    ``mode_changes``, per state).  Once a round saw the chains change modes (two states moved
    between the levels of a weight while the energy no longer fell), the hottest temperature
    never moves below that round's, or below the initial one if that is colder
    (``hot_floor``; a range widened during burn-in may come back to where it started): when the swaps of ``K`` chains would need a colder one,
    the range stays and a warning says how many chains it needs.  The traces of all the rounds
    since the hot end was last set count together, and a colder hot end waits for the last two
    rounds, the longest, about three quarters of the tuning phase
    (:func:`tf_vrre.sgmcmc.tuning.next_hot_temperature`), unless every pair rejects nearly all
    swaps: mode changes of the range it started with have that long to show.  Moves of states
    that all go the same way (:func:`tf_vrre.sgmcmc.mode_changes.relaxing`: the network's
    weights settling, or first crossings whose returns have not been seen yet) are no mode
    change, but while they show, a round before the last moves the hot end colder only half way
    (in log temperature), so first crossings of a barrier have a round to show their returns.

    After the last round the ladder (and ``F``) stays fixed: from step ``tuning_steps`` on the
    sampler is a fixed-ladder sampler, and the cold chain's law is that of a sampler built with the final
    ladder.  Collect samples only after the tuning phase (``SampleCollector(burn_in_steps=
    tuning_steps)``): during it the ladder, so the chain's law, changes.

    **Blocks.**  Callbacks run after each executed block (``steps_per_execution`` steps): a round
    ends at the first block end at or after its due step, the record keeps the step where it
    ended (``end_step``, beside ``due_step``), and the next round lasts its full length from
    there.  The tuning phase then ends at the first block end at or after ``tuning_steps`` (the
    last round's ``end_step``); choose ``tuning_steps`` at a block end to fix the ladder exactly
    there.

    **Reports.**  ``logs`` get at every epoch end (from the first, NaN until a round has ended, so
    ``CSVLogger`` keeps the columns; put the tuner before the ``CSVLogger`` in the callback list):
    ``ladder_round`` (rounds ended), ``ladder_barrier`` (``Lambda`` of the last round),
    ``ladder_rejection_<p>`` per pair and ``ladder_recommended_chains``
    (:func:`tf_vrre.sgmcmc.ladder.recommended_chains`: about ``2 Lambda``) and
    ``ladder_mode_changes`` (the most any slot made in the last round that counted them).
    ``UserWarning`` s (:mod:`tf_vrre.callbacks.ladder_advice`) say when ``K`` is under half the
    recommendation (each pair then rejects most swaps, and the barrier estimate itself is a
    lower bound; later rounds revise the estimate, and a last round that does says so), when
    every pair rejects nearly all swaps (the ladder is too wide: narrowed, or how to narrow it),
    when the range is kept for the mode changes, and when no round measured a barrier (no number
    of chains can be recommended).  With ``directory`` every round (ladder,
    counts, rejection, barriers, the new ladder) is recorded in ``directory/ladder.json``
    (:mod:`tf_vrre.runs.ladder_file`); :mod:`tf_vrre.diagnostics.ladder_report` reads it back and draws
    the local barrier with the ladder before and after tuning.

    **Resume.**  The ladder and ``F`` in force live in the sampler's variables (a
    :class:`tf_vrre.Checkpoint` restores them; ``F`` moves by the counters' change since the last
    block, read again at the restored step).  What a round also needs, its start step, the
    counters there and the step it is due to end, is recorded in ``ladder.json`` when the round
    starts; a resumed run reads it back (rounds that started after the restored step are
    dropped and replayed), so a run killed mid-round and resumed sets the same ladders and
    draws the same samples as the uninterrupted run.  Without ``directory`` a run resumed in
    another process starts the interrupted round afresh at the restored step (a warning says so).
    A record that does not read as one (:func:`tf_vrre.runs.ladder_file.read` checks every
    field and the run identity's fingerprint) is refused in one line unless ``overwrite``.

    **Guards.**  Refused before training, each in one line: fewer than 3 chains, no swap rule,
    temperatures given as a schedule, a tuning phase longer than the ``fit``, ``bounds`` that do
    not contain the cold temperature (compared in float32, as the sampler holds it), a
    learning-rate rule that gives a rate that is not finite and ``> 0`` in float32 at the
    ladder in force or at the widest ladder the tuner may set, and a second callback of the
    same ``fit`` that sets the temperatures (another tuner, a
    :class:`tf_vrre.HyperparameterScheduler`), or the learning rates while this tuner does.
    Warnings point at the ``fit`` call.

    Args:
      tuning_steps: length of the tuning phase in steps (use the burn-in); must end within the
        ``fit`` (checked when training begins, when ``fit`` knows its length).
      first_round_steps: length of the first round (``>= 1``); rounds double from there.
      learning_rates: how learning rates follow the ladder: an exponent ``a`` (default
        ``0.25``) for ``eta_h = eta_1 (tau_h / tau_1)^a`` with the cold chain's ``eta_1`` kept
        (``a = 0``: every chain at the cold chain's rate); a callable ``temperatures -> learning
        rates`` (register it with ``keras.saving.register_keras_serializable`` for
        ``get_config``); or ``None`` to leave them alone.  Why 0.25: it is what the paper's
        hand-tuned CIFAR ladder implies; hotter chains sit on flatter parts of the landscape and
        tolerate somewhat larger steps, while the stability limit of a locally quadratic energy
        does not depend on the temperature, so the growth is kept slow (x1.78 at 10x the
        temperature).
      bounds: ``None`` (the hottest temperature stays, unless the sampler's temperatures are a
        :class:`tf_vrre.ProposedLadder`: then its bounds) or ``(low, high)``, the temperature
        range of the ladder, ``low <= cold < high``: the hottest temperature then moves in
        ``(cold, high]`` to where ``K`` is the recommended number of chains, or with a
        :class:`tf_vrre.ProposedLadder` to where every pair rejects its ``target_rejection``
        (:func:`tf_vrre.sgmcmc.ladder.hot_temperature`), never below a hot end at which the
        chains changed modes.
      directory: where ``ladder.json`` goes (created; one writer at a time; files of another run
        are refused unless ``overwrite``); ``None``: nothing is written.
      overwrite: replace a tuning record of another run in ``directory``.
      verbose: print one line per round.

    Example:
      >>> sampler = toy_sampler(num_chains=4, temperatures=[0.01, 0.02, 0.03, 0.04],
      ...                       swap=tf_vrre.CorrectedSwap(pairs="deo"))      # even/odd swaps: every pair often
      >>> tuner = LadderTuner(tuning_steps=48, first_round_steps=16, directory="runs/toy/ladder")
      >>> history = sampler.fit(sampler.make_dataset(16, repeat=True), steps_per_epoch=8, epochs=6,
      ...                       verbose=0, callbacks=[tuner])
      >>> [(r["start_step"], r["end_step"], r["attempts"]) for r in tuner.record["rounds"]]   # rounds of 16 and 32 steps
      [(0, 16, [8, 8, 8]), (16, 48, [16, 16, 16])]
      >>> history.history["ladder_round"]                        # rounds ended, at each epoch end
      [0.0, 1.0, 1.0, 1.0, 1.0, 2.0]
      >>> tuner.record["initial"]["temperatures"]
      [0.01, 0.02, 0.03, 0.04]
      >>> t = tuner.record["rounds"][-1]["new_temperatures"]     # the ladder from step 48 on
      >>> t[0], t[-1], t == [float(str(v)) for v in sampler.state.ladder.temperature.numpy()]   # cold and hot ends kept
      (0.01, 0.04, True)
    """

    def __init__(
        self,
        tuning_steps: int,
        first_round_steps: int = 32,
        learning_rates: float | Callable | None = DEFAULT_EXPONENT,
        bounds: Sequence[float] | None = None,
        directory: str | os.PathLike | None = None,
        overwrite: bool = False,
        verbose: int = 0,
    ) -> None:
        super().__init__()
        tuning.round_ends(tuning_steps, first_round_steps)  # the integer checks, naming the argument
        self.tuning_steps = int(tuning_steps)
        self.first_round_steps = int(first_round_steps)
        self.learning_rates = tuning.check_learning_rate_rule(learning_rates)
        self.bounds = None if bounds is None else tuning.check_bounds(bounds, None)
        if directory is not None and (not isinstance(directory, (str, os.PathLike)) or not str(directory)):
            raise TypeError(f"directory must be a path or None, got {directory!r}")
        if not isinstance(overwrite, bool):
            raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
        self.directory = None if directory is None else str(directory)
        self.overwrite = overwrite
        self.verbose = int(verbose)
        self._doc = None  # the tuning record (kept in memory; on disk with directory)
        self._started = False
        self._tracks = None  # the traced weights of the round in progress (ChainTracks)

    def hyperparameters_set(self) -> tuple[str, ...]:
        """The sampler's hyperparameters this tuner sets: the temperatures, and the learning
        rates unless ``learning_rates=None`` (a second callback setting one of them in the same
        ``fit`` is refused before it starts)."""
        return SETS if self.learning_rates is not None else SETS[:1]

    # --- checks before training ----------------------------------------------------------------
    def on_train_begin(self, logs=None):
        s = require_sampler(self.model, "LadderTuner")
        self._check(s)
        self._path = None
        run = ownership.run_identity(s, tuner=self._settings())
        if self.directory is not None:
            ownership.claim(self.directory, self, self.params, "LadderTuner")
            try:
                self._adopt(run)
                atomic.remove_temporaries(
                    self.directory, {ladder_file.FILE, chain_tracks.FILE}
                )  # a killed run's half-written files
            except Exception:
                ownership.release(self)
                raise
        elif self._doc is None or ownership.difference(self._doc.get("run"), run) is not None:
            self._doc = self._new_doc(run)  # kept from an earlier fit of this sampler, else a new one
        self._started = False
        self._warned = {}
        self._tracks = chain_tracks.ChainTracks(s)
        if self.directory is not None:  # the round's traces go with every committed checkpoint
            s.listeners.add(("LadderTuner", self.directory), on_checkpoint_committed=self._save_tracks)

    def _check(self, s):
        """Everything that can be refused is refused here, before anything is written."""
        if s.swap_rule is None:
            raise ValueError("LadderTuner: the sampler has no swap rule (num_chains >= 3 and swap != None)")
        if s.num_chains < 3:
            raise ValueError(
                f"LadderTuner: num_chains must be >= 3 to tune a ladder, got num_chains={s.num_chains} "
                "(with two chains both ends are fixed and there is nothing to place)"
            )
        if any(schedules.is_schedule(v) for v in s.temperatures):
            raise ValueError(
                "LadderTuner: the sampler's temperatures are a schedule; the tuner sets them, so "
                "give the sampler numbers"
            )
        if self.learning_rates is not None and any(schedules.is_schedule(v) for v in s.learning_rates):
            raise ValueError(
                "LadderTuner: the sampler's learning_rates are a schedule; give the sampler numbers "
                "or build the tuner with learning_rates=None"
            )
        temps = s.state.ladder.temperature.numpy()
        self._target = None if s.proposal is None else s.proposal.target_rejection
        self._bounds = self.bounds
        if self._bounds is None and s.proposal is not None:
            self._bounds = s.proposal.resolved_bounds(s.data_size)
        if self._bounds is not None:
            tuning.check_bounds(self._bounds, float(temps[0]))
        if self.learning_rates is not None:  # a rule that fails should fail now, not at a round's end
            hottest = float(temps[-1]) if self._bounds is None else self._bounds[1]
            try:
                tuning.check_learning_rates_over_range(
                    self.learning_rates, temps, float(s.state.ladder.learning_rate.numpy()[0]), hottest
                )
            except ValueError as err:
                raise ValueError(f"LadderTuner: {err}") from None
        epochs, steps = (self.params or {}).get("epochs"), (self.params or {}).get("steps")
        if epochs is not None and steps is not None:
            step0 = int(s.state.step.numpy())
            end = step0 + (int(epochs) - int(_keras_compat.initial_epoch(s) or 0)) * int(steps)
            if self.tuning_steps > end:
                raise ValueError(
                    f"LadderTuner: tuning_steps={self.tuning_steps} is longer than the run, which ends at "
                    f"step {end} ({epochs} epochs of {steps} steps): the ladder would never be fixed. "
                    f"Use tuning_steps <= {end}, or train longer"
                )

    def _settings(self):
        """What identifies the tuning of a run (not where it is written or how verbosely)."""
        config = self.get_config()
        return {k: config[k] for k in ("tuning_steps", "first_round_steps", "learning_rates", "bounds")}

    # --- the rounds ----------------------------------------------------------------------------
    def _counts(self):
        s = self.model
        return [int(v) for v in s.state.swap.attempt_count.numpy()], [int(v) for v in s.state.swap.swap_count.numpy()]

    def _ladder(self):
        """The ladder in force: temperatures and learning rates as float32 holds them, written as the
        shortest decimals that give back the same float32 (0.01, not 0.009999999776)."""
        s = self.model
        f32 = lambda v: float(str(np.float32(v)))  # noqa: E731
        return [f32(v) for v in s.state.ladder.temperature.numpy()], [
            f32(v) for v in s.state.ladder.learning_rate.numpy()
        ]

    def _due(self, record):
        """The step ``record``'s round is due to end (recorded; computed for older records)."""
        due = record.get("due_step")
        return due if due is not None else self._round_end(record["start_step"], record["round"])

    def _round_end(self, start, index):
        return tuning.round_end(start, index, self.tuning_steps, self.first_round_steps)

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._start()

    def on_train_batch_end(self, batch, logs=None):
        """A round ends at the end of the first executed block that reaches its due step (with
        ``steps_per_execution > 1`` possibly later); the next one starts there and lasts its full
        length from there (:func:`tf_vrre.sgmcmc.tuning.round_end`)."""
        if not self._started or self._round is None:
            return
        step = int(self.model.state.step.numpy())
        self._adapt_correction(step)
        self._tracks.record(step)
        record = self._doc["rounds"][-1]
        if step < self._due(record):
            return
        self._finish(record, step)
        if step < self.tuning_steps:
            self._round += 1
            self._open(self._round, step)
        else:
            self._round = None
        self._write()

    def _adapt_correction(self, step):
        """``correction="auto"``: one stochastic-approximation step of ``log F`` from this block's swaps."""
        s = self.model
        if not s.swap_rule.adaptive_correction:  # nothing to adapt: no host read of the counters
            return
        counts = self._counts()
        attempts = sum(counts[0]) - sum(self._last_counts[0])
        swaps = sum(counts[1]) - sum(self._last_counts[1])
        self._last_counts = counts
        if attempts == 0:
            return
        log_f = tuning.correction_step(
            math.log(float(s.state.swap.correction.numpy())), s.swap_rule.target_acceptance, attempts, swaps, step
        )
        s.set_correction(math.exp(log_f))

    def _finish(self, record, step):
        """Ends a round at ``step`` in one step: the new ladder and its learning rates computed and
        checked first, then both set in the sampler, then the round's end recorded.  A rule that
        fails ends nothing (``ValueError``: the sampler and the record keep the round open)."""
        s = self.model
        attempts, swaps = self._counts()
        n = np.subtract(attempts, record["start_attempts"])
        k = np.subtract(swaps, record["start_swaps"])
        counts, one_way = mode_changes.assess(self._tracks.traces())  # since the hot end was last set
        hot = float(record["temperatures"][-1])
        if mode_changes.changes_modes(counts, self._tracks.energy()):  # this hot end crosses: never go colder
            hot = min(hot, float(self._doc["initial"]["temperatures"][-1]))  # than it, or the initial one
            self._floor = hot if self._floor is None else min(self._floor, hot)
        planned = len(tuning.round_ends(self.tuning_steps, self.first_round_steps))
        last = self._due(record) >= self.tuning_steps
        narrow = record["round"] >= planned - 2 or last
        cautious = not last and one_way  # one-way moves: half way, their returns may show
        measured, new_t = self._measure(np.asarray(record["temperatures"], np.float64), n, k, narrow, cautious)
        new_lr = None
        if new_t is not None and self.learning_rates is not None:
            try:
                new_lr = tuning.ladder_learning_rates(
                    new_t, float(s.state.ladder.learning_rate.numpy()[0]), self.learning_rates
                )
            except ValueError as err:
                raise ValueError(
                    f"LadderTuner: round {record['round']} (steps {record['start_step']}-{step}) cannot end: {err}; "
                    "nothing was set (the ladder and learning rates are those of the round)"
                ) from None
        if new_t is not None:  # everything checked: set both
            s.set_temperatures([float(v) for v in new_t])
            if new_lr is not None:
                s.set_learning_rates([float(v) for v in new_lr])
            if np.float32(new_t[-1]) != np.float32(record["temperatures"][-1]):
                self._tracks.reset(step)  # a new hot end: its mode changes are counted afresh
        temps_now, lrs_now = self._ladder()
        # the swap noise the rule charged at the round's end (its sigma2 window): what the advisor
        # weighs (tf_vrre.diagnostics.run_advice.from_run) against the barrier
        sigma2 = np.asarray(s.state.swap.sigma2.numpy(), np.float64)
        temps = np.asarray(record["temperatures"], np.float64)
        delta = 1.0 / temps[:-1] - 1.0 / temps[1:]
        noise = {
            "energies": "mini-batch" if s.variance_reduction is None else "control variates",
            "sigma2": sigma2.tolist(),
            "penalty_nats": (delta**2 * sigma2 / 2.0).tolist(),
        }
        record.update(
            {
                "end_step": step,
                "attempts": n.tolist(),
                "swaps": k.tolist(),
                **measured,
                "new_temperatures": temps_now,
                "new_learning_rates": lrs_now,
                "correction": float(s.state.swap.correction.numpy()),
                "mode_changes": counts,
                "hot_floor": self._floor,
                "swap_noise": noise,
            }
        )
        self._report(record)

    def _measure(self, temps, attempts, swaps, narrow, cautious):
        """What one round's counts say: the record's measured fields and ``kept``, and the new
        ladder (``None``: the ladder is kept; no round moves it on fewer than
        :data:`tf_vrre.sgmcmc.tuning.MIN_ROUND_ATTEMPTS` attempts of some pair)."""
        self._affordable = None  # the hot end the swaps alone would choose, when the floor overrides it
        few = tuning.too_few_attempts(attempts)
        if few is not None:
            return {
                "kept": f"too few swap attempts to measure: {few}",
                **dict.fromkeys(ladder_file.MEASURED_FIELDS),
            }, None
        r = ladder.rejection_rates(attempts, swaps)
        barrier = ladder.Barrier(temps, r, attempts=attempts)
        measured = {
            "kept": None,
            "rejection": r.tolist(),
            "pair_barrier": barrier.pair_barrier.tolist(),
            "barrier": barrier.total,
            "rejection_sum": barrier.rejection_sum,
            "recommended_chains": ladder.recommended_chains(barrier.total),
            "round_trip_rate": ladder.round_trip_rate(r),
        }
        try:
            hot = None
            if self._bounds is not None:
                hot, self._affordable = tuning.next_hot_temperature(
                    barrier, self._bounds, self._target, self._floor, narrow, cautious
                )
            new_t = ladder.equal_share_ladder(barrier, hot)
            numerics.check_hyperparameter("temperatures", new_t.tolist(), num_chains=temps.size)  # as the setter does
        except ValueError as err:
            measured["kept"] = f"no usable new ladder ({err})"
            new_t = None
        return measured, new_t

    # --- reports -------------------------------------------------------------------------------
    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        doc = self._doc or {"rounds": []}
        done = ladder_file.completed(doc)
        P = self.model.num_chains - 1
        measured = ladder_file.measured(doc)
        last = measured[-1] if measured else None  # the newest barrier: a kept round measures none
        logs["ladder_round"] = float(len(done))
        logs["ladder_barrier"] = float(last["barrier"]) if last else math.nan
        logs["ladder_recommended_chains"] = float(last["recommended_chains"]) if last else math.nan
        counted = [r["mode_changes"] for r in done if r.get("mode_changes") is not None]
        logs["ladder_mode_changes"] = float(max(counted[-1])) if counted else math.nan
        for p in range(P):
            logs[f"ladder_rejection_{p}"] = float(last["rejection"][p]) if last else math.nan

    def on_train_end(self, logs=None):
        self._started = False  # (the sampler drops the checkpoint listener after every on_train_end)
        ownership.release(self)

    @property
    def record(self) -> dict | None:
        """The tuning record (the content of ``ladder.json``; kept in memory without ``directory``)."""
        return self._doc

    def get_config(self):
        return {
            "tuning_steps": self.tuning_steps,
            "first_round_steps": self.first_round_steps,
            "learning_rates": _serialize_rule(self.learning_rates),
            "bounds": None if self.bounds is None else list(self.bounds),
            "directory": self.directory,
            "overwrite": self.overwrite,
            "verbose": self.verbose,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("learning_rates"), dict):
            config["learning_rates"] = keras.saving.deserialize_keras_object(config["learning_rates"])
        return cls(**config)
