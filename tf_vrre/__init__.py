"""tf_vrre: variance-reduced replica-exchange SG-MCMC (VR-reSGLD / VR-reSGHMC) for Keras 3.

Public API (the API reference of the documentation lists every name):

- :class:`ReplicaExchangeSampler` - the ``keras.Model`` that runs K chains under ``fit``.
- :class:`CorrectedSwap` - the swap rule (corrected acceptance, sigma^2 estimation, pairs).
- :class:`ControlVariates` - variance-reduced energies (snapshots every m steps).
- :func:`gaussian_nll` - per-example Gaussian NLL for regression.
- schedules (``tf_vrre.schedules``): :class:`EpochExponential`, :class:`Scaled`,
  :class:`CyclicalCosine`, :func:`paper_cifar_schedules`.
- callbacks (``tf_vrre.callbacks``): :class:`HyperparameterScheduler`, :class:`SwapLogger`,
  :class:`SampleCollector`, :class:`Checkpoint`, :class:`CSVLogger`, :class:`LadderTuner`;
  :func:`load_samples` reads collected samples back.
- :func:`export_ensemble` - the samples' Bayesian model average as a TF Serving SavedModel.
- runtime invariants (``tf_vrre.faults``): :class:`SamplerError`, :class:`DivergenceError`,
  :class:`InvariantError`; XLA rule (``tf_vrre.xla``).
- diagnostics (``tf_vrre.diagnostics``): replica flow, ESS / R-hat (TFP), ``diagnose``;
  :func:`to_inference_data` (ArviZ, optional extra ``[arviz]``).
- image workflow (``tf-vrre train`` / ``evaluate``): :func:`train`, :func:`evaluate`,
  :class:`TrainingData`, :class:`Preprocessing`, :class:`Augmentation`, :class:`EpochCSVLogger`,
  :class:`EpochProgress`.

Layout, one layer on top of the next (``tf_vrre._aliases`` keeps the earlier flat module names,
``tf_vrre.schedules``, ``tf_vrre.collection``, ..., importable):

- ``sgmcmc`` - the algorithm on tensors and variables: dynamics, energies, control variates,
  swap energies and the corrected swap, state containers, estimators, seeds, schedules;
- ``sampler`` - the Keras model that runs it under ``fit`` (:class:`ReplicaExchangeSampler`);
- ``callbacks`` / ``serving`` / ``diagnostics`` - what runs around ``fit`` and after it;
- ``workflows`` - the Gaussian-mixture study and the image-classification workflow;
- ``cli`` - ``tf-vrre``; ``runs`` - the files of a run, read and written without TensorFlow.
"""

import importlib as _importlib
import sys as _sys

from tf_vrre import _aliases
from tf_vrre._version import __version__

_aliases.install()

_IC = "tf_vrre.workflows.image_classification"
_API = {
    # classes and functions: name -> "module:attribute"
    "ReplicaExchangeSampler": "tf_vrre.sampler.replica_exchange:ReplicaExchangeSampler",
    "CorrectedSwap": "tf_vrre.sgmcmc.swaps:CorrectedSwap",
    "SwapResults": "tf_vrre.sgmcmc.swaps:SwapResults",
    "ControlVariates": "tf_vrre.sgmcmc.control_variates:ControlVariates",
    "gaussian_nll": "tf_vrre.sgmcmc.energy:gaussian_nll",
    "EpochExponential": "tf_vrre.sgmcmc.schedules:EpochExponential",
    "Scaled": "tf_vrre.sgmcmc.schedules:Scaled",
    "CyclicalCosine": "tf_vrre.sgmcmc.schedules:CyclicalCosine",
    "paper_cifar_schedules": "tf_vrre.sgmcmc.schedules:paper_cifar_schedules",
    "HyperparameterScheduler": "tf_vrre.callbacks:HyperparameterScheduler",
    "SwapLogger": "tf_vrre.callbacks:SwapLogger",
    "SampleCollector": "tf_vrre.callbacks:SampleCollector",
    "Checkpoint": "tf_vrre.callbacks:Checkpoint",
    "CSVLogger": "tf_vrre.callbacks:CSVLogger",
    "LadderTuner": "tf_vrre.callbacks:LadderTuner",
    "EpochCSVLogger": "tf_vrre.callbacks:EpochCSVLogger",
    "EpochProgress": "tf_vrre.callbacks:EpochProgress",
    "SampleSet": "tf_vrre.runs.samples:SampleSet",
    "load_samples": "tf_vrre.runs.samples:load_samples",
    "RunMismatchError": "tf_vrre.runs.ownership:RunMismatchError",
    "SamplerError": "tf_vrre.sampler.invariants:SamplerError",
    "DivergenceError": "tf_vrre.sampler.invariants:DivergenceError",
    "InvariantError": "tf_vrre.sampler.invariants:InvariantError",
    "export_ensemble": "tf_vrre.serving.export:export_ensemble",
    "to_inference_data": "tf_vrre.diagnostics:to_inference_data",
    "Augmentation": f"{_IC}.data:Augmentation",
    "Preprocessing": f"{_IC}.data:Preprocessing",
    "TrainingData": f"{_IC}.data:TrainingData",
    "train": f"{_IC}.train:train",
    "evaluate": f"{_IC}.evaluate:evaluate",
    # modules: name -> module (the earlier flat names resolve through tf_vrre._aliases)
    **{name: f"tf_vrre.{name}" for name in (
        "callbacks", "checkpoint", "collection", "control_variates", "diagnostics", "dynamics", "energy",
        "export", "faults", "xla", "record", "schedules", "seeds", "state", "stats", "swaps",
        "config", "data", "evaluation", "image_plots", "metrics", "run_callbacks", "rundir", "strategies",
        "training")},
}
"""The public API, the one list: ``tf_vrre.<name>`` -> where it lives."""

__all__ = list(_API) + ["__version__"]


def _resolve(name):
    module, _, attr = _API[name].partition(":")
    obj = _importlib.import_module(module)
    return getattr(obj, attr) if attr else obj


def _load():
    """Imports the public API (and with it TensorFlow and every Keras class registration).

    Runs when the package is imported, except while the ``tf-vrre`` console script parses its
    flags (``tf_vrre_cli.DEFER_PACKAGE_IMPORTS``); then on first attribute access or when
    :func:`tf_vrre.cli.main` starts a subcommand.
    """
    for name in _API:
        globals()[name] = _resolve(name)


def __getattr__(name):
    """A public name on first access while the package's imports are deferred: a module alone
    (``tf_vrre.config`` stays free of TensorFlow), a class or function with the whole API."""
    if name not in _API:
        raise AttributeError(f"module 'tf_vrre' has no attribute {name!r}")
    if ":" not in _API[name]:
        return _resolve(name)
    _load()
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(__all__))


_TENSORFLOW_FREE = ("tf_vrre.runs", "tf_vrre.cli")
"""Subpackages that work without TensorFlow: importing one of them leaves the API to first use."""


def _imported_for():
    """The submodule whose import runs this ``__init__`` (``import tf_vrre.runs`` imports the
    package first), or None for a plain ``import tf_vrre``: the import machinery's frames, from
    this package's own import outwards, name the module that asked for it."""
    frame, seen_package = _sys._getframe(1), False
    while frame is not None:
        if frame.f_code.co_name == "_find_and_load" and "importlib._bootstrap" in frame.f_code.co_filename:
            name = frame.f_locals.get("name")
            if seen_package:
                return name if isinstance(name, str) and name.startswith("tf_vrre.") else None
            seen_package = name == "tf_vrre"
        frame = frame.f_back
    return None


def _deferred():
    """True while the ``tf-vrre`` console script parses its flags (``tf_vrre_cli``), or when the
    package is imported for a TensorFlow-free subpackage (:data:`_TENSORFLOW_FREE`)."""
    if getattr(_sys.modules.get("tf_vrre_cli"), "DEFER_PACKAGE_IMPORTS", False):
        return True
    wanted = _imported_for() or ""
    return any(wanted == name or wanted.startswith(name + ".") for name in _TENSORFLOW_FREE)


if not _deferred():
    _load()
