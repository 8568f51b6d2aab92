"""Building a :class:`tf_vrre.ReplicaExchangeSampler`'s chains and state (the second half of its
constructor, after the arguments are checked and recorded): the chain models from ``model_fn``
under the sampler's seed, the :class:`tf_vrre.sgmcmc.state.SamplerState` whose variables are
created in the order of its fields (the layout of saved files), and step 3's swap-energy
estimator.  :class:`ChainBuilding` is a mixin of the sampler; the argument checks and the
variable factory are :mod:`tf_vrre.sampler.construction`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import keras

import tf_vrre.sampler.construction as construction
import tf_vrre.sampler.input_checks as input_checks
import tf_vrre.sampler.placements as placements
from tf_vrre.sgmcmc import energy, schedules, swap_record
from tf_vrre.sgmcmc import proposal as proposals
from tf_vrre.sgmcmc.state import (
    ChainState,
    ControlVariateState,
    Ladder,
    LossScale,
    ReplicaChain,
    SamplerState,
    SwapState,
)
from tf_vrre.sgmcmc.swap_energy import SwapEnergyEstimator


class ChainBuilding:
    """The sampler's chains, state and swap-energy estimator, built once by its constructor."""

    def _build_chains(self, model_fn: Callable[[], keras.Model], proposal: Any, temps: list, lrs: list) -> None:
        """The chains (and with control variates the snapshots) from ``model_fn`` under the
        sampler's seed, the proposed ladder once the number of weights is known, the energy mode,
        then :attr:`state` holding the values of ``temps`` / ``lrs`` at step 0."""
        K, vr = self.num_chains, self.variance_reduction
        keras.utils.set_random_seed(self.seed)
        self.chains = self._new_chains(model_fn, K)  # chain per replica: the host copy
        input_checks.check_distinct_models(self.chains)
        construction.tie_initial_weights(self.chains, self.independent_init)
        if proposal is not None:  # D is known now: the Gaussian rule's ladder
            self.temperatures = temps = proposal.temperatures(K, proposals.num_weights(self.chains[0]))
        self.energy_mode = energy.resolve_mode(self.energy_mode_arg, self.chains[0])
        self._cache_exact = vr is not None and vr.cache and energy.batch_independent(self.energy_mode, self.chains[0])
        if vr is not None:
            self.snapshots = self._new_chains(model_fn, K)
            input_checks.check_distinct_models(self.chains + self.snapshots)
        self.state = self._create_state([schedules.value_at(t) for t in temps], [schedules.value_at(v) for v in lrs])

    def _create_state(self, temperatures: list[float], learning_rates: list[float]) -> SamplerState:
        """The :class:`SamplerState`, its variables created eagerly (``fit`` does not build
        subclassed models) in the order of the fields: that order is the layout of saved files."""
        K, new, vr = self.num_chains, functools.partial(construction.new_variable, self), self.variance_reduction
        if self._strategy is not None:  # per-chain variables: the host copy; per-rung ones: mirrored
            new = placements.variable_factory(new, self._strategy)
        step = new("step", (), "int64")
        ladder = Ladder.create(new, temperatures, learning_rates)
        chains = ChainState.create(self.chains, new, self._diffusion.has_velocity)
        swap = None
        if self._swap is not None:
            log_shape = (swap_record.CAPACITY, len(swap_record.swap_log_columns(K)))
            swap = SwapState.create(new, K, self._swap, log_shape, self._offsets)
        batch_energy = new("batch_energy", (K,), "float64")
        cv_state = None if vr is None else ControlVariateState.create(self.snapshots, new, vr, self.data_size)
        loss_scale = None
        if energy.computes_in_float16(self.chains[0]):  # the effective scale on the mean loss is 2^15
            loss_scale = LossScale.create(new, initial=2.0**15 / self.data_size)
        replica = None if self._strategy is None else placements.build_replica(self)
        return SamplerState(step, ladder, chains, swap, batch_energy, cv_state, loss_scale, replica)

    def _swap_energy_estimator(self, local: SamplerState | ReplicaChain) -> SwapEnergyEstimator:
        """Step 3's estimator of the swap energies of the chains in ``local`` (the sampler's state,
        or with ``placement="chain_per_replica"`` this replica's chain's)."""
        return SwapEnergyEstimator(
            local.chains.models,
            local.control_variates,
            self._per_example_nll,
            self.energy_mode,
            self._cache_exact,
            self.data_size,
            self.num_chains,
        )
