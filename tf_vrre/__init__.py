"""tf_vrre: variance-reduced replica-exchange SG-MCMC (VR-reSGLD / VR-reSGHMC) for Keras 3.

The public API is the list of names in ``tf_vrre/__init__.pyi`` (``tf_vrre.__all__``; the API
reference documents each): the sampler :class:`ReplicaExchangeSampler` with its swap rule
:class:`CorrectedSwap` and variance reduction :class:`ControlVariates`, the schedules, the
callbacks, the run files (:func:`load_samples`), serving (:func:`export_ensemble`), the errors
and the image workflow (:func:`train`, :func:`evaluate`).  The sub-packages hold the rest
(``tf_vrre.sgmcmc``, ``tf_vrre.sampler``, ``tf_vrre.callbacks``, ``tf_vrre.diagnostics``, ...).

Lazy loading (scientific-python SPEC 1): ``lazy_loader.attach_stub`` reads the stub's
``from .module import Name`` lines and imports each module on first use of one of its names.
Type checkers and IDEs read the same stub, so the list exists once.  ``import tf_vrre`` itself
imports no TensorFlow, which keeps ``tf-vrre --help``, a rejected flag, ``tf_vrre.runs`` and
``tf_vrre.numerics`` free of its start-up time and log lines.

Keras classes: ``keras.saving.load_model`` finds a class only in Keras' registry of names
(``tf_vrre>ReplicaExchangeSampler``, ``models>Builder``, ...), filled when the defining module is
imported; Keras never imports a module a file names.  ``import tf_vrre`` cannot import those
modules (they import TensorFlow), so the registration waits for Keras itself: a post-import hook
on ``keras`` (``wrapt.register_post_import_hook``, PEP 369's hooks as TensorFlow's own
dependency ``wrapt`` implements them) imports :data:`KERAS_MODULES` right after ``import keras``
finishes, or at once when Keras is already imported.  Either import order works, and a process
that never imports Keras (the command line checking its flags) never pays for it.  The hook may
run while a module of the package is being imported (the first ``import keras`` of the process
is often one of ours): ``sgmcmc``, ``sampler`` and ``callbacks``, whose modules the Keras
modules import, therefore import Keras first, before any module of theirs starts.
"""

import importlib

import lazy_loader
import wrapt

from tf_vrre._version import __version__ as __version__

_api_getattr, _api_dir, __all__ = lazy_loader.attach_stub(__name__, __file__)

SUBPACKAGES = ("callbacks", "cli", "diagnostics", "numerics", "runs", "sampler", "serving", "sgmcmc", "workflows")
"""The sub-packages (and the bottom module ``numerics``): ``tf_vrre.diagnostics`` works after
``import tf_vrre`` alone, imported on first use; they are not in ``__all__`` (``from tf_vrre import *``
gives the public names only)."""


def __getattr__(name: str) -> object:
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    return _api_getattr(name)


def __dir__() -> list[str]:
    return sorted(set(_api_dir()) | set(SUBPACKAGES))


KERAS_MODULES = (
    "tf_vrre.sampler",
    "tf_vrre.sgmcmc.control_variates",
    "tf_vrre.sgmcmc.energy",
    "tf_vrre.sgmcmc.proposal",
    "tf_vrre.sgmcmc.schedules",
    "tf_vrre.sgmcmc.swaps",
    "tf_vrre.callbacks",
    "tf_vrre.workflows.image_classification.models",
    "tf_vrre.workflows.gaussian_mixture.target",
)
"""The modules that register Keras classes or functions (``keras.saving.register_keras_serializable``)."""


def _register_keras_objects(keras_module: object) -> None:
    """Imports :data:`KERAS_MODULES` (the post-import hook on ``keras``)."""
    del keras_module
    for name in KERAS_MODULES:
        importlib.import_module(name)


wrapt.register_post_import_hook(_register_keras_objects, "keras")
