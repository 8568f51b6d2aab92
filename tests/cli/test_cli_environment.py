"""A broken TensorFlow or Keras installation: every subcommand that needs them ends with one line
naming the package, where it was found and the exception (exit 1), not a 60-line import
traceback, and writes nothing (a directory it made for its output is removed again).  The broken
package is a module of that name placed first on ``PYTHONPATH`` (what a half-removed install or a
shadowing file looks like to Python)."""

import os
import shutil
import subprocess
import sys

import pytest
from _image_runs import cli_flags
from _paths import FIXTURES, ROOT

BROKEN = {
    "tensorflow": 'raise ImportError("libtensorflow_framework.so.2: cannot open shared object file")\n',
    "keras": "import nonexistent_backend_module_x\n",
}


def run_broken(package, tmp_path, argv, others=None):
    """``tf-vrre ARGV`` with ``package`` broken (and the modules ``others``, name -> source, beside it)."""
    for name, source in {package: BROKEN[package], **(others or {})}.items():
        shadow = tmp_path / "shadow" / name
        shadow.mkdir(parents=True)
        (shadow / "__init__.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "shadow"), ROOT]))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return subprocess.run(
        [sys.executable, "-m", "tf_vrre.cli", *argv], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.parametrize("command", ["train", "evaluate", "diagnose", "mixture"])
def test_a_broken_tensorflow_is_one_line(command, image_data_dir, tmp_path):
    run = tmp_path / "run"
    if command == "train":
        argv = cli_flags("vr-resghmc", run, image_data_dir)
    elif command == "mixture":  # locks --out (made for it) before TensorFlow: gone again when refused
        argv = ["mixture", "--out", str(run)]
    else:
        shutil.copytree(os.path.join(FIXTURES, "vr_resghmc_cnn_run"), run)
        argv = [command, "--run", str(run)]
        if command == "evaluate":
            argv += ["--data-dir", image_data_dir, "--source", "npz", "--fit-size", "0"]
    before = sorted(os.listdir(run)) if run.exists() else None
    out = run_broken("tensorflow", tmp_path, argv)
    assert out.returncode == 1, out.stderr[-3000:]
    lines = [row for row in out.stderr.strip().splitlines() if not row.startswith("tf-vrre: warning:")]
    shadow = tmp_path / "shadow" / "tensorflow" / "__init__.py"
    assert lines == [
        f"tf-vrre: error: {command}: cannot import tensorflow (found at {shadow}): ImportError: "
        "libtensorflow_framework.so.2: cannot open shared object file; the installation is broken: reinstall it "
        "(pip install --force-reinstall tensorflow), check with python -c 'import tensorflow', and remove any "
        "module of that name that shadows it"
    ], lines
    assert (sorted(os.listdir(run)) if run.exists() else None) == before  # nothing written


def test_a_broken_keras_is_one_line(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(os.path.join(FIXTURES, "vr_resghmc_cnn_run"), run)
    # TensorFlow imports (an empty stand-in: the real one takes seconds), then Keras fails
    out = run_broken("keras", tmp_path, ["diagnose", "--run", str(run)], others={"tensorflow": ""})
    assert out.returncode == 1, out.stderr[-3000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf-vrre: error: diagnose: cannot import keras (found at "), lines
    assert "ModuleNotFoundError: No module named 'nonexistent_backend_module_x'" in lines[0]
