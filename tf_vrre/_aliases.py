"""Earlier import paths of the package's modules, kept working through one table.

The package is organised along the algorithm (``sgmcmc`` -> ``sampler`` -> ``callbacks`` /
``serving`` / ``diagnostics`` -> ``workflows`` -> ``cli``; ``runs`` for the files of a run).
Code written against the earlier flat layout (``import tf_vrre.schedules``,
``from tf_vrre.collection import load_samples``) still runs: :data:`MODULES` maps each earlier
name to the module that now holds its code, and :class:`_AliasFinder` hands out that same
module object (no second copy, no stub files), submodules included
(``tf_vrre.data.sources`` -> ``tf_vrre.workflows.image_classification.data.sources``).
TensorFlow is imported only if the target module imports it.
"""

import importlib
import importlib.abc
import importlib.util
import sys

MODULES = {
    "tf_vrre.dynamics": "tf_vrre.sgmcmc.dynamics",
    "tf_vrre.gradients": "tf_vrre.sgmcmc.gradients",
    "tf_vrre.energy": "tf_vrre.sgmcmc.energy",
    "tf_vrre.control_variates": "tf_vrre.sgmcmc.control_variates",
    "tf_vrre.swap_energy": "tf_vrre.sgmcmc.swap_energy",
    "tf_vrre.swaps": "tf_vrre.sgmcmc.swaps",
    "tf_vrre.state": "tf_vrre.sgmcmc.state",
    "tf_vrre.stats": "tf_vrre.sgmcmc.estimators",
    "tf_vrre.record": "tf_vrre.sgmcmc.swap_record",
    "tf_vrre.seeds": "tf_vrre.sgmcmc.seeds",
    "tf_vrre.schedules": "tf_vrre.sgmcmc.schedules",
    "tf_vrre.distribute": "tf_vrre.sgmcmc.distribute",
    "tf_vrre.construction": "tf_vrre.sampler.construction",
    "tf_vrre._hyper": "tf_vrre.sampler.hyperparameters",
    "tf_vrre.batch": "tf_vrre.sampler.batch",
    "tf_vrre.data_checks": "tf_vrre.sampler.input_checks",
    "tf_vrre.indexed_data": "tf_vrre.sampler.datasets",
    "tf_vrre.faults": "tf_vrre.sampler.invariants",
    "tf_vrre.chain_metrics": "tf_vrre.sampler.chain_metrics",
    "tf_vrre.saving": "tf_vrre.sampler.saving",
    "tf_vrre.xla": "tf_vrre.sampler.xla",
    "tf_vrre.collection": "tf_vrre.callbacks.sample_collector",
    "tf_vrre.checkpoint": "tf_vrre.callbacks.checkpoint",
    "tf_vrre.csv_logger": "tf_vrre.callbacks.csv_logger",
    "tf_vrre.run_callbacks": "tf_vrre.callbacks.progress",
    "tf_vrre.run_files": "tf_vrre.runs.samples",
    "tf_vrre.rundir": "tf_vrre.runs.run_json",
    "tf_vrre.outputs": "tf_vrre.runs.ownership",
    "tf_vrre._faults": "tf_vrre.runs.fault_points",
    "tf_vrre.export": "tf_vrre.serving.export",
    "tf_vrre.mixture": "tf_vrre.workflows.gaussian_mixture.target",
    "tf_vrre.mixture_plots": "tf_vrre.workflows.gaussian_mixture.plots",
    "tf_vrre.config": "tf_vrre.workflows.image_classification.config",
    "tf_vrre.data": "tf_vrre.workflows.image_classification.data",
    "tf_vrre.training": "tf_vrre.workflows.image_classification.train",
    "tf_vrre.evaluation": "tf_vrre.workflows.image_classification.evaluate",
    "tf_vrre.metrics": "tf_vrre.workflows.image_classification.metrics",
    "tf_vrre.image_plots": "tf_vrre.workflows.image_classification.plots",
    "tf_vrre.strategies": "tf_vrre.workflows.image_classification.strategies",
    "tf_vrre.models": "tf_vrre.workflows.image_classification.models",
}
"""Earlier module name -> the module that holds its code now."""


def target(fullname):
    """The module now behind ``fullname`` (an earlier name or a submodule of one), else None."""
    name = fullname
    while name:
        if name in MODULES:
            return MODULES[name] + fullname[len(name):]
        name = name.rpartition(".")[0]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return importlib.import_module(self.real)  # the same object under both names

    def exec_module(self, module):
        pass  # already executed under its own name


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target_module=None):
        real = target(fullname)
        if real is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real))


def install():
    """Puts the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
