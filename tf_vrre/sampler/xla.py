"""When to compile the train step with XLA (``compile(jit_compile="auto")``).

Measured on a 2-core CPU (``python benchmarks/xla_speed.py``; docs/benchmarks/xla-speed.md): XLA makes the
small dense models' steps faster (the 1-D mixture: 0.51 -> 0.18 ms per step) and convolutional
nets' steps slower (ResNet-8, 2 chains with VR, batch 128: 275 -> 660 ms); XLA does not compile
under ``MirroredStrategy`` on CPU.  On GPUs fused steps are the fast path, and TPUs run only
XLA-compiled steps.  So ``"auto"`` means:

- a TPU strategy or a visible GPU: XLA;
- CPU with more than one replica in sync: no XLA;
- CPU, one replica: XLA unless the model has convolution layers.
"""

import os

import keras
import tensorflow as tf

from tf_vrre import _keras_compat

JIT_CHOICES = (True, False, "auto")
ENV = "TF_VRRE_JIT_COMPILE"
"""Environment variable with the default of ``compile(jit_compile=None)``: ``auto`` (default), ``1``, ``0``."""


def default():
    """The ``jit_compile`` used when ``compile`` is not given one: ``$TF_VRRE_JIT_COMPILE`` or ``"auto"``."""
    value = os.environ.get(ENV, "auto").strip().lower()
    choices = {"auto": "auto", "1": True, "true": True, "0": False, "false": False}
    if value not in choices:
        raise ValueError(f"{ENV} must be one of auto, 1, 0 (true/false), got {value!r}")
    return choices[value]


def is_tpu_strategy(strategy=None):
    """True if ``strategy`` (default: the current one) is a ``TPUStrategy``."""
    strategy = strategy or tf.distribute.get_strategy()
    return "TPUStrategy" in type(strategy).__name__


def has_convolutions(model):
    """True if ``model`` contains a convolution layer (any rank, incl. depthwise / transposed)."""
    return any(
        isinstance(layer, keras.layers.Layer) and "Conv" in type(layer).__name__
        for layer in _keras_compat.flatten_layers(model)
    )


def resolve_jit_compile(jit_compile, model):
    """The bool behind ``jit_compile`` (``True``, ``False``, ``"auto"``; ``None``: :func:`default`) for ``model``."""
    if jit_compile is None:
        jit_compile = default()
    if jit_compile not in JIT_CHOICES or (jit_compile != "auto" and not isinstance(jit_compile, bool)):
        raise ValueError(f"jit_compile must be True, False or 'auto', got {jit_compile!r}")
    if jit_compile != "auto":
        return jit_compile
    strategy = tf.distribute.get_strategy()
    if is_tpu_strategy(strategy) or tf.config.list_logical_devices("GPU"):
        return True
    if strategy.num_replicas_in_sync > 1:
        return False
    return not has_convolutions(model)
