"""The sampler's data: the reference data of the full pass, and training batches that carry
their example indices, in an order that survives restarts.

Data epoch ``e`` is the stateless permutation ``shuffle(fold(key, e))`` of ``0..N-1``; a stream
starts at the sampler's step counter (read when the iterator yields its first batch), so a run
resumed from a checkpoint sees exactly the batches the uninterrupted run would have seen.
:func:`reference` and :func:`from_reference` are the bodies of the sampler's
``set_reference_data`` and ``make_dataset`` (:class:`ReferenceData`).
"""

from __future__ import annotations

import numbers
from typing import Any

import tensorflow as tf

import tf_vrre.sampler.cost as cost
import tf_vrre.sampler.input_checks as input_checks
from tf_vrre.sampler.batch import INDEX_KEY
from tf_vrre.sgmcmc import control_variates, seeds


def epoch_order(key: tf.Tensor, epoch: Any, num_examples: int, shuffle: bool = True) -> tf.Tensor:
    """Example order of data epoch ``epoch``: a stateless permutation (or ``0..N-1``)."""
    order = tf.range(num_examples, dtype=tf.int64)
    if shuffle:
        order = tf.random.experimental.stateless_shuffle(order, seeds.fold(key, epoch))
    return order


def indexed_dataset(
    arrays: list,
    counter: Any,
    batch_size: int,
    key: tf.Tensor,
    shuffle: bool = True,
    repeat: bool = False,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """``(x, y, {"example_index": i})`` batches of ``arrays`` starting at batch ``counter``.

    Args:
      arrays: list of in-memory tensors with ``N`` rows: ``[x]``, ``[x, y]`` or ``[x, y, w]``
        (``y`` is zeros for unlabeled data; ``w`` goes to ``"sample_weight"``).
      counter: int64 variable (the sampler's step counter), read when iteration starts.
      batch_size: ``n``; key: data-order key; shuffle: a new permutation every data epoch.
      repeat: an endless stream starting at batch ``counter``; otherwise one whole data epoch,
        number ``ceil(counter / batches_per_epoch)``.
      drop_remainder: drop the last partial batch of every data epoch.
    """
    N = int(tf.nest.flatten(arrays)[0].shape[0])
    n = int(batch_size)
    per_epoch = N // n if drop_remainder else -(-N // n)

    def epoch_batches(e):
        return tf.data.Dataset.from_tensor_slices(epoch_order(key, e, N, shuffle)).batch(
            n, drop_remainder=drop_remainder
        )

    def stream(_):
        start = tf.convert_to_tensor(counter)  # read when the iterator first yields
        if not repeat:  # one whole data epoch: the first one not yet (fully) started
            return epoch_batches((start + per_epoch - 1) // per_epoch)
        first = start // per_epoch
        return tf.data.Dataset.range(first, tf.int64.max).flat_map(epoch_batches).skip(start % per_epoch)

    def take(i):
        got = [tf.gather(p, i) for p in arrays]
        extra = {INDEX_KEY: i}
        if len(got) == 1:
            got.append(tf.zeros(tf.shape(i), tf.float32))
        if len(got) == 3:
            extra["sample_weight"] = got.pop()
        return got[0], got[1], extra

    ds = tf.data.Dataset.from_tensors(0).flat_map(stream).map(take)
    ds = ds.repeat() if repeat else ds.apply(tf.data.experimental.assert_cardinality(per_epoch))
    ds = ds.prefetch(2)
    options = tf.data.Options()
    options.autotune.enabled = False  # autotuning stalled short fit() calls in benchmarks
    return ds.with_options(options)


def carries_order(x: Any) -> bool:
    """Whether ``fit``'s input ``x`` carries its own order: a ``tf.data.Dataset`` (e.g. from
    :func:`from_reference`, the sampler's ``make_dataset``) or a distributed one.  Keras cannot
    shuffle such an input: its ``fit`` ignores ``shuffle=True`` (its default) and warns
    "``shuffle=True`` was passed, but will be ignored"; the sampler's ``fit`` passes
    ``shuffle=False`` for it unless the caller gave ``shuffle``."""
    return isinstance(x, (tf.data.Dataset, tf.distribute.DistributedDataset))


def reference(sampler: Any, data: Any, batch_size: int | None) -> control_variates.Reference:
    """:meth:`tf_vrre.ReplicaExchangeSampler.set_reference_data`'s data, checked (structure, dtypes,
    lengths, finite values, labels) and wrapped as a :class:`tf_vrre.sgmcmc.control_variates.Reference`."""
    if sampler.variance_reduction is None:
        raise ValueError("set_reference_data: the sampler has no variance_reduction")
    batch_size = sampler.variance_reduction.batch_size if batch_size is None else batch_size
    input_checks.check_batch_size("set_reference_data", batch_size)
    if not isinstance(data, tf.data.Dataset):
        data = input_checks.check_reference(sampler, data)
    return control_variates.make_reference(data, batch_size, sampler.data_size)


def from_reference(
    sampler: Any,
    batch_size: int,
    shuffle: bool = True,
    seed: int | None = None,
    repeat: bool = False,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """:meth:`tf_vrre.ReplicaExchangeSampler.make_dataset`: :func:`indexed_dataset` of the sampler's
    in-memory reference data, its order keyed by ``seed`` (default the sampler's), starting at
    the sampler's step."""
    ref = sampler._reference
    if ref is None or isinstance(ref.source, tf.data.Dataset):
        raise ValueError("make_dataset: call set_reference_data with in-memory arrays first")
    input_checks.check_batch_size("make_dataset", batch_size, sampler.data_size)
    for name, value in (("shuffle", shuffle), ("repeat", repeat), ("drop_remainder", drop_remainder)):
        if not isinstance(value, bool):
            raise TypeError(f"make_dataset: {name} must be True or False, got {value!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise TypeError(f"make_dataset: seed must be an integer or None, got {seed!r}")
    parts = list(ref.source) if isinstance(ref.source, (tuple, list)) else [ref.source]
    key = seeds.fold(seeds.base_key(sampler.seed if seed is None else seed), seeds.DATA)
    ds = indexed_dataset(
        parts, sampler.state.step, batch_size, key, shuffle=shuffle, repeat=repeat, drop_remainder=drop_remainder
    )
    if not drop_remainder and sampler.data_size % batch_size:  # passes with a smaller last batch: the cost count
        setattr(ds, cost.LAYOUT_ATTRIBUTE, cost.BatchLayout(int(batch_size), sampler.data_size))
    return ds


class ReferenceData:
    """Mixin of :class:`tf_vrre.ReplicaExchangeSampler`: its reference data (the full pass of the
    control variates) and the indexed training batches drawn from it."""

    def set_reference_data(self, data: Any, batch_size: int | None = None) -> None:
        """Sets the full training data used for the snapshot energies ``U_hat`` (VR only).

        Args:
          data: ``(x, y)`` arrays, ``x`` alone (unlabeled models), or a ``tf.data.Dataset``
            yielding batches with the same structure as the training batches.  It must hold
            exactly ``data_size`` examples with the preprocessing of the mini-batch energies
            (normally: no augmentation).
          batch_size: full-pass batch size (default ``variance_reduction.batch_size``).
        """
        self._reference = reference(self, data, batch_size)
        self._reference_checked = input_checks.loss_key(self)  # its labels were checked against this loss
        self.train_function = None  # retrace with the new dataset

    def make_dataset(
        self,
        batch_size: int,
        shuffle: bool = True,
        seed: int | None = None,
        repeat: bool = False,
        drop_remainder: bool = False,
    ) -> tf.data.Dataset:
        """Training batches drawn from the reference data, each carrying its example indices.

        Elements are ``(x, y, {"example_index": i})`` (``y`` is zeros for unlabeled data; a
        sample weight in the reference data is carried as ``"sample_weight"``).  With
        ``ControlVariates(cache=True)`` the snapshot energies of these batches are read from the
        per-example table of the last full pass, so VR costs no snapshot forward per step.
        Do not add random augmentation to these batches (the cache would no longer match).

        The order is a pure function of the seed and the step counter
        (:func:`tf_vrre.sampler.datasets.indexed_dataset`): a resumed run sees exactly the batches of
        the uninterrupted one, and a second ``fit`` continues the stream instead of restarting it.

        Args:
          batch_size: mini-batch size ``n``.
          shuffle: a new permutation every data epoch (seeded by ``seed``, default the
            sampler's seed); ``False``: the reference order.
          repeat: an endless stream (then pass ``steps_per_epoch`` to ``fit``), starting at
            batch ``state.step``; otherwise each iterator yields one whole data epoch, number
            ``ceil(state.step / batches_per_epoch)``.
          drop_remainder: drop the last partial batch of every data epoch.
        """
        return from_reference(self, batch_size, shuffle, seed, repeat, drop_remainder)
