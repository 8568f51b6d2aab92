"""Training batches that carry their example indices, in an order that survives restarts.

Data epoch ``e`` is the stateless permutation ``shuffle(fold(key, e))`` of ``0..N-1``; a stream
starts at the sampler's step counter (read when the iterator yields its first batch), so a run
resumed from a checkpoint sees exactly the batches the uninterrupted run would have seen.
Used by :meth:`tf_vrre.ReplicaExchangeSampler.make_dataset`.
"""

import tensorflow as tf

from tf_vrre.sgmcmc import seeds
from tf_vrre.sampler.batch import INDEX_KEY


def epoch_order(key, epoch, num_examples, shuffle=True):
    """Example order of data epoch ``epoch``: a stateless permutation (or ``0..N-1``)."""
    order = tf.range(num_examples, dtype=tf.int64)
    if shuffle:
        order = tf.random.experimental.stateless_shuffle(order, seeds.fold(key, epoch))
    return order


def indexed_dataset(arrays, counter, batch_size, key, shuffle=True, repeat=False, drop_remainder=False):
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
            n, drop_remainder=drop_remainder)

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
