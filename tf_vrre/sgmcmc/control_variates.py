"""Control variates of VR-reSG*: snapshot refresh, the full-data pass, the adaptive coefficient.

Every ``m`` steps (step 1 of the train step) each chain's weights are copied into its snapshot
``beta_hat`` and one pass over the reference data (the N training examples, un-augmented)
computes ``U_hat = sum_i l(x_i | beta_hat)`` and, with the cache, every ``l(x_i | beta_hat)``.
With every chain on every replica the pass is sharded across replicas (batch ``i`` on replica
``i mod R``) and all-reduced; with one chain per replica each replica makes the whole pass for
its own chain (``sharded=False``).

:class:`ControlVariates` holds the settings; the estimator itself
(``U_B(beta) + c (U_B(beta_hat) - U_hat)``) is in :mod:`tf_vrre.sgmcmc.energy`; the adaptive
coefficient of Algorithm 2 is updated by :func:`update_coefficient`.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

import tf_vrre.sgmcmc.distribute as distribute
import tf_vrre.sgmcmc.estimators as estimators


@keras.saving.register_keras_serializable(package="tf_vrre")
class ControlVariates:
    """Variance-reduced energies (VR-reSG*): snapshots and full-data energies every ``m`` steps.

    Every ``period`` steps each chain's weights are copied to its snapshot ``beta_hat`` and
    ``U_hat = sum_i l(x_i | beta_hat)`` is computed by one pass over the reference data
    (``sampler.set_reference_data``) in batches of ``batch_size``.  Between refreshes the swap
    energy is ``U_B(beta) + c (U_B(beta_hat) - U_hat)`` on the current batch.

    Args:
      period: ``m >= 1``, steps between snapshot refreshes.
      coefficient: ``c``; ``-1.0`` (the paper's Algorithm 1) or ``"adaptive"``
        (Algorithm 2: ``c <- (1 - gamma) c + gamma * (-Cov/Var)`` at each refresh, per chain,
        starting at ``initial_coefficient``).
      smoothing: ``gamma`` in ``(0, 1]`` for the adaptive coefficient.
      initial_coefficient: starting value of the adaptive coefficient.
      batch_size: batch size of the full-data pass (inference mode: large is fast).
      cache: keep the per-example snapshot NLLs of the full pass (``K * N`` floats).  Batches
        that carry their example index (``sampler.make_dataset``) then read the snapshot
        energies from the cache instead of running a snapshot forward pass.  Used only where
        it is exact: un-augmented reference data and energies that do not depend on the batch
        (``energy_mode="inference"``, or a model without BatchNorm/Dropout).

    Example:
      >>> vr = ControlVariates(period=392, coefficient="adaptive", batch_size=1000)
    """

    def __init__(
        self,
        period: int,
        coefficient: float | str = -1.0,
        smoothing: float = 0.3,
        initial_coefficient: float = -1.0,
        batch_size: int = 1024,
        cache: bool = True,
    ):
        if isinstance(period, bool) or not isinstance(period, int) or period < 1:
            raise ValueError(f"period (m) must be an integer >= 1, got {period!r}")
        if coefficient != "adaptive" and (
            isinstance(coefficient, bool) or not isinstance(coefficient, (int, float)) or not np.isfinite(coefficient)
        ):
            raise ValueError(f"coefficient must be a finite number or 'adaptive', got {coefficient!r}")
        if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not 0 < smoothing <= 1:
            raise ValueError(f"smoothing (gamma) must be in (0, 1], got {smoothing!r}")
        if not isinstance(initial_coefficient, (int, float)) or not np.isfinite(initial_coefficient):
            raise ValueError(f"initial_coefficient must be a finite number, got {initial_coefficient!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.period = period
        self.coefficient = coefficient if coefficient == "adaptive" else float(coefficient)
        self.smoothing = float(smoothing)
        self.initial_coefficient = float(initial_coefficient)
        if not isinstance(cache, bool):
            raise TypeError(f"cache must be a bool, got {cache!r}")
        self.batch_size = batch_size
        self.cache = cache

    @property
    def adaptive(self) -> bool:
        """True with ``coefficient="adaptive"`` (Algorithm 2)."""
        return self.coefficient == "adaptive"

    def get_config(self) -> dict:
        return {
            "period": self.period,
            "coefficient": self.coefficient,
            "smoothing": self.smoothing,
            "initial_coefficient": self.initial_coefficient,
            "batch_size": self.batch_size,
            "cache": self.cache,
        }

    @classmethod
    def from_config(cls, config: dict) -> ControlVariates:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"ControlVariates({args})"


class Reference(collections.namedtuple("Reference", ["source", "num_batches", "count", "batch_size"])):
    """The full training data for ``U_hat``.

    Fields:
      source: in-memory tensors (sliced inside the graph) or a batched ``tf.data.Dataset``.
      num_batches: batches of ``batch_size`` in one pass.
      count: number of examples (must equal the sampler's ``data_size``).
      batch_size: full-pass batch size.
    """


def make_reference(data: Any, batch_size: int, data_size: int) -> Reference:
    """Checks ``data`` and wraps it as a :class:`Reference` (``ValueError`` if it is not N examples)."""
    if isinstance(data, tf.data.Dataset):
        source = data.unbatch().batch(batch_size)
        sizes = [int(distribute.batch_size(batch)) for batch in source]
        count, batches = sum(sizes), len(sizes)
    else:
        # In-memory data: kept as tensors and sliced inside the graph (no iterator set-up per
        # refresh, which dominates for small m).
        source = tf.nest.map_structure(tf.convert_to_tensor, data)
        count = int(distribute.batch_size(source))
        batches = -(-count // batch_size)
    if count != data_size:
        raise ValueError(
            f"reference data holds {count} examples but data_size={data_size}; "
            "they must match (U_hat is a sum over the N training examples)"
        )
    return Reference(source, batches, count, int(batch_size))


def full_pass(
    reference: Reference, snapshots: Sequence[keras.Model], energy_fn: Callable, cache: bool, sharded: bool = True
) -> tuple[tf.Tensor, tf.Tensor | None]:
    """This replica's share of the snapshot NLL sums over the reference data.

    Args:
      reference: :class:`Reference`.
      snapshots: the K snapshot models.
      energy_fn: ``(model, x, y, sample_weight) -> [n]`` per-example NLLs (the sampler's
        energy mode baked in).
      cache: also return the per-example NLLs.
      sharded: split the batches across the replicas in sync (``False``: this replica makes the
        whole pass, as on one device).

    Returns:
      ``(sums [K] float64, table [K, N] float32 or None)``; the caller all-reduces (shards fill
      disjoint examples of the table).
    """
    source, num_batches, count, batch_size = reference
    replicas, rid = distribute.replicas() if sharded else (1, tf.constant(0, tf.int64))
    if isinstance(source, tf.data.Dataset):
        if replicas > 1:
            source = source.shard(replicas, rid)
        iterator = iter(source)

        def get(i: Any) -> Any:
            return iterator.get_next()
    else:

        def get(i: Any) -> Any:
            start = i * batch_size
            stop = tf.minimum(start + batch_size, count)
            return tf.nest.map_structure(lambda t: t[start:stop], source)

    num = (tf.constant(num_batches, tf.int64) - rid + replicas - 1) // replicas
    K = len(snapshots)

    def body(j: tf.Tensor, total: tf.Tensor, table: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        i = rid + j * replicas
        x, y, swt = keras.utils.unpack_x_y_sample_weight(get(i))
        vals = [energy_fn(snap, x, y, swt) for snap in snapshots]
        total = total + tf.stack([tf.reduce_sum(tf.cast(v, tf.float64)) for v in vals])
        if cache:
            pos = i * batch_size + tf.range(tf.shape(vals[0], out_type=tf.int64)[0])
            table = tf.tensor_scatter_nd_update(table, pos[:, None], tf.stack(vals, axis=1))
        return j + 1, total, table

    table = tf.zeros([count if cache else 0, K], tf.float32)
    _, total, table = tf.while_loop(
        lambda j, t, c: j < num, body, (tf.constant(0, tf.int64), tf.zeros([K], tf.float64), table)
    )
    return total, (tf.transpose(table) if cache else None)


def refresh(
    state: Any,
    chains: Sequence[keras.Model],
    reference: Reference,
    energy_fn: Callable,
    step: tf.Tensor,
    period: int,
    sharded: bool = True,
) -> tf.Tensor:
    """Step 1 of the train step: on ``step % period == 0`` snapshots <- chains, recompute ``U_hat``.

    Args:
      state: the sampler's :class:`tf_vrre.sgmcmc.state.ControlVariateState` (snapshots,
        ``snapshot_energy``, ``snapshot_nll``).
      chains: the K chain models (copied into the snapshots).
      reference: :class:`Reference`; energy_fn: as in :func:`full_pass`.
      step: int64 step; period: ``m``.
      sharded: share the full pass among the replicas and all-reduce it (``False``: chain-per-replica
        placement, where ``state`` and ``chains`` are this replica's own chain).

    Returns:
      The bool "refreshed at this step".
    """
    due = tf.equal(tf.math.floormod(step, period), 0)
    K, cache = len(chains), state.snapshot_nll is not None
    single = not sharded or distribute.replicas()[0] == 1

    def do() -> tuple[tf.Tensor, tf.Tensor]:
        ops = []
        for chain, snap in zip(chains, state.snapshots):
            for dst, src in zip(snap.weights, chain.weights):
                ops.append(dst.assign(tf.identity(src)))
        with tf.control_dependencies(ops):
            total, table = full_pass(reference, state.snapshots, energy_fn, cache, sharded)
        if not cache:
            return total, tf.zeros([K, 0])
        if single:  # no all-reduce needed: write the per-example table here
            with tf.control_dependencies([state.snapshot_nll.assign(table)]):
                return tf.identity(total), tf.zeros([K, 0])
        return total, table

    def skip() -> tuple[tf.Tensor, tf.Tensor]:
        width = 0 if (single or not cache) else reference.count
        return tf.zeros([K], tf.float64), tf.zeros([K, width])

    partial, table = tf.cond(due, do, skip)
    total = distribute.all_reduce(partial) if sharded else partial
    state.snapshot_energy.assign(tf.where(due, total, state.snapshot_energy))
    if cache and not single:  # shards fill disjoint examples: the sum is the full table
        table = distribute.all_reduce(table)
        state.snapshot_nll.assign(tf.where(due, table, state.snapshot_nll))
    return due


def update_coefficient(
    state: Any, cross_moments: tf.Tensor, weight: tf.Tensor, step: tf.Tensor, control_variates: ControlVariates
) -> None:
    """Step 6 (adaptive ``c``, Algorithm 2): ``c <- (1 - gamma) c + gamma (-Cov / Var)`` per chain.

    ``Cov(l(beta), l(beta_hat))`` and ``Var(l(beta_hat))`` are within-batch estimates
    (``cross_moments``: ``[K, 5]`` from :func:`tf_vrre.sgmcmc.estimators.cross_moments`), summed over each
    window of ``m`` steps with ``weight`` (1.0 where the step counts).
    """
    cov, var = estimators.covariance_and_variance(cross_moments)
    cov_total = state.window_cov + weight * cov
    var_total = state.window_var + weight * var
    reset = estimators.window_ends(step, control_variates.period)
    c, _ = estimators.windowed_estimate(
        state.coefficient, -cov_total, var_total, control_variates.smoothing, reset, True
    )
    state.coefficient.assign(c)
    state.window_cov.assign(tf.where(reset, tf.zeros_like(cov_total), cov_total))
    state.window_var.assign(tf.where(reset, tf.zeros_like(var_total), var_total))


def check(variance_reduction: Any, swap_rule: Any) -> None:
    """Validates a sampler's ``variance_reduction`` argument against its swap rule."""
    if variance_reduction is None:
        return
    if not isinstance(variance_reduction, ControlVariates):
        raise TypeError(f"variance_reduction must be a tf_vrre.ControlVariates or None, got {variance_reduction!r}")
    if swap_rule is None:
        raise ValueError(
            "variance_reduction: control variates only serve swap energies; it needs num_chains >= 2 and a swap rule"
        )
