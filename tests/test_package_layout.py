"""The package's shape: layers without import cycles, ``tf_vrre.runs`` without TensorFlow, the
earlier flat module names as aliases of the same modules, one list of public names."""

import importlib
import os
import subprocess
import sys

import grimp

import tf_vrre
from tf_vrre import _aliases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

# tf_vrre.__all__ before the package was organised in layers: none of these may disappear
PUBLIC = {
    "ReplicaExchangeSampler", "CorrectedSwap", "ControlVariates", "SwapResults", "gaussian_nll",
    "EpochExponential", "Scaled", "CyclicalCosine", "paper_cifar_schedules",
    "HyperparameterScheduler", "SwapLogger", "SampleCollector", "SampleSet", "load_samples", "export_ensemble",
    "Checkpoint", "CSVLogger", "LadderTuner", "RunMismatchError", "checkpoint",
    "SamplerError", "DivergenceError", "InvariantError", "faults", "xla",
    "to_inference_data", "callbacks", "collection", "control_variates", "diagnostics", "dynamics", "energy",
    "export", "record", "schedules", "seeds", "state", "stats", "swaps", "__version__",
    "config", "data", "evaluation", "image_plots", "metrics", "run_callbacks", "rundir", "strategies", "training",
    "Augmentation", "Preprocessing", "TrainingData", "EpochCSVLogger", "EpochProgress", "train", "evaluate",
}


def _fresh(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, cwd=ROOT,
                          timeout=300)


def test_runs_import_without_tensorflow():
    out = _fresh("import sys\nimport tf_vrre.runs, tf_vrre.runs.samples, tf_vrre.runs.run_json, "
                 "tf_vrre.runs.ownership, tf_vrre.runs.fault_points\n"
                 "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_command_line_checks_without_tensorflow():
    out = _fresh("import sys\nimport tf_vrre.cli\nfrom tf_vrre.cli import diagnose, evaluate, export, mixture, train\n"
                 "from tf_vrre.workflows.image_classification import config, planning, strategies\n"
                 "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_plain_import_loads_the_api_and_registers_keras_classes():
    out = _fresh("import keras, tf_vrre\n"
                 "print(keras.saving.get_registered_object('tf_vrre>ReplicaExchangeSampler') is "
                 "tf_vrre.ReplicaExchangeSampler, 'ReplicaExchangeSampler' in vars(tf_vrre))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]


def test_no_import_cycles():
    graph = grimp.build_graph("tf_vrre")
    cycles = [(a, b) for a in sorted(graph.modules) for b in sorted(graph.find_modules_directly_imported_by(a))
              if b.startswith("tf_vrre") and graph.find_shortest_chain(importer=b, imported=a)]
    assert cycles == []


def test_layer_contracts_hold():
    out = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                          "lint_imports_command()"], capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_earlier_module_names_are_the_same_modules():
    for old, new in _aliases.MODULES.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
    from tf_vrre.collection import load_samples
    from tf_vrre.data.sources import load_split

    assert load_samples is tf_vrre.runs.samples.load_samples
    assert load_split is importlib.import_module("tf_vrre.workflows.image_classification.data.sources").load_split
    assert sys.modules["tf_vrre.data.sources"] is sys.modules["tf_vrre.workflows.image_classification.data.sources"]


def test_public_names_from_one_list():
    assert set(tf_vrre.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(tf_vrre, name) is not None, name
    assert tf_vrre.schedules is importlib.import_module("tf_vrre.sgmcmc.schedules")
    assert tf_vrre.callbacks.SwapLogger is tf_vrre.SwapLogger
    assert tf_vrre.callbacks.LadderTuner is tf_vrre.LadderTuner
    assert tf_vrre.faults.DivergenceError is tf_vrre.DivergenceError


def test_model_zoo_lives_inside_the_package():
    assert not os.path.exists(os.path.join(ROOT, "models"))
    assert not os.path.lexists(os.path.join(ROOT, "configs"))
    zoo = importlib.import_module("tf_vrre.workflows.image_classification.models")
    assert set(zoo.names()) >= {"cnn", "resnet20"}
    import keras

    assert keras.saving.get_registered_object("models>Builder") is zoo.Builder  # old files still load
