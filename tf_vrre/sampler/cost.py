"""What a run has cost, in per-example gradient evaluations: the unit in which methods are compared.

**Unit: one per-example gradient evaluation** ``grad l(x_i | beta)`` of one chain (a forward and a
backward pass of one example); a forward-only evaluation of the control variates' full pass over
the data is charged as one unit too.  So after ``t`` steps of ``K`` chains::

    gradient_evaluations(t) = K * (examples in the first t batches) + K * N * refreshes(t)
    refreshes(t)            = ceil(t / m)     (control variates: a full pass at steps 0, m, 2m, ...)

(with ``N`` the data size and ``m`` the refresh period; no refreshes without control variates).
The snapshot's forward on a batch, which the swap energies need when the snapshot NLLs are not
cached (``make_dataset`` batches read them from the full pass), is not charged, nor are extra
inference-mode forwards: the count is the benchmarks' (``benchmarks/posterior_fidelity_methods.py``),
and at equal counts those methods are compared.

The count is derived from the step counter, not stored: the sampler keeps no extra state (saved
files and checkpoints keep their layout).  What the first ``t`` batches held follows from the
batch layout of the data ``fit`` was given (:func:`layout_of`): every batch ``n`` examples, or
passes over ``E`` examples in batches of ``n`` with a smaller last batch (arrays given to ``fit``,
``make_dataset`` without ``drop_remainder``).  A ``tf.data.Dataset`` whose batches may be smaller
than the others and whose size the sampler cannot know is counted as if every batch had the size
of the step's own (exact when the batches are equal: ``drop_remainder=True``, or a repeated
stream of whole batches).  Every step is counted at the layout of the last ``fit``: a run whose
``fit`` calls change the batch size is counted as if all its steps had had the last one.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import tensorflow as tf

LOG_KEY = "gradient_evaluations"
"""The key of the running count in ``fit``'s logs (and ``history.history``)."""

LAYOUT_ATTRIBUTE = "_tf_vrre_batch_layout"
"""Where ``make_dataset`` records the :class:`BatchLayout` of its dataset (whose last batch of a
pass may be smaller, so its static batch size is unknown)."""


@dataclasses.dataclass(frozen=True)
class BatchLayout:
    """How the examples of a ``fit``'s data fall into batches.

    Fields:
      batch_size: ``n``, the size of every batch (but the last of a pass); ``None``: unknown, the
        step's own batch size is used.
      pass_size: ``E``, the examples of one pass when its last batch holds ``E - (B - 1) n < n``
        (``B = ceil(E / n)`` batches a pass); ``None``: every batch holds ``n``.
    """

    batch_size: int | None = None
    pass_size: int | None = None


def layout_of(args: dict) -> BatchLayout:
    """The :class:`BatchLayout` of ``fit``'s data (``args``: ``fit``'s arguments by name): a
    dataset's static batch size (or the layout ``make_dataset`` recorded on it); arrays in batches
    of ``batch_size`` (Keras' default 32) over the training part (``validation_split`` removed)."""
    x = args.get("x")
    if isinstance(x, tf.data.Dataset):
        shape = tf.nest.flatten(x.element_spec)[0].shape
        if shape.rank and shape[0] is not None:
            return BatchLayout(int(shape[0]))
        return getattr(x, LAYOUT_ATTRIBUTE, None) or BatchLayout()
    flat = tf.nest.flatten(x) if isinstance(x, (np.ndarray, tf.Tensor, list, tuple, dict)) else []
    if not flat or not hasattr(flat[0], "shape") or not len(flat[0].shape):
        return BatchLayout()  # a generator, PyDataset or distributed dataset
    count = int(flat[0].shape[0])
    split = args.get("validation_split") or 0.0
    if args.get("validation_data") is None and split:
        count = int(math.floor(count * (1.0 - split)))
    n = 32 if args.get("batch_size") is None else int(args["batch_size"])
    return BatchLayout(n, None if count % n == 0 else count)


def examples(steps: Any, layout: BatchLayout) -> Any:
    """The examples in the first ``steps`` batches of ``layout`` (``batch_size`` known); numpy."""
    t = np.asarray(steps, np.int64)
    n = int(layout.batch_size)
    if layout.pass_size is None:
        return t * n
    per_pass = -(-layout.pass_size // n)
    return (t // per_pass) * layout.pass_size + (t % per_pass) * n


def refreshes(steps: Any, period: int | None) -> Any:
    """Snapshot refreshes (full passes) in the first ``steps`` steps: ``ceil(steps / m)``; 0 without."""
    t = np.asarray(steps, np.int64)
    return np.zeros_like(t) if period is None else -(-t // int(period))


def gradient_evaluations(
    steps: Any,
    num_chains: int,
    batch_size: int,
    data_size: int,
    period: int | None = None,
    pass_size: int | None = None,
) -> Any:
    """Per-example gradient evaluations of ``steps`` steps (module docstring): ``K`` chains, batches
    of ``batch_size`` (passes of ``pass_size`` with a smaller last batch, if given), full passes
    of ``data_size`` every ``period`` steps (control variates; ``None``: none).  Works on arrays.

    Example:
      >>> int(gradient_evaluations(100, num_chains=2, batch_size=64, data_size=1437, period=44))
      21422
      >>> int(gradient_evaluations(23, num_chains=1, batch_size=64, data_size=1437, pass_size=1437))  # a pass
      1437
    """
    layout = BatchLayout(int(batch_size), pass_size)
    return int(num_chains) * (examples(steps, layout) + int(data_size) * refreshes(steps, period))


def per_step(num_chains: int, batch_size: int, data_size: int, period: int | None = None) -> float:
    """The mean cost of a step at a constant batch: ``K n + K N / m`` (``K n`` without control variates).

    Example:
      >>> per_step(2, 100, 1000, period=4)     # the mixture study: 3.5x a step of mini-batch energies
      700.0
    """
    return float(num_chains) * (batch_size + (0.0 if period is None else data_size / period))


def steps_within(budget: float, num_chains: int, batch_size: int, data_size: int, period: int | None = None) -> int:
    """The most steps whose :func:`gradient_evaluations` (constant batch) is at most ``budget``.

    Example:
      >>> steps_within(1e6, 2, 100, 1000, period=4)
      1428
    """
    t = max(0, int(math.floor(budget / per_step(num_chains, batch_size, data_size, period))) + 2)
    while t > 0 and gradient_evaluations(t, num_chains, batch_size, data_size, period) > budget:
        t -= 1
    return t


def of_step(sampler: Any, step: tf.Tensor, size: tf.Tensor) -> tf.Tensor:
    """In ``sampler``'s train step: the count after step ``step`` (this one included), ``size``
    the global size of its batch (:func:`logged` with the sampler's chains, data size, refresh
    period and the batch layout of its last ``fit``)."""
    vr = sampler.variance_reduction
    period = None if vr is None else vr.period
    return logged(step + 1, size, sampler._batch_layout, sampler.num_chains, sampler.data_size, period)


def logged(
    steps_done: tf.Tensor,
    size: tf.Tensor,
    layout: BatchLayout | None,
    num_chains: int,
    data_size: int,
    period: int | None,
) -> tf.Tensor:
    """In the train step: the float64 count after ``steps_done`` steps (this one included), ``size``
    the global size of this step's batch (used where ``layout`` does not know ``n``)."""
    t = tf.cast(steps_done, tf.float64)
    if layout is None or layout.batch_size is None:
        seen = t * tf.cast(size, tf.float64)
    elif layout.pass_size is None:
        seen = t * float(layout.batch_size)
    else:
        n, per_pass = layout.batch_size, -(-layout.pass_size // layout.batch_size)
        passes = tf.math.floordiv(t, float(per_pass))
        seen = passes * float(layout.pass_size) + (t - passes * per_pass) * float(n)
    full = 0.0 if period is None else tf.math.ceil(t / float(period)) * float(data_size)
    return float(num_chains) * (seen + full)
