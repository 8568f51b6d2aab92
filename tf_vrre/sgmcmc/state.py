"""The sampler's state: one record, :class:`SamplerState`, nested per part of the algorithm.

=================================  ==============================================================
``state.step``                     int64 step counter (seeds, schedules, windows, data order)
``state.ladder``                   :class:`Ladder` - temperature and learning rate in force per rung
``state.chains``                   :class:`ChainState` - the K models and their SGHMC velocities
``state.swap``                     :class:`SwapState` - ``sigma2``, counters, ``F``, the swap record
``state.batch_energy``             float64 ``[K]`` mini-batch energy of each slot on this step's batch
``state.control_variates``         :class:`ControlVariateState` - snapshots, ``U_hat``, ``c``
``state.loss_scale``               :class:`LossScale` - float16 policies only
``state.replica``                  :class:`ReplicaChain` - chain-per-replica placement only (not saved)
=================================  ==============================================================

Every variable is a non-trainable weight of the sampler (created through ``new_variable``, a
``keras.Model.add_weight`` wrapper), so ``.keras`` files, ``BackupAndRestore``,
``save_weights`` and :class:`tf_vrre.Checkpoint` capture all of it.  The records are frozen
dataclasses, not tuples: Keras neither tracks nor walks them when saving, so the file layout is
the sampler's own variables in creation order (the order of the fields here, top to bottom)
plus its ``chains`` / ``snapshots`` sub-models.  Keep that order when adding a field.

Who a field belongs to.  Slot ``k`` of the ladder is rung ``k`` (slot 0 the coldest); a
chain's state (:class:`ChainState`, the snapshot part of :class:`ControlVariateState`) sits in a
slot, and on an accepted swap the states move between slots while the rungs stay
(:meth:`ChainState.permute`, :meth:`ControlVariateState.permute`).  What belongs to a rung or a
pair of rungs (:class:`Ladder`, :class:`SwapState`) never moves.  So a placement that keeps
chain ``h``'s variables on one device can build each chain's part there and record which rung
each chain holds, and a tuner that moves the rungs only assigns :class:`Ladder` (through the
sampler's setters, which check the values).

Chain-per-replica placement (``ReplicaExchangeSampler(placement="chain_per_replica")``) does that:
replica ``r`` of the strategy holds chain ``r`` in per-replica variables (:class:`ReplicaChain`),
and an accepted swap exchanges *rungs* between chains (:func:`exchange_labels`): the weights
stay where they are.  The saved fields above are then the host's copy of the chains, in rung
order (slot ``k`` = the chain holding rung ``k``), which the sampler refreshes from the replicas
before anything reads or saves it and writes back to them before training.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

import tf_vrre.sgmcmc.dynamics as dynamics

NEVER = -(2**62)  # last_swap_step before any swap

NewVariable = Callable[..., keras.Variable]
"""``new_variable(name, shape, dtype, value=0)``: creates one saved variable of the sampler."""


def permute_variables(
    groups: Sequence[Sequence[keras.Variable]], perm: tf.Tensor, scale: tf.Tensor | None = None
) -> None:
    """Moves ``groups[perm[j]]`` into ``groups[j]`` (lists of variables, one list per slot).

    ``scale``: optional ``[K]`` factors applied to the value arriving in each slot.
    """
    num = len(groups)
    for i in range(len(groups[0])):
        vals = tf.stack([tf.identity(groups[h][i]) for h in range(num)])  # copies, not live views
        new = tf.gather(vals, perm)
        for h in range(num):
            value = new[h] if scale is None else new[h] * tf.cast(scale[h], new.dtype)
            groups[h][i].assign(value)


@dataclasses.dataclass(frozen=True)
class Ladder:
    """The hyperparameters in force, one per rung (slot ``k`` is rung ``k``, slot 0 the coldest).

    A scheduled entry is rewritten every step from its schedule; a number stays until
    ``set_temperatures`` / ``set_learning_rates`` or a callback assigns another.
    """

    temperature: keras.Variable  # float32 [K]: tau of each rung, strictly increasing ("temperature")
    learning_rate: keras.Variable  # float32 [K]: eta of each rung, > 0 ("learning_rate")

    @classmethod
    def create(
        cls, new_variable: NewVariable, temperatures: Sequence[float], learning_rates: Sequence[float]
    ) -> Ladder:
        """The two variables, holding ``temperatures`` and ``learning_rates`` (K floats each)."""
        num = len(temperatures)
        temperature = new_variable("temperature", (num,), "float32")
        learning_rate = new_variable("learning_rate", (num,), "float32")
        temperature.assign(np.asarray(temperatures, np.float32))
        learning_rate.assign(np.asarray(learning_rates, np.float32))
        return cls(temperature, learning_rate)


@dataclasses.dataclass(frozen=True)
class ChainState:
    """The K chains: what a chain *is*; slot 0 holds the coldest rung's chain."""

    models: list  # K built keras.Model (the sampler's `chains`): weights and BatchNorm statistics
    velocities: list | None  # SGHMC / M-SGD: per chain, one float variable per trainable weight
    #                             ("velocity_{h}_{i}", the weight's shape and dtype); None for SGLD

    @classmethod
    def create(cls, models: Sequence[keras.Model], new_variable: NewVariable, with_velocities: bool) -> ChainState:
        """Velocities ``velocity_{h}_{i}`` (zeros) for every trainable weight when asked."""
        velocities = None
        if with_velocities:
            velocities = [
                [new_variable(f"velocity_{h}_{i}", tuple(v.shape), v.dtype) for i, v in enumerate(m.trainable_weights)]
                for h, m in enumerate(models)
            ]
        return cls(list(models), velocities)

    @property
    def trainable(self) -> list:
        """Per chain, the trainable weights (what the dynamics update)."""
        return [m.trainable_weights for m in self.models]

    def permute(self, perm: tf.Tensor, velocity_scale: tf.Tensor | None = None) -> None:
        """Slot ``j`` takes slot ``perm[j]``'s weights, statistics and velocities (scaled)."""
        permute_variables([m.weights for m in self.models], perm)
        if self.velocities is not None:
            permute_variables(self.velocities, perm, velocity_scale)


@dataclasses.dataclass(frozen=True)
class SwapState:
    """Memory of the swap rule (``K`` chains, ``P = max(K - 1, 1)`` adjacent pairs of rungs).

    Variable names (as in saved files) are the field names, except ``log`` (``"swap_log"``).
    """

    sigma2: keras.Variable  # float64 [P]: estimate of Var(U~_p - U~_{p+1}) used in the penalty
    sigma2_ready: keras.Variable  # bool []: an estimate exists (no swap before)
    swap_count: keras.Variable  # int64 [P]: accepted swaps per pair
    attempt_count: keras.Variable  # int64 [P]: attempted swaps per pair
    attempt_index: keras.Variable  # int64 []: swap attempts so far (drives the even/odd schedule)
    last_swap_step: keras.Variable  # int64 []: step of the last accepted swap (cooling); NEVER before
    window_steps: keras.Variable  # float64 []: steps in the current sigma2 window
    window_variance: keras.Variable  # float64 [P]: sum of within-batch variance estimates in the window
    last_energy: keras.Variable  # float64 [K]: swap energies U~ of the last step
    last_log_ratio: keras.Variable  # float64 [P]: log acceptance ratios of the last step
    correction: keras.Variable  # float64 []: the correction factor F in force
    log: keras.Variable  # float64 [CAPACITY, columns]: ring buffer of per-step records (swap_record)
    sigma2_offset: keras.Variable | None  # float64 [P, offsets]: one sigma2 per step since the
    #                                          snapshot refresh (penalty="offset" only, else None)
    offset_ready: keras.Variable | None  # bool [offsets]: that offset has an estimate (or None)
    offsets: int  # number of offsets: the snapshot period m (the sigma2 window without VR)

    @classmethod
    def create(
        cls, new_variable: NewVariable, num_chains: int, rule: Any, log_shape: tuple[int, int], offsets: int
    ) -> SwapState:
        """Creates the variables with their initial values; the per-offset table only for
        ``rule.penalty == "offset"`` (files of other rules keep their layout)."""
        K, P = num_chains, max(num_chains - 1, 1)
        variables = dict(
            sigma2=new_variable("sigma2", (P,), "float64"),
            sigma2_ready=new_variable("sigma2_ready", (), "bool", False),
            swap_count=new_variable("swap_count", (P,), "int64"),
            attempt_count=new_variable("attempt_count", (P,), "int64"),
            attempt_index=new_variable("attempt_index", (), "int64"),
            last_swap_step=new_variable("last_swap_step", (), "int64", NEVER),
            window_steps=new_variable("window_steps", (), "float64"),
            window_variance=new_variable("window_variance", (P,), "float64"),
            last_energy=new_variable("last_energy", (K,), "float64"),
            last_log_ratio=new_variable("last_log_ratio", (P,), "float64"),
            correction=new_variable("correction", (), "float64", rule.initial_correction()),
            log=new_variable("swap_log", log_shape, "float64", -1),
            sigma2_offset=None,
            offset_ready=None,
        )
        if rule.penalty == "offset":
            variables.update(
                sigma2_offset=new_variable("sigma2_offset", (P, offsets), "float64"),
                offset_ready=new_variable("offset_ready", (offsets,), "bool", False),
            )
        return cls(**variables, offsets=int(offsets))

    def logs(self) -> dict:
        """Swap diagnostics for Keras ``logs``: totals, acceptance, ``F``, sigma2 per pair (and
        per-pair counts on a ladder)."""
        swaps, attempts = tf.reduce_sum(self.swap_count), tf.reduce_sum(self.attempt_count)

        def rate(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
            return tf.math.divide_no_nan(tf.cast(a, tf.float64), tf.cast(b, tf.float64))

        logs = {
            "swaps": swaps,
            "swap_attempts": attempts,
            "correction": self.correction,
            "accept_rate": rate(swaps, attempts),
        }
        num_pairs = self.swap_count.shape[0]
        for p in range(num_pairs):
            logs[f"sigma2_{p}"] = self.sigma2[p]
            if num_pairs > 1:
                logs[f"swaps_{p}"] = self.swap_count[p]
                logs[f"accept_rate_{p}"] = rate(self.swap_count[p], self.attempt_count[p])
        return logs


@dataclasses.dataclass(frozen=True)
class ControlVariateState:
    """Control-variate state of the K chains (VR-reSG*).

    Snapshots, ``U_hat`` and the cached NLLs belong to a chain and move with its state on a swap;
    the coefficients ``c`` and their window belong to the slot.
    """

    snapshots: list  # K keras.Model (the sampler's `snapshots`) holding beta_hat, copied every m steps
    snapshot_energy: keras.Variable  # float64 [K]: U_hat = sum_i l(x_i | beta_hat) over the reference data
    coefficient: keras.Variable  # float64 [K]: the control-variate coefficient c
    window_cov: keras.Variable  # float64 [K]: sum of within-batch Cov(l(beta), l(beta_hat)) (adaptive c)
    window_var: keras.Variable  # float64 [K]: sum of within-batch Var(l(beta_hat)) (adaptive c)
    snapshot_nll: keras.Variable | None  # float32 [K, N]: per-example snapshot NLLs of the last full
    #                                         pass (ControlVariates(cache=True)), else None

    @classmethod
    def create(
        cls, snapshots: Sequence[keras.Model], new_variable: NewVariable, control_variates: Any, data_size: int
    ) -> ControlVariateState:
        """The variables of ``control_variates`` (a :class:`tf_vrre.ControlVariates`) for ``N = data_size``."""
        K, cv = len(snapshots), control_variates
        return cls(
            list(snapshots),
            snapshot_energy=new_variable("snapshot_energy", (K,), "float64"),
            coefficient=new_variable(
                "coefficient", (K,), "float64", cv.initial_coefficient if cv.adaptive else cv.coefficient
            ),
            window_cov=new_variable("window_cov", (K,), "float64"),
            window_var=new_variable("window_var", (K,), "float64"),
            snapshot_nll=new_variable("snapshot_nll", (K, data_size), "float32") if cv.cache else None,
        )

    def permute(self, perm: tf.Tensor) -> None:
        """Slot ``j`` takes slot ``perm[j]``'s snapshot, ``U_hat`` and cached NLLs."""
        permute_variables([s.weights for s in self.snapshots], perm)
        self.snapshot_energy.assign(tf.gather(self.snapshot_energy, perm))
        if self.snapshot_nll is not None:
            self.snapshot_nll.assign(tf.gather(self.snapshot_nll, perm))


@dataclasses.dataclass(frozen=True)
class LossScale:
    """Dynamic loss scale of float16 policies (as ``keras.optimizers.LossScaleOptimizer``).

    After a step with non-finite gradients the scale halves (and the step's update is skipped);
    after ``period`` finite steps in a row it doubles.
    """

    scale: keras.Variable  # float32 []: the factor on the N-scaled energy before backpropagation
    good_steps: keras.Variable  # int64 []: finite steps in a row since the last change
    period: int = 2000  # finite steps in a row after which the scale doubles

    @classmethod
    def create(cls, new_variable: NewVariable, initial: float = 2.0**15, period: int = 2000) -> LossScale:
        """``loss_scale`` (starting at ``initial``) and ``loss_scale_good_steps``."""
        return cls(
            new_variable("loss_scale", (), "float32", initial),
            new_variable("loss_scale_good_steps", (), "int64"),
            int(period),
        )

    def update(self, finite: tf.Tensor) -> None:
        """One step's update: ``finite`` is the bool "this step's gradients were finite"."""
        good = tf.where(finite, self.good_steps + 1, tf.zeros_like(self.good_steps))
        grow = good >= self.period
        scale = tf.where(finite, tf.where(grow, self.scale * 2.0, self.scale), self.scale / 2.0)
        self.scale.assign(tf.maximum(scale, 1e-30))
        self.good_steps.assign(tf.where(grow, tf.zeros_like(good), good))


@dataclasses.dataclass(frozen=True)
class ReplicaChain:
    """Chain-per-replica placement: the chain this replica holds (per-replica variables: replica
    ``r``'s values are chain ``r``'s) and the rung each chain holds.  Not saved: the saved state is
    the host's copy in rung order, written to the replicas with ``rung`` reset to ``0..K-1``.
    """

    chains: ChainState  # one model (this replica's chain) and its velocities
    control_variates: ControlVariateState | None  # its snapshot, U_hat [1] and cached NLLs [1, N];
    #                                                   coefficient and windows: None (they are per rung)
    rung: keras.Variable  # int32 [K], mirrored: rung[r] is the rung (slot) chain r holds


@dataclasses.dataclass(frozen=True)
class SamplerState:
    """Everything a :class:`tf_vrre.ReplicaExchangeSampler` remembers between steps
    (``sampler.state``); fields in the order their variables are created (the saved layout)."""

    step: keras.Variable  # int64 []: steps taken ("step"); seeds, schedules, windows and data order read it
    ladder: Ladder  # temperature and learning rate in force per rung
    chains: ChainState  # the K chain models (slot 0 the coldest) and their velocities
    swap: SwapState | None  # the swap rule's memory; None without swaps
    batch_energy: keras.Variable  # float64 [K]: U_B of the state in each slot on this step's batch,
    #                               before its update ("batch_energy")
    control_variates: ControlVariateState | None  # None without variance reduction
    loss_scale: LossScale | None  # None unless the chains compute in float16
    replica: ReplicaChain | None = None  # chain-per-replica placement only


def exchange(
    chains: ChainState,
    control_variates: ControlVariateState | None,
    perm: tf.Tensor,
    ladder: tuple[tf.Tensor, tf.Tensor],
    tensors: list,
) -> list:
    """Moves every chain state by ``perm`` (slot ``j`` <- slot ``perm[j]``).

    ``ladder = (learning_rates, temperatures)`` in force at the slots (velocities are rescaled by
    :func:`tf_vrre.sgmcmc.dynamics.velocity_scale`); ``tensors``: lists of K per-chain tensors of
    this step, returned permuted the same way.
    """
    lrs, temps = ladder
    scale = None
    if chains.velocities is not None:
        scale = dynamics.velocity_scale(tf.gather(lrs, perm), tf.gather(temps, perm), lrs, temps)
    chains.permute(perm, scale)
    if control_variates is not None:
        control_variates.permute(perm)
    num = len(chains.models)
    return [tf.unstack(tf.gather(tf.stack(t), perm), num=num) for t in tensors]


def exchange_forward(
    chains: ChainState,
    control_variates: ControlVariateState | None,
    results: Any,
    ladder: tuple[tf.Tensor, tf.Tensor],
    forward: Any,
) -> Any:
    """Step 4b: if a swap was accepted, moves the states and this step's
    :class:`tf_vrre.sgmcmc.gradients.Forward` (gradients, NLLs, predictions, priors, the gradient
    noise statistics) with them, so
    the update that follows is exactly "from the swapped state"."""
    num = len(chains.models)
    tensors = [list(t) for t in zip(*forward.grads)] + [forward.nlls, forward.preds]
    out = tf.cond(
        tf.reduce_any(results.accepted),
        lambda: exchange(chains, control_variates, results.permutation, ladder, tensors),
        lambda: tensors,
    )
    per_var = out[:-2]
    grads = [list(g) for g in zip(*per_var)] if per_var else [[] for _ in range(num)]
    priors = tf.unstack(tf.gather(tf.stack(forward.priors), results.permutation), num=num)
    noise = forward.noise
    if noise is not None:  # a measurement of the gradient noise belongs to the state it was taken of
        noise = tf.unstack(tf.gather(tf.stack(noise), results.permutation), num=num)
    return forward._replace(grads=grads, nlls=out[-2], preds=out[-1], priors=priors, noise=noise)


def exchange_labels(
    replica: ReplicaChain, results: Any, ladder: tuple[tf.Tensor, tf.Tensor], replica_id: tf.Tensor
) -> tf.Tensor:
    """Step 4b under chain-per-replica placement: if a swap was accepted, the chains trade rungs
    (``replica.rung``) instead of states, and this replica's velocities are rescaled for the rung
    they arrive at exactly as :func:`exchange` rescales a velocity moving between slots.  Nothing
    else moves: weights, snapshots and this step's gradients stay with their chain.

    Returns the int32 rung this replica's chain holds after the swap.
    """
    lrs, temps = ladder
    perm = results.permutation  # slot j takes the state of slot perm[j]: the chain at slot s goes to inv[s]

    def move() -> tf.Tensor:
        rung = tf.gather(tf.math.invert_permutation(perm), tf.convert_to_tensor(replica.rung))
        replica.rung.assign(rung)
        own = tf.gather(rung, replica_id)
        if replica.chains.velocities is not None:
            scale = dynamics.velocity_scale(tf.gather(lrs, perm), tf.gather(temps, perm), lrs, temps)
            for v in replica.chains.velocities[0]:
                v.assign(tf.identity(v) * tf.cast(scale[own], v.dtype))
        return own

    return tf.cond(
        tf.reduce_any(results.accepted), move, lambda: tf.gather(tf.convert_to_tensor(replica.rung), replica_id)
    )
