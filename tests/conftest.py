import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# The suite compiles hundreds of small samplers: XLA compilation would dominate its time. The
# XLA path is tested explicitly (jit_compile=True) in test_xla.py and test_posterior.py.
os.environ.setdefault("TF_VRRE_JIT_COMPILE", "0")

import sys

import numpy as np
import pytest

# job scripts and shared helpers (tests/helpers/_*.py) import as top-level modules
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))

# real data, optional: $TF_VRRE_SHARED_DATA, else ../shared/data beside the repository (synthetic images otherwise)
SHARED_DATA = os.environ.get("TF_VRRE_SHARED_DATA") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data"
)


@pytest.fixture(scope="session")
def diag_runs(tmp_path_factory):
    """Two small real runs (seeds 0 and 1) with swap logs and samples (tests/helpers/_diag_run.py)."""
    import _diag_run

    root = tmp_path_factory.mktemp("diag_runs")
    return [_diag_run.make_run(str(root / f"seed{seed}"), seed=seed) for seed in (0, 1)]


@pytest.fixture(scope="session")
def image_data_dir(tmp_path_factory):
    """A tiny copy of the real data in the ``.npz`` layout: CIFAR-10 train (2 parts of 200),
    test (200) and CIFAR-100 test (200), all real images from the shared test archives."""
    src10 = os.path.join(SHARED_DATA, "cifar10", "cifar10_test.npz")
    src100 = os.path.join(SHARED_DATA, "cifar100", "cifar100_test.npz")
    root = tmp_path_factory.mktemp("image_data")
    if not (os.path.exists(src10) and os.path.exists(src100)):  # a machine without the real data
        import _synthetic_images

        _synthetic_images.write_dataset(str(root), train=400, test=200, ood=200)
        shutil.rmtree(root / "svhn_cropped")  # as the real copy: no SVHN offline
        return str(root)
    with np.load(src10) as z:
        x, y = z["x"][:600], z["y"][:600]
    with np.load(src100) as z:
        x100, y100 = z["x"][:200], z["y"][:200]
    (root / "cifar10").mkdir()
    (root / "cifar100").mkdir()
    np.savez(root / "cifar10" / "cifar10_train_part1of2.npz", x=x[:200], y=y[:200])
    np.savez(root / "cifar10" / "cifar10_train_part2of2.npz", x=x[200:400], y=y[200:400])
    np.savez(root / "cifar10" / "cifar10_test.npz", x=x[400:], y=y[400:])
    np.savez(root / "cifar100" / "cifar100_test.npz", x=x100, y=y100)
    return str(root)
