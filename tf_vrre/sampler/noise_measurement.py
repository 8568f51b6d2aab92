"""The sampler's measurement of its gradient noise (``gradient_noise_every``): whether a step
measures it, and each chain's *excess temperature* added to its ``excess_temperature_h`` metric
(the estimator is :mod:`tf_vrre.sgmcmc.gradient_noise`).  :class:`GradientNoiseMeasurement` is a
mixin of :class:`tf_vrre.ReplicaExchangeSampler`, called from both placements' train steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from tf_vrre.sgmcmc import gradient_noise


class GradientNoiseMeasurement:
    """Step 2's extra backward pass every ``gradient_noise_every`` steps, turned into metrics."""

    def _noise_metrics(self) -> list[gradient_noise.ExcessTemperature]:
        """One ``excess_temperature_h`` metric per chain (none without ``gradient_noise_every``)."""
        measured = range(self.num_chains) if self.gradient_noise_every is not None else ()
        return [gradient_noise.ExcessTemperature(name=f"excess_temperature_{h}") for h in measured]

    def _measures_noise(self, step: tf.Tensor) -> tf.Tensor | None:
        """Whether this step measures the gradient noise (``None``: the sampler never does)."""
        if self.gradient_noise_every is None:
            return None
        return gradient_noise.measure_at(step, self.gradient_noise_every)

    def _update_excess_temperature(
        self, statistic: tf.Tensor, batch_size: tf.Tensor, learning_rates: tf.Tensor, slots: Any = None
    ) -> None:
        """Adds this step's measurement (cross-replica sums ``[chains, 2]``) to the
        ``excess_temperature_h`` metric of each chain's slot (``slots``: the rung of each chain,
        default ``0..K-1``)."""
        friction = 1.0 if self.dynamics == "sgld" else 1.0 - self.momentum
        lrs = learning_rates if slots is None else tf.gather(learning_rates, slots)
        excess, measured = gradient_noise.excess_temperature(statistic, self.data_size, batch_size, lrs, friction)
        if slots is None:
            for h, metric in enumerate(self._excess_temperature):
                metric.update_state(excess[h], measured[h])
            return

        def branch(k: int) -> Callable[[], tf.Tensor]:
            def update() -> tf.Tensor:
                self._excess_temperature[k].update_state(excess[0], measured[0])
                return tf.constant(True)

            return update

        tf.switch_case(tf.cast(slots[0], tf.int32), [branch(k) for k in range(self.num_chains)])
