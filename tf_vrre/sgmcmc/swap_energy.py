"""Step 3 of the train step: the swap energies ``U~`` of the K chains on this batch.

Algorithm 1 tests a swap of the post-update weights ``beta_k`` on the next batch ``B_{k+1}``:
that is exactly this step's pre-update weights and batch, so in ``energy_mode="train"`` the
per-example NLLs come from the gradient's forward pass for free.  Extra forwards run only where
needed (inference-mode energies, snapshot forwards without the cache) and only on steps where a
swap may be attempted.  Besides the energies it returns the within-batch moments from which
``sigma2`` (and the adaptive coefficient) are estimated; everything is all-reduced in one call.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

import tf_vrre.sgmcmc.distribute as distribute
import tf_vrre.sgmcmc.energy as energy
import tf_vrre.sgmcmc.estimators as estimators


class SwapEnergies(collections.namedtuple("SwapEnergies", ["energy", "pair_moments", "cross_moments", "variance"])):
    """Swap energies of one step (all-reduced).

    Fields:
      energy: float64 ``[K]``, ``U~`` of the state in each slot (prior included).
      pair_moments: float64 ``[P, 3]``, moments (count, sum, sum of squares) of the per-example
        differences of ``U~`` between adjacent slots.
      cross_moments: float64 ``[K, 5]`` of (current, snapshot) NLLs for the adaptive coefficient,
        else ``None``.
      variance: float64 ``[P]``, this batch's estimate of ``Var(U~_p - U~_{p+1})`` at the
        current weights (:func:`tf_vrre.sgmcmc.estimators.estimator_variance` of ``pair_moments``).
    """


class SwapEnergyEstimator:
    """Mini-batch or control-variate swap energies of the K chains.

    ``U~_h = U_B(beta_h)`` (plain) or ``U_B(beta_h) + c_h (U_B(beta_hat_h) - U_hat_h)`` (VR), with
    ``U_B = (N/n) sum_B l + prior``.

    Args:
      chains: the K chain models.
      control_variates: the sampler's :class:`tf_vrre.sgmcmc.state.ControlVariateState` or ``None``.
      per_example_nll: ``(x, y, y_pred, sample_weight) -> [n]``.
      energy_mode: ``"train"`` or ``"inference"`` (the ``training`` flag of energy forwards).
      use_cache: read snapshot NLLs of indexed batches from ``control_variates.snapshot_nll``.
      data_size: ``N``.
      num_chains: ``K`` (default ``len(chains)``; chain-per-replica placement: ``chains`` is this
        replica's one chain).

    A batch with ``energy_x`` (un-augmented inputs, see :mod:`tf_vrre.sampler.batch`) gets its current
    and snapshot energies from forwards on ``energy_x`` (the cached snapshot NLLs, computed on
    the un-augmented reference data, still apply).
    """

    def __init__(
        self,
        chains: Sequence[keras.Model],
        control_variates: Any,
        per_example_nll: Callable,
        energy_mode: str,
        use_cache: bool,
        data_size: int,
        num_chains: int | None = None,
    ):
        self.chains, self.vr = chains, control_variates
        self.num_chains = len(chains) if num_chains is None else int(num_chains)
        self.nll, self.mode = per_example_nll, energy_mode
        self.use_cache, self.data_size = use_cache, data_size
        self.batch_dependent = energy.has_training_dependent_layers(chains[0])

    def _forwards(
        self, batch: Any, nlls: Sequence[tf.Tensor], need_snapshots: bool
    ) -> tuple[list[tf.Tensor], list[tf.Tensor]]:
        """Per-example current and snapshot NLLs that need a forward pass (on the un-augmented
        view ``batch.energy_x`` when the batch carries one)."""
        y, swt, training = batch.y, batch.sample_weight, self.mode == "train"
        x = batch.x if batch.energy_x is None else batch.energy_x
        if self.mode == "inference" or batch.energy_x is not None:
            cur = [self.nll(x, y, c(x, training=training), swt) for c in self.chains]
        else:
            cur = list(nlls)
        snap = []
        if need_snapshots:
            snap = [self.nll(x, y, s(x, training=training), swt) for s in self.vr.snapshots]
        return cur, snap

    def __call__(self, batch: Any, forward: Any, possible: tf.Tensor, adaptive: bool) -> SwapEnergies:
        """:class:`SwapEnergies` of ``batch`` (``forward``: the gradient pass's nlls and priors)."""
        cur, snap = self._per_example(batch, forward, possible)
        return self._reduce(cur, snap, forward.priors, batch.size, adaptive)

    def _per_example(self, batch: Any, forward: Any, possible: tf.Tensor) -> tuple[Any, Any]:
        """Per chain, the current and snapshot per-example NLLs of the swap energies."""
        K, vr, nlls = len(self.chains), self.vr, forward.nlls
        if batch.energy_x is not None and self.mode == "train" and self.batch_dependent:
            raise ValueError(
                'energy_inputs: with energy_mode="train" the extra forward on the un-augmented '
                'view would update BatchNorm statistics; use energy_mode="inference"'
            )
        cached = vr is not None and batch.index is not None and self.use_cache
        need_snapshots = vr is not None and not cached
        if need_snapshots or self.mode == "inference" or batch.energy_x is not None:

            def none() -> tuple[list[tf.Tensor], list[tf.Tensor]]:
                z = tf.zeros_like(nlls[0])
                return [z] * K, ([z] * K if need_snapshots else [])

            cur, snap = tf.cond(possible, lambda: self._forwards(batch, nlls, need_snapshots), none)
        else:
            cur, snap = list(nlls), []
        if cached:  # per-example snapshot NLLs from the last full pass: no snapshot forward
            snap = tf.unstack(tf.gather(vr.snapshot_nll, tf.cast(batch.index, tf.int64), axis=1), num=K)
        return cur, snap

    # ---- chain-per-replica placement: this replica's chain, then one all_gather ----------------
    def local_row(
        self, batch: Any, forward: Any, possible: tf.Tensor, adaptive: bool, coefficient: tf.Tensor | None
    ) -> tf.Tensor:
        """This replica's chain's share of the step's swap energies, float64 ``[m + n]``:
        ``sum_B l(beta)``, then with control variates ``sum_B l(beta_hat)`` and ``U_hat``, with the
        adaptive coefficient the 5 cross moments, then the ``n`` per-example swap energies
        (``l(beta) + c l(beta_hat)``, ``c``: ``coefficient`` of the rung the chain holds).

        Chain-per-replica placement: the estimator holds one chain (this replica's); the rows of
        all chains, gathered and ordered by rung, give :meth:`gathered`.
        """
        cur, snap = self._per_example(batch, forward, possible)
        cur64 = tf.cast(cur[0], tf.float64)
        pieces = [tf.reduce_sum(cur64)[None]]
        per_ex = cur64
        if self.vr is not None:
            snap64 = tf.cast(snap[0], tf.float64)
            per_ex = cur64 + coefficient * snap64
            pieces += [tf.reduce_sum(snap64)[None], tf.cast(self.vr.snapshot_energy, tf.float64)[:1]]
            if adaptive:
                pieces.append(estimators.cross_moments(cur64, snap64))
        return tf.concat(pieces + [per_ex], 0)

    def gathered(
        self, rows: tf.Tensor, n: tf.Tensor, priors: tf.Tensor, coefficient: tf.Tensor | None, adaptive: bool
    ) -> SwapEnergies:
        """The :class:`SwapEnergies` of the K rungs from their chains' :meth:`local_row` (``rows[k]``:
        the row of the chain that holds rung ``k``; ``priors``: ``[K]`` their prior energies;
        ``coefficient``: ``[K]`` per rung) - the same numbers as one device's ``__call__``."""
        K, P = self.num_chains, self.num_chains - 1
        cur = rows[:, 0]
        col = 1
        if self.vr is not None:
            snap, snapshot_energy, col = rows[:, 1], rows[:, 2], 3
        cross = None
        if self.vr is not None and adaptive:
            cross, col = tf.reshape(rows[:, col : col + 5], [K, 5]), col + 5  # static shape
        per_ex = tf.unstack(rows[:, col:], num=K)
        if self.vr is not None:
            total = energy.control_variate_energy(cur, snap, snapshot_energy, coefficient, n, self.data_size, priors)
        else:
            total = energy.minibatch_energy(cur, n, self.data_size, priors)
        pm = tf.reshape(tf.stack([estimators.moments(per_ex[p] - per_ex[p + 1]) for p in range(P)]), [P, 3])
        variance = estimators.estimator_variance(pm[:, 0], pm[:, 1], pm[:, 2], self.data_size)
        return SwapEnergies(total, pm, cross, variance)

    def _reduce(
        self,
        cur: Sequence[tf.Tensor],
        snap: Sequence[tf.Tensor],
        priors: Sequence[tf.Tensor],
        n: tf.Tensor,
        adaptive: bool,
    ) -> SwapEnergies:
        K, P, vr = len(self.chains), len(self.chains) - 1, self.vr
        cur64 = [tf.cast(c, tf.float64) for c in cur]
        if vr is not None:
            coef = tf.unstack(tf.convert_to_tensor(vr.coefficient))
            snap64 = [tf.cast(s, tf.float64) for s in snap]
            per_ex = [c + coef[h] * s for h, (c, s) in enumerate(zip(cur64, snap64))]
        else:
            per_ex = cur64
        pieces = [tf.stack([tf.reduce_sum(c) for c in cur64])]  # [K]
        if vr is not None:
            pieces += [tf.stack([tf.reduce_sum(sn) for sn in snap64])]  # [K]
        pieces += [estimators.moments(per_ex[p] - per_ex[p + 1]) for p in range(P)]  # P x [3]
        if adaptive:
            pieces += [estimators.cross_moments(cur64[h], snap64[h]) for h in range(K)]  # K x [5]
        flat = distribute.all_reduce(tf.concat(pieces, 0))
        prior = tf.stack(priors)
        if vr is not None:
            total = energy.control_variate_energy(
                flat[:K], flat[K : 2 * K], vr.snapshot_energy, tf.stack(coef), n, self.data_size, prior
            )
            flat = flat[2 * K :]
        else:
            total = energy.minibatch_energy(flat[:K], n, self.data_size, prior)
            flat = flat[K:]
        pm = tf.reshape(flat[: 3 * P], [P, 3])
        cross = tf.reshape(flat[3 * P :], [K, 5]) if adaptive else None
        variance = estimators.estimator_variance(pm[:, 0], pm[:, 1], pm[:, 2], self.data_size)
        return SwapEnergies(total, pm, cross, variance)
