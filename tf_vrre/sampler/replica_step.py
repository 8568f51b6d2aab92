"""The train step under chain-per-replica placement: the recipe of
:meth:`tf_vrre.ReplicaExchangeSampler.train_step`, run by replica ``r`` for the chain it holds.

Per replica, on the whole batch of the step (:func:`tf_vrre.sampler.placements.whole_batches`):

1. *Refresh* (VR, ``step % m == 0``): this chain's snapshot and its whole full-data pass.
2. *Forward + gradient* of this chain; nothing is all-reduced.
3. *Swap energies*: this chain's row (:meth:`tf_vrre.sgmcmc.swap_energy.SwapEnergyEstimator.local_row`,
   with its NLL sum, prior energy and "gradients finite"), then **one** ``all_gather`` of the K
   rows; ordered by rung, they give every replica the one-device :class:`SwapEnergies`.
4. *Swap*: every replica decides the same swaps (same inputs, same stateless seed); an accepted
   swap exchanges rungs between chains (:func:`tf_vrre.sgmcmc.state.exchange_labels`).
5. *Update* with the learning rate, temperature and noise key of the rung the chain now holds (and
   the chain's gradient-noise measurement, if this step takes one, credited to that rung).
6. *Bookkeeping*: as on one device (the swap state is mirrored and updated identically).

So the chain that holds rung ``k`` takes exactly the steps slot ``k`` takes on one device.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

import tf_vrre.sampler.batch as batch
import tf_vrre.sampler.cost as cost
import tf_vrre.sampler.hyperparameters as hyperparameters
import tf_vrre.sampler.invariants as invariants
from tf_vrre.sgmcmc import control_variates, distribute, energy, gradients, seeds
from tf_vrre.sgmcmc.state import exchange_labels


def _rows(sampler: Any, minibatch: Any, forward: Any, step: tf.Tensor, rung: tf.Tensor) -> tuple:
    """This replica's row (swap-energy share, NLL sum, prior, gradients finite) and whether a swap
    may be attempted; the row of every chain after one ``all_gather``."""
    state, possible = sampler.state, None
    nll_sum = tf.reduce_sum(tf.cast(forward.nlls[0], tf.float64))
    finite = tf.cast(invariants.all_finite(forward.grads[0]), tf.float64)
    tail = tf.stack([nll_sum, tf.cast(forward.priors[0], tf.float64), finite])
    row = tail
    if sampler.swap_rule is not None:
        possible = sampler._swap.possible(step, state.swap)
        vr = sampler.variance_reduction
        coef = None if vr is None else tf.gather(tf.convert_to_tensor(state.control_variates.coefficient), rung)
        share = sampler._swap_energy.local_row(minibatch, forward, possible, vr is not None and vr.adaptive, coef)
        row = tf.concat([tail, share], 0)
    return possible, distribute.all_gather(row)


def _refresh(sampler: Any, step: tf.Tensor) -> tf.Tensor:
    """Step 1 (VR only, ``step % m == 0``): this replica's chain's snapshot and its full-data pass
    over the replica's copy of the reference data; whether they were refreshed."""
    s = sampler
    if s.variance_reduction is None:
        return tf.constant(False)
    if s._reference is None:
        raise ValueError(
            "variance_reduction needs the full training data: call "
            "sampler.set_reference_data((x_train, y_train)) before fit"
        )
    reference = s._host.reference(s._reference)  # this replica's copy of the data
    return control_variates.refresh(
        s.state.replica.control_variates,
        s.state.replica.chains.models,
        reference,
        s._energy_fn,
        step,
        s.variance_reduction.period,
        sharded=False,
    )


def train_step(sampler: Any, data: Any) -> dict:
    """One step of the chain this replica holds (the recipe in the module docstring); the logs
    are the same on every replica (metrics are added on the host after the step)."""
    s, state = sampler, sampler.state
    rep = state.replica
    minibatch = batch.from_data(data, whole=True)
    s._check_batch(minibatch.x, minibatch.y)
    step = tf.convert_to_tensor(state.step)
    key = seeds.step_key(seeds.base_key(s.seed), step)
    lrs = hyperparameters.current(s.learning_rates, state.ladder.learning_rate, step)
    temps = hyperparameters.current(s.temperatures, state.ladder.temperature, step)
    _, rid = distribute.replicas()
    rung = tf.gather(tf.convert_to_tensor(rep.rung), rid)  # the rung this replica's chain holds
    refreshed = _refresh(s, step)  # 1. refresh
    scale = None if state.loss_scale is None else tf.convert_to_tensor(state.loss_scale.scale)
    forward = gradients.forward_and_gradients(
        rep.chains.models,
        minibatch,
        s._per_example_nll,  # 2. gradient
        s.weight_decay,
        s.data_size,
        scale,
        local=True,
        measure=s._measures_noise(step),
    )
    possible, rows = _rows(s, minibatch, forward, step, rung)  # 3. one all_gather
    by_rung = tf.gather(rows, tf.math.invert_permutation(tf.convert_to_tensor(rep.rung)))
    if s.swap_rule is not None:
        adaptive = s.variance_reduction is not None and s.variance_reduction.adaptive
        coefs = None if s.variance_reduction is None else tf.convert_to_tensor(state.control_variates.coefficient)
        energies = s._swap_energy.gathered(by_rung[:, 3:], minibatch.size, by_rung[:, 1], coefs, adaptive)
        results = s._swap.attempt(state.swap, energies, temps, step, key)  # 4. swap
        rung = exchange_labels(rep, results, (lrs, temps), rid)
        s._swap.count(state.swap, results, step, energies.energy)
        by_rung = tf.gather(rows, tf.math.invert_permutation(tf.convert_to_tensor(rep.rung)))
    state.batch_energy.assign(energy.minibatch_energy(by_rung[:, 0], minibatch.size, s.data_size, by_rung[:, 1]))
    overflow = tf.constant(False)
    if state.loss_scale is not None:  # float16: non-finite gradients of any chain lower the scale, skip the update
        overflow = tf.reduce_any(rows[:, 2] < 0.5)
        state.loss_scale.update(tf.logical_not(overflow))
    if forward.noise is not None:  # this chain's measurement, on the whole batch: no collective
        s._update_excess_temperature(tf.stack(forward.noise), minibatch.size, lrs, slots=[rung])
    updated = s._diffusion.step(rep.chains, forward.grads, lrs, temps, key, slots=[rung])  # 5. update
    if s.swap_rule is not None:
        s._bookkeeping(s._swap, state.swap, step, possible, results, energies, refreshed)  # 6. bookkeeping
    s._faults.record(
        step,
        invariants.step_checks(
            lrs,
            temps,
            forward,
            minibatch.x,
            tf.gather(rows[:, 0], rid)[None],
            overflow,
            updated,
            None if s.swap_rule is None else results.correction,
            slots=[rung],
        ),
    )
    s._update_rung_metrics(minibatch, forward, rung)
    logs = s._step_logs(lrs, temps, with_metrics=False)
    logs[cost.LOG_KEY] = cost.of_step(s, step, minibatch.size)
    if s.swap_rule is not None:
        logs.update({f"sigma2_used_{p}": results.sigma2[p] for p in range(s.num_chains - 1)})
    with tf.control_dependencies([rows]):  # after the batch is consumed (see ReplicaExchangeSampler.train_step)
        state.step.assign_add(1)
    return distribute.reducible_logs(logs)
