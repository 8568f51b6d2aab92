"""The package's shape: layers without import cycles, the public API from one stub, the
command line and ``tf_vrre.runs`` without TensorFlow, Keras classes registered as soon as Keras
is imported.  (That every dotted ``tf_vrre.<...>`` name a user reads points at something real
is ``tests/test_dotted_names.py``.)

Import-time behaviour is checked in fresh interpreters: in this process every module is
imported already.
"""

import ast
import importlib
import json
import os
import subprocess
import sys

import grimp
import keras
import pytest

import tf_vrre

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), TF_CPP_MIN_LOG_LEVEL="3")
STUB = os.path.join(ROOT, "tf_vrre", "__init__.pyi")

PUBLIC = {
    "ProposedLadder",
    "ReplicaExchangeSampler",
    "CorrectedSwap",
    "ControlVariates",
    "SwapResults",
    "gaussian_nll",
    "EpochExponential",
    "Scaled",
    "CyclicalCosine",
    "paper_cifar_schedules",
    "HyperparameterScheduler",
    "SwapLogger",
    "SampleCollector",
    "Checkpoint",
    "CSVLogger",
    "EpochCSVLogger",
    "LadderTuner",
    "EpochProgress",
    "SampleSet",
    "load_samples",
    "RunMismatchError",
    "export_ensemble",
    "SamplerError",
    "DivergenceError",
    "InvariantError",
    "TfVrreError",
    "to_inference_data",
    "Augmentation",
    "Preprocessing",
    "TrainingData",
    "train",
    "evaluate",
}
"""The public API: classes and functions only (sub-packages are imported by their own path)."""

SUBPACKAGES = ("callbacks", "cli", "diagnostics", "runs", "sampler", "serving", "sgmcmc", "workflows")

KERAS_PACKAGES = ("tf_vrre", "models", "tf_vrre.mixture")
"""The ``package`` of every Keras name the library registers (``tf_vrre>ReplicaExchangeSampler``)."""


def _fresh(code, *args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=300
    )


def _registered(names):
    return sorted(n for n in names if n.split(">")[0] in KERAS_PACKAGES)


REGISTERED = (
    "from keras.src.saving import object_registration\n"
    "print(sorted(n for n in object_registration.GLOBAL_CUSTOM_OBJECTS "
    f"if n.split('>')[0] in {KERAS_PACKAGES!r}))\n"
)
"""Code that prints the library's Keras names in the registry (the mapping ``load_model`` reads)."""


# --- TensorFlow-free parts ------------------------------------------------------------------------


def test_runs_and_numerics_import_without_tensorflow():
    out = _fresh(
        "import sys\nimport tf_vrre, tf_vrre.numerics, tf_vrre.runs, tf_vrre.runs.samples, "
        "tf_vrre.runs.run_json, tf_vrre.runs.ownership, tf_vrre.runs.fault_points, tf_vrre.runs.atomic, "
        "tf_vrre.runs.repair\n"
        "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_command_line_checks_without_tensorflow():
    out = _fresh(
        "import sys\nimport tf_vrre.cli\nfrom tf_vrre.cli import diagnose, evaluate, export, mixture, train\n"
        "from tf_vrre.workflows.image_classification import config, planning, strategies\n"
        "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ``python -m tf_vrre.cli`` exactly as the shell runs it; at exit, whether TensorFlow was ever imported
CLI = (
    "import atexit, runpy, sys\n"
    "marker = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(marker, 'w').write(str('tensorflow' in sys.modules)))\n"
    "runpy.run_module('tf_vrre.cli', run_name='__main__', alter_sys=True)\n"
)


@pytest.mark.parametrize(
    "flags, status",
    [(["--help"], 0), (["mixture", "--help"], 0), (["mixture", "--iterations", "-3"], 2), (["--no-such-flag"], 2)],
)
def test_help_and_bad_flags_never_import_tensorflow(tmp_path, flags, status):
    marker = tmp_path / "tensorflow-imported"
    env = {k: v for k, v in ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # TensorFlow would print here
    out = subprocess.run(
        [sys.executable, "-c", CLI, str(marker), *flags],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == status, out.stderr
    assert marker.read_text() == "False"
    if status == 0:
        assert out.stderr == "" and "usage: tf-vrre" in out.stdout
    else:
        assert out.stdout == "" and len(out.stderr.splitlines()) == 1, out.stderr
        assert out.stderr.startswith("tf-vrre: error: ")


def test_console_script_points_into_the_package():
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert project["project"]["scripts"] == {"tf-vrre": "tf_vrre.cli:main"}
    assert "py-modules" not in project["tool"].get("setuptools", {})
    package_data = project["tool"]["setuptools"]["package-data"]["tf_vrre"]
    assert "__init__.pyi" in package_data and "py.typed" in package_data  # lazy_loader reads the stub at run time
    from tf_vrre import cli

    assert callable(cli.main)


# --- Keras registration ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_sampler(tmp_path_factory):
    """A sampler whose config holds Keras names of the library only (model zoo, schedule, swap, VR)."""
    from tf_vrre.workflows.image_classification import models

    sampler = tf_vrre.ReplicaExchangeSampler(
        models.Builder("cnn", num_classes=2, input_shape=(8, 8, 3), width=2),
        data_size=32,
        num_chains=2,
        temperatures=[1e-3, 1e-2],
        learning_rates=tf_vrre.EpochExponential(1e-3, 0.9, 4),
        swap=tf_vrre.CorrectedSwap(correction=2.0),
        variance_reduction=tf_vrre.ControlVariates(period=4),
        seed=0,
    )
    sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    path = str(tmp_path_factory.mktemp("saved") / "sampler.keras")
    sampler.save(path)
    return path, json.dumps(sampler.get_config(), sort_keys=True, default=str)


@pytest.mark.parametrize("imports", ["import keras\nimport tf_vrre\n", "import tf_vrre\nimport keras\n"])
def test_load_model_after_import_in_either_order(saved_sampler, imports):
    """``keras.saving.load_model`` right after ``import tf_vrre``, no attribute of it touched first."""
    path, config = saved_sampler
    out = _fresh(
        imports + "import json, sys\n"
        "back = keras.saving.load_model(sys.argv[1])\n"
        "print(type(back).__module__, type(back).__name__)\n"
        "print(json.dumps(back.get_config(), sort_keys=True, default=str))\n",
        path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    kind, back = out.stdout.strip().splitlines()[-2:]
    assert kind == "tf_vrre.sampler.replica_exchange ReplicaExchangeSampler"
    assert json.loads(back) | {"name": None} == json.loads(config) | {"name": None}


def test_keras_import_registers_every_keras_name_of_the_package():
    """The hook imports every module that registers a Keras name: importing all the others adds none."""
    out = _fresh(
        "import pkgutil, importlib\nimport tf_vrre\nimport keras\n"
        + REGISTERED
        + "for m in pkgutil.walk_packages(tf_vrre.__path__, 'tf_vrre.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n" + REGISTERED
    )
    assert out.returncode == 0, out.stderr[-3000:]
    after_keras, after_all = out.stdout.strip().splitlines()[-2:]
    assert after_keras == after_all
    assert set(eval(after_all)) >= {"tf_vrre>ReplicaExchangeSampler", "models>Builder", "tf_vrre.mixture>nll"}
    assert set(eval(after_all)) == set(_registered(keras.saving.get_custom_objects()))


@pytest.mark.parametrize(
    "first",
    [
        "tf_vrre.ReplicaExchangeSampler",  # the public API's first use imports Keras itself
        "importlib.import_module('tf_vrre.sgmcmc.schedules')",  # a module that other Keras modules import
        "importlib.import_module('tf_vrre.sampler.batch')",
    ],
)
def test_keras_first_imported_inside_the_package(first):
    """Keras first imported by one of the package's own modules: the hook runs while that module is
    being imported and must not need it half-done (``sgmcmc`` and ``sampler`` import Keras first;
    ``callbacks``, the model zoo and the mixture are imported by no other module of the hook)."""
    out = _fresh(f"import importlib, sys\nimport tf_vrre\nassert 'keras' not in sys.modules\n{first}\n" + REGISTERED)
    assert out.returncode == 0, out.stderr[-3000:]
    assert set(eval(out.stdout.strip().splitlines()[-1])) == set(_registered(keras.saving.get_custom_objects()))


# --- the public API -------------------------------------------------------------------------------


def _stub_names():
    """``{name: module}`` of the stub's ``from .module import name as name`` lines."""
    names = {}
    for node in ast.parse(open(STUB).read()).body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1 and node.module, ast.dump(node)
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name}: re-export it as itself (`X as X`) for type checkers"
                names[alias.name] = f"tf_vrre.{node.module}"
    return names


def test_stub_and_runtime_api_agree():
    names = _stub_names()
    assert set(names) == set(tf_vrre.__all__) == PUBLIC
    for name, module in names.items():
        assert getattr(tf_vrre, name) is getattr(importlib.import_module(module), name), name


def test_public_names_in_a_fresh_interpreter():
    out = _fresh(
        "import sys\nimport tf_vrre\n"
        "assert 'tensorflow' not in sys.modules, 'import tf_vrre imported TensorFlow'\n"
        "print(sorted(tf_vrre.__all__))\nprint(sorted(dir(tf_vrre)))\n"
        "from tf_vrre import ReplicaExchangeSampler, load_samples, train\n"
        "print(ReplicaExchangeSampler is tf_vrre.ReplicaExchangeSampler, train.__module__)\n"
        "namespace = {}\nexec('from tf_vrre import *', namespace)\n"
        "print(sorted(k for k in namespace if not k.startswith('__')))\n"
        "print(all(getattr(tf_vrre, n) is namespace[n] for n in tf_vrre.__all__))\n"
    )
    assert out.returncode == 0, out.stderr[-3000:]
    all_, dir_, same, star, every = out.stdout.strip().splitlines()[-5:]
    assert eval(all_) == sorted(PUBLIC) and set(eval(dir_)) >= PUBLIC
    assert same == "True tf_vrre.workflows.image_classification.train"
    assert eval(star) == sorted(PUBLIC) and every == "True"


def test_subpackages_are_attributes_loaded_on_first_use():
    """``tf_vrre.diagnostics`` after ``import tf_vrre`` alone; not in ``__all__``; TensorFlow-free
    layers stay free of TensorFlow."""
    out = _fresh(
        "import sys\nimport tf_vrre\n"
        "print(tf_vrre.numerics.F32_TINY > 0, tf_vrre.runs.__name__, 'tensorflow' in sys.modules)\n"
        "subs = set(tf_vrre.SUBPACKAGES)\n"
        "print(sorted(subs & set(tf_vrre.__all__)), subs <= set(dir(tf_vrre)))\n"
        "print(tf_vrre.diagnostics.fidelity.__name__)\n"
    )
    assert out.returncode == 0, out.stderr[-3000:]
    first, second, third = out.stdout.strip().splitlines()[-3:]
    assert first == "True tf_vrre.runs False" and second == "[] True"
    assert third == "tf_vrre.diagnostics.fidelity"
    assert set(tf_vrre.SUBPACKAGES) == set(SUBPACKAGES) | {"numerics"}


def test_type_checker_sees_the_api_through_the_stub(tmp_path):
    """mypy reads ``tf_vrre/__init__.pyi``: public names resolve, a misspelt one is an error."""
    user = tmp_path / "user.py"
    user.write_text(
        "import tf_vrre\nfrom tf_vrre import CorrectedSwap, load_samples\n\n"
        "sampler_class = tf_vrre.ReplicaExchangeSampler\nswap_class = CorrectedSwap\n"
        "reader = load_samples\nversion: str = tf_vrre.__version__\n"
        "wrong = tf_vrre.ReplicaExchangeSamplr\n"
    )
    config = tmp_path / "mypy.ini"  # the stub alone: the modules it names are not analysed (they are untyped)
    config.write_text("[mypy]\n[mypy-" + ",".join(f"tf_vrre.{p}.*" for p in SUBPACKAGES) + "]\nfollow_imports = skip\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(config),
            "--no-incremental",
            "--no-error-summary",
            str(user),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 1, out.stdout + out.stderr[-2000:]  # 1: type errors found; 2: mypy itself failed
    errors = out.stdout.strip().splitlines()
    assert len(errors) == 1 and ':8: error: Module has no attribute "ReplicaExchangeSamplr"' in errors[0], out.stdout


def test_earlier_flat_module_names_are_gone():
    for old in ("tf_vrre.schedules", "tf_vrre.faults", "tf_vrre.rundir", "tf_vrre.collection", "tf_vrre.models"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    assert not os.path.exists(os.path.join(ROOT, "tf_vrre", "_aliases.py"))
    assert not os.path.exists(os.path.join(ROOT, "tf_vrre_cli.py"))


# --- layers ---------------------------------------------------------------------------------------


def test_no_import_cycles():
    graph = grimp.build_graph("tf_vrre")
    cycles = [
        (a, b)
        for a in sorted(graph.modules)
        for b in sorted(graph.find_modules_directly_imported_by(a))
        if b.startswith("tf_vrre") and graph.find_shortest_chain(importer=b, imported=a)
    ]
    assert cycles == []


def _module_name(path):
    """``(dotted name, its package)`` of a file of the package (a package's ``__init__`` is the package)."""
    parts = list(os.path.splitext(os.path.relpath(path, ROOT))[0].split(os.sep))
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), ".".join(parts[:-1])
    return ".".join(parts), ".".join(parts[:-1])


def _is_module(dotted):
    path = os.path.join(ROOT, *dotted.split("."))
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def imports_through_own_package(source, path):
    """The ``from P import ...`` lines of a module that reach a package's ``__init__`` it lives in:
    ``P`` its own package (a sibling is imported by its full path, ``import P.x as x``: the package's
    ``__init__`` imports the module, so going through it is a circle), or ``P`` a package above it
    with a name that is not a module of ``P`` (``from tf_vrre.sgmcmc import schedules`` is a
    module; ``from tf_vrre.sampler import ReplicaExchangeSampler`` inside ``tf_vrre.sampler.x``
    would be the circle).  A package's own ``__init__`` and its ``__main__`` (which runs the
    package) may import from it."""
    name, package = _module_name(path)
    if name == package or name.endswith(".__main__"):
        return []
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in ancestors:
            names = [a.name for a in node.names]
            if node.module == package or not all(_is_module(f"{node.module}.{n}") for n in names):
                found.append(
                    f"{os.path.relpath(path, ROOT)}:{node.lineno}: from {node.module} import {', '.join(names)}"
                )
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: a relative import")
    return found


def test_no_module_imports_through_its_own_package():
    """Siblings by their full path (``import tf_vrre.sampler.batch as batch``), never through the
    package they live in (``from tf_vrre.sampler import batch`` inside ``tf_vrre.sampler``)."""
    found = []
    for folder, dirs, names in os.walk(os.path.join(ROOT, "tf_vrre")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in sorted(names):
            if n.endswith(".py"):
                path = os.path.join(folder, n)
                found += imports_through_own_package(open(path).read(), path)
    assert found == [], "import siblings as `import pkg.mod as mod`:\n" + "\n".join(found)


def test_own_package_imports_are_found():
    at = os.path.join(ROOT, "tf_vrre", "sampler", "replica_exchange.py")
    assert imports_through_own_package("from tf_vrre.sampler import batch, xla\n", at) == [
        "tf_vrre/sampler/replica_exchange.py:1: from tf_vrre.sampler import batch, xla"
    ]
    assert imports_through_own_package("from tf_vrre import ReplicaExchangeSampler\n", at) != []
    assert imports_through_own_package("from . import batch\n", at) != []
    fine = "import tf_vrre.sampler.batch as batch\nfrom tf_vrre import errors\nfrom tf_vrre.sgmcmc import swaps\n"
    assert imports_through_own_package(fine, at) == []
    init = os.path.join(ROOT, "tf_vrre", "sampler", "__init__.py")
    assert imports_through_own_package("from tf_vrre.sampler import batch\n", init) == []


def test_layer_contracts_hold():
    out = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_model_zoo_lives_inside_the_package():
    assert not os.path.exists(os.path.join(ROOT, "models"))
    assert not os.path.lexists(os.path.join(ROOT, "configs"))
    zoo = importlib.import_module("tf_vrre.workflows.image_classification.models")
    assert set(zoo.names()) >= {"cnn", "resnet20"}
    assert keras.saving.get_registered_object("models>Builder") is zoo.Builder  # files written earlier load
