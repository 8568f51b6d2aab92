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
from typing import Any

import numpy as np
import tensorflow as tf

import tf_vrre.diagnostics.advice as advice
import tf_vrre.diagnostics.pilot_callback as pilot_callback
from tf_vrre.runs import atomic
from tf_vrre.sampler.replica_exchange import ReplicaExchangeSampler

QUENCHES = 10
"""States of the hottest chain quenched in a pilot by default (and 2 of the cold chain's): the second
half is cut into this many stretches, and in each the hottest chain's state of lowest mini-batch
energy (the sampler's own ``batch_energy``) is quenched at the stretch's end."""


def minimum_steps(period: int, window: int = 1, steps_per_execution: int = 1) -> int:
    """The shortest pilot :func:`advise` accepts, at refresh period ``m = period``.

    The pilot attempts its first swap after the sigma^2 window of ``window`` steps, and takes its
    first snapshot at step ``steps // 2``; the control variates' noise is measured at the offsets
    :data:`tf_vrre.diagnostics.pilot_callback.OFFSETS` of ``m`` that follow within the pilot, at least the first,
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
    first = pilot_callback.measured_offsets(period)[0] + 2 * (steps_per_execution - 1)
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
    half) ``2 + len(pilot_callback.OFFSETS)`` passes of every chain over ``examples``; the quenches
    (``quenches`` of the hottest chain and 2 of the cold one: :data:`tf_vrre.diagnostics.pilot_callback.QUENCH_STEPS` batches each,
    then a pass over ``examples``); the cold and hottest chain's outputs on ``probes`` inputs at
    every step of the second half."""
    passes = (
        pilot_callback.snapshot_blocks(steps, period, blocks)
        * (2 + len(pilot_callback.OFFSETS))
        * num_chains
        * examples
    )
    quench = (quenches + 2) * (pilot_callback.QUENCH_STEPS * batch_size + examples + probes)
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
            f"{pilot_callback.measured_offsets(int(period))[0]} steps after a snapshot (the first offset, m / 4, of the refresh period m={period}); "
            f"give steps >= {need}"
        )
    arrays = tf.nest.flatten(data)
    if not arrays or any(len(a) != sampler.data_size for a in arrays):
        raise ValueError(
            f"advise: data must be the training arrays, (x, y) or x, with data_size={sampler.data_size} examples"
        )
    return int(period), int(window)


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
    pilot = pilot_callback.PilotCallback(
        sampler, xy, probe, int(steps), m, int(blocks), arrays, int(batch_size), seed, int(quenches)
    )
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
    sampler: ReplicaExchangeSampler,
    data: Any,
    steps: int,
    batch_size: int,
    seed: int,
    pilot: pilot_callback.PilotCallback,
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
    sampler: ReplicaExchangeSampler,
    pilot: pilot_callback.PilotCallback,
    m: int,
    batch_size: int,
    steps: int,
    counts: tuple,
    exact: bool,
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
