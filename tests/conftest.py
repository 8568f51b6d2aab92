import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def diag_runs(tmp_path_factory):
    """Two small real runs (seeds 0 and 1) with swap logs and samples (tests/_diag_run.py)."""
    import _diag_run

    root = tmp_path_factory.mktemp("diag_runs")
    return [_diag_run.make_run(str(root / f"seed{seed}"), seed=seed) for seed in (0, 1)]
# The suite compiles hundreds of small samplers: XLA compilation would dominate its time. The
# XLA path is tested explicitly (jit_compile=True) in test_xla.py and test_posterior.py.
os.environ.setdefault("TF_VRRE_JIT_COMPILE", "0")
