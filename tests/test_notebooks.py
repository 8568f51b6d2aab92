"""The Colab notebooks in ``colab/`` run top to bottom, headless, at toy scale (papermill, CPU, offline).

Each notebook is executed with papermill (its ``parameters`` cell overridden with toy sizes and
local ``.npz`` data that the test writes itself: synthetic images, so CI needs no data set), fails
on any cell error, and must produce its figures (PNG files on disk and image outputs in the
executed notebook).  The committed notebooks are checked for the Colab conventions: one short install
cell first, the same in every notebook, that does nothing where ``tf_vrre`` is importable and otherwise
clones the repository and runs ``colab/install.py`` (tested here too: on a TPU runtime without
TensorFlow it installs ``tensorflow-tpu``), one ``parameters`` cell, and stored outputs a reader sees on GitHub: the
figures as PNG, no error, no papermill-injected parameters (opened in Colab, a notebook runs its own
defaults), a file size that a repository keeps.
"""

import glob
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

import nbformat
import papermill
import pytest
import tomllib
from _synthetic_images import write_dataset

from tf_vrre.runs import ladder_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLAB = os.path.join(ROOT, "colab")
NOTEBOOKS = ("01_quickstart.ipynb", "02_cifar10_vr_resghmc.ipynb", "03_serve_the_posterior.ipynb")

# Toy-scale settings shared by notebooks 2 and 3: a small CNN that learns the synthetic classes
# within a few steps (so the fitted temperature exists), VR refreshed every 2 steps, a sample every 2.
TINY_RUN = {
    "model.kwargs.width": 8,
    "sampler.lr": 0.03,
    "data.batch_size": 32,
    "data.holdout": 32,
    "samples.thinning": 2,
    "samples.validation": 16,
    "samples.burn_in_epochs": 0,
    "variance_reduction.period": 2,
    "variance_reduction.batch_size": 64,
}


def _read(name):
    return nbformat.read(os.path.join(COLAB, name), as_version=4)


def _run(name, tmp_path, **parameters):
    """Executes ``colab/name`` in ``tmp_path`` with papermill; returns the executed notebook."""
    out = tmp_path / name
    papermill.execute_notebook(
        os.path.join(COLAB, name),
        str(out),
        parameters=parameters,
        cwd=str(tmp_path),
        kernel_name="python3",
        progress_bar=False,
    )
    return nbformat.read(str(out), as_version=4)


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def _text(nb):
    return "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")


def _check_figures(nb, paths, min_images):
    for path in paths:
        assert os.path.isfile(path), f"figure not written: {path}"
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", f"not a PNG: {path}"
        assert os.path.getsize(path) > 2000, f"empty-looking figure: {path}"
    images = [o for o in _outputs(nb) if "image/png" in o.get("data", {})]
    assert len(images) >= min_images, f"{len(images)} figures shown, expected >= {min_images}"
    errors = [o for o in _outputs(nb) if o.output_type == "error"]
    assert not errors


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("synthetic_npz")))


# ---- the committed notebooks ------------------------------------------------------------------
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_conventions(name):
    nb = _read(name)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert nb.cells[0].cell_type == "markdown" and "colab.research.google.com" in nb.cells[0].source
    install = code[0].source
    assert 'find_spec("tf_vrre") is None' in install and "colab/install.py" in install and '"clone"' in install
    assert len(install.splitlines()) <= 14, (
        "keep the install cell short: its logic belongs in colab/install.py"
    )  # one import per line
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and code.index(tagged[0]) == 1, "one parameters cell, right after the install cell"
    assert not [c for c in code if "injected-parameters" in c.metadata.get("tags", [])], (
        "remove the papermill-injected parameters cell: opened in Colab, the notebook must run its defaults"
    )


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_shows_its_outputs(name):
    """Stored executed, so that a reader on GitHub sees the figures and numbers without running it."""
    nb = _read(name)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "store the notebook executed top to bottom"
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= {"01_quickstart.ipynb": 4, "02_cifar10_vr_resghmc.ipynb": 6}.get(name, 2), len(images)
    assert os.path.getsize(os.path.join(COLAB, name)) < 2_000_000, "lower the figures' dpi"


def test_cifar10_notebook_takes_one_chain_per_device_on_a_tpu_or_gpus():
    """Notebook 02's ladder run without ``CHAINS``: K = the cores of a TPU (8 on a v2-8) or the GPUs
    of a machine with 3 or more (a tuned ladder needs K >= 3), else the config's own K; its training
    cell then places one chain per device (``placement_of``)."""
    import ast
    import types

    cells = [c.source for c in _read("02_cifar10_vr_resghmc.ipynb").cells if c.cell_type == "code"]
    wanted = {"ladder_chains", "placement_of"}
    defs = [
        node
        for tree in map(ast.parse, cells)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in wanted
    ]
    assert sorted(d.name for d in defs) == sorted(wanted)

    def run(kind, replicas, chains=None):
        space = {"CHAINS": chains, "KIND": kind, "LADDER": "vr-resghmc-ladder"}
        space["STRATEGY"] = types.SimpleNamespace(num_replicas_in_sync=replicas)
        exec(compile(ast.Module(body=defs, type_ignores=[]), "notebook 02", "exec"), space)
        k = space["ladder_chains"]()
        space["CONFIGS"] = {"vr-resghmc-ladder": types.SimpleNamespace(num_chains=k or 4)}
        return k, space["placement_of"]("vr-resghmc-ladder")

    assert run("TPU", 8) == (8, "chain_per_replica")
    assert run("4 GPUs", 4) == (4, "chain_per_replica") and run("8 GPUs", 8) == (8, "chain_per_replica")
    assert run("3 GPUs", 3) == (3, "chain_per_replica")
    assert run("2 GPUs", 2) == (None, "replicated")  # two chains cannot be tuned: the config's 4, data parallel
    assert run("GPU", 1) == (None, "replicated") and run("CPU", 1) == (None, "replicated")
    assert run("8 GPUs", 8, chains=5) == (5, "replicated")  # CHAINS wins


_FIND_SPEC, _DISTRIBUTION = importlib.util.find_spec, importlib.metadata.distribution


def _install_cell(name):
    return next(c for c in _read(name).cells if c.cell_type == "code").source


def _install_script():
    """``colab/install.py`` imported as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("colab_install", os.path.join(COLAB, "install.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_runtime(monkeypatch, tpu, tensorflow, tf_vrre):
    """A runtime with or without a TPU / TensorFlow / tf_vrre; pip and git are recorded, not run.
    Returns the list the recorded ``subprocess.check_call`` argument lists go to."""
    calls = []
    absent = {"tensorflow": not tensorflow, "tf_vrre": not tf_vrre}

    def fake_distribution(name):
        if name == "tensorflow" and not tensorflow:
            raise importlib.metadata.PackageNotFoundError(name)
        return _DISTRIBUTION(name)

    monkeypatch.setattr(subprocess, "check_call", lambda args, **k: calls.append(list(args)))
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if absent.get(n) else _FIND_SPEC(n, *a))
    monkeypatch.setattr(importlib.metadata, "distribution", fake_distribution)
    monkeypatch.setattr(glob, "glob", lambda pattern: ["/dev/accel0"] if tpu and "accel" in pattern else [])
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    return calls


def _install_calls(monkeypatch, tpu, tensorflow, tf_vrre=False):
    """Runs ``colab/install.py`` on this checkout as on such a runtime; returns the ``pip install``
    argument lists it would run."""
    script = _install_script()
    calls = _fake_runtime(monkeypatch, tpu, tensorflow, tf_vrre)
    script.main([ROOT])
    assert all(c[:4] == [sys.executable, "-m", "pip", "install"] for c in calls), calls
    return [c[4:] for c in calls]


def test_install_script_installs_tensorflow_tpu_on_a_tpu_runtime_without_tensorflow(monkeypatch):
    calls = _install_calls(monkeypatch, tpu=True, tensorflow=False)
    assert calls[0] == ["-q", "tensorflow-tpu", "-f", "https://storage.googleapis.com/libtpu-tf-releases/index.html"]
    assert calls[1] == ["-q", "--no-deps", ROOT]  # no CPU/GPU tensorflow over it
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        declared = tomllib.load(f)["project"]["dependencies"]
    wanted = {d.replace("[tf]", "") for d in declared if not d.startswith("tensorflow>")}
    assert set(calls[2][1:]) == wanted and len(calls[2][1:]) == len(declared) - 1, (
        "tf_vrre's requirements from pyproject.toml, all but tensorflow"
    )
    assert len(calls) == 3


def test_install_script_leaves_tensorflow_alone_elsewhere(monkeypatch):
    assert _install_calls(monkeypatch, tpu=False, tensorflow=False) == [["-q", ROOT]]
    assert _install_calls(monkeypatch, tpu=True, tensorflow=True) == [["-q", ROOT]]


@pytest.mark.parametrize(
    "tpu, command",
    [(True, r"pip install tensorflow-tpu -f https://storage\.googleapis\.com/"), (False, r"`pip install tensorflow`")],
)
def test_install_script_names_the_command_when_only_tensorflow_is_missing(monkeypatch, tpu, command):
    with pytest.raises(RuntimeError, match=command):
        _install_calls(monkeypatch, tpu=tpu, tensorflow=False, tf_vrre=True)


def test_install_script_runs_as_a_script():
    """``python colab/install.py``: a no-op where tf_vrre and TensorFlow are importable (here); a
    directory that is no checkout is refused, naming the argument."""
    script = os.path.join(COLAB, "install.py")
    done = subprocess.run([sys.executable, script], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    refused = subprocess.run([sys.executable, script, COLAB], check=False, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "checkout: no pyproject.toml in" in refused.stderr


def test_install_cell_clones_and_runs_the_install_script(monkeypatch, tmp_path):
    calls = _fake_runtime(monkeypatch, tpu=False, tensorflow=True, tf_vrre=False)
    monkeypatch.setattr(tempfile, "mkdtemp", lambda prefix: str(tmp_path / prefix))
    source = _install_cell("02_cifar10_vr_resghmc.ipynb").replace("github.com/OWNER/", "example.org/")
    exec(compile(source, "install cell", "exec"), {})
    clone, install = calls
    assert clone[:-1] == ["git", "clone", "-q", "--depth", "1", "https://example.org/tf_vrre"]
    assert install == [sys.executable, os.path.join(clone[-1], "colab", "install.py")]


def test_install_cell_names_the_placeholder(monkeypatch):
    calls = _fake_runtime(monkeypatch, tpu=False, tensorflow=True, tf_vrre=False)
    with pytest.raises(RuntimeError, match="set TF_VRRE_REPO above"):
        exec(compile(_install_cell("02_cifar10_vr_resghmc.ipynb"), "install cell", "exec"), {})
    assert calls == []


def test_install_cell_is_a_no_op_where_tf_vrre_is_importable(monkeypatch):
    calls = []
    monkeypatch.setattr(subprocess, "check_call", lambda *a, **k: calls.append(a))
    for name in NOTEBOOKS:
        exec(compile(_install_cell(name), name, "exec"), {})
    assert calls == []


def test_notebooks_share_one_install_cell():
    assert len({_install_cell(name) for name in NOTEBOOKS}) == 1


def test_readme_links_every_notebook_with_a_colab_badge():
    readme = open(os.path.join(ROOT, "README.md")).read()
    for name in NOTEBOOKS:
        assert re.search(
            r"colab-badge\.svg\)\]\(https://colab\.research\.google\.com/github/[^)]*/colab/" + re.escape(name) + r"\)",
            readme,
        ), name


# ---- executed at toy scale --------------------------------------------------------------------
def test_quickstart_runs(tmp_path):
    out = tmp_path / "figures"
    nb = _run("01_quickstart.ipynb", tmp_path, STEPS=1000, FIT_EPOCHS=2, OUT_DIR=str(out))
    text = _text(nb)
    for method in ("sgld", "resgld", "vr-resgld"):
        assert re.search(rf"^{method} +1000 steps in", text, re.M), method
    assert re.search(r"^exact .* 0\.575 +0\.000$", text, re.M)  # the exact row of the table
    assert "variance reduction factor" in text and "'swaps'" in text  # sigma2 figure and the fit example ran
    _check_figures(nb, [out / f for f in ("target.png", "traces.png", "density.png", "sigma2.png")], 4)


def test_cifar10_notebook_runs(tmp_path, data_dir):
    runs = tmp_path / "runs"
    nb = _run(
        "02_cifar10_vr_resghmc.ipynb",
        tmp_path,
        MODEL="cnn",
        EPOCHS=2,
        SUBSET=128,
        SOURCE="npz",
        DATA_DIR=data_dir,
        OOD="svhn",
        RUN_ROOT=str(runs),
        TEST_SIZE=100,
        FIT_SIZE=32,
        # the ladder tuned over the first of the 2 epochs (250 of 500), samples kept from the second
        OVERRIDES=dict(TINY_RUN, **{"samples.burn_in_epochs": 250, "ladder.tune_epochs": 250}),
        CHAINS=3,
        JIT_COMPILE=True,
    )  # the TPU setting: the library path with the XLA-compiled step
    text = _text(nb)
    assert re.search(r"^accelerator: (CPU|GPU|\d+ GPUs); strategy", text, re.M)
    methods = ("resghmc", "vr-resghmc", "vr-resghmc-ladder")
    assert all(f"{method}: finished" in text for method in methods), text[-3000:]
    assert "'already complete'" in text
    for method in methods:
        run = runs / method
        assert os.path.isfile(run / "report.json") and os.path.isfile(run / "samples" / "manifest.json")
        assert '"status": "complete"' in open(run / "run.json").read()
        execution = json.load(open(run / "run.json"))["execution"]
        assert execution["jit_compile"] is True and execution["xla"] is True, execution
    assert json.load(open(runs / "vr-resghmc-ladder" / "run.json"))["config"]["ladder"]["chains"] == 3
    assert re.search(r"^test accuracy \(%\), T = 1( +[\d.]+){3} +94\.56 \+- 0\.23 +94\.84 \+- 0\.11$", text, re.M)
    assert re.search(r"^rung 2: temperature [\d.e-]+, learning rate [\d.e-]+, chain 2 on ", text, re.M)
    summary = "".join(o.get("data", {}).get("text/markdown", "") for o in _outputs(nb))
    assert "**This run:** cnn on 128 cifar10 training images, 2 epochs of 4 steps" in summary, summary
    assert "The ladder run (3 chains) ended 1 tuning rounds at step 4" in summary, summary
    figures = [runs / f for f in ("data.png", "training_curves.png", "entropy_cdf_ood.png")]
    # the tuning record's figure when a round measured the barrier, else the notebook says why not
    measured = bool(ladder_file.measured(ladder_file.read(runs / "vr-resghmc-ladder")))
    if measured:
        figures.append(runs / "ladder.png")
    else:
        assert "no tuning round measured a barrier yet (too few swap attempts per pair)" in text
        assert "no barrier measured (too few swap attempts per pair in its rounds)" in summary
    figures += [runs / m / f for m in methods for f in ("entropy_cdf.png", "reliability.png", "swaps.png")]
    _check_figures(nb, figures, 6 if measured else 5)


def test_serving_notebook_runs(tmp_path, data_dir):
    serving = tmp_path / "serving" / "cifar10"
    nb = _run(
        "03_serve_the_posterior.ipynb",
        tmp_path,
        RUN_DIR=str(tmp_path / "run"),
        SOURCE="npz",
        DATA_DIR=data_dir,
        SERVING_DIR=str(serving),
        MEMBER_COUNTS=[1, 2, None],
        LATENCY_BATCHES=[1, 8],
        LATENCY_REPEATS=2,
        SMALL_RUN=dict(TINY_RUN, **{"model.name": "cnn", "data.subset": 128, "training.epochs": 2}),
    )
    text = _text(nb)
    assert os.path.isfile(serving / "1" / "saved_model.pb") and not os.path.exists(serving / "2")
    assert re.search(r"max \|REST - BMA\| = \S+, max \|gRPC - BMA\| = \S+", text)  # the in-notebook check ran
    for signature in ("serving_default", "members", "serving_float32", "members_float32"):
        assert signature in text
    assert re.search(r"^ +4 +[\d.]+ \( *[\d.]+x\)", text, re.M)  # latency row of all 4 members
    _check_figures(nb, [tmp_path / "serving" / f for f in ("served_uncertainty.png", "latency.png")], 2)
