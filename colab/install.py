"""Installs tf_vrre from a checkout of its repository, on Colab's GPU, CPU and TPU runtimes.

    git clone --depth 1 https://github.com/OWNER/tf_vrre && python tf_vrre/colab/install.py

(the first code cell of each notebook in ``colab/`` does exactly this). Where ``tf_vrre`` is already
importable it does nothing. Elsewhere it runs ``pip install CHECKOUT`` (the checkout this file is in,
or the one named on the command line), except on a TPU runtime without TensorFlow: Colab's TPU
runtimes no longer come with TensorFlow preinstalled (googlecolab/colabtools#5164), and pip would
put the CPU/GPU build of ``tensorflow`` there. It then installs, in this order,

1. ``tensorflow-tpu`` from Google's libtpu index (TensorFlow built for TPUs, with libtpu),
2. tf_vrre with ``--no-deps`` (no ``tensorflow`` requirement over the TPU build),
3. tf_vrre's other requirements, read from the checkout's ``pyproject.toml``.

A TPU runtime is recognised by its devices (``/dev/accel*``: v2-v4, ``/dev/vfio/<n>``: v5e and later)
or a TPU node's address (``$COLAB_TPU_ADDR``). If tf_vrre is installed but TensorFlow is not, it stops
with the one command to run. Standard library only: it runs before anything is installed.
"""

import argparse
import glob
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys

LIBTPU_INDEX = "https://storage.googleapis.com/libtpu-tf-releases/index.html"
TENSORFLOW_TPU = ["tensorflow-tpu", "-f", LIBTPU_INDEX]
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def on_tpu():
    """True on a TPU runtime: TPU VM devices or a TPU node's address."""
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*") or os.environ.get("COLAB_TPU_ADDR"))


def installed(distribution):
    """True if the distribution ``distribution`` (a pip name, not a module) is installed."""
    try:
        importlib.metadata.distribution(distribution)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def requirements_without_tensorflow(checkout):
    """tf_vrre's declared requirements (``pyproject.toml``) except ``tensorflow`` itself, and
    ``tensorflow-probability`` without its ``[tf]`` extra (which requires ``tensorflow`` again)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(os.path.join(checkout, "pyproject.toml"), "rb") as f:
        declared = tomllib.load(f)["project"]["dependencies"]
    kept = []
    for requirement in declared:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower().replace("_", "-")
        if name == "tensorflow":
            continue
        kept.append(requirement.replace("tensorflow-probability[tf]", "tensorflow-probability"))
    return kept


def pip_commands(checkout, tpu):
    """The ``pip install`` argument lists that install tf_vrre from ``checkout``; raises
    ``RuntimeError`` when tf_vrre is installed but a TPU runtime lacks TensorFlow; ``[]`` when there
    is nothing to do."""
    has_tensorflow = importlib.util.find_spec("tensorflow") is not None
    if importlib.util.find_spec("tf_vrre") is not None:
        if not has_tensorflow:
            command = f"pip install tensorflow-tpu -f {LIBTPU_INDEX}" if tpu else "pip install tensorflow"
            runtime = "this TPU runtime" if tpu else "this runtime"
            raise RuntimeError(
                f"tf_vrre is installed but {runtime} has no TensorFlow: run `{command}` in a cell, "
                "then restart the runtime and run again"
            )
        return []
    if not tpu:
        return [["-q", checkout]]
    commands = [] if has_tensorflow else [["-q", *TENSORFLOW_TPU]]
    if installed("tensorflow"):  # the `tensorflow` distribution itself is there: pip keeps it
        return commands + [["-q", checkout]]
    return commands + [["-q", "--no-deps", checkout], ["-q", *requirements_without_tensorflow(checkout)]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "checkout",
        nargs="?",
        default=CHECKOUT,
        help="the tf_vrre checkout to install (default: the one this script is in)",
    )
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.checkout, "pyproject.toml")):
        parser.error(f"checkout: no pyproject.toml in {args.checkout!r}; give the directory of a tf_vrre clone")
    commands = pip_commands(args.checkout, on_tpu())
    for command in commands:
        subprocess.check_call([sys.executable, "-m", "pip", "install", *command])
    if commands:
        print("installed tf_vrre; if pip installed or upgraded tensorflow or keras, restart the runtime and run again")


if __name__ == "__main__":
    main()
