"""Stateless seed derivation: one key per step, split by purpose.

Every random draw inside the compiled train step is a *stateless* op whose seed is
derived from ``(base seed, step counter, salt)``.  The draws are therefore identical on
every replica of a ``tf.distribute`` strategy (mirrored copies stay bit-identical) and the
whole trajectory is a deterministic function of the seed.
"""

import tensorflow as tf

# Salts: one per purpose, so that different draws of the same step never share a key.
NOISE = 1
SWAP_UNIFORM = 2
SWAP_PAIR = 3
DATA = 4  # data order of ReplicaExchangeSampler.make_dataset (folded with the data epoch)


def base_key(seed):
    """Returns the ``[2]`` int64 key for an integer ``seed``."""
    return tf.constant([int(seed), 0x5EED], dtype=tf.int64)


def fold(key, data):
    """Folds an integer (or int tensor) into ``key``: a new independent key."""
    return tf.random.experimental.stateless_fold_in(key, tf.cast(data, tf.int64), alg="philox")


def step_key(key, step):
    """The key of step ``step``: split once per step, then by purpose with :func:`fold`."""
    return fold(key, step)


def tfp_seed(key):
    """The int32 ``[2]`` seed that TensorFlow Probability's stateless samplers take, from an
    int64 key (each 64-bit word folded to 32 bits by XOR of its halves)."""
    words = tf.reshape(tf.bitcast(tf.cast(key, tf.int64), tf.int32), [2, 2])
    return tf.bitwise.bitwise_xor(words[:, 0], words[:, 1])
