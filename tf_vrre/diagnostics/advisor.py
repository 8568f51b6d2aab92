"""``advise``: a short pilot of a replica-exchange sampler that measures what decides whether
replica exchange, and then variance reduction, pays on the user's own model.

The pilot trains the sampler for ``steps`` steps as it is configured (its ladder, swap rule and
energies) and, in the second half, measures on a fixed subset of the training data (all of it
when ``N`` is at most ``measure_examples``):

- per adjacent pair, the energy difference ``U_lo - U_hi`` (prior included), the noise variance
  of the mini-batch estimator of it at the batch size ``n``, ``(N^2 / n)(1 - n / N) Var_i(d_i)``
  with ``d_i = l_i(beta_lo) - l_i(beta_hi)``, and the noise variance of the control-variate
  estimator, the same with ``d_i`` replaced by its change since a snapshot taken ``o`` steps
  earlier, at offsets ``o`` across one refresh period ``m``: snapshots the advisor takes for the
  measurement alone (the sampler needs no control variates).  A pilot whose second half is
  shorter than a period measures the offsets that fit (at least the first, ``m / 4``;
  :func:`minimum_steps`): as a chain moves away from its snapshot the noise grows with the offset,
  so the mean over the early offsets is a lower bound of the mean over a period, and the advice
  says so (a recommendation of variance reduction that rests on it is a best guess);
- at every step, every chain's mini-batch energy on the step's batch (the sampler's
  ``batch_energy``): their differences are the mini-batch estimates of the pairs' energy
  differences, whose spread over the pilot, less the measured noise, is the spread of the exact
  differences (:func:`tf_vrre.diagnostics.swap_acceptance.acceptance_model`);
- states of the hottest chain quenched to their nearest mode (and two of the cold chain's), the
  outputs of the cold and the hottest chain on probe inputs at every step, the seconds of a step
  and of a forward pass over the data.

:func:`tf_vrre.diagnostics.advice.recommend` turns these into the recommendation.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import keras
import numpy as np
import tensorflow as tf

import tf_vrre.diagnostics.advice as advice
from tf_vrre.runs import atomic
from tf_vrre.sampler.replica_exchange import ReplicaExchangeSampler
from tf_vrre.sgmcmc import energy

OFFSETS = (0.25, 0.5, 0.75, 1.0)
"""Where in a refresh period of ``m`` steps the control variates' noise is measured (fractions)."""

QUENCHES = 10
"""States of the hottest chain quenched in a pilot by default (and 2 of the cold chain's): the second
half is cut into this many stretches, and in each the hottest chain's state of lowest mini-batch
energy (the sampler's own ``batch_energy``) is quenched at the stretch's end."""

QUENCH_STEPS = 25
"""Momentum-0.9 gradient steps of a quench, at the cold chain's learning rate on mini-batches
(a few relaxation times of a chain: its momentum form relaxes in about ``1 / (10 eta H)`` steps)."""


def _blocks(steps: int, period: int, blocks: int) -> int:
    """Snapshot blocks that fit in the second half of a pilot of ``steps`` steps."""
    return max(1, min(blocks, (steps - steps // 2) // (period + 1)))


def _offsets(period: int) -> list[int]:
    """The offsets (steps after a snapshot) at which the control variates' noise is measured."""
    return sorted({max(1, round(period * q)) for q in OFFSETS})


def minimum_steps(period: int, window: int = 1, steps_per_execution: int = 1) -> int:
    """The shortest pilot :func:`advise` accepts, at refresh period ``m = period``.

    The pilot attempts its first swap after the sigma^2 window of ``window`` steps, and takes its
    first snapshot at step ``steps // 2``; the control variates' noise is measured at the offsets
    :data:`OFFSETS` of ``m`` that follow within the pilot, at least the first,
    ``o_1 = max(1, round(m / 4))``: ``ceil(steps / 2) >= o_1``.  So::

        steps >= max(window + 1, 2 o_1 - 1)

    A pilot of ``2 m - 1`` steps or more measures the whole period.  With ``steps_per_execution =
    e > 1`` the pilot sees every ``e``-th step, and the snapshot and the measurement each come up to
    ``e - 1`` steps late: ``o_1 + 2 (e - 1)`` in place of ``o_1`` (never more than ``2 (m + 1)``).

    Args:
      period: the control variates' refresh period ``m``, an integer >= 1.
      window: the swap rule's sigma^2 window (its ``period``, or the control variates').
      steps_per_execution: the sampler's train steps per compiled call.

    Example:
      >>> minimum_steps(400)                      # o_1 = 100: a snapshot at step 99, measured at 199
      199
      >>> minimum_steps(4, window=10)
      11
    """
    for name, v, low in (("period", period, 1), ("window", window, 0), ("steps_per_execution", steps_per_execution, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"minimum_steps: {name} must be an integer >= {low}, got {v!r}")
    first = _offsets(period)[0] + 2 * (steps_per_execution - 1)
    if steps_per_execution > 1:
        return max(window + 1, min(2 * (period + 1), 2 * first - 1))
    return max(window + 1, 2 * first - 1)


def measurement_cost(
    num_chains: int,
    batch_size: int,
    examples: int,
    probes: int,
    blocks: int,
    period: int,
    steps: int,
    quenches: int = QUENCHES,
) -> int:
    """An upper bound on the per-example evaluations :func:`advise`'s measurements add to a pilot of
    ``steps`` steps (forward-only ones counted as one unit, as the control variates' full pass):
    per snapshot block (as many of ``blocks`` as fit, one per ``period + 1`` steps of the second
    half) ``2 + len(OFFSETS)`` passes of every chain over ``examples``; the quenches
    (``quenches`` of the hottest chain and 2 of the cold one: :data:`QUENCH_STEPS` batches each,
    then a pass over ``examples``); the cold and hottest chain's outputs on ``probes`` inputs at
    every step of the second half."""
    passes = _blocks(steps, period, blocks) * (2 + len(OFFSETS)) * num_chains * examples
    quench = (quenches + 2) * (QUENCH_STEPS * batch_size + examples + probes)
    return passes + quench + 2 * probes * (steps - steps // 2)


def steps_within(
    share: float,
    num_chains: int,
    batch_size: int,
    examples: int,
    probes: int,
    blocks: int,
    period: int,
    quenches: int = QUENCHES,
) -> int:
    """The longest pilot whose steps (``num_chains * batch_size`` each) and measurements
    (:func:`measurement_cost`) cost at most ``share`` per-example gradient evaluations.

    Example:
      >>> steps_within(2e5, num_chains=4, batch_size=100, examples=256, probes=1, blocks=3, period=4)
      370
    """
    steps = int(share // (num_chains * batch_size))
    while (
        steps > 0
        and steps * num_chains * batch_size
        + measurement_cost(num_chains, batch_size, examples, probes, blocks, period, steps, quenches)
        > share
    ):
        steps -= 1
    return steps


def _check(sampler: Any, data: Any, steps: Any, batch_size: Any, period: Any) -> tuple[int, int]:
    """One-line ``ValueError`` / ``TypeError`` naming what the advisor needs; ``(m, window)``."""
    if not isinstance(sampler, ReplicaExchangeSampler):
        raise TypeError(f"advise: sampler must be a tf_vrre.ReplicaExchangeSampler, got {type(sampler).__name__}")
    if sampler.num_chains < 2 or sampler.swap_rule is None:
        raise ValueError(
            f"advise: the sampler has no swaps configured (num_chains={sampler.num_chains}, swap="
            f"{None if sampler.swap_rule is None else 'corrected'}); the advisor measures the swaps of a "
            "replica-exchange pilot: build it with num_chains >= 2 on the ladder you consider and a swap rule"
        )
    if getattr(sampler, "_nll_fn", None) is None:
        raise ValueError("advise: compile the sampler first (its loss is the per-example negative log-likelihood)")
    for name, v in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"advise: {name} must be an integer >= 1, got {v!r}")
    if batch_size > sampler.data_size:
        raise ValueError(f"advise: batch_size ({batch_size}) must be <= data_size ({sampler.data_size})")
    vr = sampler.variance_reduction
    if period is None:
        period = vr.period if vr is not None else -(-sampler.data_size // batch_size)
    if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period < 1:
        raise ValueError(f"advise: period (the control variates' m) must be an integer >= 1, got {period!r}")
    window = sampler.swap_rule.period or (vr.period if vr is not None else 1)
    spe = int(getattr(sampler, "steps_per_execution", 1) or 1)
    need = minimum_steps(int(period), window, spe)
    if steps < need:
        raise ValueError(
            f"advise: steps={steps} is too short: a pilot attempts its first swap after the sigma^2 window of "
            f"{window} steps and measures the control variates' noise in its second half, at least "
            f"{_offsets(int(period))[0]} steps after a snapshot (the first offset, m / 4, of the refresh period m={period}); "
            f"give steps >= {need}"
        )
    arrays = tf.nest.flatten(data)
    if not arrays or any(len(a) != sampler.data_size for a in arrays):
        raise ValueError(
            f"advise: data must be the training arrays, (x, y) or x, with data_size={sampler.data_size} examples"
        )
    return int(period), int(window)


class _Pilot(keras.callbacks.Callback):
    """The measurements of :func:`advise` (after every step the callback sees)."""

    def __init__(self, sampler, subset, probe, steps, period, blocks, arrays, batch_size, seed, quenches):
        super().__init__()
        self.s, self.period = sampler, period
        self.x, self.y = subset
        self.arrays, self.batch, self.rng = arrays, batch_size, np.random.default_rng(seed + 1)
        self.probe = tf.constant(probe)
        self.N, K = sampler.data_size, sampler.num_chains
        self.M = len(tf.nest.flatten(self.x)[0])
        half = steps // 2
        count = _blocks(steps, period, blocks)
        self.offsets = _offsets(period)
        self.starts = [half + j * ((steps - half) // count) for j in range(count)]
        self.pending, self.snap_step = [], None
        self.half = half
        spacing = max(1, (steps - half) // max(1, quenches))
        self.inject = [half + spacing * (j + 1) for j in range(quenches) if half + spacing * (j + 1) <= steps]
        self.quenches = len(self.inject)
        self.quenched, self._quencher, self._nll_of = [], None, []
        self._best = None  # (mini-batch energy, weights) of the hottest chain's lowest state in this stretch
        self.snapshots = [sampler.model_fn() for _ in range(K)]
        self.rows, self.cold, self.hot, self.energies = [], [], [], []
        self.spent, self.clock, self.first, self.calls, self.step0 = 0.0, None, None, 0, 0
        self.pass_seconds = []
        self.evaluations = 0  # forward-only evaluations of the measurements and probes (one unit per example)

    def _nlls(self, model):
        """Per-example NLLs on the subset, float64 numpy, in chunks (eager: one trace per model would
        cost more than it saves here)."""
        out = []
        for i in range(0, self.M, 4096):
            part = slice(i, i + 4096)
            x = tf.nest.map_structure(lambda a, part=part: a[part], self.x)
            out.append(self.s.example_nlls(model, x, None if self.y is None else self.y[part]).numpy())
        self.evaluations += self.M
        return np.concatenate(out).astype(np.float64)

    def _prior(self, model):
        return float(energy.prior_energy(model.trainable_weights, self.s.weight_decay).numpy())

    def _measure(self, offset):
        s, N, M, n = self.s, self.N, self.M, self.batch
        cur = [self._nlls(c) for c in s.chains]
        prior = [self._prior(c) for c in s.chains]
        exact = M == N
        row = {"offset": offset, "diff": [], "diff_var": [], "naive_var": [], "vr_var": []}
        for p in range(s.num_chains - 1):
            d = cur[p] - cur[p + 1]
            row["diff"].append(N * d.mean() + prior[p] - prior[p + 1])
            row["diff_var"].append(0.0 if exact else N * N / M * (1 - M / N) * d.var(ddof=1))
            row["naive_var"].append(N * N / n * (1 - n / N) * d.var(ddof=1))
            if offset:
                e = d - (self.snap[p] - self.snap[p + 1])
                row["vr_var"].append(N * N / n * (1 - n / N) * e.var(ddof=1))
            else:
                row["vr_var"].append(math.nan)
        self.rows.append(row)

    def _quench_step(self):
        """A compiled momentum step of the quench model on a batch (``U_B`` = N-scaled NLL + prior)."""
        s, model = self.s, self._quencher
        velocity = [tf.Variable(tf.zeros_like(w), trainable=False) for w in model.trainable_weights]
        scale = float(self.N) / self.batch

        @tf.function
        def step(x, y, lr):
            with tf.GradientTape() as tape:
                nll = tf.reduce_sum(tf.cast(s.example_nlls(model, x, y), tf.float32))
                prior = tf.cast(energy.prior_energy(model.trainable_weights, s.weight_decay), tf.float32)
                u = scale * nll + prior
            for v, w, g in zip(velocity, model.trainable_weights, tape.gradient(u, model.trainable_weights)):
                v.assign(0.9 * v - lr * g)
                w.assign_add(v)

        return velocity, step

    def _quench(self, chain, weights):
        """A state of chain ``chain`` (its ``weights``) descended to its nearest mode: its outputs on
        the probe inputs, and its per-example NLLs on the subset (energy differences are taken paired)."""
        s = self.s
        if self._quencher is None:
            self._quencher = s.model_fn()
            self._velocity, self._step = self._quench_step()
        self._quencher.set_weights(weights)
        for v in self._velocity:
            v.assign(tf.zeros_like(v))
        lr = tf.constant(float(s.state.ladder.learning_rate.numpy()[0]), tf.float32)
        count = len(self.arrays[0])
        for _ in range(QUENCH_STEPS):
            pick = self.rng.choice(count, self.batch, replace=False)
            x = tf.constant(self.arrays[0][pick])
            self._step(x, tf.constant(self.arrays[1][pick]) if len(self.arrays) > 1 else None, lr)
        self.evaluations += QUENCH_STEPS * self.batch + len(self.probe)
        self._nll_of.append((self._nlls(self._quencher), self._prior(self._quencher)))
        self.quenched.append(
            {
                "chain": chain,
                "temperature": float(s.state.ladder.temperature.numpy()[chain]),
                "outputs": self._quencher(self.probe, training=False).numpy().reshape(-1).tolist(),
            }
        )

    def finish(self):
        """Each quenched state's energy above every quenched state of the cold chain, with the
        variance of that paired estimate (0 on the whole data)."""
        N, M = self.N, self.M
        cold = [i for i, q in enumerate(self.quenched) if q["chain"] == 0]
        for q, (nll, prior) in zip(self.quenched, self._nll_of):
            q["energy_above_cold"], q["energy_above_cold_var"] = [], []
            for i in cold:
                d = nll - self._nll_of[i][0]
                q["energy_above_cold"].append(N * d.mean() + prior - self._nll_of[i][1])
                q["energy_above_cold_var"].append(0.0 if M == N else N * N / M * (1 - M / N) * d.var(ddof=1))

    def _snapshot(self):
        t0 = time.perf_counter()
        for snap, chain in zip(self.snapshots, self.s.chains):
            snap.set_weights(chain.get_weights())
        self.snap = [self._nlls(m) for m in self.snapshots]
        self.pass_seconds.append((time.perf_counter() - t0) / len(self.snapshots) * self.N / self.M)

    def on_train_begin(self, logs=None):
        self.step0 = int(self.s.state.step.numpy())

    def on_train_batch_end(self, batch, logs=None):
        t0 = time.perf_counter()
        if self.first is None:  # the first call includes the tracing: time from here
            self.first = t0
        k = int(self.s.state.step.numpy()) - self.step0
        if k > self.half:
            self.energies.append(self.s.state.batch_energy.numpy().copy())
            self.cold.append(self.s.chains[0](self.probe, training=False).numpy())
            self.hot.append(self.s.chains[-1](self.probe, training=False).numpy())
            self.evaluations += 2 * len(self.probe)
        if self.starts and k >= self.starts[0]:  # a snapshot, measured at offset 0
            while self.starts and k >= self.starts[0]:
                self.starts.pop(0)
            self._snapshot()
            self._measure(0)
            self.snap_step, self.pending = k, list(self.offsets)
        elif self.pending and k - self.snap_step >= self.pending[0]:
            offset = k - self.snap_step
            self.pending = [o for o in self.pending if o > offset]
            self._measure(offset)
        if k > self.half and self.inject:  # the hottest chain's lowest state of this stretch, then its quench
            hot = self.s.num_chains - 1
            u = float(self.s.state.batch_energy.numpy()[hot])
            if self._best is None or u < self._best[0]:
                self._best = (u, self.s.chains[hot].get_weights())
            if k >= self.inject[0]:
                first = len(self.inject) == self.quenches
                self.inject = [i for i in self.inject if i > k]
                if first or not self.inject:
                    self._quench(0, self.s.chains[0].get_weights())
                self._quench(hot, self._best[1])
                self._best = None
        self.clock = time.perf_counter()
        self.spent += self.clock - t0
        self.calls += 1

    def step_seconds(self, steps_per_call):
        """Seconds per step of the sampler alone: the pilot's time after its first call, without
        the measurements (``nan`` with a single call)."""
        if self.first is None or self.calls < 2:
            return math.nan
        own = self.spent  # includes the first call's measurement time (counted from its start)
        return max(0.0, (self.clock - self.first) - own) / ((self.calls - 1) * steps_per_call)


def _dataset(sampler, data, batch_size, seed):
    arrays = data if isinstance(data, (tuple, list)) else (data,)
    ref = getattr(sampler, "_reference", None)
    if sampler.variance_reduction is not None and ref is not None and not isinstance(ref.source, tf.data.Dataset):
        return sampler.make_dataset(batch_size, repeat=True, drop_remainder=True)
    ds = tf.data.Dataset.from_tensor_slices(tuple(arrays) if len(arrays) > 1 else arrays[0])
    return ds.shuffle(min(len(arrays[0]), 100_000), seed=seed).repeat().batch(batch_size, drop_remainder=True)


def advise(
    sampler: ReplicaExchangeSampler,
    data: Any,
    steps: int,
    *,
    batch_size: int,
    period: int | None = None,
    probe_inputs: Any = None,
    measure_examples: int = 1024,
    blocks: int = 8,
    quenches: int = QUENCHES,
    seed: int = 0,
    budget: float | None = None,
    directory: str | os.PathLike | None = None,
) -> advice.Advice:
    """Runs a pilot of ``sampler`` and recommends one chain, replica exchange with ``K`` chains, or
    replica exchange with variance-reduced swap energies, with the numbers behind it.

    The pilot is ``steps`` steps of ``sampler.fit`` on ``data`` in batches of ``batch_size`` (the
    sampler advances: give it a pilot sampler, or the tuning phase of a run, on the ladder you
    consider: coldest temperature the posterior, hottest where the chains should cross the
    posterior's barriers).  What it measures and how it decides: :mod:`tf_vrre.diagnostics.advisor`
    and :func:`tf_vrre.diagnostics.advice.recommend`.  Compile the sampler with
    ``steps_per_execution=1`` (or at most ``m / 4``) so that the control variates' noise is
    measured at every offset of its period.

    Args:
      sampler: a compiled :class:`tf_vrre.ReplicaExchangeSampler` with ``num_chains >= 2`` and swaps.
      data: the training data, ``(x, y)`` or ``x``, ``data_size`` examples.
      steps: the pilot's length, longer than the sigma^2 window and with room in its second half
        for at least the first quarter of a refresh period (:func:`minimum_steps`); ``2 m`` steps or
        more measure the control variates' noise over a whole period.  A shorter pilot measures the
        offsets that fit (``numbers["estimators"]["control variates"]["offsets"]``, ``"period_covered"``):
        their noise is a lower bound of the period's, and a recommendation of variance reduction
        that rests on it is a best guess (``confident=False``).
      batch_size: ``n``, the batch of the pilot and of the run it advises on.
      period: the control variates' refresh period ``m`` to measure at (default the sampler's, or one
        epoch ``ceil(N / n)`` without control variates).
      probe_inputs: inputs whose outputs tell the modes apart (default 64 training inputs; pass
        held-out inputs when modes agree on the training data but not elsewhere).
      measure_examples: the subset of the data the noise is measured on (all ``N`` when smaller).
      blocks: snapshots (each measured at four offsets of its period).
      quenches: states of the hottest chain quenched (besides two of the cold chain).
      seed: the order of the pilot's batches and the choice of the subset.
      budget: the gradient evaluations of the run the advice is for (default ten times the pilot's):
        replica exchange is recommended only if the ladder completes a round trip within it.
      directory: if given, ``directory/advice.json`` gets the measurements and the advice
        (``tf-vrre diagnose`` shows it).

    Returns:
      :class:`tf_vrre.diagnostics.advice.Advice` (``.summary()`` for text).

    Example:
      >>> sampler = toy_sampler(num_chains=2, temperatures=[1.0, 1.2])
      >>> a = advise(sampler, (x, y), steps=20, batch_size=16, period=4, blocks=1, quenches=2)
      >>> a.recommendation in tf_vrre.diagnostics.advice.RECOMMENDATIONS
      True
      >>> sorted(a.numbers["estimators"])
      ['control variates', 'exact', 'mini-batch']
    """
    m, _ = _check(sampler, data, steps, batch_size, period)
    arrays, pick, xy, probe = _pilot_inputs(sampler, data, measure_examples, probe_inputs, seed)
    pilot = _Pilot(sampler, xy, probe, int(steps), m, int(blocks), arrays, int(batch_size), seed, int(quenches))
    counts = _run_pilot(sampler, data, int(steps), int(batch_size), seed, pilot)
    measured = _measurements(sampler, pilot, m, int(batch_size), int(steps), counts, len(pick) == sampler.data_size)
    spent = int(steps) * sampler.num_chains * int(batch_size) + pilot.evaluations
    result = advice.recommend(measured, budget=10.0 * spent if budget is None else float(budget))
    result.numbers["pilot"]["measurement_evaluations"] = pilot.evaluations
    if directory is not None:
        os.makedirs(directory, exist_ok=True)
        atomic.write_json(
            os.path.join(directory, advice.FILE),
            {"format": advice.FORMAT, "measurements": measured.to_dict(), "advice": result.to_dict()},
            indent=1,
        )
    return result


def _pilot_inputs(
    sampler: ReplicaExchangeSampler, data: Any, measure_examples: int, probe_inputs: Any, seed: int
) -> tuple[list, np.ndarray, tuple, np.ndarray]:
    """The data as arrays, the subset the noise is measured on (its indices and tensors) and the probe
    inputs (default the subset's first 64)."""
    arrays = [np.asarray(a) for a in (data if isinstance(data, (tuple, list)) else (data,))]
    size = sampler.data_size
    rng = np.random.default_rng(seed)
    pick = np.arange(size) if size <= measure_examples else np.sort(rng.choice(size, measure_examples, replace=False))
    x = tf.constant(arrays[0][pick])
    y = tf.constant(arrays[1][pick]) if len(arrays) > 1 else None
    probe = arrays[0][pick[:64]] if probe_inputs is None else np.asarray(probe_inputs)
    if probe_inputs is None and len(probe) < 2:
        probe = arrays[0][:2]
    return arrays, pick, (x, y), probe


def _run_pilot(
    sampler: ReplicaExchangeSampler, data: Any, steps: int, batch_size: int, seed: int, pilot: _Pilot
) -> tuple[list, list]:
    """``steps`` steps of ``sampler.fit`` with the pilot's callback; the swaps attempted and made per pair."""
    attempts0 = sampler.state.swap.attempt_count.numpy().copy()
    swaps0 = sampler.state.swap.swap_count.numpy().copy()
    sampler.fit(
        _dataset(sampler, data, batch_size, seed),
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        callbacks=[pilot],
    )
    pilot.finish()
    return (
        (sampler.state.swap.attempt_count.numpy() - attempts0).tolist(),
        (sampler.state.swap.swap_count.numpy() - swaps0).tolist(),
    )


def _measurements(
    sampler: ReplicaExchangeSampler, pilot: _Pilot, m: int, batch_size: int, steps: int, counts: tuple, exact: bool
) -> advice.Measurements:
    """What the pilot measured, as :class:`tf_vrre.diagnostics.advice.Measurements`."""
    rows = pilot.rows
    vr = sampler.variance_reduction
    measured = [r["offset"] for r in rows if r["offset"] > 0]
    spe = int(getattr(sampler, "steps_per_execution", 1) or 1)
    attempts, swaps = counts
    return advice.Measurements(
        temperatures=[float(t) for t in sampler.state.ladder.temperature.numpy()],
        batch_size=batch_size,
        data_size=sampler.data_size,
        period=m,
        diff=np.array([r["diff"] for r in rows]),
        diff_var=np.array([r["diff_var"] for r in rows]),
        naive_var=np.array([r["naive_var"] for r in rows]),
        vr_var=np.array([r["vr_var"] for r in rows]),
        offsets=np.array([r["offset"] for r in rows]),
        cold=np.array(pilot.cold),
        hot=np.array(pilot.hot),
        step_seconds=pilot.step_seconds(spe),
        pass_seconds=float(np.median(pilot.pass_seconds)) if pilot.pass_seconds else math.nan,
        pilot_vr_period=None if vr is None else vr.period,
        steps=steps,
        attempts=attempts,
        swaps=swaps,
        exact=exact,
        quenches=pilot.quenched,
        batch_energies=np.array(pilot.energies),
        period_covered=min(1.0, max(measured) / m) if measured else 0.0,
        num_weights=int(sum(np.prod(w.shape) for w in sampler.chains[0].trainable_weights)),
    )
