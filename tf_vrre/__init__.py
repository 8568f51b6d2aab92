"""tf_vrre: variance-reduced replica-exchange SG-MCMC (VR-reSGLD / VR-reSGHMC) for Keras 3.

Public API (the API reference of the documentation lists every name):

- :class:`ReplicaExchangeSampler` - the ``keras.Model`` that runs K chains under ``fit``.
- :class:`CorrectedSwap` - the swap rule (corrected acceptance, sigma^2 estimation, pairs).
- :class:`ControlVariates` - variance-reduced energies (snapshots every m steps).
- :func:`gaussian_nll` - per-example Gaussian NLL for regression.
- schedules (``tf_vrre.schedules``): :class:`EpochExponential`, :class:`Scaled`,
  :class:`CyclicalCosine`, :func:`paper_cifar_schedules`.
- callbacks (``tf_vrre.callbacks``): :class:`HyperparameterScheduler`, :class:`SwapLogger`,
  :class:`SampleCollector`; :func:`load_samples` reads collected samples back.
- :func:`export_ensemble` - the samples' Bayesian model average as a TF Serving SavedModel.
- runtime invariants (``tf_vrre.faults``): :class:`SamplerError`, :class:`DivergenceError`,
  :class:`InvariantError`; XLA rule (``tf_vrre.xla``).
- diagnostics (``tf_vrre.diagnostics``): replica flow, ESS / R-hat (TFP), ``diagnose``;
  :func:`to_inference_data` (ArviZ, optional extra ``[arviz]``).
- modules: ``dynamics`` (update rules), ``energy`` (estimators), ``swaps`` (swap math),
  ``control_variates`` (snapshot refresh, full pass), ``state`` (chain / swap / VR state
  containers), ``record`` (per-step swap record), ``stats`` (variance / coefficient
  estimators), ``seeds``, ``mixture`` (the paper's 1-D Gaussian-mixture target with its exact
  posterior).
- image workflow (``tf-vrre train`` / ``evaluate``): ``config`` (TOML method configs),
  ``data`` (tfds / npz sources, augmentation, resumable pipelines), ``training`` (:func:`train`),
  ``strategies`` (``make_strategy``: default, mirrored, multiworker, tpu),
  ``evaluation`` (:func:`evaluate`), ``metrics``, ``rundir`` (the run-directory contract),
  ``run_callbacks`` (:class:`EpochCSVLogger`, :class:`EpochProgress`), ``image_plots``.
"""

import importlib as _importlib
import sys as _sys

__version__ = "0.1.0"
_loading = False


def _load():
    """Imports the public API (and with it TensorFlow and every Keras class registration).

    Runs when the package is imported, except while the ``tf-vrre`` console script parses its
    flags (``tf_vrre_cli.DEFER_PACKAGE_IMPORTS``); then on first attribute access or when
    :func:`tf_vrre.cli.main` starts a subcommand.
    """
    global _loading
    if _loading or "ReplicaExchangeSampler" in globals():
        return
    _loading = True  # submodules importing each other meanwhile get AttributeError -> plain submodule import
    try:
        _import_api()
    finally:
        _loading = False


def _import_api():
    from tf_vrre import (callbacks, checkpoint, collection, control_variates, diagnostics, dynamics,  # noqa: F401
                         energy, export, record, schedules, seeds, state, stats, swaps)
    from tf_vrre.callbacks import CSVLogger, HyperparameterScheduler, SampleCollector, SwapLogger  # noqa: F401
    from tf_vrre.checkpoint import Checkpoint  # noqa: F401
    from tf_vrre.collection import SampleSet, load_samples  # noqa: F401
    from tf_vrre.diagnostics import to_inference_data  # noqa: F401
    from tf_vrre.energy import ControlVariates, gaussian_nll  # noqa: F401
    from tf_vrre.export import export_ensemble  # noqa: F401
    from tf_vrre import faults, xla  # noqa: F401
    from tf_vrre.faults import DivergenceError, InvariantError, SamplerError  # noqa: F401
    from tf_vrre.outputs import RunMismatchError  # noqa: F401
    from tf_vrre.sampler import ReplicaExchangeSampler  # noqa: F401
    from tf_vrre.schedules import CyclicalCosine, EpochExponential, Scaled, paper_cifar_schedules  # noqa: F401
    from tf_vrre.swaps import CorrectedSwap, SwapResults  # noqa: F401
    from tf_vrre import config, data, evaluation, image_plots, metrics, run_callbacks, rundir, strategies, training  # noqa: F401,E501
    from tf_vrre.data import Augmentation, Preprocessing, TrainingData  # noqa: F401
    from tf_vrre.evaluation import evaluate  # noqa: F401
    from tf_vrre.run_callbacks import EpochCSVLogger, EpochProgress  # noqa: F401
    from tf_vrre.training import train  # noqa: F401

    globals().update({k: v for k, v in locals().items() if k in __all__})


# Submodules in __all__: while the package's imports are deferred, ``tf_vrre.config`` (or
# ``from tf_vrre import rundir``) imports that module alone, so TensorFlow-free modules stay so.
_MODULES = frozenset({"callbacks", "checkpoint", "collection", "control_variates", "diagnostics", "dynamics",
                      "energy", "export", "faults", "xla", "record", "schedules", "seeds", "state", "stats", "swaps",
                      "config", "data", "evaluation", "image_plots", "metrics", "run_callbacks", "rundir", "strategies",
                      "training"})


def __getattr__(name):
    if name in _MODULES and not _loading:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in __all__ and not _loading:
        _load()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module 'tf_vrre' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ReplicaExchangeSampler", "CorrectedSwap", "ControlVariates", "SwapResults", "gaussian_nll",
    "EpochExponential", "Scaled", "CyclicalCosine", "paper_cifar_schedules",
    "HyperparameterScheduler", "SwapLogger", "SampleCollector", "SampleSet", "load_samples", "export_ensemble",
    "Checkpoint", "CSVLogger", "RunMismatchError", "checkpoint",
    "SamplerError", "DivergenceError", "InvariantError", "faults", "xla",
    "to_inference_data", "callbacks", "collection", "control_variates", "diagnostics", "dynamics", "energy",
    "export", "record", "schedules", "seeds", "state", "stats", "swaps", "__version__",
    "config", "data", "evaluation", "image_plots", "metrics", "run_callbacks", "rundir", "strategies", "training",
    "Augmentation", "Preprocessing", "TrainingData", "EpochCSVLogger", "EpochProgress", "train", "evaluate",
]

if not getattr(_sys.modules.get("tf_vrre_cli"), "DEFER_PACKAGE_IMPORTS", False):
    _load()
