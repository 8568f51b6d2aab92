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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

QUICK = (
    # numerics: float32's limits (numpy only)
    "tests/test_numerics.py",
    # runs: the files of a run: atomic writes, planted links, a full disk, damaged checkpoints
    "tests/runs/test_atomic_writes.py::test_run_level_writers_never_write_through_a_planted_link",
    "tests/runs/test_atomic_writes.py::test_append_and_lock_refuse_a_link",
    "tests/runs/test_atomic_writes.py::test_a_full_disk_leaves_the_old_file_and_no_temporary",
    "tests/runs/test_atomic_writes.py::test_a_damaged_newest_checkpoint_falls_back_and_none_readable_is_refused",
    # sgmcmc: the corrected swap against its formula and Metropolis rates, the pair schedules
    "tests/sgmcmc/test_swaps.py",
    # sampler: the exact conjugate posterior, argument checks, save / load, the pinned samples
    "tests/sampler/test_posterior.py",
    "tests/sampler/test_replica_exchange_validation.py",
    "tests/sampler/test_saving.py",
    "tests/test_pinned.py::test_run_reproduces_pinned_state",
    # callbacks: checkpoint and exact resume, the epoch logs
    "tests/callbacks/test_checkpoint_resume.py::test_restores_state_and_epoch_and_keeps_newest",
    "tests/callbacks/test_progress_and_epoch_csv.py",
    # serving: a SavedModel of the samples' average
    "tests/serving/test_export.py::test_dense_model_samples_dir_and_explicit_model",
    # diagnostics: ESS / R-hat
    "tests/diagnostics/test_chains.py",
    # workflows: the image configs, the metrics, the mixture's exact posterior
    "tests/workflows/image_classification/test_config.py",
    "tests/workflows/image_classification/test_metrics.py",
    "tests/workflows/gaussian_mixture/test_target.py::test_exact_mode_weights",
    # cli: a short `tf-vrre mixture`, bad flags
    "tests/cli/test_cli_main.py",
    # the package: layers and imports, the README's examples, Keras' private APIs
    "tests/test_package_layout.py::test_no_import_cycles",
    "tests/test_package_layout.py::test_no_module_imports_through_its_own_package",
    "tests/test_package_layout.py::test_stub_and_runtime_api_agree",
    "tests/test_readme.py",
    "tests/test_keras_compat.py",
)
"""The smoke subset run by ``python -m pytest -q --quick`` (README): a few fast tests of every
layer of the package, each a file or ``file::test`` (all its parameters); tests/test_quick_set.py
checks that every entry exists and that every layer has one."""


def pytest_addoption(parser):
    parser.addoption(
        "--quick",
        action="store_true",
        help="run only the smoke subset (tests/conftest.py QUICK): every layer of the package in a few minutes",
    )


def _in_quick(nodeid):
    return any(nodeid == e or nodeid.startswith((e + "::", e + "[")) for e in QUICK)


def pytest_ignore_collect(collection_path, config):
    """With ``--quick``, test files outside the subset are not even imported."""
    if config.getoption("quick") and collection_path.name.startswith("test_") and collection_path.suffix == ".py":
        rel = os.path.relpath(collection_path, ROOT).replace(os.sep, "/")
        if rel not in {e.split("::")[0] for e in QUICK}:
            return True
    return None


def pytest_collection_modifyitems(config, items):
    if not config.getoption("quick"):
        return
    keep = [item for item in items if _in_quick(item.nodeid)]
    config.hook.pytest_deselected(items=[item for item in items if not _in_quick(item.nodeid)])
    items[:] = keep


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
