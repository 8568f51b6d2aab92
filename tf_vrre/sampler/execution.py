"""The execution options ``compile`` accepts under the sampler's ``tf.distribute`` strategy.

Two options cannot run under a strategy of several replicas, whatever the placement of the chains
(``"replicated"`` or ``"chain_per_replica"``), and fail at the first step with raw graph errors
if they get that far:

- ``steps_per_execution > 1`` outside a TPU: Keras 3's multi-step loop fails under
  ``MirroredStrategy`` and ``MultiWorkerMirroredStrategy`` ("You must feed a value for placeholder
  tensor ...", also for a plain ``Dense`` model: keras-team/keras#19246);
- XLA (``jit_compile=True``, or ``None`` with ``$TF_VRRE_JIT_COMPILE=1``) with CPU devices only:
  XLA implements no collective op between CPU devices.  ``"auto"`` turns XLA off there
  (:mod:`tf_vrre.sampler.xla`).

:func:`check` is that rule: the sampler's ``compile`` applies it, and ``tf-vrre train`` /
``tf_vrre.train`` apply the same function to their flags once the strategy exists.  A refusal is
an :class:`ExecutionError` naming the argument and the values allowed under the strategy.

Example:
  >>> import tensorflow as tf
  >>> check(tf.distribute.get_strategy(), jit_compile=True, steps_per_execution=8)  # one replica: both run
  >>> class TwoCpuReplicas:       # a MirroredStrategy over two CPU devices, say
  ...     num_replicas_in_sync = 2
  >>> check(TwoCpuReplicas(), jit_compile="auto", steps_per_execution=4)
  Traceback (most recent call last):
  ...
  tf_vrre.sampler.execution.ExecutionError: compile: steps_per_execution=4 cannot run under TwoCpuReplicas with 2 replicas: Keras 3's multi-step loop fails under multi-replica strategies other than TPUStrategy (keras-team/keras#19246); allowed here: steps_per_execution=1
"""

from __future__ import annotations

import numbers
from typing import Any

import tensorflow as tf

import tf_vrre.sampler.xla as xla
from tf_vrre import errors

__all__ = ["ExecutionError", "check"]

MULTI_STEP_BUG = "keras-team/keras#19246"


class ExecutionError(errors.TfVrreError, ValueError):
    """An execution option of ``compile`` that cannot run under the sampler's strategy.

    Attributes:
      argument: ``"steps_per_execution"`` or ``"jit_compile"``.
      value: the value refused (for ``jit_compile=None``: the one ``$TF_VRRE_JIT_COMPILE`` gave).
      reason: why it cannot run, with the strategy and its replicas.
      allowed: the values that run under the strategy (Python spelling).
      source: where the value came from when it was not given (``"$TF_VRRE_JIT_COMPILE"``), else ``None``.
    """

    def __init__(self, argument: str, value: Any, reason: str, allowed: str, source: str | None = None) -> None:
        self.argument, self.value, self.reason, self.allowed, self.source = argument, value, reason, allowed, source
        given = f" (from {argument}=None: {source})" if source else ""
        super().__init__(f"compile: {argument}={value!r}{given} {reason}; allowed here: {allowed}")


def check(strategy: Any, jit_compile: bool | str | None = None, steps_per_execution: int = 1) -> None:
    """Refuses the execution options that cannot run under ``strategy`` (see the module docstring).

    Args:
      strategy: a ``tf.distribute`` strategy (anything with ``num_replicas_in_sync``).
      jit_compile: as ``compile`` takes it: ``True``, ``False``, ``"auto"`` or ``None``
        (``$TF_VRRE_JIT_COMPILE``, else ``"auto"``).
      steps_per_execution: train steps per compiled call, an integer >= 1.

    Raises:
      ExecutionError: naming the argument and the values allowed under ``strategy``.
      ValueError: ``steps_per_execution`` is not an integer >= 1.
    """
    if (
        isinstance(steps_per_execution, bool)
        or not isinstance(steps_per_execution, numbers.Integral)
        or steps_per_execution < 1
    ):
        raise ValueError(f"compile: steps_per_execution must be an integer >= 1, got {steps_per_execution!r}")
    replicas = int(strategy.num_replicas_in_sync)
    if replicas < 2 or xla.is_tpu_strategy(strategy):
        return
    name = type(strategy).__name__
    if steps_per_execution > 1:
        raise ExecutionError(
            "steps_per_execution",
            int(steps_per_execution),
            f"cannot run under {name} with {replicas} replicas: Keras 3's multi-step loop fails under "
            f"multi-replica strategies other than TPUStrategy ({MULTI_STEP_BUG})",
            "steps_per_execution=1",
        )
    if tf.config.list_logical_devices("GPU"):
        return
    value = xla.default() if jit_compile is None else jit_compile
    if value is True:
        raise ExecutionError(
            "jit_compile",
            True,
            f"cannot run under {name} with {replicas} replicas on CPU devices: XLA cannot compile the "
            "all-reduces between CPU devices",
            "jit_compile=False or 'auto' (XLA off under several CPU replicas)",
            f"${xla.ENV}" if jit_compile is None else None,
        )
