"""Where the chains live under a ``tf.distribute`` strategy (``ReplicaExchangeSampler(placement=...)``).

``"replicated"`` (the default): every replica holds all K chains (mirrored variables) and a
``1/R`` shard of each batch; gradients, energies and the full-data pass are all-reduced, so the
chains' weights are updated identically everywhere.  ``"chain_per_replica"``: a strategy with as
many replicas as chains (``MirroredStrategy``, ``TPUStrategy``, ``MultiWorkerMirroredStrategy``);
replica ``r`` holds chain ``r`` only, in per-replica variables (weights, BatchNorm statistics,
velocities, snapshot, ``U_hat``, cached NLLs), computes that chain's forward pass and gradient on
the *whole* batch of the step, and the K chains exchange one ``all_gather`` per step: their
energies and per-example swap energies (the swap's ``sigma^2`` estimates
``Var(U~_lo - U~_hi)`` on one batch, which needs both chains' per-example values).  An accepted
swap exchanges rungs, the temperature and learning rate, between two chains
(:func:`tf_vrre.sgmcmc.state.exchange_labels`); the weights never move.  Noise is keyed by the rung
a chain holds, so the chain-per-replica run is the one-device run, up to float round-off.

The sampler's saved variables (``sampler.chains``, ``snapshots``, velocities, ``U_hat``, cached
NLLs) are then a *host copy* of the chains in rung order (slot ``k``: the chain holding rung
``k``), kept on the host CPU as plain variables (:class:`HostCopy`): written to the replicas at
the first step of each ``fit`` (chain ``r`` <- slot ``r``), read back when ``fit`` ends, before
``save`` / ``save_weights`` / a :class:`tf_vrre.Checkpoint`, and (the cold chain alone) when
``sampler.cold_model`` is read.  So files keep the one-device layout and load into a sampler of
either placement.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np
import tensorflow as tf

import tf_vrre.sampler.construction as construction
import tf_vrre.sampler.invariants as invariants
from tf_vrre import _keras_compat, _user_warning, errors
from tf_vrre.sgmcmc.state import ChainState, ControlVariateState, ReplicaChain

PLACEMENTS = ("replicated", "chain_per_replica")
_STRATEGIES = "MirroredStrategy, TPUStrategy or MultiWorkerMirroredStrategy"


class PlacementError(errors.TfVrreError, ValueError):
    """A model the placement of the chains cannot run (one line naming the layer and why)."""


def is_tpu(strategy: Any) -> bool:
    return "TPUStrategy" in type(strategy).__name__


def check(placement: Any, num_chains: int) -> Any:
    """The strategy a ``placement`` runs under (``None`` for ``"replicated"``), or a ``ValueError``
    naming why it cannot apply, before anything is built."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    if placement == "replicated":
        return None
    how = (
        f"build the sampler inside `with strategy.scope():` of a {_STRATEGIES} with num_chains ({num_chains}) replicas"
    )
    if not tf.distribute.has_strategy():
        raise ValueError(
            f"placement='chain_per_replica' runs one chain per replica of a tf.distribute strategy, "
            f"but no strategy is in scope: {how}"
        )
    strategy = tf.distribute.get_strategy()
    if not (
        isinstance(strategy, (tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy))
        or is_tpu(strategy)
    ):
        raise ValueError(f"placement='chain_per_replica' is not available under {type(strategy).__name__}: {how}")
    replicas = strategy.num_replicas_in_sync
    if replicas != num_chains:
        raise ValueError(
            f"placement='chain_per_replica' runs one chain per replica: num_chains={num_chains} but the "
            f"{type(strategy).__name__} has {replicas} replicas in sync; use num_chains={replicas}, or "
            f"a strategy over {num_chains} devices"
        )
    return strategy


def for_loading(arguments: dict) -> dict:
    """The constructor ``arguments`` a loaded sampler is rebuilt with (``from_config``): its saved
    ``placement`` where it applies in the current scope, else ``"replicated"`` with a warning
    saying why.  A file of either placement holds the chains in rung order, so a
    chain-per-replica run loads on a laptop and a one-device run into a strategy of K replicas."""
    if arguments.get("placement") != "chain_per_replica":
        return arguments
    try:
        check("chain_per_replica", arguments["num_chains"])
    except ValueError as err:
        _user_warning.warn(  # at the user's load_model / from_config, not inside Keras' deserialization
            f"loading the sampler with placement='replicated' (saved with 'chain_per_replica', which "
            f"cannot apply here: {err})"
        )
        return {**arguments, "placement": "replicated"}
    return arguments


def check_model(model: keras.Model) -> None:
    """:class:`PlacementError` for layers that mix the chains of different replicas: a
    synchronized ``BatchNormalization`` averages its batch statistics across replicas, i.e. across
    chains with one chain per replica.  The sampler checks the first model ``model_fn`` returns,
    before it builds the others."""
    for layer in _keras_compat.flatten_layers(model):
        if isinstance(layer, keras.layers.BatchNormalization) and getattr(layer, "synchronized", False):
            raise PlacementError(
                f"placement='chain_per_replica': model_fn builds BatchNormalization(synchronized=True) "
                f"({layer.name!r}), which averages batch statistics across replicas, i.e. across chains here; "
                "build it with synchronized=False (every replica sees the whole batch, so its statistics are "
                "the one-device ones)"
            )


@contextlib.contextmanager
def per_replica_variables() -> Iterator[None]:
    """Variables created inside hold one value per replica (``ON_READ``): replica ``r``'s value is
    chain ``r``'s.  TensorFlow marks them non-trainable (Keras still does: gradients watch them)."""

    def creator(next_creator, **kwargs):
        kwargs.update(
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            trainable=False,
        )
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
        yield


def host_device(strategy: Any) -> str:
    """The CPU of the host of this worker's first replica device."""
    spec = tf.DeviceSpec.from_string(strategy.extended.worker_devices[0])
    return spec.replace(device_type="CPU", device_index=0).to_string()


@contextlib.contextmanager
def host_variables(strategy: Any) -> Iterator[None]:
    """Variables created inside are plain variables on the host CPU (not one copy per replica)."""
    target = _keras_compat.colocate_on(host_device(strategy))

    def creator(next_creator, **kwargs):
        kwargs["colocate_with"] = target
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
        yield


HOST_VARIABLES = ("snapshot_energy", "snapshot_nll")
"""The sampler's own per-chain variables (besides ``velocity_*``) kept on the host."""


def variable_factory(new_variable: Any, strategy: Any) -> Any:
    """``new_variable`` creating per-chain variables (velocities, ``U_hat``, cached NLLs) on the
    host and the per-rung ones (ladder, swap state, coefficients) mirrored, in the same order."""

    def new(name, *args, **kwargs):
        if name.startswith("velocity_") or name in HOST_VARIABLES:
            with host_variables(strategy):
                return new_variable(name, *args, **kwargs)
        return new_variable(name, *args, **kwargs)

    return new


def build_replica(sampler: Any) -> ReplicaChain:
    """This placement's per-replica chain (model, velocities, snapshot, ``U_hat``, cached NLLs) and
    the mirrored rung map, after the host copy (so ``model_fn``'s initial weights match one device)."""
    K, vr = sampler.num_chains, sampler.variance_reduction
    with per_replica_variables():
        model = construction.build_chain(sampler.model_fn)
        velocities = None
        if sampler._diffusion.has_velocity:
            velocities = [
                [
                    keras.Variable(np.zeros(v.shape), dtype=v.dtype, trainable=False, name=f"replica_velocity_{i}")
                    for i, v in enumerate(model.trainable_weights)
                ]
            ]
        cv = None
        if vr is not None:
            snapshot = construction.build_chain(sampler.model_fn)
            energy = keras.Variable(np.zeros(1), dtype="float64", trainable=False, name="replica_snapshot_energy")
            nll = None
            if vr.cache:
                nll = keras.Variable(
                    np.zeros((1, sampler.data_size)), dtype="float32", trainable=False, name="replica_snapshot_nll"
                )
            cv = ControlVariateState([snapshot], energy, None, None, None, nll)
    check_model(model)
    rung = keras.Variable(np.arange(K, dtype=np.int32), dtype="int32", trainable=False, name="rung")
    return ReplicaChain(ChainState([model], velocities), cv, rung)


class HostCopy:
    """The host copy of the chains (the sampler's saved per-chain variables, rung order) and the
    chains on the replicas: which one is current, and the copies between them.

    The replicas are current from the first step of a ``fit`` (:meth:`push`) until the host copy
    is refreshed (:meth:`pull`); anything that reads or writes the host copy goes through the
    sampler, which calls these first.
    """

    def __init__(self, sampler: Any, strategy: Any):
        self.sampler, self.strategy = sampler, strategy
        self.pending = True  # the replicas do not hold the host copy's state (before the first step)
        self.current = True  # the host copy holds the newest state
        self.cold_current = True  # the host's cold chain (slot 0) holds the newest weights
        self._references: dict = {}  # (id of the reference data, local replica) -> its copy there
        self._gathers: dict = {}  # ids of the variables -> their cross-worker gather (a tf.function)

    # ---- which variables correspond --------------------------------------------------------
    def _pairs(self) -> list[tuple[list, Any]]:
        """``(host variables of slots 0..K-1, the per-replica variable)`` of every per-chain model
        variable and velocity."""
        s, rep = self.sampler, self.sampler.state.replica
        pairs = [([c.weights[i] for c in s.chains], w) for i, w in enumerate(rep.chains.models[0].weights)]
        if rep.chains.velocities is not None:
            host = s.state.chains.velocities
            pairs += [([host[k][i] for k in range(s.num_chains)], v) for i, v in enumerate(rep.chains.velocities[0])]
        if rep.control_variates is not None:
            snaps = s.state.control_variates.snapshots
            pairs += [
                ([m.weights[i] for m in snaps], w) for i, w in enumerate(rep.control_variates.snapshots[0].weights)
            ]
        return pairs

    def _rows(self) -> list[tuple[Any, Any]]:
        """``(host variable [K, ...], per-replica variable [1, ...])``: ``U_hat`` and cached NLLs."""
        s, rep = self.sampler, self.sampler.state.replica
        if rep.control_variates is None:
            return []
        host, local = s.state.control_variates, rep.control_variates
        rows = [(host.snapshot_energy, local.snapshot_energy)]
        if local.snapshot_nll is not None:
            rows.append((host.snapshot_nll, local.snapshot_nll))
        return rows

    def _local(self, variable: Any) -> tuple:
        return self.strategy.experimental_local_results(variable.value)

    def _first_replica(self) -> int:
        """Global replica id of this worker's first local replica."""
        if not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return 0
        task = tf.DeviceSpec.from_string(self.strategy.extended.worker_devices[0]).task or 0
        return int(task) * len(self.strategy.extended.worker_devices)

    # ---- copies ----------------------------------------------------------------------------------
    def push(self) -> None:
        """Replica ``r`` <- slot ``r`` of the host copy; every chain holds its slot's rung again."""
        first = self._first_replica()
        for hosts, var in self._pairs():
            for j, part in enumerate(self._local(var)):
                part.assign(hosts[first + j])
        for host, var in self._rows():
            for j, part in enumerate(self._local(var)):
                part.assign(host[first + j][None])
        self.sampler.state.replica.rung.assign(np.arange(self.sampler.num_chains, dtype=np.int32))
        self.pending, self.current, self.cold_current = False, True, True

    def trained(self) -> None:
        """The replicas took steps: the host copy is out of date."""
        self.current = self.cold_current = False

    def begin_fit(self) -> None:
        """A ``fit`` starts: refresh the host copy (restores in ``on_train_begin`` write it), then
        write it to the replicas at the first step."""
        self.pull()
        self.pending = True

    def wrote_host(self) -> None:
        """The host copy was loaded from a file: the replicas receive it at the next step."""
        self.pending, self.current, self.cold_current = True, True, True

    def pull(self, cold_only: bool = False) -> None:
        """Host copy <- the replicas, in rung order (only the cold chain's weights with ``cold_only``)."""
        if self.pending or self.current or (cold_only and self.cold_current):
            return
        holder = np.argsort(keras.ops.convert_to_numpy(self.sampler.state.replica.rung))  # rung -> chain
        pairs = self._pairs()
        if cold_only:
            pairs = pairs[: len(self.sampler.state.replica.chains.models[0].weights)]
        slots = [0] if cold_only else range(self.sampler.num_chains)
        gathered = self._gather([var for _, var in pairs] + ([] if cold_only else [v for _, v in self._rows()]))
        for (hosts, _), parts in zip(pairs, gathered):
            for k in slots:
                hosts[k].assign(parts[holder[k]])
        if not cold_only:
            for (host, _), parts in zip(self._rows(), gathered[len(pairs) :]):
                host.assign(tf.concat([parts[holder[k]] for k in slots], 0))
            self.current = True
        self.cold_current = True

    def reference(self, reference: Any) -> Any:
        """``reference`` (:class:`tf_vrre.sgmcmc.control_variates.Reference`) with its in-memory
        data copied once to the device of the replica tracing the step, so the full pass of each
        chain reads local data (as its weights) instead of copying the data set from the first
        device at every refresh.  Unchanged for a ``tf.data`` reference or when the replica id is
        not static (``TPUStrategy`` traces one program for all cores)."""
        if isinstance(reference.source, tf.data.Dataset):
            return reference
        rid = tf.get_static_value(tf.distribute.get_replica_context().replica_id_in_sync_group)
        if rid is None:
            return reference
        local = int(rid) - self._first_replica()
        key = (id(reference), local)
        if key not in self._references:
            with tf.init_scope(), tf.device(self.strategy.extended.worker_devices[local]):
                source = tf.nest.map_structure(tf.identity, reference.source)
            self._references = {k: v for k, v in self._references.items() if k[0] == id(reference)}
            self._references[key] = reference._replace(source=source)
        return self._references[key]

    def _gather(self, variables: list) -> list[list[tf.Tensor]]:
        """Per variable, the values of the K chains (replica order): local on one host, one
        ``all_gather`` per variable across workers (in one ``tf.function`` per set of variables,
        traced once: run eagerly, every collective would be traced again at every call)."""
        if not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return [list(self._local(v)) for v in variables]
        key = tuple(id(v) for v in variables)
        if key not in self._gathers:

            def gather():
                ctx = tf.distribute.get_replica_context()
                return [ctx.all_gather(tf.convert_to_tensor(v)[None], axis=0) for v in variables]

            self._gathers[key] = tf.function(lambda: self.strategy.run(gather))
        out = self._gathers[key]()
        return [tf.unstack(self.strategy.experimental_local_results(o)[0]) for o in out]


def whole_batches(dataset: tf.data.Dataset, strategy: Any) -> Any:
    """``dataset`` as every replica must see it: the whole batch of each step, so that all chains
    see the same mini-batch at a step, as on one device.  Each batch is made once per worker
    (random augmentation included) and copied to its replicas; every worker reads every batch
    (its data pipeline must then be deterministic, as ``make_dataset``).

    On one worker, every batch repeated once per replica, so that the strategy's split of each
    global batch (Keras' ``experimental_distribute_dataset``) hands every replica one copy.  Under
    ``MultiWorkerMirroredStrategy`` that split would not do: each worker cuts the global batch
    into pieces of the per-worker size and takes them at successive steps (a batch would be seen
    twice, at two steps); there the dataset is distributed with
    ``distribute_datasets_from_function``, each worker's replicas taking one copy of every batch."""
    replicas = strategy.num_replicas_in_sync
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        local = len(strategy.extended.worker_devices)

        def copies(*element):
            return tf.data.Dataset.from_tensors(element if len(element) != 1 else element[0]).repeat(local)

        per_worker = dataset if local == 1 else dataset.flat_map(copies)  # local replicas take successive elements
        return strategy.distribute_datasets_from_function(lambda context: per_worker)

    def tile(t):
        return tf.tile(t, [replicas] + [1] * (t.shape.rank - 1))

    def repeat(*element):
        return tf.nest.map_structure(tile, element if len(element) != 1 else element[0])

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.map(repeat).with_options(options)


def check_fit_data(x: Any) -> None:
    """Chain-per-replica ``fit`` takes a ``tf.data.Dataset`` (every replica gets its whole batches)."""
    if isinstance(x, tf.distribute.DistributedDataset):
        raise TypeError(
            "fit: with placement='chain_per_replica' pass the tf.data.Dataset itself, not a distributed "
            "dataset: the sampler hands every replica the whole batch of each step"
        )
    if not isinstance(x, tf.data.Dataset):
        raise TypeError(
            f"fit: with placement='chain_per_replica' x must be a tf.data.Dataset of batches (e.g. "
            f"sampler.make_dataset(batch_size)), got {type(x).__name__}: every replica needs the whole "
            "batch of each step"
        )


def synced(sampler: Any, train_function: Any) -> Any:
    """``train_function`` that first writes the host copy to the replicas (first step of a
    ``fit``), marks the host copy out of date after the step, and adds the metrics of every rung
    to the logs, read across replicas on the host (each rung's metrics hold the one chain that
    held it at each step)."""
    if getattr(train_function, "_tf_vrre_synced", False):
        return train_function

    def run(iterator):
        host = sampler._host
        if host.pending:
            host.push()
        try:
            logs = train_function(iterator)
        finally:
            host.trained()
        return {**sampler._metric_logs(), **logs}

    run._tf_vrre_synced = True
    run._tf_vrre_checked = getattr(train_function, "_tf_vrre_checked", False)
    return run


class ChainPlacement:
    """Mixin of :class:`tf_vrre.ReplicaExchangeSampler`: the host copy of the chains is refreshed
    before anything reads or saves it (a no-op with ``placement="replicated"``, where ``_host`` is
    ``None``)."""

    def sync_chains(self) -> None:
        """Copies every chain from the replica that holds it into the host copy, in rung order:
        ``sampler.chains[k]`` (weights), ``snapshots[k]``, the velocities, ``U_hat`` and cached NLLs
        of slot ``k`` become those of the chain that holds rung ``k`` (slot 0: the cold chain).
        ``fit`` (when it ends), ``save``, ``save_weights`` and :class:`tf_vrre.Checkpoint` call it;
        call it yourself to read other chains than the cold one from a callback.  A no-op with
        ``placement="replicated"``."""
        if self._host is not None:
            self._host.pull()

    def chains_restored(self) -> None:
        """Tells the sampler that its saved variables were written from outside Keras' loading
        (e.g. ``tf.train.Checkpoint.restore``, as :class:`tf_vrre.Checkpoint` does): with
        ``placement="chain_per_replica"`` the devices take them at the next step.  A no-op with
        ``placement="replicated"``."""
        if self._host is not None:
            self._host.wrote_host()

    def _new_chains(self, model_fn: Any, count: int) -> list:
        """``count`` models of ``model_fn``; chain per replica: plain variables on the host (the host
        copy), the first one checked (:func:`check_model`) before the others are built."""
        with contextlib.nullcontext() if self._strategy is None else host_variables(self._strategy):
            first = construction.build_chain(model_fn)
            if self._strategy is not None:
                check_model(first)
            return [first] + [construction.build_chain(model_fn) for _ in range(count - 1)]

    def _fault_register(self) -> Any:
        """The in-graph fault register: one per replica (chain) when chain per replica."""
        if self._strategy is None:
            return invariants.FaultRegister()
        with per_replica_variables():
            return invariants.FaultRegister(self._strategy)

    def _placement_fit_check(self, x: Any) -> None:
        if self._host is not None:
            check_fit_data(x)

    def _placement_fit_arguments(self, args: tuple, kwargs: dict, x: Any) -> tuple[tuple, dict]:
        """``fit``'s arguments; chain per replica: every replica gets the whole batch, and the
        replicas get the host copy at the first step."""
        if self._host is None:
            return args, kwargs
        x = whole_batches(x, self._strategy)
        self._host.begin_fit()
        return ((x, *args[1:]), kwargs) if args else (args, {**kwargs, "x": x})

    def _sync_cold(self):
        if self._host is not None:
            self._host.pull(cold_only=True)

    def get_weights(self) -> list:
        self.sync_chains()
        return super().get_weights()

    def save_own_variables(self, store: Any) -> None:
        self.sync_chains()  # Keras saves the sampler's own variables before its chains: all current
        super().save_own_variables(store)

    def evaluate(self, *args: Any, **kwargs: Any) -> Any:
        """``keras.Model.evaluate`` of the cold chain."""
        self._sync_cold()
        return super().evaluate(*args, **kwargs)

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """``keras.Model.predict`` of the cold chain."""
        self._sync_cold()
        return super().predict(*args, **kwargs)
