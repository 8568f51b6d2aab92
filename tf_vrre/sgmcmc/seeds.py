"""Stateless seed derivation: one key per step, split by purpose.

Every random draw inside the compiled train step is a *stateless* op whose seed is
derived from ``(base seed, step counter, salt)``.  The draws are therefore identical on
every replica of a ``tf.distribute`` strategy (mirrored copies stay bit-identical) and the
whole trajectory is a deterministic function of the seed.

The draws are also the same whether or not XLA compiles the step.  TensorFlow's own stateless
float samplers (``tf.random.stateless_uniform`` / ``stateless_normal``, and TensorFlow
Probability's samplers built on them) turn the same Philox bits into *other* floats under XLA,
so a one-device step compiled with XLA (``jit_compile="auto"`` on a CPU) and the same step under
``MirroredStrategy`` (never XLA on CPUs) would run two different Markov chains.  The integer bits
agree in both modes, so :func:`uniform` and :func:`normal` convert them to floats here, with
exact integer-to-float arithmetic (uniforms: bit-identical everywhere) and a Box-Muller transform
(normals: bit-identical between graph replicas, XLA and graph agree to the last float32 ulp).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

# Salts: one per purpose, so that different draws of the same step never share a key.
NOISE = 1
SWAP_UNIFORM = 2
SWAP_PAIR = 3
DATA = 4  # data order of ReplicaExchangeSampler.make_dataset (folded with the data epoch)


def base_key(seed: int) -> tf.Tensor:
    """Returns the ``[2]`` int64 key for an integer ``seed``."""
    return tf.constant([int(seed), 0x5EED], dtype=tf.int64)


def fold(key: tf.Tensor, data: int | tf.Tensor) -> tf.Tensor:
    """Folds an integer (or int tensor) into ``key``: a new independent key."""
    return tf.random.experimental.stateless_fold_in(key, tf.cast(data, tf.int64), alg="philox")


def step_key(key: tf.Tensor, step: int | tf.Tensor) -> tf.Tensor:
    """The key of step ``step``: split once per step, then by purpose with :func:`fold`."""
    return fold(key, step)


def _bits(shape: Any, key: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
    """Philox bits of ``shape`` (``tf.uint32`` / ``tf.uint64``): the same with and without XLA."""
    return tf.random.stateless_uniform(
        shape, tf.cast(key, tf.int64), minval=None, maxval=None, dtype=dtype, alg="philox"
    )


def uniform(shape: Any, key: tf.Tensor, dtype: tf.DType = tf.float64) -> tf.Tensor:
    """Uniform draws in the open interval ``(0, 1)`` (float64: 53 random bits, float32: 24),
    computed exactly from Philox bits: identical under XLA, in the plain graph and on every
    replica (see the module docstring)."""
    dtype = tf.as_dtype(dtype)
    if dtype == tf.float64:
        bits, drop, mantissa = _bits(shape, key, tf.uint64), 11, 53
    elif dtype == tf.float32:
        bits, drop, mantissa = _bits(shape, key, tf.uint32), 8, 24
    else:
        raise ValueError(f"uniform: dtype must be float32 or float64, got {dtype.name}")
    top = tf.bitwise.right_shift(bits, tf.constant(drop, bits.dtype))
    # (k + 1/2) 2^-m for k in [0, 2^m): exact in the target type, never 0 or 1.
    return tf.cast(top, dtype) * (2.0**-mantissa) + 2.0 ** -(mantissa + 1)


def normal(num: int, key: tf.Tensor) -> tf.Tensor:
    """``num`` float32 standard normal draws (Box-Muller on :func:`uniform` pairs): a pure
    function of ``key``, the same on every replica and, to the last ulp, with and without XLA."""
    half = (int(num) + 1) // 2
    u = uniform([2, half], key, tf.float32)
    radius = tf.sqrt(-2.0 * tf.math.log(u[0]))
    angle = np.float32(2.0 * np.pi) * u[1]
    return tf.reshape(tf.stack([radius * tf.cos(angle), radius * tf.sin(angle)]), [-1])[: int(num)]
