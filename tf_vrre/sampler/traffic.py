"""What crosses devices in one training step, read from the traced step's graph.

:func:`step_traffic` traces a sampler's train step as ``fit`` runs it under its strategy
(``strategy.run`` of ``train_step`` on one distributed batch, the logs reduced across replicas)
and lists what moves between devices:

- *collectives*: every all-reduce / all-gather of the step (:mod:`tf_vrre.sgmcmc.distribute`),
  with the payload each replica contributes, recorded while the step is traced;
- *edges*: every edge of the graph (nested conditionals, loops and functions included) from an
  op on one device to an op on another, i.e. a copy of its tensor.  Devices are those the step
  assigns (``strategy.run`` places each replica's ops on its device), a variable's read or write
  runs on the variable's device, and an op without a device inherits its caller's.

The input batches are not counted: they are fed to each replica's device by the strategy's
input pipeline, outside the step.

Under a strategy with ``placement="replicated"`` the gradients of every chain are all-reduced;
with ``"chain_per_replica"`` only the swap energies are gathered (``benchmarks/placement.py``).
On one device nothing crosses:

>>> from tf_vrre.sampler import traffic
>>> sampler = toy_sampler()
>>> t = traffic.step_traffic(sampler, sampler.make_dataset(16, drop_remainder=True))
>>> t.bytes, t.largest, t.replicas
(0, 0, 1)
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

from tf_vrre import _keras_compat
from tf_vrre.sgmcmc import distribute

Transfer = collections.namedtuple("Transfer", ["kind", "source", "target", "shape", "dtype", "bytes"])
"""One tensor crossing devices: ``kind`` (``"all_reduce"``, ``"all_gather"``, ``"edge"``), devices
(``None`` for a collective), static shape, dtype name and bytes (``None`` if the shape is unknown)."""

_RESOURCE_OPS = (
    "ReadVariableOp",
    "AssignVariableOp",
    "AssignAddVariableOp",
    "AssignSubVariableOp",
    "ResourceGather",
    "VarIsInitializedOp",
    "ResourceScatterUpdate",
    "ResourceScatterAdd",
)
_CALLS = {
    "If": 1,
    "StatelessIf": 1,
    "Case": 1,
    "StatelessCase": 1,
    "While": 0,
    "StatelessWhile": 0,
    "PartitionedCall": 0,
    "StatefulPartitionedCall": 0,
}  # op type -> first input passed to the function
_FUNCTION_ATTRS = ("then_branch", "else_branch", "branches", "body", "cond", "f")


class Traffic(collections.namedtuple("Traffic", ["transfers", "replicas"])):
    """Every :data:`Transfer` of one step (``replicas``: replicas in sync)."""

    @property
    def bytes(self) -> int:
        """Bytes crossing devices per step: collective payloads of all replicas plus edges."""
        return sum(t.bytes or 0 for t in self.transfers)

    @property
    def largest(self) -> int:
        """Elements of the largest tensor crossing devices (``-1`` if a shape is unknown)."""
        sizes = [-1 if t.bytes is None else _elements(t.shape) for t in self.transfers]
        return max(sizes, default=0) if -1 not in sizes else -1

    def by_kind(self) -> dict[str, int]:
        """Bytes per kind of transfer."""
        out: dict[str, int] = {}
        for t in self.transfers:
            out[t.kind] = out.get(t.kind, 0) + (t.bytes or 0)
        return out


def _elements(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _size(shape: tf.TensorShape, dtype: tf.DType) -> int | None:
    if not shape.is_fully_defined():
        return None
    return _elements(tuple(shape.as_list())) * dtype.size


def _device(name: str | None) -> tuple | None:
    if not name:
        return None
    spec = tf.DeviceSpec.from_string(name)
    return (spec.task or 0, (spec.device_type or "").upper(), spec.device_index or 0)


class _Walk:
    """Device of every tensor of a graph and its nested functions; edges between devices."""

    def __init__(self, functions: dict):
        self.functions, self.edges = functions, []

    def graph(self, graph: Any, inputs: list, default: tuple | None) -> None:
        dev = {t.ref(): d for t, d in zip(graph.inputs, inputs)}
        for external, internal in getattr(graph, "captures", []):
            if internal.ref() not in dev or dev[internal.ref()] is None:
                dev[internal.ref()] = _device(getattr(external, "device", None))
        for op in graph.get_operations():
            if op.type == "Placeholder":
                continue
            here = _device(op.device) or default
            if op.type in _RESOURCE_OPS and op.inputs and dev.get(op.inputs[0].ref()) is not None:
                here = dev[op.inputs[0].ref()]  # runs where the variable lives
            for t in op.inputs:
                src = dev.get(t.ref())
                if src is not None and here is not None and src != here and t.dtype not in (tf.resource, tf.variant):
                    self.edges.append(
                        Transfer(
                            "edge",
                            src,
                            here,
                            tuple(t.shape.as_list()) if t.shape.rank is not None else None,
                            t.dtype.name,
                            _size(t.shape, t.dtype),
                        )
                    )
            for t in op.outputs:
                dev[t.ref()] = here
            if op.type in _CALLS:
                passed = [dev.get(t.ref()) for t in op.inputs[_CALLS[op.type] :]]
                for name in self._called(op):
                    self.graph(self.functions[name], passed, here)

    def _called(self, op: Any) -> list[str]:
        names = []
        for attr in _FUNCTION_ATTRS:
            try:
                value = op.get_attr(attr)
            except ValueError:
                continue
            for item in value if isinstance(value, list) else [value]:
                name = getattr(item, "name", item)
                name = name.decode() if isinstance(name, bytes) else str(name)
                if name in self.functions:
                    names.append(name)
        return names


def step_traffic(sampler: Any, dataset: tf.data.Dataset) -> Traffic:
    """The :class:`Traffic` of one train step of ``sampler`` (built in its strategy's scope) on
    batches of ``dataset`` (give static batch shapes, e.g. ``drop_remainder=True``).  Traces the
    step; runs nothing."""
    import tf_vrre.sampler.placements as placements

    strategy = sampler.distribute_strategy
    with strategy.scope():  # as fit: the compiled metrics' variables exist before the step is traced
        _keras_compat.symbolic_build(sampler, next(iter(dataset)))
    if sampler._host is not None:
        dataset = placements.whole_batches(dataset, strategy)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))

    @tf.function
    def step(iterator):
        logs = strategy.run(sampler.train_step, args=(next(iterator),))
        return {k: strategy.reduce("MEAN", v, axis=None) for k, v in logs.items()}

    with distribute.recording() as records:
        concrete = step.get_concrete_function(iterator)
    graph = concrete.graph
    transfers = [
        Transfer(
            kind,
            None,
            None,
            tuple(shape.as_list()) if shape.rank is not None else None,
            dtype.name,
            _size(shape, dtype),
        )
        for kind, shape, dtype in records
    ]
    replicas = strategy.num_replicas_in_sync
    # Keras reduces each log across the replicas: one scalar per log and replica
    logs = [Transfer("logs", None, None, (), "float64", 8)] * (
        len(concrete.structured_outputs) * replicas if replicas > 1 else 0
    )
    walk = _Walk(_keras_compat.graph_functions(graph))
    walk.graph(graph, [None] * len(graph.inputs), None)
    return Traffic(transfers + logs + walk.edges, replicas)
