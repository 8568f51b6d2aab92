"""Every private Keras API tf_vrre relies on (and the few private ``tf.distribute`` names), in one place.

Keras 3 has no public hook for what the sampler needs here: a model that tracks one set of
compiled metrics per chain, that builds itself from the first replica's batch under a
distribution strategy, that restores the epoch ``fit`` starts from, and that reads the input
signature ``model.export`` would use.  Each function below wraps one private name; nothing
else in tf_vrre touches a private Keras attribute.  ``ReplicaExchangeSampler`` also *overrides*
one private method, ``_maybe_symbolic_build`` (its name is :data:`SYMBOLIC_BUILD_HOOK`).

Checked against Keras 3.9.0, 3.9.2, 3.10.0, 3.11.3, 3.12.0, 3.13.0, 3.14.0 and 3.15.1 (source
read for each; the tests run on 3.9.0 with TensorFlow 2.16.1 and on 3.15.1 with TensorFlow 2.21).
``pyproject.toml`` caps Keras below the first version not checked (``keras>=3.9,<3.16``);
``tests/test_keras_compat.py`` fails on a Keras that lacks one of these names.  What changed
within that range:

- Keras 3.9-3.10: the TensorFlow trainer's epoch iterator yields ``(step, iterator)``;
  3.11 and later yield ``(begin_step, end_step, iterator)`` (:func:`first_batch_iterator`).
- ``keras.src.export.export_utils`` (:func:`input_signature`) first appears in Keras 3.8.
"""

import keras
from keras.src.export import export_utils
from keras.src.trainers import compile_utils
from tensorflow.python.distribute import numpy_dataset

KERAS_CHECKED = ("3.9", "3.15")
"""Oldest and newest Keras minor versions these wrappers were checked against."""

SYMBOLIC_BUILD_HOOK = "_maybe_symbolic_build"
"""The private ``keras.Model`` method (TensorFlow trainer, Keras >= 3.5) that ``fit`` /
``evaluate`` / ``predict`` call to build the model under a distribution strategy;
``ReplicaExchangeSampler`` overrides it (see :func:`tf_vrre.sgmcmc.distribute.symbolic_build`)."""

PRIVATE_MODEL_ATTRIBUTES = ("_metrics", "_loss_tracker", "_compile_metrics", "_distribute_strategy")
"""Attributes of a compiled ``keras.Model`` read or changed here (``_initial_epoch`` is set only)."""

PRIVATE_METHODS = (SYMBOLIC_BUILD_HOOK, "_symbolic_build", "_flatten_layers")


def compile_metrics(metrics, weighted_metrics, name):
    """A ``keras.src.trainers.compile_utils.CompileMetrics``: the container ``compile`` builds
    for a model's metrics; the sampler keeps one per non-cold chain."""
    return compile_utils.CompileMetrics(metrics, weighted_metrics, name=name)


def tracked_metrics(model):
    """The list in which ``model`` tracks its metric objects (``Layer._metrics``); removing an
    entry untracks it (a re-compile drops the previous per-chain metrics)."""
    return model._metrics


def loss_tracker(model):
    """The ``keras.metrics.Mean`` behind a compiled model's ``loss`` log (``Trainer._loss_tracker``)."""
    return model._loss_tracker


def compiled_metrics(model):
    """The ``CompileMetrics`` of ``compile(metrics=...)`` or ``None`` (``Trainer._compile_metrics``)."""
    return model._compile_metrics


def flatten_layers(model):
    """``model`` and all its nested layers, depth first (``Layer._flatten_layers``)."""
    return model._flatten_layers()


def own_variables(layer):
    """The variables Keras saves for ``layer`` itself (``vars/0, vars/1, ...``), in that order:
    ``Layer._trainable_variables`` then ``Layer._non_trainable_variables``."""
    return list(layer._trainable_variables) + list(layer._non_trainable_variables)


def set_initial_epoch(model, epoch):
    """Makes the next ``fit`` start at ``epoch`` (``None``: its ``initial_epoch`` argument), as
    ``keras.callbacks.BackupAndRestore`` does through ``Trainer._initial_epoch``."""
    model._initial_epoch = epoch


def initial_epoch(model):
    """The epoch set by :func:`set_initial_epoch` (``None`` when unset)."""
    return getattr(model, "_initial_epoch", None)


def has_distribute_strategy(model):
    """True if ``model`` was created under a ``tf.distribute`` strategy scope (the TensorFlow
    trainer's ``_distribute_strategy``; then ``fit`` builds the model symbolically first)."""
    return model._distribute_strategy is not None


def first_batch_iterator(epoch_iterator):
    """The ``tf.data`` iterator of the first epoch of Keras' TensorFlow ``EpochIterator``, whose
    items are ``(step, iterator)`` in Keras 3.9-3.10 and ``(begin, end, iterator)`` from 3.11."""
    for item in epoch_iterator:
        return item[-1]
    return None


def symbolic_build(model, data_batch):
    """``Trainer._symbolic_build``: builds ``model`` (and its compiled metrics) from one batch."""
    model._symbolic_build(data_batch=data_batch)


def input_signature(model):
    """The input signature ``model.export`` uses (``keras.src.export.export_utils``, Keras >= 3.8):
    ``model.inputs`` of a functional model, the recorded call shapes of a subclassed one."""
    return export_utils.get_input_signature(model)


def in_multi_worker_mode(strategy):
    """True if a ``MultiWorkerMirroredStrategy`` spans more than one worker (TensorFlow's private
    ``strategy.extended._in_multi_worker_mode()``; present from TF 2.4 through 2.21)."""
    return strategy.extended._in_multi_worker_mode()


def colocate_on(device):
    """The ``colocate_with`` value that makes a ``tf.distribute`` strategy's variable creator
    (``MirroredStrategy``, ``MultiWorkerMirroredStrategy``, ``TPUStrategy``) create one plain
    variable on ``device`` instead of a distributed one (``numpy_dataset.SingleDevice``, the
    strategies' own host-device marker; public ``colocate_vars_with`` accepts only distributed
    variables)."""
    return numpy_dataset.SingleDevice(device)


def graph_functions(graph):
    """``{name: FuncGraph}`` of every function a traced graph calls, nested ones included (the
    private ``FuncGraph._functions`` registry of ``tf.function``; TensorFlow 2.16-2.21)."""
    found = {}

    def collect(g):
        for name, function in getattr(g, "_functions", {}).items():
            if name not in found:
                found[name] = function.graph
                collect(function.graph)

    collect(graph)
    return found


def missing():
    """Names of the private Keras APIs above that the installed Keras lacks (empty when all exist)."""
    gone = [f"keras.Model.{name}" for name in PRIVATE_METHODS if not hasattr(keras.Model, name)]
    for module, name in (
        (compile_utils, "CompileMetrics"),
        (export_utils, "get_input_signature"),
        (numpy_dataset, "SingleDevice"),
    ):
        if not hasattr(module, name):
            gone.append(f"{module.__name__}.{name}")
    return gone
