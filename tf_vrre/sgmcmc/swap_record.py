"""The per-step swap record: an in-graph ring buffer drained by :class:`tf_vrre.SwapLogger`.

Row ``step % CAPACITY`` of ``sampler.state.swap.log`` holds step ``step`` (columns:
:func:`swap_log_columns`).  Writing it costs no host copy inside the train step; the logger
reads the buffer after every ``train_function`` call, so ``steps_per_execution`` may be up to
``CAPACITY``.
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

CAPACITY = 1024
"""Rows (steps) of the ring buffer."""


def swap_log_columns(num_chains: int) -> list[str]:
    """Column names of the record rows.

    ``step, sigma2_updated, refreshed`` then, per adjacent pair ``p``: ``proposed_p,
    accepted_p, energy_lo_p, energy_hi_p, log_ratio_p, sigma2_p`` (the value the decision
    used), ``sigma2_new_p`` (after this step's window update), then ``c_h`` per chain (0
    without variance reduction) and ``correction``.
    """
    cols = ["step", "sigma2_updated", "refreshed"]
    for p in range(max(num_chains - 1, 1)):
        cols += [
            f"{k}_{p}" for k in ("proposed", "accepted", "energy_lo", "energy_hi", "log_ratio", "sigma2", "sigma2_new")
        ]
    cols += [f"c_{h}" for h in range(num_chains)]
    return cols + ["correction"]


class StepRecord(
    collections.namedtuple(
        "StepRecord", ["step", "sigma2_updated", "refreshed", "results", "energy", "sigma2_new", "coefficients"]
    )
):
    """What one step contributes to the record.

    Fields:
      step: int64 step.
      sigma2_updated, refreshed: bool flags (end of a sigma2 window; snapshot refresh).
      results: the step's :class:`tf_vrre.sgmcmc.swaps.SwapResults` (with ``sigma2`` and ``correction`` used).
      energy: float64 ``[K]`` swap energies.
      sigma2_new: float64 ``[P]`` sigma2 after the window update.
      coefficients: float64 ``[K]`` control-variate coefficients (zeros without VR).
    """


def row(record: StepRecord) -> tf.Tensor:
    """The float64 row of a :class:`StepRecord`, laid out as :func:`swap_log_columns`."""

    def f64(t: Any) -> tf.Tensor:
        return tf.cast(t, tf.float64)

    res, energy = record.results, record.energy
    per_pair = tf.stack(
        [
            f64(res.attempted),
            f64(res.accepted),
            energy[:-1],
            energy[1:],
            res.log_accept_ratio,
            res.sigma2,
            record.sigma2_new,
        ],
        axis=1,
    )
    head = tf.stack([f64(record.step), f64(record.sigma2_updated), f64(record.refreshed)])
    return tf.concat([head, tf.reshape(per_pair, [-1]), record.coefficients, res.correction[None]], 0)


def write(buffer: Any, record: StepRecord) -> None:
    """Writes ``record`` into row ``step % CAPACITY`` of the ``buffer`` variable."""
    slot = tf.math.floormod(record.step, CAPACITY)
    buffer.assign(tf.tensor_scatter_nd_update(tf.convert_to_tensor(buffer), slot[None, None], row(record)[None]))
