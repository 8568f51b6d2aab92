"""Cross-replica helpers for code that runs inside ``tf.distribute`` replica contexts.

Replicated placement (every replica holds every chain, the batch is split): everything the
chains must agree on (gradients, energies, variance statistics, the full-data pass) is summed
with :func:`all_reduce`; outside a strategy (or with one replica) it is the identity, so the same
train step runs on one device and under ``MirroredStrategy``.  Chain-per-replica placement
(replica ``r`` holds chain ``r`` and the whole batch): nothing is summed across replicas; the
per-chain numbers a swap needs are collected with one :func:`all_gather` per step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from tf_vrre import _keras_compat

_records: list | None = None  # (kind, shape, dtype) of each collective traced while recording


@contextlib.contextmanager
def recording() -> Iterator[list]:
    """Records the payload ``(kind, shape, dtype)`` every replica hands to :func:`all_reduce` /
    :func:`all_gather` while a step is traced inside (:mod:`tf_vrre.sampler.traffic`)."""
    global _records
    _records = []
    try:
        yield _records
    finally:
        _records = None


def _record(kind: str, value: Any) -> None:
    if _records is not None:
        _records.extend((kind, t.shape, t.dtype) for t in tf.nest.flatten(value))


def all_reduce(value: Any) -> Any:
    """Sum of ``value`` (any nest of tensors) over the replicas in sync."""
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return value
    _record("all_reduce", value)
    return ctx.all_reduce("sum", value)


def all_gather(value: tf.Tensor) -> tf.Tensor:
    """``[R, ...]``: ``value`` (shape ``[...]``) of every replica in sync, in replica order (one
    collective); ``value[None]`` outside a strategy."""
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return value[None]
    _record("all_gather", value)
    return ctx.all_gather(value[None], axis=0)


def replicas() -> tuple[int, tf.Tensor]:
    """``(number of replicas in sync, this replica's id as int64)``; ``(1, 0)`` outside a strategy."""
    ctx = tf.distribute.get_replica_context()
    num = 1 if ctx is None else ctx.num_replicas_in_sync
    rid = tf.constant(0, tf.int64) if num == 1 else tf.cast(ctx.replica_id_in_sync_group, tf.int64)
    return num, rid


def batch_size(x: Any) -> tf.Tensor:
    """Local batch size of ``x`` (the first tensor of any nest)."""
    return tf.shape(tf.nest.flatten(x)[0])[0]


def multi_worker() -> bool:
    """True under ``MultiWorkerMirroredStrategy`` with more than one worker."""
    strategy = tf.distribute.get_strategy()
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and _keras_compat.in_multi_worker_mode(
        strategy
    )


def reducible_logs(logs: dict) -> dict:
    """Logs that Keras can reduce across workers: Keras reduces multi-worker logs with
    ``strategy.reduce("MEAN", v, axis=0)``, which rejects scalars, so each becomes a ``[1]``
    vector (identical on every replica: the mean is the value)."""
    if not multi_worker():
        return logs
    return {k: tf.reshape(v, [1]) for k, v in logs.items()}


def symbolic_build(model: Any, iterator: Any) -> None:
    """Keras' symbolic build of ``model`` from the first replica's first batch, instead of the
    cross-replica MEAN Keras takes (which fails under ``MultiWorkerMirroredStrategy`` for
    integer batches: the example indices)."""
    local = model.distribute_strategy.experimental_local_results
    data_batch = None
    it = _keras_compat.first_batch_iterator(iterator)
    if it is not None:
        data_batch = tf.nest.map_structure(
            lambda v: local(v)[0] if isinstance(v, tf.distribute.DistributedValues) else v, next(it)
        )
    with model.distribute_strategy.scope():
        _keras_compat.symbolic_build(model, data_batch)
