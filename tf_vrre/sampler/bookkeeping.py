"""Steps 1 and 6 of the sampler's recipe, shared by the train steps of both placements
(:mod:`tf_vrre.sampler.replica_exchange`, :mod:`tf_vrre.sampler.replica_step`): the control
variates' refresh every ``m`` steps (:func:`tf_vrre.sgmcmc.control_variates.refresh`), and after
the swap the sigma2 and adaptive-coefficient windows and the per-step swap record
(:mod:`tf_vrre.sgmcmc.swap_record`).  :class:`StepBookkeeping` is a mixin of
:class:`tf_vrre.ReplicaExchangeSampler`.
"""

from __future__ import annotations

import tensorflow as tf

from tf_vrre.sgmcmc import control_variates, swap_record, swaps
from tf_vrre.sgmcmc.state import SwapState
from tf_vrre.sgmcmc.swap_energy import SwapEnergies


class StepBookkeeping:
    """The refresh before a step's forward pass and the windows and record after its swap."""

    def _bookkeeping(
        self,
        rule: swaps.CorrectedSwap,
        swap_state: SwapState,
        step: tf.Tensor,
        possible: tf.Tensor,
        results: swaps.SwapResults,
        energies: SwapEnergies,
        refreshed: tf.Tensor,
    ) -> None:
        """Step 6: sigma2 and adaptive-c windows (steps where a swap was possible count), then
        the per-step record."""
        weight = tf.cast(possible, tf.float64)
        vr, cv = self.variance_reduction, self.state.control_variates  # both None without VR
        updated = rule.update_sigma2(swap_state, energies.variance, weight, step, self._window_period)
        if rule.penalty == "offset":
            rule.update_offsets(swap_state, energies.variance, weight, step)
        if energies.cross_moments is not None and vr is not None and cv is not None:
            control_variates.update_coefficient(cv, energies.cross_moments, weight, step, vr)
        coefs = tf.convert_to_tensor(cv.coefficient) if cv is not None else tf.zeros([self.num_chains], tf.float64)
        swap_record.write(
            swap_state.log,
            swap_record.StepRecord(
                step, updated, refreshed, results, energies.energy, tf.convert_to_tensor(swap_state.sigma2), coefs
            ),
        )

    def _refresh(self, step: tf.Tensor) -> tf.Tensor:
        """Step 1 (VR only): the snapshots and ``U_hat`` refreshed when ``step % m == 0``; whether they were."""
        if self.variance_reduction is None:
            return tf.constant(False)
        if self._reference is None:
            raise ValueError(
                "variance_reduction needs the full training data: call "
                "sampler.set_reference_data((x_train, y_train)) before fit"
            )
        return control_variates.refresh(
            self.state.control_variates,
            self.chains,
            self._reference,
            self._energy_fn,
            step,
            self.variance_reduction.period,
        )
